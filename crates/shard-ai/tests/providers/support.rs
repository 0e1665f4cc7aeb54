//! The mock server, provider construction and stream folding shared by every test.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use shard_ai::{
    AiConfig, ModelRequest, Provider, ProviderConfig, ProviderError, StopReason, StreamEvent,
    build_provider,
};
use shard_protocol::types::{ContentBlock, Message, Role, Usage};
use tokio_util::sync::CancellationToken;

pub(crate) const KEY: &str = "sk-test-SECRET-key-0123456789";
pub(crate) const WAIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- mock server

pub(crate) enum End {
    /// The body ends normally.
    Close,
    /// The body stays open; the sender is dropped when the client goes away.
    Hang(tokio::sync::oneshot::Sender<()>),
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) chunks: Vec<Vec<u8>>,
    pub(crate) end: End,
}

impl Reply {
    pub(crate) fn sse(body: impl Into<Vec<u8>>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            chunks: vec![body.into()],
            end: End::Close,
        }
    }
    pub(crate) fn status(status: u16, headers: Vec<(&'static str, String)>, body: &str) -> Self {
        Reply {
            status,
            headers,
            chunks: vec![body.as_bytes().to_vec()],
            end: End::Close,
        }
    }
}

pub(crate) struct Recorded {
    pub(crate) path: String,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) body: Value,
}

#[derive(Default)]
pub(crate) struct MockState {
    pub(crate) replies: Mutex<VecDeque<Reply>>,
    pub(crate) requests: Mutex<Vec<Recorded>>,
}

pub(crate) struct Mock {
    pub(crate) addr: SocketAddr,
    pub(crate) state: Arc<MockState>,
}

impl Mock {
    pub(crate) fn requests(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.state.requests.lock().unwrap()
    }
    pub(crate) fn count(&self) -> usize {
        self.requests().len()
    }
    pub(crate) fn body(&self, i: usize) -> Value {
        self.requests()[i].body.clone()
    }
}

pub(crate) async fn handler(
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

pub(crate) async fn serve(replies: Vec<Reply>) -> Mock {
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

/// The captured streams kept in this repository (their provenance and licenses are in
/// `tests/fixtures/llm/README.md`).
pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llm");

pub(crate) fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{FIXTURES}/{path}");
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

// ---------------------------------------------------------------- providers

pub(crate) fn provider_with(
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

pub(crate) fn provider(name: &str, mock: &Mock) -> Arc<dyn Provider> {
    provider_with(name, mock, |_| {})
}

pub(crate) fn simple_request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        system: "You are Shard.".into(),
        messages: vec![std::sync::Arc::new(Message {
            id: "m1".into(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: "hi".into() }],
        })],
        tools: Vec::new().into(),
        max_output_tokens: None,
        reasoning_effort: None,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
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
pub(crate) struct Folded {
    pub(crate) events: Vec<StreamEvent>,
    pub(crate) blocks: BTreeMap<u32, Block>,
    pub(crate) usage: Option<Usage>,
    pub(crate) stop: Option<StopReason>,
    pub(crate) retries: Vec<(u32, u64, String)>,
    pub(crate) error: Option<ProviderError>,
}

impl Folded {
    pub(crate) fn text(&self, i: u32) -> &str {
        match self.blocks.get(&i) {
            Some(Block::Text(t)) => t,
            other => panic!("block {i} is not text: {other:?}"),
        }
    }
    pub(crate) fn tool(&self, i: u32) -> (&str, &str, Value) {
        match self.blocks.get(&i) {
            Some(Block::Tool { id, name, args }) => {
                (id, name, serde_json::from_str(args).unwrap_or(Value::Null))
            }
            other => panic!("block {i} is not a tool call: {other:?}"),
        }
    }
}

pub(crate) async fn collect(p: &Arc<dyn Provider>, req: ModelRequest) -> Folded {
    collect_with(p, req, CancellationToken::new()).await
}

pub(crate) async fn collect_with(
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

pub(crate) async fn replay(name: &str, path: &str, model: &str) -> Folded {
    let mock = serve(vec![Reply::sse(fixture(path))]).await;
    let f = collect(&provider(name, &mock), simple_request(model)).await;
    assert_eq!(mock.count(), 1, "{path}: unexpected retries");
    f
}

pub(crate) fn usage(
    input: u64,
    output: u64,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        ..Usage::default()
    }
}
