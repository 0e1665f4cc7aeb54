//! Anthropic Messages streams.

use serde_json::{Value, json};
use shard_ai::{StopReason, StreamEvent};

use crate::support::*;

// ---------------------------------------------------------------- Anthropic streams

#[tokio::test]
async fn anthropic_basic_response_without_trailing_newline() {
    for path in [
        "anthropic/sdk-python/basic_response.txt",
        "anthropic/sdk-typescript/basic_response.txt",
    ] {
        let mock = serve(vec![Reply::sse(fixture(path))]).await;
        let f = collect(
            &provider("anthropic", &mock),
            simple_request("claude-sonnet-4-5"),
        )
        .await;
        assert!(f.error.is_none(), "{path}: {:?}", f.error);
        assert_eq!(f.text(0), "Hello there!", "{path}");
        assert_eq!(f.blocks.len(), 1);
        assert_eq!(f.usage.as_ref().map(|u| (u.input, u.output)), Some((11, 6)));
        assert_eq!(f.stop, Some(StopReason::EndTurn), "{path}");
        let reqs = mock.requests();
        assert_eq!(reqs[0].path, "/v1/messages");
        assert_eq!(reqs[0].headers["x-api-key"], KEY);
        assert_eq!(reqs[0].headers["anthropic-version"], "2023-06-01");
        assert!(reqs[0].headers.get("authorization").is_none());
    }
}

#[tokio::test]
async fn anthropic_tool_use_with_split_json() {
    for path in [
        "anthropic/sdk-python/tool_use_response.txt",
        "anthropic/sdk-typescript/tool_use_response.txt",
        "anthropic/sdk-python-cassettes/tool_use_turn1.sse",
    ] {
        let f = replay("anthropic", path, "claude-sonnet-4-5").await;
        assert!(f.error.is_none(), "{path}: {:?}", f.error);
        assert_eq!(f.stop, Some(StopReason::ToolUse), "{path}");
        let last = f.blocks.len() as u32 - 1;
        let (id, name, args) = f.tool(last);
        assert!(id.starts_with("toolu_"), "{path}: {id}");
        assert_eq!(name, "get_weather", "{path}");
        assert!(
            args.get("location").and_then(Value::as_str).is_some(),
            "{path}: {args}"
        );
    }
    let f = replay(
        "anthropic",
        "anthropic/sdk-python/tool_use_response.txt",
        "m",
    )
    .await;
    let u = f.usage.unwrap();
    assert!(u.cache_read.is_some() && u.cache_write.is_some(), "{u:?}");
}

#[tokio::test]
async fn anthropic_thinking_signature_then_text() {
    let f = replay(
        "anthropic",
        "anthropic/vercel-ai/thinking_signature.sse",
        "claude-sonnet-4-5",
    )
    .await;
    assert!(f.error.is_none(), "{:?}", f.error);
    match &f.blocks[&0] {
        Block::Thinking { text, signature } => {
            assert!(!text.is_empty());
            assert!(
                signature.as_deref().is_some_and(|s| s.len() > 20),
                "{signature:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(f.text(1).contains('÷') || !f.text(1).is_empty());
    assert_eq!(f.stop, Some(StopReason::EndTurn));
    // The empty thinking_delta before the signature is not forwarded.
    assert!(
        !f.events
            .iter()
            .any(|e| matches!(e, StreamEvent::ThinkingDelta { text, .. } if text.is_empty()))
    );
}

#[tokio::test]
async fn anthropic_tool_without_args_gets_empty_object_and_pings_are_ignored() {
    let f = replay("anthropic", "anthropic/vercel-ai/tool_use_no_args.sse", "m").await;
    assert_eq!(f.text(0), "I'll update the issue list for you.");
    let (_, name, args) = f.tool(1);
    assert_eq!(name, "updateIssueList");
    assert_eq!(args, json!({}));
    assert_eq!(f.stop, Some(StopReason::ToolUse));
    let f = replay(
        "anthropic",
        "anthropic/vercel-ai/text_then_tool_use.sse",
        "m",
    )
    .await;
    assert!(f.error.is_none());
    let (_, name, args) = f.tool(1);
    assert_eq!(name, "json");
    assert!(args.is_object(), "{args}");
}

#[tokio::test]
async fn anthropic_incomplete_partial_json_and_max_tokens() {
    for path in [
        "anthropic/sdk-python/incomplete_partial_json_response.txt",
        "anthropic/sdk-typescript/incomplete_partial_json_response.txt",
    ] {
        let f = replay("anthropic", path, "m").await;
        assert!(f.error.is_none(), "{path}: {:?}", f.error);
        assert_eq!(f.stop, Some(StopReason::MaxTokens));
        assert!(
            f.text(0)
                .starts_with("I'll create a comprehensive tax guide")
        );
        match &f.blocks[&1] {
            Block::Tool { name, args, .. } => {
                assert_eq!(name, "make_file");
                assert!(args.starts_with("{\"filename\": \"taxes.txt"), "{args}");
                assert!(
                    serde_json::from_str::<Value>(args).is_err(),
                    "the JSON was cut off"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(f.usage.as_ref().map(|u| u.output), Some(124));
    }
}

#[tokio::test]
async fn anthropic_refusal_and_unknown_blocks() {
    let f = replay(
        "anthropic",
        "anthropic/sdk-python/refusal_response.txt",
        "m",
    )
    .await;
    assert_eq!(f.stop, Some(StopReason::Refusal));
    assert!(
        f.blocks.is_empty(),
        "an empty text block is never announced"
    );
    assert_eq!(f.usage.as_ref().map(|u| (u.input, u.output)), Some((20, 0)));

    let f = replay(
        "anthropic",
        "anthropic/fable-fallback/stream-a-refusal.sse",
        "m",
    )
    .await;
    assert!(matches!(
        &f.blocks[&0],
        Block::Thinking {
            signature: Some(_),
            ..
        }
    ));
    assert_eq!(f.text(1), "Hi");
    assert_eq!(f.stop, Some(StopReason::Refusal));

    // Server tool blocks are not ours: only the text remains.
    let f = replay(
        "anthropic",
        "anthropic/fable-fallback/stream-a-toolrefusal.sse",
        "m",
    )
    .await;
    assert!(f.error.is_none());
    assert!(
        f.blocks.values().all(|b| matches!(b, Block::Text(_))),
        "{:?}",
        f.blocks
    );
    assert_eq!(f.stop, Some(StopReason::Refusal));

    for path in [
        "anthropic/sdk-python/compaction_response.txt",
        "anthropic/sdk-python/fallback_response.txt",
    ] {
        let f = replay("anthropic", path, "m").await;
        assert!(f.error.is_none(), "{path}");
        assert!(!f.text(0).is_empty(), "{path}");
        assert_eq!(f.blocks.len(), 1, "{path}");
    }
}

#[tokio::test]
async fn anthropic_last_usage_wins_and_real_padding() {
    let f = replay(
        "anthropic",
        "anthropic/vercel-ai/message_delta_input_tokens.sse",
        "m",
    )
    .await;
    assert_eq!(f.text(0), "pong");
    assert_eq!(f.usage.as_ref().map(|u| u.input), Some(61));

    let f = replay(
        "anthropic",
        "anthropic/sdk-python-cassettes/structured_output_json.sse",
        "m",
    )
    .await;
    assert_eq!(f.text(0), "[12345,67890]");
    let f = replay(
        "anthropic",
        "anthropic/sdk-python-cassettes/tool_result_turn2_text.sse",
        "m",
    )
    .await;
    assert!(f.text(0).contains('°'));
}

#[tokio::test]
async fn every_fixture_decodes_without_error() {
    let dirs = [
        ("anthropic", "anthropic/sdk-python"),
        ("anthropic", "anthropic/sdk-typescript"),
        ("anthropic", "anthropic/fable-fallback"),
        ("anthropic", "anthropic/vercel-ai"),
        ("openai", "openai-chat"),
    ];
    let root = crate::support::FIXTURES;
    for (kind, dir) in dirs {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            let rel = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
            let f = replay(kind, &rel, "m").await;
            assert!(f.error.is_none(), "{rel}: {:?}", f.error);
            assert!(f.stop.is_some(), "{rel}");
            assert!(f.usage.is_some(), "{rel}");
        }
    }
}

#[tokio::test]
async fn anthropic_deltas_without_block_start_are_kept() {
    let body = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
    );
    let mock = serve(vec![Reply::sse(body)]).await;
    let f = collect(&provider("anthropic", &mock), simple_request("m")).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    assert_eq!(f.text(0), "hi");
    assert_eq!(
        f.stop,
        Some(StopReason::EndTurn),
        "message_stop may be missing after message_delta"
    );
}
