//! The HTTP client of a provider: built off the start path, with the system's root
//! certificates only when the provider's base URL can need them.

use std::time::Duration;

use crate::provider::ProviderError;

/// Makes rustls's `ring` provider the process default, which reqwest (built without a
/// provider of its own) requires before a client is built. Installing it twice is
/// harmless: the first one stays.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The HTTP client, built on a thread of its own. Building it loads and parses the
/// system's root certificates (a few hundred files under /etc/ssl/certs), which took
/// the largest share of a Runtime's start before its first request; off the start path,
/// that work overlaps the session's opening and the first call waits only for what is
/// left of it. A provider whose base URL is plain `http://` (a local model, a test server)
/// gets a client without any root certificate instead ([`Tls::None`]).
#[derive(Debug, Clone)]
pub(crate) struct ClientSlot {
    built: tokio::sync::watch::Receiver<Option<Result<reqwest::Client, String>>>,
}

impl ClientSlot {
    /// Starts building the client on its own thread. If no thread can be started, the
    /// sender is dropped unused and the first call fails with a configuration error.
    pub(crate) fn build(connect_timeout: Duration, tls: Tls) -> ClientSlot {
        let (tx, built) = tokio::sync::watch::channel(None);
        let spawned = std::thread::Builder::new()
            .name("shard-http-client".into())
            .spawn(move || {
                install_tls_provider();
                let builder = reqwest::Client::builder()
                    .connect_timeout(connect_timeout)
                    .user_agent(concat!("shard/", env!("CARGO_PKG_VERSION")));
                let builder = match tls {
                    Tls::Verified => builder,
                    Tls::None => plain_http(builder),
                };
                let client = builder
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"));
                tx.send_replace(Some(client));
            });
        if let Err(err) = spawned {
            tracing::warn!(%err, "cannot start the thread that builds the HTTP client");
        }
        ClientSlot { built }
    }

    /// The client, once built.
    pub(crate) async fn get(&self) -> Result<reqwest::Client, ProviderError> {
        let mut built = self.built.clone();
        let ready = built.wait_for(Option::is_some).await;
        match ready.as_deref().map(|r| r.as_ref()) {
            Ok(Some(Ok(client))) => Ok(client.clone()),
            Ok(Some(Err(e))) => Err(ProviderError::Config(e.clone())),
            Ok(None) | Err(_) => Err(ProviderError::Config(
                "the HTTP client could not be built (no thread could be started)".to_string(),
            )),
        }
    }
}

/// Which TLS set-up a provider's client needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tls {
    /// The system's root certificates (rustls-platform-verifier): every `https://` base
    /// URL, and anything that is not plainly `http://`.
    Verified,
    /// No root certificate at all: for a plain `http://` base URL, whose calls never
    /// handshake. Such a client can never complete an `https://` connection (an empty root
    /// store trusts nobody), and it refuses to follow a redirect to one with an error that
    /// says why, rather than failing on an unknown issuer.
    None,
}

impl Tls {
    /// The set-up `base_url` needs: [`Tls::None`] only for a plain `http://` URL.
    pub(crate) fn for_base_url(base_url: &str) -> Tls {
        let plain = base_url
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
        if plain { Tls::None } else { Tls::Verified }
    }
}

/// A client for plain `http://` only: an empty root store (no certificate files read or
/// parsed at start) and a redirect policy that stops at any other scheme.
fn plain_http(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
        .tls_certs_only(std::iter::empty())
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.url().scheme() != "http" {
                let to = attempt.url().to_string();
                attempt.error(format!(
                    "the provider's http:// base_url redirected to {to}; set base_url to the \
                     https:// address instead"
                ))
            } else if attempt.previous().len() >= 10 {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn only_a_plain_http_base_url_goes_without_roots() {
        assert_eq!(Tls::for_base_url("http://127.0.0.1:8080"), Tls::None);
        assert_eq!(Tls::for_base_url("HTTP://localhost:11434/v1"), Tls::None);
        for verified in [
            "https://api.anthropic.com",
            "HTTPS://openrouter.ai/api/v1",
            "http:/oops",
            "httpx://x",
            "",
            "localhost:11434",
        ] {
            assert_eq!(Tls::for_base_url(verified), Tls::Verified, "{verified}");
        }
    }

    /// A plain-http server that answers every request with a redirect to `https://`.
    fn redirecting_server() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 307 Temporary Redirect\r\nlocation: https://127.0.0.1:9/v1\r\n\
                      content-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn a_client_without_roots_never_follows_a_redirect_to_https() {
        let url = redirecting_server();
        let client = ClientSlot::build(Duration::from_secs(5), Tls::None)
            .get()
            .await
            .unwrap();
        let err = client
            .post(format!("{url}/v1/messages"))
            .send()
            .await
            .unwrap_err();
        let text = format!("{err:?}");
        assert!(
            text.contains("redirected to https://127.0.0.1:9/v1"),
            "{text}"
        );
        // The same client still serves plain http: the redirect's answer came back.
        assert!(err.is_redirect(), "{text}");
    }
}
