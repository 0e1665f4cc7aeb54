//! Prints what the tool definitions cost on every model request: bytes per tool and in
//! all, for each provider format, with and without `subagent` (offered under a daemon).
//!
//! Run: `cargo run -p shard-agent --example tool_bytes`.

use shard_agent::tool_budget::{BUDGET, measure, offered_tools};

fn main() {
    for with_subagent in [false, true] {
        let tools = offered_tools(with_subagent);
        let formats = measure(&tools);
        let label = if with_subagent {
            "with subagent (under a daemon)"
        } else {
            "without subagent (`shard run`, `shard agent`)"
        };
        println!("{} tools, {label}; budget {BUDGET} bytes", tools.len());
        print!("{:<12}", "tool");
        for f in &formats {
            print!(" {:>17}", f.format);
        }
        println!();
        for (i, tool) in tools.iter().enumerate() {
            print!("{:<12}", tool.name());
            for f in &formats {
                print!(" {:>17}", f.per_tool.get(i).map_or(0, |(_, n)| *n));
            }
            println!();
        }
        print!("{:<12}", "total");
        for f in &formats {
            print!(" {:>17}", f.total);
        }
        println!("\n");
    }
}
