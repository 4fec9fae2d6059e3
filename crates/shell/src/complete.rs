//! Tab completion and hints for the interactive editor: command names, their
//! options, table names, output formats and file paths; the usage of the
//! command being typed is hinted in grey.

use std::borrow::Cow;

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::{Hint, Hinter};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::Context;

use crate::access::MAIN;
use crate::output::Format;
use crate::spec::{self, Kind, COMMANDS};

/// The editor's helper.
pub struct ShellHelper {
    /// Table names as they are typed (quoted when needed).
    pub tables: Vec<String>,
    /// Off while asking yes/no or "more?".
    pub active: bool,
    files: FilenameCompleter,
}

impl ShellHelper {
    pub fn new() -> Self {
        ShellHelper { tables: Vec::new(), active: true, files: FilenameCompleter::new() }
    }
}

/// The words of the command under the cursor: the finished words, and the
/// start of the word being typed (`pos` when none is).
struct Parsed<'l> {
    words: Vec<String>,
    partial: &'l str,
    partial_start: usize,
}

fn parse_before(before: &str) -> Parsed<'_> {
    let mut words = Vec::new();
    let mut start: Option<usize> = None;
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for (i, c) in before.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None => match c {
                '"' | '\'' => {
                    start.get_or_insert(i);
                    quote = Some(c);
                }
                ';' => {
                    words.clear();
                    cur.clear();
                    start = None;
                }
                c if c.is_whitespace() => {
                    if start.take().is_some() {
                        words.push(std::mem::take(&mut cur));
                    }
                }
                c => {
                    start.get_or_insert(i);
                    cur.push(c);
                }
            },
        }
    }
    match start {
        Some(s) => Parsed { words, partial: &before[s..], partial_start: s },
        None => Parsed { words, partial: "", partial_start: before.len() },
    }
}

fn candidates<'a>(items: impl IntoIterator<Item = &'a str>, partial: &str) -> Vec<Pair> {
    let mut v: Vec<Pair> = items
        .into_iter()
        .filter(|c| c.starts_with(partial))
        .map(|c| Pair { display: c.to_string(), replacement: format!("{c} ") })
        .collect();
    v.sort_by(|a, b| a.display.cmp(&b.display));
    v.dedup_by(|a, b| a.display == b.display);
    v
}

impl ShellHelper {
    fn values(&self, kind: Kind, cmd: &str, partial: &str, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        let start = pos - partial.len();
        let v = match kind {
            Kind::Table => {
                let mut t: Vec<&str> = self.tables.iter().map(String::as_str).collect();
                t.push(MAIN);
                candidates(t, partial)
            }
            Kind::Command => candidates(COMMANDS.iter().map(|c| c.name), partial),
            Kind::Format => candidates(Format::NAMES, partial),
            Kind::Mode => candidates(["ro", "rw"], partial),
            Kind::Switch => candidates(["on", "off"], partial),
            Kind::ItemMode => candidates(crate::output::ItemMode::NAMES, partial),
            Kind::Number if cmd == "pager" => candidates(["auto", "off"], partial),
            Kind::Path => {
                return self.files.complete_path(line, pos).unwrap_or((pos, Vec::new()));
            }
            _ => Vec::new(),
        };
        (start, v)
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        if !self.active || !line.is_char_boundary(pos) {
            return Ok((pos, Vec::new()));
        }
        let p = parse_before(&line[..pos]);
        if p.words.is_empty() {
            let dotted = p.partial.starts_with('.');
            let names: Vec<String> =
                COMMANDS.iter().map(|c| if dotted { format!(".{}", c.name) } else { c.name.to_string() }).collect();
            return Ok((p.partial_start, candidates(names.iter().map(String::as_str), p.partial)));
        }
        let Some(cmd) = spec::find(&p.words[0]) else {
            return Ok((pos, Vec::new()));
        };
        // The value of an option?
        if let Some(o) = p.words.last().filter(|w| w.starts_with('-')).and_then(|w| cmd.opt(w)) {
            if let Some((_, kind)) = o.value {
                return Ok(self.values(kind, cmd.name, p.partial, line, pos));
            }
        }
        if p.partial.starts_with('-') {
            let names: Vec<String> = cmd.opts.iter().map(|o| format!("--{}", o.name)).collect();
            return Ok((p.partial_start, candidates(names.iter().map(String::as_str), p.partial)));
        }
        // Which positional argument is this?
        let mut index = 0;
        let mut rest = p.words[1..].iter();
        while let Some(w) = rest.next() {
            match cmd.opt(w) {
                Some(o) if w.starts_with('-') => {
                    if o.value.is_some() {
                        rest.next();
                    }
                }
                _ => index += 1,
            }
        }
        match cmd.args.get(index) {
            Some((_, kind)) => Ok(self.values(*kind, cmd.name, p.partial, line, pos)),
            None => Ok((pos, Vec::new())),
        }
    }
}

/// A hint: the usage of the command being typed. Only the rest of the
/// command's name is inserted by the right arrow key.
pub struct UsageHint {
    display: String,
    insert: Option<String>,
}

impl Hint for UsageHint {
    fn display(&self) -> &str {
        &self.display
    }
    fn completion(&self) -> Option<&str> {
        self.insert.as_deref()
    }
}

impl Hinter for ShellHelper {
    type Hint = UsageHint;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<UsageHint> {
        if !self.active || pos < line.len() {
            return None;
        }
        let p = parse_before(line);
        if p.words.is_empty() && !p.partial.is_empty() {
            let typed = p.partial.trim_start_matches('.');
            let matches: Vec<_> = COMMANDS.iter().filter(|c| c.name.starts_with(typed)).collect();
            let c = match matches.as_slice() {
                [one] => *one,
                _ => matches.iter().find(|c| c.name == typed)?,
            };
            let rest = &c.name[typed.len()..];
            return Some(UsageHint { display: format!("{rest}{}", c.args_usage()), insert: Some(rest.to_string()) });
        }
        if p.words.len() == 1 && p.partial.is_empty() {
            let c = spec::find(&p.words[0])?;
            let usage = c.args_usage();
            let usage = usage.trim_start();
            if !usage.is_empty() {
                return Some(UsageHint { display: usage.to_string(), insert: None });
            }
        }
        None
    }
}

impl Highlighter for ShellHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
    }
}

/// A line that ends inside a quote is not done: Enter goes on to the next
/// line (the line break is part of the quoted value).
impl Validator for ShellHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if self.active && crate::values::open_quote(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl rustyline::Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;
    use rustyline::history::DefaultHistory;

    fn complete(h: &ShellHelper, line: &str) -> (usize, Vec<String>) {
        let hist = DefaultHistory::new();
        let ctx = Context::new(&hist);
        let (start, c) = h.complete(line, line.len(), &ctx).unwrap();
        (start, c.into_iter().map(|p| p.replacement).collect())
    }

    fn hint(h: &ShellHelper, line: &str) -> Option<String> {
        let hist = DefaultHistory::new();
        let ctx = Context::new(&hist);
        h.hint(line, line.len(), &ctx).map(|h| h.display)
    }

    #[test]
    fn completes_commands_options_tables() {
        let mut h = ShellHelper::new();
        h.tables = vec!["fruit".into(), "numbers".into(), "\"two words\"".into()];
        assert_eq!(complete(&h, "sc"), (0, vec!["scan ".to_string()]));
        assert_eq!(complete(&h, "get a; sc").1, vec!["scan ".to_string()]);
        assert_eq!(complete(&h, "use f"), (4, vec!["fruit ".to_string()]));
        assert_eq!(complete(&h, "use ").1.len(), 4);
        assert_eq!(complete(&h, "use \"tw").1, vec!["\"two words\" ".to_string()]);
        assert_eq!(complete(&h, "scan --re").1, vec!["--reverse ".to_string()]);
        assert_eq!(complete(&h, "scan --table n").1, vec!["numbers ".to_string()]);
        assert_eq!(complete(&h, "scan -t n").1, vec!["numbers ".to_string()]);
        assert_eq!(complete(&h, "create x --dup").1, vec!["--dupfixed ".to_string(), "--dupsort ".to_string()]);
        assert_eq!(complete(&h, "format j").1, vec!["json ".to_string()]);
        assert_eq!(complete(&h, "help est").1, vec!["estimate-range ".to_string()]);
        assert_eq!(complete(&h, ".ta").1, vec![".tables ".to_string()]);
        assert!(complete(&h, "get ").1.is_empty());
        assert!(complete(&h, "nosuch ").1.is_empty());
    }

    #[test]
    fn hints_usage() {
        let h = ShellHelper::new();
        assert_eq!(hint(&h, "sca").unwrap(), format!("n{}", spec::find("scan").unwrap().args_usage()));
        assert_eq!(hint(&h, "get ").unwrap(), "KEY [--table TABLE]");
        assert!(hint(&h, "s").is_none());
        assert!(hint(&h, "get k").is_none());
        assert_eq!(hint(&h, "use").unwrap(), " [TABLE]");
    }
}
