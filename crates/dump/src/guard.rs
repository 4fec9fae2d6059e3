//! Output files of the front ends (`rdbx-tools`, the shell) never land on a
//! database: one check for every file a tool or command creates or truncates
//! (a copy, a dump).
//!
//! * the files of the database being read (data and lock file) are compared
//!   by identity (device and inode), so hard links, symlinks and other
//!   spellings of the same file are caught; they are refused always;
//! * an existing file that starts like an MDBX lock file (lock magic at 0) is
//!   refused always: it belongs to another database, maybe in use;
//! * an existing file that starts like an MDBX data file (meta magic at 20)
//!   is refused unless the user forced the overwrite (when the command has a
//!   force flag).

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The 56-bit MDBX magic shared by data and lock files.
const MDBX_MAGIC: u64 = 0x0059_659D_BDEF_4C11;
/// Offset of `magic_and_version` in a meta page (after the page header).
const DATA_MAGIC_OFFSET: usize = 20;

/// What an existing file is, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Starts with an MDBX meta page.
    DataFile,
    /// Starts with the MDBX lock-file magic.
    LockFile,
    /// Anything else (or unreadable, or not a regular file).
    Other,
}

/// Looks at the first bytes of a regular file (never opens FIFOs or devices).
pub fn file_kind(path: &Path) -> FileKind {
    let Ok(md) = std::fs::metadata(path) else { return FileKind::Other };
    if !md.is_file() {
        return FileKind::Other;
    }
    let Ok(f) = std::fs::File::open(path) else { return FileKind::Other };
    let mut b = Vec::with_capacity(DATA_MAGIC_OFFSET + 8);
    if f.take((DATA_MAGIC_OFFSET + 8) as u64).read_to_end(&mut b).is_err() {
        return FileKind::Other;
    }
    let magic_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])) >> 8);
    if magic_at(0) == Some(MDBX_MAGIC) {
        FileKind::LockFile
    } else if magic_at(DATA_MAGIC_OFFSET) == Some(MDBX_MAGIC) {
        FileKind::DataFile
    } else {
        FileKind::Other
    }
}

/// The data file a lock file belongs to, when `path` is one: it carries the
/// lock magic, or it is named like the lock file of an existing data file
/// (`DIR/mdbx.lck` next to `DIR/mdbx.dat`, `FILE-lck` next to `FILE`; a
/// closed database's lock file may be empty).
pub fn lock_file_of(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let by_name = if name == "mdbx.lck" {
        Some(path.with_file_name("mdbx.dat"))
    } else {
        name.strip_suffix("-lck").filter(|s| !s.is_empty()).map(|s| path.with_file_name(s))
    };
    match by_name {
        Some(d) if d.is_file() && file_kind(&d) == FileKind::DataFile => Some(d),
        _ if file_kind(path) == FileKind::LockFile => Some(by_name.unwrap_or_else(|| path.to_path_buf())),
        _ => None,
    }
}

/// Identity of an existing file (symlinks followed).
fn identity(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// The force flag of the command writing the output.
#[derive(Debug, Clone, Copy)]
pub enum Force {
    /// The command has none.
    NoFlag,
    /// The command has one, spelled `name`; `given`: the user passed it.
    Flag { name: &'static str, given: bool },
}

/// Checks that `dst` may be created or truncated.
///
/// `what`: what is written ("the copy", "the dump"); `source`: the data and
/// lock file of the database being read (missing ones are skipped);
/// `source_desc`: how to call that database in the message ("the database
/// being copied", "the open database"). The error names the file and says
/// what to do.
pub fn check_output(dst: &Path, what: &str, source: &[&Path], source_desc: &str, force: Force) -> Result<(), String> {
    let d = dst.display();
    if let Some(id) = identity(dst) {
        for s in source {
            if identity(s) == Some(id) {
                let kind = if file_kind(s) == FileKind::LockFile || lock_file_of(s).is_some() {
                    "lock file"
                } else {
                    "data file"
                };
                return Err(format!(
                    "{d}: refusing to write {what} there: it is the {kind} of {source_desc} ({}), which would be destroyed; choose another destination",
                    s.display()
                ));
            }
        }
    }
    match file_kind(dst) {
        FileKind::LockFile => Err(format!(
            "{d}: refusing to write {what} there: it is the lock file of an MDBX database (maybe in use); choose another destination"
        )),
        FileKind::DataFile => match force {
            Force::Flag { given: true, .. } => Ok(()),
            Force::Flag { name, given: false } => Err(format!(
                "{d}: refusing to overwrite it with {what}: the file exists and is the data file of an MDBX database; choose another destination, or use {name} if that database is to be replaced"
            )),
            Force::NoFlag => Err(format!(
                "{d}: refusing to overwrite it with {what}: the file exists and is the data file of an MDBX database; choose another destination"
            )),
        },
        FileKind::Other => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_identity() {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("x.db");
        let mut page = vec![0u8; 4096];
        page[20..28].copy_from_slice(&((MDBX_MAGIC << 8) | 3).to_le_bytes());
        std::fs::write(&data, &page).unwrap();
        let lck = d.path().join("x.db-lck");
        std::fs::write(&lck, ((MDBX_MAGIC << 8) | 7).to_le_bytes()).unwrap();
        let txt = d.path().join("t.txt");
        std::fs::write(&txt, "hello").unwrap();
        assert_eq!(file_kind(&data), FileKind::DataFile);
        assert_eq!(file_kind(&lck), FileKind::LockFile);
        assert_eq!(file_kind(&txt), FileKind::Other);
        assert_eq!(file_kind(&d.path().join("none")), FileKind::Other);
        assert_eq!(lock_file_of(&lck), Some(data.clone()));
        std::fs::write(&lck, "").unwrap();
        assert_eq!(lock_file_of(&lck), Some(data.clone()), "an empty lock file, by name");
        assert_eq!(lock_file_of(&txt), None);
        let link = d.path().join("link");
        std::fs::hard_link(&data, &link).unwrap();
        let e = check_output(&link, "the copy", &[&data, &lck], "the source", Force::NoFlag).unwrap_err();
        assert!(e.contains("data file of the source"), "{e}");
        let no = Force::Flag { name: "-f", given: false };
        let yes = Force::Flag { name: "-f", given: true };
        let other = d.path().join("other.db");
        std::fs::write(&other, &page).unwrap();
        assert!(check_output(&other, "the copy", &[&data], "the source", no).unwrap_err().contains("use -f"));
        assert!(check_output(&other, "the copy", &[&data], "the source", yes).is_ok());
        assert!(check_output(&txt, "the dump", &[&data], "the source", Force::NoFlag).is_ok());
        assert!(check_output(&d.path().join("new"), "the dump", &[&data], "the source", Force::NoFlag).is_ok());
    }
}
