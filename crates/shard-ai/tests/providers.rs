#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Providers against an in-process mock HTTP server that replays the real captured SSE
//! streams of /work/shared/fixtures/llm byte for byte.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};
use shard_ai::{
    AiConfig, ModelRequest, Provider, ProviderConfig, ProviderError, StopReason, StreamEvent,
    ToolSpec, build_provider,
};
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent, Usage};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-test-SECRET-key-0123456789";
const WAIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- mock server

enum End {
    /// The body ends normally.
    Close,
    /// The body stays open; the sender is dropped when the client goes away.
    Hang(tokio::sync::oneshot::Sender<()>),
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    chunks: Vec<Vec<u8>>,
    end: End,
}

impl Reply {
    fn sse(body: impl Into<Vec<u8>>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            chunks: vec![body.into()],
            end: End::Close,
        }
    }
    fn status(status: u16, headers: Vec<(&'static str, String)>, body: &str) -> Self {
        Reply {
            status,
            headers,
            chunks: vec![body.as_bytes().to_vec()],
            end: End::Close,
        }
    }
}

struct Recorded {
    path: String,
    headers: axum::http::HeaderMap,
    body: Value,
}

#[derive(Default)]
struct MockState {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
}

struct Mock {
    addr: SocketAddr,
    state: Arc<MockState>,
}

impl Mock {
    fn requests(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.state.requests.lock().unwrap()
    }
    fn count(&self) -> usize {
        self.requests().len()
    }
    fn body(&self, i: usize) -> Value {
        self.requests()[i].body.clone()
    }
}

async fn handler(
    State(st): State<Arc<MockState>>,
    req: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    st.requests.lock().unwrap().push(Recorded {
        path: parts.uri.path().to_string(),
        headers: parts.headers,
        body,
    });
    let reply = st.replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return axum::response::Response::builder()
            .status(418)
            .body(Body::from("no reply scripted"))
            .unwrap();
    };
    let chunks = futures::stream::iter(
        reply
            .chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
    );
    let tail: futures::stream::BoxStream<'static, Result<Bytes, std::io::Error>> = match reply.end {
        End::Close => futures::stream::empty().boxed(),
        End::Hang(guard) => futures::stream::once(async move {
            let _guard = guard;
            futures::future::pending::<()>().await;
            Ok(Bytes::new())
        })
        .boxed(),
    };
    let mut b = axum::response::Response::builder().status(reply.status);
    for (k, v) in reply.headers {
        b = b.header(k, v);
    }
    b.body(Body::from_stream(chunks.chain(tail))).unwrap()
}

async fn serve(replies: Vec<Reply>) -> Mock {
    let state = Arc::new(MockState {
        replies: Mutex::new(replies.into()),
        requests: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new()
        .fallback(handler)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Mock { addr, state }
}

fn fixture(path: &str) -> Vec<u8> {
    let full = format!(
        "{}/../../../shared/fixtures/llm/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

// ---------------------------------------------------------------- providers

fn provider_with(
    name: &str,
    mock: &Mock,
    f: impl FnOnce(&mut ProviderConfig),
) -> Arc<dyn Provider> {
    let base = if name == "anthropic" {
        format!("http://{}", mock.addr)
    } else {
        format!("http://{}/v1", mock.addr)
    };
    let mut pc = ProviderConfig {
        base_url: Some(base),
        retry_base_ms: Some(1),
        max_retries: Some(3),
        ..ProviderConfig::default()
    };
    f(&mut pc);
    let mut config = AiConfig::default();
    config.providers.insert(name.to_string(), pc);
    let env =
        |k: &str| (k == "ANTHROPIC_API_KEY" || k == "OPENAI_API_KEY").then(|| KEY.to_string());
    build_provider(name, &config, &env).unwrap()
}

fn provider(name: &str, mock: &Mock) -> Arc<dyn Provider> {
    provider_with(name, mock, |_| {})
}

fn simple_request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        system: "You are Shard.".into(),
        messages: vec![Message {
            id: "m1".into(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: "hi".into() }],
        }],
        tools: vec![],
        max_output_tokens: None,
        reasoning_effort: None,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

#[derive(Debug, Default)]
struct Folded {
    events: Vec<StreamEvent>,
    blocks: BTreeMap<u32, Block>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    retries: Vec<(u32, u64, String)>,
    error: Option<ProviderError>,
}

impl Folded {
    fn text(&self, i: u32) -> &str {
        match self.blocks.get(&i) {
            Some(Block::Text(t)) => t,
            other => panic!("block {i} is not text: {other:?}"),
        }
    }
    fn tool(&self, i: u32) -> (&str, &str, Value) {
        match self.blocks.get(&i) {
            Some(Block::Tool { id, name, args }) => {
                (id, name, serde_json::from_str(args).unwrap_or(Value::Null))
            }
            other => panic!("block {i} is not a tool call: {other:?}"),
        }
    }
}

async fn collect(p: &Arc<dyn Provider>, req: ModelRequest) -> Folded {
    collect_with(p, req, CancellationToken::new()).await
}

async fn collect_with(
    p: &Arc<dyn Provider>,
    req: ModelRequest,
    cancel: CancellationToken,
) -> Folded {
    let mut stream = p.stream(req, cancel);
    let mut f = Folded::default();
    loop {
        let item = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("stream stalled");
        let Some(item) = item else { break };
        let ev = match item {
            Ok(ev) => ev,
            Err(e) => {
                f.error = Some(e);
                assert!(
                    tokio::time::timeout(WAIT, stream.next())
                        .await
                        .unwrap()
                        .is_none(),
                    "items after an error"
                );
                break;
            }
        };
        assert!(f.stop.is_none(), "event after Done: {ev:?}");
        f.events.push(ev.clone());
        match ev {
            StreamEvent::TextDelta { index, text } => {
                match f.blocks.entry(index).or_insert(Block::Text(String::new())) {
                    Block::Text(t) => t.push_str(&text),
                    other => panic!("text delta into {other:?}"),
                }
            }
            StreamEvent::ThinkingDelta { index, text } => {
                match f.blocks.entry(index).or_insert(Block::Thinking {
                    text: String::new(),
                    signature: None,
                }) {
                    Block::Thinking { text: t, .. } => t.push_str(&text),
                    other => panic!("thinking delta into {other:?}"),
                }
            }
            StreamEvent::ThinkingSignature { index, signature } => {
                match f.blocks.entry(index).or_insert(Block::Thinking {
                    text: String::new(),
                    signature: None,
                }) {
                    Block::Thinking { signature: s, .. } => *s = Some(signature),
                    other => panic!("signature into {other:?}"),
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                assert!(!f.blocks.contains_key(&index), "block {index} reused");
                f.blocks.insert(
                    index,
                    Block::Tool {
                        id,
                        name,
                        args: String::new(),
                    },
                );
            }
            StreamEvent::ToolCallArgsDelta { index, json } => match f.blocks.get_mut(&index) {
                Some(Block::Tool { args, .. }) => args.push_str(&json),
                other => panic!("args delta into {other:?}"),
            },
            StreamEvent::Usage(u) => f.usage = Some(u),
            StreamEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => f.retries.push((attempt, delay_ms, reason)),
            StreamEvent::Done { stop_reason } => f.stop = Some(stop_reason),
        }
    }
    // Indexes are dense and start at zero.
    let keys: Vec<u32> = f.blocks.keys().copied().collect();
    assert_eq!(
        keys,
        (0..keys.len() as u32).collect::<Vec<_>>(),
        "block indexes not dense"
    );
    f
}

async fn replay(name: &str, path: &str, model: &str) -> Folded {
    let mock = serve(vec![Reply::sse(fixture(path))]).await;
    let f = collect(&provider(name, &mock), simple_request(model)).await;
    assert_eq!(mock.count(), 1, "{path}: unexpected retries");
    f
}

fn usage(input: u64, output: u64, cache_read: Option<u64>, cache_write: Option<u64>) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        ..Usage::default()
    }
}

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
    let root = format!(
        "{}/../../../shared/fixtures/llm",
        env!("CARGO_MANIFEST_DIR")
    );
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
        Some(ProviderError::Stream(msg)) => assert!(msg.contains("insufficient_quota"), "{msg}"),
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

// ---------------------------------------------------------------- request bodies

fn tools() -> Vec<ToolSpec> {
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
    let msg = |id: &str, role, content| Message {
        id: id.into(),
        role,
        content,
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
        tools: tools(),
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

#[tokio::test]
async fn tool_result_images_reach_each_api() {
    let req = ModelRequest {
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
                    content: ToolResultContent::Image {
                        data: "iVBO".into(),
                        mime_type: "image/png".into(),
                    },
                    is_error: None,
                    exit_code: None,
                    duration_ms: None,
                    render: None,
                }],
            },
        ],
        tools: vec![],
        ..simple_request("m")
    };
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
        Some(ProviderError::Http(msg)) => {
            assert!(
                msg.contains("rate_limit_error") && msg.contains("3 attempts"),
                "{msg}"
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
        matches!(f.error, Some(ProviderError::Http(ref m)) if m.contains("400") && m.contains("bad model")),
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
        assert!(matches!(err, ProviderError::Auth(_)), "{name}: {err:?}");
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
        matches!(f.error, Some(ProviderError::Stream(ref m)) if m.contains("overloaded_error")),
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
        matches!(f.error, Some(ProviderError::Stream(ref m)) if m.contains("broke")),
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
        matches!(f.error, Some(ProviderError::Stream(ref m)) if m.contains("response.completed")),
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
        matches!(f.error, Some(ProviderError::Stream(ref m)) if m.contains("invalid JSON")),
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
        matches!(f.error, Some(ProviderError::Stream(ref m)) if m.contains("no data")),
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
        req.tools = tools();
        let f1 = collect(&p, req.clone()).await;
        assert_eq!(f1.stop, Some(StopReason::ToolUse), "{name}");
        let call = f1.blocks.values().find_map(|b| match b {
            Block::Tool { id, args, .. } => Some((id.clone(), args.clone())),
            _ => None,
        });
        let (call_id, args) = call.unwrap();
        req.messages.push(assistant_from(&f1, "a1"));
        req.messages.push(tool_result(&call_id, "sunny"));
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
    req.messages.push(assistant_from(&f1, "a1"));
    req.messages.push(Message {
        id: "u2".into(),
        role: Role::User,
        content: vec![ContentBlock::Text {
            text: "more".into(),
        }],
    });
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
