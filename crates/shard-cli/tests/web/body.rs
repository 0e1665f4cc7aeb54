//! The door under slow request bodies: a crowd of loopback connections whose heads are
//! complete but whose bodies trickle in a byte a second (a declared length within the cap,
//! chunked, or a length far over it; to `/enroll`, `/bootstrap` and `GET /`). Each is closed by the body deadline, and enrollment
//! and `/bootstrap` are served all the while. docs/security.md, "Round three: the browser
//! door".

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::harness::*;

/// How many trickling connections the crowd holds: far past the per-peer cap (128).
const CROWD: usize = 1_000;
/// The attack's own rate: one byte a second per connection.
const TRICKLE: Duration = Duration::from_secs(1);
/// The body deadline is 10 s; a connection still open this long after its head was sent
/// is held by something else (the 30 s handler or idle timeouts were the old bounds).
const CLOSED_WITHIN: Duration = Duration::from_secs(25);

/// One trickling connection: when it opened, and when the server was seen to close it.
struct Trickler {
    s: TcpStream,
    opened: Instant,
    closed: Option<Instant>,
    chunked: bool,
}

/// True when the server has closed `s` (reads drained; end of stream or an error).
fn server_closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// How many of the crowd, first, use the spellings a handler never waited for (a body on
/// `/bootstrap` or `GET /`, a length far over the cap); the rest hold `/enroll` open, the
/// kind that locked loopback out before, and come last so that they fill the slots.
const MIXED: usize = 100;

/// The head of the `i`th trickler, and whether its body is chunked.
fn head(i: usize, host: &str) -> (String, bool) {
    let enroll =
        format!("POST /enroll HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n");
    let spelling = if i < MIXED { i % 3 } else { 3 + i % 2 };
    match spelling {
        0 => (
            format!(
                "POST /bootstrap HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n"
            ),
            true,
        ),
        1 => (
            format!("{enroll}Content-Length: 1000000000\r\n\r\n{{"),
            false,
        ),
        2 => (
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 4000\r\n\r\nx"),
            false,
        ),
        3 => (format!("{enroll}Content-Length: 4000\r\n\r\n{{"), false),
        _ => (format!("{enroll}Transfer-Encoding: chunked\r\n\r\n"), true),
    }
}

#[test]
fn a_crowd_of_trickled_bodies_is_closed_and_keeps_enrollment_and_bootstrap_served() {
    let d = Daemon::start(&[]);
    let host = d.host();
    let mut crowd = Vec::with_capacity(CROWD);
    for i in 0..CROWD {
        let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
        let (h, chunked) = head(i, &host);
        // The server may already have closed it to make room, which is the point.
        let _ = s.write_all(h.as_bytes());
        s.set_nonblocking(true).unwrap();
        crowd.push(Trickler {
            s,
            opened: Instant::now(),
            closed: None,
            chunked,
        });
    }
    // The crowd trickles on its own thread, a byte a second each (the sleep is the
    // attack's rate, not a wait for anything), until the server has closed them all.
    let feeder = std::thread::spawn(move || {
        let give_up = Instant::now() + T;
        while Instant::now() < give_up {
            let mut open = 0;
            for t in crowd.iter_mut().filter(|t| t.closed.is_none()) {
                if server_closed(&mut t.s) {
                    t.closed = Some(Instant::now());
                    continue;
                }
                open += 1;
                let byte: &[u8] = if t.chunked { b"1\r\nx\r\n" } else { b" " };
                let _ = t.s.write(byte);
            }
            if open == 0 {
                break;
            }
            std::thread::sleep(TRICKLE);
        }
        crowd
    });
    // Meanwhile a browser enrolls and bootstraps, again and again.
    for _ in 0..3 {
        let s = d.enroll();
        let r = d.bootstrap(&s, &d.origin());
        assert_eq!(r.status, 200, "bootstrap under the crowd: {r:?}");
    }
    let crowd = feeder.join().unwrap();
    let late: Vec<Duration> = crowd
        .iter()
        .filter_map(|t| match t.closed {
            Some(c) if c.duration_since(t.opened) <= CLOSED_WITHIN => None,
            Some(c) => Some(c.duration_since(t.opened)),
            None => Some(T),
        })
        .collect();
    assert!(
        late.is_empty(),
        "{} of {CROWD} trickled bodies outlived the deadline: {:?}",
        late.len(),
        &late[..late.len().min(5)]
    );
    // The door still serves after the crowd.
    let s = d.enroll();
    assert_eq!(d.bootstrap(&s, &d.origin()).status, 200);
}

#[test]
fn bodies_over_the_cap_are_refused_at_once() {
    let d = Daemon::start(&[]);
    let big = format!("{{\"code\":\"{}\"}}", "a".repeat(9 * 1024));
    let r = d.http(
        "POST",
        "/enroll",
        &[("Host", &d.host()), ("Origin", &d.origin())],
        &big,
    );
    assert_eq!(r.status, 413, "{r:?}");
    assert_eq!(
        r.header("content-security-policy").as_deref(),
        Some("default-src 'self'; frame-ancestors 'none'"),
        "a refusal carries the security headers: {r:?}"
    );
    // A chunked body past the cap: refused without waiting for its end.
    let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let chunk = "b".repeat(4096);
    let mut req = format!(
        "POST /bootstrap HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        d.host(),
        d.origin()
    );
    for _ in 0..3 {
        req.push_str(&format!("1000\r\n{chunk}\r\n"));
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}
