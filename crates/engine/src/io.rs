//! The seam through which every write to the data file goes: page runs, meta
//! pages, syncs and size changes. Production uses [`FileIo`]; tests wrap it to
//! inject failures (a full disk, a failed fsync) and check that the last commit
//! survives.

use std::fs::File;
use std::io;
use std::sync::Arc;

use crate::os::file;

/// Writes and syncs of the data file.
pub trait PageIo: Send + Sync {
    /// Writes `bufs` back to back at byte `offset`.
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()>;
    /// Writes `bufs` at `offset` and returns once they are on stable storage
    /// (write-through, `O_DSYNC`-like). Writes made before it with
    /// [`PageIo::write_at`] are not made durable by it.
    fn write_at_durable(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()>;
    /// Flushes written data to stable storage.
    fn sync_data(&self) -> io::Result<()>;
    /// Sets the file length.
    fn set_len(&self, len: u64) -> io::Result<()>;
}

/// Direct file I/O (pwritev, fdatasync, ftruncate).
pub(crate) struct FileIo {
    pub(crate) file: Arc<File>,
    /// The file is on tmpfs or ramfs, whose `fdatasync` does nothing (the
    /// kernel's `noop_fsync`): syncs succeed without the system call. Small
    /// lazy commits there sync often to reuse pages (`gc::force_steady`):
    /// two calls a commit, measured at 1 of every 4 system calls of 1,000
    /// one-put commits.
    pub(crate) in_memory: bool,
}

impl PageIo for FileIo {
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        file::pwrite_all(&self.file, bufs, offset)
    }
    fn write_at_durable(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        file::pwrite_all_dsync(&self.file, bufs, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        if self.in_memory {
            return Ok(());
        }
        file::fdatasync(&self.file)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        file::set_len(&self.file, len)
    }
}

/// A hook that sees every I/O call before it reaches the file and may fail it.
/// Used by fault-injection tests through [`crate::EnvBuilder::io_faults`].
pub trait IoFaults: Send + Sync {
    /// Called before each write of `len` bytes at `offset`; an error fails it.
    fn before_write(&self, offset: u64, len: usize) -> io::Result<()>;
    /// Called before each sync.
    fn before_sync(&self) -> io::Result<()>;
    /// Called after a write reached the file (the page cache), with the bytes
    /// written. Crash tests keep a model of what is durable from these calls.
    fn after_write(&self, _offset: u64, _bufs: &[&[u8]]) {}
    /// Called after a sync succeeded: everything written before it is durable.
    fn after_sync(&self) {}
    /// Called after a write-through write succeeded: these bytes (only these)
    /// are durable. The default treats it as an ordinary write, which a crash
    /// model would see as too weak, never too strong.
    fn after_durable_write(&self, offset: u64, bufs: &[&[u8]]) {
        self.after_write(offset, bufs);
    }
    /// Called after the file length was set.
    fn after_set_len(&self, _len: u64) {}
}

pub(crate) struct FaultyIo {
    pub(crate) inner: FileIo,
    pub(crate) faults: Arc<dyn IoFaults>,
}

impl PageIo for FaultyIo {
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        self.faults.before_write(offset, bufs.iter().map(|b| b.len()).sum())?;
        self.inner.write_at(bufs, offset)?;
        self.faults.after_write(offset, bufs);
        Ok(())
    }
    fn write_at_durable(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        self.faults.before_write(offset, bufs.iter().map(|b| b.len()).sum())?;
        self.faults.before_sync()?;
        self.inner.write_at_durable(bufs, offset)?;
        self.faults.after_durable_write(offset, bufs);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        self.faults.before_sync()?;
        self.inner.sync_data()?;
        self.faults.after_sync();
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)?;
        self.faults.after_set_len(len);
        Ok(())
    }
}
