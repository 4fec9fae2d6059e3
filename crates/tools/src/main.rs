//! `rdbx-tools` — operations tools for MDBX/rdbx databases.
//!
//! Available now: `stat` (per-table statistics in `mdbx_stat`'s layout).
//! Planned: `chk`, `copy`, `dump`, `load`, `drop`, `stress`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rdbx::{Env, Stat};

const PROG: &str = "rdbx-tools";
/// Table handles a read-only tool can hold at once.
const MAX_DBS: u32 = 1024;
const PLANNED: &[&str] = &["chk", "copy", "dump", "load", "drop", "stress"];

const USAGE: &str = "\
rdbx-tools — operations tools for MDBX/rdbx databases (first cut)

USAGE:
    rdbx-tools <SUBCOMMAND> [OPTIONS] PATH
    rdbx-tools -h | --help | help [SUBCOMMAND]
    rdbx-tools -V | --version

SUBCOMMANDS AVAILABLE NOW:
    stat [-a | -s TABLE] [-q] PATH
                   print the statistics of the main table and of every
                   named table (tree depth, branch, leaf and large/overflow
                   pages, entries) in mdbx_stat's \"Status of NAME\" layout.
                   -s TABLE  only that table (@MAIN = the main table)
                   -a        all tables (the default here; mdbx_stat's
                             default is the main table only)
                   -q        accepted for compatibility (there is no banner)

PLANNED (not implemented yet):
    chk, copy, dump, load, drop, stress

PATH is a database directory (holding mdbx.dat) or a data file; it is
opened read-only.

EXIT STATUS:
    0 success; 1 any failure (including usage errors), as mdbx_stat.
";

const STAT_USAGE: &str = "usage: rdbx-tools stat [-a | -s TABLE] [-q] PATH";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprintln!("{PROG}: missing subcommand (try '{PROG} --help')");
        return ExitCode::from(1);
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            println!("{PROG} {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "stat" => match parse_stat_args(rest) {
            Ok(StatArgs::Help) => {
                println!("{STAT_USAGE}");
                ExitCode::SUCCESS
            }
            Ok(StatArgs::Run { path, only }) => match stat(&path, only.as_deref()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    eprintln!("{PROG}: stat: {msg}");
                    ExitCode::from(1)
                }
            },
            Err(msg) => {
                eprintln!("{PROG}: stat: {msg}");
                eprintln!("{STAT_USAGE}");
                ExitCode::from(1)
            }
        },
        c if PLANNED.contains(&c) => {
            eprintln!("{PROG}: '{c}' is planned but not implemented yet (available now: stat)");
            ExitCode::from(1)
        }
        c => {
            eprintln!("{PROG}: unknown subcommand '{c}' (try '{PROG} --help')");
            ExitCode::from(1)
        }
    }
}

enum StatArgs {
    Help,
    Run { path: PathBuf, only: Option<String> },
}

fn parse_stat_args(args: &[String]) -> Result<StatArgs, String> {
    let mut path = None;
    let mut only = None;
    let mut all = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(StatArgs::Help),
            "-a" => all = true,
            "-q" => {}
            "-s" => only = Some(it.next().ok_or("-s needs a TABLE")?.clone()),
            s if s.starts_with("-s") => only = Some(s[2..].to_string()),
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option '{s}'")),
            s => {
                if path.is_some() {
                    return Err(format!("unexpected extra argument '{s}'"));
                }
                path = Some(PathBuf::from(s));
            }
        }
    }
    if all && only.is_some() {
        return Err("-a and -s cannot be combined".into());
    }
    let path = path.ok_or("missing PATH")?;
    Ok(StatArgs::Run { path, only })
}

fn stat(path: &Path, only: Option<&str>) -> Result<(), String> {
    let p = path.display();
    // Check first so that a read-only open never creates anything.
    if !path.exists() {
        return Err(format!("{p}: No such file or directory"));
    }
    let env = Env::builder()
        .read_only(true)
        .max_dbs(MAX_DBS)
        .open(path)
        .map_err(|e| format!("{p}: cannot open: {e}"))?;
    let txn = env
        .begin_ro_txn()
        .map_err(|e| format!("{p}: cannot begin a read transaction: {e}"))?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut show = |title: &str, st: &Stat| -> Result<(), String> {
        print_stat(&mut out, title, st).map_err(|e| format!("writing output: {e}"))
    };
    match only {
        Some("@MAIN") => {
            let db = txn
                .open_db(None)
                .map_err(|e| format!("{p}: main table: {e}"))?;
            let st = txn
                .db_stat(db)
                .map_err(|e| format!("{p}: main table: {e}"))?;
            show("Main DB", &st)?;
        }
        Some(name) => {
            let db = txn.open_db(Some(name)).map_err(|e| match e {
                rdbx::Error::NotFound => format!("{p}: no table named '{name}'"),
                e => format!("{p}: table '{name}': {e}"),
            })?;
            let st = txn
                .db_stat(db)
                .map_err(|e| format!("{p}: table '{name}': {e}"))?;
            show(name, &st)?;
        }
        None => {
            let db = txn
                .open_db(None)
                .map_err(|e| format!("{p}: main table: {e}"))?;
            let st = txn
                .db_stat(db)
                .map_err(|e| format!("{p}: main table: {e}"))?;
            show("Main DB", &st)?;
            let names = txn
                .table_names()
                .map_err(|e| format!("{p}: listing tables: {e}"))?;
            for name in names {
                let shown = String::from_utf8_lossy(&name).into_owned();
                let db = txn
                    .open_db_bytes(Some(&name))
                    .map_err(|e| format!("{p}: table '{shown}': {e}"))?;
                let st = txn
                    .db_stat(db)
                    .map_err(|e| format!("{p}: table '{shown}': {e}"))?;
                show(&shown, &st)?;
            }
        }
    }
    Ok(())
}

fn print_stat(out: &mut impl Write, title: &str, st: &Stat) -> io::Result<()> {
    writeln!(out, "Status of {title}")?;
    writeln!(out, "  Pagesize: {}", st.page_size)?;
    writeln!(out, "  Tree depth: {}", st.depth)?;
    writeln!(out, "  Branch pages: {}", st.branch_pages)?;
    writeln!(out, "  Leaf pages: {}", st.leaf_pages)?;
    writeln!(out, "  Large/Overflow pages: {}", st.overflow_pages)?;
    writeln!(out, "  Entries: {}", st.entries)?;
    Ok(())
}
