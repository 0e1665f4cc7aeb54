//! More agents on one host than one SSH connection carries: sshd refuses a session past
//! its `MaxSessions` (default 10), so the daemon opens another connection when one is
//! full, and learns a lower limit from a refusal. A settings check that passed is not
//! made again on the same connection.

use super::*;

/// The shared connections the daemon holds to its hosts.
fn masters(w: &World) -> Vec<u32> {
    processes_with(&format!("-M -S {}", w.home().join("hosts").display()))
}

/// Creates `n` agents on the host, prompts each, and checks each answers.
async fn all_answer(w: &World, c: &Client, n: usize) {
    let s = w.script("s.json", json!([{"steps":[{"text":"here"}]}]));
    let mut agents = Vec::new();
    for _ in 0..n {
        let a = c.create(w.create(&s)).await.unwrap();
        let (_, ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
        agents.push((a, ev));
    }
    for (a, _) in &agents {
        c.call(prompt(a, "hi")).await.unwrap();
    }
    for (a, ev) in &mut agents {
        let done = until(ev, |v| v["type"] == "message_complete").await;
        assert_eq!(done["message"]["content"][0]["text"], "here", "agent {a}");
    }
    // Every one of them is live on the host at once.
    let ours = w.far_runtimes();
    let tops = ours
        .iter()
        .filter(|p| sshd::parent_of(**p).is_none_or(|pp| !ours.contains(&pp)))
        .count();
    assert_eq!(tops, n, "one far Runtime per agent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_agents_on_a_host_with_sshds_default_max_sessions_all_answer() {
    let Some((w, d)) = ssh_world() else { return };
    let c = d.client().await;
    all_answer(&w, &c, 12).await;
    // Nine agents beside its own session fill a connection; the rest take a second.
    assert_eq!(masters(&w).len(), 2, "{:?}", masters(&w));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_allowing_fewer_sessions_than_configured_is_learned_and_every_agent_answers() {
    // max_sessions is left at 10, the server allows 4: the fourth agent on the first
    // connection is refused, and the daemon moves it to another.
    let Some(w) = World::with_sshd_sessions(Some(4)) else {
        return;
    };
    w.ssh_host(SHARD, "");
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    all_answer(&w, &c, 7).await;
    assert!(masters(&w).len() >= 2, "{:?}", masters(&w));
    let log = std::fs::read_to_string(w.home().join("daemon-test.log")).unwrap();
    assert!(log.contains("refused a session"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_sessions_sets_how_many_agents_share_a_connection() {
    let Some(w) = World::with_sshd() else { return };
    w.ssh_host(SHARD, "max_sessions = 3\n");
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    all_answer(&w, &c, 5).await;
    // Two agents beside its own session on each connection.
    assert_eq!(masters(&w).len(), 3, "{:?}", masters(&w));
    // Nothing the server refused: the limit was known.
    let log = std::fs::read_to_string(w.home().join("daemon-test.log")).unwrap();
    assert!(!log.contains("refused a session"), "{log}");
}

/// The settings check costs a session on the host: one that passed is not made again
/// on the same connection, while another choice is checked, and refused, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_settings_check_is_made_once_per_connection() {
    let w = World::new();
    let log = w.wrapper_host();
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let s = w.script("s.json", json!([{"steps":[{"text":"ok"}]}]));
    for _ in 0..3 {
        c.create(w.create(&s)).await.unwrap();
    }
    let checks = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| l.contains("--check"))
            .count()
    };
    assert_eq!(checks(), 1, "{}", std::fs::read_to_string(&log).unwrap());
    // Another model is another check; a mode the host refuses is still refused.
    let other = w.script("other.json", json!([{"steps":[{"text":"ok"}]}]));
    c.create(w.create(&other)).await.unwrap();
    assert_eq!(checks(), 2);
    let mut bad = w.create(&s);
    bad.mode = Some("no-such-mode".into());
    let e = c.create(bad).await.unwrap_err().to_string();
    assert!(e.contains("on host box"), "{e}");
    assert_eq!(checks(), 3);
}
