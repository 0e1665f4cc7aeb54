//! Typed provider errors: each failure keeps its kind, HTTP status and the provider's
//! message, and maps to one protocol error code. Context overflow is recognised for all
//! three APIs from the documented error bodies in `tests/fixtures/llm/errors/`.

use shard_ai::{ApiError, ErrorKind, ProviderError};
use shard_protocol::ProviderErrorKind;

use crate::support::*;

fn body(name: &str) -> String {
    String::from_utf8(fixture(&format!("errors/{name}"))).unwrap()
}

/// The provider's error for one call answered `status` with `body`; asserts no retry.
async fn failure(provider_name: &str, status: u16, body: &str) -> ApiError {
    let mock = serve(vec![
        Reply::status(
            status,
            vec![("content-type", "application/json".into())],
            body,
        ),
        Reply::status(status, vec![], body),
    ])
    .await;
    let f = collect(&provider(provider_name, &mock), simple_request("m")).await;
    assert_eq!(
        mock.count(),
        1,
        "{provider_name}: {status} must not be retried"
    );
    match f.error {
        Some(ProviderError::Api(e)) => e,
        other => panic!("{provider_name}: {other:?}"),
    }
}

#[tokio::test]
async fn context_overflow_is_recognised_for_all_three_apis() {
    for (provider_name, file, says) in [
        (
            "anthropic",
            "anthropic_prompt_too_long.json",
            "prompt is too long",
        ),
        (
            "anthropic",
            "anthropic_exceed_context_limit.json",
            "exceed context limit",
        ),
        (
            "openai",
            "openai_chat_context_length_exceeded.json",
            "maximum context length",
        ),
        (
            "openai-responses",
            "openai_responses_context_length_exceeded.json",
            "exceeds the context window",
        ),
    ] {
        let e = failure(provider_name, 400, &body(file)).await;
        assert_eq!(e.kind, ErrorKind::ContextWindowExceeded, "{file}: {e:?}");
        assert_eq!(e.status, Some(400), "{file}");
        assert!(e.message.contains(says), "{file}: {}", e.message);
        assert_eq!(e.kind.wire_kind(), ProviderErrorKind::ContextWindowExceeded);
        assert_eq!(e.kind.wire_kind().as_str(), "context_window_exceeded");
    }
}

#[tokio::test]
async fn context_overflow_inside_a_responses_stream() {
    let mock = serve(vec![Reply::sse(fixture(
        "errors/openai_responses_context_length_exceeded.sse",
    ))])
    .await;
    let f = collect(&provider("openai-responses", &mock), simple_request("m")).await;
    assert_eq!(mock.count(), 1, "an overflow is never retried");
    let err = f.error.unwrap();
    assert_eq!(
        err.kind(),
        Some(ErrorKind::ContextWindowExceeded),
        "{err:?}"
    );
    assert_eq!(
        err.wire_kind(),
        Some(ProviderErrorKind::ContextWindowExceeded)
    );
    assert!(err.to_string().contains("context_length_exceeded"), "{err}");
}

#[tokio::test]
async fn each_kind_keeps_status_and_message_and_maps_to_its_code() {
    let anthropic = |t: &str, m: &str| {
        format!(r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}}}}"#)
    };
    // Not retried: the kind and status come back as the provider sent them.
    let e = failure(
        "anthropic",
        404,
        &anthropic("not_found_error", "model: claude-nope"),
    )
    .await;
    assert_eq!((e.kind, e.status), (ErrorKind::InvalidRequest, Some(404)));
    assert!(e.message.contains("model: claude-nope"), "{}", e.message);
    assert_eq!(e.kind.wire_kind(), ProviderErrorKind::InvalidRequest);

    let e = failure(
        "anthropic",
        403,
        &anthropic("permission_error", "not allowed"),
    )
    .await;
    assert_eq!((e.kind, e.status), (ErrorKind::Auth, Some(403)));
    assert_eq!(e.kind.wire_kind(), ProviderErrorKind::Auth);

    // Retried, then reported with the kind of the last answer.
    let mock = serve(vec![
        Reply::status(529, vec![], &anthropic("overloaded_error", "Overloaded")),
        Reply::status(529, vec![], &anthropic("overloaded_error", "Overloaded")),
    ])
    .await;
    let p = provider_with("anthropic", &mock, |c| {
        c.max_retries = Some(1);
        c.retry_base_ms = Some(1);
    });
    let f = collect(&p, simple_request("m")).await;
    assert_eq!(mock.count(), 2);
    let err = f.error.unwrap();
    assert_eq!(err.kind(), Some(ErrorKind::Overloaded), "{err:?}");
    assert_eq!(err.wire_kind(), Some(ProviderErrorKind::Overloaded));

    let mock = serve(vec![
        Reply::status(
            429,
            vec![("retry-after-ms", "5".into())],
            &anthropic("rate_limit_error", "slow down"),
        ),
        Reply::status(
            429,
            vec![("retry-after-ms", "5".into())],
            &anthropic("rate_limit_error", "slow down"),
        ),
    ])
    .await;
    let p = provider_with("anthropic", &mock, |c| c.max_retries = Some(1));
    let f = collect(&p, simple_request("m")).await;
    assert_eq!(f.retries[0].1, 5, "the server's wait is honoured");
    match f.error.unwrap() {
        ProviderError::Api(ApiError {
            kind: ErrorKind::RateLimited { retry_after },
            status: Some(429),
            message,
        }) => {
            assert_eq!(retry_after, Some(std::time::Duration::from_millis(5)));
            assert!(message.contains("slow down"), "{message}");
        }
        other => panic!("{other:?}"),
    }

    let mock = serve(vec![
        Reply::status(500, vec![], "upstream exploded"),
        Reply::status(500, vec![], "upstream exploded"),
    ])
    .await;
    let p = provider_with("openai", &mock, |c| {
        c.max_retries = Some(1);
        c.retry_base_ms = Some(1);
    });
    let err = collect(&p, simple_request("m")).await.error.unwrap();
    assert_eq!(err.kind(), Some(ErrorKind::Server));
    assert_eq!(err.wire_kind(), Some(ProviderErrorKind::Server));
}

#[test]
fn every_kind_maps_to_a_distinct_registered_kind() {
    let kinds = [
        ErrorKind::Auth,
        ErrorKind::RateLimited { retry_after: None },
        ErrorKind::Overloaded,
        ErrorKind::ContextWindowExceeded,
        ErrorKind::InvalidRequest,
        ErrorKind::Network,
        ErrorKind::Server,
    ];
    let wire: Vec<ProviderErrorKind> = kinds.iter().map(ErrorKind::wire_kind).collect();
    for (i, (k, w)) in kinds.iter().zip(&wire).enumerate() {
        assert!(
            ProviderErrorKind::KNOWN.contains(w),
            "{w} is not registered"
        );
        assert!(!wire[..i].contains(w), "{w} used twice");
        assert_eq!(k.as_str(), w.as_str());
    }
    let limited = ErrorKind::RateLimited {
        retry_after: Some(std::time::Duration::from_millis(1500)),
    };
    assert_eq!(limited.retry_after_ms(), Some(1500));
    assert_eq!(ErrorKind::Overloaded.retry_after_ms(), None);
}
