//! Integration tests of the lock file (`lck`) and the OS layer: real files,
//! threads and child processes (the test binary re-executes itself in a
//! "child" mode to play a second process).
//!
//! The crate-private modules are compiled into this test crate directly.
#![allow(dead_code)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

#[path = "../src/error.rs"]
mod error;
#[path = "../src/flags.rs"]
mod flags;
// `format` is public in the engine, where clippy spares its exported names.
#[allow(clippy::wrong_self_convention)]
#[path = "../src/format/mod.rs"]
mod format;
#[path = "../src/lck.rs"]
mod lck;
#[path = "../src/os/mod.rs"]
mod os;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use error::Error;
use format::lock::{LAYOUT_V6, LAYOUT_V7};
use lck::{LockFile, LockFormat, LockOpen};

const CHILD_ENV: &str = "RDBX_LCK_TEST_CHILD";
/// Lock format (6 or 7) a child creates when it is the first opener.
const CHILD_FORMAT_ENV: &str = "RDBX_LCK_TEST_FORMAT";

/// A fake data file big enough for the seize checks (3 pages of 4096).
fn make_env() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let dxb = dir.path().join("mdbx.dat");
    let lck = dir.path().join("mdbx.lck");
    let f = File::create(&dxb).unwrap();
    f.set_len(3 * 4096).unwrap();
    (dir, dxb, lck)
}

fn open_dxb(path: &Path) -> File {
    File::options().read(true).write(true).open(path).unwrap()
}

fn open_lck(dxb: &File, lck: &Path) -> LockOpen {
    LockFile::open_as(lck, dxb, false, 61, 0o644, None).unwrap()
}

fn read_file(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

// ---------------------------------------------------------------------------
// Child processes

/// Entry point of the child processes; a no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, dir) = spec.split_once(':').unwrap();
    let dir = Path::new(dir);
    let dxb = open_dxb(&dir.join("mdbx.dat"));
    let create = std::env::var(CHILD_FORMAT_ENV).ok().map(|f| f.parse::<LockFormat>().unwrap());
    let open = LockFile::open_as(&dir.join("mdbx.lck"), &dxb, false, 61, 0o644, create).unwrap();
    open.lck.finish_open(0, 3).unwrap();
    let out = std::io::stdout();
    match mode {
        "reader" => {
            let slot = open.lck.acquire_reader().unwrap();
            slot.publish(5, 42, 7);
            writeln!(out.lock(), "ready {}", slot.index()).unwrap();
            out.lock().flush().unwrap();
            // Die without any cleanup: the slot stays registered.
            std::process::abort();
        }
        "writer" => {
            let g = open.lck.lock_writer().unwrap();
            let _raw = g.into_raw();
            writeln!(out.lock(), "ready").unwrap();
            out.lock().flush().unwrap();
            std::process::abort();
        }
        "hold" => {
            let slot = open.lck.acquire_reader().unwrap();
            slot.publish(9, 1, 1);
            writeln!(out.lock(), "ready {}", slot.index()).unwrap();
            out.lock().flush().unwrap();
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            drop(slot);
            drop(open);
            writeln!(out.lock(), "closed").unwrap();
        }
        other => panic!("unknown child mode {other}"),
    }
}

fn spawn_child(mode: &str, dir: &Path) -> (Child, BufReader<std::process::ChildStdout>) {
    spawn_child_as(mode, dir, LockFormat::V7)
}

/// A child that creates lock format `create` if it is the first opener.
fn spawn_child_as(mode: &str, dir: &Path, create: LockFormat) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_process_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{mode}:{}", dir.display()))
        .env(CHILD_FORMAT_ENV, create.version().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("child ({mode}) exited before becoming ready: {:?}", child.wait());
        }
        // The harness prints "test child_process_entry ... " on the same line.
        if line.contains("ready") {
            break;
        }
    }
    (child, out)
}

// ---------------------------------------------------------------------------

#[test]
fn format_constant() {
    assert_eq!(LAYOUT_V7.signature, 0x3635569F);
    assert_eq!(LAYOUT_V7.magic, 0x59659DBDEF4C1107);
    let f = 0x8017u32 * 27733 + 32 * 13 + 20 * 251 + 360 * 83 + 552 * 37 + 576 * 29;
    assert_eq!(f, 0x3635569F);
}

#[test]
fn format_constant_v6() {
    assert_eq!(LAYOUT_V6.signature, 0x3635461F);
    assert_eq!(LAYOUT_V6.magic, 0x59659DBDEF4C1106);
    // libmdbx 0.13: cached_oldest 360, rdt_length 488, rdt 512.
    let f = 0x8017u32 * 27733 + 32 * 13 + 20 * 251 + 360 * 83 + 488 * 37 + 512 * 29;
    assert_eq!(f, 0x3635461F);
}

#[test]
fn create_layout_v6() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, Some(LockFormat::V6)).unwrap();
    assert!(open.exclusive);
    assert_eq!(open.lck.format(), Some(LockFormat::V6));
    open.lck.finish_open(0x50000, 7).unwrap();
    let b = read_file(&lck_path);
    assert_eq!(b.len(), 4096);
    assert_eq!(u64_at(&b, 0), 0x59659DBDEF4C1106);
    assert_eq!(u32_at(&b, 8), 0x3635461F);
    assert_eq!(u32_at(&b, 12), 0x50000);
    assert_eq!(u32_at(&b, 20), 7);
    assert_eq!(u64_at(&b, 120), 1, "pgops.wops");
    assert_eq!(b[336], 0xB2, "wrt_lock __kind");
    assert_eq!(b[464], 0xB2, "rdt_lock __kind (448 + 16)");
    assert_ne!(u64_at(&b, 384), 0, "readers_check_timestamp");
    assert_eq!(u64_at(&b, 392), 0, "v7's readers_check_timestamp is v6's discarded_tail");
    assert_eq!(open.lck.max_readers(), 112);

    // A reader slot starts at 512; rdt_length is at 488, the flag at 492.
    let r = open.lck.acquire_reader().unwrap();
    r.publish(5, 42, 7);
    let b = read_file(&lck_path);
    let slot = 512 + 32 * r.index() as usize;
    assert_eq!(u64_at(&b, slot), 5);
    assert_eq!(u32_at(&b, slot + 16), std::process::id());
    assert_eq!(u32_at(&b, slot + 20), 42);
    assert_eq!(u64_at(&b, slot + 24), 7);
    assert_eq!(u32_at(&b, 488), r.index() + 1, "rdt_length");
    assert_eq!(u32_at(&b, 492), 1, "rdt_refresh_flag");
    drop(r);

    // Writer-side fields: cached_oldest (360), unsynced_pages (376),
    // eoos_timestamp (368).
    let g = open.lck.lock_writer().unwrap();
    assert_eq!(open.lck.oldest_reader_ex(6, Some(4)), (6, 4));
    open.lck.add_unsynced_pages(3);
    let b = read_file(&lck_path);
    assert_eq!(u64_at(&b, 360), 6, "cached_oldest");
    assert_eq!(u32_at(&b, 492), 0x4E6F6E65, "rdt_refresh_flag = None");
    assert_eq!(u64_at(&b, 376), 3, "unsynced_pages");
    assert_ne!(u64_at(&b, 368), 0, "eoos_timestamp");
    assert_eq!(open.lck.unsynced_pages(), 3);
    // Unchanged table: the v6 stand-in for cached_oldest_retired answers.
    assert_eq!(open.lck.oldest_reader_ex(7, None), (6, 4));
    drop(g);
}

#[test]
fn stale_lock_file_keeps_its_version() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    // Left behind by libmdbx 0.13 (not truncated: a crash, or unsynced pages).
    let mut stale = vec![0xAB; 4096];
    stale[..8].copy_from_slice(&0x59659DBDEF4C1106u64.to_le_bytes());
    std::fs::write(&lck_path, &stale).unwrap();
    let open = open_lck(&dxb, &lck_path);
    assert!(open.exclusive);
    assert_eq!(open.lck.format(), Some(LockFormat::V6));
    let b = read_file(&lck_path);
    assert_eq!(u64_at(&b, 0), LAYOUT_V6.magic);
    assert_eq!(u32_at(&b, 8), LAYOUT_V6.signature);
    assert!(b[512..].iter().all(|&x| x == 0));
    drop(open);

    // An explicit choice wins over what the stale file says.
    std::fs::write(&lck_path, &stale).unwrap();
    let open = LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, Some(LockFormat::V7)).unwrap();
    assert_eq!(open.lck.format(), Some(LockFormat::V7));
    assert_eq!(u64_at(&read_file(&lck_path), 0), LAYOUT_V7.magic);
    drop(open);

    // A stale v7 file stays v7; an empty or foreign one becomes v7.
    for first in [LAYOUT_V7.magic.to_le_bytes(), 0x1234u64.to_le_bytes()] {
        let mut f = stale.clone();
        f[..8].copy_from_slice(&first);
        std::fs::write(&lck_path, &f).unwrap();
        let open = open_lck(&dxb, &lck_path);
        assert_eq!(open.lck.format(), Some(LockFormat::V7));
        drop(open);
    }
    std::fs::write(&lck_path, b"").unwrap();
    let open = open_lck(&dxb, &lck_path);
    assert_eq!(open.lck.format(), Some(LockFormat::V7));
    // And so does an unsupported version.
    drop(open);
    stale[..8].copy_from_slice(&0x59659DBDEF4C1105u64.to_le_bytes());
    std::fs::write(&lck_path, &stale).unwrap();
    let open = open_lck(&dxb, &lck_path);
    assert_eq!(open.lck.format(), Some(LockFormat::V7));
}

#[test]
fn joins_a_live_v6_lock_file() {
    let (dir, dxb_path, lck_path) = make_env();
    // A v6 process holds a reader at txnid 9.
    let (mut child, mut out) = spawn_child_as("hold", dir.path(), LockFormat::V6);
    let child_pid = child.id();
    let dxb = open_dxb(&dxb_path);
    // Whatever we would create, we join what is in use.
    let open = LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, Some(LockFormat::V7)).unwrap();
    assert!(!open.exclusive);
    let lck = &open.lck;
    assert_eq!(lck.format(), Some(LockFormat::V6));
    assert_eq!(lck.max_readers(), 112);
    let rs = lck.readers();
    let theirs = rs.iter().find(|r| r.pid == child_pid).expect("the child's slot");
    assert_eq!(theirs.txnid, Some(9));
    {
        let _w = lck.lock_writer().unwrap();
        assert_eq!(lck.oldest_reader(20), 9);
    }
    let r = lck.acquire_reader().unwrap();
    assert_ne!(r.index(), theirs.slot);
    r.publish(12, 3, 0);
    assert_eq!(u64_at(&read_file(&lck_path), 512 + 32 * r.index() as usize), 12);
    drop(r);
    drop(open);
    drop(child.stdin.take());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("closed"), "{line}");
    child.wait().unwrap();
    // The last closer truncated the v6 file as libmdbx 0.13 does.
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 0);
}

#[test]
fn dead_v6_reader_is_swept() {
    let (dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, Some(LockFormat::V6)).unwrap();
    open.lck.finish_open(0, 3).unwrap();
    let lck = &open.lck;
    let (mut child, _out) = spawn_child_as("reader", dir.path(), LockFormat::V7);
    let child_pid = child.id();
    assert!(!child.wait().unwrap().success());
    let dead = lck.readers().into_iter().find(|r| r.pid == child_pid).expect("the dead child's slot");
    assert_eq!(dead.txnid, Some(5));
    assert_eq!(lck.sweep_dead_readers().unwrap(), 1);
    assert!(lck.readers().iter().all(|r| r.pid != child_pid));
    // A dead writer of a v6 file: the robust mutex at 320 is recovered.
    let (mut child, _out) = spawn_child_as("writer", dir.path(), LockFormat::V7);
    child.wait().unwrap();
    let g = lck.lock_writer().unwrap();
    assert!(g.owner_died());
}

#[test]
fn create_layout() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    assert!(open.exclusive);
    open.lck.finish_open(0x50000, 7).unwrap();
    let b = read_file(&lck_path);
    assert_eq!(b.len(), 4096);
    assert_eq!(u64_at(&b, 0), 0x59659DBDEF4C1107);
    assert_eq!(u32_at(&b, 8), 0x3635569F);
    assert_eq!(u32_at(&b, 12), 0x50000);
    assert_eq!(u32_at(&b, 20), 7);
    assert_eq!(u64_at(&b, 120), 1, "pgops.wops");
    assert_eq!(b[336], 0xB2, "wrt_lock __kind");
    assert_eq!(b[528], 0xB2, "rdt_lock __kind");
    assert_ne!(u64_at(&b, 392), 0, "readers_check_timestamp");
    assert_eq!(open.lck.max_readers(), 110);
    assert_eq!(open.lck.envmode(), 0x50000);
    assert!(!open.lck.is_lockless());
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 4096);
    // File locks after the downgrade: lck byte 0 READ (a write is refused to
    // another description, a read is fine), dxb only byte pid.
    let other_lck = File::options().read(true).write(true).open(&lck_path).unwrap();
    assert!(!os::ofd::try_lock(&other_lck, os::ofd::LockMode::Write, 0, 1).unwrap());
    assert!(os::ofd::try_lock(&other_lck, os::ofd::LockMode::Read, 0, 1).unwrap());
    os::ofd::unlock(&other_lck, 0, 1).unwrap();
    let other_dxb = open_dxb(&dxb_path);
    let pid = u64::from(std::process::id());
    assert!(os::ofd::try_lock(&other_dxb, os::ofd::LockMode::Write, 0, pid).unwrap());
    assert!(!os::ofd::try_lock(&other_dxb, os::ofd::LockMode::Read, pid, 1).unwrap());
    os::ofd::unlock(&other_dxb, 0, pid).unwrap();
}

#[test]
fn bigger_reader_table() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = LockFile::open_as(&lck_path, &dxb, false, 200, 0o600, None).unwrap();
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 8192);
    assert_eq!(open.lck.max_readers(), (8192 - 576) / 32);
}

#[test]
fn second_open_in_process_is_busy() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let dxb2 = open_dxb(&dxb_path);
    match LockFile::open_as(&lck_path, &dxb2, false, 61, 0o644, None) {
        Err(Error::Busy(msg)) => assert!(msg.contains("already open in this process"), "{msg}"),
        other => panic!("expected Busy, got {other:?}"),
    }
    drop(open);
    let again = open_lck(&dxb2, &lck_path);
    assert!(again.exclusive);
}

#[test]
fn writer_lock_excludes_threads() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let lck = &open.lck;

    // Same thread twice -> Busy.
    let g = lck.lock_writer().unwrap();
    assert!(!g.owner_died());
    assert!(matches!(lck.lock_writer(), Err(Error::Busy(_))));
    assert!(matches!(lck.try_lock_writer(), Err(Error::Busy(_))));
    drop(g);

    let released = AtomicBool::new(false);
    let locked = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let g = lck.lock_writer().unwrap();
            locked.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            released.store(true, Ordering::SeqCst);
            drop(g);
        });
        while !locked.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        assert!(lck.try_lock_writer().unwrap().is_none());
        let g = lck.lock_writer().unwrap();
        assert!(released.load(Ordering::SeqCst), "second thread got the lock while the first held it");
        drop(g);
    });
    let g = lck.try_lock_writer().unwrap().expect("free");
    let raw = g.into_raw();
    assert!(matches!(lck.lock_writer(), Err(Error::Busy(_))));
    lck.unlock_raw_writer(raw).unwrap();
    drop(lck.lock_writer().unwrap());
}

#[test]
fn reader_slots_publish_clear_and_pool() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let lck = &open.lck;
    let me = std::process::id();

    let a = lck.acquire_reader().unwrap();
    a.publish(7, 100, 5);
    assert!(a.still(7));
    let rs = lck.readers();
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].pid, me);
    assert_eq!(rs[0].txnid, Some(7));
    assert_eq!(rs[0].pages_used, 100);
    assert_eq!(rs[0].pages_retired, 5);
    assert_eq!(rs[0].tid, os::thread_self());
    // The raw bytes of the slot (docs/lock-format.md, "Reader slot").
    let b = read_file(&lck_path);
    let off = 576 + 32 * rs[0].slot as usize;
    assert_eq!(u64_at(&b, off), 7);
    assert_eq!(u32_at(&b, off + 16), me);
    assert_eq!(u32_at(&b, off + 20), 100);
    assert_eq!(u64_at(&b, off + 24), 5);
    assert_eq!(u32_at(&b, 552), 1, "rdt_length");
    assert_eq!(u32_at(&b, 556), 1, "rdt_refresh_flag");

    let b2 = lck.acquire_reader().unwrap();
    assert_ne!(a.index(), b2.index());
    b2.publish(8, 120, 6);
    assert_eq!(lck.max_reader_pages_used(), 120);
    assert_eq!(lck.max_reader_pages_used_upto(7), 100);

    a.clear();
    let rs = lck.readers();
    assert_eq!(rs.iter().find(|r| r.slot == a.index()).unwrap().txnid, None);
    assert_eq!(rs.iter().find(|r| r.slot == a.index()).unwrap().pages_used, 0);
    let ia = a.index();
    drop(a);
    // The idle slot is reused without registering a new one.
    let c = lck.acquire_reader().unwrap();
    assert_eq!(c.index(), ia);
    assert_eq!(lck.readers().len(), 2);
    // Detach / re-attach.
    let raw = c.into_raw();
    let c = lck.reader_from_raw(raw);
    drop(c);
    drop(b2);
    // Slots stay registered (pid set, no snapshot) until close.
    let rs = lck.readers();
    assert_eq!(rs.len(), 2);
    assert!(rs.iter().all(|r| r.txnid.is_none() && r.pid == me));

    // Many threads at once.
    std::thread::scope(|s| {
        for t in 0..8u64 {
            s.spawn(move || {
                for i in 0..200u64 {
                    let r = lck.acquire_reader().unwrap();
                    r.publish(100 + t * 1000 + i, 1, 1);
                    assert!(r.still(100 + t * 1000 + i));
                }
            });
        }
    });
    assert!(lck.readers().len() <= 10);
    assert!(lck.readers().iter().all(|r| r.txnid.is_none()));
}

#[test]
fn readers_full() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let slots: Vec<_> = (0..open.lck.max_readers()).map(|_| open.lck.acquire_reader().unwrap()).collect();
    assert!(matches!(open.lck.acquire_reader(), Err(Error::ReadersFull)));
    drop(slots);
    drop(open.lck.acquire_reader().unwrap());
}

#[test]
fn oldest_reader_protocol() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let lck = &open.lck;
    let _w = lck.lock_writer().unwrap();

    assert_eq!(lck.oldest_reader(5), 5);
    assert_eq!(lck.cached_oldest(), 5);
    // Nothing changed: the cached value is used (refresh flag == "None").
    let b = read_file(&lck_path);
    assert_eq!(u32_at(&b, 556), 0x4E6F6E65);

    let r = lck.acquire_reader().unwrap();
    r.publish(6, 10, 1);
    assert_eq!(lck.oldest_reader(10), 6);
    assert_eq!(r.cached_oldest(), 6);
    assert_eq!(lck.oldest_reader_ex(10, Some(3)), (6, 1));
    lck.after_commit(11, true, true);
    assert_eq!(lck.meta_sync_txnid(), 11);
    assert_eq!(u32_at(&read_file(&lck_path), 556), 0);
    assert_eq!(lck.oldest_reader(11), 6);

    // The reader moves to a newer snapshot: the horizon advances.
    r.publish(11, 12, 2);
    assert_eq!(lck.oldest_reader(11), 11);
    // A reader publishing a snapshot older than the cached horizon is stale
    // and gets kicked (txnid reset), as libmdbx writers do.
    let old = lck.acquire_reader().unwrap();
    old.publish(8, 1, 1);
    assert_eq!(lck.oldest_reader(12), 11);
    assert!(!old.still(8));
    assert!(r.still(11));
    r.clear();
    assert_eq!(lck.oldest_reader(12), 12);
    // Not steady: meta_sync_txnid gets the lazy bias.
    lck.after_commit(8, false, false);
    assert_eq!(lck.meta_sync_txnid(), 0x8AAAAAB4);
    lck.add_unsynced_pages(3);
    assert_eq!(lck.unsynced_pages(), 3);
    lck.after_commit(9, true, true);
    assert_eq!(lck.unsynced_pages(), 0);
}

#[test]
fn dead_process_slot_is_swept() {
    let (dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let lck = &open.lck;

    let (mut child, _out) = spawn_child("reader", dir.path());
    let child_pid = child.id();
    let status = child.wait().unwrap();
    assert!(!status.success(), "child aborts");

    let rs = lck.readers();
    let dead = rs.iter().find(|r| r.pid == child_pid).expect("the dead child's slot");
    assert_eq!(dead.txnid, Some(5));
    assert_eq!(dead.pages_used, 42);
    {
        let _w = lck.lock_writer().unwrap();
        assert_eq!(lck.oldest_reader(10), 5);
    }
    assert_eq!(lck.sweep_dead_readers().unwrap(), 1);
    assert!(lck.readers().iter().all(|r| r.pid != child_pid));
    assert_eq!(lck.sweep_dead_readers().unwrap(), 0);
    let _w = lck.lock_writer().unwrap();
    assert_eq!(lck.oldest_reader(10), 10);
}

#[test]
fn live_process_slot_is_kept_and_last_closer_truncates() {
    let (dir, dxb_path, lck_path) = make_env();
    // The child initialises the lock file and stays alive.
    let (mut child, mut out) = spawn_child("hold", dir.path());
    let child_pid = child.id();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    assert!(!open.exclusive);
    open.lck.finish_open(0, 3).unwrap();
    let rs = open.lck.readers();
    assert!(rs.iter().any(|r| r.pid == child_pid && r.txnid == Some(9)));
    assert_eq!(open.lck.sweep_dead_readers().unwrap(), 0);
    {
        let _w = open.lck.lock_writer().unwrap();
        assert_eq!(open.lck.oldest_reader(20), 9);
    }
    let r = open.lck.acquire_reader().unwrap();
    r.publish(4, 4, 4);
    drop(r);
    drop(open);
    // We were not the last user: the lock file keeps its content.
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 4096);
    let b = read_file(&lck_path);
    assert_eq!(u64_at(&b, 0), LAYOUT_V7.magic);
    // Our slot was released (pid 0).
    let n = u32_at(&b, 552) as usize;
    for i in 0..n {
        assert_ne!(u32_at(&b, 576 + 32 * i + 16), std::process::id());
    }
    // The child closes last and truncates.
    drop(child.stdin.take());
    let mut line = String::new();
    while !line.contains("closed") {
        line.clear();
        assert_ne!(out.read_line(&mut line).unwrap(), 0, "child did not report closing");
    }
    child.wait().unwrap();
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 0);
}

#[test]
fn last_closer_truncates() {
    let (_dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    drop(open.lck.acquire_reader().unwrap());
    drop(open);
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 0);
    // dxb locks were dropped too.
    let other = open_dxb(&dxb_path);
    assert!(os::ofd::try_lock(&other, os::ofd::LockMode::Write, 0, os::ofd::WHOLE_FILE_LEN).unwrap());
    os::ofd::unlock(&other, 0, os::ofd::WHOLE_FILE_LEN).unwrap();
    // Reopen from a 0-byte lock file: reinitialised.
    let open = open_lck(&dxb, &lck_path);
    assert!(open.exclusive);
    // Unsynced pages keep the lock file (libmdbx does the same).
    open.lck.finish_open(0, 3).unwrap();
    open.lck.add_unsynced_pages(1);
    drop(open);
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 4096);
}

#[test]
fn writer_owner_died_in_other_process() {
    let (dir, dxb_path, lck_path) = make_env();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    open.lck.finish_open(0, 3).unwrap();
    let (mut child, _out) = spawn_child("writer", dir.path());
    child.wait().unwrap();
    let g = open.lck.lock_writer().unwrap();
    assert!(g.owner_died());
    drop(g);
    let g = open.lck.lock_writer().unwrap();
    assert!(!g.owner_died());
}

#[test]
fn shared_open_verifies_header() {
    let (dir, dxb_path, lck_path) = make_env();
    let (mut child, mut out) = spawn_child("hold", dir.path());
    let raw = File::options().read(true).write(true).open(&lck_path).unwrap();
    let orig = read_file(&lck_path);
    let dxb = open_dxb(&dxb_path);

    let put = |off: u64, bytes: &[u8]| os::file::pwrite_all(&raw, &[bytes], off).unwrap();
    put(0, &0x59659DBDEF4C1106u64.to_le_bytes());
    assert!(matches!(LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, None), Err(Error::VersionMismatch(_))));
    put(0, &0x1234u64.to_le_bytes());
    assert!(matches!(LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, None), Err(Error::Invalid(_))));
    put(0, &orig[..8]);
    put(8, &0x3635461Fu32.to_le_bytes());
    assert!(matches!(LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, None), Err(Error::VersionMismatch(_))));
    // A v6 magic over a v7 layout: the v6 signature does not match.
    put(0, &0x59659DBDEF4C1106u64.to_le_bytes());
    put(8, &orig[8..12]);
    match LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, None) {
        Err(Error::VersionMismatch(m)) => assert!(m.contains("signature"), "{m}"),
        other => panic!("expected VersionMismatch, got {other:?}"),
    }
    // An unsupported version.
    put(0, &0x59659DBDEF4C1108u64.to_le_bytes());
    match LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, None) {
        Err(Error::VersionMismatch(m)) => assert!(m.contains("version 8"), "{m}"),
        other => panic!("expected VersionMismatch, got {other:?}"),
    }
    put(0, &orig[..8]);
    let open = LockFile::open_as(&lck_path, &dxb, false, 61, 0o644, None).unwrap();
    assert!(!open.exclusive);
    drop(open);

    drop(child.stdin.take());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    child.wait().unwrap();
}

#[test]
fn exclusive_opener_reinitialises_garbage() {
    let (_dir, dxb_path, lck_path) = make_env();
    std::fs::write(&lck_path, vec![0xAB; 5000]).unwrap();
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    assert!(open.exclusive);
    let b = read_file(&lck_path);
    assert_eq!(b.len(), 4096);
    assert_eq!(u64_at(&b, 0), LAYOUT_V7.magic);
    assert!(b[576..].iter().all(|&x| x == 0));
    open.lck.finish_open(0, 3).unwrap();
    drop(open.lck.acquire_reader().unwrap());
}

#[test]
fn envmode_rules() {
    let (dir, dxb_path, lck_path) = make_env();
    let (mut child, mut out) = spawn_child("hold", dir.path()); // records envmode 0
    let dxb = open_dxb(&dxb_path);
    let open = open_lck(&dxb, &lck_path);
    assert_eq!(open.lck.envmode(), 0);
    assert_eq!(open.lck.check_envmode(0, false).unwrap(), 0);
    assert!(matches!(open.lck.check_envmode(0x10000, false), Err(Error::Incompatible(_))));
    assert_eq!(open.lck.check_envmode(0x50000, true).unwrap(), 0);
    drop(open);
    drop(child.stdin.take());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    child.wait().unwrap();
}

#[test]
fn lockless_fallback_for_read_only() {
    // /sys refuses file creation even for root (EACCES) on Linux.
    let lck_path = Path::new("/sys/rdbx-test-mdbx.lck");
    match File::options().read(true).write(true).create(true).truncate(false).open(lck_path) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EROFS) | Some(libc::EPERM)) => {}
        _ => return, // cannot simulate here
    }
    let (_dir, dxb_path, _) = make_env();
    let dxb = File::open(&dxb_path).unwrap();
    assert!(LockFile::open_as(lck_path, &dxb, false, 61, 0o644, None).is_err());
    let open = LockFile::open_as(lck_path, &dxb, true, 61, 0o644, None).unwrap();
    assert!(open.lck.is_lockless());
    open.lck.finish_open(0x20000, 3).unwrap();
    assert_eq!(open.lck.envmode(), 0x20000);
    let r = open.lck.acquire_reader().unwrap();
    r.publish(3, 1, 1);
    assert!(r.still(3));
    assert!(open.lck.readers().is_empty());
    assert_eq!(open.lck.oldest_reader(3), 3);
    // A writer elsewhere is excluded by the whole-file READ lock.
    let w = open_dxb(&dxb_path);
    assert!(!os::ofd::try_lock(&w, os::ofd::LockMode::Write, 12345, 1).unwrap());
    drop(r);
    drop(open);
    assert!(os::ofd::try_lock(&w, os::ofd::LockMode::Write, 12345, 1).unwrap());
}

/// Only a file system that refuses the lock file (read-only, no
/// permission) makes a read-only open go lock-less: any other failure to
/// open it (here the lock path is a directory) is an error, since a reader
/// without a slot in a lock file others use is invisible to their writers.
#[test]
fn other_lock_file_errors_are_not_read_only_fallbacks() {
    let (dir, dxb_path, _) = make_env();
    let lck_path = dir.path().join("a-directory.lck");
    std::fs::create_dir(&lck_path).unwrap();
    let dxb = File::open(&dxb_path).unwrap();
    for read_only in [false, true] {
        match LockFile::open_as(&lck_path, &dxb, read_only, 61, 0o644, None) {
            Err(Error::Io(e)) => assert_eq!(e.raw_os_error(), Some(libc::EISDIR), "read_only {read_only}"),
            Err(e) => panic!("read_only {read_only}: {e}"),
            Ok(_) => panic!("read_only {read_only}: opened with a directory as the lock file"),
        }
    }
}

// ---------------------------------------------------------------------------
// Optional interop with the real libmdbx (the `mdbx-oracle` tool of the
// workspace's `tests` crate, built with `cargo build -p rdbx-tests`).

fn find_oracle() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RDBX_MDBX_ORACLE") {
        return Some(PathBuf::from(p));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    ["release", "debug"].iter().map(|d| root.join(d).join("mdbx-oracle")).find(|p| p.is_file())
}

fn oracle(bin: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "mdbx-oracle {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn libmdbx_shares_our_lock_file() {
    let Some(bin) = find_oracle() else {
        eprintln!("mdbx-oracle not built; skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    oracle(&bin, &["write", d, "-"], "put - x01 x02\n");
    let info = oracle(&bin, &["info", d], "");
    let txnid: u64 = info.lines().find_map(|l| l.strip_prefix("recent_txnid=")).unwrap().parse().unwrap();
    let last_pgno: u32 = info.lines().find_map(|l| l.strip_prefix("last_pgno=")).unwrap().parse().unwrap();
    // libmdbx closed last: the lock file is empty; we initialise it.
    let lck_path = dir.path().join("mdbx.lck");
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 0);
    let dxb = open_dxb(&dir.path().join("mdbx.dat"));
    let open = open_lck(&dxb, &lck_path);
    assert!(open.exclusive);
    open.lck.finish_open(0, txnid).unwrap();
    let slot = open.lck.acquire_reader().unwrap();
    slot.publish(txnid, last_pgno + 1, 0);

    // libmdbx readers and writers accept our region (magic, format, mutexes)...
    let dump = oracle(&bin, &["dump", d], "");
    assert!(dump.contains("01"), "{dump}");
    oracle(&bin, &["write", d, "-"], "put - x03 x04\ncommit\nput - x05 x06\ncommit\ndel - x03\n");
    let after: u64 =
        oracle(&bin, &["info", d], "").lines().find_map(|l| l.strip_prefix("recent_txnid=")).unwrap().parse().unwrap();
    assert_eq!(after, txnid + 3);
    // ...register their reader slots in our table and release them on close,
    // and leave our live slot alone.
    assert!(slot.still(txnid));
    let b = read_file(&lck_path);
    assert!(u32_at(&b, 552) >= 2, "libmdbx used the reader table");
    let rs = open.lck.readers();
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].txnid, Some(txnid));
    assert!(open.lck.cached_oldest() <= txnid);
    // Our writer lock is libmdbx's writer lock.
    {
        let w = open.lck.lock_writer().unwrap();
        assert!(!w.owner_died());
        assert_eq!(open.lck.oldest_reader(after), txnid);
        open.lck.after_commit(after, true, true);
    }
    drop(slot);
    drop(open);
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 0);
    oracle(&bin, &["chk", d], "");
}
