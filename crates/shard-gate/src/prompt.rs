//! What a person sees before saying yes: the permission request's `prompt`
//! shows the whole command (every line, so a client printing only `prompt` cannot hide a
//! second one), the resolved path when it differs from what the model wrote, and for the
//! signature choice exactly what it would allow from now on.

use serde_json::Value;
use shard_protocol::event::PermissionRequest;
use shard_protocol::ids;
use shard_protocol::types::{
    ChoiceIntent, DetailFormat, PermissionChoice, PermissionDecision, PermissionDetail,
};

use crate::grants::{self, Grant};
use crate::paths::{ResolvedPath, Workspace};
use crate::signature;

/// Choice id: allow this call once.
pub const CHOICE_ALLOW: &str = "allow";
/// Choice id: always allow exactly this call.
pub const CHOICE_ALWAYS: &str = "allow_always";
/// Choice id: always allow this command signature.
pub const CHOICE_SIGNATURE: &str = "allow_signature";
/// Choice id: deny.
pub const CHOICE_DENY: &str = "deny";

/// Builds the request for a call and the signature grant its signature choice records.
pub fn request(
    tool: &str,
    args: &Value,
    path: Option<&ResolvedPath>,
    outside: bool,
    trusted: Option<&str>,
    workspace: &Workspace,
) -> (PermissionRequest, Option<Grant>) {
    let command = args.get("command").and_then(Value::as_str);
    let raw_path = args.get("path").and_then(Value::as_str);
    let signature = match (tool, command, trusted) {
        ("bash", Some(c), None) => grants::signature_grant(c),
        _ => None,
    };
    let mut details = Vec::new();
    let mut prompt = match (tool, command) {
        ("bash", Some(cmd)) => {
            details.push(PermissionDetail {
                label: Some("command".into()),
                value: cmd.to_string(),
                format: Some(DetailFormat::Command),
            });
            let lines: Vec<&str> = cmd.lines().collect();
            let head = if lines.len() > 1 {
                format!("Allow bash to run this {}-line command?", lines.len())
            } else {
                "Allow bash to run this command?".to_string()
            };
            let mut s = head;
            for l in &lines {
                s.push_str("\n  │ ");
                s.push_str(l);
            }
            if lines.is_empty() {
                s.push_str("\n  │ ");
            }
            s
        }
        _ => format!("Allow {tool}?"),
    };
    if let Some(p) = path {
        let shown = p.shown();
        let written = raw_path.unwrap_or(".");
        let where_ = if outside {
            " (outside the workspace)"
        } else {
            ""
        };
        prompt = format!("Allow {tool} on {shown}{where_}?");
        if written != shown && written != p.abs.to_string_lossy() {
            prompt.push_str(&format!(
                "\n  the model wrote `{written}`, which resolves to {}",
                p.abs.display()
            ));
        }
        details.push(PermissionDetail {
            label: Some("path".into()),
            value: p.abs.to_string_lossy().into_owned(),
            format: Some(DetailFormat::Path),
        });
        if !workspace.roots().is_empty() && outside {
            details.push(PermissionDetail {
                label: Some("workspace".into()),
                value: workspace
                    .roots()
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                format: Some(DetailFormat::Text),
            });
        }
    }
    if let Some(what) = trusted {
        prompt.push_str(&format!(
            "\n  It may write `{what}`, a file Shard or git trusts (hooks, git configuration, \
             MCP servers, agent definitions): it is asked every time and cannot be allowed \
             always."
        ));
    }
    let mut choices = vec![PermissionChoice {
        id: CHOICE_ALLOW.into(),
        label: "Allow once".into(),
        description: None,
        accelerator: Some("y".into()),
        intent: ChoiceIntent::Allow,
    }];
    if trusted.is_none() {
        choices.push(PermissionChoice {
            id: CHOICE_ALWAYS.into(),
            label: "Always allow exactly this".into(),
            description: Some(
                "Remembered for this project: the same tool with exactly these arguments".into(),
            ),
            accelerator: Some("a".into()),
            intent: ChoiceIntent::Persist,
        });
    }
    if let Some(Grant::BashSignature { commands, .. }) = &signature {
        let scope = signature::describe_scope(commands);
        prompt.push_str("\n\"Always allow this command signature\" would allow: ");
        prompt.push_str(&scope);
        choices.push(PermissionChoice {
            id: CHOICE_SIGNATURE.into(),
            label: "Always allow this command signature".into(),
            description: Some(scope),
            accelerator: Some("s".into()),
            intent: ChoiceIntent::Persist,
        });
    }
    choices.push(PermissionChoice {
        id: CHOICE_DENY.into(),
        label: "Deny".into(),
        description: None,
        accelerator: Some("n".into()),
        intent: ChoiceIntent::Deny,
    });
    let request = PermissionRequest {
        agent_id: None,
        request_id: ids::new_id(ids::REQUEST),
        tool_name: tool.to_string(),
        input: args.clone(),
        prompt,
        options: if trusted.is_some() {
            vec![PermissionDecision::Allow, PermissionDecision::Deny]
        } else {
            vec![
                PermissionDecision::Allow,
                PermissionDecision::AllowAlways,
                PermissionDecision::Deny,
            ]
        },
        details: if details.is_empty() {
            None
        } else {
            Some(details)
        },
        choices: Some(choices),
        tool_call_id: None,
    };
    (request, signature)
}
