//! Finding, opening and creating databases. A read-only open never creates
//! or changes anything but the lock file, and a lock file that a failed open
//! left behind is removed again.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rdbx::{Durability, Env, EnvBuilder, LockFormat};

/// Table handles the shell may hold at once.
const MAX_DBS: u32 = 32_000;

/// `--lock-format`: the lock-file layout to create when the shell is the
/// first process to open a database (unset: rdbx's default).
static LOCK_FORMAT: OnceLock<LockFormat> = OnceLock::new();

/// Records `--lock-format` for every database the shell opens or creates.
pub fn set_lock_format(f: LockFormat) {
    let _ = LOCK_FORMAT.set(f);
}

pub fn builder() -> EnvBuilder {
    let b = Env::builder();
    match LOCK_FORMAT.get() {
        Some(f) => b.lock_format(*f),
        None => b,
    }
}

/// An open database.
pub struct Opened {
    pub env: Env,
    /// As given by the user.
    pub path: PathBuf,
    pub read_only: bool,
}

impl Opened {
    /// A short name for the prompt: the directory or file name.
    pub fn short_name(&self) -> String {
        let p = if self.path.file_name().is_some_and(|n| n == "mdbx.dat") {
            self.path.parent().unwrap_or(&self.path)
        } else {
            &self.path
        };
        p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
    }
}

/// What is at a path.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// A database (directory with mdbx.dat, or a data file).
    Database,
    /// Nothing: a database can be created there.
    Nothing,
    /// An existing directory without mdbx.dat: a database can be created in it.
    EmptyDir,
}

pub fn probe(path: &Path) -> Found {
    match std::fs::metadata(path) {
        Err(_) => Found::Nothing,
        Ok(m) if m.is_dir() && !path.join("mdbx.dat").exists() => Found::EmptyDir,
        Ok(_) => Found::Database,
    }
}

fn lock_path(path: &Path, no_sub_dir: bool) -> PathBuf {
    if !no_sub_dir {
        return path.join("mdbx.lck");
    }
    if path.file_name().is_some_and(|n| n == "mdbx.dat") {
        return path.parent().unwrap_or(Path::new(".")).join("mdbx.lck");
    }
    let mut l = path.as_os_str().to_owned();
    l.push("-lck");
    PathBuf::from(l)
}

/// Opens an existing database.
pub fn open(path: &Path, read_only: bool) -> Result<Opened, String> {
    let shown = path.display();
    match probe(path) {
        Found::Nothing => {
            return Err(format!(
                "{shown}: no such file or directory (use --create, or 'open PATH --create', to make a new database)"
            ))
        }
        Found::EmptyDir => {
            return Err(format!("{shown}: no database in this directory (mdbx.dat is missing; --create makes one)"))
        }
        Found::Database => {}
    }
    let no_sub_dir = path.is_file();
    let lck = lock_path(path, no_sub_dir);
    let lck_existed = lck.exists();
    builder()
        .read_only(read_only)
        .max_dbs(MAX_DBS)
        .no_sub_dir(no_sub_dir)
        .durability(Durability::SyncDurable)
        .open(path)
        .map(|env| {
            warn_damaged_meta(path, &env);
            Opened { env, path: path.to_path_buf(), read_only }
        })
        .map_err(|e| {
            if !lck_existed {
                let _ = std::fs::remove_file(&lck);
            }
            open_error(path, &e)
        })
}

/// Creates a database at `path` and opens it read-write: a directory (made
/// if missing) holding mdbx.dat and mdbx.lck, or with `single_file` the data
/// file `path` itself (no-subdir layout, lock file `path-lck`; its directory
/// must exist).
pub fn create(path: &Path, single_file: bool) -> Result<Opened, String> {
    if probe(path) == Found::Database {
        return open(path, false);
    }
    if single_file {
        if probe(path) == Found::EmptyDir {
            return Err(format!("{}: is a directory; --single-file makes PATH the data file", path.display()));
        }
    } else {
        std::fs::create_dir_all(path).map_err(|e| format!("{}: cannot create the directory: {e}", path.display()))?;
    }
    builder()
        .max_dbs(MAX_DBS)
        .no_sub_dir(single_file)
        .durability(Durability::SyncDurable)
        .open(path)
        .map(|env| Opened { env, path: path.to_path_buf(), read_only: false })
        .map_err(|e| format!("{}: cannot create a database: {e}", path.display()))
}

/// Says so on stderr when a meta page is damaged and may have held a newer
/// commit than the snapshot the database opened at, and how to rescue it.
fn warn_damaged_meta(path: &Path, env: &Env) {
    let Ok(l) = rdbx::inspect::read_metas(env.data_path()) else { return };
    if let Some(d) = l.damaged_newer() {
        let head = l.head;
        eprintln!(
            "rdbx: warning: meta page {} of {} is damaged ({}); the database opened at txn {} of meta {head}, and \
             a newer commit may be lost. 'meta' shows the three metas; if the newest commit is lost, \
             'rdbx-tools meta --use {head} {}' makes this snapshot steady and current (check it first with \
             'rdbx-tools chk -{head} {}').",
            d.index,
            path.display(),
            d.error.clone().unwrap_or_default(),
            l.slots[head].meta.txnid(),
            path.display(),
            path.display()
        );
    }
}

fn open_error(path: &Path, e: &rdbx::Error) -> String {
    let p = path.display();
    match e {
        rdbx::Error::Busy(m) => format!("{p}: busy: {m}; try again when the other process is done"),
        rdbx::Error::Invalid(_) => format!("{p}: not an MDBX database ({e})"),
        rdbx::Error::WannaRecovery => {
            format!(
                "{p}: {e}; open it read-write to recover ('open {p} rw' in the shell, or start it with --write), \
                 or check it first with 'rdbx-tools chk {p}'"
            )
        }
        rdbx::Error::Corrupted { .. } => {
            let data = if path.is_dir() { path.join("mdbx.dat") } else { path.to_path_buf() };
            let sizes = rdbx_dump::diagnose::truncation(&data).map(|t| format!(" ({t})")).unwrap_or_default();
            format!(
                "{p}: {e}{sizes}; run 'rdbx-tools chk' for details ('rdbx-tools meta {p}' shows the metas; \
                 'rdbx-tools meta --use N {p}' makes an older intact one current)"
            )
        }
        rdbx::Error::Access(_) | rdbx::Error::Io(_) => format!("{p}: cannot open: {e}"),
        _ => format!("{p}: cannot open: {e}"),
    }
}
