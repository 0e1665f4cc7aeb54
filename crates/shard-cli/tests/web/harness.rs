//! A real `shard daemon` with its web door, and real HTTP and WebSocket clients (raw TCP
//! for HTTP, tokio-tungstenite or a raw handshake for WebSockets).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// Generous: the machine is small and shared.
pub const T: Duration = Duration::from_secs(60);

pub struct Daemon {
    pub child: Child,
    pub home: PathBuf,
    pub port: u16,
    pub stderr_log: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

pub fn shard() -> Command {
    Command::new(env!("CARGO_BIN_EXE_shard"))
}

impl Daemon {
    pub fn start(extra: &[&str]) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Daemon::start_in(dir.path(), extra);
        d._dir = Some(dir);
        d
    }

    /// A daemon for `home`; `--port 0` unless `extra` names a port.
    pub fn start_in(home: &Path, extra: &[&str]) -> Daemon {
        let mut cmd = shard();
        cmd.arg("daemon");
        if !extra.contains(&"--port") {
            cmd.args(["--port", "0"]);
        }
        let mut child = cmd
            .args(extra)
            .env("SHARD_HOME", home)
            .env("SHARD_LOG", "shard_web=debug,shard_daemon=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = home.join("daemon-test.log");
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log2)
                .unwrap();
            let mut port = None;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(f, "{line}");
                if let Some(rest) = line.strip_prefix("shard daemon serving http://") {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    port = addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
                }
                if line.contains("listening on") {
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx.recv_timeout(T).expect("daemon started").expect("port");
        Daemon {
            child,
            home: home.to_path_buf(),
            port,
            stderr_log: log,
            _dir: None,
        }
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `shard web [args]` against this daemon: (success, stdout, stderr).
    pub fn web(&self, args: &[&str]) -> (bool, String, String) {
        let out = shard()
            .arg("web")
            .args(args)
            .env("SHARD_HOME", &self.home)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A fresh enrollment code from `shard web`.
    pub fn code(&self) -> String {
        let (ok, out, err) = self.web(&[]);
        assert!(ok, "{err}");
        let line = out.trim();
        assert_eq!(out.lines().count(), 1, "{out}");
        let (url, code) = line.split_once("/enroll#").expect(line);
        assert!(
            url.starts_with("http://") || url.starts_with("https://"),
            "{url}"
        );
        code.to_string()
    }

    /// Raw HTTP with the given request head lines (Host etc. are the caller's).
    pub fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
        raw_http(self.port, method, path, headers, body)
    }

    /// Enrolls over loopback defaults; returns the cookie and the session key.
    pub fn enroll(&self) -> Session {
        let code = self.code();
        let body = format!("{{\"code\":\"{code}\"}}");
        let r = self.http(
            "POST",
            "/enroll",
            &[("Host", &self.host()), ("Origin", &self.origin())],
            &body,
        );
        assert_eq!(r.status, 200, "{r:?}");
        Session::from_enrollment(&r, "shard_session")
    }

    /// `POST /bootstrap` as the page does: the cookie and the session key header.
    pub fn bootstrap(&self, s: &Session, origin: &str) -> Resp {
        let c = format!("shard_session={}", s.cookie);
        self.http(
            "POST",
            "/bootstrap",
            &[
                ("Host", &self.host()),
                ("Origin", origin),
                ("Cookie", &c),
                ("X-Shard-Session-Key", &s.key),
            ],
            "",
        )
    }

    pub fn ticket(&self, s: &Session) -> String {
        let r = self.bootstrap(s, &self.origin());
        assert_eq!(r.status, 200, "{r:?}");
        r.json()["ticket"].as_str().unwrap().to_string()
    }

    /// Ends the daemon with SIGTERM (by its pid) and waits for it to exit.
    pub fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("daemon log:\n{}", self.log());
        }
    }
}

/// An enrolled browser's two secrets: the cookie (sent to every port of the host) and the
/// session key (kept by the page in its Origin's storage).
#[derive(Debug, Clone)]
pub struct Session {
    pub cookie: String,
    pub key: String,
}

impl Session {
    /// From a `200` answer to `POST /enroll`, the cookie being called `name`.
    pub fn from_enrollment(r: &Resp, name: &str) -> Session {
        let key = r.json()["session_key"]
            .as_str()
            .expect("session_key")
            .to_string();
        Session {
            cookie: r.cookie(name).expect("cookie"),
            key,
        }
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
    pub fn set_cookie(&self) -> Option<String> {
        self.header("set-cookie")
    }
    pub fn cookie(&self, name: &str) -> Option<String> {
        let sc = self.set_cookie()?;
        let first = sc.split(';').next()?;
        let (n, v) = first.split_once('=')?;
        (n == name).then(|| v.to_string())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect(&self.body)
    }
}

pub fn raw_http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Resp {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket upgrade: `Ok(socket, selected protocol)` or `Err(status)`.
pub async fn ws(
    port: u16,
    host: &str,
    origin: Option<&str>,
    protocols: Option<&str>,
    extra: &[(&'static str, &str)],
) -> Result<(Ws, Option<String>), u16> {
    let mut req = format!("ws://127.0.0.1:{port}/ws")
        .into_client_request()
        .unwrap();
    let h = req.headers_mut();
    h.insert("host", HeaderValue::from_str(host).unwrap());
    if let Some(o) = origin {
        h.insert("origin", HeaderValue::from_str(o).unwrap());
    }
    if let Some(p) = protocols {
        h.insert("sec-websocket-protocol", HeaderValue::from_str(p).unwrap());
    }
    for (n, v) in extra {
        h.insert(*n, HeaderValue::from_str(v).unwrap());
    }
    match tokio::time::timeout(T, tokio_tungstenite::connect_async(req))
        .await
        .expect("upgrade in time")
    {
        Ok((s, resp)) => {
            assert_eq!(resp.status().as_u16(), 101);
            let p = resp
                .headers()
                .get("sec-websocket-protocol")
                .map(|v| v.to_str().unwrap().to_string());
            Ok((s, p))
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
        Err(e) => panic!("unexpected upgrade error: {e}"),
    }
}

/// The next text message, decoded strictly as a protocol event (pings are answered by
/// the library).
pub async fn next_text(s: &mut Ws) -> Option<shard_protocol::Event> {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let m = tokio::time::timeout(T, s.next())
            .await
            .expect("message in time");
        match m {
            Some(Ok(Message::Text(t))) => {
                let ev = shard_protocol::decode_event(t.as_bytes())
                    .unwrap_or_else(|e| panic!("not an event ({e}): {t}"));
                return Some(ev);
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            _ => return None,
        }
    }
}

/// Reads until the server closes; returns the close code, if a close frame came.
pub async fn closed_with(s: &mut Ws) -> Option<u16> {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let m = tokio::time::timeout(T, s.next())
            .await
            .expect("close in time");
        match m {
            Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
            Some(Ok(_)) => {}
            _ => return None,
        }
    }
}
