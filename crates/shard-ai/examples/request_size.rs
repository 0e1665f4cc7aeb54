//! Measures the size of the first request of a session for each provider: a realistic
//! system prompt (bench/ai/system_prompt.txt, ~2 KB) plus the seven built-in tools'
//! schemas (bench/ai/tool_specs.json, dumped from shard-tools' registry) and a one-line
//! user prompt. Prints bytes.
//!
//! Run: `cargo run -p shard-ai --example request_size`.

use serde_json::Value;
use shard_ai::openai_chat::MaxTokensField;
use shard_ai::{ModelRequest, ToolSpec};
use shard_protocol::types::{ContentBlock, Message, Role};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = format!("{}/../../bench/ai", env!("CARGO_MANIFEST_DIR"));
    let system = std::fs::read_to_string(format!("{dir}/system_prompt.txt"))?;
    let specs: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/tool_specs.json"))?)?;
    let tools: Vec<ToolSpec> = specs
        .iter()
        .map(|s| ToolSpec {
            name: s["name"].as_str().unwrap_or_default().to_string(),
            description: s["description"].as_str().unwrap_or_default().to_string(),
            input_schema: s["input_schema"].clone(),
        })
        .collect();
    let tools_bytes: usize = specs.iter().map(|s| s.to_string().len()).sum();
    let request = ModelRequest {
        model: "model-name".into(),
        system: system.trim_end().to_string(),
        messages: vec![std::sync::Arc::new(Message {
            id: "m1".into(),
            role: Role::User,
            content: vec![ContentBlock::Text {
                text: "Fix the failing test in crates/foo.".into(),
            }],
        })],
        tools: tools.into(),
        max_output_tokens: Some(32_000),
        reasoning_effort: None,
    };
    let sizes = [
        (
            "anthropic",
            serde_json::to_vec(&shard_ai::anthropic::request_body(&request))?.len(),
        ),
        (
            "openai",
            serde_json::to_vec(&shard_ai::openai_chat::request_body(
                &request,
                MaxTokensField::MaxCompletionTokens,
            ))?
            .len(),
        ),
        (
            "openai-responses",
            serde_json::to_vec(&shard_ai::openai_responses::request_body(&request))?.len(),
        ),
    ];
    println!("system prompt: {} bytes", request.system.len());
    println!("tool specs ({}): {tools_bytes} bytes as JSON", specs.len());
    for (name, n) in sizes {
        println!("first request, {name}: {n} bytes");
    }
    Ok(())
}
