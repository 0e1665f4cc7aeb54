//! Registry, schemas and argument errors.

use serde_json::json;
use shard_tools::{ToolRegistry, builtin_tools};

use crate::common::*;

#[test]
fn builtin_tools_in_order_with_plain_schemas() {
    let names: Vec<_> = builtin_tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(
        names,
        ["read", "write", "edit", "bash", "grep", "find", "ls"]
    );
    for t in builtin_tools() {
        let s = t.input_schema();
        let raw = s.to_string();
        assert_eq!(s["type"], "object", "{}: {raw}", t.name());
        for bad in ["$ref", "$defs", "$schema", "null", "oneOf", "anyOf"] {
            assert!(!raw.contains(bad), "{} schema has {bad}: {raw}", t.name());
        }
        assert!(!t.description().is_empty());
    }
    let ro: Vec<_> = builtin_tools()
        .iter()
        .filter(|t| t.is_read_only(&json!({})))
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(ro, ["read", "grep", "find", "ls"]);
    let edit = tool("edit").input_schema();
    assert_eq!(
        edit["properties"]["edits"]["items"]["properties"]["old_string"]["type"],
        "string"
    );
    assert_eq!(edit["required"], json!(["path"]));
}

#[test]
fn registry_lookup_specs_and_retain() {
    let mut reg = ToolRegistry::builtin();
    assert_eq!(reg.len(), 7);
    assert!(reg.get("grep").is_some());
    assert!(reg.get("nope").is_none());
    reg.retain(&["ls", "read"]);
    assert_eq!(reg.names(), ["read", "ls"]);
    let specs = reg.specs();
    assert_eq!(specs[1].name, "ls");
    assert_eq!(specs[1].schema["type"], "object");
    let removed = reg.remove("read").unwrap();
    assert_eq!(removed.name(), "read");
    assert!(reg.remove("read").is_none());
    assert_eq!(reg.names(), ["ls"]);
}

/// A tool discovered at run time: owned name and description, and a classification
/// that depends on the call's arguments.
struct Dynamic {
    name: String,
    description: String,
}

impl shard_tools::Tool for Dynamic {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn is_read_only(&self, args: &serde_json::Value) -> bool {
        args.get("action").and_then(|a| a.as_str()) == Some("get")
    }
    fn execute<'a>(
        &'a self,
        _args: serde_json::Value,
        _ctx: &'a shard_tools::ToolContext,
    ) -> futures::future::BoxFuture<'a, shard_tools::ToolOutput> {
        Box::pin(async { shard_tools::ToolOutput::text("ok") })
    }
}

#[test]
fn runtime_tools_join_replace_in_place_and_classify_per_call() {
    let mut reg = ToolRegistry::builtin();
    let name = format!("mcp__{}", "kv");
    reg.insert(std::sync::Arc::new(Dynamic {
        name: name.clone(),
        description: "first".into(),
    }));
    reg.insert(std::sync::Arc::new(Dynamic {
        name: "mcp__other".into(),
        description: "other".into(),
    }));
    // Re-announced: replaced in place, the order (and so the model's cache prefix) kept.
    reg.insert(std::sync::Arc::new(Dynamic {
        name: name.clone(),
        description: "second".into(),
    }));
    assert_eq!(&reg.names()[7..], [name.as_str(), "mcp__other"]);
    assert_eq!(reg.specs()[7].description, "second");
    let kv = reg.get(&name).unwrap();
    assert!(kv.is_read_only(&json!({"action": "get"})));
    assert!(!kv.is_read_only(&json!({"action": "set"})));
    reg.remove(&name);
    assert!(reg.get(&name).is_none());
    assert_eq!(reg.len(), 8);
}

#[tokio::test]
async fn invalid_arguments_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = call("read", json!({"path": "x", "limit": "ten"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("`limit`"), "{}", text(&out));
    let out = call(
        "edit",
        json!({"path": "x", "edits": [{"old_string": "a"}]}),
        &c,
    )
    .await;
    assert!(out.is_error);
    let t = text(&out);
    assert!(t.contains("edits[0]") && t.contains("new_string"), "{t}");
    let out = call("bash", json!({}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("command"), "{}", text(&out));
}
