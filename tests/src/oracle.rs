//! A small safe wrapper around the real libmdbx (through `mdbx-sys`), used as
//! the test oracle. The engine never uses it.
//!
//! Every error is a `String` of the form `"<what>: MDBX error <code> (<mdbx_strerror text>)"`;
//! [`error_code`] recovers the numeric code from such a string.
//!
//! libmdbx and rdbx must not hold an environment on the same file at the same
//! time from one process (both take OFD locks on the lock file, and libmdbx
//! keeps its own per-process registry): close one [`Env`] before opening the
//! other side, or run libmdbx in a child process (`mdbx-oracle` binary).

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;

use mdbx_sys as ffi;

pub use ffi::{
    MDBX_APPEND, MDBX_BAD_VALSIZE, MDBX_CORRUPTED, MDBX_CP_COMPACT, MDBX_CP_FORCE_DYNAMIC_SIZE, MDBX_DUPFIXED,
    MDBX_DUPSORT, MDBX_INCOMPATIBLE, MDBX_INTEGERDUP, MDBX_INTEGERKEY, MDBX_KEYEXIST, MDBX_MAP_FULL, MDBX_NODUPDATA,
    MDBX_NOOVERWRITE, MDBX_NOTFOUND, MDBX_OUSTED, MDBX_PROBLEM, MDBX_REVERSEDUP, MDBX_REVERSEKEY,
};

/// Result of every oracle call.
pub type Result<T> = std::result::Result<T, String>;

/// The text libmdbx gives for an error code.
pub fn strerror(code: i32) -> String {
    // SAFETY: mdbx_strerror returns a pointer to a static or thread-local
    // NUL-terminated string for any code.
    unsafe {
        let p = ffi::mdbx_strerror(code);
        if p.is_null() {
            format!("unknown error {code}")
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

fn check(rc: i32, what: impl FnOnce() -> String) -> Result<()> {
    if rc == ffi::MDBX_SUCCESS {
        Ok(())
    } else {
        Err(format_err(&what(), rc))
    }
}

fn format_err(what: &str, rc: i32) -> String {
    format!("{what}: MDBX error {rc} ({})", strerror(rc))
}

/// The libmdbx code inside an error string made by this module, if any.
pub fn error_code(err: &str) -> Option<i32> {
    let i = err.rfind("MDBX error ")?;
    let rest = &err[i + "MDBX error ".len()..];
    let end = rest.find(' ').unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn val(b: &[u8]) -> ffi::MDBX_val {
    ffi::MDBX_val { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() }
}

fn empty_val() -> ffi::MDBX_val {
    ffi::MDBX_val { iov_base: ptr::null_mut(), iov_len: 0 }
}

/// # Safety
/// `v` must describe memory valid for reads of `iov_len` bytes (or have length 0).
unsafe fn val_to_vec(v: &ffi::MDBX_val) -> Vec<u8> {
    if v.iov_len == 0 || v.iov_base.is_null() {
        Vec::new()
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len).to_vec() }
    }
}

fn cpath(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|e| format!("bad path {path:?}: {e}"))
}

/// Whether an existing path is a single-file (NOSUBDIR) database: `true` for a
/// regular file, `false` for a directory. A missing path is reported as `None`.
pub fn detect_no_sub_dir(path: &Path) -> Option<bool> {
    std::fs::metadata(path).ok().map(|m| !m.is_dir())
}

/// Limit libmdbx's own logging (to stderr) to warnings and errors; debug
/// builds of libmdbx are chatty otherwise. `RDBX_ORACLE_LOG=<level 0..7>`
/// overrides the level.
fn quiet_logging() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let level = std::env::var("RDBX_ORACLE_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or(ffi::MDBX_LOG_WARN);
        // SAFETY: plain setter; a null logger keeps libmdbx's default
        // (stderr) output.
        unsafe {
            ffi::mdbx_setup_debug(level, ffi::MDBX_DBG_DONTCHANGE, None);
        }
    });
}

/// Geometry in bytes; `None` fields mean "libmdbx default / keep" (-1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Geometry {
    pub lower: Option<usize>,
    pub now: Option<usize>,
    pub upper: Option<usize>,
    pub growth: Option<usize>,
    pub shrink: Option<usize>,
}

/// Durability mode for write transactions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `MDBX_SYNC_DURABLE` (the libmdbx default).
    #[default]
    SyncDurable,
    /// `MDBX_NOMETASYNC`.
    NoMetaSync,
    /// `MDBX_SAFE_NOSYNC`.
    SafeNoSync,
    /// `MDBX_UTTERLY_NOSYNC`.
    UtterlyNoSync,
}

/// How to open an environment.
#[derive(Clone, Debug)]
pub struct EnvOptions {
    /// `MDBX_NOSUBDIR`: the path is the data file. `None` = detect from an
    /// existing path (a regular file means NOSUBDIR), directory mode otherwise.
    pub no_sub_dir: Option<bool>,
    /// Page size for a new database (`None` = libmdbx default).
    pub page_size: Option<usize>,
    pub geometry: Geometry,
    pub max_dbs: u32,
    pub max_readers: Option<u32>,
    pub read_only: bool,
    pub durability: Durability,
    /// `MDBX_VALIDATION`: extra checks of pages while reading.
    pub validation: bool,
    pub exclusive: bool,
    pub write_map: bool,
}

impl Default for EnvOptions {
    fn default() -> Self {
        EnvOptions {
            no_sub_dir: None,
            page_size: None,
            geometry: Geometry::default(),
            max_dbs: 64,
            max_readers: None,
            read_only: false,
            durability: Durability::default(),
            validation: false,
            exclusive: false,
            write_map: false,
        }
    }
}

/// A libmdbx environment. Closed on drop.
pub struct Env {
    env: *mut ffi::MDBX_env,
    path: PathBuf,
}

// SAFETY: an MDBX_env may be used from any thread (libmdbx is built with
// MDBX_TXN_CHECKOWNER=0 by mdbx-sys; transactions are not Send here anyway).
unsafe impl Send for Env {}
// SAFETY: see above; all Env methods that libmdbx allows concurrently.
unsafe impl Sync for Env {}

/// Table statistics (`mdbx_dbi_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub page_size: u32,
    pub depth: u32,
    pub branch_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
    pub entries: u64,
    pub mod_txnid: u64,
}

impl From<ffi::MDBX_stat> for Stat {
    fn from(s: ffi::MDBX_stat) -> Self {
        Stat {
            page_size: s.ms_psize,
            depth: s.ms_depth,
            branch_pages: s.ms_branch_pages,
            leaf_pages: s.ms_leaf_pages,
            overflow_pages: s.ms_overflow_pages,
            entries: s.ms_entries,
            mod_txnid: s.ms_mod_txnid,
        }
    }
}

/// Environment information (`mdbx_env_info_ex`), sizes in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnvInfo {
    pub page_size: u32,
    pub geo_lower: u64,
    pub geo_upper: u64,
    pub geo_current: u64,
    pub geo_shrink: u64,
    pub geo_grow: u64,
    pub map_size: u64,
    pub file_size: u64,
    /// Number of the last used page (first_unallocated - 1).
    pub last_pgno: u64,
    pub recent_txnid: u64,
    pub max_readers: u32,
    pub num_readers: u32,
    /// Page-operation counters (`mi_pgop_stat`): newly, cow, clone, split,
    /// merge, spill, unspill, wops, prefault, mincore, msync, fsync.
    pub pgop: [u64; 12],
    /// Bytes written since the last steady commit (`mi_unsync_volume`).
    pub unsync_volume: u64,
    /// Auto-sync threshold in bytes (`mi_autosync_threshold`).
    pub autosync_threshold: u64,
}

impl Env {
    /// Open (or create, when not read-only) an environment at `path`.
    pub fn open(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        quiet_logging();
        let path = path.as_ref().to_path_buf();
        let mut env: *mut ffi::MDBX_env = ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { ffi::mdbx_env_create(&mut env) }, || "mdbx_env_create".into())?;
        let me = Env { env, path };
        me.configure_and_open(opts)?;
        Ok(me)
    }

    fn configure_and_open(&self, opts: &EnvOptions) -> Result<()> {
        // SAFETY: (all calls below) self.env is a live environment created by
        // mdbx_env_create and not yet opened.
        unsafe {
            check(ffi::mdbx_env_set_option(self.env, ffi::MDBX_opt_max_db, opts.max_dbs as u64), || {
                "mdbx_env_set_option(max_db)".into()
            })?;
            if let Some(r) = opts.max_readers {
                check(ffi::mdbx_env_set_option(self.env, ffi::MDBX_opt_max_readers, r as u64), || {
                    "mdbx_env_set_option(max_readers)".into()
                })?;
            }
            let g = &opts.geometry;
            let v = |x: Option<usize>| x.map(|x| x as isize).unwrap_or(-1);
            if g != &Geometry::default() || opts.page_size.is_some() {
                check(
                    ffi::mdbx_env_set_geometry(
                        self.env,
                        v(g.lower),
                        v(g.now),
                        v(g.upper),
                        v(g.growth),
                        v(g.shrink),
                        v(opts.page_size),
                    ),
                    || format!("mdbx_env_set_geometry({g:?}, page_size {:?})", opts.page_size),
                )?;
            }
            let no_sub_dir = opts.no_sub_dir.or_else(|| detect_no_sub_dir(&self.path)).unwrap_or(false);
            let mut flags: ffi::MDBX_env_flags_t = 0;
            if no_sub_dir {
                flags |= ffi::MDBX_NOSUBDIR;
            }
            if opts.read_only {
                flags |= ffi::MDBX_RDONLY;
            }
            if opts.validation {
                flags |= ffi::MDBX_VALIDATION;
            }
            if opts.exclusive {
                flags |= ffi::MDBX_EXCLUSIVE;
            }
            if opts.write_map {
                flags |= ffi::MDBX_WRITEMAP;
            }
            flags |= match opts.durability {
                Durability::SyncDurable => ffi::MDBX_SYNC_DURABLE,
                Durability::NoMetaSync => ffi::MDBX_NOMETASYNC,
                Durability::SafeNoSync => ffi::MDBX_SAFE_NOSYNC,
                Durability::UtterlyNoSync => ffi::MDBX_UTTERLY_NOSYNC,
            };
            let c = cpath(&self.path)?;
            check(ffi::mdbx_env_open(self.env, c.as_ptr(), flags, 0o644), || {
                format!("mdbx_env_open({:?}, flags {flags:#x})", self.path)
            })
        }
    }

    /// The path this environment was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Begin a read-write transaction.
    pub fn begin_rw(&self) -> Result<Txn<'_>> {
        self.begin(0)
    }

    /// Begin a read-only transaction.
    pub fn begin_ro(&self) -> Result<Txn<'_>> {
        self.begin(ffi::MDBX_TXN_RDONLY)
    }

    fn begin(&self, flags: ffi::MDBX_txn_flags_t) -> Result<Txn<'_>> {
        let mut txn: *mut ffi::MDBX_txn = ptr::null_mut();
        // SAFETY: live env, out-pointer to a local.
        check(unsafe { ffi::mdbx_txn_begin_ex(self.env, ptr::null_mut(), flags, &mut txn, ptr::null_mut()) }, || {
            format!("mdbx_txn_begin(flags {flags:#x})")
        })?;
        Ok(Txn { txn, _env: self, read_only: flags & ffi::MDBX_TXN_RDONLY != 0 })
    }

    /// Environment information.
    pub fn info(&self) -> Result<EnvInfo> {
        // SAFETY: MDBX_envinfo is plain old data; zeroed is a valid value.
        let mut i: ffi::MDBX_envinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<ffi::MDBX_envinfo>();
        // SAFETY: live env, out-pointer with its size.
        let rc = unsafe { ffi::mdbx_env_info_ex(self.env, ptr::null(), &mut i, size) };
        check(rc, || "mdbx_env_info_ex".into())?;
        Ok(EnvInfo {
            page_size: i.mi_dxb_pagesize,
            geo_lower: i.mi_geo.lower,
            geo_upper: i.mi_geo.upper,
            geo_current: i.mi_geo.current,
            geo_shrink: i.mi_geo.shrink,
            geo_grow: i.mi_geo.grow,
            map_size: i.mi_mapsize,
            file_size: i.mi_dxb_fsize,
            last_pgno: i.mi_last_pgno,
            recent_txnid: i.mi_recent_txnid,
            max_readers: i.mi_maxreaders,
            num_readers: i.mi_numreaders,
            unsync_volume: i.mi_unsync_volume,
            autosync_threshold: i.mi_autosync_threshold,
            pgop: {
                let p = i.mi_pgop_stat;
                [
                    p.newly, p.cow, p.clone, p.split, p.merge, p.spill, p.unspill, p.wops, p.prefault, p.mincore,
                    p.msync, p.fsync,
                ]
            },
        })
    }

    /// Maximum key size for tables with `flags` (`mdbx_env_get_maxkeysize_ex`).
    pub fn max_key_size(&self, flags: u32) -> usize {
        // SAFETY: live env.
        unsafe { ffi::mdbx_env_get_maxkeysize_ex(self.env, flags) as usize }
    }

    /// Sets the auto-sync threshold in bytes (`MDBX_opt_sync_bytes`).
    pub fn set_sync_bytes(&self, bytes: u64) -> Result<()> {
        // SAFETY: live env.
        check(unsafe { ffi::mdbx_env_set_option(self.env, ffi::MDBX_opt_sync_bytes, bytes) }, || {
            "mdbx_env_set_option(sync_bytes)".into()
        })
    }

    /// Flush to disk (`mdbx_env_sync_ex(force)`).
    pub fn sync(&self) -> Result<()> {
        // SAFETY: live env.
        let rc = unsafe { ffi::mdbx_env_sync_ex(self.env, true, false) };
        if rc == ffi::MDBX_SUCCESS || rc == ffi::MDBX_RESULT_TRUE {
            Ok(())
        } else {
            Err(format_err("mdbx_env_sync", rc))
        }
    }

    /// `mdbx_env_copy` of the newest snapshot to the new data file `dst`
    /// with `flags` (`MDBX_CP_COMPACT`: libmdbx's own compacting copy,
    /// `MDBX_CP_FORCE_DYNAMIC_SIZE`).
    pub fn copy_to(&self, dst: &Path, flags: ffi::MDBX_copy_flags_t) -> Result<()> {
        let c = cpath(dst)?;
        // SAFETY: live env; `c` is a NUL-terminated path that outlives the call.
        check(unsafe { ffi::mdbx_env_copy(self.env, c.as_ptr(), flags) }, || {
            format!("mdbx_env_copy({dst:?}, flags {flags:#x})")
        })
    }

    /// Run libmdbx's own integrity checker on this open environment.
    pub fn chk(&self) -> Result<ChkSummary> {
        run_chk(self.env)
    }

    /// Close explicitly (also done on drop), reporting the result.
    pub fn close(mut self) -> Result<()> {
        let env = std::mem::replace(&mut self.env, ptr::null_mut());
        // SAFETY: live env, closed exactly once (Drop sees null).
        check(unsafe { ffi::mdbx_env_close_ex(env, false) }, || "mdbx_env_close".into())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if !self.env.is_null() {
            // SAFETY: live env, closed exactly once.
            unsafe {
                ffi::mdbx_env_close_ex(self.env, false);
            }
        }
    }
}

/// A table handle (`MDBX_dbi`).
pub type Dbi = ffi::MDBX_dbi;

/// The main (unnamed) table.
pub const MAIN_DBI: Dbi = 1;

/// A transaction (read-only or read-write). Aborted on drop.
pub struct Txn<'env> {
    txn: *mut ffi::MDBX_txn,
    _env: &'env Env,
    read_only: bool,
}

impl Txn<'_> {
    /// Is this a read-only transaction?
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The transaction id (`mdbx_txn_id`).
    pub fn id(&self) -> u64 {
        // SAFETY: live txn.
        unsafe { ffi::mdbx_txn_id(self.txn) }
    }

    /// Open an existing table with its stored flags (`MDBX_DB_ACCEDE`); `None` = main table.
    pub fn open_table(&self, name: Option<&[u8]>) -> Result<Dbi> {
        self.dbi_open(name, ffi::MDBX_DB_ACCEDE)
    }

    /// Open or create a table with `flags` (`MDBX_CREATE` is added).
    pub fn create_table(&mut self, name: Option<&[u8]>, flags: u32) -> Result<Dbi> {
        self.dbi_open(name, flags | ffi::MDBX_CREATE)
    }

    fn dbi_open(&self, name: Option<&[u8]>, flags: u32) -> Result<Dbi> {
        let mut dbi: Dbi = 0;
        let nv = name.map(val);
        let np = nv.as_ref().map_or(ptr::null(), |v| v as *const ffi::MDBX_val);
        // SAFETY: live txn; name points to a local MDBX_val over a live slice.
        check(unsafe { ffi::mdbx_dbi_open2(self.txn, np, flags, &mut dbi) }, || {
            format!("mdbx_dbi_open({}, flags {flags:#x})", show_name(name))
        })?;
        Ok(dbi)
    }

    /// The persistent flags of a table.
    pub fn table_flags(&self, dbi: Dbi) -> Result<u32> {
        let (mut flags, mut state) = (0u32, 0u32);
        // SAFETY: live txn, out-pointers to locals.
        check(unsafe { ffi::mdbx_dbi_flags_ex(self.txn, dbi, &mut flags, &mut state) }, || {
            format!("mdbx_dbi_flags(dbi {dbi})")
        })?;
        Ok(flags)
    }

    /// Put a record.
    pub fn put(&mut self, dbi: Dbi, key: &[u8], value: &[u8], flags: u32) -> Result<()> {
        let k = val(key);
        let mut v = val(value);
        // SAFETY: live txn, key/value point to live slices (libmdbx copies them).
        check(unsafe { ffi::mdbx_put(self.txn, dbi, &k, &mut v, flags) }, || {
            format!("mdbx_put(dbi {dbi}, key {}, value len {}, flags {flags:#x})", hex_short(key), value.len())
        })
    }

    /// Delete a key (all its values), or one key/value pair. `Ok(false)` if nothing matched.
    pub fn del(&mut self, dbi: Dbi, key: &[u8], value: Option<&[u8]>) -> Result<bool> {
        let k = val(key);
        let v = value.map(val);
        let vp = v.as_ref().map_or(ptr::null(), |v| v as *const ffi::MDBX_val);
        // SAFETY: live txn, pointers to locals over live slices.
        let rc = unsafe { ffi::mdbx_del(self.txn, dbi, &k, vp) };
        if rc == ffi::MDBX_NOTFOUND {
            return Ok(false);
        }
        check(rc, || format!("mdbx_del(dbi {dbi}, key {})", hex_short(key)))?;
        Ok(true)
    }

    /// Get the (first) value of a key.
    pub fn get(&self, dbi: Dbi, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let k = val(key);
        let mut v = empty_val();
        // SAFETY: live txn, pointers to locals.
        let rc = unsafe { ffi::mdbx_get(self.txn, dbi, &k, &mut v) };
        if rc == ffi::MDBX_NOTFOUND {
            return Ok(None);
        }
        check(rc, || format!("mdbx_get(dbi {dbi}, key {})", hex_short(key)))?;
        // SAFETY: on success v points into the map, valid during the txn.
        Ok(Some(unsafe { val_to_vec(&v) }))
    }

    /// Get the (first) value of a key without copying it.
    pub fn get_ref(&self, dbi: Dbi, key: &[u8]) -> Result<Option<&[u8]>> {
        let k = val(key);
        let mut v = empty_val();
        // SAFETY: live txn, pointers to locals.
        let rc = unsafe { ffi::mdbx_get(self.txn, dbi, &k, &mut v) };
        if rc == ffi::MDBX_NOTFOUND {
            return Ok(None);
        }
        check(rc, || format!("mdbx_get(dbi {dbi}, key {})", hex_short(key)))?;
        // SAFETY: v points into the map (or a dirty page of this txn) and stays
        // valid while the txn is borrowed: writes need `&mut self`.
        Ok(Some(unsafe { slice_of(&v) }))
    }

    /// Every (key, value) of a table in cursor order (for DUPSORT tables one
    /// pair per value).
    pub fn read_all(&self, dbi: Dbi) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        self.for_each(dbi, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(())
        })?;
        Ok(out)
    }

    /// Call `f` for every (key, value) in cursor order.
    pub fn for_each(&self, dbi: Dbi, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let cur = Cursor::open(self, dbi)?;
        let mut op = ffi::MDBX_FIRST;
        loop {
            let mut k = empty_val();
            let mut v = empty_val();
            // SAFETY: live cursor, out-pointers to locals.
            let rc = unsafe { ffi::mdbx_cursor_get(cur.0, &mut k, &mut v, op) };
            if rc == ffi::MDBX_NOTFOUND {
                return Ok(());
            }
            check(rc, || format!("mdbx_cursor_get(dbi {dbi}, op {op})"))?;
            // SAFETY: on success k/v point into the map (or are empty),
            // valid until the next cursor operation.
            let (ks, vs) = unsafe { (slice_of(&k), slice_of(&v)) };
            f(ks, vs)?;
            op = ffi::MDBX_NEXT;
        }
    }

    /// Walks every record with one cursor, deleting at the cursor each one
    /// `pick` selects (`mdbx_cursor_del`: the cursor then stands on the
    /// successor, which the next `MDBX_NEXT` returns). Returns the records
    /// walked and deleted.
    pub fn walk_delete(&mut self, dbi: Dbi, mut pick: impl FnMut(&[u8], &[u8]) -> bool) -> Result<(u64, u64)> {
        let cur = Cursor::open(self, dbi)?;
        let (mut walked, mut deleted) = (0, 0);
        let mut op = ffi::MDBX_FIRST;
        loop {
            let mut k = empty_val();
            let mut v = empty_val();
            // SAFETY: live cursor, out-pointers to locals.
            let rc = unsafe { ffi::mdbx_cursor_get(cur.0, &mut k, &mut v, op) };
            if rc == ffi::MDBX_NOTFOUND {
                return Ok((walked, deleted));
            }
            check(rc, || format!("mdbx_cursor_get(dbi {dbi}, op {op})"))?;
            walked += 1;
            // On success k/v point into the map (or are empty), valid until
            // the next cursor operation, which comes after `pick`.
            // SAFETY: those pointers are valid for their lengths meanwhile.
            let (ks, vs) = unsafe { (slice_of(&k), slice_of(&v)) };
            if pick(ks, vs) {
                // SAFETY: live cursor of this write transaction, on a record.
                check(unsafe { ffi::mdbx_cursor_del(cur.0, ffi::MDBX_CURRENT) }, || "mdbx_cursor_del".into())?;
                deleted += 1;
            }
            op = ffi::MDBX_NEXT;
        }
    }

    /// Names of the named tables, in main-table key order: keys of the main
    /// table that open as tables (as `mdbx_dump -a` finds them).
    pub fn table_names(&self) -> Result<Vec<Vec<u8>>> {
        let keys: Vec<Vec<u8>> = {
            let mut ks = Vec::new();
            self.for_each(MAIN_DBI, |k, _| {
                ks.push(k.to_vec());
                Ok(())
            })?;
            ks
        };
        let flags = self.table_flags(MAIN_DBI)?;
        if flags & (ffi::MDBX_DUPSORT | ffi::MDBX_INTEGERKEY) != 0 {
            return Ok(Vec::new());
        }
        let mut names = Vec::new();
        for k in keys {
            if k.is_empty() || k.contains(&0) {
                continue;
            }
            match self.dbi_open(Some(&k), ffi::MDBX_DB_ACCEDE) {
                Ok(_) => names.push(k),
                Err(e) if error_code(&e) == Some(ffi::MDBX_INCOMPATIBLE) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(names)
    }

    /// Statistics of a table.
    pub fn stat(&self, dbi: Dbi) -> Result<Stat> {
        // SAFETY: MDBX_stat is plain old data.
        let mut s: ffi::MDBX_stat = unsafe { std::mem::zeroed() };
        // SAFETY: live txn, out-pointer with its size.
        check(unsafe { ffi::mdbx_dbi_stat(self.txn, dbi, &mut s, std::mem::size_of::<ffi::MDBX_stat>()) }, || {
            format!("mdbx_dbi_stat(dbi {dbi})")
        })?;
        Ok(s.into())
    }

    /// `mdbx_estimate_range` between two keys (`None`: the table's start or
    /// end): libmdbx's estimate of the records in `[lo, hi)`.
    pub fn estimate_range(&self, dbi: Dbi, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<isize> {
        let val = |k: &[u8]| ffi::MDBX_val { iov_base: k.as_ptr() as *mut std::ffi::c_void, iov_len: k.len() };
        let (lo, hi) = (lo.map(val), hi.map(val));
        let at = |v: &Option<ffi::MDBX_val>| v.as_ref().map_or(ptr::null(), |v| v as *const ffi::MDBX_val);
        let mut d: isize = 0;
        // `at` gives null for the table's start or end; no values are given.
        // SAFETY: live txn, and the keys `lo` and `hi` point into outlive the call.
        let rc = unsafe { ffi::mdbx_estimate_range(self.txn, dbi, at(&lo), ptr::null(), at(&hi), ptr::null(), &mut d) };
        check(rc, || format!("mdbx_estimate_range(dbi {dbi})"))?;
        Ok(d)
    }

    /// Bytes of the pages this write transaction has dirtied
    /// (`mdbx_txn_info`'s `txn_space_dirty`).
    pub fn space_dirty(&self) -> Result<u64> {
        // SAFETY: MDBX_txn_info is plain old data.
        let mut i: ffi::MDBX_txn_info = unsafe { std::mem::zeroed() };
        // SAFETY: live txn, valid out-pointer.
        check(unsafe { ffi::mdbx_txn_info(self.txn, &mut i, false) }, || "mdbx_txn_info".into())?;
        Ok(i.txn_space_dirty)
    }

    /// Empty a table (`delete = false`) or delete it (`delete = true`).
    pub fn drop_table(&mut self, dbi: Dbi, delete: bool) -> Result<()> {
        // SAFETY: live txn.
        check(unsafe { ffi::mdbx_drop(self.txn, dbi, delete) }, || format!("mdbx_drop(dbi {dbi}, delete {delete})"))
    }

    /// Parks a read transaction (`mdbx_txn_park`).
    pub fn park(&mut self, autounpark: bool) -> Result<()> {
        // SAFETY: live txn.
        check(unsafe { ffi::mdbx_txn_park(self.txn, autounpark) }, || "mdbx_txn_park".into())
    }

    /// Unparks a parked read transaction (`mdbx_txn_unpark`); the raw code
    /// (0, `MDBX_OUSTED`, …).
    pub fn unpark(&mut self, restart_if_ousted: bool) -> i32 {
        // SAFETY: live txn.
        unsafe { ffi::mdbx_txn_unpark(self.txn, restart_if_ousted) }
    }

    /// Commit (for read-only transactions: end it).
    pub fn commit(mut self) -> Result<()> {
        let txn = std::mem::replace(&mut self.txn, ptr::null_mut());
        // SAFETY: live txn, ended exactly once (Drop sees null).
        check(unsafe { ffi::mdbx_txn_commit_ex(txn, ptr::null_mut()) }, || "mdbx_txn_commit".into())
    }

    /// Abort.
    pub fn abort(self) {
        drop(self)
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.txn.is_null() {
            // SAFETY: live txn, ended exactly once.
            unsafe {
                ffi::mdbx_txn_abort_ex(self.txn, ptr::null_mut());
            }
        }
    }
}

/// # Safety
/// As for [`val_to_vec`]; the slice lives as long as the data it points to.
unsafe fn slice_of<'a>(v: &ffi::MDBX_val) -> &'a [u8] {
    if v.iov_len == 0 || v.iov_base.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }
    }
}

struct Cursor(*mut ffi::MDBX_cursor);

impl Cursor {
    fn open(txn: &Txn<'_>, dbi: Dbi) -> Result<Cursor> {
        let mut c: *mut ffi::MDBX_cursor = ptr::null_mut();
        // SAFETY: live txn, out-pointer to a local.
        check(unsafe { ffi::mdbx_cursor_open(txn.txn, dbi, &mut c) }, || format!("mdbx_cursor_open(dbi {dbi})"))?;
        Ok(Cursor(c))
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        // SAFETY: live cursor, closed once.
        unsafe { ffi::mdbx_cursor_close(self.0) }
    }
}

fn show_name(name: Option<&[u8]>) -> String {
    match name {
        None => "<main>".into(),
        Some(n) => format!("{:?}", String::from_utf8_lossy(n)),
    }
}

fn hex_short(b: &[u8]) -> String {
    let mut s: String = b.iter().take(24).map(|x| format!("{x:02x}")).collect();
    if b.len() > 24 {
        s.push_str(&format!("..({} bytes)", b.len()));
    }
    if s.is_empty() {
        s.push_str("<empty>");
    }
    s
}

// ---------------------------------------------------------------------------
// mdbx_env_chk

/// One table as `mdbx_env_chk` accounted it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChkTable {
    /// `None` for the main table; `Some(b"@GC")` for the GC, `Some(b"@META")` for the metas.
    pub name: Option<Vec<u8>>,
    pub id: i32,
    pub flags: u32,
    pub pages_all: usize,
    pub pages_empty: usize,
    pub pages_broken: usize,
    pub branch: usize,
    pub leaf: usize,
    pub nested_branch: usize,
    pub nested_leaf: usize,
    pub nested_subleaf: usize,
    pub payload_bytes: usize,
    pub lost_bytes: usize,
}

/// What `mdbx_env_chk` reported.
#[derive(Clone, Debug, Default)]
pub struct ChkSummary {
    /// Return code of `mdbx_env_chk` (0, or `MDBX_PROBLEM` when problems were counted).
    pub rc: i32,
    pub total_problems: usize,
    pub problems_meta: usize,
    pub tree_problems: usize,
    pub gc_tree_problems: usize,
    pub kv_tree_problems: usize,
    pub problems_gc: usize,
    pub problems_kv: usize,
    pub processed_pages: usize,
    pub reclaimable_pages: usize,
    pub gc_pages: usize,
    pub alloc_pages: usize,
    pub backed_pages: usize,
    pub unused_pages: usize,
    pub recent_txnid: u64,
    pub steady_txnid: u64,
    pub tables: Vec<ChkTable>,
    /// Lines of severity error/fatal (each of them was counted as a problem).
    pub error_lines: Vec<String>,
    /// Every printed line (up to the "info" verbosity), with its severity.
    pub lines: Vec<(u8, String)>,
}

impl ChkSummary {
    /// All problem counters added up.
    pub fn problems(&self) -> usize {
        self.total_problems
            + self.problems_meta
            + self.tree_problems
            + self.gc_tree_problems
            + self.kv_tree_problems
            + self.problems_gc
            + self.problems_kv
    }

    /// No problem counted and a zero return code.
    pub fn is_clean(&self) -> bool {
        self.rc == 0 && self.problems() == 0 && self.error_lines.is_empty()
    }

    /// The report as text (one line per printed line).
    pub fn report(&self) -> String {
        let mut s = String::new();
        for (sev, l) in &self.lines {
            s.push_str(&format!("[{sev:#04x}] {l}\n"));
        }
        s
    }
}

/// Open `path` read-only (NOSUBDIR detected from the path) and run `mdbx_env_chk`.
/// `Err` only if the check could not run (open failure); problems found are in
/// the summary (`is_clean()`).
pub fn chk(path: impl AsRef<Path>) -> Result<ChkSummary> {
    let env = Env::open(path, &EnvOptions { read_only: true, ..EnvOptions::default() })?;
    let s = env.chk()?;
    env.close()?;
    Ok(s)
}

#[repr(C)]
struct ChkCtx {
    ctx: ffi::MDBX_chk_context_t,
    lines: Vec<(u8, String)>,
    tables: Vec<ChkTable>,
}

/// libmdbx's `table_dispose` callback of `mdbx_env_chk`: records one table's
/// figures.
///
/// # Safety
/// Called by libmdbx only, with `ctx` the `ctx` field (the first) of the live
/// `ChkCtx` passed to `mdbx_env_chk` and `table` valid for the call.
unsafe extern "C" fn chk_table_dispose(ctx: *mut ffi::MDBX_chk_context_t, table: *const ffi::MDBX_chk_table_t) {
    // SAFETY: ctx is the first field of our ChkCtx; table is live during the call.
    unsafe {
        let c = &mut *(ctx as *mut ChkCtx);
        let t = &*table;
        let base = t.name.iov_base as isize;
        let name = match base {
            0 => None,
            -1 => Some(b"@GC".to_vec()),
            -2 => Some(b"@META".to_vec()),
            _ => Some(val_to_vec(&t.name)),
        };
        c.tables.push(ChkTable {
            name,
            id: t.id,
            flags: t.flags,
            pages_all: t.pages.all,
            pages_empty: t.pages.empty,
            pages_broken: t.pages.broken,
            branch: t.pages.branch,
            leaf: t.pages.leaf,
            nested_branch: t.pages.nested_branch,
            nested_leaf: t.pages.nested_leaf,
            nested_subleaf: t.pages.nested_subleaf,
            payload_bytes: t.payload_bytes,
            lost_bytes: t.lost_bytes,
        });
    }
}

#[repr(C)]
struct ChkLine {
    line: ffi::MDBX_chk_line_t,
    text: Vec<u8>,
    buf: [u8; 512],
}

const CHK_VERBOSITY: ffi::MDBX_chk_severity_t = ffi::MDBX_chk_info;

unsafe extern "C" fn chk_print_begin(
    ctx: *mut ffi::MDBX_chk_context_t,
    severity: ffi::MDBX_chk_severity_t,
) -> *mut ffi::MDBX_chk_line_t {
    let _ = ctx;
    if severity > CHK_VERBOSITY {
        return ptr::null_mut();
    }
    let mut l = Box::new(ChkLine {
        // SAFETY: MDBX_chk_line_t is plain old data (null pointers, zeros).
        line: unsafe { std::mem::zeroed() },
        text: Vec::new(),
        buf: [0; 512],
    });
    let begin = l.buf.as_mut_ptr() as *mut libc::c_char;
    l.line.severity = severity as u8;
    l.line.empty = 1;
    l.line.begin = begin;
    l.line.out = begin;
    // SAFETY: within the same 512-byte buffer.
    l.line.end = unsafe { begin.add(l.buf.len()) };
    // The line is the first field of a repr(C) struct: the pointers coincide.
    Box::into_raw(l) as *mut ffi::MDBX_chk_line_t
}

/// # Safety
/// `line` must come from `chk_print_begin`.
unsafe fn chk_take(line: *mut ffi::MDBX_chk_line_t) {
    // SAFETY: line is the first field of a live ChkLine.
    let l = unsafe { &mut *(line as *mut ChkLine) };
    let n = l.line.out as usize - l.line.begin as usize;
    l.text.extend_from_slice(&l.buf[..n]);
    l.line.out = l.line.begin;
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" {
    // `va_list` on x86_64 SysV is `__va_list_tag[1]`, passed as a pointer.
    fn vsnprintf(
        buf: *mut libc::c_char,
        size: usize,
        fmt: *const libc::c_char,
        ap: *mut ffi::__va_list_tag,
    ) -> libc::c_int;
}

/// libmdbx's built-in formatting (used when no `print_format` callback is
/// given) drops the last character of every formatted piece, so format here.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" fn chk_print_format(
    line: *mut ffi::MDBX_chk_line_t,
    fmt: *const libc::c_char,
    args: *mut ffi::__va_list_tag,
) {
    // SAFETY: line comes from chk_print_begin; fmt/args are a valid printf
    // format and its arguments. Copying the one-element __va_list_tag array is
    // what va_copy does on x86_64, so the arguments can be walked twice.
    unsafe {
        let mut copy = *args;
        let n = vsnprintf(ptr::null_mut(), 0, fmt, &mut copy);
        if n <= 0 {
            return;
        }
        let mut buf = vec![0u8; n as usize + 1];
        vsnprintf(buf.as_mut_ptr() as *mut libc::c_char, buf.len(), fmt, args);
        chk_take(line);
        let l = &mut *(line as *mut ChkLine);
        l.text.extend_from_slice(&buf[..n as usize]);
        l.line.empty = 0;
    }
}

/// Scope headers ("Processing table X...") become lines of their own.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" fn chk_scope_push(
    ctx: *mut ffi::MDBX_chk_context_t,
    outer: *mut ffi::MDBX_chk_scope_t,
    _inner: *mut ffi::MDBX_chk_scope_t,
    fmt: *const libc::c_char,
    args: *mut ffi::__va_list_tag,
) -> libc::c_int {
    if fmt.is_null() {
        return 0;
    }
    // SAFETY: as in chk_print_format; ctx is the first field of our ChkCtx.
    unsafe {
        let mut copy = *args;
        let n = vsnprintf(ptr::null_mut(), 0, fmt, &mut copy);
        if n > 0 {
            let mut buf = vec![0u8; n as usize + 1];
            vsnprintf(buf.as_mut_ptr() as *mut libc::c_char, buf.len(), fmt, args);
            let c = &mut *(ctx as *mut ChkCtx);
            let depth = if outer.is_null() { 0 } else { (*ctx).scope_nesting as usize };
            let text = format!("{}- {}", "  ".repeat(depth), String::from_utf8_lossy(&buf[..n as usize]));
            c.lines.push((ffi::MDBX_chk_processing as u8, text));
        }
    }
    0
}

unsafe extern "C" fn chk_print_flush(line: *mut ffi::MDBX_chk_line_t) {
    // SAFETY: called by libmdbx with a line from chk_print_begin.
    unsafe { chk_take(line) }
}

unsafe extern "C" fn chk_print_done(line: *mut ffi::MDBX_chk_line_t) {
    // SAFETY: called by libmdbx with a line from chk_print_begin, once, at its end.
    unsafe {
        chk_take(line);
        let l = Box::from_raw(line as *mut ChkLine);
        let ctx = l.line.ctx as *mut ChkCtx;
        if !ctx.is_null() {
            let depth = l.line.scope_depth as usize;
            let text = format!("{}{}", "  ".repeat(depth), String::from_utf8_lossy(&l.text));
            (*ctx).lines.push((l.line.severity, text));
        }
    }
}

fn run_chk(env: *mut ffi::MDBX_env) -> Result<ChkSummary> {
    // SAFETY: MDBX_chk_callbacks_t is a struct of Options (None = null).
    let mut cb: ffi::MDBX_chk_callbacks_t = unsafe { std::mem::zeroed() };
    cb.print_begin = Some(chk_print_begin);
    cb.print_flush = Some(chk_print_flush);
    cb.print_done = Some(chk_print_done);
    cb.table_dispose = Some(chk_table_dispose);
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        cb.print_format = Some(chk_print_format);
        cb.scope_push = Some(chk_scope_push);
    }
    let mut c = Box::new(ChkCtx {
        // SAFETY: the context must start zeroed (libmdbx requires internal == NULL).
        ctx: unsafe { std::mem::zeroed() },
        lines: Vec::new(),
        tables: Vec::new(),
    });
    // SAFETY: live env; cb and ctx outlive the call; ctx is the first field of
    // ChkCtx so the callbacks can reach `lines`.
    let rc = unsafe { ffi::mdbx_env_chk(env, &cb, &mut c.ctx, ffi::MDBX_CHK_DEFAULTS, CHK_VERBOSITY, 0) };
    let r = &c.ctx.result;
    let mut s = ChkSummary {
        rc,
        total_problems: r.total_problems,
        problems_meta: r.problems_meta,
        tree_problems: r.tree_problems,
        gc_tree_problems: r.gc_tree_problems,
        kv_tree_problems: r.kv_tree_problems,
        problems_gc: r.problems_gc,
        problems_kv: r.problems_kv,
        processed_pages: r.processed_pages,
        reclaimable_pages: r.reclaimable_pages,
        gc_pages: r.gc_pages,
        alloc_pages: r.alloc_pages,
        backed_pages: r.backed_pages,
        unused_pages: r.unused_pages,
        recent_txnid: r.recent_txnid,
        steady_txnid: r.steady_txnid,
        tables: std::mem::take(&mut c.tables),
        error_lines: Vec::new(),
        lines: std::mem::take(&mut c.lines),
    };
    // `result.tables` points into the checker's internal state, which
    // mdbx_env_chk frees before returning: the tables were copied by
    // `chk_table_dispose` instead.
    s.tables.sort_by_key(|t| t.id);
    s.error_lines =
        s.lines.iter().filter(|(sev, _)| (*sev as u32) < ffi::MDBX_chk_warning).map(|(_, l)| l.clone()).collect();
    if rc != 0 && rc != ffi::MDBX_PROBLEM {
        return Err(format!("{}\n{}", format_err("mdbx_env_chk", rc), s.report()));
    }
    Ok(s)
}

// ---------------------------------------------------------------------------
// Whole-database views

/// Every table of the database as dump sections (bytevalue format): the main
/// table's plain records first (only if it has any record that is not a named
/// table; unlike `mdbx_dump -a`, they are not left out when named tables
/// exist), then each named table in main-table key order.
pub fn dump_sections(txn: &Txn<'_>) -> Result<Vec<crate::golden::DumpSection>> {
    use crate::golden::DumpSection;
    let names = txn.table_names()?;
    let mut out = Vec::new();
    let main_flags = txn.table_flags(MAIN_DBI)?;
    let mut main = DumpSection::new(None, main_flags);
    let name_set: std::collections::HashSet<&[u8]> = names.iter().map(|n| n.as_slice()).collect();
    txn.for_each(MAIN_DBI, |k, v| {
        if !name_set.contains(k) {
            main.records.push((k.to_vec(), v.to_vec()));
        }
        Ok(())
    })?;
    if !main.records.is_empty() || names.is_empty() {
        out.push(main);
    }
    for n in &names {
        let dbi = txn.open_table(Some(n))?;
        let mut s = DumpSection::new(Some(n), txn.table_flags(dbi)?);
        s.records = txn.read_all(dbi)?;
        out.push(s);
    }
    Ok(out)
}

/// Statistics of the main table (`None`) and every named table.
pub fn all_stats(txn: &Txn<'_>) -> Result<Vec<(Option<Vec<u8>>, Stat)>> {
    let mut out = vec![(None, txn.stat(MAIN_DBI)?)];
    for n in txn.table_names()? {
        let dbi = txn.open_table(Some(&n))?;
        out.push((Some(n), txn.stat(dbi)?));
    }
    Ok(out)
}

/// Format statistics like `mdbx_stat -a` ("Status of NAME" blocks), so
/// [`crate::golden::parse_stat`] reads them back.
pub fn format_stats(stats: &[(Option<Vec<u8>>, Stat)]) -> String {
    let mut s = String::new();
    for (name, st) in stats {
        let n = match name {
            None => "Main DB".to_string(),
            Some(n) => String::from_utf8_lossy(n).into_owned(),
        };
        s.push_str(&format!(
            "Status of {n}\n  Pagesize: {}\n  Tree depth: {}\n  Branch pages: {}\n  Leaf pages: {}\n  Large/Overflow pages: {}\n  Entries: {}\n",
            st.page_size, st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries
        ));
    }
    s
}

/// Copy a golden database (file `NAME.mdbx` or directory `NAME/`) into `dir`,
/// writable, and return the path to open.
pub fn copy_golden(name: &str, dir: &Path) -> std::io::Result<PathBuf> {
    let src = crate::golden::golden_dir();
    let file = src.join(format!("{name}.mdbx"));
    if file.is_file() {
        let dst = dir.join(format!("{name}.mdbx"));
        std::fs::copy(&file, &dst)?;
        let mut p = std::fs::metadata(&dst)?.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        p.set_readonly(false);
        std::fs::set_permissions(&dst, p)?;
        return Ok(dst);
    }
    let d = src.join(name);
    let dst = dir.join(name);
    std::fs::create_dir_all(&dst)?;
    let data = dst.join("mdbx.dat");
    std::fs::copy(d.join("mdbx.dat"), &data)?;
    let mut p = std::fs::metadata(&data)?.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    std::fs::set_permissions(&data, p)?;
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::golden;

    const GOLDEN: [&str; 4] = ["g1", "g2", "g3", "gmain"];

    #[test]
    fn oracle_reads_golden_databases_like_the_dumps() {
        let tmp = tempfile::tempdir().unwrap();
        for name in GOLDEN {
            let path = copy_golden(name, tmp.path()).unwrap();
            let dump = std::fs::read(golden::golden_dir().join(format!("{name}.dump"))).unwrap();
            let want = golden::parse_dump(&dump).unwrap();
            let env = Env::open(&path, &EnvOptions { read_only: true, ..Default::default() }).unwrap();
            let txn = env.begin_ro().unwrap();
            let got = dump_sections(&txn).unwrap();
            assert_eq!(got.len(), want.len(), "{name}: number of sections");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.name, w.name, "{name}");
                assert_eq!(g.flags, w.flags, "{name} {}", w.display_name());
                assert_eq!(g.records.len(), w.records.len(), "{name} {}", w.display_name());
                assert!(g.records == w.records, "{name} {}: records differ", w.display_name());
            }
            // Point lookups agree too (first value of each key).
            for w in &want {
                let dbi = txn.open_table(w.name.as_deref()).unwrap();
                let mut last: Option<&[u8]> = None;
                for (k, v) in &w.records {
                    if last == Some(k.as_slice()) {
                        continue;
                    }
                    last = Some(k);
                    assert_eq!(txn.get(dbi, k).unwrap().as_deref(), Some(v.as_slice()));
                }
            }
            let stat_text = std::fs::read_to_string(golden::golden_dir().join(format!("{name}.stat"))).unwrap();
            let want_stats = golden::parse_stat(&stat_text).unwrap();
            for (n, st) in all_stats(&txn).unwrap() {
                let w = want_stats[&n];
                let g = golden::StatFigures {
                    page_size: st.page_size as u64,
                    depth: st.depth as u64,
                    branch_pages: st.branch_pages,
                    leaf_pages: st.leaf_pages,
                    overflow_pages: st.overflow_pages,
                    entries: st.entries,
                };
                assert_eq!(g, w, "{name} {:?}", n.as_deref().map(String::from_utf8_lossy));
            }
            drop(txn);
            env.close().unwrap();
        }
    }

    #[test]
    fn chk_is_clean_on_golden_databases() {
        let tmp = tempfile::tempdir().unwrap();
        for name in GOLDEN {
            let path = copy_golden(name, tmp.path()).unwrap();
            let s = chk(&path).unwrap();
            assert!(s.is_clean(), "{name}: {s:?}\n{}", s.report());
            assert!(s.processed_pages > 0, "{name}");
            assert!(s.tables.iter().any(|t| t.name.is_none()), "{name}: main table accounted: {:?}", s.tables);
        }
    }

    #[test]
    fn chk_counts_problems_on_a_damaged_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let path = copy_golden("g1", tmp.path()).unwrap();
        // Find the leaf pages of table `many` and scribble over one of them.
        let mut data = std::fs::read(&path).unwrap();
        let ps = 4096;
        let mut hit = 0;
        for pg in 3..data.len() / ps {
            let p = &mut data[pg * ps..(pg + 1) * ps];
            // Page header: flags at offset 10 (u16), 0x02 = leaf.
            let flags = u16::from_le_bytes([p[10], p[11]]);
            if flags == 0x02 {
                hit += 1;
                if hit == 50 {
                    // A page written "in the future": mod-txnid far beyond the
                    // last transaction (offset 0, u64). libmdbx reports it
                    // without tripping its debug assertions.
                    p[..8].copy_from_slice(&1_000_000u64.to_le_bytes());
                    break;
                }
            }
        }
        assert_eq!(hit, 50, "found leaf pages to damage");
        std::fs::write(&path, &data).unwrap();
        match chk(&path) {
            Ok(s) => assert!(!s.is_clean(), "damage not found: {s:?}"),
            Err(e) => assert!(e.contains("MDBX error"), "{e}"),
        }
    }

    #[test]
    fn write_and_read_back_with_the_oracle() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("w.mdbx");
        let env = Env::open(
            &path,
            &EnvOptions {
                no_sub_dir: Some(true),
                page_size: Some(4096),
                durability: Durability::SafeNoSync,
                ..Default::default()
            },
        )
        .unwrap();
        let mut t = env.begin_rw().unwrap();
        let a = t.create_table(Some(b"a"), 0).unwrap();
        let i = t.create_table(Some(b"i"), MDBX_INTEGERKEY).unwrap();
        t.put(a, b"k1", b"v1", 0).unwrap();
        t.put(a, b"", b"", 0).unwrap();
        t.put(i, &7u64.to_ne_bytes(), &[1; 5000], 0).unwrap();
        let e = t.put(a, b"k1", b"x", MDBX_NOOVERWRITE).unwrap_err();
        assert_eq!(error_code(&e), Some(MDBX_KEYEXIST), "{e}");
        t.commit().unwrap();
        let mut t = env.begin_rw().unwrap();
        let a = t.open_table(Some(b"a")).unwrap();
        assert!(t.del(a, b"k1", None).unwrap());
        assert!(!t.del(a, b"nope", None).unwrap());
        t.commit().unwrap();
        let t = env.begin_ro().unwrap();
        assert_eq!(t.table_names().unwrap(), vec![b"a".to_vec(), b"i".to_vec()]);
        let a = t.open_table(Some(b"a")).unwrap();
        assert_eq!(t.read_all(a).unwrap(), vec![(vec![], vec![])]);
        let i = t.open_table(Some(b"i")).unwrap();
        assert_eq!(t.table_flags(i).unwrap(), MDBX_INTEGERKEY);
        assert_eq!(t.stat(i).unwrap().overflow_pages, 2);
        drop(t);
        env.close().unwrap();
        let s = chk(&path).unwrap();
        assert!(s.is_clean(), "{}", s.report());
    }
}
