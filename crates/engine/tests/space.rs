//! Space over time: a full database becomes writable again once data is
//! deleted, a dead reader does not pin the GC, a full filesystem is survived,
//! and a crash while creating a database leaves a file that opens.

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

use std::path::Path;

mod common;
use common::in_memory_fs;
use rdbx::{Db, Durability, Env, Error, Geometry, PutFlags};

const MIB: usize = 1 << 20;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn open_small(dir: &Path, upper: usize, d: Durability) -> Env {
    Env::builder()
        .durability(d)
        .geometry(Geometry {
            page_size: Some(4096),
            size_lower: Some(64 << 10),
            size_now: Some(64 << 10),
            size_upper: Some(upper),
            growth_step: Some(64 << 10),
            ..Default::default()
        })
        .open(dir)
        .expect("open")
}

/// Inserts records of `len` bytes in transactions of `batch` until even a
/// transaction of one record fails with `MapFull`; returns the keys written.
fn fill_to_map_full(env: &Env, len: usize) -> u64 {
    let mut next = 0u64;
    let mut batch = 64u64;
    loop {
        let mut txn = env.begin_rw_txn().expect("begin");
        let r = (0..batch).try_for_each(|i| txn.put(Db::MAIN, &key(next + i), &vec![0xAB; len], PutFlags::empty()));
        match r.and_then(|()| txn.commit()) {
            Ok(()) => next += batch,
            Err(Error::MapFull) if batch > 1 => batch /= 2,
            Err(Error::MapFull) => return next,
            Err(e) => panic!("fill: {e:?}"),
        }
    }
}

fn map_full_then_half_deleted(d: Durability) {
    let dir = tempdir();
    let upper = 4 * MIB;
    let env = open_small(dir.path(), upper, d);
    let n = fill_to_map_full(&env, 100);
    assert!(n > 10_000, "only {n} records fit in 4 MiB");
    // Delete every other block of 256 keys (half the data, whole leaves).
    // Copy-on-write needs free pages to delete too, so on a full file start
    // with small transactions and grow them.
    let mut i = 0;
    let mut batch = 1u64;
    while i < n {
        let end = (i + 2 * batch).min(n);
        let mut txn = env.begin_rw_txn().expect("begin");
        let r = (i..end)
            .filter(|k| (k / 256) % 2 == 0)
            .try_for_each(|k| txn.del(Db::MAIN, &key(k), None).map(|found| assert!(found)));
        match r.and_then(|()| txn.commit()) {
            Ok(()) => {
                i = end;
                batch = (batch * 2).min(200);
            }
            Err(Error::MapFull) if batch > 1 => batch /= 2,
            Err(e) => panic!("{d:?}: deleting key {i} of {n} (batch {batch}): {e:?}"),
        }
    }
    let gc = env.gc_info().expect("gc_info");
    // In the lazy modes part of them waits for the next steady point.
    assert!(gc.pages_gc > 300, "{gc:?}");
    // Now one-record transactions must keep succeeding.
    for j in 0..500u64 {
        let mut txn = env.begin_rw_txn().expect("begin");
        txn.put(Db::MAIN, &key(n + j), &[0xCD; 100], PutFlags::empty()).expect("put");
        txn.commit().unwrap_or_else(|e| panic!("{d:?}: commit {j} after deleting half of a full database: {e:?}"));
        let len = std::fs::metadata(dir.path().join("mdbx.dat")).expect("stat").len();
        assert!(len <= upper as u64, "file {len} passed its upper bound {upper}");
    }
    let report = env.check(&Default::default(), &mut |_| {}).expect("check");
    assert_eq!(report.problem_count(), 0, "{report:?}");
}

#[test]
fn writable_again_after_map_full_durable() {
    map_full_then_half_deleted(Durability::SyncDurable);
}

#[test]
fn writable_again_after_map_full_safe_nosync() {
    map_full_then_half_deleted(Durability::SafeNoSync);
}

#[test]
fn writable_again_after_map_full_utterly_nosync() {
    map_full_then_half_deleted(Durability::UtterlyNoSync);
}

// ---------------------------------------------------------------------------
// Dead readers

const CHILD_ENV: &str = "RDBX_SPACE_CHILD";

/// Child process entry: opens the database, starts a read transaction, says
/// "ready" and waits to be killed.
#[test]
fn child_process_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let env = Env::builder().open(&dir).expect("child open");
    let _txn = env.begin_ro_txn().expect("child ro txn");
    println!("ready");
    use std::io::Write;
    std::io::stdout().flush().expect("flush");
    std::thread::sleep(std::time::Duration::from_secs(600));
}

/// Starts a reader in another process and kills it (SIGKILL) while it holds
/// its snapshot.
fn kill_a_reader(dir: &Path) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["child_process_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        if out.read_line(&mut line).expect("read") == 0 {
            panic!("reader child exited before it was ready: {:?}", child.wait());
        }
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
}

/// A long-lived writer runs steady overwrites; returns the file size after.
fn steady_writer_file_size(dead_reader: bool) -> u64 {
    let dir = tempdir();
    let env = open_small(dir.path(), 1 << 30, Durability::SyncDurable);
    let mut txn = env.begin_rw_txn().expect("begin");
    for i in 0..2000u64 {
        txn.put(Db::MAIN, &key(i), &[1; 100], PutFlags::empty()).expect("put");
    }
    txn.commit().expect("commit");
    if dead_reader {
        kill_a_reader(dir.path());
        assert_eq!(env.readers().expect("readers").len(), 1, "the dead reader's slot is still listed");
    }
    let mut x = 7u64;
    for t in 0..3000u64 {
        let mut txn = env.begin_rw_txn().expect("begin");
        for _ in 0..1 + t % 19 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            txn.put(Db::MAIN, &key(x % 2000), &x.to_le_bytes().repeat(12), PutFlags::empty()).expect("put");
        }
        txn.commit().expect("commit");
    }
    if dead_reader {
        assert!(env.readers().expect("readers").is_empty(), "the writer did not clear the dead reader's slot");
    }
    std::fs::metadata(dir.path().join("mdbx.dat")).expect("stat").len()
}

#[test]
fn a_dead_reader_does_not_pin_the_gc() {
    let clean = steady_writer_file_size(false);
    let pinned = steady_writer_file_size(true);
    eprintln!("file after 3,000 transactions: {clean} bytes, {pinned} with a reader killed holding a snapshot");
    assert!(pinned <= 2 * clean, "a dead reader made the file grow to {pinned} bytes (without it: {clean})");
}

#[test]
fn a_dead_reader_is_swept_while_the_file_still_has_room() {
    // 4 MiB of room: no page would grow the file, so ousting laggards
    // before growth never runs. The writer still clears the dead reader's
    // slot once it holds back GC records the writer needs (not before: a
    // sweep costs a lock probe per process), and reuses them. `history`:
    // two batches of updates before the reader, whose GC records the first
    // transactions after it use (the slot is cleared after them).
    let used = |dead_reader: bool, history: bool| {
        let dir = tempdir();
        let env = Env::builder()
            .geometry(Geometry {
                page_size: Some(4096),
                size_now: Some(4 << 20),
                size_upper: Some(64 << 20),
                growth_step: Some(1 << 20),
                ..Default::default()
            })
            .open(dir.path())
            .expect("open");
        let mut txn = env.begin_rw_txn().expect("begin");
        for i in 0..2000u64 {
            txn.put(Db::MAIN, &key(i), &[1; 100], PutFlags::empty()).expect("put");
        }
        txn.commit().expect("commit");
        for v in if history { 2..4 } else { 0..0 } {
            let mut txn = env.begin_rw_txn().expect("begin");
            for i in (0..2000u64).step_by(5) {
                txn.put(Db::MAIN, &key(i), &[v; 100], PutFlags::empty()).expect("put");
            }
            txn.commit().expect("commit");
        }
        if dead_reader {
            kill_a_reader(dir.path());
            assert_eq!(env.readers().expect("readers").len(), 1, "the dead reader's slot is not listed");
        }
        for t in 0..20u64 {
            let mut txn = env.begin_rw_txn().expect("begin");
            txn.put(Db::MAIN, &key(t * 97 % 2000), &[9; 100], PutFlags::empty()).expect("put");
            txn.commit().expect("commit");
        }
        if dead_reader {
            assert!(env.readers().expect("readers").is_empty(), "the writer did not clear the dead reader's slot");
        }
        env.info().expect("info").first_unallocated
    };
    // Without history, the pages in use are those of a writer with no
    // reader (swept only at the commit's GC update, the first transaction
    // held back took a page more).
    let (clean, swept) = (used(false, false), used(true, false));
    assert!(swept <= clean, "{swept} pages in use after the dead reader, {clean} without it");
    // With it, at most the page the reader's snapshot held back while it
    // was needed (the tail page a later commit freed, refunded without it).
    let (clean, swept) = (used(false, true), used(true, true));
    assert!(swept <= clean + 1, "{swept} pages in use after the dead reader, {clean} without it (history)");
}

/// The GC update's own edits (its records, a page each for a long list)
/// take their pages from reclaimable GC records, not the file's tail, even
/// when the transaction itself took almost none. A reader pins 300 small
/// commits, each leaving a GC record of a few pages; then it ends, and one
/// transaction drops a table of about 3,000 pages (a drop frees pages
/// without copying any, and the main tree's edit takes the pages of one
/// small record). Its GC update needs a page for each of about 25 records
/// at 512-byte pages and has about none at hand: it reclaims more records
/// first, as many as its edits may need. Taking the pages from the tail
/// instead grew the file (found by mutation testing, which showed that
/// nothing checked this). With a growth step of one page, any page from
/// the tail grows the file.
#[test]
fn the_gc_update_takes_its_pages_from_the_gc() {
    for (d, step) in
        [(Durability::SyncDurable, 64 << 10), (Durability::SafeNoSync, 64 << 10), (Durability::SyncDurable, 512)]
    {
        let dir = tempdir();
        let env = Env::builder()
            .durability(d)
            .max_dbs(2)
            .geometry(Geometry {
                page_size: Some(512),
                size_now: Some(64 << 10),
                size_upper: Some(64 << 20),
                growth_step: Some(step),
                ..Default::default()
            })
            .open(dir.path())
            .expect("open");
        let mut txn = env.begin_rw_txn().expect("begin");
        let big = txn.create_db(Some("big"), rdbx::DbFlags::empty()).expect("create");
        for i in 0..6000u64 {
            txn.put(big, &key(i), &[3; 200], PutFlags::empty()).expect("put");
        }
        for i in 0..2000u64 {
            txn.put(Db::MAIN, &key(i), &[1; 20], PutFlags::empty()).expect("put");
        }
        txn.commit().expect("commit");
        env.sync().expect("sync");
        let reader = env.begin_ro_txn().expect("ro");
        for t in 0..300u64 {
            let mut txn = env.begin_rw_txn().expect("begin");
            txn.put(Db::MAIN, &key(t * 7 % 2000), &[t as u8; 20], PutFlags::empty()).expect("put");
            txn.commit().expect("commit");
        }
        drop(reader);
        env.sync().expect("sync");
        let before = env.gc_info().expect("gc_info");
        let big_pages = {
            let txn = env.begin_ro_txn().expect("ro");
            let s = txn.db_stat(big).expect("stat");
            s.leaf_pages + s.branch_pages + s.overflow_pages
        };
        assert!(big_pages >= 2900, "the table takes {big_pages} pages");
        assert!(before.pages_reclaimable >= 300, "{before:?}");
        let mut txn = env.begin_rw_txn().expect("begin");
        txn.drop_db(big).expect("drop");
        txn.commit().expect("commit");
        let after = env.gc_info().expect("gc_info");
        assert!(
            after.pages_allocated <= before.pages_allocated,
            "{d:?}, growth step {step}: the drop's commit grew the pages in use from {} to {} with {} reclaimable",
            before.pages_allocated,
            after.pages_allocated,
            before.pages_reclaimable
        );
    }
}

// ---------------------------------------------------------------------------
// A crash while creating a database

/// A complete new database's data file (three initial metas), as bytes.
fn fresh_data_file() -> Vec<u8> {
    let dir = tempdir();
    drop(Env::builder().open(dir.path()).expect("create"));
    std::fs::read(dir.path().join("mdbx.dat")).expect("read")
}

fn assert_opens_and_works(dir: &Path, what: &str) {
    let env = Env::builder().open(dir).unwrap_or_else(|e| panic!("{what}: open: {e:?}"));
    let mut txn = env.begin_rw_txn().expect("begin");
    txn.put(Db::MAIN, b"k", b"v", PutFlags::empty()).expect("put");
    txn.commit().expect("commit");
    drop(env);
    let env = Env::builder().open(dir).unwrap_or_else(|e| panic!("{what}: reopen: {e:?}"));
    assert_eq!(env.begin_ro_txn().expect("ro").get(Db::MAIN, b"k").expect("get"), Some(&b"v"[..]), "{what}");
}

#[test]
fn an_interrupted_creation_is_reinitialised() {
    let full = fresh_data_file();
    let ps = 4096;
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("first meta only (4 KiB)", full[..ps].to_vec()),
        ("two metas (8 KiB)", full[..2 * ps].to_vec()),
        ("zeros (64 KiB)", vec![0; 64 << 10]),
        ("zeros (100 bytes)", vec![0; 100]),
        ("first meta, then zeros to 64 KiB", {
            let mut v = full[..ps].to_vec();
            v.resize(64 << 10, 0);
            v
        }),
    ];
    // A torn first meta page: only its first 2 KiB written.
    let mut torn = full[..ps / 2].to_vec();
    torn.resize(ps / 2, 0);
    cases.push(("half a meta page", torn));
    for (what, bytes) in cases {
        let dir = tempdir();
        std::fs::write(dir.path().join("mdbx.dat"), &bytes).expect("write");
        // Read-only: refused with a clear error, nothing written.
        let ro = Env::builder().read_only(true).open(dir.path());
        assert!(matches!(ro, Err(Error::Invalid(_))), "{what}: read-only open gave {:?}", ro.err());
        assert_eq!(std::fs::read(dir.path().join("mdbx.dat")).expect("read"), bytes, "{what}: read-only open wrote");
        assert_opens_and_works(dir.path(), what);
    }
}

#[test]
fn a_file_that_held_a_commit_is_never_reinitialised() {
    let dir = tempdir();
    {
        let env = Env::builder().open(dir.path()).expect("create");
        let mut txn = env.begin_rw_txn().expect("begin");
        txn.put(Db::MAIN, b"precious", b"data", PutFlags::empty()).expect("put");
        txn.commit().expect("commit");
    }
    let path = dir.path().join("mdbx.dat");
    let good = std::fs::read(&path).expect("read");
    let ps = 4096;
    // Find the slot of the commit (txnid 4) and blank the two others.
    let env = Env::builder().read_only(true).open(dir.path()).expect("open");
    let recent = env.info().expect("info").recent_meta;
    drop(env);
    let mut damaged = good.clone();
    for i in (0..3).filter(|&i| i != recent) {
        damaged[i * ps..(i + 1) * ps].fill(0);
    }
    std::fs::write(&path, &damaged).expect("write");
    let env = Env::builder().open(dir.path()).expect("open with one meta");
    assert_eq!(env.begin_ro_txn().expect("ro").get(Db::MAIN, b"precious").expect("get"), Some(&b"data"[..]));
    drop(env);
    // Garbage in a slot, the others blank: refused, not re-initialised.
    let mut garbage = vec![0u8; good.len()];
    garbage[..64].fill(0x5A);
    std::fs::write(&path, &garbage).expect("write");
    assert!(Env::builder().open(dir.path()).is_err(), "a file with unknown bytes in its first meta opened");
    assert_eq!(std::fs::read(&path).expect("read"), garbage, "an unrecognised file was changed");
    // Data past the slots: refused, not re-initialised.
    let mut with_data = vec![0u8; good.len()];
    with_data[..ps].copy_from_slice(&good[..ps]);
    with_data[5 * ps..6 * ps].copy_from_slice(&good[3 * ps..4 * ps]);
    if recent != 0 {
        // slot 0 of `good` holds an initial meta: the case is an
        // unfinished-looking head followed by someone's data.
        std::fs::write(&path, &with_data).expect("write");
        assert!(Env::builder().open(dir.path()).is_err(), "initial metas followed by data were re-initialised");
        assert_eq!(std::fs::read(&path).expect("read"), with_data, "a file holding data was changed");
    }
}

/// Child process entry: creates databases in `DIR/0`, `DIR/1`, ... until
/// killed.
#[test]
fn creating_child_entry() {
    let Ok(dir) = std::env::var("RDBX_SPACE_CREATOR") else { return };
    for i in 0.. {
        let d = Path::new(&dir).join(i.to_string());
        drop(Env::builder().geometry(Geometry { page_size: Some(4096), ..Default::default() }).open(&d));
    }
}

#[test]
fn kill_9_during_creation_leaves_a_file_that_opens() {
    let kills = std::env::var("RDBX_CREATION_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(60u32);
    let root = tempdir();
    let mut seed = 0x1234_5678_9abc_def1u64;
    let (mut partial, mut dirs) = (0, 0);
    for k in 0..kills {
        let base = root.path().join(k.to_string());
        std::fs::create_dir(&base).expect("mkdir");
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args(["creating_child_entry", "--exact", "--nocapture", "--test-threads=1"])
            .env("RDBX_SPACE_CREATOR", &base)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        // Wait until it has started creating, then kill it a little later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !base.join("0").exists() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(std::time::Duration::from_micros(seed % 3000));
        child.kill().expect("kill");
        child.wait().expect("wait");
        for e in std::fs::read_dir(&base).expect("readdir") {
            let d = e.expect("entry").path();
            let data = d.join("mdbx.dat");
            let Ok(meta) = std::fs::metadata(&data) else { continue };
            dirs += 1;
            if meta.len() < 3 * 4096 || std::fs::read(&data).expect("read")[..3 * 4096].iter().all(|&b| b == 0) {
                partial += 1;
            }
            assert_opens_and_works(&d, &format!("{}", d.display()));
        }
    }
    eprintln!("{kills} kills: {dirs} databases, {partial} of them left short or blank by the kill; all open");
}

#[test]
fn gc_info_names_what_retains_pages() {
    for d in [Durability::SyncDurable, Durability::SafeNoSync] {
        let dir = tempdir();
        let env = open_small(dir.path(), 64 * MIB, d);
        let put_some = |from: u64| {
            let mut txn = env.begin_rw_txn().expect("begin");
            for i in from..from + 300 {
                txn.put(Db::MAIN, &key(i % 500), &[i as u8; 100], PutFlags::empty()).expect("put");
            }
            txn.commit().expect("commit");
        };
        put_some(0);
        if d == Durability::SyncDurable {
            assert_eq!(env.gc_info().expect("gc_info").retained_by, None, "nothing retains pages");
        }
        // Make the last commit steady, so the reader is the oldest holder.
        env.sync().expect("sync");
        let reader = env.begin_ro_txn().expect("ro");
        let snap = reader.id();
        for t in 1..=5 {
            put_some(t * 300);
        }
        let g = env.gc_info().expect("gc_info");
        assert_eq!(
            g.retained_by,
            Some(rdbx::Retainer::Reader { pid: std::process::id(), txnid: snap, lag: 5 }),
            "{d:?}: {g:?}"
        );
        assert_eq!(g.max_reader_lag, 5);
        assert!(g.max_retained_pages > 0, "{g:?}");
        drop(reader);
        let g = env.gc_info().expect("gc_info");
        // Lazy commits on tmpfs are steady: nothing retains pages there either.
        match d {
            Durability::SyncDurable => assert_eq!(g.retained_by, None, "{g:?}"),
            _ if in_memory_fs(dir.path()) => assert_eq!(g.retained_by, None, "{g:?}"),
            _ => assert!(matches!(g.retained_by, Some(rdbx::Retainer::SteadyCommit { .. })), "{g:?}"),
        }
        assert_eq!(g.max_reader_lag, 0);
    }
}

// ---------------------------------------------------------------------------
// A full filesystem

/// A small tmpfs mounted for one test (root only); unmounted on drop.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(bytes: usize) -> Option<SmallFs> {
        // The effective user, from /proc (no libc call needed).
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let euid = status.lines().find(|l| l.starts_with("Uid:"))?.split_whitespace().nth(2)?.to_string();
        if euid != "0" {
            return None;
        }
        let dir = tempdir();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallFs { dir })
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

fn is_enospc(e: &Error) -> bool {
    matches!(e, Error::Io(io) if io.raw_os_error() == Some(28))
}

fn full_filesystem_then_space_freed(d: Durability) {
    let Some(fs) = SmallFs::mount(4 * MIB) else {
        eprintln!("skipped: mounting a small tmpfs needs root (run the suite as root to test ENOSPC)");
        return;
    };
    let ballast = fs.dir.path().join("ballast");
    std::fs::write(&ballast, vec![1u8; 256 << 10]).expect("ballast");
    let db = fs.dir.path().join("db");
    let env = open_small(&db, 64 * MIB, d);
    // Fill until even one record does not fit on the filesystem.
    let (mut next, mut batch, mut failures) = (0u64, 64u64, 0);
    loop {
        let mut txn = env.begin_rw_txn().expect("begin");
        let r = (0..batch).try_for_each(|i| txn.put(Db::MAIN, &key(next + i), &[0xEE; 100], PutFlags::empty()));
        match r.and_then(|()| txn.commit()) {
            Ok(()) => next += batch,
            Err(e) if is_enospc(&e) || matches!(e, Error::MapFull) => {
                failures += 1;
                if batch == 1 {
                    break;
                }
                batch /= 2;
            }
            Err(e) => panic!("{d:?}: filling: {e:?}"),
        }
    }
    assert!(failures > 0 && next > 1000, "{d:?}: the filesystem never filled ({next} records)");
    eprintln!("{d:?}: the filesystem filled up after {next} records ({failures} failed commits)");
    // The last commit is intact.
    let count = |env: &Env| env.begin_ro_txn().and_then(|t| t.db_stat(Db::MAIN)).expect("stat").entries;
    assert_eq!(count(&env), next, "{d:?}: records after ENOSPC");
    // Free a little space (256 KiB): writing works again, for good. 2,000
    // transactions overwrite up to 19 records each, every tenth also adds
    // one (an engine that leaks pages runs out of the freed space again).
    std::fs::remove_file(&ballast).expect("rm ballast");
    let mut x = 99u64;
    for j in 0..2000u64 {
        let mut txn = env.begin_rw_txn().expect("begin");
        if j % 10 == 0 {
            txn.put(Db::MAIN, &key(next + j / 10), &[0xCD; 100], PutFlags::empty()).expect("put");
        }
        for _ in 0..j % 20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            txn.put(Db::MAIN, &key(x % next), &[x as u8; 100], PutFlags::empty()).expect("put");
        }
        txn.commit().unwrap_or_else(|e| panic!("{d:?}: commit {j} after freeing space: {e:?}"));
    }
    assert_eq!(count(&env), next + 200);
    let report = env.check(&Default::default(), &mut |_| {}).expect("check");
    assert_eq!(report.problem_count(), 0, "{d:?}: {report:?}");
    drop(env);
}

#[test]
fn writable_again_after_enospc_durable() {
    full_filesystem_then_space_freed(Durability::SyncDurable);
}

#[test]
fn writable_again_after_enospc_no_meta_sync() {
    full_filesystem_then_space_freed(Durability::NoMetaSync);
}

#[test]
fn writable_again_after_enospc_safe_nosync() {
    full_filesystem_then_space_freed(Durability::SafeNoSync);
}

#[test]
fn writable_again_after_enospc_utterly_nosync() {
    full_filesystem_then_space_freed(Durability::UtterlyNoSync);
}

// ---------------------------------------------------------------------------
// The own GC record made from the consumed one

/// The GC records (txnid, pages) and the last txnid; the checker's verdict.
fn gc_records(env: &Env) -> (Vec<(u64, u64)>, u64) {
    let s = env.space().expect("space");
    let report = env.check(&Default::default(), &mut |_| {}).expect("check");
    assert_eq!(report.problem_count(), 0, "{report:?}");
    (s.gc_records.iter().map(|r| (r.txnid, r.pages)).collect(), s.info.last_txnid)
}

/// A durable environment whose main table holds 3,000 records of 40 bytes.
fn loaded_env(dir: &Path) -> Env {
    let env = open_small(dir, 64 << 20, Durability::SyncDurable);
    let mut txn = env.begin_rw_txn().expect("begin");
    for i in 0..3000u64 {
        txn.put(Db::MAIN, &key(i), &[1; 40], PutFlags::empty()).expect("put");
    }
    txn.commit().expect("commit");
    env
}

/// A small commit consumes its predecessor's GC record and leaves it in
/// place; its GC update gives it the commit's own id and fills it
/// (`gc::settle_stale`). After each such commit the GC holds one record,
/// the commit's, and the checker finds every page in use or free exactly
/// once: a record left stale, renamed wrongly or filled with the old list
/// shows there.
#[test]
fn small_commits_turn_the_consumed_record_into_their_own() {
    let dir = tempdir();
    let env = loaded_env(dir.path());
    for t in 0..60u64 {
        let mut txn = env.begin_rw_txn().expect("begin");
        txn.put(Db::MAIN, &key(t * 37 % 3000), &[t as u8; 40], PutFlags::empty()).expect("put");
        if t % 3 == 1 {
            // A child that changes the GC (its commit's edits) and is
            // aborted, then one that commits.
            let mut child = txn.begin_nested_txn().expect("child");
            for i in 0..200u64 {
                child.put(Db::MAIN, &key(i * 13 % 3000), &[9; 60], PutFlags::empty()).expect("put");
            }
            child.abort();
            let mut child = txn.begin_nested_txn().expect("child");
            child.del(Db::MAIN, &key(t * 41 % 3000), None).expect("del");
            child.commit().expect("child commit");
        }
        txn.commit().expect("commit");
        let (records, last) = gc_records(&env);
        assert!(t < 2 || records.len() == 1 && records[0].0 == last, "commit {t}: {records:?}, last {last}");
    }
    // An overwrite of the same size splits nothing: such a commit copies
    // pages and creates none (the GC's leaf too: the record is renamed in
    // a copy of it, where deleting it emptied the GC and the own record
    // then took a new leaf).
    let before = env.page_ops();
    for t in 0..20u64 {
        let mut txn = env.begin_rw_txn().expect("begin");
        txn.put(Db::MAIN, &key(t * 53 % 3000), &[7; 40], PutFlags::empty()).expect("put");
        txn.commit().expect("commit");
    }
    let after = env.page_ops();
    assert_eq!(after.newly, before.newly, "pages created by 20 one-put commits");
    assert!(after.cow >= before.cow + 40, "{before:?} -> {after:?}");
    assert_eq!(gc_records(&env).0.len(), 1);
}

/// The consumed record is left in place only while it is the last of the
/// GC; a transaction that consumes older records after it (deleting them
/// edits the GC's leaf) finds it again at the update. Readers make the GC
/// hold many records, then a transaction needs them all.
#[test]
fn a_consumed_record_is_found_again_after_older_ones_go() {
    let dir = tempdir();
    let env = loaded_env(dir.path());
    for round in 0..5u64 {
        let reader = env.begin_ro_txn().expect("ro");
        for t in 0..20u64 {
            let mut txn = env.begin_rw_txn().expect("begin");
            txn.put(Db::MAIN, &key((round * 20 + t) * 31 % 3000), &[t as u8; 40], PutFlags::empty()).expect("put");
            txn.commit().expect("commit");
        }
        drop(reader);
        let (before, _) = gc_records(&env);
        assert!(before.len() >= 20, "round {round}: {before:?}");
        // Rewrites a tenth of the table: more pages than the newest record
        // lists, so older records are consumed after it.
        let mut txn = env.begin_rw_txn().expect("begin");
        for i in (0..3000u64).step_by(10) {
            txn.put(Db::MAIN, &key(i + round), &[round as u8; 44], PutFlags::empty()).expect("put");
        }
        txn.commit().expect("commit");
        let (after, last) = gc_records(&env);
        assert!(after.iter().all(|r| r.0 < before[0].0 || r.0 <= last), "{after:?}");
        assert!(after.len() < before.len(), "round {round}: the records were not consumed: {before:?} -> {after:?}");
    }
}

/// The same under constant spilling (a dirty budget of one page, 256-byte
/// pages), with named tables created, filled and dropped: the GC's leaf may
/// be spilled when a record is consumed and left in place, and a spilled
/// page is changed in place when taken back, so only a leaf neither dirty
/// nor spilled tells the update the record is where it was. (The model
/// test found a record renamed at its old index in a changed leaf.)
#[test]
fn consumed_records_left_in_place_under_spilling() {
    for seed in 1..=6u64 {
        let dir = tempdir();
        let env = Env::builder()
            .max_dbs(4)
            .durability(Durability::SyncDurable)
            .dirty_page_limit(1)
            .geometry(Geometry {
                page_size: Some(256),
                size_lower: Some(1024),
                size_upper: Some(64 << 20),
                growth_step: Some(1024),
                shrink_threshold: Some(2048),
                ..Default::default()
            })
            .open(dir.path())
            .expect("open");
        let mut rng = common::Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut reader = None;
        for step in 0..150u64 {
            let mut txn = env.begin_rw_txn().expect("begin");
            for _ in 0..=rng.below(3) {
                let t = txn.create_db(Some(["a", "b"][rng.below(2) as usize]), rdbx::DbFlags::empty()).expect("db");
                match rng.below(6) {
                    0..=2 => {
                        let (base, n, len) = (rng.below(1000), rng.below(200), rng.below(40) as usize);
                        for i in 0..n {
                            txn.put(t, &key(base + i), &vec![step as u8; len], PutFlags::empty()).expect("put");
                        }
                    }
                    3 | 4 => {
                        for i in 0..1000 {
                            if rng.below(3) == 0 {
                                txn.del(t, &key(i), None).expect("del");
                            }
                        }
                    }
                    _ => txn.drop_db(t).expect("drop"),
                }
            }
            txn.commit().unwrap_or_else(|e| panic!("seed {seed}, step {step}: {e:?}"));
            if rng.below(8) == 0 {
                reader = match reader {
                    None => Some(env.begin_ro_txn().expect("ro")),
                    Some(_) => None,
                };
            }
            let report = env.check(&Default::default(), &mut |_| {}).expect("check");
            assert_eq!(report.problem_count(), 0, "seed {seed}, step {step}: {report:?}");
        }
        drop(reader);
    }
}
