//! The `workspace.*` commands: each is handed to its operation (`create`, `status`,
//! `retire`) as a spawned task, since git and the disk are slow. The top of the service:
//! nothing in it names this file.

use std::sync::Arc;

use shard_protocol::command::Command;

use super::{Workspaces, create, invalid, retire, status};
use crate::reply::{Handled, ProtocolError, Reply};

/// Handles a `workspace.*` command: each runs as a spawned task (git, or the disk).
pub(crate) fn dispatch(ws: &Arc<Workspaces>, command: Command) -> Handled {
    let ws = Arc::clone(ws);
    let work: futures::future::BoxFuture<'static, Result<Reply, ProtocolError>> = match command {
        Command::WorkspaceCreate(c) => Box::pin(async move { create::create(&ws, c).await }),
        Command::WorkspaceAttach(a) => Box::pin(async move { create::attach(&ws, a).await }),
        Command::WorkspaceList(l) => Box::pin(async move { status::list(&ws, &l).await }),
        Command::WorkspaceStatus(r) => Box::pin(async move { status::status(&ws, r).await }),
        Command::WorkspaceRetire(r) => Box::pin(async move { retire::retire(&ws, r).await }),
        other => {
            return Handled::Now(Err(invalid(format!(
                "`{}` is not a workspace command",
                other.type_name()
            ))));
        }
    };
    Handled::Later(work)
}
