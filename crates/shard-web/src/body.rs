//! Request bodies, read whole before any handler runs: at most [`MAX_BODY`] bytes, all
//! within [`BODY_READ_TIMEOUT`] of the head. The door's bodies are tiny (an enrollment
//! code), so a larger or slower one is an attack or a mistake. While its body is still
//! arriving a connection counts as idle in the listener's registry, like a half-sent head:
//! at a cap, trickled bodies are closed to make room instead of keeping enrollment and
//! `/bootstrap` out.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

use crate::listener::InFlight;

/// A request body must arrive whole within this after its head.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request body served; a larger declared or sent body gets `413`.
pub const MAX_BODY: usize = 8 * 1024;

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyRefusal {
    TooLarge,
    TooSlow,
    Broken,
}

/// Reads the body under the limits, marks the request in flight, then runs the handler
/// with the body in memory. A refusal answers and closes the connection: the rest of a
/// refused body is never read.
pub(crate) async fn read_body(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let read = match declared {
        Some(n) if n > MAX_BODY as u64 => Err(BodyRefusal::TooLarge),
        _ => match tokio::time::timeout(BODY_READ_TIMEOUT, collect(body)).await {
            Ok(r) => r,
            Err(_) => Err(BodyRefusal::TooSlow),
        },
    };
    let bytes = match read {
        Ok(b) => b,
        Err(why) => {
            tracing::debug!(?why, "refused a request body");
            return closing(why);
        }
    };
    if let Some(f) = parts.extensions.get::<Arc<InFlight>>() {
        f.start();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

async fn collect(body: Body) -> Result<Vec<u8>, BodyRefusal> {
    let mut out = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| BodyRefusal::Broken)?;
        if out.len() + chunk.len() > MAX_BODY {
            return Err(BodyRefusal::TooLarge);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The refusal, with `Connection: close` so the connection ends after it.
fn closing(why: BodyRefusal) -> Response {
    let (status, text) = match why {
        BodyRefusal::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
        BodyRefusal::TooSlow => (
            StatusCode::REQUEST_TIMEOUT,
            "the request body did not arrive in time",
        ),
        BodyRefusal::Broken => (
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        ),
    };
    let mut res = crate::http::refuse(status, text);
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}
