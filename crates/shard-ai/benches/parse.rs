//! Parse throughput: SSE bytes → normalized events, per provider, fed in 1,400-byte
//! chunks the way a network delivers them. Two inputs per provider: a synthetic
//! 2,000-word answer streamed in ~4-character deltas (with a thinking part and a tool
//! call), and a real captured fixture.
//!
//! Run: `cargo bench -p shard-ai --bench parse`.

use divan::counter::BytesCount;
use serde_json::json;
use shard_ai::config::ProviderKind;
use shard_ai::decode::decode;

fn main() {
    divan::main();
}

const CHUNK: usize = 1_400;

fn words() -> Vec<String> {
    let vocab = [
        "the", "provider", "streams", "tokens", "quickly", "while", "Shard", "renders", "each",
        "delta", "as", "it", "arrives,", "and", "tools", "run", "in", "between.",
    ];
    let mut out = Vec::new();
    let mut n = 0usize;
    while out.len() < 2_000 {
        out.push(vocab[n % vocab.len()].to_string());
        n = n.wrapping_mul(31).wrapping_add(7);
    }
    out
}

/// The answer as ~4-character pieces.
fn pieces() -> Vec<String> {
    let text = words().join(" ");
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(4).map(|c| c.iter().collect()).collect()
}

fn frame(out: &mut String, event: Option<&str>, data: &serde_json::Value) {
    if let Some(e) = event {
        out.push_str("event: ");
        out.push_str(e);
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

fn anthropic_stream() -> Vec<u8> {
    let mut s = String::new();
    frame(
        &mut s,
        Some("message_start"),
        &json!({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":2400,"cache_creation_input_tokens":0,"cache_read_input_tokens":9000,"output_tokens":1}}}),
    );
    frame(
        &mut s,
        Some("content_block_start"),
        &json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
    );
    for p in pieces().iter().take(200) {
        frame(
            &mut s,
            Some("content_block_delta"),
            &json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":p}}),
        );
    }
    frame(
        &mut s,
        Some("content_block_delta"),
        &json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkgIARABGAIiQL".repeat(8)}}),
    );
    frame(
        &mut s,
        Some("content_block_stop"),
        &json!({"type":"content_block_stop","index":0}),
    );
    frame(
        &mut s,
        Some("content_block_start"),
        &json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
    );
    for (i, p) in pieces().iter().enumerate() {
        if i % 200 == 0 {
            frame(&mut s, Some("ping"), &json!({"type":"ping"}));
        }
        frame(
            &mut s,
            Some("content_block_delta"),
            &json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":p}}),
        );
    }
    frame(
        &mut s,
        Some("content_block_stop"),
        &json!({"type":"content_block_stop","index":1}),
    );
    frame(
        &mut s,
        Some("content_block_start"),
        &json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"bash","input":{}}}),
    );
    for p in ["{\"comm", "and\": \"ec", "ho hel", "lo\"}"] {
        frame(
            &mut s,
            Some("content_block_delta"),
            &json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":p}}),
        );
    }
    frame(
        &mut s,
        Some("content_block_stop"),
        &json!({"type":"content_block_stop","index":2}),
    );
    frame(
        &mut s,
        Some("message_delta"),
        &json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3100}}),
    );
    frame(
        &mut s,
        Some("message_stop"),
        &json!({"type":"message_stop"}),
    );
    s.into_bytes()
}

fn chat_chunk(delta: serde_json::Value, finish: Option<&str>) -> serde_json::Value {
    json!({"id":"chatcmpl-AB12","object":"chat.completion.chunk","created":1_765_000_000u64,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_1","choices":[{"index":0,"delta":delta,"logprobs":null,"finish_reason":finish}],"usage":null})
}

fn chat_stream() -> Vec<u8> {
    let mut s = String::new();
    frame(
        &mut s,
        None,
        &chat_chunk(
            json!({"role":"assistant","content":"","refusal":null}),
            None,
        ),
    );
    for p in pieces().iter().take(200) {
        frame(
            &mut s,
            None,
            &chat_chunk(json!({"reasoning_content":p}), None),
        );
    }
    for p in pieces() {
        frame(&mut s, None, &chat_chunk(json!({"content":p}), None));
    }
    frame(
        &mut s,
        None,
        &chat_chunk(
            json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}),
            None,
        ),
    );
    for p in ["{\"comm", "and\": \"ec", "ho hel", "lo\"}"] {
        frame(
            &mut s,
            None,
            &chat_chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":p}}]}),
                None,
            ),
        );
    }
    frame(&mut s, None, &chat_chunk(json!({}), Some("tool_calls")));
    frame(
        &mut s,
        None,
        &json!({"id":"chatcmpl-AB12","object":"chat.completion.chunk","created":1_765_000_000u64,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":11400,"completion_tokens":3100,"total_tokens":14500,"prompt_tokens_details":{"cached_tokens":9000}}}),
    );
    s.push_str("data: [DONE]\n\n");
    s.into_bytes()
}

fn responses_stream() -> Vec<u8> {
    let mut s = String::new();
    let mut seq = 0u64;
    let mut ev = |s: &mut String, mut v: serde_json::Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        let t = v["type"].as_str().unwrap_or("").to_string();
        frame(s, Some(&t), &v);
    };
    ev(
        &mut s,
        json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress","model":"gpt-5.4","output":[]}}),
    );
    ev(
        &mut s,
        json!({"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}),
    );
    for p in pieces().iter().take(200) {
        ev(
            &mut s,
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":p,"obfuscation":"abcdef"}),
        );
    }
    ev(
        &mut s,
        json!({"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAAABpPDIU".repeat(20)}}),
    );
    ev(
        &mut s,
        json!({"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}),
    );
    for p in pieces() {
        ev(
            &mut s,
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":p,"logprobs":[],"obfuscation":"abcdef"}),
        );
    }
    ev(
        &mut s,
        json!({"type":"response.output_item.added","output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"bash"}}),
    );
    for p in ["{\"comm", "and\": \"ec", "ho hel", "lo\"}"] {
        ev(
            &mut s,
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":p}),
        );
    }
    ev(
        &mut s,
        json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":11400,"input_tokens_details":{"cached_tokens":9000},"output_tokens":3100,"output_tokens_details":{"reasoning_tokens":200},"total_tokens":14500}}}),
    );
    s.into_bytes()
}

fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/fixtures/llm/{path}", env!("CARGO_MANIFEST_DIR"));
    // The captured streams ship with the repository: a missing one is a broken checkout.
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn input(name: &str) -> (ProviderKind, Vec<u8>) {
    match name {
        "anthropic/synthetic" => (ProviderKind::Anthropic, anthropic_stream()),
        "openai/synthetic" => (ProviderKind::OpenAi, chat_stream()),
        "openai-responses/synthetic" => (ProviderKind::OpenAiResponses, responses_stream()),
        "anthropic/fixture" => (
            ProviderKind::Anthropic,
            fixture("anthropic/fable-fallback/stream-b-fallback.sse"),
        ),
        "openai/fixture" => (
            ProviderKind::OpenAi,
            fixture("openai-chat/text_obfuscation_usage_null.sse"),
        ),
        _ => (
            ProviderKind::OpenAiResponses,
            fixture("openai-responses/github_copilot_id_rotation.sse"),
        ),
    }
}

#[divan::bench(args = [
    "anthropic/synthetic", "openai/synthetic", "openai-responses/synthetic",
    "anthropic/fixture", "openai/fixture", "openai-responses/fixture",
])]
fn parse(bencher: divan::Bencher, name: &str) {
    let (kind, bytes) = input(name);
    let events = decode(kind, bytes.chunks(CHUNK))
        .map(|e| e.len())
        .unwrap_or(0);
    assert!(events > 0, "{name} decoded to nothing");
    bencher
        .counter(BytesCount::new(bytes.len()))
        .bench(|| decode(kind, divan::black_box(&bytes).chunks(CHUNK)));
}
