//! A permission request's details as the line-mode clients (`shard run`, `shard attach`
//! on a pipe) print them: a diff coloured like `git diff` when the output is a terminal,
//! long ones cut to a screenful with the rest one key away; a detail that only repeats
//! the prompt (a bash command already shown there) printed once.

use shard_client::sanitize::strip;
use shard_protocol::event::PermissionRequest;
use shard_protocol::types::DetailFormat;

/// Diff lines printed before the rest waits behind "show the whole diff".
pub const DIFF_PREVIEW_LINES: usize = 40;

/// The lines to print under a request's prompt, and whether a diff was cut short.
pub fn detail_lines(p: &PermissionRequest, color: bool) -> (Vec<String>, bool) {
    let prompt = strip(&p.prompt);
    let mut out = Vec::new();
    let mut cut = false;
    for d in p.details.iter().flatten() {
        let value = strip(&d.value);
        if repeats_prompt(d.format, &value, &prompt) {
            continue;
        }
        let label = d.label.as_deref().map(strip).unwrap_or_default();
        if d.format == Some(DetailFormat::Diff) {
            let lines: Vec<&str> = value.lines().collect();
            out.push(format!("  {label}:"));
            for l in lines.iter().take(DIFF_PREVIEW_LINES) {
                out.push(format!("    {}", diff_line(l, color)));
            }
            if lines.len() > DIFF_PREVIEW_LINES {
                cut = true;
                out.push(format!(
                    "    … {} more lines (v shows the whole diff)",
                    lines.len() - DIFF_PREVIEW_LINES
                ));
            }
            continue;
        }
        for (i, l) in value.lines().enumerate() {
            if i == 0 && !label.is_empty() {
                out.push(format!("  {label}: {l}"));
            } else {
                out.push(format!("    {l}"));
            }
        }
    }
    (out, cut)
}

/// The whole diff of a request, coloured when asked (for the pager).
pub fn full_diff(p: &PermissionRequest, color: bool) -> String {
    let mut s = String::new();
    for d in p.details.iter().flatten() {
        if d.format == Some(DetailFormat::Diff) {
            for l in strip(&d.value).lines() {
                s.push_str(&diff_line(l, color));
                s.push('\n');
            }
        }
    }
    s
}

/// True when a command detail says nothing the prompt does not already show.
pub fn repeats_prompt(format: Option<DetailFormat>, value: &str, prompt: &str) -> bool {
    format == Some(DetailFormat::Command)
        && !value.trim().is_empty()
        && value.lines().all(|l| prompt.contains(l))
}

/// One diff line with `git diff`'s colours: additions green, removals red, hunk headers cyan.
pub fn diff_line(l: &str, color: bool) -> String {
    if !color {
        return l.to_string();
    }
    let code = if l.starts_with("+++") || l.starts_with("---") {
        "1"
    } else if l.starts_with('+') {
        "32"
    } else if l.starts_with('-') {
        "31"
    } else if l.starts_with("@@") {
        "36"
    } else {
        return l.to_string();
    };
    format!("\x1b[{code}m{l}\x1b[0m")
}

/// Shows `text` in `$PAGER` (else `less -R`), or prints it when no pager runs.
pub fn page(text: &str, out: &mut impl std::io::Write) {
    use std::io::Write as _;
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less -R".into());
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&pager)
        .stdin(std::process::Stdio::piped())
        .spawn();
    if let Ok(mut child) = child {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(text.as_bytes());
        }
        if child.wait().is_ok_and(|s| s.success()) {
            return;
        }
    }
    let _ = out.write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use shard_protocol::types::PermissionDetail;

    fn request(details: Vec<PermissionDetail>, prompt: &str) -> PermissionRequest {
        PermissionRequest {
            agent_id: None,
            request_id: "r".into(),
            tool_name: "edit".into(),
            input: serde_json::json!({}),
            prompt: prompt.into(),
            options: vec![],
            details: Some(details),
            choices: None,
        }
    }

    #[test]
    fn a_diff_is_coloured_and_cut_to_a_screenful() {
        let body: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let p = request(
            vec![PermissionDetail {
                label: Some("diff".into()),
                value: format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n{body}"),
                format: Some(DetailFormat::Diff),
            }],
            "Allow edit on x?",
        );
        let (lines, cut) = detail_lines(&p, true);
        assert!(cut);
        assert!(
            lines.iter().any(|l| l.contains("\x1b[31m-old")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.contains("\x1b[32m+line 0")));
        assert!(lines.last().unwrap().contains("64 more lines"), "{lines:?}");
        let (plain, _) = detail_lines(&p, false);
        assert!(plain.iter().all(|l| !l.contains('\x1b')));
        assert_eq!(full_diff(&p, false).lines().count(), 104);
    }

    #[test]
    fn a_command_already_in_the_prompt_is_not_repeated() {
        let p = request(
            vec![PermissionDetail {
                label: Some("command".into()),
                value: "cargo test".into(),
                format: Some(DetailFormat::Command),
            }],
            "Allow bash to run this command?\n  │ cargo test",
        );
        assert!(detail_lines(&p, false).0.is_empty());
    }
}
