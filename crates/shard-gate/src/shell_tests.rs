use super::*;

fn texts(line: &str) -> Vec<String> {
    parse(line)
        .unwrap()
        .iter()
        .map(SimpleCommand::text)
        .collect()
}

#[test]
fn pipelines_lists_and_quotes() {
    assert_eq!(
        texts("cargo test -q 2>&1 | tail -n 5 && echo 'a b'\nls"),
        ["cargo test -q", "tail -n 5", "echo a b", "ls"]
    );
    assert_eq!(texts("g\"i\"t push"), ["git push"]);
    assert_eq!(texts("\\git push"), ["git push"]);
    assert_eq!(texts("ls |\n wc -l"), ["ls", "wc -l"]);
}

#[test]
fn redirections_are_kept_apart() {
    let cmds = parse("git push > out.txt 2>/dev/null").unwrap();
    assert_eq!(cmds[0].text(), "git push");
    assert_eq!(cmds[0].redirects.len(), 2);
    assert_eq!(cmds[0].redirects[1].op, "2>");
    assert_eq!(cmds[0].redirects[1].target.text, "/dev/null");
    let cmds = parse("cat <<< 'x' && ls &>log").unwrap();
    assert_eq!(cmds[0].redirects[0].op, "<<<");
    assert_eq!(cmds[1].redirects[0].op, "&>");
}

#[test]
fn expansions_are_dynamic() {
    let cmds = parse("echo $HOME \"$x\" '$y' *.rs ~/a a=b").unwrap();
    let dynamic: Vec<bool> = cmds[0].words.iter().map(|w| w.dynamic).collect();
    assert_eq!(dynamic, [false, true, true, false, true, true, false]);
    let cmds = parse("[ -f x ] && ls").unwrap();
    assert!(cmds[0].words.iter().all(|w| !w.dynamic));
    let cmds = parse("FOO=1 cargo test").unwrap();
    assert_eq!(cmds[0].assignments, ["FOO=1"]);
}

#[test]
fn refuses_what_it_does_not_follow() {
    for bad in [
        "echo $(rm -rf /)",
        "echo `id`",
        "echo \"$(id)\"",
        "(cd /; rm x)",
        "{ ls; }",
        "if true; then ls; fi",
        "echo 'unterminated",
        "diff <(ls) <(ls)",
        "cat <<EOF\nx\nEOF",
        "echo $((1+2))",
        "echo ${x:-$(id)}",
        "",
        "; ls",
        "ls && ",
        "ls |",
        "FOO=1",
        "> x",
        "a=(1 2)",
        "case x in x) ls;; esac",
        "f() { ls; }",
    ] {
        assert!(parse(bad).is_none(), "{bad}");
    }
}

/// The words of the only command of `line`, with their dynamic flags.
fn words(line: &str) -> Vec<(String, bool)> {
    let cmds = parse(line).unwrap();
    assert_eq!(cmds.len(), 1, "{line}");
    cmds[0]
        .words
        .iter()
        .map(|w| (w.text.clone(), w.dynamic))
        .collect()
}

#[test]
fn locale_strings_are_dynamic() {
    // `$"…"` is not a `$` and a string: it is a string bash may translate.
    for line in [
        "find . $\"-exec\" git push \\;",
        "rg $\"--pre=sh\" x",
        "tar $\"--checkpoint-action=exec=sh\" -cf a.tar .",
    ] {
        let w = words(line);
        assert!(
            w.iter().any(|(t, d)| *d && !t.starts_with('$')),
            "{line}: {w:?}"
        );
    }
    assert!(parse("echo $\"$(id)\"").is_none());
}

#[test]
fn ansi_c_strings_are_decoded() {
    let w = words("find . $'-e\\x78ec' $'\\101\\u0042\\n' $'a\\'b' $'\\q' $'\\0x' $'\\xff'");
    assert_eq!(w[2], ("-exec".to_string(), false));
    assert_eq!(w[3], ("AB\n".to_string(), false));
    assert_eq!(w[4], ("a'b".to_string(), false));
    assert_eq!(w[5], ("\\q".to_string(), false));
    assert!(w[6].1 && w[7].1, "{w:?}");
    // Inside double quotes `$'` is two characters.
    assert_eq!(words("echo \"$'x'\"")[1], ("$'x'".to_string(), false));
    let cmds = parse("echo \"$'\"; git push; echo \"'\"").unwrap();
    assert_eq!(cmds.len(), 3);
    assert_eq!(cmds[1].text(), "git push");
}

#[test]
fn line_continuations_are_removed_where_bash_removes_them() {
    assert_eq!(words("gi\\\nt pu\\\nsh")[0].0, "git");
    assert_eq!(words("echo $\\\nHOME")[1], ("$HOME".to_string(), true));
    assert_eq!(words("echo '\\\n'")[1].0, "\\\n");
    assert_eq!(words("echo \"a\\\nb\"")[1].0, "ab");
    assert_eq!(words("echo \\\\\\\nx")[1].0, "\\x");
    // A comment ends at the newline even after a backslash.
    let cmds = parse("ls # x \\\ngit push").unwrap();
    assert_eq!(cmds[1].text(), "git push");
}

#[test]
fn assignments_may_have_quoted_values() {
    let cmds = parse("FOO=\"a b\" BAR='x' git push").unwrap();
    assert_eq!(cmds[0].assignments.len(), 2);
    assert_eq!(cmds[0].text(), "git push");
    // A quoted name or `=` is not an assignment.
    assert_eq!(words("\"FOO\"=1 ls")[0].0, "FOO=1");
    assert_eq!(words("FOO\\=1 ls")[0].0, "FOO=1");
}

#[test]
fn tildes_and_braces_as_bash_expands_them() {
    let w = words("git diff HEAD~1 a=~ x:~ ~/a {} @{u} a{b,c} {1..3} \"{a,b}\" b~");
    let dynamic: Vec<bool> = w.iter().map(|(_, d)| *d).collect();
    assert_eq!(
        dynamic,
        [
            false, false, false, true, true, true, false, false, true, true, false, false
        ]
    );
}
