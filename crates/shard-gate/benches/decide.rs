//! The gate's cost per call: `Gate::decide` for typical calls (a short and a long `bash`
//! line against deny rules and grants, a `read` inside the workspace, a `read` through
//! `..`, a granted `cp` whose operands are checked for trusted files) and `Gate::visible`, which `grep`/`find`/`ls` call for every entry.
//!
//! Run: `cargo bench -p shard-gate --bench decide`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use serde_json::json;
use shard_gate::config::{PermissionsConfig, RuleConfig};
use shard_gate::gate::{AnyMode, Call, Gate};
use shard_gate::grants;

fn rule(tool: &str, command: Option<&str>, path: Option<&str>) -> RuleConfig {
    RuleConfig {
        tool: tool.into(),
        command: command.map(Into::into),
        path: path.map(Into::into),
    }
}

fn time(label: &str, iters: u32, mut f: impl FnMut()) {
    for _ in 0..iters / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    let per = start.elapsed() / iters;
    println!("{label:<48} {:>8.2} µs", per.as_nanos() as f64 / 1000.0);
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let home = root.join("home");
    let cwd = home.join("project");
    std::fs::create_dir_all(cwd.join("src/deep/er/still")).unwrap();
    let perms = PermissionsConfig {
        deny: vec![
            rule("bash", Some("git push*"), None),
            rule("bash", Some("rm -rf /*"), None),
            rule("read", None, Some("secrets/**")),
            rule("*", None, Some("**/*.pem")),
        ],
        additional_directories: vec![],
        allow_secret: vec![],
    };
    let gate = Gate::new(&perms, &[], &cwd, &home.join(".shard"), Some(&home)).unwrap();
    let grants = vec![
        grants::signature_grant("cargo test -q 2>&1 | tail -n 5").unwrap(),
        grants::signature_grant("git status").unwrap(),
        grants::signature_grant("cp -r src/deep out").unwrap(),
    ];
    let cases = [
        (
            "bash: granted `cargo test -q 2>&1 | tail -n 5`",
            "bash",
            false,
            json!({"command": "cargo test -q 2>&1 | tail -n 5"}),
        ),
        (
            "bash: long line with wrappers (asks)",
            "bash",
            false,
            json!({"command": "cd src && timeout 60 env -- nice -n 5 cargo build --release 2>&1 | grep -v warning | head -n 40; git status -s && find . -name '*.rs' -exec wc -l {} + | sort -n | tail -n 3"}),
        ),
        (
            "bash: granted `cp -r src/deep out` (trusted-file check)",
            "bash",
            false,
            json!({"command": "cp -r src/deep out"}),
        ),
        (
            "read: src/deep/er/still/file.rs",
            "read",
            true,
            json!({"path": "src/deep/er/still/file.rs"}),
        ),
        (
            "read: src/../src/deep/./er/still/file.rs",
            "read",
            true,
            json!({"path": "src/../src/deep/./er/still/file.rs"}),
        ),
    ];
    for (label, tool, read_only, args) in &cases {
        time(label, 20_000, || {
            black_box(gate.decide(
                Call {
                    tool,
                    read_only: *read_only,
                    args,
                },
                &AnyMode,
                &grants,
                None,
            ));
        });
    }
    let entry = cwd.join("src/deep/er/still/file.rs");
    time(
        "visible: one grep/find entry (not a symlink)",
        200_000,
        || {
            black_box(gate.visible("grep", &entry, false));
        },
    );
    let plain = Gate::new(
        &PermissionsConfig::default(),
        &[],
        &cwd,
        &home.join(".shard"),
        Some(&home),
    )
    .unwrap();
    time("visible: same, no deny rules", 200_000, || {
        black_box(plain.visible("grep", &entry, false));
    });
}
