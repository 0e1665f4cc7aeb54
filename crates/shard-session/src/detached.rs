//! The last sync of a process about to exit, handed to a helper process. A thread of the
//! exiting process cannot do it: the process's exit waits for every thread, and one
//! inside `fdatasync` waits for the disk (up to tens of milliseconds on a busy one). A
//! helper process (coreutils `sync --data`) waits instead, on its own, while the process
//! that wrote the bytes exits; the bytes are in the kernel already, so anything that reads
//! the session meanwhile sees them (docs/decisions.md, "The exit of a one-shot run").

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::error::SessionError;
use crate::session::Session;

/// Where the helper is looked for: fixed paths, never `PATH`, so nothing the environment
/// or a repository controls runs in its place.
pub(crate) const SYNC_PROGRAMS: &[&str] = &["/usr/bin/sync", "/bin/sync"];

/// Starts `program --data PATHS…`: no environment, no standard streams (a reader of this
/// process's output sees its end when this process ends, not when the disk is done), in
/// its own process group (a Ctrl-C at the terminal does not stop it).
pub(crate) fn spawn_sync(program: &Path, paths: &[PathBuf]) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    Command::new(program)
        .arg("--data")
        .arg("--")
        .args(paths)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

/// The shell that waits for the turn's end: a fixed path, never `PATH`.
const SHELL: &str = "/bin/sh";

/// Waits for end of input on its standard input (this process closing the pipe, at the
/// turn's end or at any death), then becomes `sync --data -- PATHS…`. The sync program is
/// `$0` and the paths are the other arguments: nothing is interpolated into the script.
const WAIT_THEN_SYNC: &str = "read -r _; exec \"$0\" --data -- \"$@\"";

/// A sync helper started ahead of the exit, waiting for its pipe to close: its start
/// (a `vfork` and two `exec`s, which a busy machine stretches to milliseconds) happens
/// while the model answers instead of on the way out.
#[derive(Debug)]
pub(crate) struct ArmedSync {
    child: Child,
    go: std::process::ChildStdin,
}

/// Waits for the helper on a thread of its own (so it does not linger as a zombie while
/// this process lives on) and logs a failure; the thread dies with the process.
fn reap(mut child: Child) {
    let reaper = std::thread::Builder::new()
        .name("session-sync".into())
        .spawn(move || match child.wait() {
            Ok(status) if status.success() => {}
            Ok(status) => tracing::error!(%status, "the transcript's last sync failed"),
            Err(e) => tracing::error!(error = %e, "cannot wait for the transcript's last sync"),
        });
    if let Err(e) = reaper {
        tracing::debug!(error = %e, "no thread to reap the sync helper");
    }
}

impl Session {
    /// For a process that will exit at the end of its turn: starts the sync helper now,
    /// waiting, so that [`Session::finish_detached`] only has to close a pipe. Does
    /// nothing when one is armed already or no helper program is there (the finish then
    /// starts one as before).
    pub fn arm_detached_finish(&mut self) {
        self.arm_with(SHELL, SYNC_PROGRAMS);
    }

    pub(crate) fn arm_with(&mut self, shell: &str, programs: &[&str]) {
        use std::os::unix::process::CommandExt;
        if self.armed.is_some() || !Path::new(shell).is_file() {
            return;
        }
        let Some(program) = programs.iter().find(|p| Path::new(p).is_file()) else {
            return;
        };
        // The folders too: the first sync of a new session's folders is owed, and a later
        // one with nothing dirty costs nothing.
        let mut paths = vec![self.transcript_path(), self.dir.clone()];
        paths.extend(self.dir.parent().map(Path::to_path_buf));
        let spawned = Command::new(shell)
            .arg("-c")
            .arg(WAIT_THEN_SYNC)
            .arg(program)
            .args(&paths)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        match spawned {
            Ok(mut child) => match child.stdin.take() {
                Some(go) => self.armed = Some(ArmedSync { child, go }),
                None => reap(child),
            },
            Err(e) => tracing::debug!(error = %e, "cannot start the sync helper ahead"),
        }
    }

    /// For a process about to exit: writes the meta now and hands the transcript's sync
    /// (with its folders' first one) to a helper process, so the exit does not wait for
    /// the disk. Everything was written to the kernel before this returns, so a next start
    /// finds it however far the helper got; a meta that describes bytes a power cut took
    /// back is refused on open (the transcript is scanned instead). Without the helper
    /// program the sync happens in line, after the meta.
    pub fn finish_detached(&mut self) -> Result<(), SessionError> {
        self.finish_detached_with(SYNC_PROGRAMS)
    }

    pub(crate) fn finish_detached_with(&mut self, programs: &[&str]) -> Result<(), SessionError> {
        let len = self.state.transcript_len;
        let synced = self.synced_len == Some(len) || self.handed_len == Some(len);
        if synced && self.meta_len == Some(len) {
            return Ok(());
        }
        // The meta first, overwritten in place: one write into its existing blocks, no
        // file created or renamed on the way out (each of those waits for the journal on a
        // busy disk).
        if self.meta_len != Some(len) {
            self.write_meta_in_place()?;
        }
        if synced {
            return Ok(());
        }
        if let Some(ArmedSync { child, go }) = self.armed.take() {
            // Its end of input is the word: it syncs everything written so far.
            drop(go);
            reap(child);
            self.handed_len = Some(len);
            return Ok(());
        }
        let mut paths = vec![self.transcript_path()];
        if !self.dirs_synced {
            paths.push(self.dir.clone());
            paths.extend(self.dir.parent().map(Path::to_path_buf));
        }
        let spawned = programs
            .iter()
            .map(Path::new)
            .filter(|p| p.is_file())
            .find_map(|p| spawn_sync(p, &paths).ok());
        match spawned {
            Some(child) => {
                reap(child);
                self.handed_len = Some(len);
                Ok(())
            }
            None => self.sync_data(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::{EntryKind, SessionStore};
    use shard_protocol::ids;
    use shard_protocol::types::{ContentBlock, Message, Role};

    /// A user message entry saying `text`.
    pub(crate) fn said(text: &str) -> EntryKind {
        EntryKind::message(Message {
            id: String::new(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        })
    }

    #[test]
    fn the_helper_syncs_a_transcript_and_its_folders() {
        let Some(program) = SYNC_PROGRAMS.iter().map(Path::new).find(|p| p.is_file()) else {
            // A skip fails where everything must run (`.ci/run`).
            assert!(
                std::env::var("SHARD_TEST_REQUIRE_ALL").as_deref() != Ok("1"),
                "SHARD_TEST_REQUIRE_ALL=1 but there is no coreutils `sync` at {SYNC_PROGRAMS:?}"
            );
            eprintln!("skipped: no coreutils `sync` at {SYNC_PROGRAMS:?}");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        let mut child = spawn_sync(program, &[file, dir.path().to_path_buf()]).unwrap();
        assert!(child.wait().unwrap().success());
        // A path it cannot open is a failure the reaper logs, not a success.
        let missing = dir.path().join("gone");
        let mut child = spawn_sync(program, &[missing]).unwrap();
        assert!(!child.wait().unwrap().success());
    }

    #[test]
    fn the_exit_overwrites_the_meta_in_place_and_a_longer_old_one_stays_valid_json() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("home"));
        let id = ids::new_id(ids::SESSION);
        let mut session = store.open_or_create(&id, dir.path()).unwrap();
        session.append(said("hello")).unwrap();
        let meta = session.dir().join(crate::META_FILE);
        // An older, longer meta: the new text is padded to its length.
        std::fs::write(&meta, " ".repeat(4096)).unwrap();
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&meta).unwrap());
        session.finish_detached_with(&[]).unwrap();
        let after = std::fs::metadata(&meta).unwrap();
        assert_eq!(
            std::os::unix::fs::MetadataExt::ino(&after),
            inode,
            "not replaced"
        );
        assert_eq!(after.len(), 4096);
        let parsed: crate::SessionMeta =
            serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
        assert_eq!(parsed.transcript_len, session.state().transcript_len);
        assert_eq!(parsed.title.as_deref(), Some("hello"));
        // Without a meta to overwrite, it is created.
        std::fs::remove_file(&meta).unwrap();
        session.append(said("again")).unwrap();
        session.finish_detached_with(&[]).unwrap();
        let parsed: crate::SessionMeta =
            serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
        assert_eq!(parsed.transcript_len, session.state().transcript_len);
        drop(session);
        let reopened = store.open_existing(&id).unwrap();
        assert_eq!(reopened.state().message_count, 2);
    }

    #[test]
    fn a_detached_finish_leaves_a_session_the_next_open_restores() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("home"));
        let id = ids::new_id(ids::SESSION);
        let mut s = store.open_or_create(&id, dir.path()).unwrap();
        s.append(said("hello")).unwrap();
        s.finish_detached().unwrap();
        let len = s.state().transcript_len;
        // Nothing new: a second finish starts no second helper and writes nothing.
        let handed = s.handed_len;
        s.finish_detached().unwrap();
        assert_eq!(s.handed_len, handed);
        drop(s);
        let again = store.open_or_create(&id, dir.path()).unwrap();
        assert_eq!(again.state().transcript_len, len);
        assert_eq!(again.context_messages().unwrap().len(), 1);
    }

    #[test]
    fn an_armed_helper_waits_for_the_finish_then_syncs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // A stand-in for `sync` that leaves a mark: the transcript's length when it ran.
        let stand_in = dir.path().join("sync");
        std::fs::write(
            &stand_in,
            "#!/bin/sh\n/usr/bin/wc -c < \"$3\" > \"$3.synced\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o700)).unwrap();
        let stand_in = stand_in.to_str().unwrap().to_string();
        let store = SessionStore::new(dir.path().join("home"));
        let mut s = store
            .open_or_create(&ids::new_id(ids::SESSION), dir.path())
            .unwrap();
        s.arm_with(SHELL, &[stand_in.as_str()]);
        assert!(s.armed.is_some(), "the helper is armed");
        s.append(said("hello")).unwrap();
        let mark = PathBuf::from(format!("{}.synced", s.transcript_path().display()));
        // Armed, it waits: nothing ran before the finish.
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!mark.exists(), "the helper ran before the finish");
        s.finish_detached().unwrap();
        let len = s.state().transcript_len;
        assert_eq!(s.handed_len, Some(len));
        assert!(s.armed.is_none());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let seen = loop {
            match std::fs::read_to_string(&mark) {
                Ok(t) if !t.trim().is_empty() => break t,
                _ if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                other => panic!("the armed helper never ran: {other:?}"),
            }
        };
        // It ran after the last append: it saw the whole transcript.
        assert_eq!(seen.trim().parse::<u64>().unwrap(), len);
    }

    #[test]
    fn without_the_helper_program_the_sync_happens_in_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("home"));
        let mut s = store
            .open_or_create(&ids::new_id(ids::SESSION), dir.path())
            .unwrap();
        s.append(said("hello")).unwrap();
        s.finish_detached_with(&["/nonexistent/sync"]).unwrap();
        let len = s.state().transcript_len;
        assert_eq!(s.synced_len, Some(len));
        assert_eq!(s.meta_len, Some(len));
        assert!(s.handed_len.is_none());
    }
}
