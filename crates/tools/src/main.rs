//! `rdbx-tools` — operations tools for MDBX/rdbx databases, interoperable with
//! the `mdbx_*` tools of libmdbx: `chk`, `copy`, `dump`, `load`, `stat`, `drop`.
//!
//! Every subcommand takes PATH as a database directory (holding `mdbx.dat`) or
//! a single data file (NOSUBDIR layout) and detects which. Read-only tools
//! never write to the data file.

mod checksum;
mod chk;
mod common;
mod copy;
mod diff;
mod drop;
mod dumpload;
mod meta;
mod space;
mod stat;
mod stress;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const AFTER_HELP: &str = "\
PATH is a database directory (holding mdbx.dat) or a data file (NOSUBDIR
layout, lock file PATH-lck); the layout is detected.

EXIT STATUS:
    chk:   0 no problem found, 1 only minor problems, 2 major problems
           (metas, GC, trees), 3 database/engine error (no usable meta,
           not a database, needs recovery), 4 system error (missing or
           empty file, locked exclusively, I/O), 5 usage error or
           interrupted (as mdbx_chk)
    diff:  0 no difference, 1 differences found, 2 trouble (usage,
           unreadable database, interrupted), as diff(1)
    stress: 0 no failure found, 1 usage or setup error, 2 a failure was
           found (database kept, reproducing command printed),
           130 interrupted before a failure was found
    other: 0 success, 1 any failure including usage errors and
           interruption by SIGINT/SIGTERM/SIGHUP (as mdbx_*)

A copy or a dump is never written onto a file of a database: the source's
data or lock file (under any name) or another database's lock file; another
database's data file only with copy -f.";

/// Operations tools for MDBX/rdbx databases, interoperable with the mdbx_* tools.
#[derive(Parser, Debug)]
#[command(name = "rdbx-tools", version, about, after_help = AFTER_HELP, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Lock-file layout to create if no other process has the database open:
    /// 6 where its applications run libmdbx 0.13 (e.g. reth), 7 for libmdbx
    /// 0.14.2+. Without it a lock file left behind keeps its version, else 7.
    /// A database in use is always joined with the layout its users have.
    #[arg(long, global = true, value_name = "6|7", value_parser = common::parse_lock_format)]
    lock_format: Option<rdbx::LockFormat>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Full integrity check (as mdbx_chk)
    Chk(chk::ChkArgs),
    /// Statistics of the environment, the GC, readers and tables (as mdbx_stat)
    Stat(stat::StatArgs),
    /// Export tables in the mdbx_dump text format
    Dump(dumpload::DumpArgs),
    /// Import the mdbx_dump text format (as mdbx_load)
    Load(dumpload::LoadArgs),
    /// Consistent copy from one snapshot, optionally compacting (as mdbx_copy)
    Copy(copy::CopyArgs),
    /// Empty or delete a table (as mdbx_drop)
    Drop(drop::DropArgs),
    /// Content digest (SHA-256) per table and of the database
    Checksum(checksum::ChecksumArgs),
    /// The records that differ between two databases or tables
    Diff(diff::DiffArgs),
    /// The three meta pages; --use N makes an older intact one current
    Meta(meta::MetaArgs),
    /// One page decoded, with the tree and level it belongs to
    Page(meta::PageArgs),
    /// Why the file is as big as it is: tables, GC, readers, free tail
    Space(space::SpaceArgs),
    /// Long stochastic stress run with crash injection (for RAM disks)
    Stress(stress::StressArgs),
    /// One actor of a stress run (internal)
    #[command(hide = true, name = "stress-actor")]
    StressActor(stress::actor::ActorArgs),
}

fn main() -> ExitCode {
    common::install_signal_handlers();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            let is_chk = args.get(1).is_some_and(|a| a == "chk");
            let is_diff = args.get(1).is_some_and(|a| a == "diff");
            let json = args.iter().any(|a| a == "--json");
            let help = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
            if json && !help {
                // A usage error is JSON too when JSON was asked for.
                let msg = e.to_string();
                let first = msg.lines().next().unwrap_or("usage error").trim_start_matches("error: ");
                common::json_error(serde_json::json!({}), libc::EINVAL, first);
            }
            let _ = e.print();
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ if is_chk => ExitCode::from(5),
                _ if is_diff => ExitCode::from(2),
                _ => ExitCode::from(1),
            };
        }
    };
    if let Some(f) = cli.lock_format {
        common::set_lock_format(f);
    }
    let code = match cli.cmd {
        Cmd::Chk(a) => chk::run(a),
        Cmd::Stat(a) => stat::run(a),
        Cmd::Dump(a) => dumpload::run_dump(a),
        Cmd::Load(a) => dumpload::run_load(a),
        Cmd::Copy(a) => copy::run(a),
        Cmd::Drop(a) => drop::run(a),
        Cmd::Checksum(a) => checksum::run(a),
        Cmd::Diff(a) => diff::run(a),
        Cmd::Meta(a) => meta::run_meta(a),
        Cmd::Page(a) => meta::run_page(a),
        Cmd::Space(a) => space::run(a),
        Cmd::Stress(a) => stress::run(a),
        Cmd::StressActor(a) => stress::actor::run(a) as u8,
    };
    ExitCode::from(code)
}
