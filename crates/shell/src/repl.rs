//! The interactive source of commands: a rustyline editor with completion,
//! hints and a history file under the user's data directory. Ctrl-C cancels
//! the line being typed, Ctrl-D leaves; while a command runs, Ctrl-C sets the
//! interrupt flag that long commands poll.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustyline::config::Config;
use rustyline::error::ReadlineError;
use rustyline::history::{DefaultHistory, History};
use rustyline::Editor;

use crate::complete::ShellHelper;
use crate::input::{Input, Loc, Pending, Source};

/// Entries kept in the history file.
const HISTORY_SIZE: usize = 2000;

/// The history file: `$RDBX_HISTORY` (empty: none), else `rdbx/history`
/// under the user's data directory.
pub fn history_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RDBX_HISTORY") {
        return if p.is_empty() { None } else { Some(PathBuf::from(p)) };
    }
    dirs::data_dir().map(|d| d.join("rdbx").join("history"))
}

/// Makes Ctrl-C set `flag` instead of ending the process.
pub fn catch_interrupts(flag: &Arc<AtomicBool>) {
    let f = flag.clone();
    // Failure only means Ctrl-C keeps its default action.
    let _ = ctrlc::set_handler(move || f.store(true, Ordering::SeqCst));
}

pub struct Interactive {
    editor: Editor<ShellHelper, DefaultHistory>,
    history_file: Option<PathBuf>,
    pending: Pending,
}

impl Interactive {
    pub fn new(history_file: Option<PathBuf>) -> Result<Interactive, String> {
        let config = Config::builder()
            .max_history_size(HISTORY_SIZE)
            .and_then(|b| b.history_ignore_dups(true))
            .map_err(|e| e.to_string())?
            .history_ignore_space(true)
            .auto_add_history(false)
            .completion_type(rustyline::CompletionType::List)
            .build();
        let mut editor: Editor<ShellHelper, DefaultHistory> =
            Editor::with_config(config).map_err(|e| format!("cannot set up the terminal: {e}"))?;
        editor.set_helper(Some(ShellHelper::new()));
        let mut history_file = history_file;
        if let Some(p) = &history_file {
            if let Some(dir) = p.parent() {
                if let Err(e) = std::fs::create_dir_all(dir) {
                    eprintln!("rdbx: history is not kept: cannot create {}: {e}", dir.display());
                    history_file = None;
                }
            }
        }
        if let Some(p) = &history_file {
            if p.exists() {
                if let Err(e) = editor.load_history(p) {
                    eprintln!("rdbx: cannot read the history file {}: {e}", p.display());
                }
            }
        }
        Ok(Interactive { editor, history_file, pending: Pending::default() })
    }

    fn set_active(&mut self, on: bool) {
        if let Some(h) = self.editor.helper_mut() {
            h.active = on;
        }
    }

    fn ask(&mut self, prompt: &str) -> Option<String> {
        self.set_active(false);
        let r = self.editor.readline(prompt);
        self.set_active(true);
        r.ok()
    }
}

impl Source for Interactive {
    fn next(&mut self, prompt: &str) -> Input {
        loop {
            if let Some(i) = self.pending.pop() {
                return i;
            }
            self.set_active(true);
            match self.editor.readline(prompt) {
                Ok(line) => {
                    if line.trim().is_empty() {
                        continue;
                    }
                    if matches!(self.editor.add_history_entry(line.as_str()), Ok(true)) {
                        if let Some(p) = &self.history_file {
                            if let Err(e) = self.editor.append_history(p) {
                                eprintln!("rdbx: cannot write the history file {}: {e}", p.display());
                                self.history_file = None;
                            }
                        }
                    }
                    if let Err(e) = self.pending.push_line(&line, |_| Loc::Prompt) {
                        return Input::Error(e, Loc::Prompt);
                    }
                }
                // Ctrl-C: drop the line, prompt again.
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => return Input::Eof,
                Err(e) => {
                    eprintln!("rdbx: reading the terminal: {e}");
                    return Input::Eof;
                }
            }
        }
    }

    fn interactive(&self) -> bool {
        true
    }

    fn confirm(&mut self, question: &str) -> bool {
        self.ask(&format!("{question} [y/N] ")).is_some_and(|a| matches!(a.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
    }

    fn page_rows(&mut self) -> usize {
        match self.editor.dimensions() {
            // A terminal of unknown height (rustyline says "infinite").
            Some((_, u16::MAX)) => 40,
            Some((_, rows)) => (rows as usize).saturating_sub(6).max(5),
            None => 0,
        }
    }

    fn width(&mut self) -> Option<u16> {
        self.editor.dimensions().map(|(cols, _)| cols)
    }

    fn skip_rest(&mut self) -> usize {
        self.pending.clear()
    }

    fn history(&self) -> Vec<String> {
        let h = self.editor.history();
        (0..h.len())
            .filter_map(|i| h.get(i, rustyline::history::SearchDirection::Forward).ok().flatten())
            .map(|r| r.entry.into_owned())
            .collect()
    }

    fn set_tables(&mut self, names: Vec<String>) {
        if let Some(h) = self.editor.helper_mut() {
            h.tables = names;
        }
    }
}
