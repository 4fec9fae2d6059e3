//! A process whose address space is too small for the geometry's upper
//! bound (`ulimit -v`, containers, valgrind): the environment maps only the
//! file as it is, and keeps working as the file grows, remapping to the new
//! size each time the reservation of the upper bound fails again.
//!
//! The child process runs under `ulimit -v` (RLIMIT_AS) of 2 GiB with a
//! geometry whose upper bound is 64 GiB, grows its file many times, reopens
//! it and reads everything back.

mod common;

use std::path::Path;

use rdbx::{Env, Geometry, PutFlags};

const CHILD_ENV: &str = "RDBX_ADDRESS_SPACE_CHILD";
const RECORDS: u64 = 40_000;

fn open(path: &Path, write_map: bool) -> Env {
    Env::builder()
        .write_map(write_map)
        .geometry(Geometry {
            page_size: Some(4096),
            size_now: Some(64 << 10),
            size_upper: Some(64 << 30),
            growth_step: Some(256 << 10),
            ..Geometry::default()
        })
        .open(path)
        .unwrap()
}

fn value(i: u64) -> Vec<u8> {
    format!("value {i:010} {}", "x".repeat((i % 300) as usize)).into_bytes()
}

/// Child side: many small transactions that grow the file, then a reopen.
#[test]
fn address_space_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let write_map = std::env::var_os("RDBX_ADDRESS_SPACE_WRITEMAP").is_some();
    let dir = Path::new(&dir);
    {
        let env = open(dir, write_map);
        for chunk in 0..RECORDS / 1000 {
            let mut txn = env.begin_rw_txn().unwrap();
            let db = txn.open_db(None).unwrap();
            for i in chunk * 1000..(chunk + 1) * 1000 {
                txn.put(db, &i.to_be_bytes(), &value(i), PutFlags::empty()).unwrap();
            }
            txn.commit().unwrap();
            // A reader that lives across the writer's next growth.
            let r = env.begin_ro_txn().unwrap();
            assert_eq!(r.get(db, &(chunk * 1000).to_be_bytes()).unwrap(), Some(&value(chunk * 1000)[..]));
        }
    }
    let env = open(dir, write_map);
    let r = env.begin_ro_txn().unwrap();
    let db = r.open_db(None).unwrap();
    assert_eq!(r.db_stat(db).unwrap().entries, RECORDS);
    for i in 0..RECORDS {
        assert_eq!(r.get(db, &i.to_be_bytes()).unwrap(), Some(&value(i)[..]), "record {i}");
    }
    let size = std::fs::metadata(dir.join("mdbx.dat")).unwrap().len();
    println!("RDBX-ADDRESS-SPACE file_bytes={size}");
    assert!(size > 4 << 20, "the file grew far past its first map of 64 KiB: {size} bytes");
}

fn run(write_map: bool) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().expect("a UTF-8 temporary path");
    let mut envs = vec![(CHILD_ENV, dir)];
    if write_map {
        envs.push(("RDBX_ADDRESS_SPACE_WRITEMAP", "1"));
    }
    let out = common::run_child_under_ulimit('v', 2 << 20, "address_space_child", &envs);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "growing a file under a 2 GiB address-space limit failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout.lines().find(|l| l.contains("RDBX-ADDRESS-SPACE")).expect("the child's figures");
    eprintln!("WRITEMAP {write_map}: {line}");
}

#[test]
fn a_file_grows_when_the_upper_bound_cannot_be_reserved() {
    run(false);
}

#[test]
fn a_writemap_file_grows_when_the_upper_bound_cannot_be_reserved() {
    run(true);
}
