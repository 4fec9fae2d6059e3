//! Shared pieces of the subcommands: locating and opening a database, error
//! classification, signals, progress bars, number formatting.

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rdbx::{Durability, Env, EnvBuilder, LockFormat};
use rdbx_dump::guard;

pub const PROG: &str = "rdbx-tools";
/// Table handles a tool may hold at once.
pub const MAX_DBS: u32 = 32_000;

/// `--lock-format`: the lock-file layout to create when the tool is the first
/// process to open a database (unset: rdbx's default, see `LockFormat`).
static LOCK_FORMAT: OnceLock<LockFormat> = OnceLock::new();

/// Records `--lock-format` for every database the tool opens.
pub fn set_lock_format(f: LockFormat) {
    let _ = LOCK_FORMAT.set(f);
}

/// Parses a `--lock-format` value (6, 7, v6 or v7).
pub fn parse_lock_format(s: &str) -> Result<LockFormat, String> {
    s.parse()
}

/// An `EnvBuilder` with the tool-wide settings (`--lock-format`).
pub fn builder() -> EnvBuilder {
    let b = Env::builder();
    match LOCK_FORMAT.get() {
        Some(f) => b.lock_format(*f),
        None => b,
    }
}

/// Set by SIGINT/SIGTERM/SIGHUP.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The same, as the flag the engine polls in long loops (`CheckOptions`,
/// `CopyOptions`); set by the handler itself, so the engine sees it at once.
static ENGINE_FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// What the tools print when a signal stopped them (as the mdbx_* tools).
pub const INTERRUPTED_MSG: &str = "Interrupted by signal/user";

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    if let Some(f) = ENGINE_FLAG.get() {
        f.store(true, Ordering::SeqCst);
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP. Without SA_RESTART:
/// a read(2) or write(2) blocked on a terminal or a pipe returns EINTR, so
/// that [`Interruptible`] streams notice the signal at once.
pub fn install_signal_handlers() {
    let _ = ENGINE_FLAG.set(Arc::new(AtomicBool::new(false)));
    // SAFETY: `on_signal` only stores to atomics (the OnceLock was set above,
    // so `get` is a plain load), which is async-signal-safe; the sigaction
    // structure is fully initialised (zeroed, empty mask) before the call.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = 0;
        libc::sigemptyset(&mut sa.sa_mask);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The interrupt flag for the engine (set by the signal handler).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    ENGINE_FLAG.get_or_init(|| Arc::new(AtomicBool::new(INTERRUPTED.load(Ordering::SeqCst)))).clone()
}

/// The error of a stream stopped by a signal: not `ErrorKind::Interrupted`,
/// which the standard library retries.
pub fn interrupted_io() -> io::Error {
    io::Error::other(INTERRUPTED_MSG)
}

/// A reader or writer (standard input or output, a pipe) that stops with
/// [`interrupted_io`] once a signal came, also when blocked in the system call.
pub struct Interruptible<T>(pub T);

impl<R: Read> Read for Interruptible<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if interrupted() {
                return Err(interrupted_io());
            }
            match self.0.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
}

impl<W: Write> Write for Interruptible<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            if interrupted() {
                return Err(interrupted_io());
            }
            match self.0.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Standard output as a plain file (the same descriptor): writes go straight
/// to write(2), so that a signal interrupts a write blocked on a full pipe
/// (the buffered `Stdout` retries EINTR). Wrap it in [`Interruptible`].
pub fn raw_stdout() -> io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    io::stdout().flush()?;
    Ok(std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

/// Refuses an output file (`what`: "the copy") on the files of the database
/// being read (`src`, called `src_desc`: "the database being copied") or of
/// another database (see [`rdbx_dump::guard`]). `force`: the tool's `-f`.
pub fn check_output(
    dst: &Path,
    what: &str,
    src: &Target,
    src_desc: &str,
    force: Option<bool>,
) -> Result<(), ToolError> {
    let force = match force {
        None => guard::Force::NoFlag,
        Some(given) => guard::Force::Flag { name: "-f", given },
    };
    guard::check_output(dst, what, &[&src.data, &src.lck], src_desc, force).map_err(|m| ToolError::sys(libc::EEXIST, m))
}

/// The error object of every `--json` subcommand, on standard output:
/// `{...context, "error": {"code": N, "message": "..."}}` (`context`: the
/// fields the subcommand adds, e.g. its `path`).
pub fn json_error(context: serde_json::Value, code: i32, message: &str) {
    let mut o = match context {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    o.insert("error".into(), serde_json::json!({"code": code, "message": message}));
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{}", serde_json::Value::Object(o)).and_then(|_| out.flush());
}

/// A failure with its libmdbx-style code (negative: engine, positive: errno).
#[derive(Debug)]
pub struct ToolError {
    pub code: i32,
    pub msg: String,
}

impl ToolError {
    pub fn sys(errno: i32, msg: impl Into<String>) -> Self {
        ToolError { code: errno, msg: msg.into() }
    }
    pub fn engine(e: &rdbx::Error, context: impl std::fmt::Display) -> Self {
        ToolError { code: e.code(), msg: format!("{context}: {e}") }
    }
    /// `mdbx_chk`'s exit code for an error that stopped the check.
    pub fn chk_exit(&self) -> u8 {
        if self.code == libc::EINTR {
            5
        } else if self.code < 0 {
            3
        } else {
            4
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

/// Where a database lives.
#[derive(Debug, Clone)]
pub struct Target {
    /// As given.
    pub path: PathBuf,
    /// The data file.
    pub data: PathBuf,
    pub lck: PathBuf,
    pub no_sub_dir: bool,
}

/// Resolves PATH of an existing database (directory or data file).
pub fn locate(path: &Path) -> Result<Target, ToolError> {
    let md = std::fs::metadata(path)
        .map_err(|e| ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("{}: {e}", path.display())))?;
    let (data, lck, no_sub_dir) = if md.is_dir() {
        let data = path.join("mdbx.dat");
        if !data.is_file() {
            return Err(ToolError::sys(
                libc::ENOENT,
                format!("{}: no database in this directory (mdbx.dat is missing)", path.display()),
            ));
        }
        (data, path.join("mdbx.lck"), false)
    } else {
        if let Some(db) = guard::lock_file_of(path) {
            return Err(ToolError::sys(
                libc::EINVAL,
                format!(
                    "{}: this is the lock file of the database {}, not a database; give the database's directory or data file",
                    path.display(),
                    db.display()
                ),
            ));
        }
        let lck = if path.file_name().is_some_and(|n| n == "mdbx.dat") {
            path.parent().unwrap_or(Path::new(".")).join("mdbx.lck")
        } else {
            let mut l = path.as_os_str().to_owned();
            l.push("-lck");
            PathBuf::from(l)
        };
        (path.to_path_buf(), lck, true)
    };
    let size = std::fs::metadata(&data).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Err(ToolError::sys(
            libc::ENODATA,
            format!("{}: empty file, not a database (No data available)", data.display()),
        ));
    }
    if size < 768 {
        // Not a database, as any other file without the MDBX metas (the same
        // message and exit code as for `/bin/ls`).
        let e = rdbx::Error::Invalid(format!("file of {size} bytes is too short for an MDBX database"));
        return Err(ToolError { code: e.code(), msg: format!("{}: not an MDBX database: {e}", data.display()) });
    }
    Ok(Target { path: path.to_path_buf(), data, lck, no_sub_dir })
}

/// Opens an existing database. A lock file created by a failed read-only
/// open is removed again.
pub fn open_env(t: &Target, read_only: bool) -> Result<Env, ToolError> {
    let lck_existed = t.lck.exists();
    let r = builder()
        .read_only(read_only)
        .max_dbs(MAX_DBS)
        .no_sub_dir(t.no_sub_dir)
        .durability(Durability::SyncDurable)
        .open(&t.path);
    r.map_err(|e| {
        if !lck_existed {
            let _ = std::fs::remove_file(&t.lck);
        }
        open_error(&t.path, &e)
    })
}

/// The metas of the data file of `t` (read without a lock); a file that is
/// not a database gets the same message as from [`open_env`].
pub fn read_metas(t: &Target) -> Result<rdbx::inspect::MetaList, ToolError> {
    rdbx::inspect::read_metas(&t.data).map_err(|e| match e {
        rdbx::Error::Invalid(_) => open_error(&t.path, &e),
        e => ToolError::engine(&e, t.data.display()),
    })
}

pub fn open_error(path: &Path, e: &rdbx::Error) -> ToolError {
    let p = path.display();
    match e {
        rdbx::Error::Busy(m) => ToolError::sys(
            libc::EAGAIN,
            format!(
                "{p}: cannot open: {m} (Resource temporarily unavailable); retry when the other process has closed it"
            ),
        ),
        rdbx::Error::Invalid(_) => ToolError { code: e.code(), msg: format!("{p}: not an MDBX database: {e}") },
        rdbx::Error::VersionMismatch(_) => ToolError { code: e.code(), msg: format!("{p}: {e}") },
        rdbx::Error::WannaRecovery => {
            ToolError { code: e.code(), msg: format!("{p}: {e}; run `rdbx-tools chk -w` to recover it") }
        }
        rdbx::Error::Corrupted { .. } => {
            let data = if path.is_dir() { path.join("mdbx.dat") } else { path.to_path_buf() };
            let sizes = rdbx_dump::diagnose::truncation(&data).map(|t| format!(" ({t})")).unwrap_or_default();
            ToolError { code: e.code(), msg: format!("{p}: {e}{sizes}; run `rdbx-tools chk` for details") }
        }
        _ => ToolError { code: e.code(), msg: format!("{p}: cannot open: {e}") },
    }
}

/// `--nonblock` met a write lock held by another process or transaction
/// (`holder`: its process, when the lock file tells); `when` says what the
/// tool was doing (and what was committed before).
pub fn writer_busy(path: &Path, e: &rdbx::Error, when: &str, holder: Option<u32>) -> ToolError {
    let who = holder.map(|pid| format!(", held by process {pid}")).unwrap_or_default();
    ToolError {
        code: e.code(),
        msg: format!(
            "{}: another writer is active (the write lock is taken{who}) when {when}; retry when it has finished, or run without --nonblock to wait for it",
            path.display()
        ),
    }
}

/// What a progress display counts, named on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Pages,
    Records,
    /// Shown in KiB / MiB / GiB.
    Bytes,
}

/// The indicatif template of a bar (or, without a length, a spinner)
/// counting `unit`.
pub fn progress_template(unit: Unit, bar: bool) -> &'static str {
    match (unit, bar) {
        (Unit::Pages, true) => "{prefix} [{bar:40}] {human_pos}/{human_len} pages {msg} ({eta})",
        (Unit::Records, true) => "{prefix} [{bar:40}] {human_pos}/{human_len} records {msg} ({eta})",
        (Unit::Bytes, true) => "{prefix} [{bar:40}] {binary_bytes}/{binary_total_bytes} {msg} ({eta})",
        (Unit::Pages, false) => "{prefix} {spinner} {human_pos} pages {msg}",
        (Unit::Records, false) => "{prefix} {spinner} {human_pos} records {msg}",
        (Unit::Bytes, false) => "{prefix} {spinner} {binary_bytes} {msg}",
    }
}

/// A progress bar on stderr counting `unit`, only when stderr is a terminal
/// and `enabled`. End it with [`finish`].
pub fn progress_bar(enabled: bool, total: u64, what: &str, unit: Unit) -> Option<ProgressBar> {
    if !enabled || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(progress_template(unit, true))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    pb.set_style(style);
    pb.set_prefix(what.to_string());
    Some(pb)
}

/// A spinner counting `unit` (the total is not known), as [`progress_bar`].
pub fn spinner(enabled: bool, what: &str, unit: Unit) -> Option<ProgressBar> {
    if !enabled || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(progress_template(unit, false))
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_prefix(what.to_string());
    Some(pb)
}

/// Clears a progress display and, where one was shown and `summary` is
/// given, leaves a one-line summary in its place.
pub fn finish(pb: Option<ProgressBar>, summary: Option<String>) {
    if let Some(pb) = pb {
        pb.finish_and_clear();
        if let Some(s) = summary {
            eprintln!("{s}");
        }
    }
}

/// libmdbx's `ratio2digits`.
pub fn ratio2digits(v: u64, d: u64, precision: u32) -> String {
    if d == 0 {
        return if v != 0 { "infinity".into() } else { "undefined".into() };
    }
    let mut i = v / d;
    let mut f = v % d;
    let mut m = d;
    let mut frac: Vec<u8> = Vec::new();
    let mut carry = m - f < m / 2;
    if precision > 0 {
        let mut p = precision;
        loop {
            while f > u64::MAX / 10 {
                f >>= 1;
                m >>= 1;
            }
            f *= 10;
            frac.push(b'0' + (f / m) as u8);
            f %= m;
            p -= 1;
            if p == 0 {
                break;
            }
        }
        carry = m - f < m / 2;
        let mut k = frac.len();
        while carry && k > 0 {
            k -= 1;
            carry = frac[k] == b'9';
            frac[k] = if carry { b'0' } else { frac[k] + 1 };
        }
    }
    i += u64::from(carry);
    let mut s = i.to_string();
    if precision > 0 {
        s.push('.');
        s.push_str(std::str::from_utf8(&frac).unwrap_or(""));
    }
    s
}

/// libmdbx's `ratio2percent`.
pub fn percent(mut value: u64, mut whole: u64) -> String {
    if whole == 0 {
        return if value != 0 { "infinity".into() } else { "undefined".into() };
    }
    while value > u64::MAX / 100 {
        value >>= 1;
        whole >>= 1;
    }
    let rough = whole >= value && (value == 0 || value > whole / 16);
    ratio2digits(value * 100, whole, if rough { 1 } else { 2 })
}

/// "5.00 MiB" style sizes (as mdbx_chk prints them).
pub fn human(bytes: u64) -> String {
    const U: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", U[i])
    }
}

/// Table flags in words (`none` without any), the words of the shell's
/// `create` options and of `tables`.
pub fn flags_text(f: u16) -> String {
    let names = [
        (0x02, "reversekey"),
        (0x04, "dupsort"),
        (0x08, "integerkey"),
        (0x10, "dupfixed"),
        (0x20, "integerdup"),
        (0x40, "reversedup"),
    ];
    let v: Vec<&str> = names.iter().filter(|(b, _)| f & b != 0).map(|(_, n)| *n).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

/// A key or value given on the command line: `0x` followed by hex digits
/// is those bytes (as in the shell), anything else its UTF-8 text.
pub fn parse_bytes(s: &str) -> Result<Vec<u8>, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) if !h.is_empty() => {
            if h.len() % 2 != 0 || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!("'{s}': bad hex (0x followed by pairs of hex digits)"));
            }
            Ok((0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or(0)).collect())
        }
        _ => Ok(s.as_bytes().to_vec()),
    }
}

/// Bytes for a line of text: printable ASCII as is (unless it could be read
/// back as hex or has surrounding spaces), otherwise `0x` and hex.
pub fn render(b: &[u8]) -> String {
    let plain = !b.is_empty()
        && b.iter().all(|c| (0x20..0x7f).contains(c))
        && !b.starts_with(b"0x")
        && !b.starts_with(b" ")
        && !b.ends_with(b" ");
    if plain {
        String::from_utf8_lossy(b).into_owned()
    } else if b.is_empty() {
        "\"\"".into()
    } else {
        format!("0x{}", rdbx::to_hex(b))
    }
}

/// A table name for text output (`@MAIN` for the main table).
pub fn table_label(name: Option<&[u8]>) -> String {
    name.map_or_else(|| "@MAIN".to_string(), render)
}

/// `--table NAME` to a table: `@MAIN` is the main table.
pub fn table_arg(s: &str) -> Option<Vec<u8>> {
    if s == "@MAIN" {
        None
    } else {
        Some(s.as_bytes().to_vec())
    }
}

/// Bytes in JSON: `{"<field>": text or null, "<field>_hex": hex}` entries
/// (the text is there when the bytes are UTF-8).
pub fn json_bytes(m: &mut serde_json::Map<String, serde_json::Value>, field: &str, b: &[u8]) {
    m.insert(field.into(), std::str::from_utf8(b).map_or(serde_json::Value::Null, |t| t.into()));
    m.insert(format!("{field}_hex"), rdbx::to_hex(b).into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_names_its_unit() {
        for bar in [true, false] {
            assert!(progress_template(Unit::Pages, bar).contains("pages"));
            assert!(progress_template(Unit::Records, bar).contains("records"));
            assert!(progress_template(Unit::Bytes, bar).contains("binary_bytes"));
            for u in [Unit::Pages, Unit::Records, Unit::Bytes] {
                ProgressStyle::with_template(progress_template(u, bar)).unwrap();
            }
        }
    }

    #[test]
    fn percents_as_libmdbx() {
        assert_eq!(percent(1280, 9961472), "0.01");
        assert_eq!(percent(923, 1280), "72.1");
        assert_eq!(percent(9960549, 9961472), "100.0");
        assert_eq!(percent(3, 9961472), "0.00");
        assert_eq!(percent(3, 1280), "0.23");
        assert_eq!(percent(2, 1280), "0.16");
        assert_eq!(percent(1, 1280), "0.08");
        assert_eq!(percent(920, 1280), "71.9");
    }
}
