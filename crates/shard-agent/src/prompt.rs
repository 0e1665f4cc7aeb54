//! The system prompt (docs/architecture.md#context): Shard's base prompt + the mode's addition +
//! project instructions (`AGENTS.md` from the repository root down to the cwd) +
//! environment facts. Kept short: every byte is sent on every call.

use std::path::Path;

use crate::modes::Mode;

const BASE: &str = "You are Shard, a coding agent working in the user's repository through tools. \
Read before you change; make the smallest exact edit that does the job; run the project's \
checks when you change code; say plainly what you did and what you could not do. Tool paths \
are relative to the working directory unless absolute.";

/// Reads the `AGENTS.md` files that apply to `cwd`, outermost first.
pub fn project_instructions(cwd: &Path) -> String {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            break;
        }
    }
    if !dirs.last().is_some_and(|d| d.join(".git").exists()) {
        // Outside a repository only the cwd's own file applies.
        dirs.truncate(1);
    }
    let mut out = String::new();
    for dir in dirs.iter().rev() {
        let path = dir.join("AGENTS.md");
        if let Ok(text) = std::fs::read_to_string(&path) {
            out.push_str(&format!(
                "\n\n# Instructions from {}\n\n{}",
                path.display(),
                text.trim()
            ));
        }
    }
    out
}

/// The full system prompt for one call.
pub fn system_prompt(
    base_override: Option<&str>,
    cwd: &Path,
    mode: &Mode,
    instructions: &str,
) -> String {
    let mut s = String::with_capacity(1024 + instructions.len());
    s.push_str(base_override.unwrap_or(BASE));
    if let Some(extra) = &mode.prompt {
        s.push_str("\n\n");
        s.push_str(extra);
    }
    s.push_str(instructions);
    s.push_str(&format!(
        "\n\nEnvironment: working directory {}; platform {} {}; today is {}.",
        cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        today()
    ));
    s
}

fn today() -> String {
    let days = shard_protocol::ids::now_millis() / 86_400_000;
    // Civil-from-days (proleptic Gregorian), valid for any date after 1970.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}
