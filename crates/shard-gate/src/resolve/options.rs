//! The option models of the programs the gate reads closely (git and each of its
//! subcommands, sed, make, tar, sort): every option the real program accepts, with its
//! arity, read the way the program's own parser reads it (GNU `getopt_long`, git's
//! parse-options): clusters (`-ne 'cmd'`, `-i.bak`, `-l5`), `--opt=value` and
//! `--opt value`, unique-prefix abbreviations (`--e=`, `--upload-p=`). An option the model
//! does not declare, an abbreviation that is not unique, or a word that could be read two
//! ways makes the whole call *not understood*: it is then treated as running anything.
//! Allow-lists, not deny-lists: what is not known is never taken as harmless.
//!
//! A model is a spec string of space-separated options: `-e|--expression=!script` is one
//! option with its names (the first long name is canonical), its arity (nothing: a flag;
//! `=`: takes a value, attached or the next word; `[=]`: an optional value, attached only;
//! `#`: an optional number, attached or the next word if it is one, as make's `-j`) and a
//! tag (`!code`, `!exact`, `!nosign`, `!script`, see [`Tag`]). `-#` admits `-NUM`.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::shell::Word;

mod git_table;

/// What an option takes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arity {
    Flag,
    Required,
    Optional,
    Number,
}

/// What an option means for the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// Nothing special.
    Plain,
    /// Runs a program or code the line names (`--upload-pack`, `--eval`, `-f script`):
    /// the call may run anything.
    Code,
    /// Names what the call overwrites or destroys (`tar -c`, `sort -o`, `git push
    /// --force`): a signature must be the whole command.
    Exact,
    /// Changes files in a way no signature should cover (`sed -i`), without running code.
    NoSign,
    /// Its value is a sed script.
    Script,
}

/// One option as the program reads it.
#[derive(Debug, Clone)]
pub struct Opt {
    /// The canonical name (`--expression` for `-e`, `--e=` and `--expr`).
    pub name: &'static str,
    /// Its value, when it took one.
    pub value: Option<Word>,
    /// What it means for the gate.
    pub tag: Tag,
}

/// A call read completely: its options and operands, in order.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// Every option given.
    pub options: Vec<Opt>,
    /// Every operand (the words that are not options or their values).
    pub operands: Vec<Word>,
}

impl Parsed {
    /// True when some option has this tag.
    pub fn has(&self, tag: Tag) -> bool {
        self.options.iter().any(|o| o.tag == tag)
    }
}

/// A program's options.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    spec: &'static str,
    /// Its place in the compiled models ([`compiled`]): 0–3 sed, make, tar, sort; then
    /// git's subcommands in table order.
    slot: usize,
    /// `--end-of-options` ends the options, as `--` does (git).
    end_of_options_word: bool,
}

struct OptSpec {
    /// Its names joined by `|` (kept as written: no allocation per option).
    names: &'static str,
    arity: Arity,
    tag: Tag,
}

impl OptSpec {
    fn canonical(&self) -> &'static str {
        let mut all = self.names.split('|');
        self.names
            .split('|')
            .find(|n| n.starts_with("--"))
            .or(all.next())
            .unwrap_or_default()
    }
}

fn parse_token(token: &'static str) -> OptSpec {
    let (body, tag) = match token.split_once('!') {
        Some((b, "code")) => (b, Tag::Code),
        Some((b, "exact")) => (b, Tag::Exact),
        Some((b, "nosign")) => (b, Tag::NoSign),
        Some((b, "script")) => (b, Tag::Script),
        // An unknown tag is read as the strictest one.
        Some((b, _)) => (b, Tag::Code),
        None => (token, Tag::Plain),
    };
    let (names, arity) = if body == "-#" {
        (body, Arity::Flag)
    } else if let Some(n) = body.strip_suffix("[=]") {
        (n, Arity::Optional)
    } else if let Some(n) = body.strip_suffix('=') {
        (n, Arity::Required)
    } else if let Some(n) = body.strip_suffix('#') {
        (n, Arity::Number)
    } else {
        (body, Arity::Flag)
    };
    OptSpec { names, arity, tag }
}

/// The model of `git SUB`, when SUB is a built-in the gate knows.
pub fn git(sub: &str) -> Option<Model> {
    git_table::GIT
        .iter()
        .position(|(s, _)| *s == sub)
        .map(|i| Model {
            spec: git_table::GIT[i].1,
            slot: FIRST_GIT_SLOT + i,
            end_of_options_word: true,
        })
}

/// GNU sed 4.9 (`sed --help`); `-b`/`--binary` is accepted on every platform.
pub const SED: Model = Model {
    slot: 0,
    spec: "-n|--quiet|--silent --debug -e|--expression=!script -f|--file=!code \
           --follow-symlinks -i|--in-place[=]!nosign -l|--line-length= --posix \
           -E|-r|--regexp-extended -s|--separate!nosign --sandbox -u|--unbuffered \
           -z|--null-data|--zero-terminated -b|--binary --help --version",
    end_of_options_word: false,
};

/// GNU make 4.4 (`make --help`, with 4.4's `--shuffle` and `--jobserver-style`).
pub const MAKE: Model = Model {
    slot: 1,
    spec: "-b -m -B|--always-make -C|--directory= -d --debug[=] -e|--environment-overrides \
           -E|--eval=!code -f|--file|--makefile= -h|--help -i|--ignore-errors \
           -I|--include-dir= -j|--jobs# -k|--keep-going -l|--load-average|--max-load# \
           -L|--check-symlink-times -n|--just-print|--dry-run|--recon \
           -o|--old-file|--assume-old= -O|--output-sync[=] -p|--print-data-base \
           -q|--question -r|--no-builtin-rules -R|--no-builtin-variables \
           -s|--silent|--quiet --no-silent -S|--no-keep-going|--stop -t|--touch --trace \
           -v|--version -w|--print-directory --no-print-directory \
           -W|--what-if|--new-file|--assume-new= --warn-undefined-variables --shuffle[=] \
           --jobserver-style=",
    end_of_options_word: false,
};

/// GNU tar (generated with the git tables).
pub const TAR: Model = Model {
    slot: 2,
    spec: git_table::TAR,
    end_of_options_word: false,
};

/// GNU coreutils sort 9 (`sort --help`).
pub const SORT: Model = Model {
    slot: 3,
    spec: "-b|--ignore-leading-blanks -d|--dictionary-order -f|--ignore-case \
           -g|--general-numeric-sort -i|--ignore-nonprinting -M|--month-sort \
           -h|--human-numeric-sort -n|--numeric-sort -R|--random-sort --random-source= \
           -r|--reverse --sort= -V|--version-sort --batch-size= -c|--check[=] -C \
           --compress-program=!code --debug --files0-from= -k|--key= -m|--merge \
           -o|--output=!exact -s|--stable -S|--buffer-size= -t|--field-separator= \
           -T|--temporary-directory= --parallel= -u|--unique -z|--zero-terminated --help \
           --version",
    end_of_options_word: false,
};

/// The next word as an option's value: `getopt_long` and parse-options take it whatever
/// it looks like (`-m -x` gives `-m` the value `-x`).
fn value_word(w: Option<&Word>) -> Option<Word> {
    w.cloned()
}

fn attached(text: &str) -> Word {
    Word {
        text: text.to_string(),
        dynamic: false,
    }
}

const FIRST_GIT_SLOT: usize = 4;

/// A model read once: its options, every name to its option, and the long names sorted
/// for prefix search.
struct Compiled {
    specs: Vec<OptSpec>,
    by_name: HashMap<&'static str, usize>,
    longs: Vec<(&'static str, usize)>,
}

impl Compiled {
    fn new(spec: &'static str) -> Compiled {
        let specs: Vec<OptSpec> = spec.split_whitespace().map(parse_token).collect();
        let mut by_name = HashMap::new();
        let mut longs = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            for n in s.names.split('|') {
                by_name.entry(n).or_insert(i);
                if n.starts_with("--") {
                    longs.push((n, i));
                }
            }
        }
        longs.sort_unstable();
        Compiled {
            specs,
            by_name,
            longs,
        }
    }

    fn get(&self, name: &str) -> Option<&OptSpec> {
        self.by_name.get(name).map(|&i| &self.specs[i])
    }
}

/// Every model, compiled on first use (the git tables hold thousands of options; a
/// decision reads a line's git call several times).
fn compiled() -> &'static [Compiled] {
    static ALL: OnceLock<Vec<Compiled>> = OnceLock::new();
    ALL.get_or_init(|| {
        [SED.spec, MAKE.spec, TAR.spec, SORT.spec]
            .into_iter()
            .chain(git_table::GIT.iter().map(|(_, spec)| *spec))
            .map(Compiled::new)
            .collect()
    })
}

impl Model {
    fn options(&self) -> Option<&'static Compiled> {
        compiled().get(self.slot)
    }

    /// Reads `words` (the arguments after the program, or after git's subcommand) as the
    /// program does, options and operands mixed (GNU permutation). `None` when any word
    /// is not understood with certainty: an undeclared option, an abbreviation that is
    /// not unique, a value the program would not take, a dynamic word where an option
    /// may stand.
    pub fn parse(&self, words: &[Word]) -> Option<Parsed> {
        let specs = self.options()?;
        let mut out = Parsed::default();
        let mut i = 0;
        let mut options_ended = false;
        while i < words.len() {
            let w = &words[i];
            i += 1;
            let t = w.text.as_str();
            if options_ended {
                out.operands.push(w.clone());
                continue;
            }
            if w.dynamic {
                // `$X` may expand to an option.
                return None;
            }
            if t == "--" || (self.end_of_options_word && t == "--end-of-options") {
                options_ended = true;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                let spec = lookup_long(specs, name)?;
                let value = match (spec.arity, value) {
                    (Arity::Flag, Some(_)) => return None,
                    (Arity::Flag, None) => None,
                    (_, Some(v)) => Some(attached(v)),
                    (Arity::Required, None) => {
                        let v = value_word(words.get(i))?;
                        i += 1;
                        Some(v)
                    }
                    (Arity::Number, None) => number_after(words, &mut i),
                    (Arity::Optional, None) => None,
                };
                out.options.push(Opt {
                    name: spec.canonical(),
                    value,
                    tag: spec.tag,
                });
                continue;
            }
            let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) else {
                out.operands.push(w.clone());
                continue;
            };
            if cluster.chars().all(|c| c.is_ascii_digit()) {
                // `git log -5`, `grep -3`.
                specs.get("-#")?;
                out.options.push(Opt {
                    name: "-#",
                    value: Some(attached(cluster)),
                    tag: Tag::Plain,
                });
                continue;
            }
            for (pos, c) in cluster.char_indices() {
                let spec = lookup_short(specs, c)?;
                let rest = &cluster[pos + c.len_utf8()..];
                let value = match spec.arity {
                    Arity::Flag => None,
                    _ if !rest.is_empty() => Some(attached(rest)),
                    Arity::Required => {
                        let v = value_word(words.get(i))?;
                        i += 1;
                        Some(v)
                    }
                    Arity::Number => number_after(words, &mut i),
                    Arity::Optional => None,
                };
                let ends = spec.arity != Arity::Flag;
                out.options.push(Opt {
                    name: spec.canonical(),
                    value,
                    tag: spec.tag,
                });
                if ends {
                    break;
                }
            }
        }
        Some(out)
    }
}

/// make's `-j 4`: the next word is the option's value when it is a number.
fn number_after(words: &[Word], i: &mut usize) -> Option<Word> {
    let w = words.get(*i)?;
    if !w.dynamic && !w.text.is_empty() && w.text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        *i += 1;
        return Some(w.clone());
    }
    None
}

fn lookup_short(specs: &Compiled, c: char) -> Option<&OptSpec> {
    let mut buf = [0u8; 4];
    specs.get(&format!("-{}", c.encode_utf8(&mut buf)))
}

/// An exact long name, or the one option a prefix abbreviates; `None` when it names no
/// option or more than one (the program would refuse it, or a newer one read it another
/// way).
fn lookup_long<'a>(specs: &'a Compiled, name: &str) -> Option<&'a OptSpec> {
    if name.is_empty() {
        return None;
    }
    let full = format!("--{name}");
    if let Some(s) = specs.get(&full) {
        return Some(s);
    }
    let start = specs.longs.partition_point(|(n, _)| *n < full.as_str());
    let mut found: Option<usize> = None;
    for (n, i) in &specs.longs[start..] {
        if !n.starts_with(full.as_str()) {
            break;
        }
        if found.is_some_and(|f| f != *i) {
            return None;
        }
        found = Some(*i);
    }
    found.map(|i| &specs.specs[i])
}

/// Words for `parse` from plain strings (arguments known to be literal).
pub fn literal_words(args: &[String]) -> Vec<Word> {
    args.iter().map(|a| attached(a)).collect()
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
