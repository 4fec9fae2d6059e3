//! `mdbx-stress-actor`: a foreign actor for `rdbx-tools stress --foreign-actor`,
//! written against the real libmdbx (through `rdbx_tests::oracle`), so rdbx
//! and libmdbx processes write one database at the same time.
//!
//! ```text
//! mdbx-stress-actor --db PATH --table NAME --table-kind KIND --page-size N
//!     --durability MODE [--write-map true|false] --seed S --log PATH
//!     --role hill|ttl --duration-ms MS
//! ```
//! It follows the actor protocol of crates/tools/README.md ("stress"): for
//! every write transaction it appends a block (`begin N`, one line per
//! effective change, `commit N`) to its op log before committing, then
//! `ack N` or `fail N`; every transaction also puts `gen[NAME]` = (N, record
//! count), both u64 little-endian. Exit status: 0 done (duration over or
//! SIGTERM), 1 error.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdbx_tests::oracle::{self, Dbi, Durability, EnvOptions, Txn};
use rdbx_tests::rng::Rng;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

struct Args {
    db: String,
    table: String,
    kind: String,
    durability: Durability,
    write_map: bool,
    seed: u64,
    log: String,
    role: String,
    duration_ms: u64,
}

fn parse_args() -> Result<Args, String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut m = BTreeMap::new();
    let mut i = 0;
    while i < argv.len() {
        let k = argv[i].strip_prefix("--").ok_or_else(|| format!("unexpected argument '{}'", argv[i]))?;
        let v = argv.get(i + 1).ok_or_else(|| format!("--{k} needs a value"))?;
        m.insert(k.to_string(), v.clone());
        i += 2;
    }
    let get = |k: &str| m.get(k).cloned().ok_or_else(|| format!("missing --{k}"));
    let durability = match get("durability")?.as_str() {
        "durable" => Durability::SyncDurable,
        "nometasync" => Durability::NoMetaSync,
        "safe-nosync" => Durability::SafeNoSync,
        "utterly-nosync" => Durability::UtterlyNoSync,
        d => return Err(format!("unknown durability '{d}'")),
    };
    let num = |k: &str| -> Result<u64, String> { get(k)?.parse().map_err(|_| format!("--{k}: not a number")) };
    get("page-size")?;
    let write_map = match m.get("write-map").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(v) => return Err(format!("--write-map: '{v}' (true or false)")),
    };
    Ok(Args {
        db: get("db")?,
        table: get("table")?,
        kind: get("table-kind")?,
        durability,
        write_map,
        seed: num("seed")?,
        log: get("log")?,
        role: get("role")?,
        duration_ms: num("duration-ms")?,
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
    DelDup(Vec<u8>, Vec<u8>),
}

struct Actor {
    a: Args,
    dup: bool,
    rng: Rng,
    model: BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>,
    log: std::fs::File,
    next_n: u64,
    fill: bool,
    target: usize,
    head: u64,
    tail: u64,
    window: u64,
    max_val: usize,
}

/// Why a transaction did not commit.
enum Stop {
    Full,
    Error(String),
}

fn map_err(e: String) -> Stop {
    if oracle::error_code(&e) == Some(oracle::MDBX_MAP_FULL) {
        Stop::Full
    } else {
        Stop::Error(e)
    }
}

impl Actor {
    fn key(&self, x: u64) -> Vec<u8> {
        match self.a.kind.as_str() {
            "integerkey" => x.to_ne_bytes().to_vec(),
            "reversekey" => x.to_le_bytes().to_vec(),
            _ => x.to_be_bytes().to_vec(),
        }
    }
    fn decode(&self, k: &[u8]) -> u64 {
        let arr: [u8; 8] = k.get(..8).and_then(|s| s.try_into().ok()).unwrap_or([0; 8]);
        match self.a.kind.as_str() {
            "integerkey" => u64::from_ne_bytes(arr),
            "reversekey" => u64::from_le_bytes(arr),
            _ => u64::from_be_bytes(arr),
        }
    }
    fn value(&mut self) -> Vec<u8> {
        match self.a.kind.as_str() {
            "integerdup" => self.rng.next_u64().to_ne_bytes().to_vec(),
            "dupfixed" => self.rng.next_u64().to_be_bytes().to_vec(),
            "dupsort" | "reversedup" => self.rng.bytes_in(1, 16.min(self.max_val)),
            _ if self.rng.chance(1, 12) => self.rng.bytes_in(64, self.max_val),
            _ => self.rng.bytes_in(0, 48),
        }
    }

    fn put(&mut self, txn: &mut Txn<'_>, dbi: Dbi, k: &[u8], v: &[u8], ops: &mut Vec<Op>) -> Result<(), Stop> {
        let flags = if self.dup { oracle::MDBX_NODUPDATA } else { 0 };
        match txn.put(dbi, k, v, flags) {
            Ok(()) => {
                ops.push(Op::Put(k.to_vec(), v.to_vec()));
                Ok(())
            }
            Err(e) if oracle::error_code(&e) == Some(oracle::MDBX_KEYEXIST) => Ok(()),
            Err(e) => Err(map_err(e)),
        }
    }

    fn del(&mut self, txn: &mut Txn<'_>, dbi: Dbi, k: &[u8], v: Option<&[u8]>, ops: &mut Vec<Op>) -> Result<(), Stop> {
        if txn.del(dbi, k, v).map_err(map_err)? {
            ops.push(match v {
                Some(v) => Op::DelDup(k.to_vec(), v.to_vec()),
                None => Op::Del(k.to_vec()),
            });
        }
        Ok(())
    }

    fn apply(&mut self, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    let e = self.model.entry(k.clone()).or_default();
                    if !self.dup {
                        e.clear();
                    }
                    e.insert(v.clone());
                }
                Op::Del(k) => {
                    self.model.remove(k);
                }
                Op::DelDup(k, v) => {
                    if let Some(vs) = self.model.get_mut(k) {
                        vs.remove(v);
                        if vs.is_empty() {
                            self.model.remove(k);
                        }
                    }
                }
            }
        }
    }

    fn write_log(&mut self, s: &str) -> Result<(), Stop> {
        self.log.write_all(s.as_bytes()).map_err(|e| Stop::Error(format!("op log: {e}")))
    }

    /// One write transaction of the role.
    fn step(&mut self, env: &oracle::Env) -> Result<(), Stop> {
        let mut txn = env.begin_rw().map_err(map_err)?;
        let dbi = txn.open_table(Some(self.a.table.as_bytes())).map_err(map_err)?;
        let gen = txn.open_table(Some(b"gen")).map_err(map_err)?;
        let mut ops = Vec::new();
        let b = self.rng.range(1, 32) as u64;
        let (mut head, mut tail) = (self.head, self.tail);
        if self.a.role == "ttl" {
            for _ in 0..b {
                let k = self.key(head);
                head += 1;
                for _ in 0..if self.dup { self.rng.range(1, 3) } else { 1 } {
                    let v = self.value();
                    self.put(&mut txn, dbi, &k, &v, &mut ops)?;
                }
            }
            while head - tail > self.window {
                let k = self.key(tail);
                self.del(&mut txn, dbi, &k, None, &mut ops)?;
                tail += 1;
            }
        } else if self.fill {
            for _ in 0..b {
                let x = self.rng.below(1 << 20);
                let k = self.key(x);
                for _ in 0..if self.dup { self.rng.range(1, 3) } else { 1 } {
                    let v = self.value();
                    self.put(&mut txn, dbi, &k, &v, &mut ops)?;
                }
            }
        } else {
            let keys: Vec<(Vec<u8>, Option<Vec<u8>>)> = self
                .model
                .iter()
                .take(b as usize)
                .map(|(k, vs)| (k.clone(), if self.dup && vs.len() > 1 { vs.iter().next().cloned() } else { None }))
                .collect();
            for (k, v) in keys {
                self.del(&mut txn, dbi, &k, v.as_deref(), &mut ops)?;
            }
        }
        let n = self.next_n;
        self.next_n += 1;
        let count = txn.stat(dbi).map_err(map_err)?.entries;
        let mut g = n.to_le_bytes().to_vec();
        g.extend(count.to_le_bytes());
        txn.put(gen, self.a.table.as_bytes(), &g, 0).map_err(map_err)?;
        let mut block = format!("begin {n}\n");
        for op in &ops {
            block.push_str(&match op {
                Op::Put(k, v) => format!("put {} {}\n", hex(k), hex(v)),
                Op::Del(k) => format!("del {}\n", hex(k)),
                Op::DelDup(k, v) => format!("deldup {} {}\n", hex(k), hex(v)),
            });
        }
        block.push_str(&format!("commit {n}\n"));
        self.write_log(&block)?;
        match txn.commit() {
            Ok(()) => {
                self.write_log(&format!("ack {n}\n"))?;
                self.apply(&ops);
                (self.head, self.tail) = (head, tail);
                let len = self.model.len();
                if self.fill && len >= self.target {
                    self.fill = false;
                } else if !self.fill && len <= self.target / 8 {
                    self.fill = true;
                    self.target = self.rng.range(50, 2000);
                }
                Ok(())
            }
            Err(e) => {
                self.write_log(&format!("fail {n}\n"))?;
                Err(map_err(e))
            }
        }
    }
}

fn run() -> Result<(), String> {
    let a = parse_args()?;
    if a.role != "hill" && a.role != "ttl" {
        return Err(format!("role '{}' is not implemented (hill, ttl)", a.role));
    }
    let opts = EnvOptions {
        durability: a.durability,
        write_map: a.write_map,
        max_dbs: 64,
        no_sub_dir: Some(false),
        ..Default::default()
    };
    let env = oracle::Env::open(&a.db, &opts)?;
    let dup = matches!(a.kind.as_str(), "dupsort" | "dupfixed" | "integerdup" | "reversedup");
    // Continue the block numbers of the log; the runner has settled a block
    // a killed predecessor left in flight.
    let text = std::fs::read_to_string(&a.log).unwrap_or_default();
    let max_n = text.lines().filter_map(|l| l.strip_prefix("begin ")?.parse::<u64>().ok()).max().unwrap_or(0);
    let mut model: BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>> = BTreeMap::new();
    {
        let txn = env.begin_ro()?;
        let dbi = txn.open_table(Some(a.table.as_bytes()))?;
        txn.for_each(dbi, |k, v| {
            model.entry(k.to_vec()).or_default().insert(v.to_vec());
            Ok(())
        })?;
    }
    let max_val = if dup { env.max_key_size(oracle::MDBX_DUPSORT).min(16) } else { 4096 };
    // A kill in the middle of a write leaves a torn last line (of a block
    // that never reached its commit): cut it off before appending.
    if let Ok(bytes) = std::fs::read(&a.log) {
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            OpenOptions::new()
                .write(true)
                .open(&a.log)
                .and_then(|f| f.set_len(keep as u64))
                .map_err(|e| format!("{}: {e}", a.log))?;
        }
    }
    let log = OpenOptions::new().create(true).append(true).open(&a.log).map_err(|e| format!("{}: {e}", a.log))?;
    let mut rng = Rng::new(a.seed ^ max_n);
    let window = rng.range(16, 1500) as u64;
    let target = rng.range(50, 2000);
    let mut actor =
        Actor { dup, rng, model, log, next_n: max_n + 1, fill: true, target, head: 0, tail: 0, window, max_val, a };
    let xs: Vec<u64> = actor.model.keys().map(|k| actor.decode(k)).collect();
    actor.tail = xs.iter().copied().min().unwrap_or(0);
    actor.head = xs.iter().copied().max().map_or(0, |m| m + 1);
    let deadline = Instant::now() + Duration::from_millis(actor.a.duration_ms);
    while Instant::now() < deadline && !STOP.load(Ordering::Relaxed) {
        match actor.step(&env) {
            Ok(()) => {}
            Err(Stop::Full) => {
                actor.write_log("abort\n").map_err(|_| "op log".to_string())?;
                actor.fill = false;
                actor.window = (actor.window / 2).max(8);
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Stop::Error(e)) => return Err(e),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM] {
            libc::signal(s, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t);
        }
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mdbx-stress-actor: {e}");
            ExitCode::from(1)
        }
    }
}
