//! A local mock of the Anthropic and OpenAI HTTP APIs for process-level tests: it answers
//! each request with the next queued server-sent-event body (or a short text answer in the
//! caller's wire format when the queue is empty) and records every request body, so a
//! test can check exactly what a real `shard` process sent.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
struct State {
    replies: VecDeque<String>,
    seen: Vec<Seen>,
}

/// The running mock; it lives until the test process ends.
pub struct MockApi {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl MockApi {
    pub fn start(replies: Vec<String>) -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            seen: Vec::new(),
        }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        MockApi { url, state }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Environment pointing both built-in providers at this mock, with test keys.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("ANTHROPIC_BASE_URL".into(), self.url.clone()),
            ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
            ("OPENAI_BASE_URL".into(), format!("{}/v1", self.url)),
            ("OPENAI_API_KEY".into(), "sk-openai-test".into()),
        ]
    }
}

fn serve(conn: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut s = state.lock().unwrap();
        s.seen.push(Seen {
            path: path.clone(),
            body,
        });
        s.replies.pop_front()
    };
    let reply = reply.unwrap_or_else(|| {
        if path.contains("chat/completions") {
            openai_text("ok")
        } else {
            anthropic_text("ok")
        }
    });
    let mut conn = conn;
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        reply.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(reply.as_bytes());
    let _ = conn.flush();
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An Anthropic Messages stream answering `text`.
pub fn anthropic_text(text: &str) -> String {
    use serde_json::json;
    [
        event("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}})),
        event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}})),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

/// An Anthropic Messages stream calling `bash` with `command`.
pub fn anthropic_bash(call_id: &str, command: &str) -> String {
    anthropic_tool(call_id, "bash", serde_json::json!({"command": command}))
}

/// An Anthropic Messages stream calling tool `name` with `args`.
pub fn anthropic_tool(call_id: &str, name: &str, args: Value) -> String {
    use serde_json::json;
    let args = args.to_string();
    [
        event("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}})),
        event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}})),
        event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": args}})),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}})),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

/// An OpenAI Chat Completions stream answering `text`.
pub fn openai_text(text: &str) -> String {
    use serde_json::json;
    [
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]})
        ),
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        ),
        format!(
            "data: {}\n\n",
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
        ),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat()
}

/// Checks an Anthropic request body: every `tool_use` is answered by exactly one
/// `tool_result`, at the start of the very next (user) message.
pub fn assert_anthropic_pairs(body: &Value) {
    let messages = body["messages"].as_array().unwrap();
    let mut answered = std::collections::HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        let content = m["content"].as_array().cloned().unwrap_or_default();
        let uses: Vec<&str> = content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        if uses.is_empty() {
            continue;
        }
        let next = messages
            .get(i + 1)
            .unwrap_or_else(|| panic!("tool_use without a following message: {body}"));
        assert_eq!(next["role"], "user", "{body}");
        let next_content = next["content"].as_array().unwrap();
        let leading: Vec<&str> = next_content
            .iter()
            .take_while(|b| b["type"] == "tool_result")
            .map(|b| b["tool_use_id"].as_str().unwrap())
            .collect();
        assert_eq!(leading, uses, "results must come first, in order: {body}");
        for id in uses {
            assert!(answered.insert(id.to_string()), "answered twice: {id}");
        }
    }
    let results = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .count();
    assert_eq!(results, answered.len(), "a stray tool_result: {body}");
}
