//! Retries, errors, timeouts, cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use shard_ai::{
    AiConfig, ApiError, ErrorKind, Provider, ProviderConfig, ProviderError, StreamEvent,
    build_provider,
};
use tokio_util::sync::CancellationToken;

use std::net::SocketAddr;

use crate::support::*;

// ---------------------------------------------------------------- failures

#[tokio::test]
async fn retries_429_and_529_honouring_retry_after() {
    let mock = serve(vec![
        Reply::status(
            429,
            vec![("retry-after-ms", "10".into())],
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ),
        Reply::status(
            529,
            vec![("retry-after", "0".into())],
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    ])
    .await;
    let f = collect(&provider("anthropic", &mock), simple_request("m")).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(f.text(0), "Hello there!");
    assert_eq!(mock.count(), 3);
    assert_eq!(f.retries.len(), 2);
    assert_eq!((f.retries[0].0, f.retries[0].1), (1, 10));
    assert!(
        f.retries[0].2.contains("429") && f.retries[0].2.contains("slow down"),
        "{}",
        f.retries[0].2
    );
    assert_eq!((f.retries[1].0, f.retries[1].1), (2, 0));
    assert!(f.retries[1].2.contains("529"));
    // Retrying comes before any content.
    assert!(matches!(f.events[0], StreamEvent::Retrying { .. }));
    // Every attempt sent the same body.
    assert_eq!(mock.body(0), mock.body(2));
}

#[tokio::test]
async fn real_429_capture_is_retried_and_exhaustion_is_an_http_error() {
    let capture: Value = serde_json::from_slice(&fixture(
        "anthropic/sdk-python-cassettes/stream_request_429_rate_limit.json",
    ))
    .unwrap();
    let body = capture["body"].to_string();
    let reply = || {
        Reply::status(
            429,
            vec![
                ("x-should-retry", "true".into()),
                ("content-type", "application/json".into()),
            ],
            &body,
        )
    };
    let mock = serve(vec![reply(), reply(), reply()]).await;
    let p = provider_with("anthropic", &mock, |c| c.max_retries = Some(2));
    let f = collect(&p, simple_request("m")).await;
    assert_eq!(mock.count(), 3);
    assert_eq!(f.retries.len(), 2);
    match f.error {
        Some(ProviderError::Api(ApiError {
            kind: ErrorKind::RateLimited { .. },
            status: Some(429),
            message,
        })) => {
            assert!(
                message.contains("rate_limit_error") && message.contains("3 attempts"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn non_retryable_status_fails_at_once() {
    let mock = serve(vec![Reply::status(
        400,
        vec![],
        r#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#,
    )])
    .await;
    let f = collect(&provider("openai", &mock), simple_request("m")).await;
    assert_eq!(mock.count(), 1);
    assert!(
        matches!(f.error, Some(ProviderError::Api(ref e)) if e.kind == ErrorKind::InvalidRequest
            && e.status == Some(400) && e.message.contains("bad model")),
        "{:?}",
        f.error
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_hides_the_key() {
    for name in ["anthropic", "openai", "openai-responses"] {
        let body = format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","type":"invalid_request_error"}}}}"#
        );
        let mock = serve(vec![
            Reply::status(401, vec![], &body),
            Reply::status(401, vec![], &body),
        ])
        .await;
        let p = provider(name, &mock);
        let f = collect(&p, simple_request("m")).await;
        assert_eq!(mock.count(), 1, "{name}: 401 must not be retried");
        let err = f.error.unwrap();
        assert!(
            matches!(
                err,
                ProviderError::Api(ApiError {
                    kind: ErrorKind::Auth,
                    status: Some(401),
                    ..
                })
            ),
            "{name}: {err:?}"
        );
        let text = format!("{err} {err:?}");
        assert!(!text.contains(KEY), "{name}: key leaked: {text}");
        assert!(text.contains("API_KEY"), "{name}: {text}");
        let direct = shard_ai::AnthropicProvider::new(shard_ai::ProviderSettings::new(
            "anthropic",
            "http://x",
            shard_ai::ApiKey::new(KEY),
            "ANTHROPIC_API_KEY",
        ))
        .unwrap();
        assert!(!format!("{direct:?}").contains(KEY));
    }
}

#[tokio::test]
async fn overloaded_error_event_before_any_delta_is_retried() {
    let overloaded = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let mock = serve(vec![
        Reply::sse(overloaded),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    ])
    .await;
    let f = collect(&provider("anthropic", &mock), simple_request("m")).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(mock.count(), 2);
    assert_eq!(f.retries.len(), 1);
    assert!(f.retries[0].2.contains("overloaded_error"));
    assert_eq!(f.text(0), "Hello there!");
}

#[tokio::test]
async fn error_event_after_a_delta_is_an_error_not_a_retry() {
    let body = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let mock = serve(vec![
        Reply::sse(body),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    ])
    .await;
    let f = collect(&provider("anthropic", &mock), simple_request("m")).await;
    assert_eq!(mock.count(), 1, "no retry once a delta was yielded");
    assert_eq!(f.text(0), "Par");
    assert!(f.retries.is_empty());
    assert!(
        matches!(f.error, Some(ProviderError::Api(ref e)) if e.kind == ErrorKind::Overloaded
            && e.message.contains("overloaded_error")),
        "{:?}",
        f.error
    );
}

/// A raw HTTP/1.1 server: each connection gets the next byte string verbatim, then the
/// socket is closed. Lets a test cut a chunked body in the middle deterministically.
async fn raw_server(responses: Vec<Vec<u8>>) -> (SocketAddr, Arc<Mutex<usize>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(Mutex::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        for response in responses {
            let (mut sock, _) = listener.accept().await.unwrap();
            // Read the whole request (headers, then content-length bytes).
            let mut buf = Vec::new();
            let mut tmp = [0u8; 4096];
            loop {
                let n = sock.read(&mut tmp).await.unwrap();
                buf.extend_from_slice(&tmp[..n]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map(|v| v.trim().parse().unwrap())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break;
                    }
                }
                assert!(n > 0, "client closed early");
            }
            *seen.lock().unwrap() += 1;
            sock.write_all(&response).await.unwrap();
            sock.flush().await.unwrap();
            drop(sock);
        }
    });
    (addr, count)
}

fn chunked_head(body: &[u8]) -> Vec<u8> {
    let mut out =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
    // No terminating zero-length chunk: the connection just ends.
    out
}

fn complete_response(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn raw_provider(addr: SocketAddr) -> Arc<dyn Provider> {
    let mut config = AiConfig::default();
    config.providers.insert(
        "openai".into(),
        ProviderConfig {
            base_url: Some(format!("http://{addr}/v1")),
            retry_base_ms: Some(1),
            ..ProviderConfig::default()
        },
    );
    build_provider("openai", &config, &|_| Some(KEY.to_string())).unwrap()
}

#[tokio::test]
async fn dropped_connection_mid_stream() {
    let full = fixture("openai-chat/text.sse");
    // After content reached the consumer: an error, no retry.
    let cut = full[..full.len() / 2].to_vec();
    let (addr, count) = raw_server(vec![chunked_head(&cut), complete_response(&full)]).await;
    let f = collect(&raw_provider(addr), simple_request("m")).await;
    assert_eq!(*count.lock().unwrap(), 1);
    assert!(f.text(0).starts_with("I'm unable"));
    assert!(
        matches!(f.error, Some(ProviderError::Api(ref e)) if e.kind == ErrorKind::Network
            && e.message.contains("broke")),
        "{:?}",
        f.error
    );

    // Before any content: retried transparently.
    let head = b"data: {\"choices\":[],\"usage\":null}\n\n".to_vec();
    let (addr, count) = raw_server(vec![chunked_head(&head), complete_response(&full)]).await;
    let f = collect(&raw_provider(addr), simple_request("m")).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(*count.lock().unwrap(), 2);
    assert_eq!(f.retries.len(), 1);
    assert!(f.text(0).starts_with("I'm unable"));
}

#[tokio::test]
async fn truncated_stream_without_completion_is_retried_then_fails() {
    let head =
        b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n"
            .to_vec();
    let mock = serve(vec![Reply::sse(head.clone()), Reply::sse(head)]).await;
    let p = provider_with("openai-responses", &mock, |c| c.max_retries = Some(1));
    let f = collect(&p, simple_request("m")).await;
    assert_eq!(mock.count(), 2);
    assert!(
        matches!(f.error, Some(ProviderError::Api(ref e)) if e.kind == ErrorKind::Network
            && e.message.contains("response.completed")),
        "{:?}",
        f.error
    );
}

#[tokio::test]
async fn invalid_json_chunk_is_a_stream_error() {
    let body =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\n";
    let mock = serve(vec![Reply::sse(body)]).await;
    let f = collect(&provider("openai", &mock), simple_request("m")).await;
    assert_eq!(f.text(0), "ok");
    assert!(
        matches!(f.error, Some(ProviderError::Api(ref e)) if e.kind == ErrorKind::Server
            && e.message.contains("invalid JSON")),
        "{:?}",
        f.error
    );
    assert_eq!(mock.count(), 1);
}

#[tokio::test]
async fn idle_timeout_ends_a_silent_stream() {
    let (tx, _rx) = tokio::sync::oneshot::channel();
    let head = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n".to_vec();
    let mock = serve(vec![Reply {
        end: End::Hang(tx),
        ..Reply::sse(head)
    }])
    .await;
    let p = provider_with("openai", &mock, |c| c.idle_timeout_secs = Some(0.3));
    let f = collect(&p, simple_request("m")).await;
    assert_eq!(f.text(0), "ok");
    assert!(
        matches!(f.error, Some(ProviderError::Api(ref e)) if e.kind == ErrorKind::Network
            && e.message.contains("no data")),
        "{:?}",
        f.error
    );
}

#[tokio::test]
async fn cancel_drops_the_connection() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let head = fixture("anthropic/sdk-python/basic_response.txt")[..300].to_vec();
    let mock = serve(vec![Reply {
        end: End::Hang(tx),
        ..Reply::sse(head)
    }])
    .await;
    let p = provider("anthropic", &mock);
    let cancel = CancellationToken::new();
    let mut stream = p.stream(simple_request("m"), cancel.clone());
    // Wait until the response is flowing, then abort.
    let deadline = tokio::time::Instant::now() + WAIT;
    while mock.count() == 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    // The server sees the connection go away, even before anyone polls the stream.
    assert!(
        tokio::time::timeout(WAIT, rx)
            .await
            .expect("connection kept open")
            .is_err()
    );
    let mut saw_cancelled = false;
    while let Some(item) = tokio::time::timeout(WAIT, stream.next()).await.unwrap() {
        if let Err(e) = item {
            assert_eq!(e, ProviderError::Cancelled);
            saw_cancelled = true;
        }
    }
    assert!(saw_cancelled);
}

#[tokio::test]
async fn dropping_the_stream_drops_the_connection() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let head = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n".to_vec();
    let mock = serve(vec![Reply {
        end: End::Hang(tx),
        ..Reply::sse(head)
    }])
    .await;
    let p = provider("openai", &mock);
    let mut stream = p.stream(simple_request("m"), CancellationToken::new());
    let first = tokio::time::timeout(WAIT, stream.next()).await.unwrap();
    assert!(
        matches!(first, Some(Ok(StreamEvent::TextDelta { .. }))),
        "{first:?}"
    );
    drop(stream);
    assert!(
        tokio::time::timeout(WAIT, rx)
            .await
            .expect("connection kept open")
            .is_err()
    );
}
