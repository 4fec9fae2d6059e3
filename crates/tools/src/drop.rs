//! `drop`: empty a table, or delete it.

use std::path::PathBuf;

use clap::Args;
use rdbx::Db;

use crate::common::{locate, open_env, ToolError, PROG};

/// Arguments of `drop`.
#[derive(Args, Debug)]
#[command(after_help = "\
Without -s the main table is emptied; when named tables exist this is refused
unless --force is given, and then every named table is deleted with its pages
(mdbx_drop would drop their records and leak their pages).

Like mdbx_drop, drop waits while another process holds the write lock;
with --nonblock it fails at once instead (exit 1), e.g. for cron jobs.

EXIT STATUS: 0 success, 1 any failure (as mdbx_drop).")]
pub struct DropArgs {
    /// The table to empty or delete (default: the main table)
    #[arg(short = 's', value_name = "TABLE")]
    table: Option<String>,
    /// Delete the table instead of emptying it
    #[arg(short = 'd')]
    delete: bool,
    /// With no -s: also delete every named table
    #[arg(long)]
    force: bool,
    /// Fail at once (exit 1) if another writer holds the write lock, instead of waiting
    #[arg(long)]
    nonblock: bool,
    /// Quiet
    #[arg(short = 'q')]
    quiet: bool,
    /// Ignored (legacy no-subdir flag; the layout is detected)
    #[arg(short = 'n')]
    no_sub_dir: bool,
    /// Database directory or data file
    path: PathBuf,
}

pub fn run(a: DropArgs) -> u8 {
    let _ = a.no_sub_dir;
    match drop_table(&a) {
        Ok(msg) => {
            // A status line: on stderr, stdout holds only data.
            if !a.quiet {
                eprintln!("{msg}");
            }
            0
        }
        Err(e) => {
            eprintln!("{PROG} drop: {e}");
            1
        }
    }
}

fn drop_table(a: &DropArgs) -> Result<String, ToolError> {
    let t = locate(&a.path)?;
    let env = open_env(&t, false)?;
    let p = a.path.display();
    let eng = |e: rdbx::Error| ToolError::engine(&e, &p);
    let mut txn = if a.nonblock {
        env.try_begin_rw_txn().map_err(|e| match e {
            rdbx::Error::Busy(_) => crate::common::writer_busy(
                &a.path,
                &e,
                "starting the write transaction (nothing was changed)",
                env.writer_pid(),
            ),
            e => eng(e),
        })?
    } else {
        env.begin_rw_txn().map_err(eng)?
    };
    let msg = match &a.table {
        Some(name) => {
            let db = txn.open_db(Some(name)).map_err(|e| match e {
                rdbx::Error::NotFound => ToolError { code: e.code(), msg: format!("{p}: no table named '{name}'") },
                e => ToolError::engine(&e, format!("{p}: table '{name}'")),
            })?;
            if a.delete {
                txn.drop_db(db).map_err(eng)?;
                format!("{p}: table '{name}' deleted")
            } else {
                let n = txn.db_stat(db).map_err(eng)?.entries;
                txn.clear_db(db).map_err(eng)?;
                format!("{p}: table '{name}' emptied ({n} records removed)")
            }
        }
        None => {
            let names = txn.table_names().map_err(eng)?;
            if !names.is_empty() && !a.force {
                return Err(ToolError::sys(
                    libc::EINVAL,
                    format!(
                        "{p}: the main table holds {} named table(s); emptying it would delete them all: give --force to delete every table with its pages, or -s TABLE",
                        names.len()
                    ),
                ));
            }
            for n in &names {
                let db = txn.open_db_bytes(Some(n)).map_err(eng)?;
                txn.drop_db(db).map_err(eng)?;
            }
            txn.clear_db(Db::MAIN).map_err(eng)?;
            if a.delete {
                format!(
                    "{p}: the main table cannot be deleted; it was emptied ({} named table(s) deleted)",
                    names.len()
                )
            } else {
                format!("{p}: main table emptied ({} named table(s) deleted)", names.len())
            }
        }
    };
    txn.commit().map_err(eng)?;
    Ok(msg)
}
