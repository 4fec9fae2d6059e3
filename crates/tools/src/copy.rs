//! `copy`: a consistent copy from one read snapshot, optionally compacting.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use rdbx::{CopyOptions, CopyProgress};

use crate::common::{self, locate, open_env, Interruptible, ToolError, INTERRUPTED_MSG, PROG};

/// Arguments of `copy`.
#[derive(Args, Debug)]
#[command(after_help = "\
DST is the data file of the copy (single-file layout, no lock file). The copy
is taken from one read snapshot while writers go on, and its metas make that
snapshot the head. With --compact only the pages reachable from the snapshot
are written, renumbered densely; the GC is dropped.

Without DST the copy goes to standard output (a pipe or a file, never a
terminal), as with mdbx_copy, e.g. `rdbx-tools copy -c db | zstd > db.zst`;
the summary then goes to standard error. A compacting copy to a stream reads
the snapshot twice (the metas come first and depend on the whole tree).

DST is never a file of the source database (also under another name: a
link, DIR vs DIR/mdbx.dat) nor the lock file of any database; an existing
data file of another database is replaced only with -f.

On SIGINT/SIGTERM/SIGHUP (Ctrl-C) the copy stops, removes the partial DST
and exits 1 with \"Interrupted by signal/user\".

EXIT STATUS: 0 success, 1 any failure or interrupted (as mdbx_copy).")]
pub struct CopyArgs {
    /// Compact: drop free pages and renumber pages densely
    #[arg(short = 'c', long = "compact")]
    compact: bool,
    /// Overwrite an existing destination file
    #[arg(short = 'f', long = "force")]
    force: bool,
    /// Give the copy a dynamic geometry
    #[arg(short = 'd')]
    dynamic: bool,
    /// No summary, no progress bar
    #[arg(short = 'q')]
    quiet: bool,
    /// Ignored (legacy no-subdir flag; the layout is detected)
    #[arg(short = 'n')]
    no_sub_dir: bool,
    /// Source database directory or data file
    src: PathBuf,
    /// Destination data file (default: standard output)
    dst: Option<PathBuf>,
}

pub fn run(a: CopyArgs) -> u8 {
    let _ = a.no_sub_dir;
    match copy(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{PROG} copy: {e}");
            1
        }
    }
}

fn copy(a: &CopyArgs) -> Result<(), ToolError> {
    if a.dst.is_none() && std::io::stdout().is_terminal() {
        return Err(ToolError::sys(
            libc::EINVAL,
            format!(
                "{}: no destination given: refusing to write a binary database to the terminal; give DST, the data file to create, or redirect standard output, e.g. `{PROG} copy {} backup.db`",
                a.src.display(),
                a.src.display()
            ),
        ));
    }
    let t = locate(&a.src)?;
    if let Some(dst) = &a.dst {
        // Before anything is opened or created: never onto a database.
        common::check_output(dst, "the copy", &t, "the database being copied", Some(a.force))?;
    }
    let env = open_env(&t, true)?;
    let opts = CopyOptions {
        compact: a.compact,
        overwrite: a.force,
        force_dynamic: a.dynamic,
        interrupt: Some(common::interrupt_flag()),
    };
    let Some(dst) = &a.dst else {
        let pb =
            common::progress_bar(!a.quiet, 0, if a.compact { "copy --compact" } else { "copy" }, common::Unit::Pages);
        let mut cb = |p: CopyProgress| {
            if let Some(pb) = &pb {
                pb.set_length(p.total);
                pb.set_position(p.done);
            }
        };
        let stdout = common::raw_stdout()
            .map_err(|e| ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("standard output: {e}")))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, Interruptible(stdout));
        let r = env.copy_to_writer(&mut out, &opts, &mut cb);
        common::finish(pb, None);
        let st = r.map_err(|e| {
            if common::interrupted() {
                return ToolError::sys(
                    libc::EINTR,
                    format!("{INTERRUPTED_MSG} (the copy on standard output is incomplete)"),
                );
            }
            ToolError::engine(
                &e,
                format!("{}: copying to standard output failed (the output is incomplete)", a.src.display()),
            )
        })?;
        if !a.quiet {
            eprintln!(
                "copied txn {} of {} to standard output: {} pages -> {} pages, {} bytes",
                st.txnid,
                a.src.display(),
                st.source_pages,
                st.copy_pages,
                st.file_size
            );
        }
        return Ok(());
    };
    if !a.force && (dst.exists() || dst.symlink_metadata().is_ok()) {
        return Err(ToolError::sys(
            libc::EEXIST,
            format!(
                "{}: copying failed: the destination exists (File exists); use -f to overwrite a file",
                dst.display()
            ),
        ));
    }
    let pb = common::progress_bar(!a.quiet, 0, if a.compact { "copy --compact" } else { "copy" }, common::Unit::Pages);
    let mut cb = |p: CopyProgress| {
        if let Some(pb) = &pb {
            pb.set_length(p.total);
            pb.set_position(p.done);
        }
    };
    let r = env.copy_to(dst, &opts, &mut cb);
    // The summary below says what was done.
    common::finish(pb, None);
    // On failure the engine removed the partial copy.
    let st = r.map_err(|e| {
        if common::interrupted() {
            ToolError::sys(libc::EINTR, format!("{INTERRUPTED_MSG} (the partial copy {} was removed)", dst.display()))
        } else {
            ToolError::engine(&e, format!("{}: copying to {} failed", a.src.display(), dst.display()))
        }
    })?;
    if !a.quiet {
        let on_disk = rdbx_dump::diagnose::allocated(dst).map(|b| format!(", {b} allocated")).unwrap_or_default();
        // A status line: on stderr, as when the copy goes to stdout.
        eprintln!(
            "copied txn {} of {} to {}: {} pages -> {} pages, {} bytes{on_disk}",
            st.txnid,
            a.src.display(),
            dst.display(),
            st.source_pages,
            st.copy_pages,
            st.file_size
        );
    }
    Ok(())
}
