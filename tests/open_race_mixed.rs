//! rdbx and libmdbx processes opening and closing one database as fast as
//! they can, each writing one record between open and close: both follow
//! the same seize and close protocol on the shared lock file
//! (docs/lock-format.md, "File locks"), so every open succeeds whichever
//! side closed last or opens next, and every commit is there at the end.
//!
//! Knob: `RDBX_OPEN_RACE_ROUNDS` (opens per process, default 150).

use std::path::Path;
use std::process::{Child, Command, Stdio};

use rdbx::{Db, Durability, Env, PutFlags};
use rdbx_tests::engine::OracleCli;

const CHILD_ENV: &str = "RDBX_MIXED_RACE_CHILD";

fn rounds() -> u32 {
    std::env::var("RDBX_OPEN_RACE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(150)
}

fn durability(mode: &str) -> Durability {
    if mode == "safe" {
        Durability::SafeNoSync
    } else {
        Durability::SyncDurable
    }
}

/// Child side (rdbx): `tag:mode:rounds:dir`; opens, puts `tag-<round>`,
/// commits, closes, `rounds` times.
#[test]
fn mixed_race_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let parts: Vec<&str> = spec.splitn(4, ':').collect();
    let [tag, mode, rounds, dir] = parts[..] else { panic!("bad child spec {spec}") };
    let rounds: u32 = rounds.parse().unwrap();
    for i in 0..rounds {
        let env = Env::builder()
            .durability(durability(mode))
            .open(Path::new(dir))
            .unwrap_or_else(|e| panic!("{tag}: open #{i} failed: {e:?}"));
        let mut txn = env.begin_rw_txn().unwrap_or_else(|e| panic!("{tag}: begin #{i}: {e:?}"));
        txn.put(Db::MAIN, format!("{tag}-{i:05}").as_bytes(), b"v", PutFlags::empty()).unwrap();
        txn.commit().unwrap_or_else(|e| panic!("{tag}: commit #{i}: {e:?}"));
        env.close().unwrap_or_else(|e| panic!("{tag}: close #{i}: {e:?}"));
    }
}

/// One process of a race.
struct Racer {
    tag: &'static str,
    libmdbx: bool,
    rounds: u32,
}

fn spawn(r: &Racer, mode: &str, dir: &Path) -> Child {
    let (program, args): (std::path::PathBuf, Vec<String>) = if r.libmdbx {
        let mut a = vec!["openclose".to_string(), dir.display().to_string(), r.tag.to_string(), r.rounds.to_string()];
        if mode == "safe" {
            a.push("--safe-nosync".into());
        }
        (env!("CARGO_BIN_EXE_mdbx-oracle").into(), a)
    } else {
        let a = ["--exact", "mixed_race_child", "--nocapture", "--test-threads=1"].map(String::from).to_vec();
        (std::env::current_exe().unwrap(), a)
    };
    Command::new(&program)
        .args(&args)
        .env(CHILD_ENV, format!("{}:{mode}:{}:{}", r.tag, r.rounds, dir.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs the racers on a fresh database (created by rdbx, then closed) and
/// checks that each succeeded, that every record is there, and that both
/// checkers find the database clean.
fn race(mode: &str, racers: &[Racer]) {
    let d = tempfile::tempdir().unwrap();
    drop(Env::builder().durability(durability(mode)).open(d.path()).unwrap());
    let children: Vec<_> = racers.iter().map(|r| (r, spawn(r, mode, d.path()))).collect();
    let mut failures = Vec::new();
    for (r, child) in children {
        let out = child.wait_with_output().unwrap();
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
            let why: Vec<&str> =
                text.lines().filter(|l| l.contains(r.tag) || l.contains("panicked") || l.contains("rror")).collect();
            let side = if r.libmdbx { "libmdbx" } else { "rdbx" };
            failures.push(format!("{} ({side}, {mode}): {}", r.tag, why.join(" | ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let env = Env::open(d.path()).unwrap();
    let txn = env.begin_ro_txn().unwrap();
    for r in racers {
        for i in 0..r.rounds {
            let key = format!("{}-{i:05}", r.tag);
            assert!(txn.get(Db::MAIN, key.as_bytes()).unwrap().is_some(), "{key} is missing");
        }
    }
    let total: u64 = racers.iter().map(|r| u64::from(r.rounds)).sum();
    assert_eq!(txn.db_stat(Db::MAIN).unwrap().entries, total);
    drop(txn);
    let report = env.check(&Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.problem_count(), 0, "{report:?}");
    env.close().unwrap();
    OracleCli::new(env!("CARGO_BIN_EXE_mdbx-oracle")).chk(d.path()).expect("libmdbx's check");
}

/// Two rdbx and two libmdbx processes, `RDBX_OPEN_RACE_ROUNDS` opens each.
fn race_two_and_two(mode: &str) {
    let n = rounds();
    let racer = |tag, libmdbx| Racer { tag, libmdbx, rounds: n };
    race(mode, &[racer("r0", false), racer("m0", true), racer("r1", false), racer("m1", true)]);
}

#[test]
fn rdbx_and_libmdbx_processes_opening_and_closing_at_once() {
    race_two_and_two("durable");
}

#[test]
fn rdbx_and_libmdbx_processes_opening_and_closing_at_once_safe_no_sync() {
    race_two_and_two("safe");
}
