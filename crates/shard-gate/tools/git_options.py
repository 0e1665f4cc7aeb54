#!/usr/bin/env python3
"""Writes crates/shard-gate/src/resolve/options/git_table.rs from the installed git and tar.

The gate models every git subcommand's options (docs/security.md, "Round three: the
gate's program models"): an option git would accept must be known with its arity, and an
option that runs a program the line names must be marked. The lists come from git itself:
`git SUB -h` (names, short aliases, arity), `git SUB --git-completion-helper-all` (every
long option, hidden ones too) and the manual page's option headings (the revision and diff
options of `log`, `show`, `diff` … that `-h` does not print). An option two sources give
different arities is left out, so using it makes the command unknown.

Run: python3 crates/shard-gate/tools/git_options.py > crates/shard-gate/src/resolve/options/git_table.rs
"""

import os
import re
import subprocess
import sys
import tempfile

# Some subcommands print their options only inside a repository.
REPO = tempfile.mkdtemp(prefix="git-options-")
subprocess.run(["git", "init", "-q", REPO], check=True)

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "..", "src", "resolve", "programs.rs")

# Options that run a program the line names (`!code`), or whose use the signature must
# show in full (`!exact`: a push that may overwrite or delete remote refs).
TAGS = {
    ("push", "receive-pack"): "code",
    ("push", "exec"): "code",
    ("fetch", "upload-pack"): "code",
    ("pull", "upload-pack"): "code",
    ("clone", "upload-pack"): "code",
    ("clone", "config"): "code",
    ("clone", "template"): "code",
    ("init", "template"): "code",
    ("ls-remote", "upload-pack"): "code",
    ("ls-remote", "exec"): "code",
    ("archive", "exec"): "code",
    ("grep", "open-files-in-pager"): "code",
    ("difftool", "extcmd"): "code",
    ("difftool", "tool"): "code",
    ("rebase", "exec"): "code",
    ("submodule", "reference"): None,
    ("push", "force"): "exact",
    ("push", "force-with-lease"): "exact",
    ("push", "force-if-includes"): "exact",
    ("push", "mirror"): "exact",
    ("push", "delete"): "exact",
    ("push", "prune"): "exact",
    # `git log --output FILE` (every diff-producing subcommand) writes the file it names.
    ("*", "output"): "exact",
}


def builtins():
    text = open(PROGRAMS).read()
    block = text.split("pub const GIT_BUILTINS")[1].split("];")[0]
    return re.findall(r'"([a-z-]+)"', block)


def run(args):
    p = subprocess.run(
        ["git"] + args,
        capture_output=True,
        text=True,
        env=dict(os.environ, LANG="C", LC_ALL="C", GIT_PAGER="cat", PAGER="cat"),
        cwd=REPO,
    )
    return p.stdout + p.stderr


class Table:
    def __init__(self):
        self.opts = {}  # name -> arity: "" flag, "=" required, "[=]" optional, "#" number
        self.aliases = []  # groups of names, first long name canonical
        self.conflict = set()

    def add(self, names, arity):
        names = [n for n in names if n not in ("-", "--")]
        if not names:
            return
        for n in names:
            old = self.opts.get(n)
            # The completion helper prints an option with an optional value as a flag.
            if {old, arity} == {"", "[=]"}:
                arity = "[=]"
            elif old is not None and old != arity:
                self.conflict.add(n)
            self.opts[n] = arity
        self.aliases.append(names)

    def merge(self, other):
        for group in other.aliases:
            self.add(group, other.opts[group[0]])
        self.conflict |= other.conflict

    def merge_missing(self, other):
        """Adds what `self` does not name yet: `-h` is the authority, manual pages fill in."""
        for group in other.aliases:
            names = [n for n in group if n not in self.opts and n not in other.conflict]
            if names:
                self.add(names, other.opts[group[0]])

    def render(self, sub):
        seen = set()
        tokens = []
        for group in self.aliases:
            group = [n for n in group if n not in self.conflict]
            key = tuple(group)
            if not group or key in seen:
                continue
            seen.add(key)
            arity = self.opts[group[0]]
            tag = ""
            for n in group:
                t = TAGS.get((sub, n.lstrip("-"))) or TAGS.get(("*", n.lstrip("-")))
                if t:
                    tag = "!" + t
            token = "|".join(group) + arity + tag
            if re.match(r"^[-A-Za-z0-9|#]+(=|\[=\])?(![a-z]+)?$", token):
                tokens.append(token)
        return " ".join(sorted(set(tokens)))


def expand(name):
    """`--[no-]x` → (`--x`, `--no-x`): the negation is an option of its own (a flag)."""
    if name.startswith("--[no-]"):
        base = name[len("--[no-]") :]
        return ["--" + base], "--no-" + base
    return [name], None


def parse_help(text):
    t = Table()
    for line in text.splitlines():
        m = re.match(r"^ {4}(-\S.*)$", line)
        if not m:
            continue
        spec = re.split(r"\s{2,}", m.group(1))[0]
        items = [s.strip() for s in spec.split(", ")]
        names = []
        arity = ""
        for it in items:
            mm = re.match(r"^(--\[no-\][A-Za-z0-9][\w-]*|--?[A-Za-z0-9][\w-]*|-<n>|-<num>|-NUM)(.*)$", it)
            if not mm:
                continue
            n, rest = mm.group(1), mm.group(2).strip()
            if n in ("-<n>", "-<num>", "-NUM"):
                t.add(["-#"], "")
                continue
            pos, neg = expand(n)
            names.extend(pos)
            if neg:
                t.add([neg], "")
            raw = mm.group(2)
            # An argument attached in brackets is optional (`--x[=<v>]`, `-u[<mode>]`);
            # one after a space is required (`-C <n>`, `--fixup [(amend|reword):]commit`).
            # Anything else after the names is the help text (one space when names are long).
            if raw.startswith("["):
                arity = "[=]"
            elif raw.startswith("=") or re.match(r"^ [<(\[]", raw):
                arity = "="
        if names:
            t.add(names, arity)
    return t


def parse_completion(text):
    t = Table()
    for w in text.split():
        if w == "--" or not w.startswith("--"):
            continue
        if w.endswith("="):
            t.add([w[:-1]], "=")
        else:
            t.add([w], "")
    return t


def parse_man(sub):
    p = subprocess.run(
        ["man", "-P", "cat", "git-" + sub],
        capture_output=True,
        text=True,
        env=dict(os.environ, MANWIDTH="250", LANG="C", LC_ALL="C"),
    )
    t = Table()
    for line in p.stdout.splitlines():
        if not re.match(r"^ {7}-", line):
            continue
        for it in re.split(r",\s+(?=-)", line.strip()):
            mm = re.match(r"^(--\[no-\][A-Za-z0-9][\w-]*|--?[A-Za-z0-9][\w-]*|-<number>|-<n>|-<num>)(.*)$", it)
            if not mm:
                continue
            n, rest = mm.group(1), mm.group(2).strip()
            if n.startswith("-<"):
                t.add(["-#"], "")
                continue
            if " " in rest and not rest.startswith(("<", "[")):
                continue
            if rest.startswith("[="):
                arity = "[=]"
            elif rest.startswith("[") and not n.startswith("--"):
                arity = "[=]"
            elif rest:
                arity = "="
            else:
                arity = ""
            pos, neg = expand(n)
            t.add(pos, arity)
            if neg:
                t.add([neg], "")
    return t


REV_STYLE = {
    "log",
    "show",
    "whatchanged",
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "rev-list",
    "shortlog",
    "format-patch",
    "cherry",
    "range-diff",
    "blame",
    "annotate",
    "rev-parse",
}

# Subcommands whose options `-h` does not print: their manual pages only.
MAN_ONLY = {"bisect", "submodule", "sparse-checkout", "maintenance", "var", "credential"}


def table(sub):
    help_text = run([sub, "-h"])
    t = parse_help(help_text)
    comp = parse_completion(run([sub, "--git-completion-helper-all"]))
    # Long options -h does not print (hidden ones): arity from the helper.
    for group in comp.aliases:
        if group[0] not in t.opts:
            t.add(group, comp.opts[group[0]])
    # Second levels (`git stash push`, `git remote add`): their options too.
    for m in re.finditer(r"(?:usage:|or:)\s+git " + re.escape(sub) + r" (?:\[[^\]]*\] )?([a-z][a-z-]+)", help_text):
        level = m.group(1)
        t.merge(parse_help(run([sub, level, "-h"])))
    for m in re.finditer(r"git " + re.escape(sub) + r" \(([a-z| -]+)\)", help_text):
        for level in m.group(1).split("|"):
            t.merge(parse_help(run([sub, level.strip(), "-h"])))
    # `git config --get …`: the options of the form before its subcommands.
    if sub == "config":
        t.merge(parse_help(run([sub, "--list", "-h"])))
    if sub in MAN_ONLY:
        t.merge_missing(parse_man(sub))
    if sub in REV_STYLE or "<log-options>" in help_text or "<diff-options>" in help_text:
        t.merge_missing(parse_man(sub))
        if sub != "log":
            t.merge_missing(parse_man("log"))
        if sub != "diff":
            t.merge_missing(parse_man("diff"))
    extra = Table()
    for token in EXTRA.get(sub, "").split():
        extra.add([token], "")
    t.merge_missing(extra)
    return t


# Options the manual pages name only in their synopsis.
EXTRA = {
    "diff": "--cached --staged --merge-base --no-index",
}


# tar's options that run a program the line names, and those that write the archive
# named by `-f` (its signature must name the archive: docs/decisions.md, "Writing
# commands are signed whole").
TAR_TAGS = {
    "to-command": "code",
    "use-compress-program": "code",
    "checkpoint-action": "code",
    "info-script": "code",
    "new-volume-script": "code",
    "rsh-command": "code",
    "rmt-command": "code",
    "create": "exact",
    "append": "exact",
    "update": "exact",
    "catenate": "exact",
    "delete": "exact",
    "index-file": "exact",
    "volno-file": "exact",
}


def tar_table():
    """GNU tar's `--help` (argp): `  -x, --long=ARG  help`, `      --long[=ARG]  help`."""
    text = subprocess.run(["tar", "--help"], capture_output=True, text=True, env=dict(os.environ, LANG="C", LC_ALL="C")).stdout
    tokens = []
    for line in text.splitlines():
        if not re.match(r"^(  -\S|      --\S)", line):
            continue
        spec = re.split(r"\s{2,}", line.strip())[0]
        names, arity, tag = [], "", ""
        for it in spec.split(", "):
            mm = re.match(r"^(--?[A-Za-z0-9][\w-]*)(.*)$", it)
            if not mm:
                continue
            n, rest = mm.group(1), mm.group(2)
            names.append(n)
            if rest.startswith("[="):
                arity = "[=]"
            elif rest.startswith("=") or rest.startswith(" "):
                arity = "="
            t = TAR_TAGS.get(n.lstrip("-"))
            if t:
                tag = "!" + t
        if names:
            tokens.append("|".join(names) + arity + tag)
    version = text and subprocess.run(["tar", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return version, " ".join(sorted(set(tokens)))


def main():
    version = run(["--version"]).strip()
    out = [
        "//! Generated by `crates/shard-gate/tools/git_options.py` from " + version + ": the",
        "//! options of every git subcommand the gate models, in the notation of",
        "//! [`super::Model::parse_spec`]. Do not edit by hand; run the script again.",
        "",
        "/// (subcommand, options) for every git built-in the gate models.",
        "pub(super) const GIT: &[(&str, &str)] = &[",
    ]
    for sub in builtins():
        spec = table(sub).render(sub)
        out.append('    ("%s", "%s"),' % (sub, spec))
    out.append("];")
    tar_version, tar = tar_table()
    out.append("")
    out.append("/// GNU tar's options, from `tar --help` of " + tar_version + ".")
    out.append('pub(super) const TAR: &str = "%s";' % tar)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
