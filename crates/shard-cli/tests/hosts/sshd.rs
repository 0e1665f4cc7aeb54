//! A real OpenSSH server on 127.0.0.1 for the tests: a random port, a generated host key
//! and user key, a private `ssh_config` and a `known_hosts` holding only the generated
//! host key, with strict host-key checking. Every process it starts it ends by pid.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The server binary, when this machine has one.
pub fn sshd_program() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// A running server and the files a client needs to reach it.
pub struct Sshd {
    pub dir: PathBuf,
    pub port: u16,
    child: Option<Child>,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Sshd {
    /// Keys and configuration in `dir`, then the server, its `MaxSessions` set to
    /// `max_sessions` (`None`: sshd's default, 10); `None` (after printing why) when this
    /// machine has no sshd or ssh.
    /// `extra` lines are added to its `sshd_config` (e.g. `SetEnv`).
    pub fn start(dir: &Path, max_sessions: Option<u32>, extra: &str) -> Option<Sshd> {
        let Some(sshd) = sshd_program() else {
            crate::skip::skip("no sshd (install openssh-server)");
            return None;
        };
        if Command::new("ssh").arg("-V").output().is_err() {
            crate::skip::skip("no ssh client (install openssh-client)");
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        // A root sshd wants its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        for key in ["hostkey", "userkey", "otherkey"] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key)));
        }
        std::fs::copy(dir.join("userkey.pub"), dir.join("authorized_keys")).unwrap();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let port = free_port();
        let d = dir.display();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nUsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n{}MaxStartups 300\nLogLevel ERROR\n{extra}",
                max_sessions.map_or(String::new(), |n| format!("MaxSessions {n}\n"))
            ),
        )
        .unwrap();
        let host_pub = std::fs::read_to_string(dir.join("hostkey.pub")).unwrap();
        let host_pub: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_pub.join(" ")),
        )
        .unwrap();
        std::fs::write(
            dir.join("ssh_config"),
            format!(
                "Host box\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/userkey\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
            ),
        )
        .unwrap();
        let mut s = Sshd {
            dir: dir.to_path_buf(),
            port,
            child: None,
        };
        s.child = Some(s.spawn(&sshd));
        Some(s)
    }

    fn spawn(&self, sshd: &Path) -> Child {
        let mut child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(self.dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = self.dir.join("sshd.log");
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(log).unwrap();
            for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(f, "{l}");
            }
        });
        // Listening once a client gets through.
        let deadline = std::time::Instant::now() + crate::T;
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "sshd did not listen");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child
    }

    /// The `ssh_options` of a `[hosts]` table using this server's client files.
    pub fn ssh_options(&self) -> String {
        format!("[\"-F\", \"{}\"]", self.dir.join("ssh_config").display())
    }

    /// Replaces the trusted host key with another one: the server is no longer who
    /// `known_hosts` says.
    pub fn distrust_host_key(&self) {
        let other = std::fs::read_to_string(self.dir.join("otherkey.pub")).unwrap();
        let other: Vec<&str> = other.split_whitespace().take(2).collect();
        std::fs::write(
            self.dir.join("known_hosts"),
            format!("[127.0.0.1]:{} {}\n", self.port, other.join(" ")),
        )
        .unwrap();
    }

    /// Drops every connection: the listener and the per-connection server processes end
    /// (only sshd's own processes; what runs in the sessions sees end of input).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let listener = c.id();
            let sessions = descendants(listener)
                .into_iter()
                .filter(|p| cmdline(*p).starts_with("sshd"))
                .collect::<Vec<_>>();
            let _ = c.kill();
            let _ = c.wait();
            for p in sessions {
                let _ = Command::new("kill").arg("-9").arg(p.to_string()).status();
            }
        }
    }

    /// Starts the server again on the same port with the same keys.
    pub fn restart(&mut self) {
        self.stop();
        let sshd = sshd_program().unwrap();
        self.child = Some(self.spawn(&sshd));
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A process's command line with spaces for NULs ("" when it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Every live process whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| cmdline(*p).contains(needle))
        .collect()
}

/// The parent of `pid`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Every live descendant of `pid`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for c in all.iter().copied().filter(|c| parent_of(*c) == Some(p)) {
            out.push(c);
            frontier.push(c);
        }
    }
    out
}
