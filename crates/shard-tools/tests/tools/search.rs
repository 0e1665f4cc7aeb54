//! The grep, find and ls tools.

use serde_json::json;
use shard_protocol::types::{PathKind, RenderDescriptor};

use crate::common::*;

#[tokio::test]
async fn grep_modes_context_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[
            ("src/a.rs", "fn alpha() {}\n// TODO: one\nlet x = 1;\n"),
            ("src/b.rs", "fn beta() {}\n// todo: two\n"),
            ("notes.md", "TODO: docs\n"),
            (".hidden/h.rs", "TODO hidden\n"),
            ("bin.dat", "TODO\0binary\n"),
        ],
    );
    let c = ctx(dir.path());
    let out = call("grep", json!({"pattern": "TODO"}), &c).await;
    let t = text(&out);
    assert_eq!(t, "notes.md:1:TODO: docs\nsrc/a.rs:2:// TODO: one");
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => {
            assert_eq!(paths.len(), 2);
            assert_eq!(paths[1].path, "src/a.rs");
            assert_eq!(paths[1].kind, PathKind::File);
            assert_eq!(paths[1].hint.as_deref(), Some("2: // TODO: one"));
        }
        other => panic!("{other:?}"),
    }
    let out = call(
        "grep",
        json!({"pattern": "todo", "ignore_case": true, "glob": "*.rs", "output": "files"}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "src/a.rs\nsrc/b.rs");
    let out = call(
        "grep",
        json!({"pattern": "(?i)todo", "output": "count", "path": "src"}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "src/a.rs:1\nsrc/b.rs:1");
    let out = call(
        "grep",
        json!({"pattern": "TODO: one", "context": 1, "path": "src/a.rs"}),
        &c,
    )
    .await;
    assert_eq!(
        text(&out),
        "src/a.rs-1-fn alpha() {}\nsrc/a.rs:2:// TODO: one\nsrc/a.rs-3-let x = 1;"
    );
    let out = call(
        "grep",
        json!({"pattern": "fn alpha()", "literal": true}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "src/a.rs:1:fn alpha() {}");
    let out = call("grep", json!({"pattern": "fn alpha("}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("`pattern`"), "{}", text(&out));
    let out = call("grep", json!({"pattern": "nothing-matches-this"}), &c).await;
    assert!(!out.is_error);
    assert!(text(&out).contains("No matches"));
    let out = call("grep", json!({"pattern": "x", "path": "nope"}), &c).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn grep_cuts_long_lines_and_honours_limit() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("needle {}\n", "z".repeat(3000));
    let many: String = (0..300).map(|i| format!("needle {i}\n")).collect();
    write_tree(dir.path(), &[("long.txt", &long), ("many.txt", &many)]);
    let c = ctx(dir.path());
    let out = call("grep", json!({"pattern": "needle", "path": "long.txt"}), &c).await;
    let t = text(&out);
    assert!(t.chars().count() < 600, "{}", t.len());
    assert!(t.ends_with('…'));
    let out = call("grep", json!({"pattern": "needle", "path": "many.txt"}), &c).await;
    let t = text(&out);
    assert_eq!(
        t.lines().filter(|l| l.starts_with("many.txt:")).count(),
        100
    );
    assert!(t.contains("limit of 100"), "{t}");
    let out = call(
        "grep",
        json!({"pattern": "needle", "path": "many.txt", "limit": 5}),
        &c,
    )
    .await;
    assert_eq!(
        text(&out)
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        5
    );
    // Exactly `limit` matches: no claim that there are more.
    let out = call(
        "grep",
        json!({"pattern": "needle", "path": "many.txt", "limit": 300}),
        &c,
    )
    .await;
    assert!(
        !text(&out).contains("Stopped at the limit"),
        "{}",
        text(&out)
    );
    // With context, the cut match's leading context is not shown either.
    let spaced: String = (0..20)
        .map(|i| format!("needle {i}\nfiller {i}\n"))
        .collect();
    write_tree(dir.path(), &[("spaced.txt", &spaced)]);
    let out = call(
        "grep",
        json!({"pattern": "needle", "path": "spaced.txt", "limit": 2, "context": 1}),
        &c,
    )
    .await;
    let t = text(&out);
    assert!(t.starts_with("spaced.txt:1:needle 0\nspaced.txt-2-filler 0\nspaced.txt:3:needle 1\nspaced.txt-4-filler 1\n"), "{t}");
    assert!(!t.contains("needle 2"), "{t}");
}

#[tokio::test]
async fn grep_honours_gitignore_across_ten_thousand_files() {
    let dir = tempfile::tempdir().unwrap();
    make_ignored_tree(dir.path());
    let c = ctx(dir.path());
    let out = call(
        "grep",
        json!({"pattern": "marker", "output": "files", "limit": 1000}),
        &c,
    )
    .await;
    let t = text(&out);
    let files: Vec<&str> = t.lines().collect();
    assert_eq!(files.len(), 100, "{t}");
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("kept/d") && f.ends_with("/f7.txt")),
        "{t}"
    );
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    // Cross-check with ripgrep itself when it is installed.
    match std::process::Command::new("rg")
        .args(["--no-require-git", "-l", "marker"])
        .current_dir(dir.path())
        .output()
    {
        Ok(o) => {
            let mut rg: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(String::from)
                .collect();
            rg.sort();
            assert_eq!(rg, files);
        }
        Err(e) => crate::skip::skip(&format!(
            "the ripgrep cross-check: rg not runnable ({e}) (Debian package ripgrep)"
        )),
    }
}

#[tokio::test]
async fn cancelled_grep_stops() {
    let dir = tempfile::tempdir().unwrap();
    make_ignored_tree(dir.path());
    let c = ctx(dir.path());
    c.cancel.cancel();
    let out = call("grep", json!({"pattern": "marker"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("cancelled"));
    let out = call("find", json!({"pattern": "*.txt"}), &c).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn find_globs_names_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[
            ("Cargo.toml", ""),
            ("src/lib.rs", ""),
            ("src/tests/t_one.rs", ""),
            ("target/debug/x.rs", ""),
            (".git/config.rs", ""),
            (".gitignore", "target/\n"),
        ],
    );
    let c = ctx(dir.path());
    let out = call("find", json!({"pattern": "*.rs"}), &c).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/tests/t_one.rs");
    let out = call("find", json!({"pattern": "src/*.rs"}), &c).await;
    assert_eq!(text(&out), "src/lib.rs");
    let out = call("find", json!({"pattern": "src/**/*.rs"}), &c).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/tests/t_one.rs");
    let out = call("find", json!({"pattern": "tests"}), &c).await;
    assert_eq!(text(&out), "src/tests/");
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => assert_eq!(paths[0].kind, PathKind::Dir),
        other => panic!("{other:?}"),
    }
    let out = call("find", json!({"pattern": "*.rs", "path": "src/tests"}), &c).await;
    assert_eq!(text(&out), "src/tests/t_one.rs");
    let out = call("find", json!({"pattern": "*", "limit": 2}), &c).await;
    assert!(text(&out).contains("limit of 2"), "{}", text(&out));
    let mut small = c.clone();
    small.limits.max_output_lines = 2;
    let out = call("find", json!({"pattern": "*"}), &small).await;
    let t = text(&out);
    assert_eq!(t.lines().count(), 3, "{t}");
    assert!(
        t.ends_with("[Output cut at the size limit; narrow the pattern or path.]"),
        "{t}"
    );
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => assert_eq!(paths.len(), 2),
        other => panic!("{other:?}"),
    }
    write_tree(
        dir.path(),
        &[("g/1", "x\n"), ("g/2", "x\n"), ("g/3", "x\n")],
    );
    let out = call("grep", json!({"pattern": "x", "output": "files"}), &small).await;
    assert_eq!(text(&out).lines().count(), 3, "{}", text(&out));
    let out = call("find", json!({"pattern": "a[", "path": "."}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("`pattern`"));
}

#[tokio::test]
async fn find_matches_fd_on_an_ignored_tree() {
    let dir = tempfile::tempdir().unwrap();
    make_ignored_tree(dir.path());
    let c = ctx(dir.path());
    let out = call("find", json!({"pattern": "f7.txt", "limit": 100000}), &c).await;
    let ours: Vec<String> = text(&out).lines().map(String::from).collect();
    assert_eq!(ours.len(), 100);
    let fd = ["fdfind", "fd"].into_iter().find_map(|bin| {
        std::process::Command::new(bin)
            .args(["--glob", "f7.txt"])
            .current_dir(dir.path())
            .output()
            .ok()
            .filter(|o| o.status.success())
    });
    match fd {
        Some(o) => {
            let mut theirs: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(|l| l.trim_start_matches("./").to_string())
                .collect();
            theirs.sort();
            assert_eq!(theirs, ours);
        }
        None => crate::skip::skip(
            "the fd cross-check: neither fdfind nor fd is installed (Debian package fd-find)",
        ),
    }
}

#[tokio::test]
async fn ls_lists_kinds_sizes_and_marks_dirs() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[("b.txt", "12345"), ("sub/inner.txt", ""), (".env", "x")],
    );
    std::os::unix::fs::symlink("b.txt", dir.path().join("link")).unwrap();
    let c = ctx(dir.path());
    let out = call("ls", json!({}), &c).await;
    let t = text(&out);
    assert_eq!(
        t,
        ".env  (file, 1 bytes)\n.shard-out/  (dir)\nb.txt  (file, 5 bytes)\nlink  (link file, 5 bytes) -> b.txt\nsub/  (dir)"
            .replace(".shard-out/  (dir)\n", if dir.path().join(".shard-out").exists() { ".shard-out/  (dir)\n" } else { "" })
    );
    let out = call("ls", json!({"path": "sub"}), &c).await;
    assert_eq!(text(&out), "sub/inner.txt  (file, 0 bytes)");
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => {
            assert_eq!(paths[0].path, "sub/inner.txt");
            assert_eq!(paths[0].kind, PathKind::File);
        }
        other => panic!("{other:?}"),
    }
    let out = call("ls", json!({"limit": 2}), &c).await;
    assert!(text(&out).contains("2 of"), "{}", text(&out));
    let out = call("ls", json!({"path": "missing"}), &c).await;
    assert!(out.is_error);
    let out = call("ls", json!({"path": "/"}), &c).await;
    assert!(text(&out).contains("/tmp/"), "{}", text(&out));
}

/// Paths compared after resolution: the gate's path filter hides entries from every listing tool, including
/// those reached through a symlink, and prunes hidden directories from the walk.
#[tokio::test]
async fn the_path_filter_hides_entries_from_grep_find_and_ls() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    write_tree(
        &root,
        &[
            ("secrets/key.txt", "NEEDLE secret\n"),
            ("src/a.txt", "NEEDLE public\n"),
        ],
    );
    std::os::unix::fs::symlink(root.join("secrets/key.txt"), root.join("src/alias.txt")).unwrap();
    let mut ctx = ctx(&root);
    let secrets = root.join("secrets");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    ctx.path_filter = shard_tools::PathFilter::new(std::sync::Arc::new(
        move |tool: &str, p: &std::path::Path, link: bool| {
            log.lock().unwrap().push(tool.to_string());
            let real = if link {
                std::fs::canonicalize(p).unwrap_or(p.to_path_buf())
            } else {
                p.to_path_buf()
            };
            !real.starts_with(&secrets)
        },
    ));
    let out = text(&call("grep", json!({"pattern": "NEEDLE"}), &ctx).await);
    assert!(
        out.contains("src/a.txt") && !out.contains("secret"),
        "{out}"
    );
    let out = text(&call("find", json!({"pattern": "*.txt"}), &ctx).await);
    assert!(out.contains("src/a.txt"), "{out}");
    assert!(
        !out.contains("key.txt") && !out.contains("alias.txt"),
        "{out}"
    );
    let out = text(&call("ls", json!({}), &ctx).await);
    assert!(out.contains("src") && !out.contains("secrets"), "{out}");
    let out = text(&call("ls", json!({"path": "src"}), &ctx).await);
    assert!(!out.contains("alias.txt"), "{out}");
    let tools = seen.lock().unwrap().clone();
    for t in ["grep", "find", "ls"] {
        assert!(
            tools.iter().any(|x| x == t),
            "{t} did not consult the filter"
        );
    }
}
