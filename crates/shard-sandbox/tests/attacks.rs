//! Attack suite for the sandbox itself: a real `bash` spawned through [`Sandbox::apply`]
//! tries to get out.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../tests/support/skip.rs"]
mod skip;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use shard_sandbox::zygote::{
    self, Call, CallRequest, RECORD_LEN, Report, Zygote, parse_report, signal_record,
};
use shard_sandbox::{Sandbox, SandboxConfig, SandboxMode, SandboxSpec};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("home/config.toml"), "secret = 1\n").unwrap();
        Env { dir }
    }
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }
    fn sandbox(&self, config: SandboxConfig) -> Sandbox {
        self.sandbox_at(config, &self.work())
    }
    /// A sandbox whose one workspace root is `root`.
    fn sandbox_at(&self, config: SandboxConfig, root: &Path) -> Sandbox {
        Sandbox::new(
            &config,
            SandboxSpec {
                workspace_roots: vec![root.to_path_buf()],
                hidden: vec![self.home()],
                visible: Vec::new(),
                temp_parent: None,
                probe_cache: None,
            },
        )
        .unwrap()
    }
}

/// The two ways a command enters the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// Between fork and exec of the command ([`Sandbox::apply`]).
    PerCall,
    /// Forked by the zygote ([`Sandbox::zygote`]).
    Zygote,
}

/// Runs a test once per way in: `name::per_call` and `name::zygote`.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[test]
            fn per_call() {
                super::$name(super::Via::PerCall)
            }
            #[test]
            fn zygote() {
                super::$name(super::Via::Zygote)
            }
        }
    };
}

/// Repository files git trusts and writable roots taken from `.git` files.
#[path = "attacks/git.rs"]
mod git;

fn run(via: Via, sb: &Sandbox, cwd: &Path, script: &str) -> Output {
    match via {
        Via::PerCall => run_per_call(sb, cwd, script),
        Via::Zygote => {
            let (call, out) = start_in_zygote(sb, cwd, script);
            let mut channel = call.into_channel();
            let stdout = read_all(out);
            let status = match report(&mut channel) {
                Report::Exited(s) => std::process::ExitStatus::from_raw(s),
                other => panic!("the call failed: {other:?}"),
            };
            Output {
                status,
                stdout,
                stderr: Vec::new(),
            }
        }
    }
}

fn run_per_call(sb: &Sandbox, cwd: &Path, script: &str) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .process_group(0);
    use std::os::unix::process::CommandExt;
    sb.apply(&mut cmd, cwd).unwrap();
    cmd.output().unwrap()
}

/// The zygote of `sb` (waiting for it generously).
fn zygote(sb: &Sandbox) -> Zygote {
    zygote::set_program(PathBuf::from(env!("CARGO_BIN_EXE_shard-sandbox-zygote")));
    sb.zygote(Duration::from_secs(30))
        .expect("the zygote did not start")
}

/// Starts `bash -c script` in the zygote; returns the call and the read end of its
/// output (stdout and stderr together).
fn start_in_zygote(sb: &Sandbox, cwd: &Path, script: &str) -> (Call, std::io::PipeReader) {
    let (read, write) = std::io::pipe().unwrap();
    let write2 = write.try_clone().unwrap();
    let stdin = std::fs::File::open("/dev/null").unwrap();
    let call = zygote(sb)
        .spawn(CallRequest {
            argv: vec!["bash".into(), "-c".into(), script.into()],
            env: std::env::vars_os().collect(),
            cwd: cwd.to_path_buf(),
            stdin: stdin.into(),
            stdout: write.into(),
            stderr: write2.into(),
        })
        .unwrap();
    (call, read)
}

fn read_all(mut r: impl Read) -> Vec<u8> {
    let mut v = Vec::new();
    r.read_to_end(&mut v).unwrap();
    v
}

/// The call's end (after its `Started` record).
fn report(channel: &mut UnixStream) -> Report {
    loop {
        let mut rec = [0u8; RECORD_LEN];
        channel.read_exact(&mut rec).unwrap();
        match parse_report(&rec) {
            Report::Started(_) => continue,
            end => return end,
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The full sandbox, or None (with the reason printed) where this kernel lacks a part.
fn full(env: &Env, config: SandboxConfig) -> Option<Sandbox> {
    let sb = env.sandbox(config);
    if !sb.missing().is_empty() {
        skip::skip(&format!("the kernel lacks {:?}", sb.missing()));
        return None;
    }
    Some(sb)
}

both!(writes_only_inside_the_workspace_and_temp);
fn writes_only_inside_the_workspace_and_temp(via: Via) {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "echo ok > inside.txt && echo t > /tmp/t.txt && echo t > \"$TMPDIR/u.txt\" && cat /tmp/t.txt; \
             echo x > {o}/escape.txt; echo $? ; ln -s /etc {o}/link; echo $?; mkdir {o}/d; echo $?",
            o = env.outside().display()
        ),
    );
    let t = text(&out);
    assert_eq!(
        std::fs::read_to_string(env.work().join("inside.txt")).unwrap(),
        "ok\n",
        "{t}"
    );
    assert!(!env.outside().join("escape.txt").exists(), "{t}");
    assert!(!env.outside().join("link").exists(), "{t}");
    assert!(!env.outside().join("d").exists(), "{t}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("t\n"),
        "{t}"
    );
    // /tmp is private: the host's /tmp did not get the file.
    assert!(
        !Path::new("/tmp/t.txt").exists()
            || std::fs::read_to_string("/tmp/t.txt").unwrap() != "t\n"
    );
}

both!(shard_home_is_invisible);
fn shard_home_is_invisible(via: Via) {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let sock_path = env.home().join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "cat {h}/config.toml; echo \"ls=[$(ls -A {h})]\"; test -S {s} && echo SOCKET; \
             echo grant >> {h}/grants.json; echo rc=$?",
            h = env.home().display(),
            s = sock_path.display()
        ),
    );
    let t = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("secret"), "{t}");
    assert!(stdout.contains("ls=[]"), "{t}");
    assert!(!stdout.contains("SOCKET"), "{t}");
    assert!(!env.home().join("grants.json").exists(), "{t}");
    if which("python3") {
        let out = run(
            via,
            &sb,
            &env.work(),
            &format!(
                "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"CONNECTED\")'",
                sock_path.display()
            ),
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("CONNECTED"),
            "{}",
            text(&out)
        );
    } else {
        skip::skip("the socket connect attempt: python3 is not installed");
    }
}

both!(shard_processes_are_out_of_view);
fn shard_processes_are_out_of_view(via: Via) {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let me = std::process::id();
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "echo pid=$$ ppid=$PPID; cat /proc/$PPID/environ && echo READ_PARENT; \
             test -e /proc/{me} && echo SEES_RUNTIME; cat /proc/{me}/environ && echo READ_RUNTIME; \
             head -c1 /proc/{me}/mem && echo READ_MEM; (exec 3</proc/$PPID/mem) && echo READ_INIT_MEM; ls /proc | grep -c '^[0-9]'"
        ),
    );
    let t = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The command runs under the namespace's init, a copy of the spawning process.
    assert!(stdout.contains("pid=2 ppid=1"), "{t}");
    for bad in [
        "READ_PARENT",
        "SEES_RUNTIME",
        "READ_RUNTIME",
        "READ_MEM",
        "READ_INIT_MEM",
    ] {
        assert!(!stdout.contains(bad), "{bad}: {t}");
    }
}

fn which(prog: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {prog}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Host processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let zombie = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|s| s == "Z" || s == "X");
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

both!(orphans_die_when_the_command_ends);
fn orphans_die_when_the_command_ends(via: Via) {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    // Both ways run at once in this process: each has its own marker.
    let base = if via == Via::Zygote { 900 } else { 600 };
    let marker = format!("{}.{}", base + std::process::id() % 97, std::process::id());
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "setsid -f sleep {marker}; nohup sleep {marker} >/dev/null 2>&1 & disown; (sleep {marker} &); echo started"
        ),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("started"),
        "{}",
        text(&out)
    );
    // The kernel kills the namespace before the first process is reaped: no wait needed.
    let left = processes_with(&marker);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(left.is_empty(), "orphans survived: {left:?}");
}

both!(network_off_blocks_a_local_listener);
fn network_off_blocks_a_local_listener(via: Via) {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED");
    let Some(on) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let out = run(via, &on, &env.work(), &script);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("CONNECTED"),
        "{}",
        text(&out)
    );
    let config = SandboxConfig {
        network: false,
        ..SandboxConfig::default()
    };
    let Some(off) = full(&env, config) else {
        return;
    };
    let out = run(via, &off, &env.work(), &script);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("CONNECTED"),
        "{}",
        text(&out)
    );
}

#[test]
fn mode_off_behaves_as_before() {
    let env = Env::new();
    let sb = env.sandbox(SandboxConfig {
        mode: SandboxMode::Off,
        ..SandboxConfig::default()
    });
    assert!(!sb.is_active());
    assert_eq!(sb.capabilities(), vec!["sandbox-off".to_string()]);
    let out = run(
        Via::PerCall,
        &sb,
        &env.work(),
        &format!(
            "echo x > {}/escape.txt && cat {}/config.toml",
            env.outside().display(),
            env.home().display()
        ),
    );
    assert!(env.outside().join("escape.txt").exists(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("secret"));
}

both!(a_workspace_inside_shard_home_stays_writable);
fn a_workspace_inside_shard_home_stays_writable(via: Via) {
    let env = Env::new();
    let inner = env.home().join("projects/p");
    std::fs::create_dir_all(&inner).unwrap();
    let sb = Sandbox::new(
        &SandboxConfig::default(),
        SandboxSpec {
            workspace_roots: vec![inner.clone()],
            hidden: vec![env.home()],
            visible: Vec::new(),
            temp_parent: None,
            probe_cache: None,
        },
    )
    .unwrap();
    if !sb.missing().is_empty() {
        skip::skip(&format!("the kernel lacks {:?}", sb.missing()));
        return;
    }
    let out = run(
        via,
        &sb,
        &inner,
        &format!(
            "echo ok > file.txt; cat {}/config.toml && echo LEAK",
            env.home().display()
        ),
    );
    assert_eq!(
        std::fs::read_to_string(inner.join("file.txt")).unwrap(),
        "ok\n",
        "{}",
        text(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("LEAK"),
        "{}",
        text(&out)
    );
}

both!(a_visible_folder_inside_shard_home_is_readable_not_writable);
fn a_visible_folder_inside_shard_home_is_readable_not_writable(via: Via) {
    let env = Env::new();
    let out_dir = env.home().join("sessions/s1/tool-output");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("bash-1.log"), "saved line\n").unwrap();
    let sb = Sandbox::new(
        &SandboxConfig::default(),
        SandboxSpec {
            workspace_roots: vec![env.work()],
            hidden: vec![env.home()],
            visible: vec![out_dir.clone(), env.home().join("absent")],
            temp_parent: None,
            probe_cache: None,
        },
    )
    .unwrap();
    if !sb.missing().is_empty() {
        skip::skip(&format!("the kernel lacks {:?}", sb.missing()));
        return;
    }
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "cat {d}/bash-1.log; echo x > {d}/new.log; cat {h}/config.toml && echo LEAK",
            d = out_dir.display(),
            h = env.home().display()
        ),
    );
    let t = text(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("saved line"),
        "{t}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("LEAK"),
        "{t}"
    );
    assert!(!out_dir.join("new.log").exists(), "{t}");
}

#[test]
fn a_complete_probe_is_remembered_for_the_boot() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let spec = SandboxSpec {
        workspace_roots: vec![env.work()],
        hidden: vec![env.home()],
        visible: Vec::new(),
        temp_parent: None,
        probe_cache: Some(env.home()),
    };
    let sb = Sandbox::new(&SandboxConfig::default(), spec.clone()).unwrap();
    let file = env.home().join("sandbox-probe");
    if !sb.missing().is_empty() {
        assert!(!file.exists(), "an incomplete probe must not be remembered");
        skip::skip(&format!(
            "remembering a complete probe: the kernel lacks {:?}",
            sb.missing()
        ));
        return;
    }
    let key = std::fs::read_to_string(&file).unwrap();
    assert!(key.starts_with("complete boot="), "{key}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A key for something else is not trusted: the probe runs again and rewrites it.
    std::fs::write(&file, "complete boot=other\n").unwrap();
    let again = Sandbox::new(&SandboxConfig::default(), spec).unwrap();
    assert!(again.missing().is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), key);
    // The remembered sandbox works.
    let out = run(Via::PerCall, &again, &env.work(), "echo ok > f && echo $$");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "2",
        "{}",
        text(&out)
    );
}

both!(the_covers_cannot_be_undone);
fn the_covers_cannot_be_undone(via: Via) {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let h = env.home().display().to_string();
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "umount -l {h} 2>&1; cat {h}/config.toml; \
             unshare -Urm sh -c 'umount -l {h}; cat {h}/config.toml' 2>&1; \
             mount -t tmpfs none {o} 2>&1; echo END",
            o = env.work().display()
        ),
    );
    let t = text(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("END"), "{t}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("secret"),
        "{t}"
    );
}

/// Polls (generously) until no live process has `marker` in its command line.
fn gone(marker: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !processes_with(marker).is_empty() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Waits (generously) until a process with `marker` runs.
fn wait_for(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(marker).is_empty() {
        assert!(Instant::now() < deadline, "{marker} never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill_leftovers(marker: &str) -> Vec<u32> {
    let left = processes_with(marker);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    left
}

fn orphans_then_wait(marker: &str) -> String {
    format!(
        "setsid -f sleep {marker}; nohup sleep {marker} >/dev/null 2>&1 & (sleep {marker} &); sleep {marker}"
    )
}

#[test]
fn zygote_abort_kills_every_process_of_the_call() {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let marker = format!("{}.{}", 700 + std::process::id() % 97, std::process::id());
    let (call, out) = start_in_zygote(&sb, &env.work(), &orphans_then_wait(&marker));
    // The init's pid, which leads a process group of its own: known at once for a
    // prepared slot, else the channel's first record.
    let known = call.init();
    let mut channel = call.into_channel();
    let init = known.unwrap_or_else(|| {
        let mut rec = [0u8; RECORD_LEN];
        channel.read_exact(&mut rec).unwrap();
        let Report::Started(init) = parse_report(&rec) else {
            panic!("no start record: {:?}", parse_report(&rec));
        };
        init
    });
    assert!(nix::sys::signal::killpg(nix::unistd::Pid::from_raw(init), None).is_ok());
    wait_for(&marker);
    channel.write_all(&signal_record(libc::SIGTERM)).unwrap();
    let status = report(&mut channel);
    // The report comes once every process of the call is gone.
    let left = kill_leftovers(&marker);
    assert!(left.is_empty(), "processes outlived the abort: {left:?}");
    assert_eq!(
        status,
        Report::Exited(libc::SIGTERM),
        "bash ends by the signal"
    );
    assert!(read_all(out).is_empty());
}

#[test]
fn zygote_a_dropped_call_kills_its_processes() {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let marker = format!("{}.{}", 800 + std::process::id() % 97, std::process::id());
    let (call, _out) = start_in_zygote(&sb, &env.work(), &orphans_then_wait(&marker));
    wait_for(&marker);
    drop(call);
    let ok = gone(&marker);
    kill_leftovers(&marker);
    assert!(ok, "processes outlived their dropped call");
}

#[test]
fn zygote_concurrent_calls_are_apart() {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let a = format!("{}.{}", 500 + std::process::id() % 97, std::process::id());
    let b = format!("{}.{}", 400 + std::process::id() % 97, std::process::id());
    let (call_a, out_a) = start_in_zygote(&sb, &env.work(), &format!("sleep {a} & wait"));
    wait_for(&a);
    // B looks for A's processes and tries to kill everything it can reach. The attempt
    // is made only from a shell that is a low pid of its own PID namespace, so that a
    // broken sandbox fails the assertions below instead of signalling the machine's
    // processes; `B_TRIED` shows the attempt was made.
    let (call_b, out_b) = start_in_zygote(
        &sb,
        &env.work(),
        &format!(
            "setsid -f sleep {b}; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; \
             if [ $$ -lt 10 ]; then echo B_TRIED; kill -9 -1; fi"
        ),
    );
    let mut channel_b = call_b.into_channel();
    let seen = String::from_utf8_lossy(&read_all(out_b)).to_string();
    assert!(matches!(report(&mut channel_b), Report::Exited(_)));
    assert!(!seen.contains(&a), "B sees A's processes: {seen}");
    assert!(seen.contains(&b), "B sees its own: {seen}");
    assert!(
        seen.contains("B_TRIED"),
        "B ran outside a PID namespace of its own: {seen}"
    );
    assert!(processes_with(&b).is_empty(), "B's orphan survived B");
    // A is untouched by B's end, and ends normally when aborted.
    assert!(!processes_with(&a).is_empty(), "B's end killed A");
    let mut channel_a = call_a.into_channel();
    channel_a.write_all(&signal_record(libc::SIGKILL)).unwrap();
    assert!(matches!(report(&mut channel_a), Report::Exited(_)));
    assert!(kill_leftovers(&a).is_empty());
    drop(out_a);
}

#[test]
fn zygote_is_out_of_reach_of_its_calls() {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    let out = run(
        Via::Zygote,
        &sb,
        &env.work(),
        "for f in /proc/$$/fd/*; do readlink $f; done; echo; \
         cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; \
         cat /proc/1/environ 2>/dev/null && echo READ_\"\"INIT; ls /proc | grep -c '^[0-9]'",
    );
    let t = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Only the standard descriptors: the zygote's socket and the call's channel are not
    // inherited, so a tool cannot ask the zygote for anything.
    assert!(!stdout.contains("socket:"), "{t}");
    assert!(!stdout.contains("READ_INIT"), "{t}");
    // The zygote and the Runtime are not in view: only the call's init (pid 1, a fork of
    // the zygote), bash and its children.
    let count: usize = stdout
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .parse()
        .unwrap_or(99);
    assert!(count <= 4, "{t}");
    let me = std::process::id().to_string();
    assert!(!stdout.split_whitespace().any(|w| w == me), "{t}");
}

#[test]
fn zygote_calls_go_to_prepared_slots() {
    let env = Env::new();
    let Some(sb) = full(&env, SandboxConfig::default()) else {
        return;
    };
    // The zygote offers a prepared init after its setup and after each slot used; a call
    // that finds none goes through the zygote itself. Both give the same results.
    let mut slots = 0;
    for i in 0..20 {
        let (call, out) = start_in_zygote(&sb, &env.work(), &format!("echo call {i}; echo $$"));
        if call.init().is_some() {
            slots += 1;
        }
        let mut channel = call.into_channel();
        let text = String::from_utf8_lossy(&read_all(out)).to_string();
        assert_eq!(report(&mut channel), Report::Exited(0), "{text}");
        assert_eq!(text, format!("call {i}\n2\n"));
    }
    assert!(slots > 0, "no call went to a prepared slot");
}
