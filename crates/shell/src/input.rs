//! Where commands come from: `-c` arguments, a script on standard input (line
//! by line, as it arrives), or the interactive editor (see `repl`). Each
//! command carries where it was written so errors can name the line.

use std::collections::VecDeque;
use std::fmt;
use std::io::BufRead;

use crate::values::{open_quote, split_commands, Word};

/// Where a command was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// Line of a script.
    Line(u64),
    /// Command number in the `-c` text.
    Command(usize),
    /// Typed at the prompt.
    Prompt,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Line(n) => write!(f, "line {n}"),
            Loc::Command(n) => write!(f, "command {n}"),
            Loc::Prompt => f.write_str("prompt"),
        }
    }
}

/// The next thing to do.
pub enum Input {
    Command(Vec<Word>, Loc),
    /// A line that cannot be split into words (an unterminated quote...).
    Error(String, Loc),
    Eof,
}

/// A source of commands.
pub trait Source {
    /// The next command (showing `prompt` if interactive).
    fn next(&mut self, prompt: &str) -> Input;
    /// Whether a person is typing (errors do not stop the session then).
    fn interactive(&self) -> bool {
        false
    }
    /// Asks a yes/no question (no one to ask: no).
    fn confirm(&mut self, _question: &str) -> bool {
        false
    }
    /// Rows per page of listings (0: no paging).
    fn page_rows(&mut self) -> usize {
        0
    }
    /// Width of the terminal (None: not a terminal).
    fn width(&mut self) -> Option<u16> {
        None
    }
    /// Drops the commands still pending from the current line.
    fn skip_rest(&mut self) -> usize {
        0
    }
    /// The commands entered so far (oldest first).
    fn history(&self) -> Vec<String>;
    /// Table names, for completion.
    fn set_tables(&mut self, _names: Vec<String>) {}
    /// Whether standard input is free for data (`put KEY -`): the commands
    /// come from elsewhere (-c) and it is not the terminal.
    fn stdin_free(&self) -> bool {
        false
    }
}

/// Commands of a line not yet handed out.
#[derive(Default)]
pub struct Pending {
    queue: VecDeque<(Vec<Word>, Loc)>,
}

impl Pending {
    pub fn pop(&mut self) -> Option<Input> {
        self.queue.pop_front().map(|(w, l)| Input::Command(w, l))
    }
    pub fn push_line(&mut self, line: &str, loc: impl Fn(usize) -> Loc) -> Result<(), String> {
        for (i, c) in split_commands(line)?.into_iter().enumerate() {
            self.queue.push_back((c, loc(i)));
        }
        Ok(())
    }
    pub fn clear(&mut self) -> usize {
        let n = self.queue.len();
        self.queue.clear();
        n
    }
}

/// A script read line by line.
pub struct Script<R: BufRead> {
    input: R,
    line: u64,
    pending: Pending,
    seen: Vec<String>,
}

impl<R: BufRead> Script<R> {
    pub fn new(input: R) -> Self {
        Script { input, line: 0, pending: Pending::default(), seen: Vec::new() }
    }
}

impl<R: BufRead> Source for Script<R> {
    fn next(&mut self, _prompt: &str) -> Input {
        loop {
            if let Some(i) = self.pending.pop() {
                return i;
            }
            let mut buf = Vec::new();
            match self.input.read_until(b'\n', &mut buf) {
                Ok(0) => return Input::Eof,
                Ok(_) => {}
                Err(e) => return Input::Error(format!("cannot read the script: {e}"), Loc::Line(self.line + 1)),
            }
            self.line += 1;
            let loc = Loc::Line(self.line);
            let Ok(mut text) = String::from_utf8(buf) else {
                return Input::Error("the line is not valid UTF-8 (write binary data as 0x hex)".into(), loc);
            };
            // A quote left open goes on on the next lines (the command is
            // named by its first line).
            while open_quote(&text) {
                let mut more = Vec::new();
                match self.input.read_until(b'\n', &mut more) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                self.line += 1;
                match std::str::from_utf8(&more) {
                    Ok(m) => text.push_str(m),
                    Err(_) => {
                        return Input::Error("the line is not valid UTF-8 (write binary data as 0x hex)".into(), loc)
                    }
                }
            }
            let text = text.trim_end_matches(['\n', '\r']);
            if !text.trim().is_empty() {
                self.seen.push(text.to_string());
            }
            if let Err(e) = self.pending.push_line(text, |_| loc) {
                return Input::Error(e, loc);
            }
        }
    }

    fn skip_rest(&mut self) -> usize {
        self.pending.clear()
    }

    fn history(&self) -> Vec<String> {
        self.seen.clone()
    }
}

/// The commands of `-c` arguments (`;` or newlines between them).
pub struct Args {
    pending: Pending,
    texts: Vec<String>,
    error: Option<(String, usize)>,
}

impl Args {
    pub fn new(texts: Vec<String>) -> Self {
        let mut pending = Pending::default();
        let mut error = None;
        let mut n = 0;
        'all: for t in &texts {
            for line in lines_with_quotes(t) {
                let line = line.as_str();
                let start = n;
                match split_commands(line) {
                    Ok(cmds) => {
                        n += cmds.len();
                        let _ = pending.push_line(line, |i| Loc::Command(start + i + 1));
                    }
                    Err(e) => {
                        // Nothing runs when the text cannot be read whole.
                        pending.clear();
                        error = Some((e, n + 1));
                        break 'all;
                    }
                }
            }
        }
        Args { pending, texts, error }
    }
}

/// The lines of `text`, a line break inside quotes kept in its line.
fn lines_with_quotes(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        match out.last_mut() {
            Some(last) if open => {
                last.push('\n');
                last.push_str(line);
            }
            _ => out.push(line.to_string()),
        }
        open = open_quote(out.last().map_or("", String::as_str));
    }
    out
}

impl Source for Args {
    fn next(&mut self, _prompt: &str) -> Input {
        if let Some((e, n)) = self.error.take() {
            return Input::Error(e, Loc::Command(n));
        }
        self.pending.pop().unwrap_or(Input::Eof)
    }

    fn skip_rest(&mut self) -> usize {
        0
    }

    fn history(&self) -> Vec<String> {
        self.texts.clone()
    }

    fn stdin_free(&self) -> bool {
        !std::io::IsTerminal::is_terminal(&std::io::stdin())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(s: &mut dyn Source) -> Vec<String> {
        let mut v = Vec::new();
        loop {
            match s.next("") {
                Input::Command(w, l) => v.push(format!("{l}: {}", w[0].text())),
                Input::Error(e, l) => v.push(format!("{l}: error {e}")),
                Input::Eof => return v,
            }
        }
    }

    #[test]
    fn script_lines() {
        let mut s = Script::new(&b"tables\n\nget a; get b\r\n# note\nscan\n"[..]);
        assert_eq!(drain(&mut s), vec!["line 1: tables", "line 3: get", "line 3: get", "line 5: scan"]);
        assert_eq!(s.history().len(), 4);
    }

    #[test]
    fn quotes_span_lines() {
        let mut s = Script::new(&b"put k \"one\ntwo\"; get k\nget x\n"[..]);
        assert_eq!(drain(&mut s), vec!["line 1: put", "line 1: get", "line 3: get"]);
        let mut a = Args::new(vec!["put k 'a\nb'\nget k".into()]);
        match a.next("") {
            Input::Command(w, _) => assert_eq!(w[2].bytes, b"a\nb"),
            _ => panic!("no command"),
        }
        assert_eq!(drain(&mut a), vec!["command 2: get"]);
        // Still open at the end: an error naming the quote.
        let mut s = Script::new(&b"get \"x\nscan\n"[..]);
        assert_eq!(drain(&mut s), vec!["line 1: error unterminated double quote (opened at column 5)"]);
    }

    #[test]
    fn command_numbers() {
        let mut a = Args::new(vec!["tables; get a".into(), "scan\nstat".into()]);
        assert_eq!(drain(&mut a), vec!["command 1: tables", "command 2: get", "command 3: scan", "command 4: stat"]);
        let mut a = Args::new(vec!["get a; get \"b".into()]);
        assert_eq!(drain(&mut a), vec!["command 1: error unterminated double quote (opened at column 12)"]);
    }
}
