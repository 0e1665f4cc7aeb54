//! Who is on the other end of a connection. Every connection carries a
//! [`Principal`]; commands that only a Runtime may send (subagent jobs, later) check it.

/// The identity of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The user who owns the daemon, on the owner-only unix socket (checked with
    /// `SO_PEERCRED`).
    LocalUser {
        /// The peer's uid (always the daemon's own).
        uid: u32,
        /// The peer's pid when the kernel reported one.
        pid: Option<u32>,
    },
    /// An enrolled browser (the web transport adds it; nothing produces it yet).
    Browser {
        /// The browser principal's id in the security store.
        id: String,
    },
    /// The Runtime of one agent, proven with its `SHARD_AGENT_TOKEN` (`runtime.auth`).
    Runtime {
        /// The agent whose Runtime this is.
        agent_id: String,
    },
    /// In-process subscribers of the daemon itself.
    Internal,
}

impl Principal {
    /// True for an authenticated Runtime connection.
    pub fn runtime_agent(&self) -> Option<&str> {
        match self {
            Principal::Runtime { agent_id } => Some(agent_id),
            _ => None,
        }
    }
}

/// Which kind of transport a connection came in on; `hello.capabilities` depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// The owner-only unix socket.
    UnixSocket,
    /// A WebSocket (the web issue adds it).
    WebSocket,
    /// stdio (a daemon serving one client on its standard streams; tests, embedding).
    Stdio,
}

impl TransportKind {
    /// The connection-level capabilities of `hello` on this transport (docs/protocol.md §7): what
    /// the transport and the daemon offer here, not one constant for all.
    pub fn capabilities(self) -> Vec<String> {
        let mut caps = vec!["streaming-deltas", "multi-client"];
        match self {
            TransportKind::UnixSocket => caps.extend(["unix-socket", "runtime-auth"]),
            TransportKind::WebSocket => caps.push("websocket"),
            TransportKind::Stdio => caps.push("stdio"),
        }
        caps.into_iter().map(String::from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_differ_per_transport() {
        let unix = TransportKind::UnixSocket.capabilities();
        let ws = TransportKind::WebSocket.capabilities();
        assert!(unix.contains(&"unix-socket".to_string()));
        assert!(unix.contains(&"runtime-auth".to_string()));
        assert!(!ws.contains(&"runtime-auth".to_string()));
        assert!(ws.contains(&"websocket".to_string()));
        assert!(
            TransportKind::Stdio
                .capabilities()
                .contains(&"stdio".to_string())
        );
    }
}

/// SHA-256 of a Runtime token: the daemon keeps only this.
pub(crate) fn hash_token(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// Constant-time comparison of a presented token with a kept hash.
pub(crate) fn token_matches(presented: &str, kept: &[u8; 32]) -> bool {
    use subtle::ConstantTimeEq;
    hash_token(presented).ct_eq(kept).into()
}

#[cfg(test)]
mod token_tests {
    use super::*;

    #[test]
    fn only_the_same_token_matches() {
        let kept = hash_token("abc");
        assert!(token_matches("abc", &kept));
        assert!(!token_matches("abd", &kept));
        assert!(!token_matches("", &kept));
    }
}
