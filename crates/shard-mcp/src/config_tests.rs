//! Tests of `config.rs`, kept beside it so the module stays readable.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn env(k: &str) -> Option<String> {
    match k {
        "TOKEN" => Some("s3cret".into()),
        "GH_TOKEN" => Some("ghp_abcdef".into()),
        "HOME" => Some("/home/u".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

#[test]
fn expands_variables_and_defaults_and_names_missing_ones() {
    assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
    assert_eq!(expand("${NOPE:-x}/${TOKEN}", &env).unwrap(), "x/s3cret");
    assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
    assert_eq!(expand("plain $HOME", &env).unwrap(), "plain $HOME");
    assert!(
        expand("${NOPE}", &env)
            .unwrap_err()
            .contains("`NOPE` is not set")
    );
    assert!(expand("${TOKEN", &env).unwrap_err().contains("unclosed"));
    assert!(
        expand("${a b}", &env)
            .unwrap_err()
            .contains("not a variable")
    );
}

#[test]
fn claude_code_file_parses_into_specs() {
    let text = r#"{"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "server", "${NOPE:-.}"], "env": {"K": "${TOKEN}"}},
        "web": {"type": "http", "url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}"#;
    let f: ProjectFile = serde_json::from_str(text).unwrap();
    let p = Path::new(".mcp.json");
    let fs = spec("fs", &f.mcp_servers["fs"], Origin::Project, p, &env).unwrap();
    match fs.transport {
        Transport::Stdio { args, env, .. } => {
            assert_eq!(args, vec!["-y", "server", "."]);
            assert_eq!(env["K"], "s3cret");
        }
        other => panic!("{other:?}"),
    }
    let web = spec("web", &f.mcp_servers["web"], Origin::Project, p, &env).unwrap();
    assert_eq!(web.timeout, DEFAULT_TIMEOUT);
    assert_eq!(web.secret_vars, vec!["TOKEN"]);
    assert!(!format!("{:?}", web.transport).contains("s3cret"));
    match web.transport {
        Transport::Http { headers, .. } => {
            assert_eq!(headers["Authorization"], "Bearer s3cret")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_the_user_marks_tools_read_only_and_inline_secrets_count() {
    let cfg = ServerConfig {
        command: Some("srv".into()),
        args: vec!["--token".into(), "${GH_TOKEN}".into(), "${NOPE:-.}".into()],
        env: [("HOME".to_string(), "${HOME}".to_string())].into(),
        read_only: true,
        read_only_tools: vec!["get".into()],
        ..Default::default()
    };
    let p = Path::new(".mcp.json");
    let project = spec("s", &cfg, Origin::Project, p, &env).unwrap();
    assert!(
        !project.tool_is_read_only("get"),
        "a project file cannot waive asking"
    );
    let user = spec("s", &cfg, Origin::User, p, &env).unwrap();
    assert!(user.tool_is_read_only("get"));
    // The token in `args` is a secret of this server: hidden from others, redacted.
    assert!(
        user.secret_vars.contains(&"GH_TOKEN".to_string()),
        "{:?}",
        user.secret_vars
    );
    assert!(!user.secret_vars.contains(&"NOPE".to_string()));
    // Passing HOME on does not take it from every other tool.
    assert!(!user.secret_vars.contains(&"HOME".to_string()));
    assert!(user.secret_values.contains(&"ghp_abcdef".to_string()));
}

#[test]
fn bad_servers_are_one_clear_error() {
    let p = Path::new("/p/.mcp.json");
    let both = ServerConfig {
        command: Some("a".into()),
        url: Some("http://x".into()),
        ..Default::default()
    };
    let e = spec("s", &both, Origin::Project, p, &env)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "/p/.mcp.json: server `s`: set `command` or `url`, not both"
    );
    let none = ServerConfig::default();
    assert!(spec("s", &none, Origin::User, p, &env).is_err());
    let ok = ServerConfig {
        command: Some("a".into()),
        ..Default::default()
    };
    assert!(spec("a__b", &ok, Origin::User, p, &env).is_err());
    let sse = ServerConfig {
        kind: Some("sse".into()),
        url: Some("http://x".into()),
        ..Default::default()
    };
    assert!(
        spec("s", &sse, Origin::User, p, &env)
            .unwrap_err()
            .to_string()
            .contains("sse")
    );
}
