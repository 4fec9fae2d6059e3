//! Interoperability with the real libmdbx 0.13 (lock format v6) in a child
//! process: the `mdbx013` binary of tests/oracle013 (mdbx-sys 13.x cannot be
//! linked into this crate next to the 14.x oracle). scripts/test.sh builds it
//! first, into tests/oracle013/target/release/mdbx013; without it these tests
//! print why and pass without checking anything. `MDBX013=/path/to/mdbx013`
//! points to another build.
//!
//! * libmdbx 0.13 creates the database and keeps it open (a reader, or a
//!   writer between transactions) while rdbx joins, reads and writes;
//! * rdbx creates it with lock format v6 and libmdbx 0.13 joins (and cannot
//!   when rdbx created v7);
//! * both write in turn in every durability mode, compared with a model;
//! * a killed 0.13 reader's slot is cleared by rdbx, a killed rdbx reader's
//!   by libmdbx 0.13;
//! * a v6 lock file left by a killed 0.13 process stays v6 when rdbx opens
//!   the database next, so 0.13 can join;
//! * libmdbx 0.13's `mdbx_env_chk` is clean at the end of each.

// `u64::is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
#![allow(clippy::manual_is_multiple_of)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use rdbx::{Db, Durability, Env, Geometry, LockFormat, PutFlags};

/// Child mode of this test binary: an rdbx process holding a reader.
const CHILD_ENV: &str = "RDBX_INTEROP013_CHILD";

fn oracle013() -> Option<PathBuf> {
    let p = match std::env::var_os("MDBX013") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("oracle013/target/release/mdbx013"),
    };
    if p.is_file() {
        return Some(p);
    }
    eprintln!(
        "SKIPPED: {} not found; build it with `cargo build --release --manifest-path tests/oracle013/Cargo.toml \
         --target-dir tests/oracle013/target` (scripts/test.sh does) or set MDBX013",
        p.display()
    );
    None
}

macro_rules! need_oracle {
    () => {
        match oracle013() {
            Some(b) => b,
            None => return,
        }
    };
}

type Model = BTreeMap<String, String>;

/// Runs a one-shot mdbx013 command; `Ok(stdout)` or `Err(stderr)`.
fn run(bin: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(bin).args(args).output().unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(format!(
            "mdbx013 {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn parse_records(text: &str) -> Model {
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn mdbx_read(bin: &Path, db: &Path) -> Model {
    parse_records(&run(bin, &["read", db.to_str().unwrap()]).unwrap())
}

fn mdbx_chk_clean(bin: &Path, db: &Path) {
    let r = run(bin, &["chk", db.to_str().unwrap()]);
    assert!(r.is_ok(), "libmdbx 0.13 chk: {r:?}");
}

/// A running `mdbx013 session`.
struct Session {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    pid: u32,
}

impl Session {
    fn start(bin: &Path, db: &Path, mode: &str) -> Session {
        let mut child = Command::new(bin)
            .args(["session", db.to_str().unwrap(), "--mode", mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        assert!(line.starts_with("ready"), "mdbx013 session did not start: {line:?} {:?}", child.wait());
        let pid = child.id();
        Session { child, input, output, pid }
    }

    /// Sends one command; returns (the lines it printed, its "ok ..." line).
    /// An "error ..." answer panics.
    fn cmd(&mut self, c: &str) -> (Vec<String>, String) {
        writeln!(self.input, "{c}").unwrap();
        self.input.flush().unwrap();
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(self.output.read_line(&mut line).unwrap() > 0, "mdbx013 session ended during {c:?}");
            let line = line.trim_end().to_string();
            if line.starts_with("ok") {
                return (lines, line);
            }
            assert!(!line.starts_with("error"), "mdbx013 session: {c:?}: {line}");
            if line != "end" {
                lines.push(line);
            }
        }
    }

    fn read(&mut self) -> Model {
        parse_records(&self.cmd("read").0.join("\n"))
    }

    fn quit(mut self) {
        self.cmd("quit");
        assert!(self.child.wait().unwrap().success());
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn rdbx_read(env: &Env) -> Model {
    let txn = env.begin_ro_txn().unwrap();
    let db = txn.open_db(None).unwrap();
    let mut c = txn.cursor(db).unwrap();
    let mut m = Model::new();
    while let Some((k, v)) = c.next().unwrap() {
        m.insert(String::from_utf8(k.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap());
    }
    m
}

fn rdbx_write(env: &Env, ops: &[(String, Option<String>)], model: &mut Model) {
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.open_db(None).unwrap();
    for (k, v) in ops {
        match v {
            Some(v) => {
                txn.put(db, k.as_bytes(), v.as_bytes(), PutFlags::empty()).unwrap();
                model.insert(k.clone(), v.clone());
            }
            None => {
                let _ = txn.del(db, k.as_bytes(), None).unwrap();
                model.remove(k);
            }
        }
    }
    txn.commit().unwrap();
}

/// A small deterministic generator of put/delete batches.
struct Ops(u64);

impl Ops {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn batch(&mut self, n: usize, tag: &str) -> Vec<(String, Option<String>)> {
        (0..n)
            .map(|_| {
                let k = format!("k{:04}", self.next() % 300);
                if self.next() % 4 == 0 {
                    (k, None)
                } else {
                    let len = 1 + self.next() as usize % 600;
                    (k, Some(format!("{tag}{}", "v".repeat(len))))
                }
            })
            .collect()
    }
}

fn lck_magic(db: &Path) -> u64 {
    let b = std::fs::read(db.join("mdbx.lck")).unwrap();
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

const V6_MAGIC: u64 = 0x59659DBDEF4C1106;

#[test]
fn rdbx_joins_a_running_libmdbx_013() {
    let bin = need_oracle!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    run(&bin, &["write", db.to_str().unwrap(), "a=1", "b=2", "c=3"]).unwrap();
    let mut s = Session::start(&bin, &db, "durable");
    let (_, ok) = s.cmd("begin-read");
    assert_eq!(lck_magic(&db), V6_MAGIC, "libmdbx 0.13 runs lock format v6");

    // rdbx joins whatever it would create.
    let env = Env::builder().lock_format(LockFormat::V7).open(&db).unwrap();
    assert!(!env.opened_exclusively());
    assert_eq!(env.lock_format(), Some(LockFormat::V6));
    let mut model: Model = [("a", "1"), ("b", "2"), ("c", "3")].map(|(k, v)| (k.into(), v.into())).into();
    assert_eq!(rdbx_read(&env), model);
    // rdbx sees the 0.13 reader (its snapshot is the newest one).
    let held: u64 = ok.trim_start_matches("ok txnid=").parse().unwrap();
    let readers = env.readers().unwrap();
    assert!(readers.iter().any(|r| r.pid == s.pid && r.txnid == Some(held)), "{readers:?}");

    // rdbx writes; libmdbx 0.13 sees it, while its held snapshot does not.
    rdbx_write(
        &env,
        &[("b".into(), Some("20".into())), ("a".into(), None), ("d".into(), Some("4".into()))],
        &mut model,
    );
    assert_eq!(s.read(), model);
    let (held_lines, _) = s.cmd("held");
    assert_eq!(held_lines, ["a=1", "b=2", "c=3"]);
    // libmdbx 0.13 writes (the writer mutex at 320 is shared); rdbx sees it.
    s.cmd("put e 5");
    s.cmd("del c");
    s.cmd("commit");
    model.insert("e".into(), "5".into());
    model.remove("c");
    assert_eq!(rdbx_read(&env), model);
    // An rdbx reader keeps its snapshot while libmdbx 0.13 writes.
    let r = env.begin_ro_txn().unwrap();
    s.cmd("put f 6");
    s.cmd("commit");
    let rdb = r.open_db(None).unwrap();
    assert_eq!(r.get(rdb, b"f").unwrap(), None);
    drop(r);
    model.insert("f".into(), "6".into());
    assert_eq!(rdbx_read(&env), model);
    s.cmd("end-read");
    s.quit();
    drop(env);
    assert_eq!(mdbx_read(&bin, &db), model);
    mdbx_chk_clean(&bin, &db);
}

#[test]
fn libmdbx_013_joins_rdbx_created_v6() {
    let bin = need_oracle!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbs = db.to_str().unwrap();

    // Created as v7 (the default), a running rdbx keeps libmdbx 0.13 out.
    let env = Env::open(&db).unwrap();
    assert_eq!(env.lock_format(), Some(LockFormat::V7));
    let err = run(&bin, &["write", dbs, "x=1"]).unwrap_err();
    assert!(err.contains("MDBX_VERSION_MISMATCH"), "{err}");
    drop(env);

    // Created as v6, it lets it in.
    let env = Env::builder().lock_format(LockFormat::V6).open(&db).unwrap();
    assert!(env.opened_exclusively());
    assert_eq!(env.lock_format(), Some(LockFormat::V6));
    assert_eq!(lck_magic(&db), V6_MAGIC);
    let mut model = Model::new();
    rdbx_write(&env, &[("r".into(), Some("1".into()))], &mut model);
    // An rdbx reader holds a snapshot meanwhile.
    let r = env.begin_ro_txn().unwrap();
    run(&bin, &["write", dbs, "m=2", "-r"]).unwrap();
    model.insert("m".into(), "2".into());
    model.remove("r");
    assert_eq!(mdbx_read(&bin, &db), model);
    assert_eq!(rdbx_read(&env), model);
    let rdb = r.open_db(None).unwrap();
    assert_eq!(r.get(rdb, b"r").unwrap(), Some(&b"1"[..]));
    drop(r);
    // A libmdbx 0.13 session and rdbx write in turn.
    let mut s = Session::start(&bin, &db, "durable");
    for i in 0..5 {
        s.cmd(&format!("put s{i} {i}"));
        s.cmd("commit");
        model.insert(format!("s{i}"), i.to_string());
        rdbx_write(&env, &[(format!("t{i}"), Some(i.to_string()))], &mut model);
        assert_eq!(s.read(), model);
        assert_eq!(rdbx_read(&env), model);
    }
    s.quit();
    drop(env);
    assert_eq!(mdbx_read(&bin, &db), model);
    mdbx_chk_clean(&bin, &db);
}

#[test]
fn alternating_writes_in_every_durability_mode() {
    let bin = need_oracle!();
    let modes = [
        (Durability::SyncDurable, "durable"),
        (Durability::NoMetaSync, "nometasync"),
        (Durability::SafeNoSync, "safenosync"),
        (Durability::UtterlyNoSync, "utterlynosync"),
    ];
    for (round, (durability, mode)) in modes.into_iter().enumerate() {
        for rdbx_first in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("db");
            let mut model = Model::new();
            let (env, mut s) = if rdbx_first {
                let env = Env::builder().lock_format(LockFormat::V6).durability(durability).open(&db).unwrap();
                let s = Session::start(&bin, &db, mode);
                (env, s)
            } else {
                let s = Session::start(&bin, &db, mode);
                let env = Env::builder().durability(durability).open(&db).unwrap();
                (env, s)
            };
            assert_eq!(env.lock_format(), Some(LockFormat::V6), "{mode}");
            let mut gen = Ops(round as u64 * 2 + u64::from(rdbx_first));
            for step in 0..24 {
                let ops = gen.batch(20, &format!("{step}"));
                if step % 2 == 0 {
                    rdbx_write(&env, &ops, &mut model);
                } else {
                    for (k, v) in &ops {
                        match v {
                            Some(v) => {
                                s.cmd(&format!("put {k} {v}"));
                                model.insert(k.clone(), v.clone());
                            }
                            None => {
                                s.cmd(&format!("del {k}"));
                                model.remove(k);
                            }
                        }
                    }
                    s.cmd("commit");
                }
                assert_eq!(rdbx_read(&env), model, "{mode} step {step}: rdbx");
                assert_eq!(s.read(), model, "{mode} step {step}: libmdbx 0.13");
            }
            env.sync().unwrap();
            s.quit();
            drop(env);
            assert_eq!(mdbx_read(&bin, &db), model, "{mode}");
            mdbx_chk_clean(&bin, &db);
        }
    }
}

/// Child mode: an rdbx process holding a read transaction, killed by the test.
#[test]
fn child_process_entry() {
    let Ok(db) = std::env::var(CHILD_ENV) else {
        return;
    };
    let env = Env::open(&db).unwrap();
    let txn = env.begin_ro_txn().unwrap();
    println!("ready {}", txn.id());
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    std::process::abort();
}

#[test]
fn dead_readers_are_cleared_across_libraries() {
    let bin = need_oracle!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    run(&bin, &["write", db.to_str().unwrap(), "a=1"]).unwrap();
    let mut keep = Session::start(&bin, &db, "durable"); // keeps the v6 file in use
    let env = Env::open(&db).unwrap();
    assert_eq!(env.lock_format(), Some(LockFormat::V6));

    // A killed libmdbx 0.13 reader: rdbx clears its slot.
    let mut s = Session::start(&bin, &db, "durable");
    s.cmd("begin-read");
    let dead = s.pid;
    assert!(env.readers().unwrap().iter().any(|r| r.pid == dead));
    s.kill();
    assert_eq!(env.reader_check().unwrap(), 1);
    assert!(env.readers().unwrap().iter().all(|r| r.pid != dead));

    // A killed rdbx reader: libmdbx 0.13 clears its slot.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_process_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the rdbx child exited early: {:?}", child.wait());
    }
    let dead = child.id();
    let (lines, _) = keep.cmd("readers");
    assert!(lines.iter().any(|l| l.split(' ').nth(1) == Some(&dead.to_string())), "{lines:?}");
    drop(child.stdin.take());
    assert!(!child.wait().unwrap().success(), "the child aborts");
    let (_, ok) = keep.cmd("reader-check");
    assert_eq!(ok, "ok dead=1");
    let (lines, _) = keep.cmd("readers");
    assert!(lines.iter().all(|l| l.split(' ').nth(1) != Some(&dead.to_string())), "{lines:?}");
    assert!(env.readers().unwrap().iter().all(|r| r.pid != dead));
    keep.quit();
    drop(env);
    mdbx_chk_clean(&bin, &db);
}

#[test]
fn v6_lock_file_left_by_a_killed_013_process_stays_v6() {
    let bin = need_oracle!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbs = db.to_str().unwrap();
    let mut s = Session::start(&bin, &db, "durable");
    s.cmd("put a 1");
    s.cmd("commit");
    s.cmd("begin-read");
    s.kill();
    assert_eq!(lck_magic(&db), V6_MAGIC, "a killed process leaves its lock file");

    // rdbx is now the only user: it rewrites the lock file, as v6.
    let env = Env::open(&db).unwrap();
    assert!(env.opened_exclusively());
    assert_eq!(env.lock_format(), Some(LockFormat::V6));
    assert!(env.readers().unwrap().is_empty(), "the rewritten table has no stale slot");
    // So libmdbx 0.13 can join while rdbx runs.
    run(&bin, &["write", dbs, "b=2"]).unwrap();
    let mut model = Model::new();
    model.insert("a".into(), "1".into());
    model.insert("b".into(), "2".into());
    assert_eq!(rdbx_read(&env), model);
    drop(env);
    mdbx_chk_clean(&bin, &db);
}

/// A database shared with libmdbx 0.13 (lock format v6): small steps, so a
/// pinned GC makes the writer want to grow the file at once.
fn park_env(db: &Path) -> Env {
    let env = Env::builder()
        .lock_format(LockFormat::V6)
        .geometry(Geometry {
            page_size: Some(4096),
            size_lower: Some(64 << 10),
            size_now: Some(64 << 10),
            size_upper: Some(256 << 20),
            growth_step: Some(64 << 10),
            ..Default::default()
        })
        .open(db)
        .unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    for i in 0..300u64 {
        txn.put(Db::MAIN, format!("k{i:04}").as_bytes(), &[b'a'; 200], PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    env
}

/// A libmdbx 0.13 reader parks; rdbx's writer, short of space, ousts it (in
/// the v6 reader table); libmdbx's unpark reports MDBX_OUSTED.
#[test]
fn rdbx_writer_ousts_a_parked_libmdbx_013_reader() {
    let bin = need_oracle!();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let env = park_env(&db);
    let mut s = Session::start(&bin, &db, "durable");
    let (_, ok) = s.cmd("begin-read");
    let txnid: u64 = ok.split("txnid=").nth(1).unwrap().trim().parse().unwrap();
    s.cmd("park");
    let slot = env.readers().unwrap().into_iter().find(|r| r.pid == s.pid).expect("libmdbx 0.13 slot");
    assert_eq!((slot.tid, slot.txnid), (u64::MAX, Some(txnid)), "libmdbx 0.13's parked slot");
    for r in 0..200u8 {
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..300u64 {
            txn.put(Db::MAIN, format!("k{i:04}").as_bytes(), &[b'b' + r % 20; 200], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    let slot = env.readers().unwrap().into_iter().find(|r| r.pid == s.pid).expect("libmdbx 0.13 slot");
    assert_eq!((slot.tid, slot.txnid), (u64::MAX - 1, None), "rdbx did not oust libmdbx 0.13's parked reader");
    let (_, ok) = s.cmd("unpark");
    assert_eq!(ok.trim(), "ok rc=-30411", "libmdbx 0.13's unpark after being ousted (MDBX_OUSTED)");
    s.cmd("end-read");
    s.quit();
    assert!(std::fs::metadata(db.join("mdbx.dat")).unwrap().len() < 1 << 20, "the file grew");
    drop(env);
    mdbx_chk_clean(&bin, &db);
}

/// An rdbx reader parks in a v6 lock file; a libmdbx 0.13 writer, short of
/// space, ousts it; rdbx's unpark reports `Ousted`.
#[test]
fn libmdbx_013_writer_ousts_a_parked_rdbx_reader() {
    let bin = need_oracle!();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let env = park_env(&db);
    let mut reader = env.begin_ro_txn().unwrap();
    reader.park().unwrap();
    let mut s = Session::start(&bin, &db, "durable");
    for r in 0..100u8 {
        // A new value each round: libmdbx skips a put of the same value.
        let value = char::from(b'c' + r % 20).to_string().repeat(200);
        for i in 0..300u64 {
            s.cmd(&format!("put k{i:04} {value}"));
        }
        s.cmd("commit");
    }
    s.quit();
    let slots = env.readers().unwrap();
    let size = std::fs::metadata(db.join("mdbx.dat")).unwrap().len();
    let r = reader.unpark();
    assert!(
        matches!(r, Err(rdbx::Error::Ousted)),
        "libmdbx 0.13 did not oust rdbx's parked reader: {r:?}, slots {slots:?}, file {size} bytes"
    );
}

/// rdbx names the libmdbx 0.13 process that holds the write lock (the
/// owner glibc records in the lock file's robust mutex).
#[test]
fn rdbx_names_a_libmdbx_013_writer() {
    let bin = need_oracle!();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let env = park_env(&db);
    assert_eq!(env.writer_pid(), None);
    let mut s = Session::start(&bin, &db, "durable");
    s.cmd("put k v");
    assert_eq!(env.writer_pid(), Some(s.pid), "libmdbx 0.13 holds the write lock");
    s.cmd("commit");
    assert_eq!(env.writer_pid(), None);
    s.quit();
}
