//! HTTPS through rustls with the `ring` provider: the handshake reaches certificate
//! verification, and a certificate no system root vouches for is refused.

use std::sync::Arc;

use shard_ai::{ProviderConfig, ProviderError};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::support::*;

/// A TLS server for `localhost` whose certificate signs itself (a test key, committed as a
/// fixture): what a man in the middle without a trusted certificate presents.
async fn self_signed_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<bool>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{dir}/cert.pem"))
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/key.pem")).unwrap();
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // True when a handshake completed, which a verifying client never lets happen.
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        acceptor.accept(socket).await.is_ok()
    });
    (addr, server)
}

#[tokio::test]
async fn a_certificate_no_root_vouches_for_is_refused() {
    let (addr, server) = self_signed_server().await;
    let mut config = shard_ai::AiConfig::default();
    config.providers.insert(
        "anthropic".to_string(),
        ProviderConfig {
            base_url: Some(format!("https://localhost:{}", addr.port())),
            max_retries: Some(0),
            ..ProviderConfig::default()
        },
    );
    let env = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| KEY.to_string());
    let provider = shard_ai::build_provider("anthropic", &config, &env).unwrap();
    let f = collect(&provider, simple_request("m")).await;
    let message = match &f.error {
        Some(ProviderError::Api(e)) => e.message.clone(),
        other => panic!("expected a failed call, got {other:?}"),
    };
    assert!(
        message.contains("certificate") || message.contains("UnknownIssuer"),
        "{message}"
    );
    assert!(!server.await.unwrap(), "the handshake must not complete");
}
