//! Multi-turn tool conversations.

use serde_json::{Value, json};
use shard_ai::StopReason;
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

use crate::requests::tools;
use crate::support::*;

// ---------------------------------------------------------------- multi-turn conversations

/// The assistant message a Runtime would store from a folded stream.
fn assistant_from(f: &Folded, id: &str) -> Message {
    let content = f
        .blocks
        .values()
        .map(|b| match b {
            Block::Text(text) => ContentBlock::Text { text: text.clone() },
            Block::Thinking { text, signature } => ContentBlock::Thinking {
                text: text.clone(),
                signature: signature.clone(),
            },
            Block::Tool { id, name, args } => ContentBlock::ToolCall {
                id: id.clone(),
                name: name.clone(),
                args: serde_json::from_str::<Value>(args)
                    .unwrap()
                    .as_object()
                    .unwrap()
                    .clone(),
            },
        })
        .collect();
    Message {
        id: id.into(),
        role: Role::Assistant,
        content,
    }
}

fn tool_result(call_id: &str, text: &str) -> Message {
    Message {
        id: format!("r-{call_id}"),
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: call_id.into(),
            content: ToolResultContent::Text { text: text.into() },
            is_error: None,
            exit_code: Some(0),
            duration_ms: None,
            render: None,
            images: None,
        }],
    }
}

/// Turn 1 streams a tool call, the "Runtime" answers it, turn 2 must carry the call and
/// its result, paired by id, and (Responses) the reasoning item with its encrypted content.
#[tokio::test]
async fn two_turn_tool_conversations() {
    let cases = [
        (
            "anthropic",
            "anthropic/sdk-python-cassettes/tool_use_turn1.sse",
            "anthropic/sdk-python-cassettes/tool_result_turn2_text.sse",
        ),
        (
            "openai",
            "openai-chat/tool_call.sse",
            "openai-chat/text.sse",
        ),
        (
            "openai-responses",
            "openai-responses/reasoning_summary_function_call.sse",
            "openai-responses/text.sse",
        ),
    ];
    for (name, first, second) in cases {
        let mock = serve(vec![
            Reply::sse(fixture(first)),
            Reply::sse(fixture(second)),
        ])
        .await;
        let p = provider(name, &mock);
        let mut req = simple_request("m");
        req.tools = tools().into();
        let f1 = collect(&p, req.clone()).await;
        assert_eq!(f1.stop, Some(StopReason::ToolUse), "{name}");
        let call = f1.blocks.values().find_map(|b| match b {
            Block::Tool { id, args, .. } => Some((id.clone(), args.clone())),
            _ => None,
        });
        let (call_id, args) = call.unwrap();
        req.messages
            .push(std::sync::Arc::new(assistant_from(&f1, "a1")));
        req.messages
            .push(std::sync::Arc::new(tool_result(&call_id, "sunny")));
        let f2 = collect(&p, req).await;
        assert!(f2.error.is_none(), "{name}: {:?}", f2.error);
        assert_eq!(f2.stop, Some(StopReason::EndTurn), "{name}");
        let body = mock.body(1);
        let text = body.to_string();
        match name {
            "anthropic" => {
                let msgs = body["messages"].as_array().unwrap();
                assert_eq!(msgs.len(), 3);
                let tool_use = msgs[1]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|b| b["type"] == "tool_use")
                    .unwrap();
                assert_eq!(tool_use["id"], call_id.as_str());
                assert_eq!(
                    tool_use["input"],
                    serde_json::from_str::<Value>(&args).unwrap()
                );
                assert_eq!(msgs[2]["content"][0]["tool_use_id"], call_id.as_str());
                assert_eq!(msgs[2]["content"][0]["content"], "sunny\n[exit code: 0]");
            }
            "openai" => {
                let msgs = body["messages"].as_array().unwrap();
                assert_eq!(msgs[2]["tool_calls"][0]["id"], call_id.as_str());
                assert_eq!(
                    msgs[2]["tool_calls"][0]["function"]["arguments"],
                    serde_json::to_string(&serde_json::from_str::<Value>(&args).unwrap()).unwrap()
                );
                assert_eq!(
                    msgs[3],
                    json!({"role": "tool", "tool_call_id": call_id, "content": "sunny\n[exit code: 0]"})
                );
            }
            _ => {
                let input = body["input"].as_array().unwrap();
                let reasoning = input.iter().find(|i| i["type"] == "reasoning").unwrap();
                assert!(
                    reasoning["encrypted_content"]
                        .as_str()
                        .unwrap()
                        .starts_with("gAAAA")
                );
                assert!(reasoning.get("id").is_none());
                let fc = input
                    .iter()
                    .position(|i| i["type"] == "function_call")
                    .unwrap();
                assert_eq!(input[fc]["call_id"], call_id.as_str());
                assert_eq!(
                    input[fc + 1],
                    json!({"type": "function_call_output", "call_id": call_id, "output": "sunny\n[exit code: 0]"})
                );
            }
        }
        assert!(!text.contains(KEY));
    }
}

/// A thinking block streamed by Anthropic goes back with its exact signature.
#[tokio::test]
async fn anthropic_thinking_signature_round_trip() {
    let mock = serve(vec![
        Reply::sse(fixture("anthropic/vercel-ai/thinking_signature.sse")),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    ])
    .await;
    let p = provider("anthropic", &mock);
    let mut req = simple_request("m");
    let f1 = collect(&p, req.clone()).await;
    let Block::Thinking {
        text,
        signature: Some(sig),
    } = f1.blocks[&0].clone()
    else {
        panic!("{:?}", f1.blocks)
    };
    req.messages
        .push(std::sync::Arc::new(assistant_from(&f1, "a1")));
    req.messages.push(std::sync::Arc::new(Message {
        id: "u2".into(),
        role: Role::User,
        content: vec![ContentBlock::Text {
            text: "more".into(),
        }],
    }));
    let _ = collect(&p, req).await;
    let body = mock.body(1);
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": text, "signature": sig})
    );
    // Breakpoints on both user turns, none on the assistant turn.
    assert!(
        body["messages"][0]["content"][0]
            .get("cache_control")
            .is_some()
    );
    assert!(
        body["messages"][2]["content"][0]
            .get("cache_control")
            .is_some()
    );
    assert!(
        body["messages"][1]
            .to_string()
            .find("cache_control")
            .is_none()
    );
}
