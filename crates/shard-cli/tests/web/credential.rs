//! The door's credential across ports. Cookies are not scoped by port: any server on
//! another port of 127.0.0.1 (or a squatter on the door's old port) receives the session
//! cookie and can replay it with any `Origin` it likes. So the cookie alone must never mint
//! a ticket: `/bootstrap` also wants the session key, which the page keeps in its Origin's
//! own storage, and the Origin the session enrolled from. docs/security.md, "Round three:
//! the browser door".

use std::net::TcpListener;

use super::harness::*;

/// `POST /bootstrap` with exactly these headers (after Host).
fn bootstrap_with(d: &Daemon, headers: &[(&str, &str)]) -> Resp {
    let host = d.host();
    let mut h = vec![("Host", host.as_str())];
    h.extend_from_slice(headers);
    d.http("POST", "/bootstrap", &h, "")
}

fn assert_no_ticket(r: &Resp, what: &str) {
    assert!(
        r.status == 401 || r.status == 403 || r.status == 400,
        "{what}: {r:?}"
    );
    assert!(!r.body.contains("ticket\""), "{what} minted: {r:?}");
}

#[test]
fn a_cookie_alone_mints_no_ticket_whatever_comes_with_it() {
    let d = Daemon::start(&[]);
    let mine = d.enroll();
    let theirs = d.enroll();
    // What a server on another port of the host receives and can replay.
    let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
    let their_origin = format!(
        "http://127.0.0.1:{}",
        elsewhere.local_addr().unwrap().port()
    );
    let origin = d.origin();
    let cookie = format!("shard_session={}", mine.cookie);
    let upper = mine.key.to_uppercase();
    let short = &mine.key[..63];
    let longer = format!("{}0", mine.key);
    // HTTP trims spaces around a header value, so the last character changes instead.
    let last = if mine.key.ends_with('0') { "1" } else { "0" };
    let flipped = format!("{}{last}", &mine.key[..63]);
    let key_cookie = format!("shard_session={}", mine.key);
    let both_in_cookie = format!(
        "shard_session={}; shard_session_key={}",
        mine.cookie, mine.key
    );
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "cookie + forged Origin",
            vec![("Origin", &origin), ("Cookie", &cookie)],
        ),
        (
            "cookie + the other port's Origin",
            vec![("Origin", &their_origin), ("Cookie", &cookie)],
        ),
        (
            "cookie + empty key",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", ""),
            ],
        ),
        (
            "cookie + garbled key",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", "garbled"),
            ],
        ),
        (
            "cookie + key in capitals",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &upper),
            ],
        ),
        (
            "cookie + key cut short",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", short),
            ],
        ),
        (
            "cookie + key with a byte more",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &longer),
            ],
        ),
        (
            "cookie + key with its last character changed",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &flipped),
            ],
        ),
        (
            "cookie + another session's key",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &theirs.key),
            ],
        ),
        (
            "cookie + the cookie as key",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &mine.cookie),
            ],
        ),
        (
            "cookie + key twice, one wrong",
            vec![
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &theirs.key),
                ("X-Shard-Session-Key", &mine.key),
            ],
        ),
        (
            "cookie + key, from the other port's Origin",
            vec![
                ("Origin", &their_origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &mine.key),
            ],
        ),
        (
            "key alone",
            vec![("Origin", &origin), ("X-Shard-Session-Key", &mine.key)],
        ),
        (
            "key as the cookie",
            vec![
                ("Origin", &origin),
                ("Cookie", &key_cookie),
                ("X-Shard-Session-Key", &mine.key),
            ],
        ),
        (
            "key in a cookie beside the session cookie",
            vec![("Origin", &origin), ("Cookie", &both_in_cookie)],
        ),
    ];
    for (what, headers) in &cases {
        assert_no_ticket(&bootstrap_with(&d, headers), what);
    }
    // The cookie with no session key is no WebSocket either.
    let r = d.http(
        "GET",
        "/ws",
        &[
            ("Host", &d.host()),
            ("Origin", &origin),
            ("Cookie", &cookie),
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Protocol", "shard.v1"),
        ],
        "",
    );
    assert_eq!(r.status, 401, "{r:?}");
    // The page's own request (cookie, key, its Origin) still mints, for each session.
    assert_eq!(d.bootstrap(&mine, &origin).status, 200);
    assert_eq!(d.bootstrap(&theirs, &origin).status, 200);
    // Neither secret reaches the log.
    let log = d.log();
    for secret in [&mine.cookie, &mine.key, &theirs.key] {
        assert!(!log.contains(secret.as_str()), "a secret in the log");
    }
}

#[test]
fn a_session_of_another_port_or_without_a_key_must_enroll_again() {
    let home = tempfile::tempdir().unwrap();
    // A store written before session keys: a principal whose session has a cookie only.
    let old_cookie = "ab".repeat(32);
    let hash = shard_web::secret::to_hex(&shard_web::secret::hash(&old_cookie));
    let store = serde_json::json!({"version": 1, "principals": [{
        "id": "brw-legacy", "created_ms": 1, "last_seen_ms": 1,
        "sessions": [{"id": "bss-legacy", "hash": hash, "created_ms": 1}]
    }]});
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = home.path().join("security");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let f = dir.join("store.json");
        std::fs::write(&f, store.to_string()).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut d = Daemon::start_in(home.path(), &[]);
    let (_, list, _) = d.web(&["--list"]);
    assert!(!list.contains("brw-legacy"), "dropped at start: {list}");
    let r = bootstrap_with(
        &d,
        &[
            ("Origin", &d.origin()),
            ("Cookie", &format!("shard_session={old_cookie}")),
            ("X-Shard-Session-Key", &"cd".repeat(32)),
        ],
    );
    assert_no_ticket(&r, "a session from before session keys");

    // Enrolled here, then the door comes back on the same port: the session holds.
    let s = d.enroll();
    let port = d.port.to_string();
    d.stop();
    let mut d = Daemon::start_in(home.path(), &["--port", &port]);
    assert_eq!(d.bootstrap(&s, &d.origin()).status, 200);
    // The door comes back on another port: the old Origin's storage (and whoever served
    // there meanwhile) held the key, so the session is gone, and stays gone.
    d.stop();
    let mut moved = Daemon::start_in(home.path(), &[]);
    assert_ne!(moved.port.to_string(), port);
    let (_, list, _) = moved.web(&["--list"]);
    assert_eq!(list.trim(), "", "{list}");
    let old_origin = format!("http://127.0.0.1:{port}");
    assert_no_ticket(&moved.bootstrap(&s, &moved.origin()), "moved door");
    assert_no_ticket(&moved.bootstrap(&s, &old_origin), "the old Origin");
    moved.stop();
    let back = Daemon::start_in(home.path(), &["--port", &port]);
    assert_no_ticket(&back.bootstrap(&s, &back.origin()), "back on the old port");
}
