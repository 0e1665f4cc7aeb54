//! Tool results as a person reads them, shared by every terminal printer (the terminal
//! client, `shard run`, `shard attach`): path lists like `ls`, trees like `tree`, the
//! `subagent` tool's JSON as one card per run, a `[subagent report]` message as a notice,
//! and a short title for a tool call (`edit notes.txt`, `bash: cargo test`). Everything
//! here is plain text; the caller sanitizes and colours it. The browser client has the
//! same rules in web/render.js.

use serde_json::{Map, Value};
use shard_protocol::types::{
    PathKind, PathListEntry, RenderDescriptor, ToolResultContent, TreeNode,
};

use crate::view::ToolCallView;

/// One subagent run as a card: who, how it stands, what it said, what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCard {
    /// The run's alias (or its name when it has none).
    pub alias: String,
    /// `queued`, `active`, `completed`, `failed`, …
    pub state: String,
    /// The child's final answer, when it finished with one.
    pub final_text: Option<String>,
    /// `1200 in · 80 out`, when the daemon reported usage.
    pub usage: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

impl RunCard {
    /// The card's first line: `◆ alias · state · usage`.
    pub fn head(&self) -> String {
        let mut s = format!("◆ {} · {}", self.alias, self.state);
        if let Some(u) = &self.usage {
            s.push_str(" · ");
            s.push_str(u);
        }
        s
    }

    /// Whether the state is a failure of some kind (for colour).
    pub fn failed(&self) -> bool {
        matches!(
            self.state.as_str(),
            "failed" | "timed_out" | "cancelled" | "interrupted"
        )
    }
}

/// Prefix the daemon gives a completion report it sends the parent as a message.
pub const REPORT_PREFIX: &str = "[subagent report]";

/// A `[subagent report]` user message as a card, or None for any other text.
pub fn subagent_report(text: &str) -> Option<RunCard> {
    let rest = text.strip_prefix(REPORT_PREFIX)?;
    let v: Value = serde_json::from_str(rest.trim()).ok()?;
    card(v.get("subagent_report")?)
}

/// The cards of a `subagent` tool result (create, wait, status, relaunch), or None when
/// the text is not such a response (an error message, another tool's output).
pub fn subagent_cards(tool: &str, text: &str) -> Option<Vec<RunCard>> {
    if tool != "subagent" {
        return None;
    }
    let v: Value = serde_json::from_str(text.trim()).ok()?;
    let mut runs: Vec<&Value> = Vec::new();
    if let Some(rs) = v.get("runs").and_then(Value::as_array) {
        runs.extend(rs);
    }
    if let Some(r) = v.get("run").filter(|r| r.is_object()) {
        runs.push(r);
    }
    if let Some(agents) = v.get("agents").and_then(Value::as_array) {
        for a in agents {
            match a.get("run").filter(|r| r.is_object()) {
                Some(r) => runs.push(r),
                None => runs.push(a),
            }
        }
    }
    // A relaunch answers with the run's own fields at the top level.
    if runs.is_empty() && v.get("run_id").is_some() && v.get("state").is_some() {
        runs.push(&v);
    }
    let cards: Vec<RunCard> = runs.into_iter().filter_map(card).collect();
    (!cards.is_empty()).then_some(cards)
}

fn card(r: &Value) -> Option<RunCard> {
    let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
    let alias = s("alias")
        .or_else(|| s("display_name"))
        .or_else(|| s("name"))
        .or_else(|| s("agent_id"))?;
    let state = s("state").unwrap_or_else(|| "unknown".into());
    let usage = r.get("usage").and_then(|u| {
        let input = u.get("input").and_then(Value::as_u64)?;
        let output = u.get("output").and_then(Value::as_u64)?;
        Some(format!("{input} in · {output} out"))
    });
    Some(RunCard {
        alias,
        state,
        final_text: s("final_text").filter(|t| !t.trim().is_empty()),
        usage,
        error: s("error").filter(|t| !t.trim().is_empty()),
    })
}

/// A card as plain lines: its head, then its error and final text indented.
pub fn card_lines(c: &RunCard) -> Vec<String> {
    let mut v = vec![c.head()];
    for t in [&c.error, &c.final_text].into_iter().flatten() {
        v.extend(t.lines().map(|l| format!("  {l}")));
    }
    v
}

/// The lines a line-oriented printer (`shard run`, `shard attach`) shows under a finished
/// call whose result has a shape of its own: a listing, a tree, subagent cards, images.
/// Empty for plain text, which such printers summarize by its first line.
pub fn structured_lines(call: &ToolCallView) -> Vec<String> {
    let Some(r) = &call.result else {
        return Vec::new();
    };
    let mut out = match &r.render {
        Some(RenderDescriptor::PathList { paths }) => path_list_lines(paths),
        Some(RenderDescriptor::Tree { root }) => tree_lines(root),
        _ => match &r.content {
            ToolResultContent::Text { text } if !r.is_error => subagent_cards(&call.name, text)
                .map(|cs| cs.iter().flat_map(card_lines).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        },
    };
    out.extend(r.images.iter().map(|i| image_line(&i.mime_type, &i.data)));
    if let ToolResultContent::Image { data, mime_type } = &r.content {
        out.push(image_line(mime_type, data));
    }
    out
}

/// `[image image/png, 1234 bytes]`: an image a terminal does not paint, named.
pub fn image_line(mime_type: &str, base64: &str) -> String {
    format!("[image {mime_type}, {} bytes]", base64.len() * 3 / 4)
}

/// Who answered a request, from `permission_resolved.source`, as a person says it: the
/// daemon writes `client-N (a terminal)` or `client-N (browser brw-…)`; the part in
/// parentheses is the name. Headless answers and older daemons' bare `client-N` pass as
/// they are.
pub fn answered_by(source: Option<&str>) -> String {
    let Some(s) = source else {
        return "a client".into();
    };
    match s.split_once(" (") {
        Some((conn, rest)) if conn.starts_with("client-") && rest.ends_with(')') => {
            rest[..rest.len() - 1].to_string()
        }
        _ => s.to_string(),
    }
}

/// What a client says when a request it showed was answered by someone else: the request,
/// the answer given and who gave it, e.g. `permission for write: “Allow once”, answered by
/// browser brw-9`. `pending` is the request as it was shown (read before the resolution
/// removes it from the view); `resolved` is the `permission_resolved` / `ui_resolved`.
pub fn answered_elsewhere(
    pending: &crate::view::Pending,
    resolved: &shard_protocol::Event,
) -> String {
    use shard_protocol::{Event, PermissionAnswer};
    let (title, answer, source) = match (pending, resolved) {
        (crate::view::Pending::Permission(p), Event::PermissionResolved(r)) => {
            let answer = match &r.answer {
                PermissionAnswer::Choice { choice_id } => p
                    .choices
                    .iter()
                    .flatten()
                    .find(|c| &c.id == choice_id)
                    .map(|c| c.label.clone())
                    .unwrap_or_else(|| choice_id.clone()),
                PermissionAnswer::Decision { decision } => serde_json::to_value(decision)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            };
            (
                format!("permission for {}", p.tool_name),
                answer,
                r.source.as_deref(),
            )
        }
        (crate::view::Pending::Ui(u), Event::UiResolved(r)) => {
            let answer = match &r.value {
                Value::Null => "dismissed".to_string(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let title = u.title.clone().unwrap_or_else(|| "question".into());
            (title, answer, None)
        }
        _ => return String::new(),
    };
    let who = match source {
        Some(_) => answered_by(source),
        None => "another client".into(),
    };
    if answer.is_empty() {
        format!("{title}: answered by {who}")
    } else {
        format!("{title}: “{answer}”, answered by {who}")
    }
}

/// A path list as `ls -p` prints it: one entry a line, directories ending in `/`, a hint
/// (size, match count) after two spaces.
pub fn path_list_lines(paths: &[PathListEntry]) -> Vec<String> {
    paths
        .iter()
        .map(|p| {
            let mut s = p.path.clone();
            if p.kind == PathKind::Dir && !s.ends_with('/') {
                s.push('/');
            }
            if let Some(h) = &p.hint {
                s.push_str("  ");
                s.push_str(h);
            }
            s
        })
        .collect()
}

/// A tree as `tree` prints it: the root, then `├── ` / `└── ` branches.
pub fn tree_lines(root: &TreeNode) -> Vec<String> {
    let mut out = vec![node_name(root)];
    tree_children(root, "", &mut out);
    out
}

fn node_name(n: &TreeNode) -> String {
    match n.kind {
        PathKind::Dir if !n.name.ends_with('/') => format!("{}/", n.name),
        _ => n.name.clone(),
    }
}

fn tree_children(n: &TreeNode, prefix: &str, out: &mut Vec<String>) {
    let kids = n.children.as_deref().unwrap_or_default();
    for (i, k) in kids.iter().enumerate() {
        let last = i + 1 == kids.len();
        out.push(format!(
            "{prefix}{}{}",
            if last { "└── " } else { "├── " },
            node_name(k)
        ));
        let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
        tree_children(k, &deeper, out);
    }
}

/// A short title for a tool call: `edit notes.txt`, `bash: cargo test`, `grep TODO`,
/// `subagent create review`. Falls back to the name and a cut of the JSON arguments.
pub fn tool_title(name: &str, args: &Map<String, Value>) -> String {
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .map(|v| v.lines().next().unwrap_or("").to_string())
    };
    let title = match name {
        "bash" => s("command").map(|c| format!("bash: {c}")),
        "subagent" => s("action").map(|a| {
            let what = s("name")
                .or_else(|| s("handle"))
                .or_else(|| {
                    args.get("tasks")
                        .and_then(Value::as_array)
                        .map(|t| format!("{} tasks", t.len()))
                })
                .or_else(|| s("task").map(|t| cut(&t, 40)));
            match what {
                Some(w) => format!("subagent {a} {w}"),
                None => format!("subagent {a}"),
            }
        }),
        _ => [
            "path",
            "file_path",
            "pattern",
            "url",
            "query",
            "command",
            "question",
        ]
        .iter()
        .find_map(|k| s(k))
        .map(|v| format!("{name} {v}")),
    };
    title.unwrap_or_else(|| {
        if args.is_empty() {
            name.to_string()
        } else {
            format!(
                "{name} {}",
                cut(&Value::Object(args.clone()).to_string(), 80)
            )
        }
    })
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tree_reads_like_tree() {
        let root: TreeNode =
            serde_json::from_value(json!({"name": ".", "kind": "dir", "children": [
                {"name": "src", "kind": "dir", "children": [{"name": "main.rs", "kind": "file"}]},
                {"name": "README.md", "kind": "file"}
            ]}))
            .unwrap();
        assert_eq!(
            tree_lines(&root),
            vec!["./", "├── src/", "│   └── main.rs", "└── README.md"]
        );
    }

    #[test]
    fn a_path_list_reads_like_ls() {
        let p: Vec<PathListEntry> = serde_json::from_value(json!([
            {"path": "src", "kind": "dir"}, {"path": "a.rs", "kind": "file", "hint": "3 matches"}
        ]))
        .unwrap();
        assert_eq!(path_list_lines(&p), vec!["src/", "a.rs  3 matches"]);
    }

    #[test]
    fn subagent_results_become_cards_and_other_text_does_not() {
        let create = json!({"job_id": "job-1", "runs": [
            {"job_id": "job-1", "run_id": "run-1", "index": 0, "name": "general", "alias": "review", "state": "queued"}
        ]})
        .to_string();
        let cards = subagent_cards("subagent", &create).unwrap();
        assert_eq!(cards[0].head(), "◆ review · queued");
        let status = json!({"agents": [{"agent_id": "agent-1", "alias": "review", "run":
            {"job_id": "j", "run_id": "r", "index": 0, "name": "general", "alias": "review",
             "state": "completed", "final_text": "All good.", "usage": {"input": 1200, "output": 80}}}]})
        .to_string();
        let c = &subagent_cards("subagent", &status).unwrap()[0];
        assert_eq!(c.head(), "◆ review · completed · 1200 in · 80 out");
        assert_eq!(c.final_text.as_deref(), Some("All good."));
        assert!(subagent_cards("subagent", "Error: no such run").is_none());
        assert!(subagent_cards("bash", &create).is_none());
    }

    #[test]
    fn a_report_is_a_card() {
        let text = format!(
            "{REPORT_PREFIX}\n{}",
            json!({"subagent_report": {"job_id": "j", "run_id": "r", "alias": "snake_case_name",
                "state": "failed", "error": "boom"}})
        );
        let c = subagent_report(&text).unwrap();
        assert_eq!(c.alias, "snake_case_name");
        assert!(c.failed());
        assert_eq!(c.error.as_deref(), Some("boom"));
        assert!(subagent_report("hello").is_none());
    }

    #[test]
    fn who_answered_is_named() {
        assert_eq!(answered_by(Some("client-4 (a terminal)")), "a terminal");
        assert_eq!(
            answered_by(Some("client-5 (browser brw-9)")),
            "browser brw-9"
        );
        assert_eq!(answered_by(Some("client-6")), "client-6");
        assert_eq!(answered_by(Some("headless")), "headless");
        assert_eq!(answered_by(None), "a client");
    }

    #[test]
    fn an_answer_given_elsewhere_names_the_request_the_answer_and_who() {
        let ev = |v: Value| -> shard_protocol::Event { serde_json::from_value(v).unwrap() };
        let perm = ev(json!({"type": "permission_request", "request_id": "p1",
            "tool_name": "write", "input": {}, "prompt": "Allow write?", "options": ["allow", "deny"],
            "choices": [{"id": "allow", "label": "Allow once", "intent": "allow"}]}));
        let shard_protocol::Event::PermissionRequest(p) = perm else {
            panic!()
        };
        let pending = crate::view::Pending::Permission(p);
        let by_browser = ev(json!({"type": "permission_resolved", "request_id": "p1",
            "choice_id": "allow", "source": "client-5 (browser brw-9)"}));
        assert_eq!(
            answered_elsewhere(&pending, &by_browser),
            "permission for write: “Allow once”, answered by browser brw-9"
        );
        let denied = ev(json!({"type": "permission_resolved", "request_id": "p1",
            "decision": "deny", "source": "client-4 (a terminal)"}));
        assert_eq!(
            answered_elsewhere(&pending, &denied),
            "permission for write: “deny”, answered by a terminal"
        );
        let ui = ev(
            json!({"type": "ui_request", "request_id": "u1", "kind": "select",
            "title": "Colour?", "options": ["red"]}),
        );
        let shard_protocol::Event::UiRequest(u) = ui else {
            panic!()
        };
        let pending = crate::view::Pending::Ui(u);
        let picked = ev(json!({"type": "ui_resolved", "request_id": "u1", "value": "red"}));
        assert_eq!(
            answered_elsewhere(&pending, &picked),
            "Colour?: “red”, answered by another client"
        );
    }

    #[test]
    fn titles_are_short() {
        let a = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            tool_title("edit", &a(json!({"path": "notes.txt", "old_string": "x"}))),
            "edit notes.txt"
        );
        assert_eq!(
            tool_title("bash", &a(json!({"command": "cargo test\necho"}))),
            "bash: cargo test"
        );
        assert_eq!(
            tool_title(
                "subagent",
                &a(json!({"action": "create", "name": "review", "task": "t"}))
            ),
            "subagent create review"
        );
        assert_eq!(tool_title("todo", &Map::new()), "todo");
    }
}
