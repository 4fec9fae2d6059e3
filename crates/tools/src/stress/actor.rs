//! The actor process (`rdbx-tools stress-actor`, hidden): one role working on
//! its own table of a shared database, logging every write transaction to
//! its op log (see `verify.rs` for the protocol).
//!
//! Exit status: 0 done (duration over or SIGTERM), 1 error (an engine call
//! failed unexpectedly), 2 an invariant was violated (message on stderr),
//! 3 a deliberate exit inside a transaction (deadread, deadwrite: restart me).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use rdbx::{CheckOptions, CopyOptions, Db, Env, Error, PutFlags, RwTxn};

use super::config::{Kind, Mode, Rng, Role};
use super::verify::{self, gen_value, LogWriter, Model, Op, GEN_TABLE, STATIC_TABLE};
use crate::common::interrupted;

pub const EXIT_DONE: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_VIOLATION: i32 = 2;
pub const EXIT_DEAD: i32 = 3;

/// The actor protocol's arguments (a foreign actor takes the same ones).
#[derive(Args, Debug, Clone)]
pub struct ActorArgs {
    /// Database directory
    #[arg(long)]
    pub db: PathBuf,
    /// This actor's table
    #[arg(long)]
    pub table: String,
    #[arg(long = "table-kind")]
    pub table_kind: String,
    #[arg(long = "page-size")]
    pub page_size: usize,
    #[arg(long)]
    pub durability: String,
    /// Open the database with WRITEMAP (every process of a probe does, or
    /// none)
    #[arg(long = "write-map", default_value_t = false, action = clap::ArgAction::Set)]
    pub write_map: bool,
    /// Dirty-page budget (pages; default: from the RAM)
    #[arg(long = "dirty-limit")]
    pub dirty_limit: Option<usize>,
    #[arg(long)]
    pub seed: u64,
    /// The op log
    #[arg(long)]
    pub log: PathBuf,
    #[arg(long)]
    pub role: String,
    #[arg(long = "duration-ms")]
    pub duration_ms: u64,
    /// Largest batch of changes per transaction
    #[arg(long = "batch-max", default_value_t = 64)]
    pub batch_max: u64,
    /// Planted defect (for the runner's own tests): drop-ack
    #[arg(long)]
    pub plant: Option<String>,
}

/// Why the work stopped.
enum Stop {
    /// The map is full: abort and make room.
    Full,
    Violation(String),
    Error(String),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        match e {
            Error::MapFull | Error::TxnFull => Stop::Full,
            e => Stop::Error(format!("{e}")),
        }
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Stop {
        Stop::Error(format!("op log: {e}"))
    }
}

type R<T> = Result<T, Stop>;

fn put(t: &mut RwTxn<'_>, db: Db, k: &[u8], v: &[u8], f: PutFlags, ops: &mut Vec<Op>) -> R<bool> {
    match t.put(db, k, v, f) {
        Ok(()) => {
            ops.push(Op::Put(k.to_vec(), v.to_vec()));
            Ok(true)
        }
        Err(Error::KeyExist) if !f.intersects(PutFlags::APPEND | PutFlags::APPEND_DUP) => Ok(false),
        Err(Error::MapFull) | Err(Error::TxnFull) => Err(Stop::Full),
        Err(e) if f.intersects(PutFlags::APPEND | PutFlags::APPEND_DUP) => Err(Stop::Violation(format!(
            "put {} {} with {f:?} (in order) failed: {e}",
            verify::hex_short(k),
            verify::hex_short(v)
        ))),
        Err(e) => Err(e.into()),
    }
}

fn del(t: &mut RwTxn<'_>, db: Db, k: &[u8], v: Option<&[u8]>, ops: &mut Vec<Op>) -> R<bool> {
    if t.del(db, k, v)? {
        ops.push(match v {
            Some(v) => Op::DelDup(k.to_vec(), v.to_vec()),
            None => Op::Del(k.to_vec()),
        });
        Ok(true)
    } else {
        Ok(false)
    }
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^ (z >> 27)
}

struct Actor {
    args: ActorArgs,
    kind: Kind,
    role: Role,
    mode: Mode,
    env: Option<Env>,
    db: Db,
    gen_db: Db,
    log: LogWriter,
    model: Model,
    next_n: u64,
    rng: Rng,
    deadline: Instant,
    head: u64,
    tail: u64,
    window: u64,
    hill_fill: bool,
    hill_target: u64,
    max_dup: usize,
    big_max: usize,
    steps: u64,
    dead_after: u64,
    drop_ack: bool,
    dropped_ack: bool,
    commits: u64,
    reader_prev: std::collections::HashMap<Vec<u8>, u64>,
    static_count: Option<u64>,
}

pub fn run(args: ActorArgs) -> i32 {
    let deadline = Instant::now() + Duration::from_millis(args.duration_ms);
    let mut a = match Actor::start(args, deadline) {
        Ok(a) => a,
        Err(Stop::Violation(m)) => {
            eprintln!("stress-actor: {m}");
            return EXIT_VIOLATION;
        }
        Err(Stop::Error(m)) => {
            eprintln!("stress-actor: {m}");
            return EXIT_ERROR;
        }
        Err(Stop::Full) => {
            eprintln!("stress-actor: the database is full at start");
            return EXIT_ERROR;
        }
    };
    while Instant::now() < a.deadline && !interrupted() {
        match a.step() {
            Ok(()) => {}
            Err(Stop::Full) => {
                let _ = a.log.line("abort");
                a.hill_fill = false;
                a.window = (a.window / 2).max(8);
                std::thread::sleep(Duration::from_millis(a.rng.range(1, 20)));
            }
            Err(Stop::Violation(m)) => {
                eprintln!("stress-actor {} ({}): VIOLATION: {m}", a.args.table, a.role);
                return EXIT_VIOLATION;
            }
            Err(Stop::Error(m)) => {
                eprintln!("stress-actor {} ({}): error: {m}", a.args.table, a.role);
                return EXIT_ERROR;
            }
        }
        a.steps += 1;
    }
    EXIT_DONE
}

fn open_env(path: &Path, mode: Mode, write_map: bool, dirty_limit: Option<usize>) -> R<Env> {
    let b = Env::builder().max_dbs(64).max_readers(126).durability(mode.durability()).write_map(write_map);
    match dirty_limit {
        Some(n) => b.dirty_page_limit(n),
        None => b,
    }
    .open(path)
    .map_err(|e| Stop::Error(format!("open {}: {e}", path.display())))
}

impl Actor {
    fn start(args: ActorArgs, deadline: Instant) -> R<Actor> {
        let kind = Kind::parse(&args.table_kind).ok_or_else(|| Stop::Error(format!("bad kind {}", args.table_kind)))?;
        let role = Role::parse(&args.role).ok_or_else(|| Stop::Error(format!("bad role {}", args.role)))?;
        let mode = Mode::parse(&args.durability).ok_or_else(|| Stop::Error(format!("bad mode {}", args.durability)))?;
        let env = open_env(&args.db, mode, args.write_map, args.dirty_limit)?;
        // A restarted actor first checks its table against its log (and
        // settles a commit it may have died in).
        let v = verify::resolve_and_verify(&env, &args.table, kind.dup(), &args.log, false)
            .map_err(|m| Stop::Violation(format!("at start: {m}")))?;
        let (db, gen_db) = {
            let t = env.begin_ro_txn()?;
            (t.open_db(Some(&args.table))?, t.open_db(Some(GEN_TABLE))?)
        };
        let ps = env.page_size();
        let max_dup = if kind.dup() { env.max_value_size(kind.flags()).min(24) } else { 0 };
        let key_len = if kind == Kind::IntegerKey { 8 } else { 12 };
        if env.max_key_size(kind.flags()) < key_len {
            return Err(Stop::Error(format!("keys of {key_len} bytes do not fit (page size {ps})")));
        }
        let mut rng = Rng::new(args.seed ^ v.replay.max_n.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let log = LogWriter::open(&args.log)?;
        let window = rng.range(16, 1500);
        let hill_target = rng.range(50, 3000);
        let dead_after = rng.range(20, 400);
        let drop_ack = args.plant.as_deref() == Some("drop-ack");
        let mut a = Actor {
            kind,
            role,
            mode,
            env: Some(env),
            db,
            gen_db,
            log,
            model: v.replay.model,
            next_n: v.replay.max_n + 1,
            rng,
            deadline,
            head: 0,
            tail: 0,
            window,
            hill_fill: true,
            hill_target,
            max_dup,
            big_max: (3 * ps).min(65536),
            steps: 0,
            dead_after,
            drop_ack,
            dropped_ack: false,
            commits: 0,
            reader_prev: Default::default(),
            static_count: None,
            args,
        };
        a.reset_counters();
        Ok(a)
    }

    fn env(&self) -> &Env {
        self.env.as_ref().expect("env is open")
    }

    fn reset_counters(&mut self) {
        let xs: Vec<u64> = self.model.map.keys().map(|k| self.decode(k)).collect();
        self.tail = xs.iter().copied().min().unwrap_or(self.head);
        self.head = xs.iter().copied().max().map_or(self.head.max(self.tail), |m| m + 1);
    }

    fn key(&self, x: u64) -> Vec<u8> {
        let h = mix(x).to_le_bytes();
        let sfx = &h[..(x % 5) as usize];
        match self.kind {
            Kind::IntegerKey => x.to_ne_bytes().to_vec(),
            Kind::ReverseKey => [sfx, &x.to_le_bytes()].concat(),
            _ => [&x.to_be_bytes(), sfx].concat(),
        }
    }

    fn decode(&self, k: &[u8]) -> u64 {
        let arr = |s: &[u8]| -> [u8; 8] { s.try_into().unwrap_or([0; 8]) };
        match self.kind {
            Kind::IntegerKey => u64::from_ne_bytes(arr(&k[..8.min(k.len())])),
            Kind::ReverseKey => u64::from_le_bytes(arr(&k[k.len().saturating_sub(8)..])),
            _ => u64::from_be_bytes(arr(&k[..8.min(k.len())])),
        }
    }

    /// A value; `seq` gives values in increasing table order (APPEND_DUP).
    fn value(&mut self, seq: Option<u64>) -> Vec<u8> {
        let r = &mut self.rng;
        match self.kind {
            Kind::IntegerDup => seq.unwrap_or_else(|| r.next_u64()).to_ne_bytes().to_vec(),
            Kind::DupFixed => seq.unwrap_or_else(|| r.next_u64()).to_be_bytes().to_vec(),
            Kind::DupSort => {
                let mut v = seq.map(|s| s.to_be_bytes().to_vec()).unwrap_or_default();
                let n = r.range(1, 8) as usize;
                v.extend(r.bytes(n));
                v.truncate(self.max_dup);
                v
            }
            Kind::ReverseDup => {
                let n = r.range(1, 8) as usize;
                let mut v = r.bytes(n);
                match seq {
                    Some(s) => v.extend(s.to_le_bytes()),
                    None => {
                        let m = r.range(0, 8) as usize;
                        v.extend(r.bytes(m))
                    }
                }
                let cut = v.len().saturating_sub(self.max_dup);
                v.drain(..cut);
                v
            }
            _ => {
                let n = if r.chance(1, 12) { r.range(64, self.big_max as u64) } else { r.range(0, 48) };
                r.bytes(n as usize)
            }
        }
    }

    fn dup_count(&mut self) -> u64 {
        if self.kind.dup() {
            self.rng.range(1, 4)
        } else {
            1
        }
    }

    /// Commits `txn` with its changes `ops` following the log protocol.
    /// `Ok(false)`: nothing committed (planted defect aside).
    fn finish(&mut self, mut txn: RwTxn<'_>, ops: Vec<Op>) -> R<bool> {
        let n = self.next_n;
        self.next_n += 1;
        let count = txn.db_stat(self.db)?.entries;
        txn.put(self.gen_db, self.args.table.as_bytes(), &gen_value(n, count), PutFlags::empty())?;
        self.log.block(n, &ops)?;
        if self.drop_ack && !self.dropped_ack && !ops.is_empty() && self.commits >= 2 {
            // Planted defect: acknowledge a commit that never happens.
            drop(txn);
            self.dropped_ack = true;
            self.log.line(&format!("ack {n}"))?;
            for op in &ops {
                self.model.apply(op);
            }
            return Ok(true);
        }
        match txn.commit() {
            Ok(()) => {
                self.log.line(&format!("ack {n}"))?;
                for op in &ops {
                    self.model.apply(op);
                }
                self.commits += 1;
                Ok(true)
            }
            Err(e) => {
                self.log.line(&format!("fail {n}"))?;
                Err(e.into())
            }
        }
    }

    fn step(&mut self) -> R<()> {
        match self.role {
            Role::Hill => self.hill(0),
            Role::Ttl => self.ttl(),
            Role::Nested => self.nested(),
            Role::Append => self.append(),
            Role::Jitter => self.jitter(),
            Role::Copy => self.copy(),
            Role::DeadRead | Role::DeadWrite => self.dead(),
            Role::Try => self.try_lock(),
            Role::Reader => self.reader(),
        }
    }

    fn batch(&mut self) -> u64 {
        let m = self.args.batch_max.max(1);
        if self.rng.chance(1, 4) {
            self.rng.range(1, m)
        } else {
            self.rng.range(1, (m / 4).max(1))
        }
    }

    /// Fill up to a target, then empty down; random or sequential batches.
    /// `pause_ms` > 0: random delays inside the transaction.
    fn hill(&mut self, pause_ms: u64) -> R<()> {
        let b = self.batch();
        let env = self.env.take().expect("env is open");
        let r = (|| -> R<()> {
            let mut txn = env.begin_rw_txn()?;
            let mut ops = Vec::new();
            if self.hill_fill {
                let seq = self.rng.chance(1, 2);
                let mut x = self.rng.below(1 << 20);
                for _ in 0..b {
                    let xx = if seq {
                        x += 1;
                        x
                    } else {
                        self.rng.below(1 << 20)
                    };
                    let k = self.key(xx);
                    for _ in 0..self.dup_count() {
                        let v = self.value(None);
                        put(&mut txn, self.db, &k, &v, PutFlags::empty(), &mut ops)?;
                    }
                }
            } else {
                let keys: Vec<Vec<u8>> = if self.rng.chance(1, 2) {
                    let skip = self.rng.below(self.model.map.len() as u64 / 2 + 1) as usize;
                    self.model.map.keys().skip(skip).take(b as usize).cloned().collect()
                } else {
                    (0..b)
                        .filter_map(|_| {
                            let x = self.rng.below(1 << 20);
                            let probe = self.key(x);
                            self.model.map.range(probe..).next().map(|(k, _)| k.clone())
                        })
                        .collect()
                };
                for k in keys {
                    let one = if self.kind.dup() && self.rng.chance(1, 2) {
                        self.model.map.get(&k).and_then(|vs| vs.iter().next().cloned())
                    } else {
                        None
                    };
                    del(&mut txn, self.db, &k, one.as_deref(), &mut ops)?;
                }
            }
            if pause_ms > 0 {
                std::thread::sleep(Duration::from_millis(self.rng.below(pause_ms)));
            }
            self.finish(txn, ops)?;
            Ok(())
        })();
        self.env = Some(env);
        r?;
        let n = self.model.pairs();
        if self.hill_fill && n >= self.hill_target {
            self.hill_fill = false;
        } else if !self.hill_fill && n <= self.hill_target / 8 {
            self.hill_fill = true;
            self.hill_target = self.rng.range(50, 3000);
        }
        Ok(())
    }

    /// One sliding-window step on `txn`: insert at the head, delete at the
    /// tail, sometimes a mass delete. Works on `(head, tail)`.
    fn ttl_step(&mut self, txn: &mut RwTxn<'_>, ht: &mut (u64, u64), ops: &mut Vec<Op>) -> R<()> {
        let b = self.batch();
        for _ in 0..b {
            let k = self.key(ht.0);
            ht.0 += 1;
            for _ in 0..self.dup_count() {
                let v = self.value(None);
                put(txn, self.db, &k, &v, PutFlags::empty(), ops)?;
            }
        }
        while ht.0 - ht.1 > self.window {
            let k = self.key(ht.1);
            del(txn, self.db, &k, None, ops)?;
            ht.1 += 1;
        }
        if self.rng.chance(1, 60) {
            if self.rng.chance(1, 2) {
                txn.clear_db(self.db)?;
                ops.push(Op::Drop);
                ht.1 = ht.0;
            } else if self.rng.chance(1, 2) {
                let half = (ht.0 - ht.1) / 2;
                for _ in 0..half {
                    let k = self.key(ht.1);
                    del(txn, self.db, &k, None, ops)?;
                    ht.1 += 1;
                }
            } else {
                // The same deletes as a pruning job does them: a write
                // cursor walks the table and deletes each key of the oldest
                // half where it stands (with all its values).
                let end = ht.1 + (ht.0 - ht.1) / 2;
                let doomed = |k: &[u8]| {
                    let x = self.decode(k);
                    (ht.1..end).contains(&x) && self.key(x) == k
                };
                let mut c = txn.rw_cursor(self.db)?;
                let mut at = c.first()?.map(|(k, _)| (doomed(k), k.to_vec()));
                while let Some((hit, k)) = at {
                    at = if hit {
                        c.del_all()?;
                        ops.push(Op::Del(k));
                        c.get_current()?.map(|(k, _)| (doomed(k), k.to_vec()))
                    } else {
                        c.next_nodup()?.map(|(k, _)| (doomed(k), k.to_vec()))
                    };
                }
                ht.1 = end;
            }
        }
        Ok(())
    }

    fn ttl(&mut self) -> R<()> {
        let env = self.env.take().expect("env is open");
        let r = (|| -> R<()> {
            let mut txn = env.begin_rw_txn()?;
            let mut ops = Vec::new();
            let mut ht = (self.head, self.tail);
            self.ttl_step(&mut txn, &mut ht, &mut ops)?;
            if self.finish(txn, ops)? {
                (self.head, self.tail) = ht;
            }
            Ok(())
        })();
        self.env = Some(env);
        r
    }

    /// ttl steps inside nested transactions, some of them aborted.
    fn nested(&mut self) -> R<()> {
        let env = self.env.take().expect("env is open");
        let r = (|| -> R<()> {
            let mut txn = env.begin_rw_txn()?;
            let mut ops = Vec::new();
            let mut ht = (self.head, self.tail);
            let mut aborts = 0;
            for _ in 0..self.rng.range(1, 3) {
                let mut child = txn.begin_nested_txn()?;
                let mut cops = Vec::new();
                let mut cht = ht;
                self.ttl_step(&mut child, &mut cht, &mut cops)?;
                if self.rng.chance(1, 3) {
                    let mut grand = child.begin_nested_txn()?;
                    let mut gops = Vec::new();
                    let mut ght = cht;
                    self.ttl_step(&mut grand, &mut ght, &mut gops)?;
                    if self.rng.chance(1, 2) {
                        grand.commit()?;
                        cops.extend(gops);
                        cht = ght;
                    } else {
                        grand.abort();
                        aborts += 1;
                    }
                }
                if self.rng.chance(3, 4) {
                    child.commit()?;
                    ops.extend(cops);
                    ht = cht;
                } else {
                    child.abort();
                    aborts += 1;
                }
            }
            for _ in 0..aborts {
                self.log.line("abort")?;
            }
            if self.rng.chance(1, 10) {
                drop(txn);
                self.log.line("abort")?;
            } else if self.finish(txn, ops)? {
                (self.head, self.tail) = ht;
            }
            Ok(())
        })();
        self.env = Some(env);
        r
    }

    /// APPEND / APPEND_DUP puts in table order; the tail is trimmed.
    fn append(&mut self) -> R<()> {
        let env = self.env.take().expect("env is open");
        let r = (|| -> R<()> {
            let mut txn = env.begin_rw_txn()?;
            let mut ops = Vec::new();
            let (mut head, mut tail) = (self.head, self.tail);
            for _ in 0..self.batch() {
                let k = self.key(head);
                head += 1;
                if self.kind.dup() {
                    let v = self.value(Some(0));
                    put(&mut txn, self.db, &k, &v, PutFlags::APPEND, &mut ops)?;
                    for j in 1..self.rng.range(1, 5) {
                        let v = self.value(Some(j));
                        put(&mut txn, self.db, &k, &v, PutFlags::APPEND_DUP, &mut ops)?;
                    }
                } else {
                    let v = self.value(None);
                    put(&mut txn, self.db, &k, &v, PutFlags::APPEND, &mut ops)?;
                }
            }
            while head - tail > self.window {
                let k = self.key(tail);
                del(&mut txn, self.db, &k, None, &mut ops)?;
                tail += 1;
            }
            if self.finish(txn, ops)? {
                (self.head, self.tail) = (head, tail);
            }
            Ok(())
        })();
        self.env = Some(env);
        r
    }

    /// Random delays, reopening the environment, a scratch table created and
    /// dropped (also in aborted transactions), small hill steps.
    fn jitter(&mut self) -> R<()> {
        std::thread::sleep(Duration::from_millis(self.rng.below(30)));
        let c = self.rng.below(10);
        if c == 0 {
            self.env = None;
            let env = open_env(&self.args.db, self.mode, self.args.write_map, self.args.dirty_limit)?;
            let t = env.begin_ro_txn()?;
            (self.db, self.gen_db) = (t.open_db(Some(&self.args.table))?, t.open_db(Some(GEN_TABLE))?);
            drop(t);
            self.env = Some(env);
            return Ok(());
        }
        if c <= 2 {
            let scratch = format!("{}s", self.args.table);
            let env = self.env.take().expect("env is open");
            let r = (|| -> R<()> {
                let mut txn = env.begin_rw_txn()?;
                let exists = txn.table_names()?.iter().any(|n| n == scratch.as_bytes());
                if exists {
                    let s = txn.open_db(Some(&scratch))?;
                    txn.drop_db(s)?;
                } else {
                    let s = txn.create_db(Some(&scratch), Kind::DupSort.flags())?;
                    for i in 0..self.rng.range(2, 200) {
                        txn.put(s, &(i / 2).to_be_bytes(), &self.rng.bytes(8), PutFlags::empty())?;
                    }
                }
                std::thread::sleep(Duration::from_millis(self.rng.below(10)));
                if self.rng.chance(1, 3) {
                    drop(txn);
                    self.log.line("abort")?;
                } else {
                    self.finish(txn, Vec::new())?;
                }
                Ok(())
            })();
            self.env = Some(env);
            return r;
        }
        self.hill(10)
    }

    /// Online backup (compacting or not) checked with the integrity check.
    fn copy(&mut self) -> R<()> {
        self.hill(0)?;
        if !self.rng.chance(1, 6) {
            return Ok(());
        }
        let dst = self.args.db.join(format!("{}.copy", self.args.table));
        let compact = self.rng.chance(1, 2);
        let opts = CopyOptions { compact, overwrite: true, ..Default::default() };
        self.env().copy_to(&dst, &opts, &mut |_| {})?;
        let r = (|| -> R<()> {
            let copy = Env::builder()
                .no_sub_dir(true)
                .read_only(true)
                .max_dbs(64)
                .open(&dst)
                .map_err(|e| Stop::Violation(format!("opening the copy {}: {e}", dst.display())))?;
            let rep = copy
                .check(&CheckOptions::default(), &mut |_| {})
                .map_err(|e| Stop::Violation(format!("checking the copy (compact {compact}): {e}")))?;
            if rep.problem_count() > 0 {
                let first: Vec<String> = rep.problems.iter().take(5).map(|p| format!("{p:?}")).collect();
                return Err(Stop::Violation(format!(
                    "the copy (compact {compact}) has {} problems: {}",
                    rep.problem_count(),
                    first.join("; ")
                )));
            }
            Ok(())
        })();
        if r.is_ok() {
            let _ = std::fs::remove_file(&dst);
            let mut lck = dst.clone().into_os_string();
            lck.push("-lck");
            let _ = std::fs::remove_file(lck);
            self.log.line("checked")?;
        }
        r
    }

    /// Some hill steps, then exit inside a read (deadread) or write
    /// (deadwrite) transaction without ending it.
    fn dead(&mut self) -> R<()> {
        if self.steps < self.dead_after {
            return self.hill(0);
        }
        let env = self.env.take().expect("env is open");
        let r = (|| -> R<()> {
            if self.role == Role::DeadRead {
                let t = env.begin_ro_txn()?;
                let mut c = t.cursor(self.db)?;
                c.first()?;
                std::mem::forget(t);
            } else {
                let mut txn = env.begin_rw_txn()?;
                let mut ops = Vec::new();
                for _ in 0..self.rng.range(1, 20) {
                    let x = self.rng.below(1 << 20);
                    let k = self.key(x);
                    let v = self.value(None);
                    put(&mut txn, self.db, &k, &v, PutFlags::empty(), &mut ops)?;
                }
                let n = self.next_n;
                if self.rng.chance(1, 2) {
                    // Died before commit: the block is complete but never committed.
                    self.log.block(n, &ops)?;
                } else {
                    self.log.open_block(n, &ops)?;
                }
                std::mem::forget(txn);
            }
            Ok(())
        })();
        if r.is_err() {
            self.env = Some(env);
            return r;
        }
        std::process::exit(EXIT_DEAD);
    }

    /// `try_begin_rw_txn` while another thread holds the write lock must
    /// give Busy at once; without a holder here it may give either.
    fn try_lock(&mut self) -> R<()> {
        let env = self.env.take().expect("env is open");
        let r = (|| -> R<()> {
            if self.rng.chance(1, 3) {
                match env.try_begin_rw_txn() {
                    Err(Error::Busy(_)) => {
                        std::thread::sleep(Duration::from_millis(1));
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                    Ok(txn) => drop(txn),
                }
            }
            let mut txn = env.begin_rw_txn()?;
            let envr = &env;
            let (res, took) = std::thread::scope(|s| {
                s.spawn(move || {
                    let t0 = Instant::now();
                    let r = match envr.try_begin_rw_txn() {
                        Err(Error::Busy(_)) => Ok(()),
                        Ok(_) => Err("try_begin_rw_txn succeeded while another thread held the write lock".to_string()),
                        Err(e) => Err(format!("try_begin_rw_txn: {e}")),
                    };
                    (r, t0.elapsed())
                })
                .join()
                .unwrap_or_else(|_| (Err("the probing thread panicked".into()), Duration::ZERO))
            });
            res.map_err(Stop::Violation)?;
            if took > Duration::from_secs(10) {
                return Err(Stop::Violation(format!("try_begin_rw_txn blocked for {took:?}")));
            }
            let mut ops = Vec::new();
            let mut ht = (self.head, self.tail);
            self.ttl_step(&mut txn, &mut ht, &mut ops)?;
            if self.finish(txn, ops)? {
                (self.head, self.tail) = ht;
            }
            Ok(())
        })();
        self.env = Some(env);
        r
    }

    /// Snapshot invariants: in one read transaction every actor table's
    /// record count (walked), its statistics and its generation record agree,
    /// generations never go back between snapshots, the generation record
    /// does not change within a snapshot, and the static table stays as made.
    fn reader(&mut self) -> R<()> {
        let env = self.env.take().expect("env is open");
        let r = self.reader_in(&env);
        self.env = Some(env);
        r
    }

    fn reader_in(&mut self, env: &Env) -> R<()> {
        let txn = env.begin_ro_txn()?;
        let gen = txn.open_db(Some(GEN_TABLE))?;
        let mut gens = Vec::new();
        {
            let mut c = txn.cursor(gen)?;
            while let Some((k, v)) = c.next()? {
                gens.push((k.to_vec(), v.to_vec()));
            }
        }
        let snap = txn.id();
        for (name, v) in &gens {
            if v.len() != 16 {
                return Err(Stop::Violation(format!(
                    "gen record of {} has {} bytes",
                    String::from_utf8_lossy(name),
                    v.len()
                )));
            }
            let n = u64::from_le_bytes(v[..8].try_into().unwrap());
            let count = u64::from_le_bytes(v[8..].try_into().unwrap());
            let tname = String::from_utf8_lossy(name).to_string();
            let db = txn.open_db(Some(&tname))?;
            let mut walked = 0u64;
            let mut c = txn.cursor(db)?;
            while c.next()?.is_some() {
                walked += 1;
            }
            let entries = txn.db_stat(db)?.entries;
            if walked != entries || entries != count {
                return Err(Stop::Violation(format!(
                    "snapshot {snap}: table {tname}: walked {walked} pairs, statistics say {entries}, its gen record says {count} (block {n})"
                )));
            }
            if let Some(&p) = self.reader_prev.get(name) {
                if n < p {
                    return Err(Stop::Violation(format!(
                        "snapshot {snap}: table {tname}: generation went back from {p} to {n}"
                    )));
                }
            }
            self.reader_prev.insert(name.clone(), n);
        }
        if self.rng.chance(1, 4) {
            std::thread::sleep(Duration::from_millis(self.rng.below(150)));
        }
        for (name, v) in &gens {
            let again = txn.get(gen, name)?;
            if again != Some(v.as_slice()) {
                return Err(Stop::Violation(format!(
                    "snapshot {snap}: gen record of {} changed within the snapshot",
                    String::from_utf8_lossy(name)
                )));
            }
        }
        let st = txn.open_db(Some(STATIC_TABLE))?;
        let mut c = txn.cursor(st)?;
        let mut n = 0u64;
        while c.next()?.is_some() {
            n += 1;
        }
        match self.static_count {
            Some(s) if s != n => {
                return Err(Stop::Violation(format!("snapshot {snap}: the static table has {n} records, before {s}")))
            }
            _ => self.static_count = Some(n),
        }
        drop(txn);
        std::thread::sleep(Duration::from_millis(self.rng.below(10)));
        Ok(())
    }
}
