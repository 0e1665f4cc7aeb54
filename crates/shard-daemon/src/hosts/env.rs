//! The environment of every process the daemon starts to reach a host: `ssh` (the shared
//! connections and each command through them) and a `command` prefix (`podman exec`,
//! `docker exec`, `kubectl exec` …). They start from nothing and get only what reaching
//! a host needs: the daemon's environment holds provider keys and its own `SHARD_*`
//! settings, and an allow-list, unlike a deny-list, cannot miss a key it never heard of.
//! The keys a remote Runtime needs travel in its `runtime.settings` line, over the pipe.

use std::ffi::{OsStr, OsString};

/// Variables a host's client may see: finding programs and the user's files, the locale
/// (ssh forwards it where the server accepts it), the ssh agent and a Kerberos ticket
/// (ways to authenticate that hold no secret themselves), and where a container engine
/// or cluster is reached and configured.
pub(crate) const HOST_CHILD_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "KRB5CCNAME",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS",
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "CONTAINERS_CONF",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "KUBECONFIG",
];

/// The variables of [`HOST_CHILD_ENV`] that `get` (the daemon's environment) has.
pub(crate) fn child_env(get: impl Fn(&str) -> Option<OsString>) -> Vec<(&'static str, OsString)> {
    HOST_CHILD_ENV
        .iter()
        .filter_map(|k| get(k).map(|v| (*k, v)))
        .collect()
}

/// `program` with a cleared environment holding only [`child_env`] of the daemon's.
pub(crate) fn host_child(program: impl AsRef<OsStr>) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.env_clear();
    cmd.envs(child_env(|k| std::env::var_os(k)));
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_reaching_a_host_needs_is_kept() {
        let daemon: &[(&str, &str)] = &[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("SSH_AUTH_SOCK", "/run/agent"),
            ("XDG_RUNTIME_DIR", "/run/user/1"),
            ("ANTHROPIC_API_KEY", "sk-ant-x"),
            ("OPENAI_API_KEY", "sk-x"),
            ("MY_PROVIDER_TOKEN", "t"),
            ("SHARD_HOME", "/h"),
            ("SHARD_RUNTIME_TOKEN", "rt"),
            ("GIT_DIR", "/g"),
            ("LD_PRELOAD", "/evil.so"),
            ("SSH_ASKPASS", "/bin/ask"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
        ];
        let got = child_env(|k| {
            daemon
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        });
        let names: Vec<&str> = got.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, ["PATH", "HOME", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR"]);
        assert_eq!(got[0].1, OsString::from("/usr/bin"));
    }

    #[test]
    fn the_child_starts_from_nothing_but_the_kept_variables() {
        let cmd = host_child("ssh");
        let envs: Vec<_> = cmd.as_std().get_envs().collect();
        // Cleared: every variable set is one of the list.
        for (k, _) in &envs {
            let k = k.to_str().unwrap();
            assert!(HOST_CHILD_ENV.contains(&k), "{k}");
        }
        assert!(
            std::env::var_os("PATH").is_none()
                || envs.iter().any(|(k, _)| *k == OsStr::new("PATH"))
        );
    }
}
