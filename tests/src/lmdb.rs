//! A small safe wrapper around LMDB (through `lmdb-master-sys`, the C
//! library heed ships), libmdbx's ancestor, used only as a second peer in the
//! comparative benchmark. Its file format is not MDBX's: it never opens an
//! rdbx or libmdbx database.
//!
//! Errors are `String`s: `"<what>: LMDB error <code> (<mdb_strerror text>)"`.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use lmdb_master_sys as ffi;

pub use ffi::{MDB_APPEND, MDB_DUPSORT, MDB_INTEGERKEY, MDB_NOSYNC, MDB_WRITEMAP};

/// Result of every call.
pub type Result<T> = std::result::Result<T, String>;

fn check(rc: i32, what: impl FnOnce() -> String) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: mdb_strerror returns a pointer to a static NUL-terminated string
    // (or strerror's buffer) for any code.
    let text = unsafe { CStr::from_ptr(ffi::mdb_strerror(rc)) }.to_string_lossy().into_owned();
    Err(format!("{}: LMDB error {rc} ({text})", what()))
}

fn val(b: &[u8]) -> ffi::MDB_val {
    ffi::MDB_val { mv_size: b.len(), mv_data: b.as_ptr() as *mut _ }
}

/// `MDB_val` as a slice borrowed for `'a`.
///
/// SAFETY (callers): `v` was filled by LMDB during a transaction that lives
/// for `'a` and is not written to while the slice lives.
unsafe fn slice<'a>(v: &ffi::MDB_val) -> &'a [u8] {
    if v.mv_size == 0 {
        return &[];
    }
    // SAFETY: LMDB hands out `mv_size` readable bytes at `mv_data`, valid
    // until the transaction ends or writes (the caller's contract).
    unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }
}

/// An open LMDB environment (directory layout: `data.mdb`, `lock.mdb`).
pub struct Env {
    env: *mut ffi::MDB_env,
}

// SAFETY: LMDB allows an environment handle to be used from several threads
// once opened; read transactions belong to the thread that began them (they
// are not Send here), and only one write transaction exists at a time.
unsafe impl Send for Env {}
// SAFETY: see above; the methods called concurrently (begin_ro) are the ones
// LMDB documents as thread-safe.
unsafe impl Sync for Env {}

impl Env {
    /// Opens (creating) the environment in `dir` with a map of `map_size`
    /// bytes (LMDB does not grow files automatically), `max_dbs` named
    /// databases and `flags` (`MDB_NOSYNC`, `MDB_WRITEMAP`, ...).
    pub fn open(dir: &Path, map_size: usize, max_dbs: u32, flags: u32) -> Result<Env> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut env = ptr::null_mut();
        // SAFETY: `env` is a valid out-pointer.
        check(unsafe { ffi::mdb_env_create(&mut env) }, || "mdb_env_create".into())?;
        let out = Env { env };
        // SAFETY: a created, not yet opened environment.
        check(unsafe { ffi::mdb_env_set_mapsize(env, map_size) }, || "mdb_env_set_mapsize".into())?;
        // SAFETY: as above.
        check(unsafe { ffi::mdb_env_set_maxdbs(env, max_dbs) }, || "mdb_env_set_maxdbs".into())?;
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: a created environment and a NUL-terminated path.
        check(unsafe { ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644) }, || {
            format!("mdb_env_open {}", dir.display())
        })?;
        Ok(out)
    }

    fn begin(&self, flags: u32) -> Result<Txn<'_>> {
        let mut txn = ptr::null_mut();
        // SAFETY: an open environment and a valid out-pointer.
        check(unsafe { ffi::mdb_txn_begin(self.env, ptr::null_mut(), flags, &mut txn) }, || "mdb_txn_begin".into())?;
        Ok(Txn { txn, _env: std::marker::PhantomData })
    }

    /// A write transaction.
    pub fn begin_rw(&self) -> Result<Txn<'_>> {
        self.begin(0)
    }

    /// A read-only transaction.
    pub fn begin_ro(&self) -> Result<Txn<'_>> {
        self.begin(ffi::MDB_RDONLY)
    }

    /// The last page number in use (`mdb_env_info`'s `me_last_pgno`).
    pub fn last_pgno(&self) -> Result<u64> {
        // SAFETY: an all-zero MDB_envinfo is a valid value of this plain C struct.
        let mut info: ffi::MDB_envinfo = unsafe { std::mem::zeroed() };
        // SAFETY: an open environment and a valid out-pointer.
        check(unsafe { ffi::mdb_env_info(self.env, &mut info) }, || "mdb_env_info".into())?;
        Ok(info.me_last_pgno as u64)
    }

    /// Flushes the data file (`mdb_env_sync(force)`).
    pub fn sync(&self) -> Result<()> {
        // SAFETY: an open environment.
        check(unsafe { ffi::mdb_env_sync(self.env, 1) }, || "mdb_env_sync".into())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: the environment was created by `open`; every transaction
        // borrows it, so none is alive here.
        unsafe { ffi::mdb_env_close(self.env) }
    }
}

/// A transaction (aborted on drop unless committed).
pub struct Txn<'e> {
    txn: *mut ffi::MDB_txn,
    _env: std::marker::PhantomData<&'e Env>,
}

/// Tree shape of a database.
pub struct Stat {
    pub depth: u32,
    pub branch_pages: u64,
    pub leaf_pages: u64,
    pub entries: u64,
}

impl Txn<'_> {
    /// Opens (creating, in a write transaction) the named database.
    pub fn create_table(&mut self, name: &[u8], flags: u32) -> Result<u32> {
        let name = CString::new(name).map_err(|e| e.to_string())?;
        let mut dbi = 0;
        // SAFETY: a live transaction, a NUL-terminated name, a valid out-pointer.
        check(unsafe { ffi::mdb_dbi_open(self.txn, name.as_ptr(), flags | ffi::MDB_CREATE, &mut dbi) }, || {
            "mdb_dbi_open".into()
        })?;
        Ok(dbi)
    }

    /// The unnamed (main) database.
    pub fn main_dbi(&mut self) -> Result<u32> {
        let mut dbi = 0;
        // SAFETY: a live transaction, a null name (the main database), a
        // valid out-pointer.
        check(unsafe { ffi::mdb_dbi_open(self.txn, ptr::null(), 0, &mut dbi) }, || "mdb_dbi_open".into())?;
        Ok(dbi)
    }

    pub fn put(&mut self, dbi: u32, key: &[u8], value: &[u8], flags: u32) -> Result<()> {
        let (mut k, mut v) = (val(key), val(value));
        // SAFETY: a live write transaction; LMDB copies the bytes.
        check(unsafe { ffi::mdb_put(self.txn, dbi, &mut k, &mut v, flags) }, || "mdb_put".into())
    }

    /// Deletes `key` (with `value`: that value of a DUPSORT key); false if absent.
    pub fn del(&mut self, dbi: u32, key: &[u8], value: Option<&[u8]>) -> Result<bool> {
        let mut k = val(key);
        let mut v = value.map(val);
        let vp = v.as_mut().map_or(ptr::null_mut(), |v| v as *mut _);
        // SAFETY: a live write transaction; `vp` is null or a valid MDB_val.
        let rc = unsafe { ffi::mdb_del(self.txn, dbi, &mut k, vp) };
        if rc == ffi::MDB_NOTFOUND {
            return Ok(false);
        }
        check(rc, || "mdb_del".into()).map(|()| true)
    }

    /// The value of `key`, borrowed from the map.
    pub fn get_ref(&self, dbi: u32, key: &[u8]) -> Result<Option<&[u8]>> {
        let mut k = val(key);
        let mut v = ffi::MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        // SAFETY: a live transaction and valid MDB_vals.
        let rc = unsafe { ffi::mdb_get(self.txn, dbi, &mut k, &mut v) };
        if rc == ffi::MDB_NOTFOUND {
            return Ok(None);
        }
        check(rc, || "mdb_get".into())?;
        // SAFETY: filled by mdb_get in this transaction, which `&self` keeps
        // alive and unwritten for the borrow.
        Ok(Some(unsafe { slice(&v) }))
    }

    /// Calls `f` on every record in key order (one cursor).
    pub fn for_each(&self, dbi: u32, mut f: impl FnMut(&[u8], &[u8])) -> Result<()> {
        let mut c = ptr::null_mut();
        // SAFETY: a live transaction and a valid out-pointer.
        check(unsafe { ffi::mdb_cursor_open(self.txn, dbi, &mut c) }, || "mdb_cursor_open".into())?;
        let mut k = ffi::MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let mut v = ffi::MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let mut op = ffi::MDB_FIRST;
        let result = loop {
            // SAFETY: an open cursor and valid MDB_vals.
            let rc = unsafe { ffi::mdb_cursor_get(c, &mut k, &mut v, op) };
            if rc == ffi::MDB_NOTFOUND {
                break Ok(());
            }
            if let Err(e) = check(rc, || "mdb_cursor_get".into()) {
                break Err(e);
            }
            // SAFETY: filled by the cursor in this live transaction.
            unsafe { f(slice(&k), slice(&v)) };
            op = ffi::MDB_NEXT;
        };
        // SAFETY: the cursor was opened above and is closed once.
        unsafe { ffi::mdb_cursor_close(c) };
        result
    }

    /// Walks every record with one cursor, deleting at the cursor each one
    /// `pick` selects (`mdb_cursor_del`: the cursor then stands on the
    /// successor, which the next `MDB_NEXT` returns). Returns the records
    /// walked and deleted.
    pub fn walk_delete(&mut self, dbi: u32, mut pick: impl FnMut(&[u8], &[u8]) -> bool) -> Result<(u64, u64)> {
        let mut c = ptr::null_mut();
        // SAFETY: a live transaction and a valid out-pointer.
        check(unsafe { ffi::mdb_cursor_open(self.txn, dbi, &mut c) }, || "mdb_cursor_open".into())?;
        let mut k = ffi::MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let mut v = ffi::MDB_val { mv_size: 0, mv_data: ptr::null_mut() };
        let (mut walked, mut deleted) = (0, 0);
        let mut op = ffi::MDB_FIRST;
        let result = loop {
            // SAFETY: an open cursor and valid MDB_vals.
            let rc = unsafe { ffi::mdb_cursor_get(c, &mut k, &mut v, op) };
            if rc == ffi::MDB_NOTFOUND {
                break Ok((walked, deleted));
            }
            if let Err(e) = check(rc, || "mdb_cursor_get".into()) {
                break Err(e);
            }
            walked += 1;
            // Filled by the cursor in this live transaction, and read
            // before the next cursor operation, which comes after `pick`.
            // SAFETY: those pointers are valid for their lengths meanwhile.
            let (ks, vs) = unsafe { (slice(&k), slice(&v)) };
            if pick(ks, vs) {
                // SAFETY: an open cursor of this write transaction, on a record.
                if let Err(e) = check(unsafe { ffi::mdb_cursor_del(c, 0) }, || "mdb_cursor_del".into()) {
                    break Err(e);
                }
                deleted += 1;
            }
            op = ffi::MDB_NEXT;
        };
        // SAFETY: the cursor was opened above and is closed once.
        unsafe { ffi::mdb_cursor_close(c) };
        result
    }

    pub fn stat(&self, dbi: u32) -> Result<Stat> {
        // SAFETY: an all-zero MDB_stat is a valid value of this plain C struct.
        let mut s: ffi::MDB_stat = unsafe { std::mem::zeroed() };
        // SAFETY: a live transaction and a valid out-pointer.
        check(unsafe { ffi::mdb_stat(self.txn, dbi, &mut s) }, || "mdb_stat".into())?;
        Ok(Stat {
            depth: s.ms_depth,
            branch_pages: s.ms_branch_pages as u64,
            leaf_pages: s.ms_leaf_pages as u64,
            entries: s.ms_entries as u64,
        })
    }

    pub fn commit(mut self) -> Result<()> {
        let txn = std::mem::replace(&mut self.txn, ptr::null_mut());
        // SAFETY: a live transaction, ended exactly once (Drop sees null).
        check(unsafe { ffi::mdb_txn_commit(txn) }, || "mdb_txn_commit".into())
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.txn.is_null() {
            // SAFETY: a live transaction, ended exactly once.
            unsafe { ffi::mdb_txn_abort(self.txn) }
        }
    }
}
