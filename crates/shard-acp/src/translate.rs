//! Pure translations between ACP v1 and the Shard protocol: prompt blocks in, tool calls
//! and history out. No I/O here, so every mapping is unit-tested.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Map, Value};
use shard_protocol::types::{
    ChoiceIntent, ContentBlock, Image, ImageTag, Message, PermissionChoice, PermissionDecision,
    Role, ToolResultContent,
};

use crate::rpc::RpcError;

/// A prompt in Shard's terms: the message text and its images.
#[derive(Debug, Default, PartialEq)]
pub struct ShardPrompt {
    /// The message.
    pub text: String,
    /// Attached images.
    pub images: Vec<Image>,
}

/// Turns ACP prompt blocks into one Shard prompt. Text blocks are joined as they come;
/// a `resource_link` becomes a markdown link the model can follow with its tools; an
/// embedded text resource is appended as a `<context ref=…>` block, so the editor's
/// (possibly unsaved) text is what the model reads.
pub fn prompt(blocks: &[acp::ContentBlock]) -> Result<ShardPrompt, RpcError> {
    let mut out = ShardPrompt::default();
    let mut context = String::new();
    for (i, block) in blocks.iter().enumerate() {
        match block {
            acp::ContentBlock::Text(t) => out.text.push_str(&t.text),
            acp::ContentBlock::Image(img) => out.images.push(Image {
                kind: ImageTag::Image,
                data: img.data.clone(),
                mime_type: img.mime_type.clone(),
            }),
            acp::ContentBlock::ResourceLink(link) => {
                out.text
                    .push_str(&format!(" [@{}]({}) ", link.name, link.uri));
            }
            acp::ContentBlock::Resource(res) => match &res.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    context.push_str(&format!(
                        "\n<context ref=\"{}\">\n{}\n</context>",
                        t.uri, t.text
                    ));
                }
                acp::EmbeddedResourceResource::BlobResourceContents(b) => {
                    match b.mime_type.as_deref() {
                        Some(m) if m.starts_with("image/") => out.images.push(Image {
                            kind: ImageTag::Image,
                            data: b.blob.clone(),
                            mime_type: m.to_string(),
                        }),
                        _ => context.push_str(&format!(
                            "\n<context ref=\"{}\">(binary content not shown)</context>",
                            b.uri
                        )),
                    }
                }
                _ => {
                    return Err(RpcError::invalid_params(
                        &format!("prompt[{i}].resource"),
                        "session/prompt: unsupported embedded resource",
                    ));
                }
            },
            acp::ContentBlock::Audio(_) => {
                return Err(RpcError::invalid_params(
                    &format!("prompt[{i}]"),
                    "session/prompt: audio is not supported (promptCapabilities.audio is false)",
                ));
            }
            _ => {
                return Err(RpcError::invalid_params(
                    &format!("prompt[{i}].type"),
                    "session/prompt: unsupported content block",
                ));
            }
        }
    }
    out.text.push_str(&context);
    if out.text.trim().is_empty() && out.images.is_empty() {
        return Err(RpcError::invalid_params(
            "prompt",
            "session/prompt: the prompt is empty",
        ));
    }
    Ok(out)
}

/// The ACP kind of a Shard tool.
pub fn tool_kind(name: &str) -> acp::ToolKind {
    match name {
        "read" | "ls" | "recall" => acp::ToolKind::Read,
        "write" | "edit" => acp::ToolKind::Edit,
        "bash" => acp::ToolKind::Execute,
        "grep" | "find" => acp::ToolKind::Search,
        "fetch" | "web_fetch" => acp::ToolKind::Fetch,
        "ask_user" | "subagent" => acp::ToolKind::Think,
        _ => acp::ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn clip(s: &str, max: usize) -> String {
    let one_line = s.lines().next().unwrap_or("");
    if one_line.chars().count() <= max && one_line.len() == s.len() {
        return s.to_string();
    }
    let mut t: String = one_line.chars().take(max).collect();
    t.push('…');
    t
}

/// A one-line title for a tool call, from its name and (once known) its arguments.
pub fn tool_title(name: &str, args: &Map<String, Value>) -> String {
    let path = arg(args, "path");
    match name {
        "read" => match (path, args.get("offset").and_then(Value::as_u64)) {
            (Some(p), Some(o)) => format!("Read {p} (from line {o})"),
            (Some(p), None) => format!("Read {p}"),
            _ => "Read".into(),
        },
        "write" => path.map_or("Write".into(), |p| format!("Write {p}")),
        "edit" => path.map_or("Edit".into(), |p| format!("Edit {p}")),
        "bash" => {
            arg(args, "command").map_or("Run a command".into(), |c| format!("`{}`", clip(c, 120)))
        }
        "grep" => match (arg(args, "pattern"), path) {
            (Some(q), Some(p)) => format!("Search `{}` in {p}", clip(q, 80)),
            (Some(q), None) => format!("Search `{}`", clip(q, 80)),
            _ => "Search".into(),
        },
        "find" => {
            arg(args, "pattern").map_or("Find files".into(), |q| format!("Find `{}`", clip(q, 80)))
        }
        "ls" => format!("List {}", path.unwrap_or(".")),
        _ => match name.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
            Some((server, tool)) => format!("{server}: {tool}"),
            None => name.to_string(),
        },
    }
}

/// An absolute path for the editor: relative paths are taken from the session's cwd.
pub fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// The files a tool call touches, for the editor's "follow the agent".
pub fn tool_locations(
    cwd: &Path,
    name: &str,
    args: &Map<String, Value>,
) -> Vec<acp::ToolCallLocation> {
    let Some(path) = arg(args, "path") else {
        return Vec::new();
    };
    let mut loc = acp::ToolCallLocation::new(absolute(cwd, path));
    if name == "read"
        && let Some(line) = args.get("offset").and_then(Value::as_u64)
    {
        loc = loc.line(u32::try_from(line).ok());
    }
    vec![loc]
}

/// The diffs an edit or a write will make, known from its arguments alone (the whole
/// new file for a write; each replaced snippet for an edit).
pub fn tool_diffs(cwd: &Path, name: &str, args: &Map<String, Value>) -> Vec<acp::ToolCallContent> {
    let Some(path) = arg(args, "path").map(|p| absolute(cwd, p)) else {
        return Vec::new();
    };
    let diff = |old: Option<&str>, new: &str| {
        acp::ToolCallContent::Diff(
            acp::Diff::new(path.clone(), new.to_string()).old_text(old.map(str::to_string)),
        )
    };
    match name {
        "write" => arg(args, "content")
            .map(|c| vec![diff(None, c)])
            .unwrap_or_default(),
        "edit" => {
            let mut out = Vec::new();
            if let (Some(o), Some(n)) = (arg(args, "old_string"), arg(args, "new_string")) {
                out.push(diff(Some(o), n));
            }
            if let Some(Value::Array(edits)) = args.get("edits") {
                for e in edits {
                    if let (Some(o), Some(n)) = (
                        e.get("old_string").and_then(Value::as_str),
                        e.get("new_string").and_then(Value::as_str),
                    ) {
                        out.push(diff(Some(o), n));
                    }
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

fn text_content(text: impl Into<String>) -> acp::ToolCallContent {
    acp::ToolCallContent::Content(acp::Content::new(acp::ContentBlock::Text(
        acp::TextContent::new(text),
    )))
}

/// What a finished tool call shows: the diffs of an edit or write (and any error), the
/// output of everything else — a shell's inside a console block.
pub fn tool_result_content(
    cwd: &Path,
    name: &str,
    args: &Map<String, Value>,
    result: &ToolResultContent,
    is_error: bool,
) -> Vec<acp::ToolCallContent> {
    let mut out = tool_diffs(cwd, name, args);
    let text = match result {
        ToolResultContent::Text { text } => text.clone(),
        ToolResultContent::Json { value } => {
            serde_json::to_string_pretty(value).unwrap_or_default()
        }
        ToolResultContent::Error { message } => message.clone(),
        ToolResultContent::Image { data, mime_type } => {
            out.push(acp::ToolCallContent::Content(acp::Content::new(
                acp::ContentBlock::Image(acp::ImageContent::new(data.clone(), mime_type.clone())),
            )));
            return out;
        }
    };
    if !out.is_empty() && !is_error {
        return out;
    }
    if name == "bash" && !is_error {
        out.push(text_content(format!(
            "```console\n{}\n```",
            text.trim_end()
        )));
    } else if !text.is_empty() {
        out.push(text_content(text));
    }
    out
}

/// The raw output of a tool for `rawOutput`.
pub fn raw_output(result: &ToolResultContent) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// ACP permission options for a Shard request: its server-built choices when it has
/// them (allow → allow_once, persist → allow_always named by what is remembered, deny
/// → reject_once), else the legacy decisions.
pub fn permission_options(
    choices: Option<&[PermissionChoice]>,
    legacy: &[PermissionDecision],
) -> Vec<acp::PermissionOption> {
    if let Some(choices) = choices.filter(|c| !c.is_empty()) {
        return choices
            .iter()
            .map(|c| {
                let kind = match c.intent {
                    ChoiceIntent::Allow => acp::PermissionOptionKind::AllowOnce,
                    ChoiceIntent::Persist => acp::PermissionOptionKind::AllowAlways,
                    ChoiceIntent::Deny => acp::PermissionOptionKind::RejectOnce,
                };
                let name = match (&c.intent, &c.description) {
                    (ChoiceIntent::Persist, Some(d)) if !c.label.contains(d.as_str()) => {
                        format!("{} — {d}", c.label)
                    }
                    _ => c.label.clone(),
                };
                acp::PermissionOption::new(c.id.clone(), name, kind)
            })
            .collect();
    }
    legacy
        .iter()
        .map(|d| match d {
            PermissionDecision::Allow => acp::PermissionOption::new(
                "allow",
                "Allow once",
                acp::PermissionOptionKind::AllowOnce,
            ),
            PermissionDecision::AllowAlways => acp::PermissionOption::new(
                "allow_always",
                "Always allow this exact request",
                acp::PermissionOptionKind::AllowAlways,
            ),
            PermissionDecision::Deny => {
                acp::PermissionOption::new("deny", "Deny", acp::PermissionOptionKind::RejectOnce)
            }
        })
        .collect()
}

/// How a Shard turn's `stop_reason` reads in ACP; `None` for a turn that failed.
pub fn stop_reason(shard: Option<&str>) -> Option<acp::StopReason> {
    Some(match shard {
        Some("max_tokens") => acp::StopReason::MaxTokens,
        Some("refusal") => acp::StopReason::Refusal,
        Some("aborted") => acp::StopReason::Cancelled,
        Some("error") => return None,
        _ => acp::StopReason::EndTurn,
    })
}

/// The updates that replay a conversation into an editor: user and agent text, thoughts,
/// and each tool call once, completed (or failed) with its result.
pub fn replay(cwd: &Path, messages: &[Message]) -> Vec<acp::SessionUpdate> {
    let mut results = std::collections::HashMap::new();
    for m in messages {
        for b in &m.content {
            if let ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
                ..
            } = b
            {
                results.insert(tool_call_id.clone(), (content, is_error.unwrap_or(false)));
            }
        }
    }
    let chunk =
        |text: &str| acp::ContentChunk::new(acp::ContentBlock::Text(acp::TextContent::new(text)));
    let mut out = Vec::new();
    for m in messages {
        for b in &m.content {
            match (b, &m.role) {
                (ContentBlock::Text { text }, Role::User) => {
                    out.push(acp::SessionUpdate::UserMessageChunk(chunk(text)));
                }
                (ContentBlock::Image { data, mime_type }, Role::User) => {
                    out.push(acp::SessionUpdate::UserMessageChunk(
                        acp::ContentChunk::new(acp::ContentBlock::Image(acp::ImageContent::new(
                            data.clone(),
                            mime_type.clone(),
                        ))),
                    ));
                }
                (ContentBlock::Text { text }, Role::Assistant) => {
                    out.push(acp::SessionUpdate::AgentMessageChunk(chunk(text)));
                }
                (ContentBlock::Thinking { text, .. }, _) => {
                    out.push(acp::SessionUpdate::AgentThoughtChunk(chunk(text)));
                }
                (ContentBlock::ToolCall { id, name, args }, _) => {
                    let (status, content, raw) = match results.get(id) {
                        Some((r, err)) => (
                            if *err {
                                acp::ToolCallStatus::Failed
                            } else {
                                acp::ToolCallStatus::Completed
                            },
                            tool_result_content(cwd, name, args, r, *err),
                            Some(raw_output(r)),
                        ),
                        None => (acp::ToolCallStatus::Failed, Vec::new(), None),
                    };
                    out.push(acp::SessionUpdate::ToolCall(
                        acp::ToolCall::new(id.clone(), tool_title(name, args))
                            .kind(tool_kind(name))
                            .status(status)
                            .locations(tool_locations(cwd, name, args))
                            .raw_input(Value::Object(args.clone()))
                            .raw_output(raw)
                            .content(content),
                    ));
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn prompt_blocks_become_text_and_images() {
        let blocks: Vec<acp::ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "look at "},
            {"type": "resource_link", "name": "a.rs", "uri": "file:///w/a.rs"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}}
        ]))
        .unwrap();
        let p = prompt(&blocks).unwrap();
        assert!(p.text.starts_with("look at  [@a.rs](file:///w/a.rs) "));
        assert!(
            p.text
                .ends_with("<context ref=\"file:///w/b.rs\">\nfn b() {}\n</context>")
        );
        assert_eq!(p.images.len(), 1);
        assert_eq!(p.images[0].mime_type, "image/png");
    }

    #[test]
    fn audio_and_empty_prompts_are_refused_naming_the_field() {
        let blocks: Vec<acp::ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "x"},
            {"type": "audio", "data": "AA", "mimeType": "audio/wav"}
        ]))
        .unwrap();
        let e = prompt(&blocks).unwrap_err();
        assert_eq!(e.data, Some(json!({"field": "prompt[1]"})));
        assert!(prompt(&[]).is_err());
    }

    #[test]
    fn tools_get_kinds_titles_locations_and_diffs() {
        let cwd = Path::new("/w");
        let args = obj(json!({"path": "src/a.rs", "offset": 10}));
        assert_eq!(tool_kind("read"), acp::ToolKind::Read);
        assert_eq!(tool_title("read", &args), "Read src/a.rs (from line 10)");
        let locs = tool_locations(cwd, "read", &args);
        assert_eq!(locs[0].path, PathBuf::from("/w/src/a.rs"));
        assert_eq!(locs[0].line, Some(10));
        assert_eq!(tool_kind("bash"), acp::ToolKind::Execute);
        assert_eq!(
            tool_title("bash", &obj(json!({"command": "ls -l"}))),
            "`ls -l`"
        );
        assert_eq!(tool_title("mcp__time__now", &Map::new()), "time: now");
        let edit = obj(json!({"path": "/abs/x", "old_string": "a", "new_string": "b"}));
        let d = serde_json::to_value(tool_diffs(cwd, "edit", &edit)).unwrap();
        assert_eq!(
            d,
            json!([{"type": "diff", "path": "/abs/x", "oldText": "a", "newText": "b"}])
        );
        let write = obj(json!({"path": "n.txt", "content": "hi"}));
        let d = serde_json::to_value(tool_diffs(cwd, "write", &write)).unwrap();
        assert_eq!(
            d,
            json!([{"type": "diff", "path": "/w/n.txt", "newText": "hi"}])
        );
    }

    #[test]
    fn bash_output_is_a_console_block() {
        let c = tool_result_content(
            Path::new("/"),
            "bash",
            &obj(json!({"command": "echo hi"})),
            &ToolResultContent::Text {
                text: "hi\n".into(),
            },
            false,
        );
        let v = serde_json::to_value(c).unwrap();
        assert_eq!(v[0]["content"]["text"], "```console\nhi\n```");
    }

    #[test]
    fn permission_choices_map_to_option_kinds() {
        let choices = vec![
            PermissionChoice {
                id: "a".into(),
                label: "Allow".into(),
                description: None,
                accelerator: None,
                intent: ChoiceIntent::Allow,
            },
            PermissionChoice {
                id: "p".into(),
                label: "Always allow".into(),
                description: Some("`cargo test` in this project".into()),
                accelerator: None,
                intent: ChoiceIntent::Persist,
            },
            PermissionChoice {
                id: "d".into(),
                label: "Deny".into(),
                description: None,
                accelerator: None,
                intent: ChoiceIntent::Deny,
            },
        ];
        let v = serde_json::to_value(permission_options(Some(&choices), &[])).unwrap();
        assert_eq!(v[0]["kind"], "allow_once");
        assert_eq!(v[1]["kind"], "allow_always");
        assert_eq!(v[1]["name"], "Always allow — `cargo test` in this project");
        assert_eq!(v[1]["optionId"], "p");
        assert_eq!(v[2]["kind"], "reject_once");
        let v =
            serde_json::to_value(permission_options(None, &[PermissionDecision::Deny])).unwrap();
        assert_eq!(v[0]["optionId"], "deny");
    }

    #[test]
    fn stop_reasons_map() {
        assert_eq!(
            stop_reason(Some("end_turn")),
            Some(acp::StopReason::EndTurn)
        );
        assert_eq!(
            stop_reason(Some("max_tokens")),
            Some(acp::StopReason::MaxTokens)
        );
        assert_eq!(stop_reason(Some("refusal")), Some(acp::StopReason::Refusal));
        assert_eq!(
            stop_reason(Some("aborted")),
            Some(acp::StopReason::Cancelled)
        );
        assert_eq!(stop_reason(Some("error")), None);
    }

    #[test]
    fn replay_shows_messages_and_completed_tool_calls() {
        let messages: Vec<Message> = serde_json::from_value(json!([
            {"id": "m1", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"id": "m2", "role": "assistant", "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_call", "id": "t1", "name": "read", "args": {"path": "a"}}
            ]},
            {"id": "m3", "role": "user", "content": [
                {"type": "tool_result", "tool_call_id": "t1", "content": {"kind": "text", "text": "A"}}
            ]},
            {"id": "m4", "role": "assistant", "content": [{"type": "text", "text": "done"}]}
        ]))
        .unwrap();
        let v = serde_json::to_value(replay(Path::new("/w"), &messages)).unwrap();
        let kinds: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "agent_message_chunk"
            ]
        );
        assert_eq!(v[2]["status"], "completed");
        assert_eq!(v[2]["rawInput"], json!({"path": "a"}));
        assert_eq!(v[2]["locations"][0]["path"], "/w/a");
    }
}
