//! What agents on hosts cannot do yet, each refused with one line saying so: the
//! `subagent` tool (a Runtime there has no way back to the daemon) and workspaces on a
//! host.

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
    assert!(
        result
            .to_string()
            .contains("`subagent` is not available for agents on hosts yet"),
        "{result}"
    );
    // The turn goes on: the model reads the error and answers.
    until(&mut ev, |v| v["type"] == "message_complete").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_on_a_host_is_one_clear_error() {
    let Some((w, d)) = ssh_world() else { return };
    let c = d.client().await;
    let create: Command = serde_json::from_value(json!({
        "type": "workspace.create", "cwd": w.work().display().to_string(), "host": "box"
    }))
    .unwrap();
    let e = c.call(create).await.unwrap_err().to_string();
    assert!(
        e.contains("workspaces are not available for agents on hosts yet"),
        "{e}"
    );
    // The line client says the same, and nothing was made.
    let out = StdCommand::new(SHARD)
        .args(["ws", "create", "--host", "box", "--cwd", "/srv/code"])
        .env("SHARD_HOME", w.home())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("workspaces are not available for agents on hosts yet"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        !w.home().join("workspaces").exists()
            || std::fs::read_dir(w.home().join("workspaces"))
                .unwrap()
                .next()
                .is_none()
    );
}
