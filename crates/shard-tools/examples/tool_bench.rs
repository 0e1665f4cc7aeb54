#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Benchmark driver for bench/tools/run.sh: runs the `grep` or `find` tool once,
//! in-process, and prints its output like a command-line tool would; or generates the
//! deterministic benchmark tree.
//!
//! Usage:
//!   tool_bench gen ROOT FILES
//!   tool_bench grep ROOT PATTERN LIMIT [content|files|count]
//!   tool_bench find ROOT GLOB LIMIT

use std::io::Write;
use std::path::Path;

use serde_json::json;
use shard_protocol::types::ToolResultContent;
use shard_tools::{ToolContext, ToolRegistry};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") => generate(Path::new(&args[1]), args[2].parse().unwrap()),
        Some("grep") => {
            let output = args.get(4).cloned().unwrap_or_else(|| "content".into());
            run(
                &args[1],
                "grep",
                json!({"pattern": args[2], "limit": args[3].parse::<u64>().unwrap(), "output": output}),
            )
        }
        Some("find") => run(
            &args[1],
            "find",
            json!({"pattern": args[2], "limit": args[3].parse::<u64>().unwrap()}),
        ),
        _ => {
            eprintln!(
                "usage: tool_bench gen ROOT FILES | grep ROOT PATTERN LIMIT [MODE] | find ROOT GLOB LIMIT"
            );
            std::process::exit(2);
        }
    }
}

fn run(root: &str, tool: &str, args: serde_json::Value) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let root = std::fs::canonicalize(root).unwrap();
    let ctx = ToolContext::new(root, std::env::temp_dir().join("shard-tools-bench-out"));
    let tool = ToolRegistry::builtin().get(tool).unwrap();
    let out = rt.block_on(tool.execute(args, &ctx));
    let text = match out.content {
        ToolResultContent::Text { text } => text,
        ToolResultContent::Error { message } => {
            eprintln!("{message}");
            std::process::exit(1);
        }
        other => format!("{other:?}"),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
}

/// A small deterministic generator (64-bit LCG), so every run builds the same tree.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() as usize) % items.len()]
    }
}

const WORDS: &[&str] = &[
    "let", "value", "config", "result", "match", "return", "self", "buffer", "index", "error",
    "handle", "request", "response", "stream", "count", "update", "render", "parse", "token",
    "state",
];

/// `files` files in 10 x 10 x N directories, ~1 KB each, in four languages; one in a
/// hundred ignored by .gitignore (under `target/`), as in a real repository.
fn generate(root: &Path, files: usize) {
    let done = root.join(".generated");
    if std::fs::read_to_string(&done).ok().as_deref() == Some(&files.to_string()) {
        eprintln!("tree at {} already generated", root.display());
        return;
    }
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n*.tmp\n").unwrap();
    let mut rng = Lcg(42);
    let exts = ["rs", "py", "ts", "md"];
    let per_dir = 100;
    for i in 0..files {
        let d = i / per_dir;
        let top = if i % 100 == 99 {
            "target".to_string()
        } else {
            format!("pkg{}", d % 10)
        };
        let dir = root
            .join(top)
            .join(format!("mod{}", (d / 10) % 10))
            .join(format!("part{}", d / 100));
        if i % per_dir == 0 || i % 100 == 99 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let ext = exts[i % exts.len()];
        let mut body = String::with_capacity(1200);
        let lines = 20 + (rng.next() % 20) as usize;
        for l in 0..lines {
            let a = rng.pick(WORDS);
            let b = rng.pick(WORDS);
            let c = rng.pick(WORDS);
            if l == 3 && i % 50 == 0 {
                body.push_str(&format!(
                    "fn {a}_handler({b}: {c}) -> Result<(), Error> {{\n"
                ));
            } else if i % 1000 == 500 && l == 5 {
                body.push_str("    // RARE_NEEDLE_7f3a: tracking issue\n");
            } else {
                body.push_str(&format!("    {a} {b} = {c}({l}); // {i}\n"));
            }
        }
        std::fs::write(dir.join(format!("file{i}.{ext}")), body).unwrap();
    }
    std::fs::write(&done, files.to_string()).unwrap();
}
