//! The `mdbx_dump` / `mdbx_load` text format ("VERSION=3", docs/format.md, "Dump text format",
//! what the real mdbx_dump writes and mdbx_load reads) for rdbx, in one place for the shell and the tools:
//!
//! * the **writer** ([`dump`], [`write_section`]) produces byte for byte what
//!   the real `mdbx_dump` prints (bytevalue, print and concise modes, header
//!   lines with geometry, canary and table flags), except where the real tool
//!   is wrong: in print mode a leading space of a key or value is written as
//!   `\20` (the real loader would take it for a concise continuation line),
//!   and with `all` the plain records of the main table are not lost;
//! * the **reader** ([`DumpReader`]) parses a dump line by line (streaming,
//!   with line numbers) with `mdbx_load`'s rules;
//! * the **loader** ([`load`]) puts the records into an environment in
//!   batches of write transactions; on bad input it stops with the line
//!   number and the current batch is rolled back.

pub mod diagnose;
pub mod guard;

use std::collections::HashSet;
use std::fmt;
use std::io::{self, BufRead, Write};

use rdbx::{Db, DbFlags, Env, Geometry, PutFlags, RoTxn};

/// Data line encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Two lowercase hex digits per byte (`format=bytevalue`).
    #[default]
    ByteValue,
    /// Printable ASCII as is, other bytes and `\` as `\xx` (`format=print`).
    Print,
}

impl Format {
    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ByteValue => "bytevalue",
            Format::Print => "print",
        }
    }
}

/// Table flags as header lines, in the order `mdbx_dump` prints them.
pub const FLAG_LINES: [(&str, DbFlags); 6] = [
    ("reversekey", DbFlags::REVERSE_KEY),
    ("dupsort", DbFlags::DUP_SORT),
    ("integerkey", DbFlags::INTEGER_KEY),
    ("dupfix", DbFlags::DUP_FIXED),
    ("integerdup", DbFlags::INTEGER_DUP),
    ("reversedup", DbFlags::REVERSE_DUP),
];

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `b` encoded (without the leading space and newline) to `out`.
/// In print mode a leading space is escaped as `\20` (see the crate docs).
pub fn encode(format: Format, b: &[u8], out: &mut Vec<u8>) {
    match format {
        Format::ByteValue => {
            out.reserve(b.len() * 2);
            for &c in b {
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        Format::Print => {
            for (i, &c) in b.iter().enumerate() {
                if (0x20..0x7f).contains(&c) && c != b'\\' && !(i == 0 && c == b' ') {
                    out.push(c);
                } else {
                    out.push(b'\\');
                    out.push(HEX[(c >> 4) as usize]);
                    out.push(HEX[(c & 15) as usize]);
                }
            }
        }
    }
}

fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes one data line body (after the leading space) into `out`.
pub fn decode(format: Format, s: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    match format {
        Format::ByteValue => {
            if !s.len().is_multiple_of(2) {
                return Err(format!("odd number of hex digits ({})", s.len()));
            }
            for p in s.chunks_exact(2) {
                match (hexval(p[0]), hexval(p[1])) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => return Err(format!("invalid hex digits {:?}", String::from_utf8_lossy(p))),
                }
            }
        }
        Format::Print => {
            let mut i = 0;
            while i < s.len() {
                if s[i] == b'\\' {
                    if s.get(i + 1) == Some(&b'\\') {
                        out.push(b'\\');
                        i += 2;
                        continue;
                    }
                    match (s.get(i + 1).and_then(|&c| hexval(c)), s.get(i + 2).and_then(|&c| hexval(c))) {
                        (Some(h), Some(l)) => out.push(h << 4 | l),
                        _ => return Err("a backslash must be followed by two hex digits or a backslash".into()),
                    }
                    i += 3;
                } else {
                    out.push(s[i]);
                    i += 1;
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Errors

/// A failure of dumping or loading.
#[derive(Debug)]
pub enum DumpError {
    /// The engine failed (`context` says doing what).
    Engine { context: String, error: rdbx::Error },
    /// Reading the input or writing the output failed.
    Io { context: String, error: io::Error },
    /// Bad input at `line` (1-based; 0 = before the first line).
    Parse { line: u64, message: String },
    /// A record was rejected by the engine at `line`.
    Record { line: u64, error: rdbx::Error },
    /// Bad arguments.
    Usage(String),
    /// Stopped by a signal.
    Interrupted,
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DumpError::Engine { context, error } => write!(f, "{context}: {error} (error {})", error.code()),
            DumpError::Io { context, error } => write!(f, "{context}: {error}"),
            DumpError::Parse { line, message } => write!(f, "line {line}: {message}"),
            DumpError::Record { line, error } => write!(f, "at input line {line}: {error} (error {})", error.code()),
            DumpError::Usage(m) => f.write_str(m),
            DumpError::Interrupted => f.write_str("interrupted by signal/user"),
        }
    }
}

impl std::error::Error for DumpError {}

fn eng(context: impl Into<String>) -> impl FnOnce(rdbx::Error) -> DumpError {
    let context = context.into();
    move |error| DumpError::Engine { context, error }
}

fn out_err(error: io::Error) -> DumpError {
    DumpError::Io { context: "writing the dump".into(), error }
}

/// Result alias.
pub type Result<T, E = DumpError> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------
// Writer

/// What to dump and how.
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// Encoding of data lines.
    pub format: Format,
    /// DUPSORT tables: key once, further values as continuation lines (`-c`).
    pub concise: bool,
    /// Every named table (`-a`); plain records of the main table come first
    /// as an unnamed section (the real `mdbx_dump -a` omits them).
    pub all: bool,
    /// Only this named table (`-s`).
    pub table: Option<Vec<u8>>,
    /// Rescue (`-r`, with `all`): a table that cannot be read completely is
    /// reported through `warn`, its section is closed, and the dump goes on
    /// with the next table (see [`DumpStats::failed_tables`]).
    pub rescue: bool,
}

/// What a dump wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// Sections written.
    pub sections: u64,
    /// Records written.
    pub records: u64,
    /// Plain records of the main table written besides named tables (with `all`).
    pub main_plain_records: u64,
    /// Table names skipped because they cannot be written in a header (NUL or newline).
    pub skipped_names: Vec<Vec<u8>>,
    /// Rescue mode: tables that could not be dumped completely, with the error.
    pub failed_tables: Vec<(Vec<u8>, String)>,
}

/// Global header values (first section only).
#[derive(Debug, Clone)]
struct Globals {
    lower: u64,
    upper: u64,
    shrink: u64,
    grow: u64,
    canary: [u64; 4],
}

fn globals(env: &Env, txn: &RoTxn<'_>) -> Result<Globals> {
    let info = env.info().map_err(eng("reading the environment info"))?;
    Ok(Globals {
        lower: info.size_lower,
        upper: info.size_upper,
        shrink: info.shrink_threshold,
        grow: info.growth_step,
        canary: txn.canary(),
    })
}

fn name_is_writable(n: &[u8]) -> bool {
    !n.contains(&0) && !n.contains(&b'\n') && !n.contains(&b'\r')
}

/// Names of the named tables (keys of table records in the main table), in
/// key order, that can be written in a dump header.
pub fn list_tables(txn: &RoTxn<'_>) -> Result<Vec<Vec<u8>>> {
    let names = txn.table_names().map_err(eng("listing the tables"))?;
    Ok(names.into_iter().filter(|n| name_is_writable(n)).collect())
}

/// Counts of the sections [`dump`] would write: total records (for progress).
pub fn count_records(txn: &RoTxn<'_>, opts: &DumpOptions) -> Result<u64> {
    let mut total = 0;
    if let Some(t) = &opts.table {
        let db = txn.open_db_bytes(Some(t)).map_err(eng("opening the table"))?;
        return Ok(txn.db_stat(db).map_err(eng("table statistics"))?.entries);
    }
    total += txn.db_stat(Db::MAIN).map_err(eng("main table statistics"))?.entries;
    if opts.all {
        for n in list_tables(txn)? {
            if let Ok(db) = txn.open_db_bytes(Some(&n)) {
                total += txn.db_stat(db).map(|s| s.entries).unwrap_or(0);
            }
        }
    }
    Ok(total)
}

/// Writes one section: table `db` named `name` (None: the main table).
/// `skip` lists main-table keys to leave out (table records). `progress` is
/// called with the number of records written so far in this section.
#[allow(clippy::too_many_arguments)]
fn write_section(
    txn: &RoTxn<'_>,
    db: Db,
    name: Option<&[u8]>,
    global: Option<&Globals>,
    page_size: usize,
    opts: &DumpOptions,
    skip: Option<&HashSet<Vec<u8>>>,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<u64> {
    let flags = txn.db_flags(db).map_err(eng("reading the table flags"))?;
    let sequence = txn.db_sequence(db).map_err(eng("reading the table sequence"))?;
    let mut h = Vec::with_capacity(256);
    h.extend_from_slice(b"VERSION=3\n");
    if let Some(g) = global {
        if g.upper != g.lower {
            let _ = writeln!(h, "geometry=l{},u{},s{},g{}", g.lower, g.upper, g.shrink, g.grow);
        }
        let _ = writeln!(h, "mapsize={}", g.upper);
        if g.canary[3] != 0 {
            let _ = writeln!(h, "canary=v{},x{},y{},z{}", g.canary[3], g.canary[0], g.canary[1], g.canary[2]);
        }
    }
    let _ = writeln!(h, "format={}", opts.format.as_str());
    if let Some(n) = name {
        h.extend_from_slice(b"database=");
        h.extend_from_slice(n);
        h.push(b'\n');
    }
    h.extend_from_slice(b"type=btree\n");
    let _ = writeln!(h, "db_pagesize={page_size}");
    let dup_any = DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP | DbFlags::REVERSE_DUP;
    let _ = writeln!(h, "duplicates={}", u8::from(flags.intersects(dup_any)));
    for (n, f) in FLAG_LINES {
        if flags.contains(f) {
            let _ = writeln!(h, "{n}=1");
        }
    }
    if sequence != 0 {
        let _ = writeln!(h, "sequence={sequence}");
    }
    h.extend_from_slice(b"HEADER=END\n");
    out.write_all(&h).map_err(out_err)?;

    let dupsort = flags.contains(DbFlags::DUP_SORT);
    let mut n = 0u64;
    let mut line = Vec::with_capacity(4096);
    let result = (|| -> Result<()> {
        let mut c = txn.cursor(db).map_err(eng("opening a cursor"))?;
        let mut rec = c.first().map_err(eng("reading records"))?;
        while let Some((k, v)) = rec {
            if skip.is_some_and(|s| s.contains(k)) {
                rec = c.next_nodup().map_err(eng("reading records"))?;
                continue;
            }
            line.clear();
            line.push(b' ');
            encode(opts.format, k, &mut line);
            line.extend_from_slice(b"\n ");
            encode(opts.format, v, &mut line);
            line.push(b'\n');
            n += 1;
            if dupsort && opts.concise {
                while let Some((_, v)) = c.next_dup().map_err(eng("reading records"))? {
                    line.extend_from_slice(b"  ");
                    encode(opts.format, v, &mut line);
                    line.push(b'\n');
                    n += 1;
                }
                rec = c.next_nodup().map_err(eng("reading records"))?;
            } else {
                rec = c.next().map_err(eng("reading records"))?;
            }
            out.write_all(&line).map_err(out_err)?;
            if n.is_multiple_of(1024) && !progress(n) {
                return Err(DumpError::Interrupted);
            }
        }
        Ok(())
    })();
    // A partial section still ends with DATA=END, as mdbx_dump does.
    out.write_all(b"DATA=END\n").map_err(out_err)?;
    result.map(|_| n)
}

/// Dumps the database (main table, one table, or all tables) to `out`.
/// `progress(records)` is called now and then; returning false interrupts.
/// Warnings (main-table records beside tables, skipped names) go to `warn`.
pub fn dump(
    env: &Env,
    opts: &DumpOptions,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(String),
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<DumpStats> {
    let txn = env.begin_ro_txn().map_err(eng("starting a read transaction"))?;
    dump_txn(env, &txn, opts, out, warn, progress)
}

/// [`dump`] from a read transaction the caller already holds (the shell
/// dumps inside its current snapshot).
pub fn dump_txn(
    env: &Env,
    txn: &RoTxn<'_>,
    opts: &DumpOptions,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(String),
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<DumpStats> {
    let mut g = Some(globals(env, txn)?);
    let ps = env.page_size();
    let mut stats = DumpStats::default();
    let mut done = 0u64;
    let mut prog = |n: u64| progress(done + n);
    if let Some(t) = &opts.table {
        let db = txn.open_db_bytes(Some(t)).map_err(|e| match e {
            rdbx::Error::NotFound => DumpError::Usage(format!("no table named '{}'", String::from_utf8_lossy(t))),
            e => DumpError::Engine { context: format!("opening table '{}'", String::from_utf8_lossy(t)), error: e },
        })?;
        stats.records += write_section(txn, db, Some(t), g.as_ref(), ps, opts, None, out, &mut prog)?;
        stats.sections = 1;
        return Ok(stats);
    }
    if !opts.all {
        let tables = txn.table_names().map_err(eng("listing the tables"))?.len();
        if tables > 0 {
            warn(format!(
                "the database has {tables} named table(s) and only the main table (@MAIN) is dumped, whose records \
                 are the tables themselves: use -a to dump every table"
            ));
        }
        stats.records += write_section(txn, Db::MAIN, None, g.as_ref(), ps, opts, None, out, &mut prog)?;
        stats.sections = 1;
        return Ok(stats);
    }
    let all_names = txn.table_names().map_err(eng("listing the tables"))?;
    let (names, skipped): (Vec<Vec<u8>>, Vec<Vec<u8>>) = all_names.iter().cloned().partition(|n| name_is_writable(n));
    for s in &skipped {
        warn(format!(
            "table {:?} cannot be written in a dump header (NUL or newline in its name); skipped",
            String::from_utf8_lossy(s)
        ));
    }
    stats.skipped_names = skipped;
    let table_keys: HashSet<Vec<u8>> = all_names.into_iter().collect();
    let main_total = txn.db_stat(Db::MAIN).map_err(eng("main table statistics"))?.entries;
    let plain = main_total.saturating_sub(table_keys.len() as u64);
    if names.is_empty() || plain > 0 {
        if !names.is_empty() {
            warn(format!(
                "the main table holds {plain} plain record(s) besides {} named table(s): they are dumped as an unnamed section first (the real mdbx_dump -a leaves them out)",
                names.len()
            ));
        }
        let n = write_section(txn, Db::MAIN, None, g.take().as_ref(), ps, opts, Some(&table_keys), out, &mut prog)?;
        stats.records += n;
        stats.main_plain_records = if names.is_empty() { 0 } else { n };
        stats.sections += 1;
        done += n;
    }
    for name in &names {
        let shown = String::from_utf8_lossy(name).into_owned();
        let r = txn.open_db_bytes(Some(name)).map_err(eng(format!("opening table '{shown}'"))).and_then(|db| {
            let mut prog = |n: u64| progress(done + n);
            write_section(txn, db, Some(name), g.take().as_ref(), ps, opts, None, out, &mut prog)
        });
        match r {
            Ok(n) => {
                stats.records += n;
                stats.sections += 1;
                done += n;
            }
            Err(e @ (DumpError::Engine { .. } | DumpError::Record { .. })) if opts.rescue => {
                warn(format!("ignore {e} for `{shown}` and continue"));
                stats.failed_tables.push((name.clone(), e.to_string()));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(stats)
}

// ---------------------------------------------------------------------------
// Reader

/// Geometry from a `geometry=` header line (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GeometryHeader {
    /// Lower bound.
    pub lower: u64,
    /// Current size (the `c` field of the five-field form).
    pub current: Option<u64>,
    /// Upper bound.
    pub upper: u64,
    /// Shrink threshold.
    pub shrink: u64,
    /// Growth step.
    pub grow: u64,
}

/// The header of one section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// `format=`.
    pub format: Format,
    /// `database=`; `None` for the main table.
    pub name: Option<Vec<u8>>,
    /// Persistent table flags.
    pub flags: DbFlags,
    /// `sequence=`.
    pub sequence: u64,
    /// `db_pagesize=`.
    pub page_size: Option<u64>,
    /// `geometry=`.
    pub geometry: Option<GeometryHeader>,
    /// `mapsize=`.
    pub mapsize: Option<u64>,
    /// `maxreaders=`.
    pub max_readers: Option<u32>,
    /// `canary=` as x, y, z, v.
    pub canary: Option<[u64; 4]>,
    /// Line number of `HEADER=END` (0 for headerless input).
    pub end_line: u64,
}

impl Header {
    /// Geometry for creating a database from this (first) header:
    /// `geometry=` (+ page size), else `mapsize=` as a fixed size, else defaults.
    pub fn geometry(&self) -> Geometry {
        let mut g = Geometry { page_size: self.page_size.map(|p| p as usize), ..Default::default() };
        if let Some(h) = &self.geometry {
            g.size_lower = Some(h.lower as usize);
            g.size_upper = Some(h.upper as usize);
            g.size_now = h.current.map(|c| c as usize);
            g.growth_step = Some(h.grow as usize);
            g.shrink_threshold = Some(h.shrink as usize);
        } else if let Some(m) = self.mapsize {
            g.size_lower = Some(m as usize);
            g.size_now = Some(m as usize);
            g.size_upper = Some(m as usize);
        }
        g
    }
}

/// One record read from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Key bytes.
    pub key: Vec<u8>,
    /// Value bytes.
    pub value: Vec<u8>,
    /// Line of the key (of the value for a concise continuation).
    pub line: u64,
}

/// A streaming parser of dump text (or of `-T` plain text).
pub struct DumpReader<R: BufRead> {
    input: R,
    line_no: u64,
    buf: Vec<u8>,
    plain_text: bool,
    format: Format,
    in_data: bool,
    prev_key: Option<Vec<u8>>,
    dupsort: bool,
    warned_cr: bool,
    warned_concise: bool,
    bytes_read: u64,
    plain_started: bool,
    /// Headers read so far: the first is the global one, whose geometry,
    /// map size, readers and canary apply to the database (as mdbx_load).
    headers: u64,
    /// The first header's `db_pagesize=`.
    global_page_size: Option<u64>,
    /// Warnings (unknown keywords, CRLF, ...), taken by the caller.
    pub warnings: Vec<String>,
}

/// The bounds mdbx_load takes a dump's `mapsize=` within (the smallest
/// database: three meta pages of the smallest page size; the largest:
/// 2^31 pages of the largest size), its `maxreaders=` and its `txnid=`
/// (from 1 to just below the top 2^32 values, which libmdbx keeps as
/// invalid); a value outside is ignored with a warning, as there.
const MIN_MAP_SIZE: u64 = 3 * 256;
const MAX_MAP_SIZE: u64 = (1 << 31) * 65536;
const MAX_READERS: u64 = 32767;
const MAX_TXNID: u64 = 0xffff_ffff_0000_0000 - 1;

/// C `strtoull(s, 0)` over the whole string.
pub fn parse_c_number(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

impl<R: BufRead> DumpReader<R> {
    /// A reader of dump text with headers.
    pub fn new(input: R) -> Self {
        Self::with_mode(input, false)
    }

    /// `plain_text`: headerless input (`mdbx_load -T`): alternate key and value
    /// lines in print encoding, no leading space.
    pub fn with_mode(input: R, plain_text: bool) -> Self {
        DumpReader {
            input,
            line_no: 0,
            buf: Vec::with_capacity(4096),
            plain_text,
            format: Format::Print,
            in_data: plain_text,
            prev_key: None,
            dupsort: false,
            warned_cr: false,
            warned_concise: false,
            bytes_read: 0,
            plain_started: false,
            headers: 0,
            global_page_size: None,
            warnings: Vec::new(),
        }
    }

    /// Current line number (of the last line read).
    pub fn line(&self) -> u64 {
        self.line_no
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    fn perr(&self, line: u64, message: impl Into<String>) -> DumpError {
        DumpError::Parse { line, message: message.into() }
    }

    /// Reads the next line into `self.buf` (without the newline). false at EOF.
    fn read_line(&mut self) -> Result<bool> {
        self.buf.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| DumpError::Io { context: "reading the input".into(), error: e })?;
        if n == 0 {
            return Ok(false);
        }
        self.bytes_read += n as u64;
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
            if !self.warned_cr {
                self.warned_cr = true;
                self.warnings.push(format!("line {}: CRLF line ends; the CR characters are ignored", self.line_no));
            }
        }
        Ok(true)
    }

    /// Reads the next section header. `Ok(None)` at the end of the input.
    /// For plain-text input returns one synthetic header first.
    pub fn next_header(&mut self) -> Result<Option<Header>> {
        if self.plain_text {
            if self.plain_started {
                return Ok(None);
            }
            self.plain_started = true;
            self.in_data = true;
            self.format = Format::Print;
            return Ok(Some(Header { format: Format::Print, ..Default::default() }));
        }
        let mut h = Header::default();
        let mut any = false;
        let global = self.headers == 0;
        loop {
            if !self.read_line()? {
                if !any {
                    return Ok(None);
                }
                return Err(self.perr(self.line_no, "unexpected end of input inside a header (no HEADER=END)"));
            }
            any = true;
            let line = String::from_utf8_lossy(&self.buf).into_owned();
            let ln = self.line_no;
            if line == "HEADER=END" {
                h.end_line = ln;
                break;
            }
            let keywords = [
                "VERSION",
                "format",
                "type",
                "database",
                "db_pagesize",
                "mapsize",
                "geometry",
                "canary",
                "maxreaders",
                "txnid",
                "mapaddr",
                "sequence",
                "duplicates",
                "dupsort",
                "reversekey",
                "integerkey",
                "dupfix",
                "integerdup",
                "reversedup",
            ];
            let mut matched = None;
            for kw in keywords {
                if let Some(rest) = line.strip_prefix(kw) {
                    match rest.bytes().next() {
                        Some(b'=') => {
                            matched = Some((kw, rest[1..].to_string()));
                            break;
                        }
                        None => return Err(self.perr(ln, format!("unexpected line format for '{kw}'"))),
                        Some(c) if c <= b' ' => return Err(self.perr(ln, format!("unexpected line format for '{kw}'"))),
                        _ => {}
                    }
                }
            }
            let Some((kw, val)) = matched else {
                self.warnings.push(format!("line {ln}: unrecognized keyword ignored: {line}"));
                continue;
            };
            let num = |what: &str| {
                parse_c_number(&val).ok_or_else(|| DumpError::Parse {
                    line: ln,
                    message: format!("unexpected number format for '{what}'"),
                })
            };
            // Database-wide settings count in the first header only.
            let non_global =
                |what: &str, shown: &str| format!("line {ln}: ignore {what} {shown} for '{kw}' in non-global context");
            let unsupported = |v: u64| format!("line {ln}: ignore unsupported value {v:#x} for {kw}");
            match kw {
                "VERSION" => {
                    if num("VERSION")? != 3 {
                        return Err(self.perr(ln, format!("unsupported value {val} for VERSION")));
                    }
                }
                "format" => {
                    h.format = match val.as_str() {
                        "print" => Format::Print,
                        "bytevalue" => Format::ByteValue,
                        _ => return Err(self.perr(ln, format!("unsupported value '{val}' for format"))),
                    }
                }
                "type" => {
                    if val != "btree" {
                        return Err(self.perr(ln, format!("unsupported value '{val}' for type")));
                    }
                }
                "database" => {
                    // The raw bytes after '='.
                    let raw = self.buf[b"database=".len()..].to_vec();
                    h.name = if raw.is_empty() { None } else { Some(raw) };
                }
                "db_pagesize" => {
                    let v = num("db_pagesize")?;
                    if !global && self.global_page_size != Some(v) {
                        self.warnings.push(non_global("value", &v.to_string()));
                    } else if !(256..=65536).contains(&v) || !v.is_power_of_two() {
                        self.warnings.push(format!("line {ln}: ignore unsupported value {v} for db_pagesize"));
                    } else {
                        h.page_size = Some(v);
                    }
                }
                "mapsize" => {
                    let v = num("mapsize")?;
                    if !global {
                        self.warnings.push(non_global("value", &v.to_string()));
                    } else if !(MIN_MAP_SIZE..=MAX_MAP_SIZE).contains(&v) {
                        self.warnings.push(unsupported(v));
                    } else {
                        h.mapsize = Some(v);
                    }
                }
                "maxreaders" => {
                    let v = num("maxreaders")?;
                    if !global {
                        self.warnings.push(non_global("value", &v.to_string()));
                    } else if !(1..=MAX_READERS).contains(&v) {
                        self.warnings.push(unsupported(v));
                    } else {
                        h.max_readers = Some(v as u32);
                    }
                }
                "txnid" => {
                    let v = num("txnid")?;
                    if !(1..=MAX_TXNID).contains(&v) {
                        self.warnings.push(unsupported(v));
                    }
                }
                "mapaddr" => {
                    let v = num("mapaddr")?;
                    if v != 0 {
                        self.warnings.push(unsupported(v));
                    }
                }
                "sequence" => h.sequence = num("sequence")?,
                "geometry" | "canary" if !global => self.warnings.push(non_global("values", &val)),
                "geometry" => {
                    h.geometry = Some(
                        parse_geometry(&val).ok_or_else(|| self.perr(ln, "unexpected line format for 'geometry'"))?,
                    )
                }
                "canary" => {
                    h.canary =
                        Some(parse_canary(&val).ok_or_else(|| self.perr(ln, "unexpected line format for 'canary'"))?)
                }
                flag => {
                    let v = num(flag)?;
                    if v > 1 {
                        return Err(self.perr(ln, format!("unexpected value for '{flag}'")));
                    }
                    let f = match flag {
                        "duplicates" | "dupsort" => DbFlags::DUP_SORT,
                        "reversekey" => DbFlags::REVERSE_KEY,
                        "integerkey" => DbFlags::INTEGER_KEY,
                        "dupfix" => DbFlags::DUP_FIXED,
                        "integerdup" => DbFlags::INTEGER_DUP,
                        _ => DbFlags::REVERSE_DUP,
                    };
                    h.flags.set(f, v == 1);
                }
            }
        }
        if global {
            self.global_page_size = h.page_size;
        }
        self.headers += 1;
        self.format = h.format;
        self.in_data = true;
        self.prev_key = None;
        self.dupsort = h.flags.contains(DbFlags::DUP_SORT);
        self.warned_concise = false;
        Ok(Some(h))
    }

    /// The next record of the current section; `Ok(None)` at `DATA=END` (or
    /// at the end of the input after complete records).
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        if !self.in_data {
            return Ok(None);
        }
        let mut key_buf = Vec::new();
        let mut val = Vec::new();
        if self.plain_text {
            if !self.read_line()? {
                self.in_data = false;
                return Ok(None);
            }
            let kl = self.line_no;
            decode(Format::Print, &self.buf, &mut key_buf).map_err(|m| self.perr(kl, m))?;
            if !self.read_line()? {
                return Err(self.perr(kl, "failed to read key value (a key without a value at the end of the input)"));
            }
            let vl = self.line_no;
            decode(Format::Print, &self.buf, &mut val).map_err(|m| self.perr(vl, m))?;
            return Ok(Some(Record { key: key_buf, value: val, line: kl }));
        }
        if !self.read_line()? {
            // End of file without DATA=END after complete pairs: accepted.
            self.in_data = false;
            return Ok(None);
        }
        let ln = self.line_no;
        if self.buf.first() != Some(&b' ') {
            if self.buf == b"DATA=END" {
                self.in_data = false;
                return Ok(None);
            }
            return Err(self.perr(
                ln,
                format!(
                    "unexpected end of input (a data line must start with a space, got {:?})",
                    String::from_utf8_lossy(&self.buf[..self.buf.len().min(40)])
                ),
            ));
        }
        let leading_space_key = self.buf.get(1) == Some(&b' ') && !self.dupsort && self.format == Format::Print;
        if leading_space_key && !self.warned_concise {
            // The real mdbx_dump -p writes a key that starts with a space
            // as "  key"; in a section without DUPSORT there are no
            // continuation lines, so this can only be such a key.
            self.warned_concise = true;
            self.warnings.push(format!("line {ln}: a key line with two leading spaces in a print-mode section without DUPSORT: read as a key starting with a space (as written by mdbx_dump -p)"));
        }
        if self.buf.get(1) == Some(&b' ') && !leading_space_key {
            // Concise continuation: another value of the previous key.
            let Some(k) = self.prev_key.clone() else {
                return Err(self.perr(ln, "a continuation line (two leading spaces) without a previous key"));
            };
            if !self.dupsort && !self.warned_concise {
                self.warned_concise = true;
                self.warnings.push(format!(
                    "line {ln}: continuation line (two leading spaces) in a section whose table is not DUPSORT: the value replaces the previous one (a print-mode dump of a value starting with a space?)"
                ));
            }
            let fmt = self.format;
            decode(fmt, &self.buf[2..], &mut val).map_err(|m| self.perr(ln, m))?;
            return Ok(Some(Record { key: k, value: val, line: ln }));
        }
        let fmt = self.format;
        decode(fmt, &self.buf[1..], &mut key_buf).map_err(|m| self.perr(ln, m))?;
        if !self.read_line()? {
            return Err(self.perr(ln, "failed to read key value (a key without a value at the end of the input)"));
        }
        let vl = self.line_no;
        if self.buf.first() != Some(&b' ') {
            return Err(self.perr(vl, "failed to read key value (the value line must start with a space)"));
        }
        decode(fmt, &self.buf[1..], &mut val).map_err(|m| self.perr(vl, m))?;
        self.prev_key = Some(key_buf.clone());
        Ok(Some(Record { key: key_buf, value: val, line: ln }))
    }
}

fn parse_fields(s: &str, letters: &[char]) -> Option<Vec<u64>> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != letters.len() {
        return None;
    }
    let mut out = Vec::new();
    for (p, l) in parts.iter().zip(letters) {
        let v = p.strip_prefix(*l)?;
        out.push(parse_c_number(v)?);
    }
    Some(out)
}

fn parse_geometry(s: &str) -> Option<GeometryHeader> {
    if let Some(v) = parse_fields(s, &['l', 'u', 's', 'g']) {
        return Some(GeometryHeader { lower: v[0], current: None, upper: v[1], shrink: v[2], grow: v[3] });
    }
    let v = parse_fields(s, &['l', 'c', 'u', 's', 'g'])?;
    Some(GeometryHeader { lower: v[0], current: Some(v[1]), upper: v[2], shrink: v[3], grow: v[4] })
}

fn parse_canary(s: &str) -> Option<[u64; 4]> {
    let v = parse_fields(s, &['v', 'x', 'y', 'z'])?;
    Some([v[1], v[2], v[3], v[0]])
}

// ---------------------------------------------------------------------------
// Loader

/// How to load.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Put records with APPEND (input must be sorted; `-a`).
    pub append: bool,
    /// Target table for headerless input (`-T -s TABLE`).
    pub table: Option<Vec<u8>>,
    /// Do not overwrite existing keys / pairs (`-N`).
    pub no_overwrite: bool,
    /// Empty each target table before loading its section (`-p`).
    pub purge: bool,
    /// Commit every this many records (0: one transaction per section).
    pub batch: u64,
    /// Skip records the engine rejects for their size (`-r`) instead of stopping.
    pub rescue: bool,
    /// Also commit when the dirty data of the write transaction reaches this
    /// many bytes (`-L`; 0: no limit).
    pub dirty_limit: u64,
    /// Begin every write transaction with [`Env::try_begin_rw_txn`]: fail with
    /// [`rdbx::Error::Busy`] instead of waiting for another writer.
    pub nonblock: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            append: false,
            table: None,
            no_overwrite: false,
            purge: false,
            batch: 100_000,
            rescue: false,
            dirty_limit: 0,
            nonblock: false,
        }
    }
}

/// Records between two looks at the dirty size of the transaction for
/// [`LoadOptions::dirty_limit`] (the look costs time proportional to the
/// dirty pages); large values make it look sooner, see [`DirtyGauge`].
const DIRTY_CHECK_RECORDS: u64 = 1024;

/// Decides when the transaction's dirty data is worth measuring: every
/// [`DIRTY_CHECK_RECORDS`] records, or sooner when the bytes put since the
/// last measurement reach an eighth of the limit.
struct DirtyGauge {
    limit: u64,
    records: u64,
    bytes: u64,
}

impl DirtyGauge {
    fn new(limit: u64) -> Self {
        DirtyGauge { limit, records: 0, bytes: 0 }
    }

    /// Counts one record; `true` when the transaction should be measured now.
    fn note(&mut self, key_len: usize, value_len: usize) -> bool {
        if self.limit == 0 {
            return false;
        }
        self.records += 1;
        self.bytes += (key_len + value_len) as u64;
        self.records >= DIRTY_CHECK_RECORDS || self.bytes >= (self.limit / 8).max(1)
    }

    fn reset(&mut self) {
        self.records = 0;
        self.bytes = 0;
    }
}

/// Begins a write transaction of the load; `commits` so far go into the
/// error context (with `nonblock` a busy writer lock fails at once).
fn begin_txn(env: &Env, nonblock: bool, commits: u64) -> Result<rdbx::RwTxn<'_>> {
    let r = if nonblock { env.try_begin_rw_txn() } else { env.begin_rw_txn() };
    r.map_err(eng(match commits {
        0 => "starting a write transaction (nothing committed yet)".to_string(),
        n => format!("starting a write transaction after {n} commit(s) (which stay)"),
    }))
}

/// What a load did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Sections loaded.
    pub sections: u64,
    /// Records put.
    pub records: u64,
    /// Records skipped (existing with `no_overwrite`, or rejected with `rescue`).
    pub skipped: u64,
    /// Transactions committed.
    pub commits: u64,
    /// Lines read.
    pub lines: u64,
    /// Records put by the batches committed so far (what an interrupted
    /// load keeps).
    pub kept: u64,
}

/// Progress of a load.
#[derive(Debug, Clone, Copy)]
pub struct LoadProgress {
    /// Bytes of input read.
    pub bytes: u64,
    /// Records put so far.
    pub records: u64,
    /// Records of the batches committed so far (kept if the load stops now).
    pub kept: u64,
}

/// Loads every section of `reader` into `env`. `first` is the first header if
/// the caller already read it (to create the environment with its geometry).
/// `progress` returning false interrupts (the current batch is rolled back).
pub fn load<R: BufRead>(
    env: &Env,
    reader: &mut DumpReader<R>,
    mut first: Option<Header>,
    opts: &LoadOptions,
    warn: &mut dyn FnMut(String),
    progress: &mut dyn FnMut(LoadProgress) -> bool,
) -> Result<LoadStats> {
    let mut stats = LoadStats::default();
    let mut section = 0u64;
    let ps = env.page_size() as u64;
    loop {
        let header = match first.take() {
            Some(h) => Some(h),
            None => reader.next_header()?,
        };
        for w in reader.warnings.drain(..) {
            warn(w);
        }
        let Some(mut h) = header else { break };
        if reader.plain_text {
            h.name = opts.table.clone();
        } else if opts.table.is_some() && section == 0 {
            warn(
                "-s applies to headerless input (-T) only: the sections' database= lines decide the target tables"
                    .into(),
            );
        }
        if let Some(p) = h.page_size {
            if p != ps && section == 0 {
                warn(format!(
                    "the dump has page size {p}, the target database {ps}: the records are loaded with page size {ps}"
                ));
            }
        }
        load_section(env, reader, &h, section == 0, opts, &mut stats, warn, progress)?;
        section += 1;
        stats.sections += 1;
        if reader.plain_text {
            break;
        }
    }
    stats.lines = reader.line();
    Ok(stats)
}

#[allow(clippy::too_many_arguments)]
fn load_section<R: BufRead>(
    env: &Env,
    reader: &mut DumpReader<R>,
    h: &Header,
    first: bool,
    opts: &LoadOptions,
    stats: &mut LoadStats,
    warn: &mut dyn FnMut(String),
    progress: &mut dyn FnMut(LoadProgress) -> bool,
) -> Result<()> {
    let hl = h.end_line;
    let tname = || match &h.name {
        Some(n) => format!("table '{}'", String::from_utf8_lossy(n)),
        None => "the main table".to_string(),
    };
    let mut txn = begin_txn(env, opts.nonblock, stats.commits)?;
    let flags = h.flags & DbFlags::PERSISTENT;
    let at_header = |e: rdbx::Error| DumpError::Record { line: hl, error: e };
    let db = match &h.name {
        Some(n) => txn.create_db_bytes(Some(n), flags | DbFlags::CREATE).map_err(|e| match e {
            rdbx::Error::Incompatible(m) => DumpError::Parse {
                line: hl,
                message: format!(
                    "{}: the flags of the dump ({:#x}) differ from the existing table: {m}",
                    tname(),
                    flags.bits()
                ),
            },
            e => at_header(e),
        })?,
        None => {
            let cur = txn.db_flags(Db::MAIN).map_err(at_header)?;
            if cur != flags {
                txn.create_db(None, flags).map_err(|e| DumpError::Parse {
                    line: hl,
                    message: format!(
                        "the main table: flags of the dump ({:#x}) differ from the existing ({:#x}): {e}",
                        flags.bits(),
                        cur.bits()
                    ),
                })?;
            }
            Db::MAIN
        }
    };
    if opts.purge {
        // Purge first, then the sequence (the real mdbx_load -p loses it).
        txn.clear_db(db).map_err(at_header)?;
    }
    if h.sequence != 0 {
        let cur = txn.db_sequence(db).map_err(at_header)?;
        if cur > h.sequence {
            return Err(DumpError::Parse {
                line: hl,
                message: format!(
                    "present sequence for {} value ({cur}) is greater than loaded ({})",
                    tname(),
                    h.sequence
                ),
            });
        }
        txn.sequence(db, h.sequence - cur).map_err(at_header)?;
    }
    if first {
        if let Some(c) = h.canary {
            if c.iter().any(|&x| x != 0) {
                txn.set_canary(c[0], c[1], c[2]);
            }
        }
    }
    let dupsort = flags.contains(DbFlags::DUP_SORT);
    let mut put_flags = PutFlags::empty();
    if opts.no_overwrite {
        put_flags |= PutFlags::NO_OVERWRITE;
        if dupsort {
            put_flags |= PutFlags::NO_DUP_DATA;
        }
    }
    if opts.append {
        put_flags |= if dupsort { PutFlags::APPEND_DUP } else { PutFlags::APPEND };
    }
    let mut in_batch = 0u64;
    let mut gauge = DirtyGauge::new(opts.dirty_limit);
    let mut last_key: Option<Vec<u8>> = None;
    while let Some(r) = reader.next_record()? {
        let mut pf = put_flags;
        if opts.append && dupsort {
            // A new key is appended, further values of the same key append as dups.
            let same = last_key.as_deref() == Some(r.key.as_slice());
            pf.remove(PutFlags::APPEND | PutFlags::APPEND_DUP);
            pf |= if same { PutFlags::APPEND_DUP } else { PutFlags::APPEND | PutFlags::APPEND_DUP };
        }
        match txn.put(db, &r.key, &r.value, pf) {
            Ok(()) => stats.records += 1,
            Err(rdbx::Error::KeyExist) if opts.no_overwrite => stats.skipped += 1,
            Err(rdbx::Error::BadValSize(m)) if opts.rescue => {
                warn(format!("skip line {}: due MDBX_BAD_VALSIZE: {m}", r.line));
                stats.skipped += 1;
            }
            Err(e) => return Err(DumpError::Record { line: r.line, error: e }),
        }
        in_batch += 1;
        let mut full = opts.batch > 0 && in_batch >= opts.batch;
        if gauge.note(r.key.len(), r.value.len()) {
            gauge.reset();
            full |= txn.info().map_err(eng("measuring the write transaction"))?.space_dirty >= opts.dirty_limit;
        }
        if opts.append && dupsort {
            last_key = Some(r.key);
        }
        if full {
            txn.commit().map_err(eng(format!("committing a batch at input line {}", reader.line())))?;
            stats.commits += 1;
            stats.kept = stats.records;
            in_batch = 0;
            gauge.reset();
            txn = begin_txn(env, opts.nonblock, stats.commits)?;
        }
        if stats.records.is_multiple_of(4096)
            && !progress(LoadProgress { bytes: reader.bytes_read(), records: stats.records, kept: stats.kept })
        {
            return Err(DumpError::Interrupted);
        }
        for w in reader.warnings.drain(..) {
            warn(w);
        }
    }
    for w in reader.warnings.drain(..) {
        warn(w);
    }
    txn.commit().map_err(eng(format!("committing {} at input line {}", tname(), reader.line())))?;
    stats.commits += 1;
    stats.kept = stats.records;
    progress(LoadProgress { bytes: reader.bytes_read(), records: stats.records, kept: stats.kept });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_print_escapes() {
        let mut v = Vec::new();
        encode(Format::Print, b"a\\b\x01 ~\x7f\xff", &mut v);
        assert_eq!(v, b"a\\5cb\\01 ~\\7f\\ff");
        v.clear();
        encode(Format::Print, b" a", &mut v);
        assert_eq!(v, b"\\20a");
        v.clear();
        encode(Format::ByteValue, b"\x00\xab", &mut v);
        assert_eq!(v, b"00ab");
    }

    #[test]
    fn decode_roundtrip() {
        let mut out = Vec::new();
        decode(Format::Print, b"\\20a\\\\b\\5C", &mut out).unwrap();
        assert_eq!(out, b" a\\b\\");
        assert!(decode(Format::ByteValue, b"abc", &mut out).is_err());
        assert!(decode(Format::Print, b"\\zz", &mut out).is_err());
    }

    #[test]
    fn header_errors() {
        let parse = |s: &str| DumpReader::new(s.as_bytes()).next_header();
        assert!(matches!(parse("VERSION=2\n"), Err(DumpError::Parse { line: 1, .. })));
        assert!(matches!(parse("VERSION =3\n"), Err(DumpError::Parse { line: 1, .. })));
        assert!(matches!(parse("VERSION=3\nformat=hex\n"), Err(DumpError::Parse { line: 2, .. })));
        assert!(matches!(parse("VERSION=3\ntype=hash\n"), Err(DumpError::Parse { line: 2, .. })));
        assert!(matches!(parse("VERSION=3\n"), Err(DumpError::Parse { .. })));
        assert!(matches!(parse(""), Ok(None)));
        let h = parse(
            "VERSION=3\ngeometry=l1,u0x10,s3,g4\nfoo=bar\ndatabase=t x\nduplicates=1\nsequence=010\nHEADER=END\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(h.name.as_deref(), Some(&b"t x"[..]));
        assert_eq!(h.sequence, 8);
        assert_eq!(h.geometry.unwrap().upper, 16);
        assert!(h.flags.contains(DbFlags::DUP_SORT));
    }

    #[test]
    fn records_and_concise() {
        let text =
            "VERSION=3\nformat=print\nduplicates=1\ndupsort=1\nHEADER=END\n k\n v1\n  v2\n k2\n \\20x\nDATA=END\n";
        let mut r = DumpReader::new(text.as_bytes());
        r.next_header().unwrap().unwrap();
        let mut got = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            got.push((rec.key, rec.value, rec.line));
        }
        assert_eq!(
            got,
            vec![
                (b"k".to_vec(), b"v1".to_vec(), 6),
                (b"k".to_vec(), b"v2".to_vec(), 8),
                (b"k2".to_vec(), b" x".to_vec(), 9)
            ]
        );
        assert!(r.next_header().unwrap().is_none());
        let bad = "VERSION=3\nHEADER=END\n 61\n 6\nDATA=END\n";
        let mut r = DumpReader::new(bad.as_bytes());
        r.next_header().unwrap();
        assert!(matches!(r.next_record(), Err(DumpError::Parse { line: 4, .. })));
    }
}
