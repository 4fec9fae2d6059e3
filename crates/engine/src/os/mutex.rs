//! glibc robust, process-shared pthread mutexes living in the lock-file mapping
//! (`wrt_lock` and `rdt_lock`; docs/lock-format.md, "Mutexes").
//!
//! On x86_64 glibc a `pthread_mutex_t` is 40 bytes:
//!
//! | off | size | field | notes |
//! |---|---|---|---|
//! | 0 | 4 | `__lock` | owner's kernel TID while held (futex word), bit 30 = OWNER_DIED |
//! | 4 | 4 | `__count` | recursion count (may stay 1 after unlock for PI mutexes) |
//! | 8 | 4 | `__owner` | owner TID |
//! | 12 | 4 | `__nusers` | |
//! | 16 | 4 | `__kind` | `0xB2` = ERRORCHECK 2 \| ROBUST 16 \| PRIO_INHERIT 32 \| PSHARED 128 |
//! | 20 | 2+2 | `__spins`, `__elision` | |
//! | 24 | 16 | `__list` | robust-list links into the owner's address space |
//!
//! Trust model (the same as libmdbx's): every process mapping the lock file is
//! a cooperating libmdbx/rdbx process that only touches these bytes through
//! glibc's pthread functions (or initialises them while holding the exclusive
//! file locks). A hostile writer of the lock file could corrupt the robust list
//! of the thread owning the mutex; that is outside the model.

use std::io;
use std::marker::PhantomData;

/// Outcome of a successful lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locked {
    /// Normal acquisition.
    Ok,
    /// `EOWNERDEAD`: the previous owner died while holding the mutex. We now own
    /// it, but it is *inconsistent*: the caller recovers the protected state and
    /// then calls [`SharedMutex::make_consistent`] before unlocking (otherwise the
    /// mutex becomes permanently unusable, `ENOTRECOVERABLE`).
    OwnerDied,
}

/// A handle to a `pthread_mutex_t` inside a [`super::mmap::SharedRegion`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedMutex<'a> {
    ptr: *mut libc::pthread_mutex_t,
    _region: PhantomData<&'a super::mmap::SharedRegion>,
}

// SAFETY: a process-shared pthread mutex may be operated on from any thread;
// the handle is just an address inside a mapping kept alive by the borrow.
unsafe impl Send for SharedMutex<'_> {}
// SAFETY: see Send; pthread mutex operations are thread-safe by definition.
unsafe impl Sync for SharedMutex<'_> {}

fn err(rc: libc::c_int) -> io::Error {
    io::Error::from_raw_os_error(rc)
}

impl SharedMutex<'_> {
    /// # Safety
    /// `ptr` must be 8-aligned and point to `size_of::<pthread_mutex_t>()`
    /// bytes of a shared mapping that stays mapped for the lifetime `'a`, and
    /// that memory must only be accessed through pthread functions (or be
    /// initialised by [`Self::init`] while no one else uses it).
    pub(super) unsafe fn from_raw(ptr: *mut libc::pthread_mutex_t) -> Self {
        SharedMutex { ptr, _region: PhantomData }
    }

    /// `pthread_mutex_init` with process-shared + robust + priority-inherit
    /// (falling back to no protocol if PI is unsupported) + ERRORCHECK
    /// attributes, exactly like libmdbx (`__kind` = `0xB2` on x86_64 glibc).
    /// Only call while no other thread or process uses the mutex (exclusive
    /// lock-file initialisation).
    pub fn init(&self) -> io::Result<()> {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        // SAFETY: pthread_mutexattr_init initialises the attribute object.
        let rc = unsafe { libc::pthread_mutexattr_init(attr.as_mut_ptr()) };
        if rc != 0 {
            return Err(err(rc));
        }
        let a = attr.as_mut_ptr();
        let result = (|| {
            // SAFETY: `a` is an initialised attribute object (above).
            let rc = unsafe { libc::pthread_mutexattr_setpshared(a, libc::PTHREAD_PROCESS_SHARED) };
            if rc != 0 {
                return Err(err(rc));
            }
            // SAFETY: as above.
            let rc = unsafe { libc::pthread_mutexattr_setrobust(a, libc::PTHREAD_MUTEX_ROBUST) };
            if rc != 0 {
                return Err(err(rc));
            }
            // SAFETY: as above.
            let mut rc = unsafe { libc::pthread_mutexattr_setprotocol(a, libc::PTHREAD_PRIO_INHERIT) };
            if rc == libc::ENOTSUP {
                // SAFETY: as above.
                rc = unsafe { libc::pthread_mutexattr_setprotocol(a, libc::PTHREAD_PRIO_NONE) };
            }
            if rc != 0 && rc != libc::ENOTSUP {
                return Err(err(rc));
            }
            // SAFETY: as above.
            let rc = unsafe { libc::pthread_mutexattr_settype(a, libc::PTHREAD_MUTEX_ERRORCHECK) };
            if rc != 0 && rc != libc::ENOTSUP {
                return Err(err(rc));
            }
            // SAFETY: `self.ptr` is a valid, aligned mutex area in the mapping
            // (from_raw contract) and no one else uses it during initialisation
            // (caller contract); `a` is an initialised attribute object.
            let rc = unsafe { libc::pthread_mutex_init(self.ptr, a) };
            if rc != 0 {
                return Err(err(rc));
            }
            Ok(())
        })();
        // SAFETY: `a` was initialised by pthread_mutexattr_init and is destroyed once.
        unsafe { libc::pthread_mutexattr_destroy(a) };
        result
    }

    /// Blocks until the calling thread owns the mutex. `EDEADLK` (this thread
    /// already owns it; ERRORCHECK) and `ENOTRECOVERABLE` are returned as errors.
    pub fn lock(&self) -> io::Result<Locked> {
        // SAFETY: valid mutex area (from_raw contract), initialised by the
        // lock-file initialiser (ours or libmdbx's) before anyone could map it.
        let rc = unsafe { libc::pthread_mutex_lock(self.ptr) };
        match rc {
            0 => Ok(Locked::Ok),
            libc::EOWNERDEAD => Ok(Locked::OwnerDied),
            rc => Err(err(rc)),
        }
    }

    /// Tries to take the mutex without blocking: `Ok(None)` when another thread
    /// holds it. `EDEADLK` (held by the calling thread) is an error.
    pub fn try_lock(&self) -> io::Result<Option<Locked>> {
        // SAFETY: as in `lock`.
        let rc = unsafe { libc::pthread_mutex_trylock(self.ptr) };
        match rc {
            0 => Ok(Some(Locked::Ok)),
            libc::EOWNERDEAD => Ok(Some(Locked::OwnerDied)),
            libc::EBUSY => Ok(None),
            rc => Err(err(rc)),
        }
    }

    /// `pthread_mutex_consistent` after [`Locked::OwnerDied`].
    pub fn make_consistent(&self) -> io::Result<()> {
        // SAFETY: as in `lock`; the calling thread owns the mutex.
        let rc = unsafe { libc::pthread_mutex_consistent(self.ptr) };
        if rc == 0 {
            Ok(())
        } else {
            Err(err(rc))
        }
    }

    /// Unlocks; `EPERM` if the calling thread is not the owner.
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as in `lock`.
        let rc = unsafe { libc::pthread_mutex_unlock(self.ptr) };
        if rc == 0 {
            Ok(())
        } else {
            Err(err(rc))
        }
    }

    /// `pthread_mutex_destroy`: only by the last user of the lock file, while it
    /// holds the exclusive file locks.
    pub fn destroy(&self) -> io::Result<()> {
        // SAFETY: as in `lock`; no other user exists (caller contract).
        let rc = unsafe { libc::pthread_mutex_destroy(self.ptr) };
        if rc == 0 {
            Ok(())
        } else {
            Err(err(rc))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::mmap::SharedRegion;

    #[test]
    fn robust_errorcheck_mutex_in_shared_mapping() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(4096).unwrap();
        let r = SharedRegion::map(&f, 4096).unwrap();
        let m = r.mutex_at(64);
        m.init().unwrap();
        #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
        assert_eq!(r.u32_at(64 + 16).load(std::sync::atomic::Ordering::Relaxed), 0xB2);
        assert_eq!(m.lock().unwrap(), Locked::Ok);
        assert_eq!(m.lock().unwrap_err().raw_os_error(), Some(libc::EDEADLK));
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(m.try_lock().unwrap(), None);
                assert_eq!(m.unlock().unwrap_err().raw_os_error(), Some(libc::EPERM));
            });
        });
        m.unlock().unwrap();
        // A thread that exits while holding a robust mutex: the next locker gets OwnerDied.
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(m.lock().unwrap(), Locked::Ok));
        });
        assert_eq!(m.lock().unwrap(), Locked::OwnerDied);
        m.make_consistent().unwrap();
        m.unlock().unwrap();
        assert_eq!(m.try_lock().unwrap(), Some(Locked::Ok));
        m.unlock().unwrap();
        m.destroy().unwrap();
    }
}
