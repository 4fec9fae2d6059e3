//! Running one command: checking it against its spec and the session's state
//! (a database open? read-write? inside a transaction?), giving it a
//! transaction to read or write through, and the commands that steer the
//! session itself (help, format, open, begin...). The data, table and admin
//! commands live in the submodules.

mod admin;
mod data;
mod ops;
mod tables;

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use rdbx::RwTxn;

use crate::access::{self, ReadTxn};
use crate::db::Opened;
use crate::input::Source;
use crate::output::{Cell, Format, ItemMode};
use crate::session::{OpenRequest, Pager, Session};
use crate::spec::{self, Invocation};
use crate::values::{path_of, Word};

/// What the session does after a command.
pub enum Action {
    Done,
    Quit,
    Open(OpenRequest),
    Close,
    Begin,
    Commit,
    Abort,
}

/// A failed command.
#[derive(Debug)]
pub enum Fail {
    Msg(String),
    Io(io::Error),
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fail::Msg(m) => f.write_str(m),
            Fail::Io(e) => write!(f, "output: {e}"),
        }
    }
}

impl From<String> for Fail {
    fn from(m: String) -> Self {
        Fail::Msg(m)
    }
}

impl From<&str> for Fail {
    fn from(m: &str) -> Self {
        Fail::Msg(m.to_string())
    }
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        Fail::Io(e)
    }
}

impl From<rdbx::Error> for Fail {
    fn from(e: rdbx::Error) -> Self {
        Fail::Msg(describe(&e))
    }
}

/// An engine error in words that say what to do.
pub fn describe(e: &rdbx::Error) -> String {
    use rdbx::Error as E;
    match e {
        E::MapFull => "the database is full: it reached the upper size bound of its geometry \
                       (raise it with 'geometry --upper SIZE')"
            .into(),
        E::Busy(m) => format!("busy: {m}; try again when the other process is done"),
        E::Access(_) => READ_ONLY.into(),
        E::KeyExist => "the key already exists".into(),
        E::DbsFull => "too many tables open at once".into(),
        E::Corrupted { .. } | E::PageNotFound { .. } => format!("{e}; run 'check' for details"),
        e => e.to_string(),
    }
}

pub type Result<T, E = Fail> = std::result::Result<T, E>;

const READ_ONLY: &str = "the database is open read-only: 'open rw' reopens it read-write (or start with --write)";

/// What a command works with.
pub struct Ctx<'a, 'e> {
    pub s: &'a mut Session,
    pub db: Option<&'e Opened>,
    pub txn: Option<&'a mut RwTxn<'e>>,
    pub src: &'a mut dyn Source,
}

impl<'e> Ctx<'_, 'e> {
    pub fn db(&self) -> Result<&'e Opened> {
        self.db.ok_or_else(|| Fail::from("no database is open (use 'open PATH')"))
    }

    /// Runs `f` on the explicit transaction, or on a read-only snapshot of its own.
    pub fn read<T>(&mut self, f: impl FnOnce(&mut Session, &dyn ReadTxn, &mut dyn Source) -> Result<T>) -> Result<T> {
        match self.txn.as_deref() {
            Some(t) => f(self.s, t, self.src),
            None => {
                let t = self.db()?.env.begin_ro_txn()?;
                f(self.s, &t, self.src)
            }
        }
    }

    /// Runs `f` in the explicit transaction, or in a write transaction of its
    /// own that commits when `f` succeeds (and is rolled back when it fails).
    pub fn write<T>(&mut self, f: impl FnOnce(&mut Session, &mut RwTxn<'e>) -> Result<T>) -> Result<T> {
        match self.txn.as_deref_mut() {
            Some(t) => f(self.s, t),
            None => {
                let db = self.db()?;
                if db.read_only {
                    return Err(READ_ONLY.into());
                }
                let mut t = begin_write(&db.env, &self.s.interrupt)?;
                let r = f(self.s, &mut t)?;
                t.commit()?;
                Ok(r)
            }
        }
    }

    /// The table a command works on: `--table`, or the current one.
    pub fn target(&self, inv: &Invocation) -> Result<Option<Vec<u8>>> {
        match inv.value("table") {
            Some(w) => Ok(access::table_name(w)?),
            None => Ok(self.s.table.clone()),
        }
    }

    pub fn in_txn(&self) -> bool {
        self.txn.is_some()
    }
}

/// Runs one command.
pub fn execute<'e>(
    s: &mut Session,
    db: Option<&'e Opened>,
    txn: Option<&mut RwTxn<'e>>,
    words: &[Word],
    src: &mut dyn Source,
) -> Result<Action> {
    let inv = spec::parse(words)?;
    let spec = inv.spec;
    if spec.needs_db && db.is_none() {
        return Err("no database is open (use 'open PATH')".into());
    }
    if spec.outside_txn && txn.is_some() {
        return Err(format!(
            "finish the transaction first ('commit' or 'abort'): {} works outside transactions",
            spec.name
        )
        .into());
    }
    if spec.writes && db.is_some_and(|d| d.read_only) {
        return Err(READ_ONLY.into());
    }
    let mut cx = Ctx { s, db, txn, src };
    match spec.name {
        "help" => help(&mut cx, &inv),
        "open" => open(&mut cx, &inv),
        "close" => {
            cx.db()?;
            Ok(Action::Close)
        }
        "quit" => Ok(Action::Quit),
        "history" => history(&mut cx, &inv),
        "format" => format(&mut cx, &inv),
        "pager" => pager(&mut cx, &inv),
        "timer" => {
            let mut on = cx.s.timer;
            switch(&mut cx, &inv, "timer", &mut on)?;
            cx.s.timer = on;
            Ok(Action::Done)
        }
        "headers" => {
            let mut on = cx.s.out.headers;
            switch(&mut cx, &inv, "headers", &mut on)?;
            cx.s.out.headers = on;
            Ok(Action::Done)
        }
        "begin" => Ok(Action::Begin),
        "commit" | "abort" => {
            if !cx.in_txn() {
                return Err("no transaction is open ('begin' starts one)".into());
            }
            Ok(if spec.name == "commit" { Action::Commit } else { Action::Abort })
        }
        "tables" => tables::tables(&mut cx),
        "use" => tables::use_table(&mut cx, &inv),
        "create" => tables::create(&mut cx, &inv),
        "drop" => tables::drop_table(&mut cx, &inv),
        "stat" => tables::stat(&mut cx, &inv),
        "get" => data::get(&mut cx, &inv),
        "exists" => data::exists(&mut cx, &inv),
        "put" => data::put(&mut cx, &inv),
        "del" => data::del(&mut cx, &inv),
        "scan" => data::scan(&mut cx, &inv),
        "count" => data::count(&mut cx, &inv),
        "estimate-range" => data::estimate(&mut cx, &inv),
        "info" => admin::info(&mut cx),
        "geometry" => admin::geometry(&mut cx, &inv),
        "readers" => admin::readers(&mut cx),
        "check" => admin::check(&mut cx),
        "copy" => admin::copy(&mut cx, &inv),
        "dump" => admin::dump(&mut cx, &inv),
        "load" => admin::load(&mut cx, &inv),
        "checksum" => ops::checksum(&mut cx, &inv),
        "diff" => ops::diff(&mut cx, &inv),
        "meta" => ops::meta(&mut cx),
        "space" => ops::space(&mut cx),
        "page" => ops::page(&mut cx, &inv),
        other => Err(format!("'{other}' is not available in this build").into()),
    }
}

fn help(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    match inv.arg(0) {
        None => cx.s.out.text(&spec::overview())?,
        Some(w) => {
            let name = w.text();
            let spec = spec::find(&name).ok_or_else(|| spec::unknown(&name))?;
            cx.s.out.text(&spec.help())?;
        }
    }
    Ok(Action::Done)
}

fn open(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let mode = |w: &Word| -> Option<bool> {
        match w.text().as_str() {
            "ro" | "read-only" | "readonly" if !w.quoted => Some(true),
            "rw" | "read-write" | "readwrite" if !w.quoted => Some(false),
            _ => None,
        }
    };
    let first = inv.arg(0).ok_or("open needs a PATH")?;
    let (path, read_only) = match (mode(first), inv.arg(1)) {
        // `open rw`: the current database in another mode (unless a file of that name exists).
        (Some(ro), None) if cx.db.is_some() && !path_of(first).exists() => (None, ro),
        (_, None) => (Some(path_of(first)), true),
        (_, Some(m)) => {
            let ro =
                mode(m).ok_or_else(|| format!("bad mode '{}': use ro (read-only) or rw (read-write)", m.text()))?;
            (Some(path_of(first)), ro)
        }
    };
    if inv.flag("single-file") && !inv.flag("create") {
        return Err("--single-file goes with --create".into());
    }
    Ok(Action::Open(OpenRequest { path, read_only, create: inv.flag("create"), single_file: inv.flag("single-file") }))
}

fn history(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let n = match inv.arg(0) {
        Some(w) => w.text().parse::<usize>().map_err(|_| format!("bad count '{}': give a number", w.text()))?,
        None => 20,
    };
    let all = cx.src.history();
    let skip = all.len().saturating_sub(n);
    let mut l = cx.s.out.listing(&["n", "command"], 1000);
    for (i, line) in all.iter().enumerate().skip(skip) {
        l.push(&[Cell::Int(i as u64 + 1), Cell::text(line.clone())])?;
    }
    l.flush()?;
    Ok(Action::Done)
}

fn format(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let mode = |name: &str| -> Result<Option<ItemMode>> {
        match inv.value(name) {
            None => Ok(None),
            Some(w) => ItemMode::parse(&w.text()).map(Some).ok_or_else(|| {
                format!("unknown --{name} mode '{}': use {}", w.text(), ItemMode::NAMES.join(", ")).into()
            }),
        }
    };
    let (keys, values) = (mode("keys")?, mode("values")?);
    if let Some(m) = keys {
        cx.s.out.key_mode = m;
    }
    if let Some(m) = values {
        cx.s.out.value_mode = m;
    }
    match inv.arg(0) {
        None if keys.is_some() || values.is_some() => {}
        None => {
            let o = &cx.s.out;
            let shown = format!("{} (keys {}, values {})", o.format.name(), o.key_mode.name(), o.value_mode.name());
            let fields = [("keys", Cell::text(o.key_mode.name())), ("values", Cell::text(o.value_mode.name()))];
            let v = if o.format == Format::Table { Cell::text(shown) } else { Cell::text(o.format.name()) };
            cx.s.out.value(&fields, "format", &v)?;
        }
        Some(w) => {
            cx.s.out.format = Format::parse(&w.text())
                .ok_or_else(|| format!("unknown format '{}': use {}", w.text(), Format::NAMES.join(", ")))?;
        }
    }
    Ok(Action::Done)
}

/// An on/off setting: shown without an argument, else set.
fn switch(cx: &mut Ctx<'_, '_>, inv: &Invocation, name: &str, value: &mut bool) -> Result<()> {
    match inv.arg(0) {
        None => cx.s.out.value(&[], name, &Cell::text(if *value { "on" } else { "off" }))?,
        Some(w) => {
            *value = match w.text().to_ascii_lowercase().as_str() {
                "on" | "yes" | "true" | "1" => true,
                "off" | "no" | "false" | "0" => false,
                other => return Err(format!("bad {name} setting '{other}': use on or off").into()),
            }
        }
    }
    Ok(())
}

fn pager(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    match inv.arg(0) {
        None => {
            let v = match cx.s.pager {
                Pager::Auto => "auto".to_string(),
                Pager::Off => "off".to_string(),
                Pager::Rows(n) => n.to_string(),
            };
            cx.s.out.value(&[], "pager", &Cell::text(v))?;
        }
        Some(w) => {
            cx.s.pager = match w.text().as_str() {
                "auto" => Pager::Auto,
                "off" | "0" => Pager::Off,
                n => Pager::Rows(
                    n.parse().map_err(|_| format!("bad pager setting '{n}': give a number of rows, auto or off"))?,
                ),
            };
        }
    }
    Ok(Action::Done)
}

/// A table name for output.
pub fn table_cell(name: Option<&[u8]>) -> Cell {
    Cell::Table(name.map(<[u8]>::to_vec))
}

/// Begins a write transaction; when another writer holds the lock, says so on
/// stderr and waits for it (rather than hanging silently) until `interrupt`
/// is set (Ctrl-C in the interactive shell), which gives up with `Busy`.
///
/// The wait polls (1 ms doubling to 50 ms): the engine's blocking wait for the
/// writer lock cannot be interrupted, and a shell must stay responsive.
pub fn begin_write<'e>(env: &'e rdbx::Env, interrupt: &AtomicBool) -> rdbx::Result<RwTxn<'e>> {
    match env.try_begin_rw_txn() {
        Err(rdbx::Error::Busy(_)) => {}
        r => return r,
    }
    match env.writer_pid() {
        Some(pid) => eprintln!(
            "rdbx: process {pid} holds the write lock of the database; waiting for it to finish (Ctrl-C gives up)..."
        ),
        None => eprintln!("rdbx: another writer holds the database; waiting for it to finish (Ctrl-C gives up)..."),
    }
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(rdbx::Error::Busy("interrupted while waiting for another writer; nothing was changed".into()));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(50));
        match env.try_begin_rw_txn() {
            Err(rdbx::Error::Busy(_)) => {}
            r => return r,
        }
    }
}
