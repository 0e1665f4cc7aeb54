//! A new session's first meta holds what its opener records at once (the Runtime's model
//! and mode), so the exit that follows an idle start replaces no file: it only syncs.

use std::os::unix::fs::MetadataExt;

use super::*;

#[test]
fn the_first_meta_holds_the_openers_entries_and_an_idle_exit_does_not_replace_it() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store
        .open_or_create_then(&id, &h.cwd, |s| {
            s.append(EntryKind::ModeChange {
                mode: "plan".into(),
            })
            .unwrap();
        })
        .unwrap();
    let meta_path = s.dir().join("meta.json");
    let meta: Value = serde_json::from_slice(&fs::read(&meta_path).unwrap()).unwrap();
    assert_eq!(meta["entry_count"], 1);
    assert_eq!(meta["mode"], "plan");
    let inode = fs::metadata(&meta_path).unwrap().ino();

    // The exit of a Runtime that did nothing else: the same file, nothing left unsynced.
    s.write_meta().unwrap();
    assert_eq!(
        fs::metadata(&meta_path).unwrap().ino(),
        inode,
        "not replaced"
    );
    drop(s);

    // A later turn still rewrites it.
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    assert_eq!(s.state().mode.as_deref(), Some("plan"));
    s.append(user("hello")).unwrap();
    s.write_meta().unwrap();
    let meta: Value = serde_json::from_slice(&fs::read(&meta_path).unwrap()).unwrap();
    assert_eq!(meta["entry_count"], 2);
}

#[test]
fn open_or_create_then_runs_on_an_existing_session_too() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    drop(store.open_or_create(&id, &h.cwd).unwrap());
    let mut ran = false;
    let s = store
        .open_or_create_then(&id, &h.cwd, |s| {
            ran = true;
            s.append(user("restored")).unwrap();
        })
        .unwrap();
    assert!(ran);
    assert_eq!(s.state().entry_count, 1);
}
