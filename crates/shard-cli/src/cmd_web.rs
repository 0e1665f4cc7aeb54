//! `shard web` (enrollment link, `--list`, `--revoke`) and the web-door flags of
//! `shard daemon` (docs/web.md, docs/WEB-DEPLOYMENT.md).

use std::io::Write;
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use shard_web::admin::{AdminReply, AdminRequest};
use shard_web::{WebConfig, WebError, WebOptions};

use crate::common;

/// The web door's flags on `shard daemon`.
#[derive(Args)]
pub struct WebFlags {
    /// HTTP port of the web door (0 picks a free one). Without it: 7420, else the next
    /// free of the 50 after it; a port given here that is taken is an error.
    #[arg(long)]
    port: Option<u16>,
    /// Address to bind; a non-loopback address is remote mode (needs --public-host,
    /// --allowed-origin and --allow-insecure-remote).
    #[arg(long)]
    web_host: Option<IpAddr>,
    /// Remote mode: the exact Host (HOST:PORT) browsers send.
    #[arg(long)]
    public_host: Option<String>,
    /// Remote mode: an exact origin allowed to connect (repeatable).
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Remote mode over plaintext HTTP: accept that the session cookie can be intercepted.
    #[arg(long)]
    allow_insecure_remote: bool,
    /// Honour forwarded headers only from this peer: `loopback` or an IP address.
    #[arg(long)]
    trust_proxy: Option<String>,
    /// Name of the forwarded-scheme header (default X-Forwarded-Proto).
    #[arg(long)]
    forwarded_proto_header: Option<String>,
    /// Name of the forwarded-host header (default X-Forwarded-Host).
    #[arg(long)]
    forwarded_host_header: Option<String>,
    /// Tests only: ticket lifetime in milliseconds.
    #[arg(long, hide = true)]
    web_ticket_ttl_ms: Option<u64>,
    /// Tests only: enrollment code lifetime in milliseconds.
    #[arg(long, hide = true)]
    web_code_ttl_ms: Option<u64>,
    /// Tests only: WebSocket ping interval in milliseconds.
    #[arg(long, hide = true)]
    web_ping_ms: Option<u64>,
}

impl WebFlags {
    /// The startup check of docs/protocol.md §4.1.2.
    pub fn into_config(self) -> Result<WebConfig, WebError> {
        let d = WebOptions::default();
        WebOptions {
            port: self.port.unwrap_or(shard_web::DEFAULT_PORT),
            port_retries: if self.port.is_some() {
                0
            } else {
                shard_web::PORT_RETRIES
            },
            web_host: self.web_host,
            public_host: self.public_host,
            allowed_origins: self.allowed_origins,
            allow_insecure_remote: self.allow_insecure_remote,
            trust_proxy: self.trust_proxy,
            forwarded_proto_header: self.forwarded_proto_header,
            forwarded_host_header: self.forwarded_host_header,
            ticket_ttl: self
                .web_ticket_ttl_ms
                .map_or(d.ticket_ttl, Duration::from_millis),
            code_ttl: self
                .web_code_ttl_ms
                .map_or(d.code_ttl, Duration::from_millis),
            ping_interval: self
                .web_ping_ms
                .map_or(d.ping_interval, |ms| Duration::from_millis(ms.max(10))),
        }
        .validate()
    }
}

/// Arguments of `shard web`.
#[derive(Args)]
pub struct WebArgs {
    /// Also open the link with the desktop's opener.
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    open: bool,
    /// List enrolled browsers: principal id, enrolled, last seen.
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
    /// Revoke one browser now (its open WebSockets close).
    #[arg(long, value_name = "ID")]
    revoke: Option<String>,
}

/// Runs `shard web`.
pub fn web(args: WebArgs) -> ExitCode {
    common::init_logging();
    let home = match common::shard_home() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("shard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rt = match common::tokio_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("shard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let req = match (&args.revoke, args.list) {
        (Some(id), _) => AdminRequest::Revoke { id: id.clone() },
        (None, true) => AdminRequest::List,
        (None, false) => AdminRequest::Enroll,
    };
    let reply = match rt.block_on(shard_web::admin::request(&home, &req)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("shard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    match reply {
        AdminReply::Enroll { url } => {
            let _ = writeln!(out, "{url}");
            let _ = out.flush();
            if args.open {
                return open(&url);
            }
        }
        AdminReply::List { principals } => {
            for p in principals {
                let _ = writeln!(
                    out,
                    "{} {} {}",
                    p.id,
                    iso_utc(p.created_ms),
                    iso_utc(p.last_seen_ms)
                );
            }
        }
        AdminReply::Revoked => {
            let _ = writeln!(out, "revoked {}", args.revoke.unwrap_or_default());
        }
        AdminReply::Error { message } => {
            eprintln!("shard: {message}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Opens a URL with the desktop's opener, without waiting for the browser.
fn open(url: &str) -> ExitCode {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shard: cannot run {opener} ({e}); open the link above by hand");
            ExitCode::FAILURE
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix milliseconds (civil-from-days, proleptic Gregorian).
fn iso_utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_dates() {
        assert_eq!(super::iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::iso_utc(1_709_210_096_000), "2024-02-29T12:34:56Z");
    }
}
