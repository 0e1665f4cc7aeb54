//! Exact request bodies.

use serde_json::{Value, json};
use shard_ai::{ModelRequest, ToolSpec};
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

use crate::support::*;

// ---------------------------------------------------------------- request bodies

pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        ToolSpec {
            name: "bash".into(),
            description: "Run a command".into(),
            input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        },
    ]
}

fn conversation() -> ModelRequest {
    let args = |v: Value| v.as_object().unwrap().clone();
    let msg = |id: &str, role, content| {
        std::sync::Arc::new(Message {
            id: id.into(),
            role,
            content,
        })
    };
    ModelRequest {
        model: "the-model".into(),
        system: "You are Shard.".into(),
        messages: vec![
            msg(
                "m1",
                Role::User,
                vec![
                    ContentBlock::Text {
                        text: "Look at this".into(),
                    },
                    ContentBlock::Image {
                        data: "aGVsbG8=".into(),
                        mime_type: "image/png".into(),
                    },
                ],
            ),
            msg(
                "m2",
                Role::Assistant,
                vec![
                    ContentBlock::Thinking {
                        text: "I should read".into(),
                        signature: Some("sig-1".into()),
                    },
                    ContentBlock::Thinking {
                        text: "unsigned".into(),
                        signature: None,
                    },
                    ContentBlock::Text {
                        text: "Reading.".into(),
                    },
                    ContentBlock::ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        args: args(json!({"path": "a.txt"})),
                    },
                    ContentBlock::ToolCall {
                        id: "call_2".into(),
                        name: "bash".into(),
                        args: args(json!({"command": "false"})),
                    },
                ],
            ),
            msg(
                "m3",
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_call_id: "call_1".into(),
                    content: ToolResultContent::Text {
                        text: "hello".into(),
                    },
                    is_error: None,
                    exit_code: None,
                    duration_ms: Some(3),
                    render: None,
                    images: None,
                }],
            ),
            msg(
                "m4",
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_call_id: "call_2".into(),
                    content: ToolResultContent::Error {
                        message: "command failed".into(),
                    },
                    is_error: Some(true),
                    exit_code: Some(1),
                    duration_ms: None,
                    render: None,
                    images: None,
                }],
            ),
            msg(
                "m5",
                Role::User,
                vec![ContentBlock::Text {
                    text: "Now summarize".into(),
                }],
            ),
        ],
        tools: tools().into(),
        max_output_tokens: Some(16000),
        reasoning_effort: Some("low".into()),
    }
}

async fn sent_body(name: &str, req: ModelRequest, reply: Reply) -> Value {
    let mock = serve(vec![reply]).await;
    let f = collect(&provider(name, &mock), req).await;
    assert!(f.error.is_none(), "{:?}", f.error);
    mock.body(0)
}

#[tokio::test]
async fn anthropic_request_body_is_exact() {
    let body = sent_body(
        "anthropic",
        conversation(),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    )
    .await;
    let eph = json!({"type": "ephemeral"});
    let t = tools();
    let expected = json!({
        "model": "the-model",
        "max_tokens": 16000,
        "system": [{"type": "text", "text": "You are Shard.", "cache_control": eph}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Look at this"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}, "cache_control": eph},
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should read", "signature": "sig-1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "call_2", "name": "bash", "input": {"command": "false"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "hello"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "command failed\n[exit code: 1]", "is_error": true},
                {"type": "text", "text": "Now summarize", "cache_control": eph},
            ]},
        ],
        "tools": [
            {"name": "read", "description": "Read a file", "input_schema": t[0].input_schema},
            {"name": "bash", "description": "Run a command", "input_schema": t[1].input_schema, "cache_control": eph},
        ],
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "stream": true,
    });
    assert_eq!(
        body,
        expected,
        "{}",
        serde_json::to_string_pretty(&body).unwrap()
    );
    let breakpoints = serde_json::to_string(&body)
        .unwrap()
        .matches("cache_control")
        .count();
    assert!(breakpoints <= 4);
}

#[tokio::test]
async fn chat_request_body_is_exact() {
    let body = sent_body(
        "openai",
        conversation(),
        Reply::sse(fixture("openai-chat/text.sse")),
    )
    .await;
    let t = tools();
    let expected = json!({
        "model": "the-model",
        "messages": [
            {"role": "system", "content": "You are Shard."},
            {"role": "user", "content": [
                {"type": "text", "text": "Look at this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}},
            ]},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"false\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: command failed\n[exit code: 1]"},
            {"role": "user", "content": "Now summarize"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": t[0].input_schema}},
            {"type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": t[1].input_schema}},
        ],
        "max_tokens": 16000,
        "reasoning_effort": "low",
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    assert_eq!(
        body,
        expected,
        "{}",
        serde_json::to_string_pretty(&body).unwrap()
    );
}

#[tokio::test]
async fn responses_request_body_is_exact() {
    let body = sent_body(
        "openai-responses",
        conversation(),
        Reply::sse(fixture("openai-responses/text.sse")),
    )
    .await;
    let t = tools();
    let expected = json!({
        "model": "the-model",
        "instructions": "You are Shard.",
        "input": [
            {"role": "user", "content": [
                {"type": "input_text", "text": "Look at this"},
                {"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="},
            ]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I should read"}], "encrypted_content": "sig-1"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "bash", "arguments": "{\"command\":\"false\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
            {"type": "function_call_output", "call_id": "call_2", "output": "Error: command failed\n[exit code: 1]"},
            {"role": "user", "content": [{"type": "input_text", "text": "Now summarize"}]},
        ],
        "tools": [
            {"type": "function", "name": "read", "description": "Read a file", "parameters": t[0].input_schema, "strict": false},
            {"type": "function", "name": "bash", "description": "Run a command", "parameters": t[1].input_schema, "strict": false},
        ],
        "max_output_tokens": 16000,
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": false,
        "stream": true,
    });
    assert_eq!(
        body,
        expected,
        "{}",
        serde_json::to_string_pretty(&body).unwrap()
    );
}

/// A call of `screenshot` answered with `content` and `images`.
fn tool_result_request(
    content: ToolResultContent,
    images: Option<Vec<shard_protocol::types::Image>>,
) -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message {
                id: "a".into(),
                role: Role::Assistant,
                content: vec![ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "screenshot".into(),
                    args: Default::default(),
                }],
            },
            Message {
                id: "b".into(),
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_call_id: "c1".into(),
                    content,
                    is_error: None,
                    exit_code: None,
                    duration_ms: None,
                    render: None,
                    images,
                }],
            },
        ]
        .into_iter()
        .map(std::sync::Arc::new)
        .collect(),
        tools: Vec::new().into(),
        ..simple_request("m")
    }
}

#[tokio::test]
async fn tool_result_images_reach_each_api() {
    let req = tool_result_request(
        ToolResultContent::Image {
            data: "iVBO".into(),
            mime_type: "image/png".into(),
        },
        None,
    );
    let a = sent_body(
        "anthropic",
        req.clone(),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    )
    .await;
    assert_eq!(
        a["messages"][1]["content"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        ])
    );
    let c = sent_body(
        "openai",
        req.clone(),
        Reply::sse(fixture("openai-chat/text.sse")),
    )
    .await;
    assert_eq!(
        c["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "[image attached in the next message]"})
    );
    assert_eq!(
        c["messages"][3],
        json!({"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
        ]})
    );
    let r = sent_body(
        "openai-responses",
        req,
        Reply::sse(fixture("openai-responses/text.sse")),
    )
    .await;
    assert_eq!(
        r["input"][1]["output"],
        json!([{"type": "input_image", "image_url": "data:image/png;base64,iVBO"}])
    );
}

#[tokio::test]
async fn tool_result_text_and_images_reach_each_api_as_both() {
    let image = |data: &str| shard_protocol::types::Image {
        kind: Default::default(),
        data: data.into(),
        mime_type: "image/png".into(),
    };
    let req = tool_result_request(
        ToolResultContent::Text {
            text: "Page title: Example".into(),
        },
        Some(vec![image("iVBO"), image("R0lG")]),
    );
    let png = |d: &str| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}});
    let a = sent_body(
        "anthropic",
        req.clone(),
        Reply::sse(fixture("anthropic/sdk-python/basic_response.txt")),
    )
    .await;
    assert_eq!(
        a["messages"][1]["content"][0]["content"],
        json!([png("iVBO"), png("R0lG"), {"type": "text", "text": "Page title: Example"}])
    );
    let c = sent_body(
        "openai",
        req.clone(),
        Reply::sse(fixture("openai-chat/text.sse")),
    )
    .await;
    assert_eq!(
        c["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1",
               "content": "Page title: Example\n[images attached in the next message]"})
    );
    let url = |d: &str| json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{d}")}});
    assert_eq!(
        c["messages"][3],
        json!({"role": "user", "content": [url("iVBO"), url("R0lG")]})
    );
    let r = sent_body(
        "openai-responses",
        req,
        Reply::sse(fixture("openai-responses/text.sse")),
    )
    .await;
    assert_eq!(
        r["input"][1]["output"],
        json!([
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO"},
            {"type": "input_image", "image_url": "data:image/png;base64,R0lG"},
            {"type": "input_text", "text": "Page title: Example"}
        ])
    );
}
