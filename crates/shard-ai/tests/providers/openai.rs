//! OpenAI Chat Completions and Responses streams.

use serde_json::json;
use shard_ai::{ProviderError, StopReason, StreamEvent};

use crate::support::*;

// ---------------------------------------------------------------- OpenAI Chat streams

#[tokio::test]
async fn chat_text_usage_and_done() {
    let mock = serve(vec![Reply::sse(fixture("openai-chat/text.sse"))]).await;
    let f = collect(&provider("openai", &mock), simple_request("gpt-4o")).await;
    assert!(
        f.text(0)
            .starts_with("I'm unable to provide real-time weather updates.")
    );
    assert_eq!(f.usage, Some(usage(14, 30, None, None)));
    assert_eq!(f.stop, Some(StopReason::EndTurn));
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].headers["authorization"], format!("Bearer {KEY}"));
}

#[tokio::test]
async fn chat_parallel_tool_calls() {
    let f = replay("openai", "openai-chat/parallel_tool_calls.sse", "gpt-4o").await;
    assert_eq!(f.blocks.len(), 2);
    let (id, name, args) = f.tool(0);
    assert_eq!(
        (id, name),
        ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs")
    );
    assert_eq!(
        args,
        json!({"city": "Edinburgh", "country": "GB", "units": "c"})
    );
    let (id, name, args) = f.tool(1);
    assert_eq!(
        (id, name),
        ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price")
    );
    assert_eq!(args, json!({"ticker": "AAPL", "exchange": "NASDAQ"}));
    assert_eq!(f.stop, Some(StopReason::ToolUse));
    let f = replay("openai", "openai-chat/tool_call.sse", "gpt-4o").await;
    assert_eq!(
        f.tool(0).2,
        json!({"city": "Edinburgh", "country": "UK", "units": "c"})
    );
}

#[tokio::test]
async fn chat_quirks_usage_null_azure_refusal_length_and_choices() {
    let f = replay("openai", "openai-chat/text_obfuscation_usage_null.sse", "m").await;
    assert!(f.text(0).starts_with("**Holiday Name:** Harmony Day"));
    assert_eq!(f.usage, Some(usage(16, 300, Some(0), None)));
    assert_eq!(
        f.events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Usage(_)))
            .count(),
        1
    );

    let f = replay(
        "openai",
        "openai-chat/azure_content_filter_obfuscation.sse",
        "m",
    )
    .await;
    assert_eq!(f.text(0), "Capital of Denmark.");
    assert_eq!(f.usage, Some(usage(15, 78, Some(0), None)));

    let f = replay("openai", "openai-chat/refusal.sse", "m").await;
    assert_eq!(f.text(0), "I'm sorry, I can't assist with that request.");
    assert_eq!(f.stop, Some(StopReason::Refusal));

    let f = replay("openai", "openai-chat/max_tokens_length.sse", "m").await;
    assert_eq!(f.text(0), "{\"");
    assert_eq!(f.stop, Some(StopReason::MaxTokens));

    let f = replay("openai", "openai-chat/multiple_choices_n3.sse", "m").await;
    assert_eq!(
        f.text(0),
        "{\"city\":\"San Francisco\",\"temperature\":65,\"units\":\"f\"}"
    );
}

#[tokio::test]
async fn chat_compatible_server_quirks() {
    // A whole tool call in one chunk, a tool that never gets arguments, role repeated,
    // reasoning deltas, unknown keys, cached tokens, and no [DONE] at the end.
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think\"}}],\"x_extra\":1}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning\":\"ing\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Sure.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"ls\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":20,\"prompt_tokens_details\":{\"cached_tokens\":60}}}\n\n",
    );
    let mock = serve(vec![Reply::sse(body)]).await;
    let f = collect(&provider("openai", &mock), simple_request("qwen3")).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(
        f.blocks[&0],
        Block::Thinking {
            text: "thinking".into(),
            signature: None
        }
    );
    assert_eq!(f.text(1), "Sure.");
    assert_eq!(f.tool(2), ("c1", "read", json!({"path": "a"})));
    assert_eq!(f.tool(3), ("c2", "ls", json!({})));
    assert_eq!(f.stop, Some(StopReason::ToolUse));
    assert_eq!(f.usage, Some(usage(40, 20, Some(60), None)));
}

// ---------------------------------------------------------------- Responses streams

#[tokio::test]
async fn responses_text_and_function_call() {
    let mock = serve(vec![Reply::sse(fixture("openai-responses/text.sse"))]).await;
    let f = collect(
        &provider("openai-responses", &mock),
        simple_request("gpt-5.2"),
    )
    .await;
    assert_eq!(f.text(0), "`arm64` (Apple Silicon).");
    assert_eq!(f.usage, Some(usage(444, 12, Some(0), None)));
    assert_eq!(f.stop, Some(StopReason::EndTurn));
    assert_eq!(mock.requests()[0].path, "/v1/responses");

    let f = replay(
        "openai-responses",
        "openai-responses/function_call.sse",
        "gpt-5.4",
    )
    .await;
    let (id, name, args) = f.tool(0);
    assert!(id.starts_with("call_"), "{id}");
    assert_eq!(name, "get_weather");
    assert!(args.is_object());
    assert_eq!(f.stop, Some(StopReason::ToolUse));
    assert_eq!(f.usage, Some(usage(467, 26, Some(0), None)));
}

#[tokio::test]
async fn responses_reasoning_summary_signature_and_call() {
    let f = replay(
        "openai-responses",
        "openai-responses/reasoning_summary_function_call.sse",
        "m",
    )
    .await;
    match &f.blocks[&0] {
        Block::Thinking { text, signature } => {
            assert!(
                text.starts_with("**Calculating step-by-step using calculator**"),
                "{text}"
            );
            assert!(signature.as_deref().is_some_and(|s| s.starts_with("gAAAA")));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.tool(1),
        (
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
            "calculator",
            json!({"a": 12, "b": 7, "op": "add"})
        )
    );
    assert_eq!(f.stop, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn responses_error_event_then_failed_is_not_retried() {
    let mock = serve(vec![Reply::sse(fixture(
        "openai-responses/error_insufficient_quota.sse",
    ))])
    .await;
    let f = collect(&provider("openai-responses", &mock), simple_request("m")).await;
    match f.error {
        // A spent quota is an account problem: no retry, reported as `auth`.
        Some(ProviderError::Api(e)) => {
            assert_eq!(e.kind, shard_ai::ErrorKind::Auth);
            assert!(e.message.contains("insufficient_quota"), "{e:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.count(), 1);
}

#[tokio::test]
async fn responses_codex_fixture_id_rotation_and_done_text_wins() {
    let f = replay(
        "openai-responses",
        "openai-responses/codex_cli_responses_fixture.sse",
        "m",
    )
    .await;
    assert_eq!(f.text(0), "fixture hello");
    assert_eq!(f.stop, Some(StopReason::EndTurn));

    let f = replay(
        "openai-responses",
        "openai-responses/github_copilot_id_rotation.sse",
        "m",
    )
    .await;
    assert!(
        matches!(&f.blocks[&0], Block::Thinking { text, .. } if text.starts_with("**Counting character occurrences**"))
    );
    assert!(
        f.text(1).starts_with("There are **3** letter"),
        "{}",
        f.text(1)
    );
    assert_eq!(
        f.blocks.len(),
        2,
        "rotating item ids must not create new blocks"
    );
    assert_eq!(f.usage, Some(usage(19, 105, Some(0), Some(0))));

    let f = replay(
        "openai-responses",
        "openai-responses/phase_commentary_final_answer.sse",
        "m",
    )
    .await;
    assert_eq!(
        f.text(0),
        "Got it \u{2014} I\u{2019}ll quickly check reliable, up-to-date sources for AI headlines from **today (February 25, 2026)** and then summarize the key items with links."
    );
    assert!(
        f.text(1)
            .starts_with("Here are a few **AI headlines for today")
    );
    assert_eq!(f.usage, Some(usage(7112 - 3072, 463, Some(3072), None)));
}

#[tokio::test]
async fn chat_tool_calls_without_index_in_separate_chunks() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"x\\\"}\"}},{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"q\\\":1}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let mock = serve(vec![Reply::sse(body)]).await;
    let f = collect(&provider("openai", &mock), simple_request("m")).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(f.tool(0), ("a", "read", json!({"path": "x"})));
    assert_eq!(f.tool(1), ("b", "ls", json!({})));
    assert_eq!(f.tool(2), ("c", "grep", json!({"q": 1})));
    assert_eq!(f.stop, Some(StopReason::ToolUse));
}
