//! Daemon benchmark against the real `shard` binary (path in `SHARD_BIN`): deltas per
//! second delivered to 1, 10 and 100 attached clients, attach→`sync` latency, daemon
//! memory per live agent, how many live agents the machine holds, `agent.list` latency
//! while 20 `agent.create` are starting, and memory per idle connection. Run through
//! `bench/daemon/run.sh`; prints one JSON object per figure.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use shard_client::Client;
use shard_protocol::command::AttachRole;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

mod support;
use support::{
    create_req, fanout, line_stream, percentile, raw_attach, rss_kb, start_daemon, stop_daemon,
    streaming_agent,
};

async fn fanout_bench(bin: &Path, clients: usize, deltas: u64) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut d = start_daemon(bin, home.path());
    let (c, id) = streaming_agent(home.path(), deltas).await;
    let mut readers = Vec::new();
    for _ in 0..clients {
        readers.push(line_stream(raw_attach(home.path(), &id).await));
    }
    let (total, last) = fanout(&c, &id, readers).await;
    stop_daemon(home.path(), &mut d).await;
    json!({"bench":"fanout","clients":clients,"deltas_per_client":deltas,"delivered":total,
           "seconds":last.as_secs_f64(),"deltas_per_sec_aggregate":(total as f64/last.as_secs_f64()).round(),
           "deltas_per_sec_per_client":((total as f64/clients as f64)/last.as_secs_f64()).round()})
}

async fn attach_latency(bin: &Path, rounds: usize) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut d = start_daemon(bin, home.path());
    let script = home.path().join("s.json");
    std::fs::write(
        &script,
        br#"{"turns":[{"steps":[{"text":"hello there"}]}]}"#,
    )
    .unwrap();
    let c = Client::connect_daemon(home.path()).await.unwrap();
    let id = c.create(create_req(home.path(), &script)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(serde_json::from_value(json!({"type":"prompt","agent_id":id,"message":"go"})).unwrap())
        .await
        .unwrap();
    while let Some(ev) = e.recv().await {
        if ev.type_name() == "turn_end" {
            break;
        }
    }
    let mut samples = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let _lines = raw_attach(home.path(), &id).await;
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    stop_daemon(home.path(), &mut d).await;
    json!({"bench":"attach_to_sync_ms","rounds":rounds,"p50":samples[rounds/2],"p99":samples[(rounds*99/100).min(rounds-1)],"max":samples[rounds-1],
           "note":"connect + hello + agent.attach + request_sync round trip to a live idle Runtime"})
}

async fn many_agents(bin: &Path, count: usize) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut d = start_daemon(bin, home.path());
    let script = home.path().join("s.json");
    std::fs::write(&script, br#"{"turns":[]}"#).unwrap();
    let c = Client::connect_daemon(home.path()).await.unwrap();
    let base = rss_kb(d.id());
    let t = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..count {
        ids.push(c.create(create_req(home.path(), &script)).await.unwrap());
    }
    let create_s = t.elapsed().as_secs_f64();
    let after = rss_kb(d.id());
    let mut runtime_kb = 0;
    for id in &ids {
        // The Runtime's pid is in its session's lock (the runtime state file exists only
        // while tool process groups do).
        let manifest: Value = serde_json::from_slice(
            &std::fs::read(home.path().join("manifests").join(format!("{id}.json")))
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        let lock = manifest["session_id"].as_str().and_then(|sid| {
            std::fs::read_to_string(home.path().join("sessions").join(sid).join("session.lock"))
                .ok()
        });
        if let Some(pid) = lock.and_then(|l| l.trim().parse::<u32>().ok()) {
            runtime_kb += rss_kb(pid);
        }
    }
    let live = c
        .list()
        .await
        .unwrap()
        .iter()
        .filter(|a| format!("{:?}", a.runtime_state) == "Running")
        .count();
    stop_daemon(home.path(), &mut d).await;
    json!({"bench":"live_agents","agents":count,"live":live,"create_seconds_total":create_s,
           "daemon_rss_kb_before":base,"daemon_rss_kb_after":after,
           "daemon_kb_per_agent":((after.saturating_sub(base)) as f64/count as f64).round(),
           "runtime_rss_kb_avg":(runtime_kb as f64/count as f64).round()})
}

/// One `agent.list` round trip on a raw connection, in ms.
async fn list_rtt(lines: &mut tokio::io::Lines<BufReader<UnixStream>>, n: usize) -> f64 {
    let t = Instant::now();
    let line = format!("{}\n", json!({"type":"agent.list","id":format!("l{n}")}));
    lines
        .get_mut()
        .get_mut()
        .write_all(line.as_bytes())
        .await
        .unwrap();
    while let Some(l) = lines.next_line().await.unwrap() {
        if l.contains("\"type\":\"response\"") && l.contains(&format!("\"l{n}\"")) {
            break;
        }
    }
    t.elapsed().as_secs_f64() * 1000.0
}

async fn raw_conn(home: &Path) -> tokio::io::Lines<BufReader<UnixStream>> {
    let s = UnixStream::connect(home.join("daemon.sock")).await.unwrap();
    let mut lines = BufReader::new(s).lines();
    lines.next_line().await.unwrap(); // hello
    lines
}

async fn list_under_create_load(bin: &Path, creates: usize) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut d = start_daemon(bin, home.path());
    let script = home.path().join("s.json");
    std::fs::write(&script, br#"{"turns":[]}"#).unwrap();
    let mut probe = raw_conn(home.path()).await;
    // Idle baseline.
    let mut idle = Vec::new();
    for n in 0..200 {
        idle.push(list_rtt(&mut probe, n).await);
    }
    idle.sort_by(|a, b| a.partial_cmp(b).unwrap());
    // All creates on one connection at once: the worst case for a read loop that waits.
    let c = std::sync::Arc::new(Client::connect_daemon(home.path()).await.unwrap());
    let t = Instant::now();
    let tasks: Vec<_> = (0..creates)
        .map(|_| {
            let c = std::sync::Arc::clone(&c);
            let req = create_req(home.path(), &script);
            tokio::spawn(async move { c.create(req).await.unwrap() })
        })
        .collect();
    let mut samples = Vec::new();
    let mut n = 1000;
    while !tasks.iter().all(|t| t.is_finished()) {
        samples.push(list_rtt(&mut probe, n).await);
        n += 1;
    }
    let create_s = t.elapsed().as_secs_f64();
    for t in tasks {
        t.await.unwrap();
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    stop_daemon(home.path(), &mut d).await;
    json!({"bench":"agent_list_ms_while_creating","creates":creates,"samples":samples.len(),
           "p50":percentile(&samples,50),"p99":percentile(&samples,99),"max":samples[samples.len()-1],
           "idle_p50":percentile(&idle,50),"idle_p99":percentile(&idle,99),
           "creates_seconds":create_s})
}

async fn idle_connections(bin: &Path, count: usize) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut d = start_daemon(bin, home.path());
    let mut probe = raw_conn(home.path()).await;
    list_rtt(&mut probe, 0).await;
    let base = rss_kb(d.id());
    let mut held = Vec::with_capacity(count);
    let t = Instant::now();
    for _ in 0..count {
        held.push(raw_conn(home.path()).await);
    }
    let open_s = t.elapsed().as_secs_f64();
    let after = rss_kb(d.id());
    let mut rtts: Vec<f64> = Vec::new();
    for n in 1..=100 {
        rtts.push(list_rtt(&mut probe, n).await);
    }
    rtts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    drop(held);
    stop_daemon(home.path(), &mut d).await;
    json!({"bench":"idle_connections","connections":count,"open_seconds":open_s,
           "daemon_rss_kb_before":base,"daemon_rss_kb_after":after,
           "kb_per_connection":((after.saturating_sub(base)) as f64/count as f64*10.0).round()/10.0,
           "list_p99_ms_while_held":percentile(&rtts,99)})
}

fn main() {
    let bin =
        PathBuf::from(std::env::var("SHARD_BIN").expect("set SHARD_BIN to a built shard binary"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let deltas: u64 = std::env::var("DELTAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let agents: usize = std::env::var("AGENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let only = std::env::var("ONLY").unwrap_or_default();
    rt.block_on(async {
        if only.is_empty() || only == "core" {
            println!("{}", list_under_create_load(&bin, 20).await);
            println!("{}", idle_connections(&bin, 2000).await);
        }
        if only == "core" {
            return;
        }
        for clients in [1, 10, 100] {
            println!("{}", fanout_bench(&bin, clients, deltas).await);
        }
        println!("{}", attach_latency(&bin, 200).await);
        println!("{}", many_agents(&bin, agents).await);
    });
}
