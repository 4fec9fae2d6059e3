//! Positional file I/O helpers: vectored `pwritev` with short-write/`EINTR`
//! handling, exact `pread`, `fdatasync`, size queries.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// Linux `IOV_MAX` (`UIO_MAXIOV`): the most iovecs one `pwritev` accepts.
pub(crate) const IOV_MAX: usize = 1024;

/// Writes all of `bufs`, back to back, at `offset` with `pwritev`. Loops on
/// short writes and `EINTR`, splits batches at [`IOV_MAX`] and at
/// `isize::MAX` bytes per call.
pub(crate) fn pwrite_all(file: &File, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
    pwrite_all_with(file, bufs, offset, 0)
}

/// As [`pwrite_all`], write-through: `pwritev2(RWF_DSYNC)`, so each call
/// returns once its bytes (and the metadata needed to read them back) are on
/// stable storage, like a write to an `O_DSYNC` descriptor, without a
/// separate `fdatasync`. Where the kernel or file system does not support
/// the flag, a plain write followed by `fdatasync`.
pub(crate) fn pwrite_all_dsync(file: &File, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
    match pwrite_all_with(file, bufs, offset, libc::RWF_DSYNC) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)) => {
            pwrite_all(file, bufs, offset)?;
            fdatasync(file)
        }
        r => r,
    }
}

/// Iovecs built on the stack per `pwritev` call; a call with more buffers
/// (a long run of pages) builds them on the heap.
const IOV_STACK: usize = 64;

/// `pwritev2` with `flags` (0: plain `pwritev`).
fn pwrite_all_with(file: &File, bufs: &[&[u8]], offset: u64, flags: libc::c_int) -> io::Result<()> {
    if let ([buf], 0) = (bufs, flags) {
        // One buffer (most pages of a random-write commit): plain `pwrite`
        // (std loops on short writes and EINTR), with no iovecs to build.
        return file.write_all_at(buf, offset);
    }
    const NO_IOV: libc::iovec = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
    let fd = file.as_raw_fd();
    let mut idx = 0usize; // first buffer not completely written
    let mut skip = 0usize; // bytes of bufs[idx] already written
    let mut pos = offset;
    // No allocation for the common case: a commit writes most pages in runs
    // of a few pages, one call each.
    let mut on_stack = [NO_IOV; IOV_STACK];
    let mut on_heap = Vec::new();
    let iov: &mut [libc::iovec] = if bufs.len() <= IOV_STACK {
        &mut on_stack
    } else {
        on_heap.resize(bufs.len().min(IOV_MAX), NO_IOV);
        &mut on_heap
    };
    loop {
        while idx < bufs.len() && bufs[idx].len() == skip {
            idx += 1;
            skip = 0;
        }
        if idx == bufs.len() {
            return Ok(());
        }
        let mut count = 0usize;
        let mut total = 0usize;
        for (i, b) in bufs[idx..].iter().enumerate() {
            if count == iov.len() {
                break;
            }
            let part = if i == 0 { &b[skip..] } else { &b[..] };
            if part.is_empty() {
                continue;
            }
            if total.saturating_add(part.len()) > isize::MAX as usize {
                break;
            }
            total += part.len();
            iov[count] = libc::iovec { iov_base: part.as_ptr() as *mut libc::c_void, iov_len: part.len() };
            count += 1;
        }
        let off = libc::off_t::try_from(pos)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset too large"))?;
        // SAFETY: the first `count` iovecs point into live `&[u8]`s borrowed
        // for the whole call (pwritev/pwritev2 only read from them);
        // `count <= IOV_MAX` fits c_int.
        let rc = unsafe {
            if flags == 0 {
                libc::pwritev(fd, iov.as_ptr(), count as libc::c_int, off)
            } else {
                libc::pwritev2(fd, iov.as_ptr(), count as libc::c_int, off, flags)
            }
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if rc == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "pwritev wrote 0 bytes"));
        }
        let mut n = rc as usize;
        pos += n as u64;
        while n > 0 {
            let rest = bufs[idx].len() - skip;
            if n >= rest {
                n -= rest;
                idx += 1;
                skip = 0;
            } else {
                skip += n;
                n = 0;
            }
        }
    }
}

/// Reads exactly `buf.len()` bytes at `offset` (EOF -> `UnexpectedEof`;
/// retries `EINTR` and short reads).
pub(crate) fn pread_exact(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

/// `fdatasync(2)`, retrying `EINTR`.
pub(crate) fn fdatasync(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: plain syscall on a descriptor that is valid while `file` lives.
        let rc = unsafe { libc::fdatasync(file.as_raw_fd()) };
        match super::cvt(rc) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|_| ()),
        }
    }
}

/// Current size of the file in bytes (`fstat`).
pub(crate) fn file_size(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.len())
}

/// `ftruncate(2)`: sets the file length (grows with zeros or truncates).
pub(crate) fn set_len(file: &File, len: u64) -> io::Result<()> {
    file.set_len(len)
}

/// The first offset at or after `from` that holds data rather than a hole
/// (`lseek(SEEK_DATA)`), `None` when only holes follow. A file system without
/// hole support reports every offset as data.
pub(crate) fn next_data(file: &File, from: u64) -> io::Result<Option<u64>> {
    let Ok(off) = libc::off_t::try_from(from) else {
        return Ok(None);
    };
    // SAFETY: plain syscall on a descriptor that is valid while `file` lives;
    // it moves the file offset, which this crate never uses (all I/O is
    // positioned: pread/pwrite).
    let rc = unsafe { libc::lseek(file.as_raw_fd(), off, libc::SEEK_DATA) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENXIO) => Ok(None),
            Some(libc::EINVAL) => Ok(Some(from)), // SEEK_DATA unsupported
            _ => Err(e),
        };
    }
    Ok(Some(rc as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pwrite_all_vectored_and_pread() {
        let f = tempfile::tempfile().unwrap();
        let a = vec![1u8; 10];
        let b: Vec<u8> = Vec::new();
        let c = vec![3u8; 5000];
        pwrite_all(&f, &[&a, &b, &c], 100).unwrap();
        assert_eq!(file_size(&f).unwrap(), 5110);
        let mut buf = vec![0u8; 5010];
        pread_exact(&f, &mut buf, 100).unwrap();
        assert!(buf[..10].iter().all(|&x| x == 1));
        assert!(buf[10..].iter().all(|&x| x == 3));
        let mut over = [0u8; 20];
        assert_eq!(pread_exact(&f, &mut over, 5100).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        fdatasync(&f).unwrap();
        set_len(&f, 8192).unwrap();
        assert_eq!(file_size(&f).unwrap(), 8192);
        pwrite_all(&f, &[], 0).unwrap();
    }

    #[test]
    fn pwrite_all_more_than_iov_max_buffers() {
        let f = tempfile::tempfile().unwrap();
        let data: Vec<Vec<u8>> = (0..(IOV_MAX * 2 + 7)).map(|i| vec![(i % 251) as u8; 3]).collect();
        let refs: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
        pwrite_all(&f, &refs, 0).unwrap();
        let mut buf = vec![0u8; refs.len() * 3];
        pread_exact(&f, &mut buf, 0).unwrap();
        for (i, chunk) in buf.chunks(3).enumerate() {
            assert_eq!(chunk, &[(i % 251) as u8; 3]);
        }
    }
}
