//! docs/WEB-DEPLOYMENT.md's nginx recipe, tested as written: a real nginx on loopback with
//! a self-signed certificate made here by `openssl`, in front of `shard daemon` in
//! trusted-proxy mode. Skips with a printed reason when nginx or openssl is absent (CI
//! installs Debian's `nginx` and `openssl`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use futures::SinkExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::harness::{Daemon, Resp, T};

const NAME: &str = "shard.test";

fn found(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// nginx in the foreground, one process (`master_process off`), everything under `dir`;
/// killed by its PID when dropped.
struct Nginx {
    child: Child,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
            eprintln!("nginx error log:\n{log}");
        }
    }
}

/// The `server` blocks of docs/WEB-DEPLOYMENT.md, on `127.0.0.1:port` and with paths
/// under `dir`.
fn nginx_conf(dir: &Path, port: u16, upstream: u16) -> String {
    let d = dir.display();
    format!(
        r#"daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;

    map $http_upgrade $shard_connection {{
        default upgrade;
        ''      close;
    }}

    server {{
        listen 127.0.0.1:{port} ssl;
        server_name {NAME};
        ssl_certificate     {d}/cert.pem;
        ssl_certificate_key {d}/key.pem;

        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $shard_connection;
            proxy_read_timeout 120s;
            proxy_buffering off;
        }}
    }}

    server {{
        listen 127.0.0.1:{port} ssl default_server;
        ssl_reject_handshake on;
    }}
}}
"#
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Proxy {
    port: u16,
    tls: TlsConnector,
    _nginx: Nginx,
}

impl Proxy {
    fn host(&self) -> String {
        format!("{NAME}:{}", self.port)
    }
    fn origin(&self) -> String {
        format!("https://{NAME}:{}", self.port)
    }

    async fn connect(&self) -> TlsStream<tokio::net::TcpStream> {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap();
        let name = ServerName::try_from(NAME).unwrap();
        tokio::time::timeout(T, self.tls.connect(name, tcp))
            .await
            .expect("TLS in time")
            .unwrap()
    }

    /// One HTTP/1.1 request over TLS through nginx.
    async fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
        let mut s = self.connect().await;
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
        s.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        // A peer that closes without close_notify still delivered the whole response.
        let _ = tokio::time::timeout(T, s.read_to_end(&mut buf))
            .await
            .expect("response in time");
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

    async fn ws(
        &self,
        origin: Option<&str>,
        protocols: &str,
    ) -> Result<
        (
            tokio_tungstenite::WebSocketStream<TlsStream<tokio::net::TcpStream>>,
            Option<String>,
        ),
        u16,
    > {
        let mut req = format!("wss://{}/ws", self.host())
            .into_client_request()
            .unwrap();
        let h = req.headers_mut();
        if let Some(o) = origin {
            h.insert("origin", HeaderValue::from_str(o).unwrap());
        }
        h.insert(
            "sec-websocket-protocol",
            HeaderValue::from_str(protocols).unwrap(),
        );
        let tls = self.connect().await;
        match tokio::time::timeout(T, tokio_tungstenite::client_async(req, tls))
            .await
            .expect("upgrade in time")
        {
            Ok((s, resp)) => {
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
}

fn run(program: &Path, args: &[&str], dir: &Path) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The daemon in trusted-proxy mode and nginx in front of it, or `None` (with the reason
/// printed) when nginx or openssl is missing.
fn start(dir: &Path) -> Option<(Daemon, Proxy)> {
    let (Some(nginx), Some(openssl)) = (found("nginx"), found("openssl")) else {
        crate::skip::skip(
            "the nginx recipe test needs `nginx` and `openssl` (Debian packages nginx, openssl)",
        );
        return None;
    };
    // A leaf certificate (CA:FALSE: a TLS client refuses a CA certificate as a server's),
    // trusted directly by the test's client.
    std::fs::write(
        dir.join("openssl.cnf"),
        format!(
            "[req]\ndistinguished_name = dn\nx509_extensions = leaf\nprompt = no\n\
             [dn]\nCN = {NAME}\n\
             [leaf]\nsubjectAltName = DNS:{NAME}\nbasicConstraints = critical, CA:FALSE\n\
             keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n"
        ),
    )
    .unwrap();
    run(
        &openssl,
        &[
            "req",
            "-x509",
            "-config",
            "openssl.cnf",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "1",
        ],
        dir,
    );
    run(
        &openssl,
        &[
            "x509", "-in", "cert.pem", "-outform", "DER", "-out", "cert.der",
        ],
        dir,
    );
    let port = free_port();
    let public_host = format!("{NAME}:{port}");
    let origin = format!("https://{NAME}:{port}");
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    let daemon = Daemon::start_in(
        &home,
        &[
            "--trust-proxy",
            "loopback",
            "--public-host",
            &public_host,
            "--allowed-origin",
            &origin,
        ],
    );
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(dir, port, daemon.port)).unwrap();
    let prefix = format!("{}/", dir.display());
    let child = Command::new(&nginx)
        .args(["-p", &prefix, "-c"])
        .arg(&conf)
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let guard = Nginx {
        child,
        dir: dir.to_path_buf(),
    };
    // Ready when it accepts a connection (or the test fails after the generous timeout).
    let deadline = std::time::Instant::now() + T;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nginx did not listen: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(
            std::fs::read(dir.join("cert.der")).unwrap(),
        ))
        .unwrap();
    let cfg = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Some((
        daemon,
        Proxy {
            port,
            tls: TlsConnector::from(Arc::new(cfg)),
            _nginx: guard,
        },
    ))
}

#[tokio::test]
async fn the_nginx_recipe_enrolls_bootstraps_and_upgrades_and_keeps_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let Some((d, p)) = start(dir.path()) else {
        return;
    };
    let (host, origin) = (p.host(), p.origin());

    // Enrollment through the proxy: the effective scheme is https, so the cookie is the
    // Secure, __Host- form. A client-sent X-Forwarded-Host is replaced by nginx.
    let code = d.code();
    assert!(code.len() >= 22, "{code}");
    let (_, url, _) = d.web(&[]);
    assert!(
        url.trim().starts_with(&format!("{origin}/enroll#")),
        "{url}"
    );
    let r = p
        .http(
            "POST",
            "/enroll",
            &[
                ("Host", &host),
                ("Origin", &origin),
                ("X-Forwarded-Host", "evil.example"),
            ],
            &format!("{{\"code\":\"{code}\"}}"),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let sc = r.set_cookie().unwrap();
    assert!(
        sc.starts_with("__Host-shard_session=") && sc.contains("; Secure"),
        "{sc}"
    );
    let cookie = format!(
        "__Host-shard_session={}",
        r.cookie("__Host-shard_session").unwrap()
    );
    let key = r.json()["session_key"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("x-frame-options").as_deref(),
        Some("DENY"),
        "{r:?}"
    );

    let bootstrap = async |origin: &str| {
        p.http(
            "POST",
            "/bootstrap",
            &[
                ("Host", &host),
                ("Origin", origin),
                ("Cookie", &cookie),
                ("X-Shard-Session-Key", &key),
            ],
            "",
        )
        .await
    };
    let b = bootstrap(&origin).await;
    assert_eq!(b.status, 200, "{b:?}");
    let ticket = b.json()["ticket"].as_str().unwrap().to_string();
    let protos = format!("shard.v1, shard.ticket.{ticket}");

    // The WebSocket upgrade through nginx, then a command.
    let (mut s, proto) = p.ws(Some(&origin), &protos).await.unwrap();
    assert_eq!(proto.as_deref(), Some("shard.v1"));
    let hello = next(&mut s).await;
    assert_eq!(hello["type"], json!("hello"), "{hello}");
    s.send(Message::Text(r#"{"type":"agent.list","id":"n1"}"#.into()))
        .await
        .unwrap();
    let resp = next(&mut s).await;
    assert_eq!(resp["id"], json!("n1"), "{resp}");
    assert_eq!(resp["success"], json!(true), "{resp}");

    // The checks hold through the proxy.
    assert_eq!(
        p.ws(Some(&origin), &protos).await.err(),
        Some(401),
        "a replayed ticket"
    );
    let t2 = bootstrap(&origin).await.json()["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    let protos2 = format!("shard.v1, shard.ticket.{t2}");
    assert_eq!(
        p.ws(Some("https://evil.example"), &protos2).await.err(),
        Some(400),
        "a foreign Origin"
    );
    assert_eq!(p.ws(None, &protos2).await.err(), Some(400), "no Origin");
    assert_eq!(
        bootstrap("https://evil.example").await.status,
        400,
        "no ticket for a foreign Origin"
    );
    let other_port = format!("{NAME}:1");
    let r = p
        .http("GET", "/", &[("Host", other_port.as_str())], "")
        .await;
    assert_eq!(
        r.status, 421,
        "a Host with another port reaches the daemon's check: {r:?}"
    );
    let r = p.http("GET", "/", &[("Host", "evil.example")], "").await;
    assert_ne!(
        r.status, 200,
        "another name never reaches the daemon: {r:?}"
    );
    assert!(!r.body.contains("not implemented yet"), "{r:?}");
    let r = p
        .http(
            "POST",
            "/bootstrap",
            &[("Host", &host), ("Origin", &origin)],
            "",
        )
        .await;
    assert_eq!(r.status, 401, "no cookie, no ticket: {r:?}");
    let r = p
        .http(
            "POST",
            "/bootstrap",
            &[("Host", &host), ("Origin", &origin), ("Cookie", &cookie)],
            "",
        )
        .await;
    assert_eq!(
        r.status, 401,
        "the cookie without its key, no ticket: {r:?}"
    );
    drop(s);
}

async fn next<S>(s: &mut tokio_tungstenite::WebSocketStream<S>) -> serde_json::Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::StreamExt;
    loop {
        match tokio::time::timeout(T, s.next())
            .await
            .expect("message in time")
        {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("socket ended: {other:?}"),
        }
    }
}
