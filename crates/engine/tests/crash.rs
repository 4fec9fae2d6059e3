//! Power loss at any point of a commit, in every durability mode.
//!
//! A crash-image model sits behind the `io` seam (`EnvBuilder::io_faults`): it
//! sees every write, sync and size change of the data file and keeps the
//! *durable* image (what a sync made stable) apart from the writes still
//! pending in the page cache. Before every write and every sync of a run of
//! commits it takes crash images: the durable image alone, with every pending
//! write, and with a random subset of pending pages (the disk may have
//! written any of them). Each image is then opened as after a reboot (the
//! metas' boot id no longer matches this boot) and must hold exactly the
//! records of one commit, within what the mode promises:
//!
//! * SyncDurable: the last acknowledged commit, or the one in flight;
//! * NoMetaSync, SafeNoSync, UtterlyNoSync: a commit no older than the last
//!   completed `Env::sync` and no newer than the one in flight;
//!
//! and the integrity check must find no problem.
//!
//! Knob: `RDBX_CRASH_COMMITS` (commits per mode, default 80).

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rdbx::{Db, Durability, Env, Geometry, PutFlags};

const PS: usize = 4096;
/// Offset of the boot id inside a meta page: page header (20) + 192.
const BOOTID_OFF: usize = 20 + 192;

enum Pending {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

/// A crash image and what was acknowledged when it was taken.
struct Image {
    bytes: Vec<u8>,
    /// Commits acknowledged (returned Ok) before the crash.
    acked: usize,
    /// The newest commit made durable by a completed `Env::sync`.
    synced: usize,
    what: &'static str,
}

struct Model {
    durable: Vec<u8>,
    pending: Vec<Pending>,
    images: Vec<Image>,
    rng: u64,
}

struct CrashIo {
    model: Mutex<Model>,
    acked: Arc<AtomicUsize>,
    synced: Arc<AtomicUsize>,
}

fn apply(img: &mut Vec<u8>, op: &Pending) {
    match op {
        Pending::Write(off, bytes) => {
            let end = *off as usize + bytes.len();
            if img.len() < end {
                img.resize(end, 0);
            }
            img[*off as usize..end].copy_from_slice(bytes);
        }
        Pending::SetLen(len) => img.resize(*len as usize, 0),
    }
}

impl CrashIo {
    /// Takes the crash images for a power loss right now.
    fn snapshot(&self) {
        let mut m = self.model.lock().expect("model");
        let (acked, synced) = (self.acked.load(Ordering::SeqCst), self.synced.load(Ordering::SeqCst));
        let base = m.durable.clone();
        let mut all = base.clone();
        let mut some = base.clone();
        let mut rng = m.rng;
        for op in &m.pending {
            apply(&mut all, op);
            match op {
                Pending::Write(off, bytes) => {
                    // Each page of the write reaches the disk or not.
                    for (i, chunk) in bytes.chunks(PS).enumerate() {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        if rng & 1 == 1 {
                            apply(&mut some, &Pending::Write(off + (i * PS) as u64, chunk.to_vec()));
                        }
                    }
                }
                op => apply(&mut some, op),
            }
        }
        m.rng = rng;
        let pending = !m.pending.is_empty();
        m.images.push(Image { bytes: base, acked, synced, what: "durable writes only" });
        if pending {
            m.images.push(Image { bytes: all, acked, synced, what: "every pending write" });
            m.images.push(Image { bytes: some, acked, synced, what: "some pending pages" });
        }
    }
}

impl rdbx::IoFaults for CrashIo {
    fn before_write(&self, _offset: u64, _len: usize) -> io::Result<()> {
        self.snapshot();
        Ok(())
    }
    fn before_sync(&self) -> io::Result<()> {
        self.snapshot();
        Ok(())
    }
    fn after_write(&self, offset: u64, bufs: &[&[u8]]) {
        let bytes: Vec<u8> = bufs.concat();
        self.model.lock().expect("model").pending.push(Pending::Write(offset, bytes));
    }
    fn after_sync(&self) {
        let mut m = self.model.lock().expect("model");
        let pending = std::mem::take(&mut m.pending);
        for op in &pending {
            apply(&mut m.durable, op);
        }
    }
    fn after_set_len(&self, len: u64) {
        self.model.lock().expect("model").pending.push(Pending::SetLen(len));
    }
    /// A write-through write: a power loss during it may have written any of
    /// its pages (images taken with it pending); once it returned, it is
    /// durable, and so supersedes older pending writes of the same bytes.
    fn after_durable_write(&self, offset: u64, bufs: &[&[u8]]) {
        let bytes: Vec<u8> = bufs.concat();
        let len = bytes.len() as u64;
        self.model.lock().expect("model").pending.push(Pending::Write(offset, bytes.clone()));
        self.snapshot();
        let mut m = self.model.lock().expect("model");
        m.pending.pop();
        m.pending.retain(|p| !matches!(p, Pending::Write(o, b) if *o >= offset && *o + b.len() as u64 <= offset + len));
        apply(&mut m.durable, &Pending::Write(offset, bytes));
    }
}

type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn builder(d: Durability) -> rdbx::EnvBuilder {
    Env::builder().durability(d).geometry(Geometry {
        page_size: Some(PS),
        size_now: Some(64 << 10),
        growth_step: Some(64 << 10),
        shrink_threshold: Some(128 << 10),
        ..Default::default()
    })
}

fn read_state(env: &Env) -> rdbx::Result<State> {
    let txn = env.begin_ro_txn()?;
    let mut c = txn.cursor(Db::MAIN)?;
    let mut out = State::new();
    while let Some((k, v)) = c.next()? {
        out.insert(k.to_vec(), v.to_vec());
    }
    Ok(out)
}

fn crash_run(d: Durability) {
    crash_run_with(d, false);
}

/// `spill`: the smallest dirty-page budget, so that every operation after
/// the first of a transaction writes pages before the commit does.
fn crash_run_with(d: Durability, spill: bool) {
    crash_run_opts(d, spill, None);
}

/// `write_through`: every durable commit of up to that many pages writes its
/// pages and meta with RWF_DSYNC and no fdatasync.
fn crash_run_opts(d: Durability, spill: bool, write_through: Option<usize>) {
    let builder = |d| {
        let b = if spill { builder(d).dirty_page_limit(1) } else { builder(d) };
        match write_through {
            Some(n) => b.writethrough_threshold(n),
            None => b,
        }
    };
    let commits: usize = std::env::var("RDBX_CRASH_COMMITS").ok().and_then(|s| s.parse().ok()).unwrap_or(80);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    // Commit 0: a durable starting state, written without the model.
    let mut states: Vec<State> = Vec::new();
    let mut state = State::new();
    {
        let env = builder(d).open(&db).expect("create");
        let mut txn = env.begin_rw_txn().expect("begin");
        for i in 0..300u32 {
            let (k, v) = (format!("key-{i:04}").into_bytes(), vec![i as u8; 40]);
            txn.put(Db::MAIN, &k, &v, PutFlags::empty()).expect("put");
            state.insert(k, v);
        }
        txn.commit().expect("commit");
        env.sync().expect("sync");
    }
    states.push(state.clone());
    let durable = std::fs::read(db.join("mdbx.dat")).expect("read");
    let acked = Arc::new(AtomicUsize::new(0));
    let synced = Arc::new(AtomicUsize::new(0));
    let crash = Arc::new(CrashIo {
        model: Mutex::new(Model { durable, pending: Vec::new(), images: Vec::new(), rng: 0x2545_F491_4F6C_DD1D }),
        acked: acked.clone(),
        synced: synced.clone(),
    });
    {
        let env = builder(d).io_faults(crash.clone()).open(&db).expect("open");
        let mut x = 77u64;
        for c in 1..=commits {
            let mut txn = env.begin_rw_txn().expect("begin");
            for _ in 0..1 + c % 7 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = format!("key-{:04}", x % 400).into_bytes();
                if x.is_multiple_of(5) {
                    txn.del(Db::MAIN, &k, None).expect("del");
                    state.remove(&k);
                } else {
                    let v = vec![(x >> 8) as u8; 20 + (x % 300) as usize];
                    txn.put(Db::MAIN, &k, &v, PutFlags::empty()).expect("put");
                    state.insert(k, v);
                }
            }
            txn.commit().expect("commit");
            states.push(state.clone());
            acked.store(c, Ordering::SeqCst);
            if c.is_multiple_of(5) {
                env.sync().expect("sync");
                synced.store(c, Ordering::SeqCst);
            }
        }
        crash.snapshot();
        assert_eq!(env.page_ops().spill > 0, spill, "{d:?}: spilled pages");
    }
    let images = std::mem::take(&mut crash.model.lock().expect("model").images);
    let mut checked = 0;
    for (n, img) in images.iter().enumerate() {
        let case = tempfile::tempdir().expect("tempdir");
        let mut bytes = img.bytes.clone();
        // After the power loss the machine booted again: no meta's boot id
        // matches any more.
        for slot in 0..3 {
            let at = slot * PS + BOOTID_OFF;
            if bytes.len() >= at + 16 {
                bytes[at..at + 16].copy_from_slice(&[0x5A; 16]);
            }
        }
        std::fs::write(case.path().join("mdbx.dat"), &bytes).expect("write");
        let what = format!("{d:?}: crash image {n} ({}; {} acknowledged, {} synced)", img.what, img.acked, img.synced);
        let env = builder(d).open(case.path()).unwrap_or_else(|e| panic!("{what}: open: {e:?}"));
        let got = read_state(&env).unwrap_or_else(|e| panic!("{what}: read: {e:?}"));
        let oldest = if d == Durability::SyncDurable { img.acked } else { img.synced };
        let newest = (img.acked + 1).min(commits);
        let at = (oldest..=newest).find(|&j| states[j] == got);
        assert!(at.is_some(), "{what}: the database holds none of commits {oldest}..={newest} ({} records)", got.len());
        let report = env.check(&Default::default(), &mut |_| {}).expect("check");
        assert_eq!(report.problem_count(), 0, "{what}: {report:?}");
        checked += 1;
        drop(env);
        let _ = std::fs::remove_dir_all(case.path());
    }
    eprintln!("{d:?}: {checked} crash images opened at an allowed commit, check clean");
    assert!(checked > commits, "{d:?}: only {checked} crash images");
}

#[test]
fn power_loss_durable() {
    crash_run(Durability::SyncDurable);
}

#[test]
fn power_loss_durable_write_through() {
    crash_run_opts(Durability::SyncDurable, false, Some(1 << 20));
}

#[test]
fn power_loss_durable_spilling() {
    crash_run_with(Durability::SyncDurable, true);
}

#[test]
fn power_loss_safe_no_sync_spilling() {
    crash_run_with(Durability::SafeNoSync, true);
}

#[test]
fn power_loss_no_meta_sync() {
    crash_run(Durability::NoMetaSync);
}

#[test]
fn power_loss_safe_no_sync() {
    crash_run(Durability::SafeNoSync);
}

#[test]
fn power_loss_utterly_no_sync() {
    crash_run(Durability::UtterlyNoSync);
}
