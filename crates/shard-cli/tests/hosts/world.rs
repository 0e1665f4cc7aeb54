//! The tests' world: a temporary folder holding the daemon's home, the host's home and
//! a work folder, the test server when there is one, and the daemon under test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};

use serde_json::{Value, json};
use shard_client::Client;
use shard_protocol::command::AgentCreate;

use crate::sshd::{self, Sshd, processes_with};
use crate::{FAKE_KEY, SHARD, T};

/// A test's directories: the daemon's home, the host's home, a work dir and the server.
pub struct World {
    pub dir: tempfile::TempDir,
    pub sshd: Option<Sshd>,
}

impl World {
    pub fn new() -> World {
        // Short: the control socket path must fit a unix socket address.
        let dir = tempfile::Builder::new()
            .prefix("sh")
            .tempdir_in("/tmp")
            .unwrap();
        for d in ["home", "rhome", "work"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        World { dir, sshd: None }
    }
    pub fn with_sshd() -> Option<World> {
        World::with_sshd_sessions(None)
    }
    /// With the server's `MaxSessions` set (`None`: sshd's default, 10).
    pub fn with_sshd_sessions(max_sessions: Option<u32>) -> Option<World> {
        World::with_sshd_config(max_sessions, |_| String::new())
    }
    /// With lines of the server's `sshd_config` that `extra` writes given the test's
    /// directory.
    pub fn with_sshd_config(
        max_sessions: Option<u32>,
        extra: impl FnOnce(&Path) -> String,
    ) -> Option<World> {
        let mut w = World::new();
        let extra = extra(w.dir.path());
        w.sshd = Some(Sshd::start(
            &w.dir.path().join("ssh"),
            max_sessions,
            &extra,
        )?);
        Some(w)
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub fn rhome(&self) -> PathBuf {
        self.dir.path().join("rhome")
    }
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    pub fn sshd(&mut self) -> &mut Sshd {
        self.sshd.as_mut().unwrap()
    }
    /// The far Runtimes of this test's agents (and their sandboxes' zygotes).
    pub fn far_runtimes(&self) -> Vec<u32> {
        let work = self.work().display().to_string();
        processes_with("agent --remote")
            .into_iter()
            .filter(|p| !sshd::cmdline(*p).starts_with("ssh"))
            .filter(|p| sshd::cmdline(*p).contains(&work))
            .collect()
    }
    /// How many sessions the host holds.
    pub fn host_sessions(&self) -> usize {
        std::fs::read_dir(self.rhome().join("sessions"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("sess-"))
            .count()
    }
    /// `[hosts.box]` over the test server, plus `extra` lines of config.
    pub fn ssh_host(&self, shard: &str, extra: &str) {
        let s = self.sshd.as_ref().unwrap();
        self.config(&format!(
            "[hosts.box]\nssh = \"box\"\nssh_options = {}\nshard = \"{shard}\"\nhome = \"{}\"\n{extra}",
            s.ssh_options(),
            self.rhome().display()
        ));
    }
    /// `[hosts.box]` as a `command` host: a wrapper script that logs its arguments to
    /// the returned file and runs them.
    pub fn wrapper_host(&self) -> PathBuf {
        self.wrapper_host_path(None)
    }
    /// [`wrapper_host`](World::wrapper_host) whose commands find programs on `path`
    /// (the container's own `PATH`).
    pub fn wrapper_host_path(&self, path: Option<&str>) -> PathBuf {
        let wrapper = self.dir.path().join("wrap.sh");
        let log = self.dir.path().join("wrap.log");
        let env = path.map_or(String::new(), |p| format!("PATH='{p}'; export PATH\n"));
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$@\" >> {}\n{env}exec \"$@\"\n",
                log.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        self.config(&format!(
            "[hosts.box]\ncommand = [\"{}\"]\nshard = \"{SHARD}\"\nhome = \"{}\"\n",
            wrapper.display(),
            self.rhome().display()
        ));
        log
    }
    pub fn config(&self, text: &str) {
        std::fs::write(self.home().join("config.toml"), text).unwrap();
    }
    pub fn script(&self, name: &str, turns: Value) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(&json!({ "turns": turns })).unwrap()).unwrap();
        p.display().to_string()
    }
    pub fn create(&self, script: &str) -> AgentCreate {
        serde_json::from_value(json!({
            "cwd": self.work().display().to_string(), "provider": "scripted", "model": script,
            "headless_policy": "queue", "host": "box"
        }))
        .unwrap()
    }
}

pub struct Daemon {
    child: Child,
    home: PathBuf,
}

impl Daemon {
    pub fn start(home: &Path) -> Daemon {
        Daemon::start_with(home, &[])
    }

    pub fn start_with(home: &Path, extra: &[&str]) -> Daemon {
        Daemon::start_path(home, extra, None)
    }

    /// Started with `path` first on its `PATH`.
    pub fn start_path(home: &Path, extra: &[&str], path: Option<&Path>) -> Daemon {
        let mut cmd = StdCommand::new(SHARD);
        if let Some(p) = path {
            let rest = std::env::var("PATH").unwrap_or_default();
            cmd.env("PATH", format!("{}:{rest}", p.display()));
        }
        let mut child = cmd
            .args(["daemon", "--port", "0"])
            .args(extra)
            .env("SHARD_HOME", home)
            .env("SHARD_LOG", "shard_daemon=debug")
            .env("ANTHROPIC_API_KEY", FAKE_KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = home.join("daemon-test.log");
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(log).unwrap();
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(f, "{line}");
                if !sent && line.contains("listening on") {
                    let _ = tx.send(());
                    sent = true;
                }
            }
        });
        rx.recv_timeout(T).expect("daemon started");
        Daemon {
            child,
            home: home.to_path_buf(),
        }
    }
    pub async fn client(&self) -> Client {
        Client::connect_daemon(&self.home).await.unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
