//! A fork is found by its id without walking the store: through the fork index, built
//! once for a store that predates it.

use super::*;

fn forked_session(store: &SessionStore, h: &Home) -> (String, String) {
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let at = s.append(user("first prompt")).unwrap();
    s.append(assistant("done")).unwrap();
    s.sync_data().unwrap();
    let forked = store.fork(&s.reader().unwrap(), &at.id).unwrap();
    (id, forked.session_id)
}

#[test]
fn a_fork_and_a_fork_of_a_fork_are_found_by_id_from_a_fresh_store() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let (source, fork) = forked_session(&store, &h);
    let reader = store.open_existing(&fork).unwrap();
    let at = reader.state().last_entry_id.clone().unwrap();
    let second = store.fork(&reader.reader().unwrap(), &at).unwrap();
    drop(reader);

    let fresh = SessionStore::new(&h.home);
    let sessions = h.home.join("sessions");
    assert_eq!(
        fresh.session_dir(&fork).unwrap(),
        sessions.join(&source).join("forks").join(&fork)
    );
    assert_eq!(
        fresh.session_dir(&second.session_id).unwrap(),
        sessions
            .join(&source)
            .join("forks")
            .join(&fork)
            .join("forks")
            .join(&second.session_id)
    );
    assert!(fresh.open_existing(&second.session_id).is_ok());
    let index = sessions.join(".fork-index");
    assert_eq!(mode(&index), 0o700);
    assert_eq!(mode(&index.join(&fork)), 0o600);
}

#[test]
fn a_new_id_is_looked_up_without_walking_the_sessions() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let (source, _) = forked_session(&store, &h);
    // A fork folder nobody indexed (planted by hand): only a walk would find it. A lookup
    // that answers the top-level path proves the store was not walked.
    let planted = ids::new_id(ids::SESSION);
    let hidden = h
        .home
        .join("sessions")
        .join(&source)
        .join("forks")
        .join(&planted);
    fs::create_dir_all(&hidden).unwrap();
    assert_eq!(
        store.session_dir(&planted).unwrap(),
        h.home.join("sessions").join(&planted)
    );
}

#[test]
fn a_store_from_before_the_index_is_walked_once_and_indexed() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let (source, fork) = forked_session(&store, &h);
    let index = h.home.join("sessions").join(".fork-index");
    fs::remove_dir_all(&index).unwrap();

    let expected = h
        .home
        .join("sessions")
        .join(&source)
        .join("forks")
        .join(&fork);
    assert_eq!(store.session_dir(&fork).unwrap(), expected);
    assert!(
        index.join(".complete").is_file(),
        "the walk marks the index complete"
    );
    assert!(
        index.join(&fork).is_file(),
        "the walk indexes the fork it found"
    );
    // Once complete, a new id costs no walk (see the planted-fork test) and forks stay found.
    assert_eq!(store.session_dir(&fork).unwrap(), expected);
}

#[test]
fn a_damaged_index_entry_never_points_outside_the_store() {
    let h = home();
    let store = SessionStore::new(&h.home);
    forked_session(&store, &h);
    let index = h.home.join("sessions").join(".fork-index");
    let victim = ids::new_id(ids::SESSION);
    let outside = h.home.join("elsewhere").join(&victim);
    fs::create_dir_all(&outside).unwrap();
    for entry in [
        format!("../elsewhere/{victim}"),
        format!("/{}", outside.display()),
        victim.clone(),
        format!("{victim}/forks/../../elsewhere/{victim}"),
    ] {
        fs::write(index.join(&victim), entry.as_bytes()).unwrap();
        assert_eq!(
            store.session_dir(&victim).unwrap(),
            h.home.join("sessions").join(&victim),
            "entry {entry:?} was followed"
        );
    }
}
