//! Processes opening and closing one database as fast as they can, each
//! writing between open and close, while others do the same: every open
//! must succeed (the lock-file hand-over between the last process to close
//! and the next to open), and every commit must be there at the end.
//!
//! Knob: `RDBX_OPEN_RACE_ROUNDS` (opens per process, default 150).

use std::path::Path;
use std::process::Command;

use rdbx::{Db, Durability, Env, PutFlags};

const CHILD_ENV: &str = "RDBX_OPEN_RACE_CHILD";

fn rounds() -> u32 {
    std::env::var("RDBX_OPEN_RACE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(150)
}

fn durability(name: &str) -> Durability {
    match name {
        "safe" => Durability::SafeNoSync,
        "nometa" => Durability::NoMetaSync,
        _ => Durability::SyncDurable,
    }
}

/// Child side: `id:mode:role:rounds:dir`; opens, writes one record (or
/// reads, or nothing), closes, `rounds` times.
#[test]
fn open_race_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let parts: Vec<&str> = spec.splitn(5, ':').collect();
    let [id, mode, role, rounds, dir] = parts[..] else { panic!("bad child spec {spec}") };
    let rounds: u32 = rounds.parse().unwrap();
    for i in 0..rounds {
        let opened = Env::builder().durability(durability(mode)).open(Path::new(dir));
        let env = match opened {
            Ok(e) => e,
            Err(e) => panic!("child {id}: open #{i} failed: {e:?}"),
        };
        if role == "opener" {
            // Nothing between open and close: the close protocol runs as
            // often as it can, and it is the last user's close (lock file
            // and data file unlocked in turn) that another opener meets.
        } else if role == "reader" {
            let r = env.begin_ro_txn().unwrap_or_else(|e| panic!("child {id}: read #{i}: {e:?}"));
            let _ = r.get(Db::MAIN, b"x").unwrap();
        } else {
            let mut txn = env.begin_rw_txn().unwrap_or_else(|e| panic!("child {id}: begin #{i}: {e:?}"));
            txn.put(Db::MAIN, format!("{id}-{i:05}").as_bytes(), b"v", PutFlags::empty()).unwrap();
            txn.commit().unwrap_or_else(|e| panic!("child {id}: commit #{i}: {e:?}"));
        }
        env.close().unwrap_or_else(|e| panic!("child {id}: close #{i}: {e:?}"));
    }
}

#[test]
fn processes_opening_and_closing_at_once_durable() {
    race("durable", &[WRITER, WRITER, WRITER, READER]);
}

#[test]
fn processes_opening_and_closing_at_once_safe_no_sync() {
    race("safe", &[WRITER, WRITER, WRITER, READER]);
}

#[test]
fn processes_opening_and_closing_at_once_no_meta_sync() {
    race("nometa", &[WRITER, WRITER, WRITER, READER]);
}

/// Regression: a closing last user unlocked the lock file before the data
/// file, so an opener that took the lock file in between met the data file
/// still locked whole and failed with `Busy` instead of waiting (seen once
/// in CI). The window is two system calls wide; strace widens it: every
/// `fcntl` of the closer returns 3 ms late, and the other openers spend 5 ms
/// closed before each open, so the closer is often the last user. Before
/// the fix openers failed at their first or second open. Two changes mend
/// it, each alone enough here: the close lets go of the data file first,
/// and the seize starts over when it meets the data file held beside a
/// destroyed lock file (`lck.rs`'s unit tests check that one alone).
/// Skipped without strace.
#[test]
fn openers_meet_a_slow_last_closer() {
    let traced = Command::new("strace").args(["-o", "/dev/null", "true"]).output();
    if !traced.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: strace cannot run here");
        return;
    }
    let slow_closer = Child {
        role: "opener",
        rounds: 10,
        wrapper: &["strace", "-f", "-o", "/dev/null", "-e", "trace=fcntl", "-e", "inject=fcntl:delay_exit=3000"],
    };
    let late_opener = Child {
        role: "opener",
        rounds: 20,
        wrapper: &["strace", "-f", "-o", "/dev/null", "-e", "trace=openat", "-e", "inject=openat:delay_enter=5000"],
    };
    // The openers meet the closer mostly while the race starts (before the
    // fix, about half the races failed), so run several short ones.
    for _ in 0..8 {
        race("safe", &[slow_closer, late_opener, late_opener]);
    }
}

/// One child process of a race.
#[derive(Clone, Copy)]
struct Child {
    /// `writer` (one put a round), `reader` (one get) or `opener` (nothing
    /// between open and close, so the close protocol runs as often as it can).
    role: &'static str,
    rounds: u32,
    /// A command the child runs under (empty: none).
    wrapper: &'static [&'static str],
}

const WRITER: Child = Child { role: "writer", rounds: 0, wrapper: &[] };
const READER: Child = Child { role: "reader", rounds: 0, wrapper: &[] };

/// Processes sharing a database agree on its durability mode (libmdbx
/// refuses a different one while the database is open), so each race uses
/// one mode. A child's `rounds` 0 means `RDBX_OPEN_RACE_ROUNDS`.
fn race(mode: &str, kinds: &[Child]) {
    let d = tempfile::tempdir().unwrap();
    // Created once here, then only the children use it.
    drop(Env::builder().durability(durability(mode)).open(d.path()).unwrap());
    let exe = std::env::current_exe().unwrap();
    let rounds_of = |c: &Child| if c.rounds == 0 { rounds() } else { c.rounds };
    let children: Vec<_> = kinds
        .iter()
        .enumerate()
        .map(|(id, kind)| {
            let spec = format!("{id}:{mode}:{}:{}:{}", kind.role, rounds_of(kind), d.path().display());
            let mut cmd = match kind.wrapper.split_first() {
                Some((program, args)) => {
                    let mut c = Command::new(program);
                    c.args(args).arg(&exe);
                    c
                }
                None => Command::new(&exe),
            };
            let child = cmd
                .args(["--exact", "open_race_child", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, spec)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (id, kind.role, child)
        })
        .collect();
    let mut failures = Vec::new();
    for (id, role, child) in children {
        let out = child.wait_with_output().unwrap();
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
            let why: Vec<&str> = text.lines().filter(|l| l.contains("child ") || l.contains("panicked")).collect();
            failures.push(format!("child {id} ({role}, {mode}): {}", why.join(" | ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let env = Env::open(d.path()).unwrap();
    let r = env.begin_ro_txn().unwrap();
    let writes: u64 = kinds.iter().filter(|k| k.role == "writer").map(|k| u64::from(rounds_of(k))).sum();
    assert_eq!(r.db_stat(Db::MAIN).unwrap().entries, writes, "every commit is there");
    let report = env.check(&Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.problem_count(), 0, "{report:?}");
}
