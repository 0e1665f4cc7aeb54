//! Short-lived children the daemon spawns and waits for itself (`git` for workspaces). The daemon is a child subreaper and its orphan collector
//! (`core::orphans`) reaps every exited child that is not a Runtime; without this list it
//! could reap one of these first, and tokio's wait would fail with `ECHILD`. A child is
//! spawned and listed under one write lock, and the collector holds the read lock while it
//! scans and reaps, so it can never see such a child unlisted.

use std::collections::HashSet;
use std::sync::{RwLock, RwLockReadGuard};

static OWN: RwLock<Option<HashSet<u32>>> = RwLock::new(None);

/// Removes its pid from the list once the child has been waited for.
struct Listed(Option<u32>);

impl Drop for Listed {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let mut own = OWN.write().unwrap_or_else(|p| p.into_inner());
            if let Some(set) = own.as_mut() {
                set.remove(&pid);
            }
        }
    }
}

/// Spawns `cmd` (stdout and stderr as configured by the caller) and collects its output,
/// with the child protected from the orphan collector for its whole life. The spawn runs
/// on the blocking pool (`launcher::spawn_off_executor` says why); the write lock is taken
/// there too, never on an executor thread.
pub(crate) async fn output(
    mut cmd: tokio::process::Command,
) -> std::io::Result<std::process::Output> {
    let (child, _listed) = tokio::task::spawn_blocking(move || {
        let mut own = OWN.write().unwrap_or_else(|p| p.into_inner());
        let child = cmd.spawn()?;
        let pid = child.id();
        if let Some(p) = pid {
            own.get_or_insert_with(HashSet::new).insert(p);
        }
        Ok::<_, std::io::Error>((child, Listed(pid)))
    })
    .await
    .map_err(std::io::Error::other)??;
    child.wait_with_output().await
}

/// The collector's view: held while it scans and reaps.
pub(crate) fn listed() -> RwLockReadGuard<'static, Option<HashSet<u32>>> {
    OWN.read().unwrap_or_else(|p| p.into_inner())
}
