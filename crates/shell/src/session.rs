//! A shell session: the loop that takes commands from a source and runs them,
//! explicit (and nested) write transactions, opening and closing databases,
//! and how errors are reported (scripts stop at the first one and name its
//! line; a person gets one line and goes on).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rdbx::RwTxn;

use crate::access::{ReadTxn, MAIN};
use crate::commands::{self, Action, Fail};
use crate::db::{self, Found, Opened};
use crate::input::{Input, Loc, Source};
use crate::output::Out;
use crate::pager::ScreenPager;
use crate::spec;
use crate::values::{hex, quote_for_input};

/// Rows per page of listings in the interactive shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pager {
    /// The terminal's height.
    Auto,
    Rows(usize),
    Off,
}

/// What to open (see the `open` command).
#[derive(Debug, Clone)]
pub struct OpenRequest {
    /// `None`: the current database again.
    pub path: Option<PathBuf>,
    pub read_only: bool,
    pub create: bool,
    /// With `create`: the no-subdir layout.
    pub single_file: bool,
}

/// Why a command loop ended.
enum End {
    Quit,
    Eof,
    /// A script stopped at an error (or the output went away).
    Stop,
    Open(OpenRequest, Loc),
    Close,
    Commit,
    Abort,
}

pub struct Session {
    pub out: Out,
    /// The current table (`None`: the main table).
    pub table: Option<Vec<u8>>,
    pub keep_going: bool,
    pub pager: Pager,
    /// Set by Ctrl-C while a command runs.
    pub interrupt: Arc<AtomicBool>,
    /// A command failed (decides the exit code of scripts).
    pub failed: bool,
    pub interactive: bool,
    /// `timer on`: the time of each command on stderr.
    pub timer: bool,
}

impl Session {
    pub fn new(out: Out, interactive: bool, interrupt: Arc<AtomicBool>) -> Session {
        Session {
            out,
            table: None,
            keep_going: false,
            pager: Pager::Auto,
            interrupt,
            failed: false,
            interactive,
            timer: false,
        }
    }

    /// Whether Ctrl-C was pressed since the command started.
    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// A confirmation for people (the interactive shell only).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        if self.interactive {
            self.out.message(text)?;
        }
        Ok(())
    }

    /// A warning on standard error.
    pub fn warn(&mut self, text: &str) {
        let _ = self.out.flush();
        eprintln!("rdbx: warning: {text}");
    }

    /// The pager of the interactive shell (none in scripts or with
    /// `pager off`): `pager N` pages by N screen lines, `auto` by the
    /// terminal's height.
    fn screen_pager(&self, src: &mut dyn Source) -> Option<ScreenPager> {
        if !src.interactive() {
            return None;
        }
        // A terminal that does not tell its size (0): 80 columns, 40 lines.
        let (cols, rows) = crossterm::terminal::size().map(|(c, r)| (c as usize, r as usize)).unwrap_or((0, 0));
        let (cols, rows) = (if cols == 0 { 80 } else { cols }, if rows == 0 { 40 } else { rows });
        match self.pager {
            Pager::Off => None,
            Pager::Rows(n) => Some(ScreenPager::new(n, cols)),
            Pager::Auto => Some(ScreenPager::new(rows, cols)),
        }
    }

    /// Rows per page for a listing now (0: no paging). Scripts page only
    /// when told to (`pager N`), and do not pause.
    pub fn page_rows(&self, src: &mut dyn Source) -> usize {
        match self.pager {
            Pager::Off => 0,
            Pager::Rows(n) => n,
            Pager::Auto => src.page_rows(),
        }
    }

    /// Reports a failed command. Returns whether the session must stop.
    fn fail(&mut self, loc: Loc, cmd: Option<&str>, msg: &str, src: &mut dyn Source) -> bool {
        let _ = self.out.flush();
        let cmd = cmd.map(|c| format!("{c}: ")).unwrap_or_default();
        if src.interactive() {
            eprintln!("error: {cmd}{msg}");
            let skipped = src.skip_rest();
            if skipped > 0 {
                eprintln!("(the {skipped} command(s) after it on the line were not run)");
            }
            false
        } else {
            eprintln!("rdbx: {loc}: {cmd}{msg}");
            self.failed = true;
            !self.keep_going
        }
    }

    fn prompt(&self, db: Option<&Opened>, depth: usize) -> String {
        let Some(o) = db else { return "rdbx> ".into() };
        let mode = if o.read_only { "ro" } else { "rw" };
        let txn = match depth {
            0 => String::new(),
            1 => " txn".into(),
            n => format!(" txn:{n}"),
        };
        let table = match &self.table {
            None => MAIN.to_string(),
            Some(n) => typed_form(n),
        };
        format!("{} [{mode}{txn}] {table}> ", o.short_name())
    }

    /// Hands the table names to the completer (interactive only).
    fn refresh_tables(&self, db: Option<&Opened>, txn: Option<&RwTxn<'_>>, src: &mut dyn Source) {
        if !src.interactive() {
            return;
        }
        let names = match (txn, db) {
            (Some(t), _) => t.table_names().ok(),
            (None, Some(o)) => o.env.begin_ro_txn().ok().and_then(|t| t.table_names().ok()),
            (None, None) => Some(Vec::new()),
        };
        if let Some(n) = names {
            src.set_tables(n.iter().map(|n| typed_form(n)).collect());
        }
    }

    /// Runs commands from `src` until it ends; `db` is the database opened at
    /// the start (if any).
    pub fn run(&mut self, mut db: Option<Opened>, src: &mut dyn Source) {
        loop {
            self.refresh_tables(db.as_ref(), None, src);
            match self.command_loop(db.as_ref(), None, 0, src) {
                End::Open(req, loc) => {
                    let (new, stop) = self.reopen(db.take(), req, loc, src);
                    db = new;
                    if stop {
                        break;
                    }
                }
                End::Close => {
                    if let Some(o) = db.take() {
                        let shown = o.path.display().to_string();
                        drop(o);
                        self.table = None;
                        let _ = self.note(&format!("closed {shown}"));
                    }
                }
                End::Quit | End::Eof | End::Stop | End::Commit | End::Abort => break,
            }
        }
        let _ = self.out.flush();
    }

    fn command_loop<'e>(
        &mut self,
        db: Option<&'e Opened>,
        mut txn: Option<&mut RwTxn<'e>>,
        depth: usize,
        src: &mut dyn Source,
    ) -> End {
        loop {
            if self.out.flush().is_err() {
                return End::Stop;
            }
            let prompt = self.prompt(db, depth);
            let (words, loc) = match src.next(&prompt) {
                Input::Eof => return End::Eof,
                Input::Error(msg, loc) => {
                    if self.fail(loc, None, &msg, src) {
                        return End::Stop;
                    }
                    continue;
                }
                Input::Command(w, l) => (w, l),
            };
            self.interrupt.store(false, Ordering::SeqCst);
            self.out.width = src.width();
            let name = spec::find(&words[0].text()).map(|s| s.name);
            let started = std::time::Instant::now();
            // The interactive shell pages every command's output by screen
            // lines; it is held while the command runs (so that no snapshot
            // is held while the pager waits) and shown when it is done.
            let pager = self.screen_pager(src);
            let paged = pager.is_some();
            self.out.set_pager(pager);
            if paged {
                self.out.hold();
            }
            let r = commands::execute(self, db, txn.as_deref_mut(), &words, src);
            let flushed = if paged { self.out.release().map(|_| ()) } else { self.out.flush() };
            self.out.set_pager(None);
            if self.timer {
                eprintln!("time: {}", human_duration(started.elapsed()));
            }
            match r {
                Ok(Action::Done) => {}
                Ok(Action::Quit) => {
                    if depth == 0 || !src.interactive() || self.confirm_quit(txn.as_deref(), src) {
                        return End::Quit;
                    }
                }
                Ok(Action::Open(req)) => return End::Open(req, loc),
                Ok(Action::Close) => return End::Close,
                Ok(Action::Commit) => return End::Commit,
                Ok(Action::Abort) => return End::Abort,
                Ok(Action::Begin) => {
                    if let Some(end) = self.transaction(db, txn.as_deref_mut(), depth, loc, src) {
                        return end;
                    }
                }
                Err(Fail::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => return End::Stop,
                Err(f) => {
                    if self.fail(loc, name, &f.to_string(), src) {
                        return End::Stop;
                    }
                }
            }
            if flushed.is_err() {
                return End::Stop;
            }
            if matches!(name, Some("create" | "drop" | "load" | "tables")) {
                self.refresh_tables(db, txn.as_deref(), src);
            }
        }
    }

    /// Runs an explicit transaction (nested in `parent` if there is one)
    /// until commit or abort. Returns how the enclosing loop must end, if it must.
    fn transaction<'e>(
        &mut self,
        db: Option<&'e Opened>,
        parent: Option<&mut RwTxn<'e>>,
        depth: usize,
        loc: Loc,
        src: &mut dyn Source,
    ) -> Option<End> {
        let db = db?;
        let level = depth + 1;
        match parent {
            None => {
                let mut t = match commands::begin_write(&db.env, &self.interrupt) {
                    Ok(t) => t,
                    Err(e) => {
                        let msg = commands::describe(&e);
                        return self.fail(loc, Some("begin"), &msg, src).then_some(End::Stop);
                    }
                };
                let id = t.id();
                let _ = self.note(&format!("transaction {id} started (commit or abort it; other writers wait)"));
                let end = self.command_loop(Some(db), Some(&mut t), level, src);
                match end {
                    End::Commit => match t.commit() {
                        Ok(()) => {
                            let _ = self.note(&format!("committed transaction {id}"));
                            None
                        }
                        Err(e) => {
                            let msg = format!("{} (the transaction was rolled back)", commands::describe(&e));
                            self.fail(loc, Some("commit"), &msg, src).then_some(End::Stop)
                        }
                    },
                    End::Abort => {
                        t.abort();
                        let _ = self.note(&format!("aborted transaction {id}: its changes are discarded"));
                        if let Ok(r) = db.env.begin_ro_txn() {
                            self.forget_missing_table(&r);
                        }
                        None
                    }
                    other => {
                        drop(t);
                        Some(self.left_open(other, loc, src))
                    }
                }
            }
            Some(p) => {
                let mut child = match p.begin_nested_txn() {
                    Ok(c) => c,
                    Err(e) => {
                        let msg = commands::describe(&e);
                        return self.fail(loc, Some("begin"), &msg, src).then_some(End::Stop);
                    }
                };
                let _ = self.note(&format!("nested transaction started (level {level})"));
                let end = self.command_loop(Some(db), Some(&mut child), level, src);
                match end {
                    End::Commit => match child.commit() {
                        Ok(()) => {
                            let _ = self.note(&format!("nested transaction committed into level {depth}"));
                            None
                        }
                        Err(e) => {
                            let msg = commands::describe(&e);
                            self.fail(loc, Some("commit"), &msg, src).then_some(End::Stop)
                        }
                    },
                    End::Abort => {
                        child.abort();
                        let _ = self.note(&format!("nested transaction aborted; back at level {depth}"));
                        self.forget_missing_table(&*p);
                        None
                    }
                    other => {
                        drop(child);
                        Some(other)
                    }
                }
            }
        }
    }

    /// After an abort the current table may be gone (created in the
    /// transaction): the main table becomes current then.
    fn forget_missing_table(&mut self, r: &dyn ReadTxn) {
        if let Some(name) = &self.table {
            if r.open_db_bytes(Some(name)).is_err() {
                self.table = None;
                let _ = self.note("the current table is gone with the transaction: the current table is now @MAIN");
            }
        }
    }

    /// `quit` typed inside a write transaction: asks whether to discard it.
    fn confirm_quit(&mut self, txn: Option<&RwTxn<'_>>, src: &mut dyn Source) -> bool {
        let id = txn.map(|t| format!(" {}", t.id())).unwrap_or_default();
        let _ = self.out.flush();
        if src.confirm(&format!("write transaction{id} is open: quit and discard its changes?")) {
            return true;
        }
        eprintln!("not quitting: 'commit' keeps the changes, 'abort' discards them");
        false
    }

    /// The session ends with a transaction open: it is aborted. In a script
    /// that is an error (the changes the script made are lost).
    fn left_open(&mut self, end: End, loc: Loc, src: &mut dyn Source) -> End {
        match end {
            End::Stop => End::Stop,
            end if src.interactive() => {
                let _ = self.out.flush();
                eprintln!("rdbx: the open transaction was aborted: its changes are discarded");
                end
            }
            end => {
                let what = if matches!(end, End::Quit) { "quit" } else { "end of input" };
                let msg = format!(
                    "{what} inside the transaction begun here: it was aborted and its changes are discarded (end it with 'commit')"
                );
                self.fail(loc, None, &msg, src);
                End::Stop
            }
        }
    }

    /// Opens what `req` asks for instead of `current`. Returns the database
    /// now open and whether the session must stop.
    fn reopen(
        &mut self,
        current: Option<Opened>,
        req: OpenRequest,
        loc: Loc,
        src: &mut dyn Source,
    ) -> (Option<Opened>, bool) {
        let old = current.as_ref().map(|o| (o.path.clone(), o.read_only));
        let Some(path) = req.path.clone().or_else(|| old.as_ref().map(|(p, _)| p.clone())) else {
            let stop = self.fail(loc, Some("open"), "no database is open to reopen: give a PATH", src);
            return (None, stop);
        };
        let same = old.as_ref().is_some_and(|(p, _)| *p == path);
        let found = db::probe(&path);
        let create = found != Found::Database
            && (req.create
                || (src.interactive()
                    && src.confirm(&format!("{} does not exist. Create a new database there?", path.display()))));
        // Close first: one process keeps one environment per file.
        drop(current);
        let r = if create { db::create(&path, req.single_file) } else { db::open(&path, req.read_only) };
        match r {
            Ok(o) => {
                if !same {
                    self.table = None;
                }
                let mode = if o.read_only { "read-only" } else { "read-write" };
                let what = if create { "created and opened" } else { "opened" };
                let _ = self.note(&format!("{what} {} {mode}", path.display()));
                (Some(o), false)
            }
            Err(msg) => {
                let stop = self.fail(loc, Some("open"), &msg, src);
                // Go back to the database that was open.
                let back = old.and_then(|(p, ro)| db::open(&p, ro).ok());
                if back.is_none() {
                    self.table = None;
                }
                (back, stop)
            }
        }
    }
}

/// A duration for people: `850 µs`, `12.3 ms`, `4.56 s`.
pub fn human_duration(d: std::time::Duration) -> String {
    let us = d.as_micros();
    if us < 1000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.1} ms", us as f64 / 1e3)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

/// A table name as it is typed: plain, quoted, or hex.
pub fn typed_form(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(s) if !s.chars().any(|c| c.is_control()) => quote_for_input(s),
        _ => format!("0x{}", hex(name)),
    }
}
