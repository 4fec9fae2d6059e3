//! `rdbx-tools stress`: a long stochastic stress run for RAM disks. Each probe
//! creates a database with a configuration sampled from the seed, runs a
//! fleet of actor processes on it (each the same binary re-executed as the
//! hidden `stress-actor` subcommand, or a foreign MDBX implementation), kills
//! and restarts them at random, and verifies every actor's table against its
//! op log, the integrity of the database and of a compacting copy, and the
//! space the file uses. See crates/tools/README.md ("stress").

pub mod actor;
pub mod config;
pub mod report;
pub mod verify;

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use rdbx::{CheckOptions, CopyOptions, DbFlags, Env, Geometry, PutFlags};

use crate::common::interrupted;
use config::{parse_list, ActorPlan, Kind, Mode, ProbeConfig, Rng, Role, Space};
use report::{Counts, ProbeReport, Progress};
use verify::{Model, Op, GEN_TABLE, STATIC_TABLE};

/// Exit status: no failure found.
pub const EXIT_CLEAN: u8 = 0;
/// Exit status: usage or setup error.
pub const EXIT_USAGE: u8 = 1;
/// Exit status: a failure was found.
pub const EXIT_FAILURE: u8 = 2;
/// Exit status: interrupted (SIGINT/SIGTERM/SIGHUP) before a failure was found.
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Args, Debug, Clone)]
pub struct StressArgs {
    /// Directory for the probe databases [default: a new directory under
    /// /dev/shm, else under the temporary directory]
    pub dir: Option<PathBuf>,
    /// Seed of the run [default: random, always printed]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Total time, e.g. 30s, 10m, 2h [default: 60s unless --loops]
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Number of probes
    #[arg(long)]
    pub loops: Option<u64>,
    /// Actor processes per probe
    #[arg(long, default_value_t = 4)]
    pub processes: usize,
    /// Actor roles: hill,ttl,nested,append,jitter,copy,deadread,deadwrite,try,reader [default: all]
    #[arg(long)]
    pub actors: Option<String>,
    /// Page sizes to sample from [default: 256,512,...,65536]
    #[arg(long = "page-sizes")]
    pub page_sizes: Option<String>,
    /// Durability modes: durable,nometasync,safe-nosync,utterly-nosync [default: all]
    #[arg(long)]
    pub modes: Option<String>,
    /// How pages are written: pwrite,writemap (WRITEMAP: every process of a
    /// probe edits pages in a writable map) [default: both]
    #[arg(long)]
    pub maps: Option<String>,
    /// Table kinds: plain,integerkey,dupsort,dupfixed,integerdup,reversekey,reversedup [default: all]
    #[arg(long)]
    pub tables: Option<String>,
    /// SIGKILL actors at random moments, this many per minute (0: never)
    #[arg(long = "kill-rate", default_value_t = 0.0)]
    pub kill_rate: f64,
    /// Upper bound of a probe database in MiB [default: from the free space of DIR, at most 64]
    #[arg(long = "db-upto-mb")]
    pub db_upto_mb: Option<u64>,
    /// Run some actors (hill, ttl) with this program (another MDBX implementation)
    #[arg(long = "foreign-actor")]
    pub foreign_actor: Option<PathBuf>,
    /// Print the summary as JSON (on stdout)
    #[arg(long)]
    pub json: bool,
    /// Keep the probe databases
    #[arg(long)]
    pub keep: bool,
    /// Quiet: no progress, no per-probe lines
    #[arg(short, long)]
    pub quiet: bool,
    /// Run probe K of the seed's sequence only (to reproduce a failure)
    #[arg(long)]
    pub probe: Option<u64>,
    /// Length of each probe [default: sampled, 5..20 s]
    #[arg(long = "probe-time", value_parser = parse_duration)]
    pub probe_time: Option<Duration>,
    /// Test the runner: drop-ack (an actor acknowledges an aborted commit) or
    /// flip-byte (a byte of a live page is flipped mid-run)
    #[arg(long = "plant-defect", hide = true)]
    pub plant_defect: Option<String>,
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad duration '{s}' (e.g. 30s, 10m, 2h, 500ms)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "" | "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("bad duration unit in '{s}' (ms, s, m, h)")),
    };
    if !(0.0..1e9).contains(&secs) {
        return Err(format!("bad duration '{s}'"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn usage(msg: impl std::fmt::Display) -> u8 {
    eprintln!("rdbx-tools stress: {msg}");
    EXIT_USAGE
}

/// Free bytes for an unprivileged user on the file system of `dir`, and
/// whether it is a RAM disk (tmpfs or ramfs).
fn fs_info(dir: &Path) -> Option<(u64, bool)> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs/statfs write into zeroed structs we own; `c` is a valid C string.
    unsafe {
        let mut v: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut v) != 0 {
            return None;
        }
        let mut f: libc::statfs = std::mem::zeroed();
        let ram = libc::statfs(c.as_ptr(), &mut f) == 0 && (f.f_type == 0x0102_1994 || f.f_type == 0x8584_58f6);
        Some((v.f_bavail as u64 * v.f_frsize as u64, ram))
    }
}

struct Setup {
    dir: PathBuf,
    made_dir: bool,
    seed: u64,
    space: Space,
    kill_rate: f64,
    foreign: Option<PathBuf>,
    exe: PathBuf,
    plant: Option<String>,
}

pub fn run(a: StressArgs) -> u8 {
    // -- validate everything before starting ----------------------------------
    let roles = match a.actors.as_deref().map(|s| parse_list(s, "actor", Role::parse, &Role::names())) {
        None => Role::ALL.to_vec(),
        Some(Ok(v)) => v,
        Some(Err(e)) => return usage(e),
    };
    let kinds = match a.tables.as_deref().map(|s| parse_list(s, "table kind", Kind::parse, &Kind::names())) {
        None => Kind::ALL.to_vec(),
        Some(Ok(v)) => v,
        Some(Err(e)) => return usage(e),
    };
    let modes = match a.modes.as_deref().map(|s| parse_list(s, "mode", Mode::parse, &Mode::names())) {
        None => Mode::ALL.to_vec(),
        Some(Ok(v)) => v,
        Some(Err(e)) => return usage(e),
    };
    let maps = match a.maps.as_deref().map(|s| parse_list(s, "map", parse_map, "pwrite,writemap")) {
        None => vec![false, true],
        Some(Ok(v)) => v,
        Some(Err(e)) => return usage(e),
    };
    let page_sizes = match &a.page_sizes {
        None => config::PAGE_SIZES.to_vec(),
        Some(s) => {
            let mut v = Vec::new();
            for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                match w.parse::<usize>() {
                    Ok(p) if p.is_power_of_two() && (256..=65536).contains(&p) => v.push(p),
                    _ => return usage(format!("bad page size '{w}' (a power of two in 256..65536)")),
                }
            }
            if v.is_empty() {
                return usage("empty list of page sizes");
            }
            v
        }
    };
    if a.processes == 0 || a.processes > 32 {
        return usage("--processes must be in 1..=32");
    }
    if !(a.kill_rate >= 0.0 && a.kill_rate <= 6000.0) {
        return usage("--kill-rate must be in 0..=6000 per minute");
    }
    if a.loops == Some(0) {
        return usage("--loops must be at least 1");
    }
    if let Some(p) = &a.plant_defect {
        if p != "drop-ack" && p != "flip-byte" {
            return usage(format!("unknown planted defect '{p}' (drop-ack, flip-byte)"));
        }
    }
    if let Some(f) = &a.foreign_actor {
        if !f.is_file() {
            return usage(format!("--foreign-actor {}: no such program", f.display()));
        }
        if !roles.iter().any(|r| config::FOREIGN_ROLES.contains(r)) && !roles.iter().any(|&r| r != Role::Reader) {
            return usage("--foreign-actor needs a writer role among --actors");
        }
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return usage(format!("cannot find my own executable: {e}")),
    };
    // -- the directory -----------------------------------------------------------
    let (dir, made_dir) = match &a.dir {
        Some(d) => {
            if d.exists() && !d.is_dir() {
                return usage(format!("{}: not a directory", d.display()));
            }
            let made = !d.exists();
            if let Err(e) = std::fs::create_dir_all(d) {
                return usage(format!("{}: {e}", d.display()));
            }
            (d.clone(), made)
        }
        None => {
            let shm = Path::new("/dev/shm");
            let base = if shm.is_dir() && fs_info(shm).is_some_and(|(free, _)| free > 64 << 20) {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            };
            let d = base.join(format!("rdbx-stress-{}", std::process::id()));
            if let Err(e) = std::fs::create_dir_all(&d) {
                return usage(format!("{}: {e}", d.display()));
            }
            (d, true)
        }
    };
    let cleanup_dir = |made: bool| {
        if made {
            let _ = std::fs::remove_dir(&dir);
        }
    };
    let Some((free, ram)) = fs_info(&dir) else {
        cleanup_dir(made_dir);
        return usage(format!("{}: cannot read the free space", dir.display()));
    };
    let free_mb = free >> 20;
    let upto_mb = match a.db_upto_mb {
        Some(m) if m < 2 => {
            cleanup_dir(made_dir);
            return usage("--db-upto-mb must be at least 2");
        }
        Some(m) => m,
        None => (free_mb / 4).min(64),
    };
    // A probe needs its database, a copy by a copy actor and the final
    // compacting copy, each at most the upper bound.
    if free_mb < 3 * upto_mb || upto_mb < 2 {
        cleanup_dir(made_dir);
        return usage(format!(
            "{}: not enough free space: {free_mb} MiB free, a probe needs 3 x --db-upto-mb = {} MiB (lower --db-upto-mb)",
            dir.display(),
            3 * upto_mb.max(2)
        ));
    }
    let seed = a.seed.unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        config::probe_seed(t.as_nanos() as u64, std::process::id() as u64) >> 1
    });
    eprintln!("rdbx-tools stress: seed {seed}, directory {}", dir.display());
    if !ram {
        eprintln!("rdbx-tools stress: note: {} is not a RAM disk (tmpfs); durable commits will be slow", dir.display());
    }
    let setup = Setup {
        dir: dir.clone(),
        made_dir,
        seed,
        space: Space {
            roles,
            page_sizes,
            modes,
            maps,
            kinds,
            processes: a.processes,
            upto_mb,
            foreign: a.foreign_actor.is_some(),
        },
        kill_rate: a.kill_rate,
        foreign: a.foreign_actor.clone(),
        exe,
        plant: a.plant_defect.clone(),
    };
    run_probes(&a, &setup)
}

fn run_probes(a: &StressArgs, s: &Setup) -> u8 {
    let t0 = Instant::now();
    let total_time = match (a.duration, a.loops) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(60)),
    };
    let progress = Progress::new(!a.quiet && !a.json);
    let mut reports: Vec<ProbeReport> = Vec::new();
    let mut total = Counts::default();
    let mut k = a.probe.unwrap_or(0);
    let mut done = 0u64;
    let mut failed = false;
    let mut was_interrupted = false;
    loop {
        if a.loops.is_some_and(|l| done >= l) || failed {
            break;
        }
        if interrupted() {
            was_interrupted = true;
            break;
        }
        let remaining = total_time.map(|t| t.saturating_sub(t0.elapsed()));
        if remaining.is_some_and(|r| r < Duration::from_secs(1)) && done > 0 {
            break;
        }
        let cfg = config::sample(&s.space, s.seed, k);
        let time = match (a.probe_time, total_time, a.loops) {
            (Some(p), _, _) => p,
            (None, Some(t), Some(l)) => t / l as u32,
            _ => {
                let mut r = Rng::new(cfg.seed ^ 0x7);
                let t = Duration::from_millis(r.range(5000, 20000));
                match remaining {
                    Some(rem) => t.min(rem).max(Duration::from_secs(1)),
                    None => t,
                }
            }
        };
        let rep = run_probe(a, s, &cfg, time, &progress, &total);
        total.add(&rep.counts);
        if !a.quiet && !a.json {
            progress.println(&rep.line());
            for f in &rep.failures {
                progress.println(&format!("  FAILURE: {f}"));
            }
            if let Some(r) = &rep.repro {
                progress.println(&format!("  database kept in {}", rep.kept.as_deref().unwrap_or("?")));
                progress.println(&format!("  reproduce: {r}"));
            }
        }
        failed |= !rep.failures.is_empty();
        was_interrupted |= rep.interrupted;
        reports.push(rep);
        done += 1;
        k += 1;
        if a.probe.is_some() {
            break;
        }
    }
    progress.finish();
    let code = if failed {
        EXIT_FAILURE
    } else if was_interrupted || interrupted() {
        EXIT_INTERRUPTED
    } else {
        EXIT_CLEAN
    };
    let verdict = match code {
        EXIT_FAILURE => "FAILURES FOUND",
        EXIT_INTERRUPTED => "interrupted, no failure so far",
        _ => "clean",
    };
    let secs = t0.elapsed().as_secs_f64();
    if s.made_dir && !failed && !a.keep {
        let _ = std::fs::remove_dir(&s.dir);
    }
    if a.json {
        let failures: Vec<serde_json::Value> = reports
            .iter()
            .flat_map(|r| {
                r.failures
                    .iter()
                    .map(move |f| serde_json::json!({"probe": r.probe, "what": f, "repro": r.repro, "kept": r.kept}))
            })
            .collect();
        let j = serde_json::json!({
            "seed": s.seed,
            "dir": s.dir.display().to_string(),
            "seconds": (secs * 10.0).round() / 10.0,
            "verdict": verdict,
            "exit_code": code,
            "interrupted": code == EXIT_INTERRUPTED,
            "probes": reports.iter().map(ProbeReport::json).collect::<Vec<_>>(),
            "totals": total.json(),
            "failures": failures,
        });
        println!("{}", serde_json::to_string_pretty(&j).unwrap_or_default());
    } else {
        print!("{}", report::table(&total, reports.len(), secs, s.seed, verdict));
        for r in reports.iter().filter(|r| r.repro.is_some()) {
            println!("probe {} failed; database kept in {}", r.probe, r.kept.as_deref().unwrap_or("?"));
            for f in &r.failures {
                println!("  {f}");
            }
            println!("reproduce: {}", r.repro.as_deref().unwrap_or(""));
        }
    }
    code
}

/// One actor process slot.
struct Slot {
    plan: ActorPlan,
    child: Option<Child>,
    /// The runner killed the current process.
    killed: bool,
    starts: u64,
    finished: bool,
}

/// The running actors; every exit path (including panics) kills and reaps them.
struct Fleet {
    slots: Vec<Slot>,
}

impl Fleet {
    fn signal_all(&mut self, sig: i32) {
        for s in &mut self.slots {
            if let Some(c) = &s.child {
                // SAFETY: kill(2) on the pid of a child we have not reaped yet.
                unsafe {
                    libc::kill(c.id() as i32, sig);
                }
                if sig == libc::SIGKILL {
                    s.killed = true;
                }
            }
        }
    }
    fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.child.is_some()).count()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.signal_all(libc::SIGKILL);
        for s in &mut self.slots {
            if let Some(mut c) = s.child.take() {
                let _ = c.wait();
            }
        }
    }
}

struct ProbeCtx<'a> {
    a: &'a StressArgs,
    s: &'a Setup,
    cfg: &'a ProbeConfig,
    pdir: PathBuf,
    deadline: Instant,
    probe_len: Duration,
}

impl ProbeCtx<'_> {
    fn log_path(&self, p: &ActorPlan) -> PathBuf {
        self.pdir.join(format!("{}.log", p.table))
    }

    fn spawn(&self, slot: &mut Slot) -> Result<(), String> {
        let p = &slot.plan;
        let left = self.deadline.saturating_duration_since(Instant::now()).as_millis().max(1) as u64;
        let err = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.pdir.join(format!("{}.err", p.table)))
            .map_err(|e| format!("actor stderr file: {e}"))?;
        let mut cmd = if p.foreign {
            Command::new(self.s.foreign.as_ref().expect("foreign actor program"))
        } else {
            let mut c = Command::new(&self.s.exe);
            c.arg("stress-actor");
            c
        };
        let seed = p.seed.wrapping_add(slot.starts.wrapping_mul(0x9e37_79b9));
        cmd.arg("--db")
            .arg(&self.pdir)
            .args(["--table", &p.table, "--table-kind", p.kind.name()])
            .args(["--page-size", &self.cfg.page_size.to_string(), "--durability", self.cfg.mode.name()])
            .args(if self.cfg.write_map { &["--write-map", "true"][..] } else { &[] })
            .args(["--seed", &seed.to_string()])
            .arg("--log")
            .arg(self.log_path(p))
            .args(["--role", p.role.name(), "--duration-ms", &left.to_string()]);
        if let (false, Some(n)) = (p.foreign, self.cfg.dirty_limit) {
            cmd.args(["--dirty-limit", &n.to_string()]);
        }
        if !p.foreign && self.s.plant.as_deref() == Some("drop-ack") && p.role != Role::Reader {
            cmd.args(["--plant", "drop-ack"]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(err).process_group(0);
        // SAFETY: the closure only calls prctl(2), async-signal-safe: the
        // actor dies with the runner even if the runner is SIGKILLed.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| format!("starting actor {}: {e}", p.table))?;
        slot.child = Some(child);
        slot.killed = false;
        slot.starts += 1;
        Ok(())
    }

    fn stderr_tail(&self, p: &ActorPlan) -> String {
        let t = std::fs::read_to_string(self.pdir.join(format!("{}.err", p.table))).unwrap_or_default();
        // Without backtrace frames: the message and the panic location.
        let lines: Vec<&str> = t
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                !(l.starts_with("at ") || l.split(':').next().is_some_and(|d| d.parse::<u32>().is_ok()))
            })
            .filter(|l| !l.starts_with("stack backtrace") && !l.starts_with("note: "))
            .collect();
        lines[lines.len().saturating_sub(4)..].join(" | ")
    }

    fn repro(&self) -> String {
        let a = self.a;
        let mut s = format!(
            "rdbx-tools stress {} --seed {} --loops 1 --probe {} --probe-time {}ms --processes {} --kill-rate {} --db-upto-mb {}",
            self.s.dir.join(format!("repro-{}", self.cfg.probe)).display(),
            self.s.seed,
            self.cfg.probe,
            self.probe_len.as_millis(),
            a.processes,
            a.kill_rate,
            self.s.space.upto_mb
        );
        let list = |v: Vec<&str>| v.join(",");
        s.push_str(&format!(" --actors {}", list(self.s.space.roles.iter().map(|r| r.name()).collect())));
        s.push_str(&format!(" --tables {}", list(self.s.space.kinds.iter().map(|r| r.name()).collect())));
        s.push_str(&format!(" --modes {}", list(self.s.space.modes.iter().map(|r| r.name()).collect())));
        s.push_str(&format!(" --maps {}", list(self.s.space.maps.iter().map(|&w| map_name(w)).collect())));
        let ps: Vec<String> = self.s.space.page_sizes.iter().map(|p| p.to_string()).collect();
        s.push_str(&format!(" --page-sizes {}", ps.join(",")));
        if let Some(f) = &self.s.foreign {
            s.push_str(&format!(" --foreign-actor {}", f.display()));
        }
        if let Some(p) = &self.s.plant {
            s.push_str(&format!(" --plant-defect {p}"));
        }
        s
    }
}

/// `pwrite` or `writemap` (see `--maps`).
fn parse_map(s: &str) -> Option<bool> {
    match s {
        "pwrite" => Some(false),
        "writemap" => Some(true),
        _ => None,
    }
}

fn map_name(write_map: bool) -> &'static str {
    if write_map {
        "writemap"
    } else {
        "pwrite"
    }
}

fn open_runner_env(pdir: &Path, cfg: &ProbeConfig) -> Result<Env, String> {
    Env::builder()
        .max_dbs(64)
        .max_readers(126)
        .durability(cfg.mode.durability())
        .write_map(cfg.write_map)
        .geometry(Geometry {
            page_size: Some(cfg.page_size),
            size_lower: Some(cfg.size_lower),
            size_now: Some(cfg.size_lower),
            size_upper: Some(cfg.size_upper),
            growth_step: Some(cfg.growth_step),
            shrink_threshold: Some(cfg.shrink_threshold),
        })
        .open(pdir)
        .map_err(|e| format!("creating the database in {}: {e}", pdir.display()))
}

/// The static table: records the runner writes once; a marker value makes
/// its leaf findable in the file (flip-byte).
fn static_model(cfg: &ProbeConfig) -> (Model, Vec<u8>) {
    let mut r = Rng::new(cfg.seed ^ 0x5747);
    let mut m = Model::new(false);
    let marker = [b"rdbx-stress-marker-".as_slice(), &r.bytes(13)].concat();
    for i in 0..40u64 {
        let v = if i == 7 {
            marker.clone()
        } else {
            let n = r.range(0, 24) as usize;
            r.bytes(n)
        };
        m.apply(&Op::Put(format!("s{i:03}").into_bytes(), v));
    }
    (m, marker)
}

fn setup_db(env: &Env, cfg: &ProbeConfig, statics: &Model) -> Result<(), String> {
    let e = |what: &str, err: rdbx::Error| format!("setting up the database: {what}: {err}");
    let mut txn = env.begin_rw_txn().map_err(|x| e("begin", x))?;
    txn.create_db(Some(GEN_TABLE), DbFlags::empty()).map_err(|x| e(GEN_TABLE, x))?;
    let st = txn.create_db(Some(STATIC_TABLE), DbFlags::empty()).map_err(|x| e(STATIC_TABLE, x))?;
    for (k, v) in statics.sorted_pairs() {
        txn.put(st, k, v, PutFlags::empty()).map_err(|x| e("put", x))?;
    }
    for p in &cfg.actors {
        txn.create_db(Some(&p.table), p.kind.flags()).map_err(|x| e(&p.table, x))?;
    }
    txn.commit().map_err(|x| e("commit", x))
}

/// Flips one byte of every copy of `marker` in the data file.
fn flip_marker(data: &Path, marker: &[u8]) -> Result<usize, String> {
    let bytes = std::fs::read(data).map_err(|e| format!("{}: {e}", data.display()))?;
    let f = std::fs::OpenOptions::new().write(true).open(data).map_err(|e| format!("{}: {e}", data.display()))?;
    let mut n = 0;
    let mut i = 0;
    while let Some(p) = bytes[i..].windows(marker.len()).position(|w| w == marker) {
        let at = i + p + marker.len() - 1;
        f.write_at(&[bytes[at] ^ 0xff], at as u64).map_err(|e| format!("flip: {e}"))?;
        n += 1;
        i = at + 1;
    }
    Ok(n)
}

fn fail(rep: &mut ProbeReport, m: String) {
    rep.failures.push(m);
    rep.counts.failures += 1;
}

fn run_probe(
    a: &StressArgs,
    s: &Setup,
    cfg: &ProbeConfig,
    probe_len: Duration,
    progress: &Progress,
    before: &Counts,
) -> ProbeReport {
    let t0 = Instant::now();
    let pdir = s.dir.join(format!("probe-{}", cfg.probe));
    let mut rep = ProbeReport {
        probe: cfg.probe,
        page_size: cfg.page_size,
        mode: format!(
            "{}{}{}",
            cfg.mode.name(),
            if cfg.write_map { "+writemap" } else { "" },
            cfg.dirty_limit.map(|n| format!("+spill{n}")).unwrap_or_default()
        ),
        geometry: format!(
            "lower {} upper {} growth {} shrink {}",
            cfg.size_lower, cfg.size_upper, cfg.growth_step, cfg.shrink_threshold
        ),
        actors: cfg
            .actors
            .iter()
            .map(|p| format!("{}:{}/{}{}", p.table, p.role, p.kind, if p.foreign { "/foreign" } else { "" }))
            .collect(),
        seconds: 0.0,
        counts: Counts::default(),
        space: None,
        failures: Vec::new(),
        kept: None,
        repro: None,
        interrupted: false,
    };
    let ctx = ProbeCtx { a, s, cfg, pdir: pdir.clone(), deadline: t0 + probe_len, probe_len };
    let _ = std::fs::remove_dir_all(&pdir);
    if let Err(e) = std::fs::create_dir_all(&pdir) {
        fail(&mut rep, format!("{}: {e}", pdir.display()));
        return rep;
    }
    let (statics, marker) = static_model(cfg);
    let env = match open_runner_env(&pdir, cfg).and_then(|env| setup_db(&env, cfg, &statics).map(|_| env)) {
        Ok(e) => e,
        Err(m) => {
            fail(&mut rep, m);
            rep.kept = Some(pdir.display().to_string());
            return rep;
        }
    };
    let sampler = RetentionSampler::start(&env, cfg.page_size as u64);
    let mut fleet = Fleet {
        slots: cfg
            .actors
            .iter()
            .map(|p| Slot { plan: p.clone(), child: None, killed: false, starts: 0, finished: false })
            .collect(),
    };
    for slot in &mut fleet.slots {
        if let Err(m) = ctx.spawn(slot) {
            fail(&mut rep, m);
            slot.finished = true;
        }
    }
    let mut rng = Rng::new(cfg.seed ^ 0x4b11);
    let mut last_sample = Instant::now();
    let mut flipped = false;
    let tick = Duration::from_millis(20);
    // -- run -------------------------------------------------------------------
    while Instant::now() < ctx.deadline && rep.failures.is_empty() {
        if interrupted() {
            rep.interrupted = true;
            break;
        }
        std::thread::sleep(tick);
        if last_sample.elapsed() >= Duration::from_millis(200) {
            last_sample = Instant::now();
            progress.set(format!(
                "probe {} ({} {}): {} actors, {} kills, {} restarts, {} commits so far",
                cfg.probe,
                cfg.page_size,
                cfg.mode,
                fleet.live(),
                before.kills + rep.counts.kills,
                before.restarts + rep.counts.restarts,
                before.commits
            ));
        }
        if s.plant.as_deref() == Some("flip-byte") && !flipped && t0.elapsed() >= probe_len / 3 {
            flipped = true;
            match flip_marker(env.data_path(), &marker) {
                Ok(0) => fail(&mut rep, "flip-byte: the marker is not in the data file".into()),
                Ok(_) => {}
                Err(m) => fail(&mut rep, format!("flip-byte: {m}")),
            }
        }
        // Random kills.
        if s.kill_rate > 0.0 {
            let p = s.kill_rate / 60.0 * tick.as_secs_f64();
            if rng.below(1_000_000) < (p * 1e6) as u64 {
                let live: Vec<usize> = (0..fleet.slots.len()).filter(|&i| fleet.slots[i].child.is_some()).collect();
                if !live.is_empty() {
                    let i = *rng.pick(&live);
                    let slot = &mut fleet.slots[i];
                    if let Some(c) = &slot.child {
                        // SAFETY: kill(2) on an unreaped child.
                        unsafe {
                            libc::kill(c.id() as i32, libc::SIGKILL);
                        }
                        slot.killed = true;
                    }
                }
            }
        }
        // Reap, recover, restart.
        for i in 0..fleet.slots.len() {
            let status = match fleet.slots[i].child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(st))) => st,
                Some(Ok(None)) | None => continue,
                Some(Err(e)) => {
                    fail(&mut rep, format!("waiting for actor {}: {e}", fleet.slots[i].plan.table));
                    continue;
                }
            };
            let slot = &mut fleet.slots[i];
            slot.child = None;
            let p = slot.plan.clone();
            let restart = if slot.killed && status.signal() == Some(libc::SIGKILL) {
                rep.counts.kills += 1;
                true
            } else if status.code() == Some(actor::EXIT_DEAD) {
                rep.counts.dead_exits += 1;
                true
            } else if status.code() == Some(actor::EXIT_DONE) {
                slot.finished = true;
                false
            } else {
                let how = match (status.code(), status.signal()) {
                    (Some(actor::EXIT_VIOLATION), _) => "found a violation".to_string(),
                    (Some(c), _) => format!("exited with status {c}"),
                    (_, Some(sig)) => format!("died of signal {sig}"),
                    _ => "ended".to_string(),
                };
                fail(&mut rep, format!("actor {} ({}/{}) {how}: {}", p.table, p.role, p.kind, ctx.stderr_tail(&p)));
                slot.finished = true;
                false
            };
            if restart {
                // The table must hold exactly the last acknowledged commit
                // (or the one in flight) in every durability mode.
                match verify::resolve_and_verify(&env, &p.table, p.kind.dup(), &ctx.log_path(&p), false) {
                    Ok(v) => {
                        rep.counts.recoveries_verified += 1;
                        match v.resolved {
                            Some((_, true)) => rep.counts.inflight_applied += 1,
                            Some((_, false)) => rep.counts.inflight_absent += 1,
                            None => {}
                        }
                    }
                    Err(m) => {
                        fail(&mut rep, format!("after actor {} ({}) died: {m}", p.table, p.role));
                        slot.finished = true;
                        continue;
                    }
                }
                if ctx.deadline.saturating_duration_since(Instant::now()) > Duration::from_millis(300) {
                    if let Err(m) = ctx.spawn(slot) {
                        fail(&mut rep, m);
                    } else {
                        rep.counts.restarts += 1;
                    }
                }
            }
        }
    }
    // -- stop: SIGTERM, then SIGKILL -------------------------------------------------
    fleet.signal_all(libc::SIGTERM);
    let stop_by = Instant::now() + Duration::from_secs(5);
    while fleet.slots.iter_mut().any(|s| s.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None))))
        && Instant::now() < stop_by
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    fleet.signal_all(libc::SIGKILL);
    for slot in &mut fleet.slots {
        if let Some(mut c) = slot.child.take() {
            let st = c.wait();
            if let Ok(st) = st {
                let ok = st.success() || st.signal() == Some(libc::SIGKILL) || st.signal() == Some(libc::SIGTERM);
                if !ok && st.code() != Some(actor::EXIT_DEAD) && !rep.interrupted {
                    let p = &slot.plan;
                    fail(&mut rep, format!("actor {} ({}) ended with {st}: {}", p.table, p.role, ctx.stderr_tail(p)));
                }
            }
        }
    }
    drop(fleet);
    // Every writer is gone: the sampler's last sample sees the final mark.
    let growth = sampler.finish();
    // -- verify ------------------------------------------------------------------------
    if !rep.interrupted || !rep.failures.is_empty() {
        final_checks(&ctx, &env, &statics, &growth, &mut rep);
    }
    drop(env);
    rep.seconds = t0.elapsed().as_secs_f64();
    if !rep.failures.is_empty() {
        rep.kept = Some(pdir.display().to_string());
        rep.repro = Some(ctx.repro());
    } else if a.keep {
        rep.kept = Some(pdir.display().to_string());
    } else {
        let _ = std::fs::remove_dir_all(&pdir);
    }
    rep
}

/// Samples the newest meta and the reader table every millisecond on its own
/// thread (the runner's main loop pauses to verify and restart actors) for
/// the space check's allowance for readers ([`verify::GrowthRetention`]).
/// Only the meta and the reader table are read: `Env::gc_info` would update
/// the shared oldest-reader cache without the writer lock, which libmdbx
/// writers do not expect.
struct RetentionSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<verify::GrowthRetention>,
}

impl RetentionSampler {
    fn start(env: &Env, page_size: u64) -> RetentionSampler {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (env, flag) = (env.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut g = verify::GrowthRetention::default();
            let sample = |g: &mut verify::GrowthRetention| -> rdbx::Result<()> {
                let before = env.info()?.pages_retired;
                let retained = env.readers()?.iter().map(|r| r.bytes_retained / page_size).max().unwrap_or(0);
                let after = env.info()?;
                g.sample(before, retained, after.pages_retired, after.first_unallocated);
                Ok(())
            };
            loop {
                let last = flag.load(Ordering::Acquire);
                // A failed read only skips a sample (the next one covers the gap).
                let _ = sample(&mut g);
                if last {
                    break g;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        RetentionSampler { stop, thread }
    }

    /// Takes a last sample and returns what was found.
    fn finish(self) -> verify::GrowthRetention {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread.join().unwrap_or_default()
    }
}

fn final_checks(
    ctx: &ProbeCtx<'_>,
    env: &Env,
    statics: &Model,
    growth: &verify::GrowthRetention,
    rep: &mut ProbeReport,
) {
    let cfg = ctx.cfg;
    let mut models: BTreeMap<String, Model> = BTreeMap::new();
    let mut peak_pages = 0u64;
    for p in &cfg.actors {
        match verify::resolve_and_verify(env, &p.table, p.kind.dup(), &ctx.log_path(p), false) {
            Ok(v) => {
                let r = &v.replay;
                rep.counts.commits += r.acks;
                rep.counts.commit_failures += r.fails;
                rep.counts.aborts += r.aborts;
                rep.counts.checks_passed += r.checked;
                rep.counts.tables_verified += 1;
                match v.resolved {
                    Some((_, true)) => rep.counts.inflight_applied += 1,
                    Some((_, false)) => rep.counts.inflight_absent += 1,
                    None => {}
                }
                peak_pages += verify::estimate_pages(r.peak_pairs, r.peak_bytes, cfg.page_size as u64) + 16;
                models.insert(p.table.clone(), v.replay.model);
            }
            Err(m) => fail(rep, format!("final verification: {m}")),
        }
    }
    match verify::verify_against(env, STATIC_TABLE, statics) {
        Ok(()) => rep.counts.tables_verified += 1,
        Err(m) => fail(rep, format!("final verification of the static table: {m}")),
    }
    // The integrity check of the database.
    match env.check(&CheckOptions::default(), &mut |_| {}) {
        Ok(r) if r.problem_count() == 0 => rep.counts.checks_passed += 1,
        Ok(r) => {
            let first: Vec<String> = r.problems.iter().take(5).map(|p| format!("{p:?}")).collect();
            fail(rep, format!("integrity check: {} problems: {}", r.problem_count(), first.join("; ")))
        }
        Err(e) => fail(rep, format!("integrity check failed to run: {e}")),
    }
    // A compacting copy, checked, with the same content.
    let dst = ctx.pdir.join("final-compact.copy");
    let copied = env.copy_to(&dst, &CopyOptions { compact: true, overwrite: true, ..Default::default() }, &mut |_| {});
    match copied {
        Err(e) => fail(rep, format!("compacting copy: {e}")),
        Ok(_) => {
            let r = Env::builder().no_sub_dir(true).read_only(true).max_dbs(64).open(&dst).map_err(|e| format!("{e}"));
            match r {
                Err(m) => fail(rep, format!("opening the compacted copy: {m}")),
                Ok(copy) => {
                    match copy.check(&CheckOptions::default(), &mut |_| {}) {
                        Ok(r) if r.problem_count() == 0 => rep.counts.checks_passed += 1,
                        Ok(r) => fail(rep, format!("compacted copy: {} problems", r.problem_count())),
                        Err(e) => fail(rep, format!("checking the compacted copy: {e}")),
                    }
                    for (t, m) in &models {
                        if let Err(e) = verify::verify_against(&copy, t, m) {
                            fail(rep, format!("compacted copy: {e}"));
                        }
                    }
                }
            }
            if rep.failures.is_empty() {
                let _ = std::fs::remove_file(&dst);
                let _ = std::fs::remove_file(ctx.pdir.join("final-compact.copy-lck"));
            }
        }
    }
    // Space: the allocated pages stay within a bound of the live data.
    let used = (|| -> rdbx::Result<u64> {
        let txn = env.begin_ro_txn()?;
        let mut used = 0;
        let mut dbs = vec![rdbx::Db::MAIN];
        for n in txn.table_names()? {
            dbs.push(txn.open_db_bytes(Some(&n))?);
        }
        for db in dbs {
            let st = txn.db_stat(db)?;
            used += st.branch_pages + st.leaf_pages + st.overflow_pages;
        }
        Ok(used)
    })();
    match (used, env.info()) {
        (Ok(used), Ok(info)) => {
            let sc = verify::SpaceCheck::new(info.first_unallocated, used, peak_pages + 16, growth.retained_pages);
            rep.space = Some((sc.first_unallocated, sc.bound, sc.retained_pages));
            if !sc.ok() {
                fail(
                    rep,
                    format!(
                        "space: {} pages allocated, bound {} = 4 x max(used now {}, peak estimate {}) + 64 + retained by readers while the file grew {} (at most; {} samples saw it grow)",
                        sc.first_unallocated, sc.bound, sc.used_pages, sc.peak_estimate_pages, sc.retained_pages, growth.growths
                    ),
                );
            }
        }
        (Err(e), _) | (_, Err(e)) => fail(rep, format!("space check: {e}")),
    }
}
