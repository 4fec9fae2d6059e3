//! `mdbx013`: the real libmdbx 0.13 (lock format v6) as a command-line tool,
//! so that rdbx's tests can run it in a process of its own next to rdbx.
//!
//! ```text
//! mdbx013 write DB [--mode M] OP...  one write transaction; OP is KEY=VALUE
//!                                    (put) or -KEY (delete), main table
//! mdbx013 read DB                    every KEY=VALUE of the main table, in order
//! mdbx013 chk DB                     mdbx_env_chk; prints the problems
//! mdbx013 reader-check DB            mdbx_reader_check; prints dead=N
//! mdbx013 session DB [--mode M] [--ro]
//!                                    keeps the database open and answers
//!                                    commands on stdin, one per line:
//!     put K V | del K                (in a write transaction begun on demand)
//!     commit | abort
//!     read                           KEY=VALUE lines of a fresh snapshot, then "end"
//!     begin-read                     hold a read transaction ("ok txnid=N")
//!     held                           KEY=VALUE lines of the held snapshot, then "end"
//!     end-read                       end the held read transaction
//!     readers                        "slot pid txnid" lines, then "end"
//!     reader-check                   "ok dead=N"
//!     quit                           close and exit (also at the end of stdin)
//!   it prints "ready pid=PID" once open; every command answers "ok ..." or
//!   "error CODE MESSAGE" (and the session goes on).
//! ```
//! M (durability): durable (default), nometasync, safenosync, utterlynosync.
//! Exit codes: 0 success, 1 chk found problems, 2 error (message on stderr,
//! with libmdbx's error name, e.g. MDBX_VERSION_MISMATCH).

use std::ffi::{CStr, CString};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::ptr;

use mdbx_sys as ffi;

/// An error of libmdbx: its code and message.
struct MdbxError(i32);

impl std::fmt::Display for MdbxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: mdbx_strerror returns a pointer to a static or thread-local
        // NUL-terminated string for any code.
        let msg = unsafe { CStr::from_ptr(ffi::mdbx_strerror(self.0)) };
        let name = match self.0 {
            ffi::MDBX_VERSION_MISMATCH => " MDBX_VERSION_MISMATCH",
            ffi::MDBX_INCOMPATIBLE => " MDBX_INCOMPATIBLE",
            ffi::MDBX_BUSY => " MDBX_BUSY",
            ffi::MDBX_INVALID => " MDBX_INVALID",
            ffi::MDBX_PANIC => " MDBX_PANIC",
            _ => "",
        };
        write!(f, "{}{name} {}", self.0, msg.to_string_lossy())
    }
}

fn check(rc: i32) -> Result<(), MdbxError> {
    if rc == ffi::MDBX_SUCCESS {
        Ok(())
    } else {
        Err(MdbxError(rc))
    }
}

fn mode_flags(m: &str) -> Result<u32, String> {
    Ok(match m {
        "durable" => ffi::MDBX_SYNC_DURABLE,
        "nometasync" => ffi::MDBX_NOMETASYNC,
        "safenosync" => ffi::MDBX_SAFE_NOSYNC,
        "utterlynosync" => ffi::MDBX_UTTERLY_NOSYNC,
        _ => return Err(format!("unknown mode {m:?}")),
    })
}

/// An open environment (closed on drop).
struct Env(*mut ffi::MDBX_env);

impl Env {
    fn open(path: &str, flags: u32) -> Result<Env, MdbxError> {
        let mut env = ptr::null_mut();
        // SAFETY: env is an out-pointer for the new handle.
        check(unsafe { ffi::mdbx_env_create(&mut env) })?;
        let env = Env(env);
        let c = CString::new(path).map_err(|_| MdbxError(ffi::MDBX_EINVAL))?;
        // Read transactions are not tied to threads: a session holds one and
        // begins others on the same thread.
        let flags = flags | ffi::MDBX_NOSTICKYTHREADS;
        // SAFETY: a created, not yet opened handle and a NUL-terminated path.
        check(unsafe { ffi::mdbx_env_open(env.0, c.as_ptr(), flags as _, 0o644) })?;
        Ok(env)
    }

    fn begin(&self, read_only: bool) -> Result<Txn, MdbxError> {
        let mut txn = ptr::null_mut();
        let flags = if read_only { ffi::MDBX_TXN_RDONLY } else { ffi::MDBX_TXN_READWRITE };
        // SAFETY: an open env; txn is an out-pointer.
        check(unsafe { ffi::mdbx_txn_begin_ex(self.0, ptr::null_mut(), flags as _, &mut txn, ptr::null_mut()) })?;
        Ok(Txn(txn))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: the handle is ours; every transaction was ended before.
        unsafe { ffi::mdbx_env_close_ex(self.0, false) };
    }
}

/// Records of a table: (key, value) in order.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// A transaction (aborted on drop unless committed).
struct Txn(*mut ffi::MDBX_txn);

fn val(b: &[u8]) -> ffi::MDBX_val {
    ffi::MDBX_val { iov_base: b.as_ptr() as *mut _, iov_len: b.len() }
}

fn bytes(v: &ffi::MDBX_val) -> Vec<u8> {
    if v.iov_len == 0 {
        return Vec::new();
    }
    // SAFETY: libmdbx returned a valid (base, len) pair inside the map.
    unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }.to_vec()
}

impl Txn {
    fn id(&self) -> u64 {
        // SAFETY: a live transaction.
        unsafe { ffi::mdbx_txn_id(self.0) }
    }

    /// `mdbx_txn_park(txn, autounpark = false)`.
    fn park(&self) -> Result<(), MdbxError> {
        // SAFETY: a live read-only transaction.
        check(unsafe { ffi::mdbx_txn_park(self.0, false) })
    }

    /// `mdbx_txn_unpark(txn, restart_if_ousted = false)`: its return code.
    fn unpark(&self) -> i32 {
        // SAFETY: a live (parked) read-only transaction.
        unsafe { ffi::mdbx_txn_unpark(self.0, false) }
    }

    fn main_dbi(&self) -> Result<ffi::MDBX_dbi, MdbxError> {
        let mut dbi = 0;
        // SAFETY: a live transaction; NULL name = the main table.
        check(unsafe { ffi::mdbx_dbi_open(self.0, ptr::null(), 0 as _, &mut dbi) })?;
        Ok(dbi)
    }

    fn put(&self, k: &[u8], v: &[u8]) -> Result<(), MdbxError> {
        let dbi = self.main_dbi()?;
        let key = val(k);
        let mut data = val(v);
        // SAFETY: a live write transaction; key and data point into live slices.
        check(unsafe { ffi::mdbx_put(self.0, dbi, &key, &mut data, ffi::MDBX_UPSERT as _) })
    }

    fn del(&self, k: &[u8]) -> Result<(), MdbxError> {
        let dbi = self.main_dbi()?;
        let key = val(k);
        // SAFETY: a live write transaction; NULL data = every value of the key.
        match unsafe { ffi::mdbx_del(self.0, dbi, &key, ptr::null()) } {
            ffi::MDBX_NOTFOUND => Ok(()),
            rc => check(rc),
        }
    }

    /// Every (key, value) of the main table, in order.
    fn scan(&self) -> Result<Records, MdbxError> {
        let dbi = self.main_dbi()?;
        let mut cur = ptr::null_mut();
        // SAFETY: a live transaction and an open dbi; cur is an out-pointer.
        check(unsafe { ffi::mdbx_cursor_open(self.0, dbi, &mut cur) })?;
        let mut out = Vec::new();
        let mut op = ffi::MDBX_FIRST;
        let rc = loop {
            let mut k = val(&[]);
            let mut v = val(&[]);
            // SAFETY: a live cursor; k and v are out-parameters.
            match unsafe { ffi::mdbx_cursor_get(cur, &mut k, &mut v, op) } {
                ffi::MDBX_SUCCESS => out.push((bytes(&k), bytes(&v))),
                ffi::MDBX_NOTFOUND => break ffi::MDBX_SUCCESS,
                rc => break rc,
            }
            op = ffi::MDBX_NEXT;
        };
        // SAFETY: the cursor is ours and not used again.
        unsafe { ffi::mdbx_cursor_close(cur) };
        check(rc)?;
        Ok(out)
    }

    fn commit(mut self) -> Result<(), MdbxError> {
        let t = std::mem::replace(&mut self.0, ptr::null_mut());
        // SAFETY: a live transaction, ended here (also on failure).
        check(unsafe { ffi::mdbx_txn_commit_ex(t, ptr::null_mut()) })
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a live transaction, ended here.
            unsafe { ffi::mdbx_txn_abort(self.0) };
        }
    }
}

fn print_records(out: &mut impl Write, recs: &Records) {
    for (k, v) in recs {
        let _ = writeln!(out, "{}={}", String::from_utf8_lossy(k), String::from_utf8_lossy(v));
    }
}

fn parse_opts(rest: &[String]) -> Result<(u32, bool, Vec<String>), String> {
    let mut flags = 0u32;
    let mut ro = false;
    let mut args = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--mode" => flags |= mode_flags(it.next().ok_or("--mode needs a value")?)?,
            "--ro" => ro = true,
            _ => args.push(a.clone()),
        }
    }
    if ro {
        flags |= ffi::MDBX_RDONLY;
    }
    Ok((flags, ro, args))
}

fn write(db: &str, rest: &[String]) -> Result<(), String> {
    let (flags, _, ops) = parse_opts(rest)?;
    let env = Env::open(db, flags).map_err(|e| format!("open {db}: {e}"))?;
    let txn = env.begin(false).map_err(|e| format!("begin: {e}"))?;
    for op in &ops {
        if let Some(k) = op.strip_prefix('-') {
            txn.del(k.as_bytes()).map_err(|e| format!("del {k}: {e}"))?;
        } else {
            let (k, v) = op.split_once('=').ok_or_else(|| format!("bad op {op:?}"))?;
            txn.put(k.as_bytes(), v.as_bytes()).map_err(|e| format!("put {k}: {e}"))?;
        }
    }
    txn.commit().map_err(|e| format!("commit: {e}"))
}

fn read(db: &str) -> Result<(), String> {
    let env = Env::open(db, ffi::MDBX_RDONLY).map_err(|e| format!("open {db}: {e}"))?;
    let txn = env.begin(true).map_err(|e| format!("begin: {e}"))?;
    let recs = txn.scan().map_err(|e| format!("scan: {e}"))?;
    print_records(&mut std::io::stdout().lock(), &recs);
    Ok(())
}

fn reader_check(env: &Env) -> Result<i32, MdbxError> {
    let mut dead = 0;
    // SAFETY: an open env; dead is an out-parameter.
    let rc = unsafe { ffi::mdbx_reader_check(env.0, &mut dead) };
    if rc == ffi::MDBX_RESULT_TRUE {
        return Ok(dead);
    }
    check(rc)?;
    Ok(dead)
}

/// `mdbx_reader_list` callback: appends "slot pid txnid" lines to a Vec<String>.
// SAFETY: called by libmdbx only, with `ctx` the `&mut Vec<String>` passed to
// mdbx_reader_list by the caller, alive for the whole call.
unsafe extern "C" fn list_reader(
    ctx: *mut libc::c_void,
    _num: libc::c_int,
    slot: libc::c_int,
    pid: ffi::mdbx_pid_t,
    _thread: ffi::mdbx_tid_t,
    txnid: u64,
    _lag: u64,
    _used: usize,
    _retained: usize,
) -> libc::c_int {
    // SAFETY: ctx is the &mut Vec<String> passed to mdbx_reader_list below.
    let lines = unsafe { &mut *(ctx as *mut Vec<String>) };
    lines.push(format!("{slot} {pid} {txnid}"));
    0
}

fn readers(env: &Env) -> Result<Vec<String>, MdbxError> {
    let mut lines: Vec<String> = Vec::new();
    // SAFETY: an open env; the callback gets our Vec for the duration of the call.
    let rc = unsafe { ffi::mdbx_reader_list(env.0, Some(list_reader), &mut lines as *mut Vec<String> as *mut _) };
    // MDBX_RESULT_TRUE (-1): no reader at all.
    if rc < 0 && rc != ffi::MDBX_RESULT_TRUE {
        return Err(MdbxError(rc));
    }
    Ok(lines)
}

fn session(db: &str, rest: &[String]) -> Result<(), String> {
    let (flags, _, _) = parse_opts(rest)?;
    let env = Env::open(db, flags).map_err(|e| format!("open {db}: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = writeln!(out, "ready pid={}", std::process::id());
    let _ = out.flush();
    let mut wtxn: Option<Txn> = None;
    let mut held: Option<Txn> = None;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let r: Result<String, MdbxError> = (|| match words.as_slice() {
            ["put", k, v] => {
                if wtxn.is_none() {
                    wtxn = Some(env.begin(false)?);
                }
                wtxn.as_ref().unwrap().put(k.as_bytes(), v.as_bytes())?;
                Ok(String::new())
            }
            ["del", k] => {
                if wtxn.is_none() {
                    wtxn = Some(env.begin(false)?);
                }
                wtxn.as_ref().unwrap().del(k.as_bytes())?;
                Ok(String::new())
            }
            ["commit"] => match wtxn.take() {
                Some(t) => {
                    let id = t.id();
                    t.commit()?;
                    Ok(format!(" txnid={id}"))
                }
                None => Ok(" nothing".into()),
            },
            ["abort"] => {
                wtxn = None;
                Ok(String::new())
            }
            ["read"] => {
                let t = env.begin(true)?;
                print_records(&mut out, &t.scan()?);
                let _ = writeln!(out, "end");
                Ok(format!(" txnid={}", t.id()))
            }
            ["begin-read"] => {
                let t = env.begin(true)?;
                let id = t.id();
                held = Some(t);
                Ok(format!(" txnid={id}"))
            }
            ["held"] => match &held {
                Some(t) => {
                    print_records(&mut out, &t.scan()?);
                    let _ = writeln!(out, "end");
                    Ok(format!(" txnid={}", t.id()))
                }
                None => Err(MdbxError(ffi::MDBX_BAD_TXN)),
            },
            ["end-read"] => {
                held = None;
                Ok(String::new())
            }
            // Parks the held read transaction; "unpark" reports the code of
            // mdbx_txn_unpark (MDBX_OUSTED when a writer ousted it).
            ["park"] => match &held {
                Some(t) => t.park().map(|()| String::new()),
                None => Err(MdbxError(ffi::MDBX_BAD_TXN)),
            },
            ["unpark"] => match &held {
                Some(t) => Ok(format!(" rc={}", t.unpark())),
                None => Err(MdbxError(ffi::MDBX_BAD_TXN)),
            },
            ["readers"] => {
                for l in readers(&env)? {
                    let _ = writeln!(out, "{l}");
                }
                let _ = writeln!(out, "end");
                Ok(String::new())
            }
            ["reader-check"] => Ok(format!(" dead={}", reader_check(&env)?)),
            ["quit"] => Ok(" quit".into()),
            _ => Err(MdbxError(ffi::MDBX_EINVAL)),
        })();
        match r {
            Ok(s) => {
                let _ = writeln!(out, "ok{s}");
                let _ = out.flush();
                if s == " quit" {
                    break;
                }
            }
            Err(e) => {
                let _ = writeln!(out, "error {e}");
                let _ = out.flush();
            }
        }
    }
    drop(wtxn);
    drop(held);
    drop(env);
    let _ = writeln!(out, "bye");
    Ok(())
}

/// `issue` callback of mdbx_env_chk: prints the object and the caption.
// SAFETY: called by libmdbx only, with NUL-terminated (or null) strings valid
// for the call.
unsafe extern "C" fn chk_issue(
    _ctx: *mut ffi::MDBX_chk_context_t,
    object: *const libc::c_char,
    entry: u64,
    caption: *const libc::c_char,
    _fmt: *const libc::c_char,
    _args: *mut ffi::__va_list_tag,
) {
    let s = |p: *const libc::c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: libmdbx passes NUL-terminated strings (or NULL).
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    eprintln!("chk issue: {} #{entry}: {}", s(object), s(caption));
}

fn chk(db: &str) -> Result<bool, String> {
    let env = Env::open(db, ffi::MDBX_RDONLY).map_err(|e| format!("open {db}: {e}"))?;
    // SAFETY: plain C structs of pointers and integers; all-zero = no callbacks.
    let mut cb: ffi::MDBX_chk_callbacks_t = unsafe { std::mem::zeroed() };
    cb.issue = Some(chk_issue);
    // SAFETY: as above; `internal` must be NULL on entry.
    let mut ctx: ffi::MDBX_chk_context_t = unsafe { std::mem::zeroed() };
    // SAFETY: an open env, live callback and context structs.
    let rc = unsafe { ffi::mdbx_env_chk(env.0, &cb, &mut ctx, 0 as _, ffi::MDBX_chk_error as _, 0) };
    let r = &ctx.result;
    let problems = r.problems_meta
        + r.tree_problems
        + r.gc_tree_problems
        + r.kv_tree_problems
        + r.problems_gc
        + r.problems_kv
        + r.total_problems;
    println!("rc={rc} problems={problems}");
    if rc != ffi::MDBX_SUCCESS && rc != ffi::MDBX_RESULT_TRUE && problems == 0 {
        return Err(format!("mdbx_env_chk: {}", MdbxError(rc)));
    }
    Ok(rc == ffi::MDBX_SUCCESS && problems == 0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(cmd), Some(db)) = (args.first(), args.get(1)) else {
        eprintln!("usage: mdbx013 write|read|chk|reader-check|session DB [...]");
        return ExitCode::from(2);
    };
    let rest = &args[2..];
    let r = match cmd.as_str() {
        "write" => write(db, rest).map(|_| true),
        "read" => read(db).map(|_| true),
        "chk" => chk(db),
        "reader-check" => Env::open(db, 0)
            .and_then(|env| reader_check(&env))
            .map(|dead| {
                println!("dead={dead}");
                true
            })
            .map_err(|e| format!("reader-check {db}: {e}")),
        "session" => session(db, rest).map(|_| true),
        _ => Err(format!("unknown command {cmd:?}")),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("mdbx013: {e}");
            ExitCode::from(2)
        }
    }
}
