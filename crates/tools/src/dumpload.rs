//! `dump` and `load`: the `mdbx_dump` text format through the `rdbx-dump` codec.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use rdbx::{Durability, Env};
use rdbx_dump::{DumpError, DumpOptions, DumpReader, Format, LoadOptions};

use crate::common::{self, locate, open_env, Interruptible, ToolError, INTERRUPTED_MSG, MAX_DBS, PROG};

/// Arguments of `dump`.
#[derive(Args, Debug)]
#[command(after_help = "\
Output is byte for byte what mdbx_dump prints, except that in print mode (-p)
a leading space of a key or value is written as \\20 (mdbx_load would read it
as a continuation line), and -a also writes the plain records of the main
table (as an unnamed first section) when named tables exist.

FILE (-f) is never a file of the database being dumped (also under another
name: a link, DIR vs DIR/mdbx.dat) nor a data or lock file of another
database. On SIGINT/SIGTERM/SIGHUP (Ctrl-C) the dump stops, removes FILE if
it created it, and exits 1 with \"Interrupted by signal/user\".

EXIT STATUS: 0 success, 1 any failure or interrupted (as mdbx_dump).")]
pub struct DumpArgs {
    /// Every named table (and plain records of the main table)
    #[arg(short = 'a', conflicts_with = "table")]
    all: bool,
    /// Only this named table
    #[arg(short = 's', value_name = "TABLE")]
    table: Option<String>,
    /// List the named tables only
    #[arg(short = 'l', conflicts_with = "table")]
    list: bool,
    /// Printable encoding (format=print)
    #[arg(short = 'p')]
    print: bool,
    /// Concise: DUPSORT keys once, further values as continuation lines
    #[arg(short = 'c')]
    concise: bool,
    /// Write to FILE instead of standard output
    #[arg(short = 'f', value_name = "FILE")]
    file: Option<PathBuf>,
    /// No warnings, no progress bar
    #[arg(short = 'q')]
    quiet: bool,
    /// Rescue (with -a): report a damaged table, close its section and go on
    /// with the next ones; exit 1 at the end
    #[arg(short = 'r')]
    rescue: bool,
    /// Ignored (legacy no-subdir flag; the layout is detected)
    #[arg(short = 'n')]
    no_sub_dir: bool,
    /// Database directory or data file
    path: PathBuf,
}

/// Arguments of `load`.
#[derive(Args, Debug)]
#[command(after_help = "\
Reads the mdbx_dump text format (any section order, concise continuation
lines, print and bytevalue) from FILE or standard input, streaming, and puts
the records in batches of write transactions. On bad input it stops with the
line number; batches committed before stay, the current one is rolled back.
A missing PATH is created (a directory, or a single file with -n) with the
geometry and page size of the first header, or with -G.

GEOMETRY (-G LOWER:UPPER:GROWTH:SHRINK:PAGESIZE), as mdbx_load:
    sizes in bytes; -1 takes the default, 0 the minimum (an UPPER of 0 takes
    the default upper bound, as libmdbx does; a GROWTH of 0 means the file
    never grows, a SHRINK of 0 that it never shrinks); PAGESIZE is a power of
    two from 256 to 65536 (0: 256, -1: 4096). -G replaces the geometry of the
    dump header altogether. It decides the page size of a new database, so
    `rdbx-tools dump -a OLD | rdbx-tools load -G -1:-1:-1:-1:65536 NEW`
    migrates OLD to 64 KiB pages. For an existing database the sizes are
    applied when no other process has it open, and a different page size is
    ignored with a warning (the page size of a database cannot change).
    Example: -G 1048576:1073741824:16777216:33554432:4096 (1 MiB..1 GiB,
    growing by 16 MiB).

PAGE FILL (-d PERCENT): accepted for mdbx_load compatibility (50..100), but
rdbx has no split-reserve setting: records put in key order (as a dump
holds them) fill each page completely, which is what -d 100 (the default)
asks for; lower values change nothing.

--nonblock: when another process (or transaction) holds the write lock,
fail at once (exit 1) instead of waiting for it, also between batches. The
batches then commit durably one by one, so no final sync has to wait for
the lock either.

On SIGINT/SIGTERM/SIGHUP (Ctrl-C), also while waiting for input on a
terminal or a pipe, the load stops: the current batch is rolled back, a
database this load created is removed, an existing one keeps the batches
committed before; exit 1 with \"Interrupted by signal/user\". PATH is never the
lock file of a database.

EXIT STATUS: 0 success, 1 any failure or interrupted (as mdbx_load).")]
pub struct LoadArgs {
    /// Append: input must be sorted (puts with APPEND)
    #[arg(short = 'a')]
    append: bool,
    /// Target table for headerless input (-T)
    #[arg(short = 's', value_name = "TABLE")]
    table: Option<String>,
    /// Do not overwrite existing keys (or key/value pairs of DUPSORT tables)
    #[arg(short = 'N')]
    no_overwrite: bool,
    /// Headerless plain text: alternate key and value lines, print encoding
    #[arg(short = 'T')]
    plain_text: bool,
    /// Read from FILE instead of standard input
    #[arg(short = 'f', value_name = "FILE")]
    file: Option<PathBuf>,
    /// Create a single-file database (PATH and PATH-lck) instead of a directory
    #[arg(short = 'n')]
    no_sub_dir: bool,
    /// Empty each target table before loading its section (the sequence is kept)
    #[arg(short = 'p')]
    purge: bool,
    /// Records per transaction (0: one transaction per section)
    #[arg(short = 'b', value_name = "N", default_value_t = 100_000)]
    batch: u64,
    /// Also commit when the transaction's dirty data reaches MEGABYTES (MiB; 0: no limit)
    #[arg(short = 'L', value_name = "MEGABYTES", allow_hyphen_values = true)]
    dirty_limit: Option<String>,
    /// Target page fill 50..100, accepted for compatibility (rdbx fills pages fully, see below)
    #[arg(short = 'd', value_name = "PERCENT", allow_hyphen_values = true)]
    fill: Option<String>,
    /// Geometry (and page size of a new database): lower:upper:growth:shrink:pagesize (see below)
    #[arg(short = 'G', value_name = "L:U:G:S:P", allow_hyphen_values = true)]
    geometry: Option<String>,
    /// Fail at once (exit 1) if another writer holds the write lock, instead of waiting
    #[arg(long)]
    nonblock: bool,
    /// Rescue: skip records whose size the table does not accept
    #[arg(short = 'r')]
    rescue: bool,
    /// No warnings, no progress bar
    #[arg(short = 'q')]
    quiet: bool,
    /// Database directory or data file
    path: PathBuf,
}

pub fn run_dump(a: DumpArgs) -> u8 {
    let _ = a.no_sub_dir;
    match dump(&a) {
        Ok(()) => 0,
        Err(e) => {
            if e.code != libc::EPIPE {
                eprintln!("{PROG} dump: {e}");
            }
            1
        }
    }
}

fn dump(a: &DumpArgs) -> Result<(), ToolError> {
    let t = locate(&a.path)?;
    if let Some(f) = &a.file {
        // Before anything is opened or created: never onto a database.
        common::check_output(f, "the dump", &t, "the database being dumped", None)?;
    }
    let env = open_env(&t, true)?;
    // A file this dump creates is removed again when a signal stops it.
    let created = a.file.as_ref().filter(|f| f.symlink_metadata().is_err());
    let mut sink: Box<dyn Write> = match &a.file {
        Some(f) => Box::new(File::create(f).map_err(|e| {
            ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("{}: cannot create: {e}", f.display()))
        })?),
        None => Box::new(Interruptible(common::raw_stdout().map_err(io_err)?)),
    };
    let r = dump_to(a, &env, &mut sink);
    drop(sink);
    match r {
        Err(e) if e.code == libc::EINTR || common::interrupted() => {
            let mut msg = INTERRUPTED_MSG.to_string();
            if let Some(f) = created {
                if std::fs::remove_file(f).is_ok() {
                    msg.push_str(&format!(" (the partial dump {} was removed)", f.display()));
                }
            } else if let Some(f) = &a.file {
                msg.push_str(&format!(" ({} is incomplete)", f.display()));
            }
            Err(ToolError::sys(libc::EINTR, msg))
        }
        r => r,
    }
}

fn dump_to(a: &DumpArgs, env: &Env, sink: &mut Box<dyn Write>) -> Result<(), ToolError> {
    let p = a.path.display();
    if a.list {
        let txn = env.begin_ro_txn().map_err(|e| ToolError::engine(&e, &p))?;
        let names = txn.table_names().map_err(|e| ToolError::engine(&e, &p))?;
        let mut o = BufWriter::new(sink);
        for n in names {
            o.write_all(&n).and_then(|_| o.write_all(b"\n")).map_err(io_err)?;
        }
        o.flush().map_err(io_err)?;
        return Ok(());
    }
    let opts = DumpOptions {
        format: if a.print { Format::Print } else { Format::ByteValue },
        concise: a.concise,
        all: a.all,
        table: a.table.as_ref().map(|s| s.as_bytes().to_vec()),
        rescue: a.rescue,
    };
    let show_bar = !a.quiet && (a.file.is_some() || !io::stdout().is_terminal());
    let total = {
        let txn = env.begin_ro_txn().map_err(|e| ToolError::engine(&e, &p))?;
        rdbx_dump::count_records(&txn, &opts).unwrap_or(0)
    };
    let pb = common::progress_bar(show_bar, total, "dump", common::Unit::Records);
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let quiet = a.quiet;
    let mut warn = |m: String| {
        if !quiet {
            eprintln!("{PROG} dump: warning: {m}");
        }
    };
    let mut progress = |n: u64| {
        if let Some(pb) = &pb {
            pb.set_position(n);
        }
        !common::interrupted()
    };
    let r = rdbx_dump::dump(env, &opts, &mut out, &mut warn, &mut progress);
    let flushed = out.flush();
    common::finish(pb, r.as_ref().ok().map(|st| format!("dump: {} records in {} section(s)", st.records, st.sections)));
    match r {
        Ok(st) if !st.failed_tables.is_empty() => {
            flushed.map_err(io_err)?;
            Err(ToolError::sys(
                libc::EIO,
                format!("{p}: {} table(s) could not be dumped completely (rescue mode)", st.failed_tables.len()),
            ))
        }
        Ok(_) => flushed.map_err(io_err),
        Err(e) => Err(dump_err(e, &p.to_string())),
    }
}

fn io_err(e: io::Error) -> ToolError {
    ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("writing the output: {e}"))
}

fn dump_err(e: DumpError, path: &str) -> ToolError {
    match e {
        DumpError::Io { error, context } => {
            ToolError::sys(error.raw_os_error().unwrap_or(libc::EIO), format!("{context}: {error}"))
        }
        DumpError::Engine { context, error } => ToolError::engine(&error, format!("{path}: {context}")),
        DumpError::Usage(m) => ToolError::sys(libc::EINVAL, format!("{path}: {m}")),
        DumpError::Interrupted => ToolError::sys(libc::EINTR, INTERRUPTED_MSG),
        other => ToolError::sys(libc::EINVAL, format!("{path}: {other}")),
    }
}

pub fn run_load(a: LoadArgs) -> u8 {
    match load(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{PROG} load: {e}");
            1
        }
    }
}

/// A number of `-G`: `-1` (any negative) takes the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GeoValue {
    Default,
    Bytes(u64),
}

/// Parses `-G LOWER:UPPER:GROWTH:SHRINK:PAGESIZE` (mdbx_load's rules, see
/// the help text) into the engine's geometry.
fn parse_geometry(v: &str) -> Result<rdbx::Geometry, ToolError> {
    let usage = || {
        ToolError::sys(libc::EINVAL, format!("-G option: expecting five numbers delimited by a colon, but got '{v}'"))
    };
    let fields: Vec<&str> = v.split(':').collect();
    if fields.len() != 5 {
        return Err(usage());
    }
    let mut n = [GeoValue::Default; 5];
    for (slot, f) in n.iter_mut().zip(&fields) {
        let f = f.trim();
        *slot = match f.strip_prefix('-') {
            Some(m) => match rdbx_dump::parse_c_number(m).ok_or_else(usage)? {
                0 => GeoValue::Bytes(0),
                _ => GeoValue::Default,
            },
            None => GeoValue::Bytes(rdbx_dump::parse_c_number(f).ok_or_else(usage)?),
        };
    }
    let invalid =
        |what: String| ToolError::sys(libc::EINVAL, format!("-G option: {what} (error 22, Invalid argument)"));
    let bytes = |i: usize, name: &str| -> Result<Option<usize>, ToolError> {
        match n[i] {
            GeoValue::Default => Ok(None),
            GeoValue::Bytes(b) => usize::try_from(b)
                .map(Some)
                .map_err(|_| invalid(format!("the {name} {b} is too large for this system"))),
        }
    };
    let lower = bytes(0, "lower bound")?;
    // libmdbx takes an upper bound of 0 as "the default" (observed).
    let upper = bytes(1, "upper bound")?.filter(|&u| u != 0);
    let growth = bytes(2, "growth step")?;
    let shrink = bytes(3, "shrink threshold")?;
    let page_size = match n[4] {
        GeoValue::Default => None,
        GeoValue::Bytes(0) => Some(256),
        GeoValue::Bytes(p) if p.is_power_of_two() && (256..=65536).contains(&p) => Some(p as usize),
        GeoValue::Bytes(p) => {
            return Err(invalid(format!(
                "invalid page size {p}: expecting a power of two from 256 to 65536, 0 for the minimum (256) or -1 for the default (4096)"
            )))
        }
    };
    if let (Some(l), Some(u)) = (lower, upper) {
        if l > u {
            return Err(invalid(format!("the lower bound {l} exceeds the upper bound {u}")));
        }
    }
    Ok(rdbx::Geometry {
        page_size,
        size_lower: lower,
        size_now: None,
        size_upper: upper,
        growth_step: growth,
        shrink_threshold: shrink,
    })
}

/// Parses `-L MEGABYTES` into bytes (0: no limit).
fn parse_dirty_limit(v: &str) -> Result<u64, ToolError> {
    rdbx_dump::parse_c_number(v.trim()).and_then(|mb| mb.checked_mul(1 << 20)).ok_or_else(|| {
        ToolError::sys(
            libc::EINVAL,
            format!("-L option: expecting an unsigned integer value in megabytes (0 for no limit), but got '{v}'"),
        )
    })
}

/// Checks `-d PERCENT` (50..100); rdbx has no split reserve, so the value is
/// not used further.
fn check_fill(v: &str) -> Result<u64, ToolError> {
    match rdbx_dump::parse_c_number(v.trim()) {
        Some(p) if (50..=100).contains(&p) => Ok(p),
        _ => Err(ToolError::sys(
            libc::EINVAL,
            format!("-d option: expecting unsigned integer value in range between 50 and 100, but got '{v}'"),
        )),
    }
}

fn load(a: &LoadArgs) -> Result<(), ToolError> {
    let p = a.path.display().to_string();
    // Options first: a bad value must not consume the input or create files.
    let forced_geometry = a.geometry.as_deref().map(parse_geometry).transpose()?;
    let dirty_limit = a.dirty_limit.as_deref().map(parse_dirty_limit).transpose()?.unwrap_or(0);
    if let Some(d) = &a.fill {
        check_fill(d)?;
    }
    let (input, input_len): (Box<dyn BufRead>, Option<u64>) = match &a.file {
        Some(f) => {
            let file = File::open(f).map_err(|e| {
                ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("{}: open: {e}", f.display()))
            })?;
            let len = file.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 20, Interruptible(file))), len)
        }
        // A read blocked on a terminal or a pipe returns at a signal.
        None => (Box::new(BufReader::with_capacity(1 << 20, Interruptible(io::stdin().lock()))), None),
    };
    let mut reader = DumpReader::with_mode(input, a.plain_text);
    let quiet = a.quiet;
    let mut warn = |m: String| {
        if !quiet {
            eprintln!("{PROG} load: warning: {m}");
        }
    };
    let parse_err = |e: DumpError| match e {
        _ if common::interrupted() => ToolError::sys(libc::EINTR, INTERRUPTED_MSG),
        DumpError::Parse { line, message } => ToolError::sys(libc::EINVAL, format!("{p}: line {line}: {message}")),
        DumpError::Io { context, error } => {
            ToolError::sys(error.raw_os_error().unwrap_or(libc::EIO), format!("{context}: {error}"))
        }
        other => ToolError::sys(libc::EINVAL, format!("{p}: {other}")),
    };
    // The first header decides the geometry of a new database (unless -G).
    let first = reader.next_header().map_err(parse_err)?;
    for w in reader.warnings.drain(..) {
        warn(w);
    }
    let Some(first) = first else {
        return Err(ToolError::sys(
            libc::ENODATA,
            format!("{p}: the input is empty: no dump header (No data available); nothing loaded"),
        ));
    };
    let new_geometry = || forced_geometry.clone().unwrap_or_else(|| first.geometry());
    let geometry_hint = |mut e: ToolError| {
        if forced_geometry.is_some() {
            if e.code == libc::EINVAL {
                e.msg.push_str(" (check the -G values)");
            } else if e.code == rdbx::Error::MapFull.code() {
                e.msg.push_str(" (the -G upper bound is below the space the database already uses)");
            }
        }
        e
    };
    let exists = a.path.exists();
    let mut existing_db = false;
    // Set when this load creates the database: it removes it again.
    let mut remove_created = None;
    let (env, durability) = if exists
        && !(a.path.is_dir() && std::fs::read_dir(&a.path).map(|mut d| d.next().is_none()).unwrap_or(false))
    {
        let t = locate(&a.path).or_else(|e| {
            // An existing empty file is initialised (as mdbx_load does).
            if e.code == libc::ENODATA
                && a.path.is_file()
                && std::fs::metadata(&a.path).map(|m| m.len() == 0).unwrap_or(false)
            {
                Ok(common::Target { path: a.path.clone(), data: a.path.clone(), lck: PathBuf::new(), no_sub_dir: true })
            } else {
                Err(e)
            }
        })?;
        // An empty file gets the dump's geometry (or -G); an existing
        // database keeps its own unless -G asks to change it.
        let empty = std::fs::metadata(&t.path).map(|m| m.is_file() && m.len() == 0).unwrap_or(false);
        existing_db = !empty;
        let geometry = if empty { Some(new_geometry()) } else { forced_geometry.clone() };
        open_for_load(&t.path, t.no_sub_dir, geometry, first.max_readers, a.nonblock).map_err(geometry_hint)?
    } else {
        // A new database: on failure remove what the attempt created.
        let existed_dir = a.path.is_dir();
        let no_sub_dir = a.no_sub_dir;
        let path = a.path.clone();
        remove_created = Some(move || {
            if existed_dir {
                let _ = std::fs::remove_file(path.join("mdbx.dat"));
                let _ = std::fs::remove_file(path.join("mdbx.lck"));
            } else if no_sub_dir {
                let _ = std::fs::remove_file(&path);
                let mut l = path.as_os_str().to_owned();
                l.push("-lck");
                let _ = std::fs::remove_file(PathBuf::from(l));
            } else {
                let _ = std::fs::remove_dir_all(&path);
            }
        });
        open_for_load(&a.path, a.no_sub_dir, Some(new_geometry()), first.max_readers, a.nonblock)
            .inspect_err(|_| {
                if let Some(rm) = remove_created.take() {
                    rm();
                }
            })
            .map_err(geometry_hint)?
    };
    if let (true, Some(g)) = (existing_db, &forced_geometry) {
        if let Some(want) = g.page_size.filter(|&w| w != env.page_size()) {
            warn(format!(
                "-G page size {want} ignored: {p} exists with page size {} and the page size of a database cannot change; load into a new PATH to migrate",
                env.page_size()
            ));
        }
        if !env.opened_exclusively() {
            warn(format!(
                "-G sizes not applied: other processes have {p} open; the geometry can change only when no other process uses the database"
            ));
        }
    }
    let opts = LoadOptions {
        append: a.append,
        table: a.table.as_ref().map(|s| s.as_bytes().to_vec()),
        no_overwrite: a.no_overwrite,
        purge: a.purge,
        batch: a.batch,
        rescue: a.rescue,
        dirty_limit,
        nonblock: a.nonblock,
    };
    let pb = match input_len {
        Some(n) => common::progress_bar(!a.quiet, n, "load", common::Unit::Bytes),
        None => common::spinner(!a.quiet, "load", common::Unit::Records),
    };
    let mut progress = |lp: rdbx_dump::LoadProgress| {
        if let Some(pb) = &pb {
            if input_len.is_some() {
                pb.set_position(lp.bytes);
                pb.set_message(format!("{} records", lp.records));
            } else {
                pb.set_position(lp.records);
            }
        }
        !common::interrupted()
    };
    let r = rdbx_dump::load(&env, &mut reader, Some(first), &opts, &mut warn, &mut progress);
    let summary = r.as_ref().ok().map(|st| {
        let skipped = if st.skipped > 0 { format!(", {} skipped", st.skipped) } else { String::new() };
        format!("load: {} records in {} section(s){skipped}", st.records, st.sections)
    });
    common::finish(pb, summary);
    if r.is_err() && common::interrupted() {
        // Stopped by a signal: a database this load created is partial
        // output and goes; an existing one keeps the batches committed before.
        drop(env);
        return Err(ToolError::sys(
            libc::EINTR,
            match remove_created {
                Some(rm) => {
                    rm();
                    format!("{INTERRUPTED_MSG} (the new database {p} was removed)")
                }
                None => format!(
                    "{INTERRUPTED_MSG} ({p} keeps the batches committed before; the current one was rolled back)"
                ),
            },
        ));
    }
    match r {
        Ok(_) => {
            // Durable commits need no final sync (which would wait for the
            // write lock, see --nonblock).
            if durability != Durability::SyncDurable {
                env.sync().map_err(|e| ToolError::engine(&e, format!("{p}: final sync")))?;
            }
            Ok(())
        }
        Err(e) => {
            let rolled = "the database keeps the batches committed before; the failing batch was rolled back";
            Err(match e {
                DumpError::Parse { line, message } => {
                    ToolError::sys(libc::EINVAL, format!("{p}: line {line}: {message} ({rolled})"))
                }
                DumpError::Record { line, error: error @ rdbx::Error::MapFull } => ToolError {
                    code: error.code(),
                    msg: format!(
                        "{p}: at input line {line}: {error}: the geometry allows no more pages (upper bound reached, or a growth step of 0); load into a database with a larger upper bound or a growth step (-G) ({rolled})"
                    ),
                },
                DumpError::Record { line, error } => {
                    ToolError::engine(&error, format!("{p}: at input line {line} ({rolled})"))
                }
                DumpError::Engine { context, error: error @ rdbx::Error::Busy(_) } => {
                    common::writer_busy(&a.path, &error, &context, env.writer_pid())
                }
                DumpError::Interrupted => ToolError::sys(libc::EINTR, format!("Interrupted by signal/user ({rolled})")),
                other => parse_err(other),
            })
        }
    }
}

/// Opens (or creates) the target of `load`. Normally in SAFE_NOSYNC mode with
/// a final sync; with `nonblock` durable commits come first, so that no final
/// sync has to wait for the write lock. Joins another process's sync mode when
/// it differs.
fn open_for_load(
    path: &std::path::Path,
    no_sub_dir: bool,
    geometry: Option<rdbx::Geometry>,
    max_readers: Option<u32>,
    nonblock: bool,
) -> Result<(Env, Durability), ToolError> {
    let mut b = common::builder().max_dbs(MAX_DBS).no_sub_dir(no_sub_dir).mode(0o664);
    if let Some(g) = geometry {
        b = b.geometry(g);
    }
    // The dump's reader table size, where this open creates the lock file
    // (as mdbx_load sets it).
    if let Some(n) = max_readers {
        b = b.max_readers(n);
    }
    let modes = if nonblock {
        [Durability::SyncDurable, Durability::SafeNoSync]
    } else {
        [Durability::SafeNoSync, Durability::SyncDurable]
    };
    match b.clone().durability(modes[0]).open(path) {
        Ok(e) => Ok((e, modes[0])),
        // Another process uses another sync mode: join it with the other one.
        Err(rdbx::Error::Incompatible(_)) => {
            b.durability(modes[1]).open(path).map(|e| (e, modes[1])).map_err(|e| common::open_error(path, &e))
        }
        Err(e) => Err(common::open_error(path, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_option() {
        let g = parse_geometry("-1:-1:-1:-1:65536").unwrap();
        assert_eq!(g, rdbx::Geometry { page_size: Some(65536), ..Default::default() });
        let g = parse_geometry("0:0:0:0:0").unwrap();
        assert_eq!(
            g,
            rdbx::Geometry {
                page_size: Some(256),
                size_lower: Some(0),
                size_now: None,
                size_upper: None,
                growth_step: Some(0),
                shrink_threshold: Some(0)
            }
        );
        let g = parse_geometry("1048576:0x4000000:1048576:-1:-1").unwrap();
        assert_eq!(
            (g.size_lower, g.size_upper, g.growth_step, g.shrink_threshold),
            (Some(1 << 20), Some(64 << 20), Some(1 << 20), None)
        );
        for bad in ["1:2:3", "", "1:2:3:4:5:6", "a:-1:-1:-1:-1", "-1:-1:-1:-1:", "1M:-1:-1:-1:-1", "--1:-1:-1:-1:-1"] {
            let e = parse_geometry(bad).unwrap_err();
            assert_eq!(e.msg, format!("-G option: expecting five numbers delimited by a colon, but got '{bad}'"));
        }
        for bad in ["-1:-1:-1:-1:3000", "-1:-1:-1:-1:128", "-1:-1:-1:-1:131072", "67108864:1048576:-1:-1:-1"] {
            let e = parse_geometry(bad).unwrap_err();
            assert!(e.msg.contains("error 22, Invalid argument"), "{bad}: {}", e.msg);
        }
    }

    #[test]
    fn fill_and_dirty_limit() {
        assert_eq!(check_fill("50").unwrap(), 50);
        assert_eq!(check_fill("100").unwrap(), 100);
        for bad in ["49", "101", "x", "", "-60"] {
            assert_eq!(
                check_fill(bad).unwrap_err().msg,
                format!("-d option: expecting unsigned integer value in range between 50 and 100, but got '{bad}'")
            );
        }
        assert_eq!(parse_dirty_limit("3").unwrap(), 3 << 20);
        assert_eq!(parse_dirty_limit("0").unwrap(), 0);
        assert!(parse_dirty_limit("1.5").is_err());
        assert!(parse_dirty_limit("99999999999999999").is_err());
    }
}
