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

/// Child side: `id:mode:role:dir`; opens, writes one record (or reads), closes.
#[test]
fn open_race_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let mut parts = spec.splitn(4, ':');
    let (id, mode, role, dir) =
        (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    for i in 0..rounds() {
        let opened = Env::builder().durability(durability(mode)).open(Path::new(dir));
        let env = match opened {
            Ok(e) => e,
            Err(e) => panic!("child {id}: open #{i} failed: {e:?}"),
        };
        if role == "reader" {
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
    race("durable");
}

#[test]
fn processes_opening_and_closing_at_once_safe_no_sync() {
    race("safe");
}

#[test]
fn processes_opening_and_closing_at_once_no_meta_sync() {
    race("nometa");
}

/// Processes sharing a database agree on its durability mode (libmdbx
/// refuses a different one while the database is open), so each race uses
/// one mode.
fn race(mode: &str) {
    let d = tempfile::tempdir().unwrap();
    // Created once here, then only the children use it.
    drop(Env::builder().durability(durability(mode)).open(d.path()).unwrap());
    let exe = std::env::current_exe().unwrap();
    let kinds = ["writer", "writer", "writer", "reader"];
    let children: Vec<_> = kinds
        .iter()
        .enumerate()
        .map(|(id, role)| {
            let spec = format!("{id}:{mode}:{role}:{}", d.path().display());
            let child = Command::new(&exe)
                .args(["--exact", "open_race_child", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, spec)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (id, *role, child)
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
    let writers = kinds.iter().filter(|k| **k != "reader").count() as u64;
    assert_eq!(r.db_stat(Db::MAIN).unwrap().entries, writers * rounds() as u64, "every commit is there");
    let report = env.check(&Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.problem_count(), 0, "{report:?}");
}
