//! Open-file-description (OFD) byte-range locks: `F_OFD_SETLK`,
//! `F_OFD_SETLKW`, `F_OFD_GETLK` (Linux >= 3.16).
//!
//! OFD locks belong to the open file description (shared by `dup`ed
//! descriptors, e.g. [`File::try_clone`]), not to the process; they conflict
//! with classic POSIX locks and with OFD locks held through *other* open file
//! descriptions, including ones in the same process. libmdbx uses exactly these
//! locks (docs/lock-format.md, "File locks"), so rdbx's locks interoperate with it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// End of the range libmdbx calls "whole file": locks span
/// `[0, WHOLE_FILE_LEN)` (`0x7FFFFFFFFFF00000`, libmdbx's `OFF_T_MAX`).
pub(crate) const WHOLE_FILE_LEN: u64 = 0x7FFF_FFFF_FFF0_0000;

/// Lock mode of a byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockMode {
    /// Shared (`F_RDLCK`).
    Read,
    /// Exclusive (`F_WRLCK`).
    Write,
}

impl LockMode {
    fn l_type(self) -> libc::c_short {
        match self {
            LockMode::Read => libc::F_RDLCK as libc::c_short,
            LockMode::Write => libc::F_WRLCK as libc::c_short,
        }
    }
}

fn flock(l_type: libc::c_short, start: u64, len: u64) -> io::Result<libc::flock> {
    let bad = || io::Error::new(io::ErrorKind::InvalidInput, "lock range out of off_t range");
    // SAFETY: an all-zero flock is a valid value of this plain C struct (l_pid
    // must be 0 for OFD locks).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = l_type;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = libc::off_t::try_from(start).map_err(|_| bad())?;
    fl.l_len = libc::off_t::try_from(len).map_err(|_| bad())?;
    fl.l_pid = 0;
    Ok(fl)
}

fn fcntl_lock(file: &File, cmd: libc::c_int, fl: &mut libc::flock) -> io::Result<()> {
    loop {
        // SAFETY: `fl` is a valid, writable flock for the whole call (GETLK
        // writes into it); the descriptor is valid while `file` lives.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, fl as *mut libc::flock) };
        if rc != -1 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn is_contended(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES) | Some(libc::EBUSY) | Some(libc::EDEADLK))
}

/// Tries to lock `[start, start + len)` without waiting. `Ok(false)` when
/// another open file description holds a conflicting lock.
pub(crate) fn try_lock(file: &File, mode: LockMode, start: u64, len: u64) -> io::Result<bool> {
    let mut fl = flock(mode.l_type(), start, len)?;
    match fcntl_lock(file, libc::F_OFD_SETLK, &mut fl) {
        Ok(()) => Ok(true),
        Err(e) if is_contended(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Locks `[start, start + len)`, waiting for conflicting locks to go away
/// (`EINTR` is retried).
pub(crate) fn lock_wait(file: &File, mode: LockMode, start: u64, len: u64) -> io::Result<()> {
    let mut fl = flock(mode.l_type(), start, len)?;
    fcntl_lock(file, libc::F_OFD_SETLKW, &mut fl)
}

/// Releases `[start, start + len)` (parts not held are ignored by the kernel).
pub(crate) fn unlock(file: &File, start: u64, len: u64) -> io::Result<()> {
    let mut fl = flock(libc::F_UNLCK as libc::c_short, start, len)?;
    fcntl_lock(file, libc::F_OFD_SETLK, &mut fl)
}

/// `F_OFD_GETLK`: whether some *other* open file description holds a lock on
/// `[start, start + len)` that conflicts with `mode`. Locks held through
/// `file`'s own description never conflict.
pub(crate) fn is_locked_by_other(file: &File, mode: LockMode, start: u64, len: u64) -> io::Result<bool> {
    let mut fl = flock(mode.l_type(), start, len)?;
    fcntl_lock(file, libc::F_OFD_GETLK, &mut fl)?;
    Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ofd_locks_conflict_between_descriptions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let a = File::options().read(true).write(true).create(true).truncate(false).open(&p).unwrap();
        let b = File::options().read(true).write(true).open(&p).unwrap();
        let a2 = a.try_clone().unwrap(); // same open file description

        assert!(try_lock(&a, LockMode::Write, 0, 1).unwrap());
        assert!(!try_lock(&b, LockMode::Read, 0, 1).unwrap());
        assert!(try_lock(&a2, LockMode::Read, 0, 1).unwrap()); // same OFD: converts
        assert!(is_locked_by_other(&b, LockMode::Write, 0, 1).unwrap());
        assert!(!is_locked_by_other(&a, LockMode::Write, 0, 1).unwrap());
        assert!(try_lock(&b, LockMode::Read, 0, 1).unwrap()); // a now holds READ
        assert!(!try_lock(&b, LockMode::Write, 0, 1).unwrap());
        unlock(&a, 0, WHOLE_FILE_LEN).unwrap();
        assert!(try_lock(&b, LockMode::Write, 0, WHOLE_FILE_LEN).unwrap());
        assert!(!try_lock(&a, LockMode::Read, 12345, 1).unwrap());
        unlock(&b, 0, 12345).unwrap();
        unlock(&b, 12346, WHOLE_FILE_LEN - 12346).unwrap();
        assert!(try_lock(&a, LockMode::Write, 0, 12345).unwrap());
        assert!(!try_lock(&a, LockMode::Read, 12345, 1).unwrap());
        lock_wait(&a, LockMode::Write, 20000, 10).unwrap();
        assert!(try_lock(&a, LockMode::Write, u64::MAX, 1).is_err());
    }
}
