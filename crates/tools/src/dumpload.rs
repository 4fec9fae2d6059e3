//! `dump` and `load`: the `mdbx_dump` text format through the `rdbx-dump` codec.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use rdbx::{Durability, Env};
use rdbx_dump::{DumpError, DumpOptions, DumpReader, Format, LoadOptions};

use crate::common::{self, locate, open_env, ToolError, MAX_DBS, PROG};

/// Arguments of `dump`.
#[derive(Args, Debug)]
#[command(after_help = "\
Output is byte for byte what mdbx_dump prints, except that in print mode (-p)
a leading space of a key or value is written as \\20 (mdbx_load would read it
as a continuation line), and -a also writes the plain records of the main
table (as an unnamed first section) when named tables exist.

EXIT STATUS: 0 success, 1 any failure (as mdbx_dump).")]
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
geometry and page size of the first header.

EXIT STATUS: 0 success, 1 any failure (as mdbx_load).")]
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
    let env = open_env(&t, true)?;
    let p = a.path.display();
    let mut sink: Box<dyn Write> = match &a.file {
        Some(f) => Box::new(File::create(f).map_err(|e| {
            ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("{}: cannot create: {e}", f.display()))
        })?),
        None => Box::new(io::stdout().lock()),
    };
    if a.list {
        let txn = env.begin_ro_txn().map_err(|e| ToolError::engine(&e, &p))?;
        let names = txn.table_names().map_err(|e| ToolError::engine(&e, &p))?;
        let mut o = BufWriter::new(&mut sink);
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
    let pb = common::progress_bar(show_bar, total, "dump");
    let mut out = BufWriter::with_capacity(1 << 20, &mut sink);
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
    let r = rdbx_dump::dump(&env, &opts, &mut out, &mut warn, &mut progress);
    let flushed = out.flush();
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
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
        DumpError::Interrupted => ToolError::sys(libc::EINTR, "Interrupted by signal/user"),
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

fn load(a: &LoadArgs) -> Result<(), ToolError> {
    let p = a.path.display().to_string();
    let (input, input_len): (Box<dyn BufRead>, Option<u64>) = match &a.file {
        Some(f) => {
            let file = File::open(f).map_err(|e| {
                ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("{}: open: {e}", f.display()))
            })?;
            let len = file.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 20, file)), len)
        }
        None => (Box::new(BufReader::with_capacity(1 << 20, io::stdin().lock())), None),
    };
    let mut reader = DumpReader::with_mode(input, a.plain_text);
    let quiet = a.quiet;
    let mut warn = |m: String| {
        if !quiet {
            eprintln!("{PROG} load: warning: {m}");
        }
    };
    let parse_err = |e: DumpError| match e {
        DumpError::Parse { line, message } => ToolError::sys(libc::EINVAL, format!("{p}: line {line}: {message}")),
        DumpError::Io { context, error } => {
            ToolError::sys(error.raw_os_error().unwrap_or(libc::EIO), format!("{context}: {error}"))
        }
        other => ToolError::sys(libc::EINVAL, format!("{p}: {other}")),
    };
    // The first header decides the geometry of a new database.
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
    let exists = a.path.exists();
    let env = if exists
        && !(a.path.is_dir() && std::fs::read_dir(&a.path).map(|mut d| d.next().is_none()).unwrap_or(false))
    {
        let t = locate(&a.path).or_else(|e| {
            // An existing empty file is initialised (as mdbx_load does).
            if e.code == libc::ENODATA
                && a.path.is_file()
                && std::fs::metadata(&a.path).map(|m| m.len() == 0).unwrap_or(false)
            {
                Ok(common::Target { path: a.path.clone(), lck: PathBuf::new(), no_sub_dir: true })
            } else {
                Err(e)
            }
        })?;
        // An empty file gets the dump's geometry; an existing database keeps its own.
        let empty = std::fs::metadata(&t.path).map(|m| m.is_file() && m.len() == 0).unwrap_or(false);
        open_for_load(&t.path, t.no_sub_dir, empty.then(|| first.geometry()))?
    } else {
        // A new database: on failure remove what the attempt created.
        let existed_dir = a.path.is_dir();
        open_for_load(&a.path, a.no_sub_dir, Some(first.geometry())).inspect_err(|_| {
            if existed_dir {
                let _ = std::fs::remove_file(a.path.join("mdbx.dat"));
                let _ = std::fs::remove_file(a.path.join("mdbx.lck"));
            } else if a.no_sub_dir {
                let _ = std::fs::remove_file(&a.path);
                let mut l = a.path.as_os_str().to_owned();
                l.push("-lck");
                let _ = std::fs::remove_file(PathBuf::from(l));
            } else {
                let _ = std::fs::remove_dir_all(&a.path);
            }
        })?
    };
    let opts = LoadOptions {
        append: a.append,
        table: a.table.as_ref().map(|s| s.as_bytes().to_vec()),
        no_overwrite: a.no_overwrite,
        purge: a.purge,
        batch: a.batch,
        rescue: a.rescue,
    };
    let pb = match input_len {
        Some(n) => common::progress_bar(!a.quiet, n, "load"),
        None => common::spinner(!a.quiet, "load"),
    };
    let mut progress = |lp: rdbx_dump::LoadProgress| {
        if let Some(pb) = &pb {
            if input_len.is_some() {
                pb.set_position(lp.bytes);
            } else {
                pb.set_position(lp.records);
            }
        }
        !common::interrupted()
    };
    let r = rdbx_dump::load(&env, &mut reader, Some(first), &opts, &mut warn, &mut progress);
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    match r {
        Ok(_) => {
            env.sync().map_err(|e| ToolError::engine(&e, format!("{p}: final sync")))?;
            Ok(())
        }
        Err(e) => {
            let rolled = "the database keeps the batches committed before; the failing batch was rolled back";
            Err(match e {
                DumpError::Parse { line, message } => {
                    ToolError::sys(libc::EINVAL, format!("{p}: line {line}: {message} ({rolled})"))
                }
                DumpError::Record { line, error } => {
                    ToolError::engine(&error, format!("{p}: at input line {line} ({rolled})"))
                }
                DumpError::Interrupted => ToolError::sys(libc::EINTR, format!("Interrupted by signal/user ({rolled})")),
                other => parse_err(other),
            })
        }
    }
}

fn open_for_load(path: &std::path::Path, no_sub_dir: bool, geometry: Option<rdbx::Geometry>) -> Result<Env, ToolError> {
    let mut b = Env::builder().max_dbs(MAX_DBS).no_sub_dir(no_sub_dir).mode(0o664).durability(Durability::SafeNoSync);
    if let Some(g) = geometry {
        b = b.geometry(g);
    }
    match b.open(path) {
        Ok(e) => Ok(e),
        // Another process uses another sync mode: join it with the default.
        Err(rdbx::Error::Incompatible(_)) => {
            b.durability(Durability::SyncDurable).open(path).map_err(|e| common::open_error(path, &e))
        }
        Err(e) => Err(common::open_error(path, &e)),
    }
}
