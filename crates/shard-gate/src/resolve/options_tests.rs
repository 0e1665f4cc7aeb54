//! The option models read options as the real programs do (checked against GNU sed 4.9,
//! GNU make 4.3, GNU tar 1.34 and git 2.47 where they are installed).

use super::*;

fn words(line: &str) -> Vec<Word> {
    line.split_whitespace()
        .map(|t| Word {
            text: t.to_string(),
            dynamic: false,
        })
        .collect()
}

fn names(model: &Model, line: &str) -> Option<Vec<(String, Option<String>)>> {
    model.parse(&words(line)).map(|p| {
        p.options
            .iter()
            .map(|o| (o.name.to_string(), o.value.as_ref().map(|v| v.text.clone())))
            .collect()
    })
}

fn opt(name: &str, value: Option<&str>) -> (String, Option<String>) {
    (name.to_string(), value.map(str::to_string))
}

#[test]
fn sed_clusters_values_and_abbreviations() {
    let e = |v| opt("--expression", Some(v));
    assert_eq!(
        names(&SED, "-ne p f"),
        Some(vec![opt("--quiet", None), e("p")])
    );
    assert_eq!(
        names(&SED, "-nep f"),
        Some(vec![opt("--quiet", None), e("p")])
    );
    assert_eq!(names(&SED, "--e=p f"), Some(vec![e("p")]));
    assert_eq!(names(&SED, "--expr p f"), Some(vec![e("p")]));
    assert_eq!(names(&SED, "f --expression=p"), Some(vec![e("p")]));
    assert_eq!(
        names(&SED, "-nl5 p"),
        Some(vec![opt("--quiet", None), opt("--line-length", Some("5"))])
    );
    assert_eq!(
        names(&SED, "-i.bak p f"),
        Some(vec![opt("--in-place", Some(".bak"))])
    );
    assert_eq!(
        names(&SED, "--in-pl=.bak p f"),
        Some(vec![opt("--in-place", Some(".bak"))])
    );
    let file = SED.parse(&words("-nf s.sed x")).unwrap();
    assert!(file.has(Tag::Code));
    assert_eq!(file.operands.len(), 1);
    // A value is the next word, whatever it looks like.
    assert_eq!(names(&SED, "-e -n f"), Some(vec![e("-n")]));
    // After `--` everything is an operand.
    let after = SED.parse(&words("-n -- -e p")).unwrap();
    assert_eq!(after.operands.len(), 2);
    // Not understood: unknown options, ambiguous or valueless forms, a missing value.
    for bad in ["--bogus p", "-Q p", "--s p", "--posix=1 p", "-e", "-l"] {
        assert!(SED.parse(&words(bad)).is_none(), "{bad}");
    }
}

#[test]
fn make_eval_and_numbers() {
    for eval in [
        "--eval=x", "--eval x", "--ev=x", "--ev x", "-E x", "-Ex", "-sEx", "-j4 -E x",
    ] {
        let p = MAKE.parse(&words(eval)).unwrap();
        assert!(p.has(Tag::Code), "{eval}");
    }
    let p = MAKE.parse(&words("-j 4 test")).unwrap();
    assert_eq!(p.operands.len(), 1);
    let p = MAKE.parse(&words("-j test")).unwrap();
    assert_eq!(p.operands.len(), 1);
    // `--e` could be `--environment-overrides` or `--eval`.
    assert!(MAKE.parse(&words("--e x")).is_none());
}

#[test]
fn git_abbreviations_resolve_with_the_full_list() {
    let push = git("push").unwrap();
    let fetch = git("fetch").unwrap();
    let grep = git("grep").unwrap();
    assert!(
        fetch
            .parse(&words("--upload-p=x origin"))
            .unwrap()
            .has(Tag::Code)
    );
    assert!(
        fetch
            .parse(&words("--upl x origin"))
            .unwrap()
            .has(Tag::Code)
    );
    assert!(
        push.parse(&words("--receive-p=x origin"))
            .unwrap()
            .has(Tag::Code)
    );
    assert!(push.parse(&words("--exe=x origin")).unwrap().has(Tag::Code));
    assert!(grep.parse(&words("--open=vi x")).unwrap().has(Tag::Code));
    assert!(grep.parse(&words("-Ovi x")).unwrap().has(Tag::Code));
    // Ambiguous as git says it is (`--recurse-submodules` or `--receive-pack`).
    assert!(push.parse(&words("--rec=x origin")).is_none());
    assert!(
        push.parse(&words("-fu origin main"))
            .unwrap()
            .has(Tag::Exact)
    );
    assert!(
        push.parse(&words("--force-w origin main"))
            .unwrap()
            .has(Tag::Exact)
    );
    assert!(
        !push
            .parse(&words("-u origin main"))
            .unwrap()
            .has(Tag::Exact)
    );
    // `git log -5`, `--end-of-options`.
    let log = git("log").unwrap();
    assert!(log.parse(&words("-5 --oneline")).is_some());
    assert_eq!(
        log.parse(&words("--end-of-options --upload-pack=x"))
            .unwrap()
            .operands
            .len(),
        1
    );
}

#[test]
fn tar_old_style_words() {
    let w = tar_like("xIf sh a.tar");
    assert_eq!(w, "-x -I sh -f a.tar");
    assert!(TAR.parse(&words(&w)).unwrap().has(Tag::Code));
    assert!(
        TAR.parse(&words("--to-com=sh -xf a.tar"))
            .unwrap()
            .has(Tag::Code)
    );
    assert!(
        TAR.parse(&words("-cf out.tar src"))
            .unwrap()
            .has(Tag::Exact)
    );
    assert!(
        !TAR.parse(&words("-xzf a.tar -C out"))
            .unwrap()
            .has(Tag::Exact)
    );
}

fn tar_like(line: &str) -> String {
    crate::resolve::tar_words(&words(line))
        .unwrap()
        .iter()
        .map(|w| w.text.clone())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Ordinary calls are understood (an over-strict model would ask for every one).
#[test]
fn ordinary_calls_are_understood() {
    let mut failed = Vec::new();
    for line in [
        "status -sb",
        "status --porcelain=v1",
        "log --oneline -n 5",
        "log --graph --decorate --all",
        "log --pretty=format:%h --author=me --since=2.weeks",
        "log -p -5 -- f",
        "log --format=%H%s --no-merges origin/main..HEAD",
        "diff --stat HEAD~1",
        "diff --cached --name-only",
        "diff -U5 --word-diff a b",
        "diff --no-index a b",
        "show --stat HEAD",
        "commit -am msg",
        "commit --amend --no-edit",
        "add -A",
        "add -p",
        "push -u origin main",
        "push origin HEAD:refs/for/main",
        "pull --rebase",
        "pull --ff-only origin main",
        "fetch --all --prune",
        "fetch origin --tags",
        "checkout -b x",
        "switch -c x",
        "branch -vv",
        "branch -D x",
        "stash push -m x",
        "stash list",
        "stash show -p stash@{0}",
        "stash pop",
        "rebase -i HEAD~3",
        "rebase --onto main a b",
        "merge --no-ff x",
        "tag -a v1 -m x",
        "rev-parse --show-toplevel",
        "rev-parse --abbrev-ref HEAD",
        "rev-parse --short HEAD",
        "ls-files -z",
        "blame -L 1,5 f",
        "remote -v",
        "remote add origin url",
        "remote get-url origin",
        "worktree add ../x",
        "clone --depth 1 url",
        "cherry-pick -x abc",
        "reset --hard HEAD",
        "clean -fdx",
        "grep -n foo",
        "shortlog -sn",
        "describe --tags --always",
        "submodule update --init --recursive",
        "restore --staged f",
        "apply --check p.diff",
        "format-patch -1 HEAD",
        "reflog show",
        "cat-file -p HEAD",
        "config user.name",
        "config --get core.pager",
        "config --global user.email a@b",
    ] {
        let mut w = words(line);
        let sub = w.remove(0);
        let model = git(&sub.text).unwrap();
        if model.parse(&w).is_none() {
            failed.push(line);
        }
    }
    assert!(failed.is_empty(), "not understood: {failed:?}");
    for (model, line) in [
        (&SED, "-n s/a/b/p f"),
        (&SED, "-E -i.bak s/a/b/ f"),
        (&SED, "--quiet -e 1p -e 2p f"),
        (&MAKE, "-j4 test"),
        (&MAKE, "-C sub -k all"),
        (&MAKE, "--no-print-directory -s"),
        (&TAR, "-czf out.tar.gz src"),
        (&TAR, "-xf - -C dir"),
        (&TAR, "--exclude=.git -cf a.tar ."),
        (&SORT, "-u -k2,2n f"),
        (&SORT, "-t: -k3 -n f"),
    ] {
        assert!(model.parse(&words(line)).is_some(), "{line}");
    }
}
