//! The web door's settings and the startup check of docs/protocol.md §4.1.2: the daemon never
//! silently degrades into an unsafe remote configuration, so every unsafe or incomplete
//! combination of flags is refused with one line naming the missing flag.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::error::WebError;

/// The default HTTP port of `shard daemon`.
pub const DEFAULT_PORT: u16 = 7420;

/// How many ports after [`DEFAULT_PORT`] are tried when it is taken (Jupyter's
/// `port_retries`): another daemon for another `SHARD_HOME`, or any program, may hold it.
pub const PORT_RETRIES: u16 = 50;

/// The flags as the user gave them (unchecked).
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// `--port` (0 picks a free port).
    pub port: u16,
    /// How many following ports to try when `port` is taken: [`PORT_RETRIES`] for the
    /// default port, 0 for one chosen explicitly (a taken explicit port is an error).
    pub port_retries: u16,
    /// `--web-host`: the address to bind (default 127.0.0.1).
    pub web_host: Option<IpAddr>,
    /// `--public-host HOST:PORT`: the Host browsers use in remote mode.
    pub public_host: Option<String>,
    /// `--allowed-origin` (repeatable): exact serialized origins allowed in remote mode.
    pub allowed_origins: Vec<String>,
    /// `--allow-insecure-remote`: consent to plaintext HTTP beyond loopback.
    pub allow_insecure_remote: bool,
    /// `--trust-proxy loopback|IP`: the one peer whose forwarded headers are honoured.
    pub trust_proxy: Option<String>,
    /// `--forwarded-proto-header` (default `X-Forwarded-Proto`).
    pub forwarded_proto_header: Option<String>,
    /// `--forwarded-host-header` (default `X-Forwarded-Host`).
    pub forwarded_host_header: Option<String>,
    /// How long a WebSocket ticket lives (30 s; shorter only in tests).
    pub ticket_ttl: Duration,
    /// How long an enrollment code lives (5 min; shorter only in tests).
    pub code_ttl: Duration,
    /// How often the server pings each WebSocket (30 s; a client that misses a whole
    /// interval without a pong is dropped).
    pub ping_interval: Duration,
}

impl Default for WebOptions {
    fn default() -> Self {
        WebOptions {
            port: DEFAULT_PORT,
            port_retries: 0,
            web_host: None,
            public_host: None,
            allowed_origins: Vec::new(),
            allow_insecure_remote: false,
            trust_proxy: None,
            forwarded_proto_header: None,
            forwarded_host_header: None,
            ticket_ttl: Duration::from_secs(30),
            code_ttl: Duration::from_secs(300),
            ping_interval: Duration::from_secs(30),
        }
    }
}

/// The peer whose forwarded headers are honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// `127.0.0.1` or `::1`.
    Loopback,
    /// Exactly this address.
    Ip(IpAddr),
}

impl Upstream {
    /// True when `peer` is this upstream.
    pub fn matches(&self, peer: IpAddr) -> bool {
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        match self {
            Upstream::Loopback => {
                peer == IpAddr::V4(Ipv4Addr::LOCALHOST)
                    || peer == IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
            }
            Upstream::Ip(ip) => *ip == peer,
        }
    }
}

/// Which of the three configurations of docs/protocol.md §4.1.2 runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `127.0.0.1`, plaintext, no forwarded header honoured.
    Loopback,
    /// A non-loopback bind, plaintext, no proxy.
    Direct,
    /// Behind a trusted reverse proxy.
    Proxy(Upstream),
}

/// Checked settings.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where to bind.
    pub bind: IpAddr,
    /// The requested port (0: any).
    pub port: u16,
    /// Following ports tried when `port` is taken (0 in remote mode, where
    /// `--public-host` pins the port).
    pub port_retries: u16,
    /// The configuration.
    pub mode: Mode,
    /// The pinned Host in remote mode.
    pub public_host: Option<String>,
    /// Allowed origins in remote mode (loopback mode derives its one origin from the port).
    pub allowed_origins: Vec<String>,
    /// Plaintext remote operation was consented to.
    pub allow_insecure_remote: bool,
    /// Forwarded scheme header (lowercase).
    pub proto_header: String,
    /// Forwarded host header (lowercase).
    pub host_header: String,
    /// Ticket lifetime.
    pub ticket_ttl: Duration,
    /// Enrollment code lifetime.
    pub code_ttl: Duration,
    /// Server ping interval.
    pub ping_interval: Duration,
}

impl WebConfig {
    /// True in either remote configuration.
    pub fn remote(&self) -> bool {
        self.mode != Mode::Loopback
    }

    /// The one-line plaintext-cookie warning owed at startup when consent was given.
    pub fn warning(&self) -> Option<String> {
        (self.remote() && self.allow_insecure_remote).then(|| {
            "warning: --allow-insecure-remote: the session cookie travels in plaintext and can be intercepted; use it only on a trusted network, VPN or SSH tunnel".to_string()
        })
    }
}

fn cfg_err(msg: impl Into<String>) -> WebError {
    WebError::Config(msg.into())
}

impl WebOptions {
    /// The startup check. Every refusal names the flag to add or remove.
    pub fn validate(self) -> Result<WebConfig, WebError> {
        let upstream = match self.trust_proxy.as_deref() {
            None => None,
            Some("loopback") => Some(Upstream::Loopback),
            Some(s) => Some(Upstream::Ip(s.parse().map_err(|_| {
                cfg_err(format!(
                    "--trust-proxy takes `loopback` or an IP address, not {s:?}"
                ))
            })?)),
        };
        let bind = self.web_host.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let non_loopback = !bind.is_loopback();
        if !non_loopback && bind != IpAddr::V4(Ipv4Addr::LOCALHOST) {
            return Err(cfg_err(format!(
                "--web-host {bind}: the only loopback address served is 127.0.0.1"
            )));
        }
        let mode = match (&upstream, non_loopback) {
            (Some(u), _) => Mode::Proxy(u.clone()),
            (None, true) => Mode::Direct,
            (None, false) => Mode::Loopback,
        };
        if mode == Mode::Loopback {
            for (given, flag) in [
                (self.public_host.is_some(), "--public-host"),
                (!self.allowed_origins.is_empty(), "--allowed-origin"),
                (self.allow_insecure_remote, "--allow-insecure-remote"),
                (
                    self.forwarded_proto_header.is_some(),
                    "--forwarded-proto-header",
                ),
                (
                    self.forwarded_host_header.is_some(),
                    "--forwarded-host-header",
                ),
            ] {
                if given {
                    return Err(cfg_err(format!(
                        "{flag} applies only in remote mode: add --web-host <non-loopback IP> or --trust-proxy <upstream>"
                    )));
                }
            }
        } else {
            if mode == Mode::Direct
                && (self.forwarded_proto_header.is_some() || self.forwarded_host_header.is_some())
            {
                return Err(cfg_err(
                    "forwarded-header names apply only with --trust-proxy <upstream>",
                ));
            }
            let Some(host) = &self.public_host else {
                return Err(cfg_err(
                    "remote mode needs --public-host HOST:PORT (the exact Host browsers send)",
                ));
            };
            check_public_host(host)?;
            if self.allowed_origins.is_empty() {
                return Err(cfg_err(
                    "remote mode needs --allowed-origin ORIGIN (e.g. https://shard.example.com)",
                ));
            }
            if mode == Mode::Direct && !self.allow_insecure_remote {
                return Err(cfg_err(format!(
                    "--web-host {bind} serves plaintext HTTP beyond this machine: add --allow-insecure-remote to accept that the session cookie can be intercepted"
                )));
            }
        }
        let mut origins = Vec::new();
        for o in &self.allowed_origins {
            let o = check_origin(o)?;
            if o.starts_with("http://") && !self.allow_insecure_remote {
                return Err(cfg_err(format!(
                    "--allowed-origin {o} is plaintext: add --allow-insecure-remote (or serve https)"
                )));
            }
            if mode == Mode::Direct && o.starts_with("https://") {
                return Err(cfg_err(format!(
                    "--allowed-origin {o}: a direct bind serves only http; put a TLS proxy in front with --trust-proxy"
                )));
            }
            origins.push(o);
        }
        let port_retries = if mode == Mode::Loopback && self.port != 0 {
            self.port_retries
        } else {
            0
        };
        Ok(WebConfig {
            bind,
            port: self.port,
            port_retries,
            mode,
            public_host: self.public_host,
            allowed_origins: origins,
            allow_insecure_remote: self.allow_insecure_remote,
            proto_header: header_name(self.forwarded_proto_header, "x-forwarded-proto")?,
            host_header: header_name(self.forwarded_host_header, "x-forwarded-host")?,
            ticket_ttl: self.ticket_ttl,
            code_ttl: self.code_ttl,
            ping_interval: self.ping_interval,
        })
    }
}

fn header_name(given: Option<String>, default: &str) -> Result<String, WebError> {
    let name = given
        .unwrap_or_else(|| default.to_string())
        .to_ascii_lowercase();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(cfg_err(format!("{name:?} is not a header name")));
    }
    Ok(name)
}

fn check_public_host(host: &str) -> Result<(), WebError> {
    let bad = || {
        cfg_err(format!(
            "--public-host {host:?}: give HOST:PORT exactly as browsers send it in Host (port included)"
        ))
    };
    let (name, port) = host.rsplit_once(':').ok_or_else(bad)?;
    // Browsers send Host in lowercase and it is compared exactly: a capital never matches.
    if name.is_empty()
        || name != name.to_ascii_lowercase()
        || port.parse::<u16>().is_err()
        || host
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b == b'/' || b == b'@')
    {
        return Err(bad());
    }
    Ok(())
}

/// An origin as browsers serialize it: lowercase `http(s)://host[:port]`, no path, no
/// default port. Anything else could never match and is refused at startup.
fn check_origin(o: &str) -> Result<String, WebError> {
    let bad = |why: &str| cfg_err(format!("--allowed-origin {o:?}: {why}"));
    let (scheme, rest) = o
        .split_once("://")
        .ok_or_else(|| bad("write scheme://host[:port]"))?;
    let default_port = match scheme {
        "http" => "80",
        "https" => "443",
        _ => return Err(bad("the scheme must be http or https, in lowercase")),
    };
    if rest.is_empty()
        || rest.contains(['/', '?', '#', '@'])
        || rest.bytes().any(|b| b.is_ascii_whitespace())
    {
        return Err(bad(
            "an origin has no path, query or user (no trailing slash)",
        ));
    }
    if rest != rest.to_ascii_lowercase() {
        return Err(bad("browsers send the host in lowercase"));
    }
    if let Some((_, port)) = rest.rsplit_once(':')
        && !rest.ends_with(']')
    {
        if port.parse::<u16>().is_err() {
            return Err(bad("the port is not a number"));
        }
        if port == default_port {
            return Err(bad("browsers omit the default port; remove it"));
        }
    }
    Ok(o.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(f: impl FnOnce(&mut WebOptions)) -> Result<WebConfig, String> {
        let mut o = WebOptions::default();
        f(&mut o);
        o.validate().map_err(|e| e.to_string())
    }

    #[test]
    fn loopback_is_the_default_and_refuses_remote_flags() {
        assert_eq!(opts(|_| {}).unwrap().mode, Mode::Loopback);
        let e = opts(|o| o.allow_insecure_remote = true).unwrap_err();
        assert!(
            e.contains("--allow-insecure-remote applies only in remote mode"),
            "{e}"
        );
        let e = opts(|o| o.public_host = Some("a:1".into())).unwrap_err();
        assert!(e.contains("--public-host"), "{e}");
        let e = opts(|o| o.web_host = Some("::1".parse().unwrap())).unwrap_err();
        assert!(e.contains("127.0.0.1"), "{e}");
    }

    #[test]
    fn direct_needs_every_flag() {
        let ip = Some("192.0.2.7".parse().unwrap());
        let e = opts(|o| o.web_host = ip).unwrap_err();
        assert!(e.contains("--public-host"), "{e}");
        let e = opts(|o| {
            o.web_host = ip;
            o.public_host = Some("192.0.2.7:7420".into());
        })
        .unwrap_err();
        assert!(e.contains("--allowed-origin"), "{e}");
        let e = opts(|o| {
            o.web_host = ip;
            o.public_host = Some("192.0.2.7:7420".into());
            o.allowed_origins = vec!["http://192.0.2.7:7420".into()];
        })
        .unwrap_err();
        assert!(e.contains("--allow-insecure-remote"), "{e}");
        let c = opts(|o| {
            o.web_host = ip;
            o.public_host = Some("192.0.2.7:7420".into());
            o.allowed_origins = vec!["http://192.0.2.7:7420".into()];
            o.allow_insecure_remote = true;
        })
        .unwrap();
        assert_eq!(c.mode, Mode::Direct);
        assert!(c.warning().is_some());
    }

    #[test]
    fn proxy_needs_host_and_origin_and_consent_only_for_http() {
        let e = opts(|o| o.trust_proxy = Some("loopback".into())).unwrap_err();
        assert!(e.contains("--public-host"), "{e}");
        let c = opts(|o| {
            o.trust_proxy = Some("loopback".into());
            o.public_host = Some("shard.example:443".into());
            o.allowed_origins = vec!["https://shard.example".into()];
        })
        .unwrap();
        assert_eq!(c.mode, Mode::Proxy(Upstream::Loopback));
        assert!(c.warning().is_none());
        let e = opts(|o| {
            o.trust_proxy = Some("loopback".into());
            o.public_host = Some("shard.example:80".into());
            o.allowed_origins = vec!["http://shard.example".into()];
        })
        .unwrap_err();
        assert!(e.contains("--allow-insecure-remote"), "{e}");
        let e = opts(|o| o.trust_proxy = Some("proxy.example".into())).unwrap_err();
        assert!(e.contains("--trust-proxy"), "{e}");
    }

    #[test]
    fn a_public_host_with_capitals_is_refused() {
        let e = opts(|o| {
            o.trust_proxy = Some("loopback".into());
            o.public_host = Some("Shard.example:443".into());
            o.allowed_origins = vec!["https://shard.example".into()];
        })
        .unwrap_err();
        assert!(e.contains("--public-host"), "{e}");
    }

    #[test]
    fn origins_must_be_serialized_like_browsers_do() {
        for bad in [
            "https://shard.example/",
            "https://shard.example:443",
            "HTTPS://shard.example",
            "https://Shard.example",
            "ftp://x",
            "shard.example",
        ] {
            let e = opts(|o| {
                o.trust_proxy = Some("loopback".into());
                o.public_host = Some("shard.example:443".into());
                o.allowed_origins = vec![bad.into()];
            })
            .unwrap_err();
            assert!(e.contains("--allowed-origin"), "{bad}: {e}");
        }
    }

    #[test]
    fn upstream_matching_is_exact() {
        assert!(Upstream::Loopback.matches("127.0.0.1".parse().unwrap()));
        assert!(Upstream::Loopback.matches("::1".parse().unwrap()));
        assert!(!Upstream::Loopback.matches("127.0.0.2".parse().unwrap()));
        let ip = Upstream::Ip("10.0.0.5".parse().unwrap());
        assert!(ip.matches("::ffff:10.0.0.5".parse().unwrap()));
        assert!(!ip.matches("10.0.0.6".parse().unwrap()));
    }
}
