//! The one way the actor waits for something (a stream event, a tool, an answer, a hook)
//! while still serving commands: abort, permission answers, steers and `sync` must be
//! handled promptly whatever the turn is doing.

use std::future::Future;

use super::Runtime;

impl Runtime {
    /// Polls `fut` to completion while serving inputs, tool changes and UI requests.
    /// Returns `None` (dropping `fut`) as soon as `stop` holds: before waiting, and after
    /// each input served. Inputs win over `fut` when both are ready, so an abort is seen
    /// before more of a stream is consumed.
    pub(crate) async fn serve_while<F: Future>(
        &mut self,
        fut: F,
        stop: impl Fn(&Runtime) -> bool,
    ) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        loop {
            if stop(self) {
                return None;
            }
            tokio::select! {
                biased;
                next = self.next_input() => self.handle_next(next).await,
                out = &mut fut => return Some(out),
            }
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
pub(crate) async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
