//! What agents on hosts cannot do yet, refused with one line saying so: the `subagent`
//! tool (a Runtime there has no way back to the daemon). Workspaces on a host are built
//! (workspaces.rs).

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agents_subagent_call_is_one_clear_error() {
    let Some((w, d)) = ssh_world() else { return };
    let c = d.client().await;
    let s = w.script(
        "s.json",
        json!([{"steps":[
            {"tool_call":{"id":"s1","name":"subagent","args":{"action":"create","task":"help"}}},
            {"text":"done"}
        ]}]),
    );
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "delegate")).await.unwrap();
    let result = until(&mut ev, |v| v["type"] == "tool_result").await;
    assert_eq!(result["is_error"], true, "{result}");
    let said = strings(&result)
        .into_iter()
        .find(|s| s.contains("`subagent` is not available for agents on hosts yet"))
        .unwrap_or_else(|| panic!("{result}"));
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    // The turn goes on: the model reads the error and answers.
    until(&mut ev, |v| v["type"] == "message_complete").await;
}

/// Every string in `v`.
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}
