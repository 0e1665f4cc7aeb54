//! The web door's port with real sockets: the default port taken moves the door to the
//! next free one (written to daemon.json and printed by `shard web`); an explicit
//! `--port` that is taken is one line naming it; no port at all leaves the daemon on its
//! unix socket, saying why in daemon.json and `shard web`.
//!
//! One test: the three cases hold the shared default range 7420-7470 in turn.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Stdio};

use crate::harness::{T, shard};

/// `shard daemon` with `args`, once it listens on its unix socket; its stderr lines so far.
fn daemon(home: &Path, args: &[&str]) -> (Child, Vec<String>) {
    let mut child = shard()
        .arg("daemon")
        .args(args)
        .env("SHARD_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            seen.push(line.clone());
            if line.contains("listening on") {
                let _ = tx.send(seen.clone());
            }
        }
    });
    let seen = rx
        .recv_timeout(T)
        .expect("the daemon listens on its socket");
    (child, seen)
}

/// Ends the daemon with SIGTERM (by pid) and waits for it.
fn stop(mut child: Child) {
    let _ = shard_kill_term(child.id());
    let _ = child.wait();
}

fn shard_kill_term(pid: u32) -> std::io::Result<std::process::ExitStatus> {
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
}

fn daemon_json(home: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(home.join("daemon.json")).unwrap()).unwrap()
}

fn shard_web(home: &Path) -> std::process::Output {
    shard()
        .arg("web")
        .env("SHARD_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Binds what it can of `ports` on 127.0.0.1; a port it cannot bind is held by someone
/// else, which serves the test as well.
fn hold(ports: std::ops::RangeInclusive<u16>) -> Vec<TcpListener> {
    ports
        .filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
        .collect()
}

#[test]
fn the_default_port_moves_on_an_explicit_one_fails_and_none_leaves_the_socket() {
    // 1. 7420 taken: the door takes the next free port and says which.
    let held = hold(7420..=7420);
    let home = tempfile::tempdir().unwrap();
    let (child, seen) = daemon(home.path(), &[]);
    let info = daemon_json(home.path());
    let port = info["port"].as_u64().unwrap() as u16;
    assert!((7421..=7470).contains(&port), "{info}");
    let url = format!("http://127.0.0.1:{port}");
    assert_eq!(info["url"], url.as_str());
    assert!(
        seen.iter()
            .any(|l| l == &format!("shard daemon serving {url}")),
        "{seen:?}"
    );
    let out = shard_web(home.path());
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success(), "{out:?}");
    assert!(link.starts_with(&format!("{url}/enroll#")), "{link}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    stop(child);
    drop(held);

    // 2. An explicit port that is taken: one line naming it, and no daemon.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = taken.local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    let out = shard()
        .args(["daemon", "--port", &p.to_string()])
        .env("SHARD_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(&format!("port {p} is taken (--port {p})")))
        .collect();
    assert_eq!(named.len(), 1, "{stderr}");
    assert!(!home.path().join("daemon.json").exists());
    drop(taken);

    // 3. Every port of the range taken: the daemon serves its socket without the door.
    let held = hold(7420..=7470);
    let home = tempfile::tempdir().unwrap();
    let (child, seen) = daemon(home.path(), &[]);
    assert!(
        seen.iter()
            .any(|l| l.contains("no port from 7420 to 7470") && l.contains("without its web door")),
        "{seen:?}"
    );
    let info = daemon_json(home.path());
    assert!(info["web"].is_null(), "{info}");
    assert!(info.get("url").is_none(), "{info}");
    assert!(
        info["web_error"]
            .as_str()
            .unwrap()
            .contains("no port from 7420 to 7470"),
        "{info}"
    );
    let out = shard_web(home.path());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the daemon runs without its web door: no port from 7420 to 7470"),
        "{stderr}"
    );
    // The unix socket serves.
    let ls = shard()
        .arg("ls")
        .env("SHARD_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(ls.status.success(), "{ls:?}");
    stop(child);
    assert!(!home.path().join("daemon.json").exists(), "removed at exit");
    drop(held);
}
