//! The browser door's attack suite: each attack is a test that must be
//! refused, against the real `shard daemon` over real HTTP and WebSocket; plus the happy
//! path of each configuration. docs/security.md "Browser door" maps attacks to tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod body;
mod browser;
mod credential;
mod harness;
mod held;
mod nginx;
mod port;
#[path = "../../../../tests/support/skip.rs"]
mod skip;

use std::io::{Read, Write};

use futures::SinkExt;
use harness::*;
use serde_json::json;
use shard_protocol::Event;
use tokio_tungstenite::tungstenite::Message;

fn protos(ticket: &str) -> String {
    format!("shard.v1, shard.ticket.{ticket}")
}

const SECURITY_HEADERS: [(&str, &str); 4] = [
    (
        "content-security-policy",
        "default-src 'self'; frame-ancestors 'none'",
    ),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
];

fn assert_security_headers(r: &Resp) {
    for (n, v) in SECURITY_HEADERS {
        assert_eq!(r.header(n).as_deref(), Some(v), "{n} on {r:?}");
    }
    assert!(
        !r.head.to_ascii_lowercase().contains("access-control-"),
        "no CORS header: {r:?}"
    );
}

#[tokio::test]
async fn loopback_happy_path_same_protocol_as_the_unix_socket() {
    let d = Daemon::start(&[]);
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.home.join("daemon.json")).unwrap()).unwrap();
    assert_eq!(info["url"], json!(d.origin()));
    assert_eq!(info["port"], json!(d.port));
    assert_eq!(info["pid"], json!(d.child.id()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(d.home.join("daemon.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let index = d.http("GET", "/", &[("Host", &d.host())], "");
    assert_eq!(index.status, 200);
    assert!(index.body.contains("/app/main.js"), "the client: {index:?}");
    assert!(!index.body.contains("<script>"), "no inline script");
    assert!(
        index
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let module = d.http("GET", "/app/main.js", &[("Host", &d.host())], "");
    assert_eq!(module.status, 200);
    assert!(
        module
            .header("content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert_security_headers(&module);
    for bad in ["/app/../Cargo.toml", "/app/nope.js", "/app/protocol.d.ts"] {
        let r = d.http("GET", bad, &[("Host", &d.host())], "");
        assert_eq!(r.status, 404, "{bad}: {r:?}");
        assert_security_headers(&r);
    }
    assert_security_headers(&index);
    let page = d.http("GET", "/enroll", &[("Host", &d.host())], "");
    assert_eq!(page.status, 200);
    assert!(!page.body.contains("<script>"), "no inline script");

    let code = d.code();
    let r = d.http(
        "POST",
        "/enroll",
        &[("Host", &d.host()), ("Origin", &d.origin())],
        &format!("{{\"code\":\"{code}\"}}"),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_security_headers(&r);
    let sc = r.set_cookie().unwrap();
    assert!(sc.starts_with("shard_session="), "{sc}");
    assert!(sc.contains("HttpOnly") && sc.contains("SameSite=Strict") && sc.contains("Path=/"));
    assert!(!sc.contains("Secure"), "no Secure on http: {sc}");
    let principal = r.json()["principal_id"].as_str().unwrap().to_string();
    let session = Session::from_enrollment(&r, "shard_session");

    let b = d.bootstrap(&session, &d.origin());
    assert_eq!(b.status, 200, "{b:?}");
    assert_eq!(b.json()["expires_in_s"], json!(30));
    assert_security_headers(&b);
    let ticket = b.json()["ticket"].as_str().unwrap().to_string();

    let (mut s, proto) = ws(
        d.port,
        &d.host(),
        Some(&d.origin()),
        Some(&protos(&ticket)),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        proto.as_deref(),
        Some("shard.v1"),
        "only the protocol name is echoed"
    );
    let Some(Event::Hello(hello)) = next_text(&mut s).await else {
        panic!("hello first")
    };
    let caps = &hello.capabilities;
    assert!(caps.iter().any(|c| c == "websocket"), "{hello:?}");
    assert!(!caps.iter().any(|c| c == "runtime-auth"), "{hello:?}");
    s.send(Message::Text(r#"{"type":"agent.list","id":"c1"}"#.into()))
        .await
        .unwrap();
    let Some(Event::Response(resp)) = next_text(&mut s).await else {
        panic!("a response")
    };
    assert_eq!(resp.id.as_deref(), Some("c1"));
    assert!(resp.success, "{resp:?}");

    let (ok, list, _) = d.web(&["--list"]);
    assert!(ok);
    assert!(list.lines().any(|l| l.starts_with(&principal)), "{list}");
    // No secret reaches the log or the store.
    let log = d.log();
    let store = std::fs::read_to_string(d.home.join("security/store.json")).unwrap();
    for secret in [&code, &session.cookie, &session.key, &ticket] {
        assert!(!log.contains(secret.as_str()), "a secret in the log");
        assert!(!store.contains(secret.as_str()), "a secret in the store");
    }
}

#[tokio::test]
async fn preflight_gets_no_cors() {
    let d = Daemon::start(&[]);
    let r = d.http(
        "OPTIONS",
        "/bootstrap",
        &[
            ("Host", &d.host()),
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        "",
    );
    assert_ne!(r.status, 200, "{r:?}");
    assert_security_headers(&r);
}

#[tokio::test]
async fn cross_site_websocket_foreign_origin_is_refused() {
    let d = Daemon::start(&[]);
    let cookie = d.enroll();
    let t = d.ticket(&cookie);
    let e = ws(
        d.port,
        &d.host(),
        Some("http://evil.example"),
        Some(&protos(&t)),
        &[],
    )
    .await;
    assert_eq!(e.err(), Some(400));
    // And a foreign page gets no ticket in the first place.
    assert_eq!(d.bootstrap(&cookie, "http://evil.example").status, 400);
    // The ticket was not consumed by the refused attempt: Origin is checked first.
    assert!(
        ws(d.port, &d.host(), Some(&d.origin()), Some(&protos(&t)), &[])
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn websocket_without_origin_is_refused() {
    let d = Daemon::start(&[]);
    let cookie = d.enroll();
    let t = d.ticket(&cookie);
    assert_eq!(
        ws(d.port, &d.host(), None, Some(&protos(&t)), &[])
            .await
            .err(),
        Some(400)
    );
    let r = d.http(
        "POST",
        "/bootstrap",
        &[
            ("Host", &d.host()),
            ("Cookie", &format!("shard_session={}", cookie.cookie)),
            ("X-Shard-Session-Key", &cookie.key),
        ],
        "",
    );
    assert_eq!(r.status, 400, "no ticket without Origin");
}

#[tokio::test]
async fn missing_and_replayed_tickets_are_refused() {
    let d = Daemon::start(&[]);
    let cookie = d.enroll();
    assert_eq!(
        ws(d.port, &d.host(), Some(&d.origin()), Some("shard.v1"), &[])
            .await
            .err(),
        Some(401)
    );
    let t = d.ticket(&cookie);
    let first = ws(d.port, &d.host(), Some(&d.origin()), Some(&protos(&t)), &[]).await;
    assert!(first.is_ok());
    let again = ws(d.port, &d.host(), Some(&d.origin()), Some(&protos(&t)), &[]).await;
    assert_eq!(again.err(), Some(401), "replay");
    let unknown = Session {
        cookie: "0".repeat(64),
        key: cookie.key.clone(),
    };
    assert_eq!(d.bootstrap(&unknown, &d.origin()).status, 401);
}

#[tokio::test]
async fn expired_ticket_is_refused() {
    let d = Daemon::start(&["--web-ticket-ttl-ms", "0"]);
    let cookie = d.enroll();
    let t = d.ticket(&cookie);
    let e = ws(d.port, &d.host(), Some(&d.origin()), Some(&protos(&t)), &[]).await;
    assert_eq!(e.err(), Some(401));
}

/// Two allowed origins behind a (simulated) trusted proxy on loopback.
fn proxy_daemon(extra: &[&str]) -> Daemon {
    let mut args = vec![
        "--trust-proxy",
        "loopback",
        "--public-host",
        "shard.test:8443",
        "--allowed-origin",
        "https://shard.test:8443",
        "--allowed-origin",
        "https://other.shard.test:8443",
    ];
    args.extend_from_slice(extra);
    Daemon::start(&args)
}

const PH: &str = "shard.test:8443";
const PO: &str = "https://shard.test:8443";

fn proxied<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("Host", PH),
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", PH),
    ];
    h.extend_from_slice(extra);
    h
}

fn proxy_enroll(d: &Daemon) -> Session {
    proxy_enroll_from(d, PO)
}

fn proxy_enroll_from(d: &Daemon, origin: &str) -> Session {
    let code = d.code();
    let r = d.http(
        "POST",
        "/enroll",
        &proxied(&[("Origin", origin)]),
        &format!("{{\"code\":\"{code}\"}}"),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let sc = r.set_cookie().unwrap();
    assert!(
        sc.starts_with("__Host-shard_session=") && sc.contains("; Secure"),
        "{sc}"
    );
    Session::from_enrollment(&r, "__Host-shard_session")
}

#[tokio::test]
async fn ticket_minted_for_another_origin_is_refused_and_proxy_happy_path() {
    let d = proxy_daemon(&[]);
    const OTHER: &str = "https://other.shard.test:8443";
    let here = proxy_enroll(&d);
    let there = proxy_enroll_from(&d, OTHER);
    let post = |s: &Session, origin: &'static str| {
        let c = format!("__Host-shard_session={}", s.cookie);
        d.http(
            "POST",
            "/bootstrap",
            &proxied(&[
                ("Origin", origin),
                ("Cookie", &c),
                ("X-Shard-Session-Key", &s.key),
            ]),
            "",
        )
    };
    let mint = |s: &Session, origin: &'static str| {
        let r = post(s, origin);
        assert_eq!(r.status, 200, "{r:?}");
        r.json()["ticket"].as_str().unwrap().to_string()
    };
    // A session mints only for the allowed Origin it enrolled from: its key lives in
    // that Origin's storage.
    assert_eq!(post(&here, OTHER).status, 401);
    assert_eq!(post(&there, PO).status, 401);
    let other = mint(&there, OTHER);
    let fwd = [("x-forwarded-proto", "https")];
    let e = ws(d.port, PH, Some(PO), Some(&protos(&other)), &fwd).await;
    assert_eq!(e.err(), Some(401), "a ticket for another allowed origin");
    let good = mint(&here, PO);
    let (mut s, _) = ws(d.port, PH, Some(PO), Some(&protos(&good)), &fwd)
        .await
        .unwrap();
    assert!(matches!(next_text(&mut s).await, Some(Event::Hello(_))));
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.home.join("daemon.json")).unwrap()).unwrap();
    assert_eq!(info["public_url"], json!(PO));
}

#[tokio::test]
async fn dns_rebinding_hosts_are_refused_before_any_work() {
    let d = Daemon::start(&[]);
    let port = d.port;
    let hosts = [
        format!("localhost.evil.example:{port}"),
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.1:{port}"),
        format!("0x7f.1:{port}"),
        format!("[::1]:{port}"),
        format!("localhost:{port}"),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{port}.evil.example"),
    ];
    for host in &hosts {
        for (method, path) in [("GET", "/"), ("POST", "/bootstrap"), ("POST", "/enroll")] {
            let r = d.http(
                method,
                path,
                &[("Host", host), ("Origin", &d.origin())],
                "{\"code\":\"x\"}",
            );
            assert!(r.status == 400 || r.status == 421, "{host} {path}: {r:?}");
            assert!(!r.body.contains("Shard"), "no page for {host}");
            assert_security_headers(&r);
        }
    }
    // A missing Host (HTTP/1.0 lets a client omit it).
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.starts_with("HTTP/1.0 400") || out.starts_with("HTTP/1.1 400"),
        "{out}"
    );
    // Rebinding attempts never counted as enrollment failures or did other work.
    assert!(!d.log().contains("refused an enrollment code"));
}

#[tokio::test]
async fn forged_forwarded_headers_from_a_non_proxy_peer_are_ignored() {
    // Only 192.0.2.1 is trusted; the test connects from 127.0.0.1.
    let d = Daemon::start(&[
        "--trust-proxy",
        "192.0.2.1",
        "--public-host",
        PH,
        "--allowed-origin",
        PO,
    ]);
    let code = d.code();
    let r = d.http(
        "POST",
        "/enroll",
        &proxied(&[("Origin", PO)]),
        &format!("{{\"code\":\"{code}\"}}"),
    );
    assert_eq!(
        r.status, 400,
        "forged X-Forwarded-Proto must not make http look https: {r:?}"
    );
    assert!(r.set_cookie().is_none());
}

#[tokio::test]
async fn forged_forwarded_proto_cannot_mint_a_secure_cookie_on_insecure_remote() {
    let d = Daemon::start(&[
        "--trust-proxy",
        "192.0.2.1",
        "--public-host",
        PH,
        "--allowed-origin",
        "http://shard.test:8443",
        "--allow-insecure-remote",
    ]);
    let code = d.code();
    let r = d.http(
        "POST",
        "/enroll",
        &proxied(&[
            ("Origin", "http://shard.test:8443"),
            ("X-Forwarded-Host", "evil.example"),
        ]),
        &format!("{{\"code\":\"{code}\"}}"),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let sc = r.set_cookie().unwrap();
    assert!(
        sc.starts_with("shard_session=") && !sc.contains("Secure"),
        "{sc}"
    );
    assert!(d.log().contains("plaintext"), "the one-line warning");
}

#[tokio::test]
async fn a_proxy_forwarding_the_wrong_host_is_refused() {
    let d = proxy_daemon(&[]);
    let r = d.http(
        "GET",
        "/",
        &[
            ("Host", PH),
            ("X-Forwarded-Proto", "https"),
            ("X-Forwarded-Host", "evil.example"),
        ],
        "",
    );
    assert_eq!(r.status, 400, "{r:?}");
    let r = d.http("GET", "/", &proxied(&[]), "");
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test]
async fn a_secure_cookie_over_http_gets_no_ticket() {
    let d = Daemon::start(&[]);
    let cookie = d.enroll();
    let r = d.http(
        "POST",
        "/bootstrap",
        &[
            ("Host", &d.host()),
            ("Origin", &d.origin()),
            ("Cookie", &format!("__Host-shard_session={}", cookie.cookie)),
            ("X-Shard-Session-Key", &cookie.key),
        ],
        "",
    );
    assert_eq!(r.status, 401, "{r:?}");
    // Behind a proxy, the same cookie over a non-https forwarded scheme gets nothing.
    let p = proxy_daemon(&[
        "--allow-insecure-remote",
        "--allowed-origin",
        "http://shard.test:8443",
    ]);
    let pc = proxy_enroll_from(&p, "http://shard.test:8443");
    let r = p.http(
        "POST",
        "/bootstrap",
        &[
            ("Host", PH),
            ("X-Forwarded-Proto", "http"),
            ("Origin", "http://shard.test:8443"),
            ("Cookie", &format!("__Host-shard_session={}", pc.cookie)),
            ("X-Shard-Session-Key", &pc.key),
        ],
        "",
    );
    assert_eq!(r.status, 401, "{r:?}");
}

#[tokio::test]
async fn enrollment_codes_are_single_use_and_expire() {
    let d = Daemon::start(&[]);
    let code = d.code();
    let body = format!("{{\"code\":\"{code}\"}}");
    let h = [("Host", d.host()), ("Origin", d.origin())];
    let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (*a, b.as_str())).collect();
    assert_eq!(d.http("POST", "/enroll", &h, &body).status, 200);
    assert_eq!(d.http("POST", "/enroll", &h, &body).status, 401, "reuse");
    drop(d);
    let d = Daemon::start(&["--web-code-ttl-ms", "0"]);
    let code = d.code();
    let h = [("Host", d.host()), ("Origin", d.origin())];
    let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let r = d.http("POST", "/enroll", &h, &format!("{{\"code\":\"{code}\"}}"));
    assert_eq!(r.status, 401, "expired");
}

#[tokio::test]
async fn brute_force_is_throttled_even_for_a_valid_code() {
    let d = Daemon::start(&[]);
    let h = [("Host", d.host()), ("Origin", d.origin())];
    let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (*a, b.as_str())).collect();
    for i in 0..10 {
        let r = d.http(
            "POST",
            "/enroll",
            &h,
            &format!("{{\"code\":\"{:064x}\"}}", i),
        );
        assert_eq!(r.status, 401, "attempt {i}");
    }
    let code = d.code();
    let r = d.http("POST", "/enroll", &h, &format!("{{\"code\":\"{code}\"}}"));
    assert_eq!(r.status, 429, "{r:?}");
}

#[tokio::test]
async fn a_revoked_browser_loses_its_cookie_and_its_open_socket() {
    let d = Daemon::start(&[]);
    let cookie = d.enroll();
    let t = d.ticket(&cookie);
    let spare = d.ticket(&cookie);
    let (mut s, _) = ws(d.port, &d.host(), Some(&d.origin()), Some(&protos(&t)), &[])
        .await
        .unwrap();
    assert!(matches!(next_text(&mut s).await, Some(Event::Hello(_))));
    let (_, list, _) = d.web(&["--list"]);
    let id = list.split_whitespace().next().unwrap().to_string();
    assert!(id.starts_with("brw-"), "{list}");
    let (ok, out, err) = d.web(&["--revoke", &id]);
    assert!(ok, "{err}");
    assert!(out.contains(&id));
    assert_eq!(
        closed_with(&mut s).await,
        Some(1008),
        "the live socket closes"
    );
    assert_eq!(
        d.bootstrap(&cookie, &d.origin()).status,
        401,
        "the cookie is dead"
    );
    let e = ws(
        d.port,
        &d.host(),
        Some(&d.origin()),
        Some(&protos(&spare)),
        &[],
    )
    .await;
    assert_eq!(
        e.err(),
        Some(401),
        "tickets minted before the revocation are dead"
    );
    let (ok, list, _) = d.web(&["--list"]);
    assert!(ok && !list.contains(&id));
    let (ok, _, err) = d.web(&["--revoke", &id]);
    assert!(!ok && err.contains("no enrolled browser"), "{err}");
}

#[tokio::test]
async fn a_store_with_wider_permissions_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let sec = home.path().join("security");
    std::fs::create_dir_all(&sec).unwrap();
    std::fs::set_permissions(&sec, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(sec.join("store.json"), r#"{"version":1,"principals":[]}"#).unwrap();
    std::fs::set_permissions(
        sec.join("store.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = shard()
        .args(["daemon", "--port", "0"])
        .env("SHARD_HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("store.json") && err.contains("owner-only"),
        "{err}"
    );
    std::fs::set_permissions(
        sec.join("store.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::set_permissions(&sec, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = shard()
        .args(["daemon", "--port", "0"])
        .env("SHARD_HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("owner-only"), "{err}");
}

#[tokio::test]
async fn binary_frames_are_refused_with_a_close() {
    let d = Daemon::start(&[]);
    let cookie = d.enroll();
    let t = d.ticket(&cookie);
    let (mut s, _) = ws(d.port, &d.host(), Some(&d.origin()), Some(&protos(&t)), &[])
        .await
        .unwrap();
    assert!(matches!(next_text(&mut s).await, Some(Event::Hello(_))));
    s.send(Message::Binary(vec![1, 2, 3].into())).await.unwrap();
    assert_eq!(closed_with(&mut s).await, Some(1003));
}

#[tokio::test]
async fn a_client_that_stops_answering_pings_is_dropped() {
    let d = Daemon::start(&["--web-ping-ms", "200"]);
    let cookie = d.enroll();
    let t = d.ticket(&cookie);
    // A raw client that never answers a ping.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let req = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: {}\r\n\r\n",
        d.host(),
        d.origin(),
        protos(&t)
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 101"), "{text}");
    assert!(
        text.contains("sec-websocket-protocol: shard.v1\r\n"),
        "{text}"
    );
    assert!(all.windows(2).any(|w| w == [0x89, 0x00]), "a ping came");
    assert!(all.windows(1).any(|w| w[0] == 0x88), "a close frame came");
}

#[test]
fn unsafe_remote_combinations_refuse_to_start_with_one_line() {
    let cases: [(&[&str], &str); 5] = [
        (&["--web-host", "0.0.0.0"], "--public-host"),
        (
            &["--web-host", "0.0.0.0", "--public-host", "h:1"],
            "--allowed-origin",
        ),
        (
            &[
                "--web-host",
                "0.0.0.0",
                "--public-host",
                "h:1",
                "--allowed-origin",
                "http://h:1",
            ],
            "--allow-insecure-remote",
        ),
        (&["--trust-proxy", "loopback"], "--public-host"),
        (&["--allowed-origin", "http://x:1"], "remote mode"),
    ];
    for (args, needle) in cases {
        let home = tempfile::tempdir().unwrap();
        let out = shard()
            .args(["daemon", "--port", "0"])
            .args(args)
            .env("SHARD_HOME", home.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[tokio::test]
async fn direct_non_loopback_happy_path() {
    let o = "http://shard.test:7000";
    let d = Daemon::start(&[
        "--web-host",
        "0.0.0.0",
        "--public-host",
        "shard.test:7000",
        "--allowed-origin",
        o,
        "--allow-insecure-remote",
    ]);
    assert!(d.log().contains("warning: --allow-insecure-remote"));
    let code = d.code();
    let h = [("Host", "shard.test:7000"), ("Origin", o)];
    let r = d.http("POST", "/enroll", &h, &format!("{{\"code\":\"{code}\"}}"));
    assert_eq!(r.status, 200, "{r:?}");
    let session = Session::from_enrollment(&r, "shard_session");
    let c = format!("shard_session={}", session.cookie);
    let r = d.http(
        "POST",
        "/bootstrap",
        &[
            ("Host", "shard.test:7000"),
            ("Origin", o),
            ("Cookie", &c),
            ("X-Shard-Session-Key", &session.key),
        ],
        "",
    );
    assert_eq!(r.status, 200, "{r:?}");
    let t = r.json()["ticket"].as_str().unwrap().to_string();
    let (mut s, _) = ws(d.port, "shard.test:7000", Some(o), Some(&protos(&t)), &[])
        .await
        .unwrap();
    assert!(matches!(next_text(&mut s).await, Some(Event::Hello(_))));
    // The loopback Host is not an alias in remote mode.
    assert_eq!(d.http("GET", "/", &[("Host", &d.host())], "").status, 421);
}
