//! The HTTP contract of docs/web.md: exact Host first on every request, then Origin, then
//! the credential; security headers on every response; no CORS anywhere.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::config::Mode;
use crate::door::Door;
use crate::pages;
use crate::store::NewSession;

/// The cookie name on an http effective scheme.
pub const COOKIE_PLAIN: &str = "shard_session";
/// The cookie name on an https effective scheme (`Secure`, host-only, `Path=/`).
pub const COOKIE_SECURE: &str = "__Host-shard_session";
/// The request header carrying the session key on `POST /bootstrap`. The page keeps the
/// key in its Origin's own storage, which a page served on another port cannot read, while
/// the cookie goes to every port of the host: together they prove the page's Origin.
pub const SESSION_KEY_HEADER: &str = "x-shard-session-key";
/// The WebSocket subprotocol; the ticket rides beside it as `shard.ticket.T`.
pub const SUBPROTOCOL: &str = "shard.v1";
const TICKET_PREFIX: &str = "shard.ticket.";
/// Read chunk of a WebSocket: commands from a browser are small, and each open socket
/// holds one chunk for its whole life.
const WS_READ_CHUNK: usize = 8 * 1024;

/// What the Host check learned about a request, for the handlers.
#[derive(Clone, Copy, Debug)]
struct Effective {
    https: bool,
}

/// The router, with its layers.
pub(crate) fn router(door: Arc<Door>) -> Router {
    Router::new()
        .route("/", get(crate::assets::index))
        .route("/app/{*path}", get(crate::assets::file))
        .route("/enroll", get(enroll_page).post(enroll))
        .route("/enroll.js", get(enroll_js))
        .route("/bootstrap", post(bootstrap))
        .route("/ws", get(upgrade))
        .fallback(not_found)
        // Inside the Host check: a request for another Host is refused before its body
        // is read.
        .layer(middleware::from_fn(crate::body::read_body))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&door),
            check_host,
        ))
        .layer(middleware::from_fn(security_headers))
        .with_state(door)
}

pub(crate) fn refuse(status: StatusCode, why: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        why,
    )
        .into_response()
}

/// Every response, refusals included, carries these; none carries `Access-Control-*`.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ()> {
    let mut it = headers.get_all(name).iter();
    let Some(first) = it.next() else {
        return Ok(None);
    };
    if it.next().is_some() {
        return Err(());
    }
    first.to_str().map(Some).map_err(|_| ())
}

/// Host, exactly, before anything else; then the forwarded headers when (and only when)
/// the direct peer is the configured proxy.
async fn check_host(
    State(door): State<Arc<Door>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    let headers = req.headers();
    let from_proxy = matches!(&door.cfg.mode, Mode::Proxy(upstream) if upstream.matches(peer.ip()));
    // The forwarded scheme is read (not acted on) before the Host check only because a
    // browser omits the scheme's default port from Host, so the exact comparison needs it.
    let proto = if from_proxy {
        single(headers, &door.cfg.proto_header)
    } else {
        Ok(None)
    };
    let https = matches!(proto, Ok(Some(p)) if p.eq_ignore_ascii_case("https"));
    let host = match single(headers, header::HOST.as_str()) {
        Ok(Some(h)) => h,
        _ => return refuse(StatusCode::BAD_REQUEST, "a single Host header is required"),
    };
    if !host_matches(host, &door.expected_host, https) {
        tracing::warn!(%peer, "refused a request for another Host");
        return refuse(StatusCode::MISDIRECTED_REQUEST, "wrong Host");
    }
    if let Some(auth) = req.uri().authority()
        && !host_matches(auth.as_str(), &door.expected_host, https)
    {
        return refuse(StatusCode::MISDIRECTED_REQUEST, "wrong Host");
    }
    if from_proxy {
        match single(headers, &door.cfg.host_header) {
            Ok(None) => {}
            Ok(Some(fh)) if host_matches(fh, &door.expected_host, https) => {}
            _ => {
                tracing::warn!(%peer, "the proxy forwarded another host");
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "forwarded host does not match the configured public host",
                );
            }
        }
        if proto.is_err() {
            return refuse(StatusCode::BAD_REQUEST, "one forwarded scheme header");
        }
    }
    if door.cfg.remote() && !https && !door.cfg.allow_insecure_remote {
        return refuse(
            StatusCode::BAD_REQUEST,
            "this daemon is served over https only (through its proxy)",
        );
    }
    req.extensions_mut().insert(Effective { https });
    next.run(req).await
}

/// `got` must be the pinned host exactly; browsers (and proxies passing their Host on) omit
/// the scheme's default port, so `name` stands for `name:443` on https and `name:80` on
/// http — the name itself is still compared exactly.
fn host_matches(got: &str, expected: &str, https: bool) -> bool {
    let default = if https { ":443" } else { ":80" };
    got == expected || expected.strip_suffix(default) == Some(got)
}

/// The exact serialized Origin, when it is allowed.
fn allowed_origin(door: &Door, headers: &HeaderMap) -> Result<String, &'static str> {
    match single(headers, header::ORIGIN.as_str()) {
        Ok(Some(o)) if door.origins.iter().any(|a| a == o) => Ok(o.to_string()),
        Ok(Some(_)) => Err("Origin not allowed"),
        _ => Err("an Origin header is required"),
    }
}

async fn enroll_page() -> Response {
    html(pages::ENROLL)
}

async fn enroll_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        pages::ENROLL_JS,
    )
        .into_response()
}

async fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "not found")
}

fn html(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

#[derive(Deserialize)]
struct EnrollBody {
    code: String,
}

async fn enroll(
    State(door): State<Arc<Door>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    axum::Extension(eff): axum::Extension<Effective>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let origin = match allowed_origin(&door, &headers) {
        Ok(o) => o,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    if door.throttled(peer.ip()) {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too many failed enrollments; wait a minute",
        );
    }
    let code = serde_json::from_slice::<EnrollBody>(&body).map(|b| b.code);
    let ok = match &code {
        Ok(c) => door.redeem_code(c),
        Err(_) => false,
    };
    if !ok {
        door.record_failure(peer.ip());
        tracing::warn!(%peer, "refused an enrollment code");
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unknown, used or expired enrollment code",
        );
    }
    let (cookie, key) = match (crate::secret::new_secret(), crate::secret::new_secret()) {
        (Ok(c), Ok(k)) => (c, k),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "enrollment failed");
            return refuse(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
        }
    };
    let new = NewSession {
        cookie_hash: &crate::secret::hash(&cookie),
        key_hash: &crate::secret::hash(&key),
        origin: &origin,
    };
    let session = match door.store.enroll(new).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "enrollment failed");
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the security store could not be written",
            );
        }
    };
    tracing::info!(principal_id = %session.principal_id, "browser enrolled");
    // D4: the Secure, __Host- form iff the effective scheme is https.
    let set = if eff.https {
        format!("{COOKIE_SECURE}={cookie}; Secure; HttpOnly; SameSite=Strict; Path=/")
    } else {
        format!("{COOKIE_PLAIN}={cookie}; HttpOnly; SameSite=Strict; Path=/")
    };
    let Ok(set) = HeaderValue::from_str(&set) else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "cookie");
    };
    // The key goes in the body, never in a cookie: the page stores it where only its own
    // Origin can read it, and sends it with every bootstrap.
    let mut res = Json(serde_json::json!({
        "principal_id": session.principal_id,
        "session_key": key,
    }))
    .into_response();
    res.headers_mut().insert(header::SET_COOKIE, set);
    res
}

/// The session cookie of a request, by the name its effective scheme allows; `Err` when
/// a `Secure`-form cookie arrives over plaintext.
fn session_cookie(headers: &HeaderMap, https: bool) -> Result<Option<String>, ()> {
    let mut found = None;
    for v in headers.get_all(header::COOKIE) {
        let Ok(v) = v.to_str() else { continue };
        for pair in v.split(';') {
            let Some((name, value)) = pair.trim().split_once('=') else {
                continue;
            };
            match (name, https) {
                (COOKIE_SECURE, false) => return Err(()),
                (COOKIE_SECURE, true) | (COOKIE_PLAIN, false) => {
                    found = Some(value.to_string());
                }
                _ => {}
            }
        }
    }
    Ok(found)
}

async fn bootstrap(
    State(door): State<Arc<Door>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    axum::Extension(eff): axum::Extension<Effective>,
    headers: HeaderMap,
) -> Response {
    let origin = match allowed_origin(&door, &headers) {
        Ok(o) => o,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let cookie = match session_cookie(&headers, eff.https) {
        Ok(Some(c)) => c,
        Ok(None) => return refuse(StatusCode::UNAUTHORIZED, "no session; enroll this browser"),
        Err(()) => {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "a Secure session cookie arrived over plaintext",
            );
        }
    };
    let key = match single(&headers, SESSION_KEY_HEADER) {
        Ok(k) => k,
        Err(()) => return refuse(StatusCode::UNAUTHORIZED, "one session key header"),
    };
    let session = match door.store.authenticate(&cookie, key, &origin) {
        Ok(s) => s,
        Err(why) => {
            tracing::warn!(%peer, ?why, "refused a bootstrap");
            return refuse(
                StatusCode::UNAUTHORIZED,
                "unknown or revoked session, or no session key; enroll this browser",
            );
        }
    };
    let principal = session.principal_id.clone();
    let ticket = match door.mint_ticket(session, &origin) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "bootstrap failed");
            return refuse(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
        }
    };
    if let Err(e) = door.store.touch(&principal).await {
        tracing::warn!(error = %e, "could not record last use");
    }
    Json(serde_json::json!({
        "ticket": ticket,
        "expires_in_s": door.cfg.ticket_ttl.as_secs(),
    }))
    .into_response()
}

async fn upgrade(
    State(door): State<Arc<Door>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let origin = match allowed_origin(&door, &headers) {
        Ok(o) => o,
        Err(why) => {
            tracing::warn!(%peer, "refused a WebSocket from a foreign or absent Origin");
            return refuse(StatusCode::BAD_REQUEST, why);
        }
    };
    let mut ticket = None;
    let mut v1 = false;
    for v in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        let Ok(v) = v.to_str() else { continue };
        for p in v.split(',').map(str::trim) {
            if p == SUBPROTOCOL {
                v1 = true;
            } else if let Some(t) = p.strip_prefix(TICKET_PREFIX) {
                ticket = Some(t.to_string());
            }
        }
    }
    let Some(ticket) = ticket else {
        return refuse(StatusCode::UNAUTHORIZED, "no ticket");
    };
    let session = match door.consume_ticket(&ticket, &origin) {
        Ok(s) => s,
        Err(why) => {
            tracing::warn!(%peer, ?why, "refused a WebSocket ticket");
            return refuse(StatusCode::UNAUTHORIZED, "invalid ticket");
        }
    };
    if !v1 {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the shard.v1 subprotocol is required",
        );
    }
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => return e.into_response(),
    };
    let door2 = Arc::clone(&door);
    ws.protocols([SUBPROTOCOL])
        .max_message_size(door.max_message)
        // A browser sends small commands; the library's default 128 KiB read chunk was
        // nearly all of a WebSocket's memory in the daemon (docs/performance.md).
        .read_buffer_size(WS_READ_CHUNK)
        .on_upgrade(move |socket| async move {
            let cancel = door2.socket_token(&session.principal_id);
            let conn = crate::ws::bridge(
                socket,
                session.principal_id,
                format!("websocket {peer}"),
                door2.cfg.ping_interval,
                cancel.clone(),
                door2.stop.clone(),
            );
            if door2.conns.send(conn).await.is_err() {
                cancel.cancel();
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_is_exact_up_to_the_scheme_default_port() {
        assert!(host_matches("a.example:8443", "a.example:8443", true));
        assert!(host_matches("a.example", "a.example:443", true));
        assert!(!host_matches("a.example", "a.example:443", false));
        assert!(host_matches("a.example", "a.example:80", false));
        assert!(!host_matches("a.example", "a.example:8443", true));
        assert!(!host_matches("a.example:443", "a.example", true));
        assert!(!host_matches("b.a.example", "a.example:443", true));
        assert!(!host_matches("A.example", "a.example:443", true));
    }

    #[test]
    fn cookies_are_read_by_the_name_the_scheme_allows() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; shard_session=xyz"),
        );
        assert_eq!(session_cookie(&h, false), Ok(Some("xyz".into())));
        assert_eq!(session_cookie(&h, true), Ok(None));
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("__Host-shard_session=xyz"),
        );
        assert_eq!(session_cookie(&h, false), Err(()));
        assert_eq!(session_cookie(&h, true), Ok(Some("xyz".into())));
    }
}
