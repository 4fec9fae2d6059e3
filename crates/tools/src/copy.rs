//! `copy`: a consistent copy from one read snapshot, optionally compacting.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use rdbx::{CopyOptions, CopyProgress};

use crate::common::{self, locate, open_env, ToolError, PROG};

/// Arguments of `copy`.
#[derive(Args, Debug)]
#[command(after_help = "\
DST is the data file of the copy (single-file layout, no lock file). The copy
is taken from one read snapshot while writers go on, and its metas make that
snapshot the head. With --compact only the pages reachable from the snapshot
are written, renumbered densely; the GC is dropped.

Without DST mdbx_copy writes the copy to standard output. rdbx cannot do
that yet (the engine writes a copy with positioned writes into a file, which
a pipe does not allow), so a missing DST is an error (exit 1); a database is
never written to a terminal.

EXIT STATUS: 0 success, 1 any failure (as mdbx_copy).")]
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
    /// Destination data file (required: copying to standard output is not supported yet)
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
    let Some(dst) = &a.dst else {
        let why = if std::io::stdout().is_terminal() {
            "refusing to write a binary database to the terminal"
        } else {
            "copying to standard output is not supported by rdbx yet (the engine writes the copy with positioned writes into a file)"
        };
        return Err(ToolError::sys(
            libc::EINVAL,
            format!(
                "{}: no destination given: {why}; give DST, the data file to create, e.g. `{PROG} copy {} backup.db`",
                a.src.display(),
                a.src.display()
            ),
        ));
    };
    let t = locate(&a.src)?;
    let env = open_env(&t, true)?;
    if !a.force && (dst.exists() || dst.symlink_metadata().is_ok()) {
        return Err(ToolError::sys(
            libc::EEXIST,
            format!(
                "{}: copying failed: the destination exists (File exists); use -f to overwrite a file",
                dst.display()
            ),
        ));
    }
    let opts = CopyOptions { compact: a.compact, overwrite: a.force, force_dynamic: a.dynamic };
    let pb = common::progress_bar(!a.quiet, 0, if a.compact { "copy --compact" } else { "copy" });
    let mut cb = |p: CopyProgress| {
        if let Some(pb) = &pb {
            pb.set_length(p.total);
            pb.set_position(p.done);
        }
    };
    let r = env.copy_to(dst, &opts, &mut cb);
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let st =
        r.map_err(|e| ToolError::engine(&e, format!("{}: copying to {} failed", a.src.display(), dst.display())))?;
    if !a.quiet {
        println!(
            "copied txn {} of {} to {}: {} pages -> {} pages, {} bytes",
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
