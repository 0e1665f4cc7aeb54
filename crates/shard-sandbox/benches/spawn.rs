//! Cost of the sandbox per spawn: `bash -c true` direct (with the parent-death signal,
//! as `bash` spawns with the sandbox off) vs sandboxed per call, with the network on and
//! off, vs a call of the sandbox zygote (the normal path); and both ways in with the
//! working directory a git checkout, whose git dir each call sees through a view that is
//! written back when the call ends.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::sync::OnceLock;

use shard_sandbox::{Sandbox, SandboxConfig, SandboxSpec};

fn main() {
    divan::main();
}

struct Fixture {
    dir: tempfile::TempDir,
    on: Sandbox,
    off_net: Sandbox,
    /// With `repo` (a git checkout) as its root.
    in_repo: Sandbox,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(git.success());
        let spec = SandboxSpec {
            workspace_roots: vec![dir.path().join("work")],
            hidden: vec![dir.path().join("home")],
            visible: Vec::new(),
            temp_parent: None,
            probe_cache: None,
        };
        let on = Sandbox::new(&SandboxConfig::default(), spec.clone()).unwrap();
        let off_net = Sandbox::new(
            &SandboxConfig {
                network: false,
                ..SandboxConfig::default()
            },
            spec.clone(),
        )
        .unwrap();
        let in_repo = Sandbox::new(
            &SandboxConfig::default(),
            SandboxSpec {
                workspace_roots: vec![repo],
                ..spec
            },
        )
        .unwrap();
        Fixture {
            dir,
            on,
            off_net,
            in_repo,
        }
    })
}

fn command() -> Command {
    use std::os::unix::process::CommandExt;
    let f = fixture();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg("true")
        .current_dir(f.dir.path().join("work"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0);
    cmd
}

#[divan::bench(sample_count = 200)]
fn direct() {
    let mut cmd = command();
    // As `bash` spawns with the sandbox off: a pre_exec arms the parent-death signal.
    shard_sandbox::set_parent_death_signal(&mut cmd);
    assert!(cmd.status().unwrap().success());
}

#[divan::bench(sample_count = 200)]
fn sandboxed() {
    let f = fixture();
    let mut cmd = command();
    f.on.apply(&mut cmd, &f.dir.path().join("work")).unwrap();
    assert!(cmd.status().unwrap().success());
}

#[divan::bench(sample_count = 200)]
fn sandboxed_no_network() {
    let f = fixture();
    let mut cmd = command();
    f.off_net
        .apply(&mut cmd, &f.dir.path().join("work"))
        .unwrap();
    assert!(cmd.status().unwrap().success());
}

#[divan::bench(sample_count = 200)]
fn sandboxed_in_a_repository() {
    let f = fixture();
    let mut cmd = command();
    let repo = f.dir.path().join("repo");
    cmd.current_dir(&repo);
    f.in_repo.apply(&mut cmd, &repo).unwrap();
    assert!(cmd.status().unwrap().success());
}

#[divan::bench(sample_count = 200)]
fn zygote() {
    let f = fixture();
    zygote_call(&f.on, "work");
}

#[divan::bench(sample_count = 200)]
fn zygote_in_a_repository() {
    let f = fixture();
    zygote_call(&f.in_repo, "repo");
}

/// One `bash -c true` call through the zygote of `sb`, in the fixture's folder `cwd`.
fn zygote_call(sb: &Sandbox, cwd: &str) {
    use std::io::Read;
    let f = fixture();
    shard_sandbox::zygote::set_program(env!("CARGO_BIN_EXE_shard-sandbox-zygote").into());
    let z = sb
        .zygote(std::time::Duration::from_secs(30))
        .expect("the zygote did not start");
    let null = || std::os::fd::OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
    let call = z
        .spawn(shard_sandbox::zygote::CallRequest {
            argv: vec!["bash".into(), "-c".into(), "true".into()],
            env: std::env::vars_os().collect(),
            cwd: f.dir.path().join(cwd),
            stdin: null(),
            stdout: null(),
            stderr: null(),
        })
        .unwrap();
    let first_is_start = call.init().is_none();
    let mut channel = call.into_channel();
    let mut rec = [0u8; shard_sandbox::zygote::RECORD_LEN];
    if first_is_start {
        channel.read_exact(&mut rec).unwrap();
    }
    channel.read_exact(&mut rec).unwrap();
    assert_eq!(
        shard_sandbox::zygote::parse_report(&rec),
        shard_sandbox::zygote::Report::Exited(0)
    );
}

#[divan::bench(sample_count = 20)]
fn prepare_and_probe() {
    let f = fixture();
    let spec = SandboxSpec {
        workspace_roots: vec![f.dir.path().join("work")],
        hidden: vec![f.dir.path().join("home")],
        visible: Vec::new(),
        temp_parent: None,
        probe_cache: None,
    };
    divan::black_box(Sandbox::new(&SandboxConfig::default(), spec).unwrap());
}
