//! The integrity check costs what the data costs, not what the file size is:
//! a small database in a sparse 8 GiB data file with one invalid older meta
//! (which makes the check look for pages of lost newer snapshots) must be
//! checked with little memory. The check runs in a child process (this
//! binary re-invoked with `--exact bounded_child`) that reports its own peak
//! resident set (`VmHWM`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rdbx::{CheckOptions, DbFlags, Env, PutFlags};

const PS: usize = 4096;
const SPARSE: u64 = 8 << 30;

fn build(path: &Path) {
    let env = Env::builder().no_sub_dir(true).max_dbs(2).open(path).unwrap();
    for round in 0..3u32 {
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
        for i in 0..2000u32 {
            txn.put(t, format!("k{round}-{i:06}").as_bytes(), &[i as u8; 50], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    drop(env);
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    f.set_len(SPARSE).unwrap();
    drop(f);
    // Damage the page header of the oldest meta: it becomes invalid.
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = vec![0u8; 3 * PS];
    f.read_exact_at(&mut b, 0).unwrap();
    let txnid = |i: usize| u64::from_le_bytes(b[i * PS + 28..i * PS + 36].try_into().unwrap());
    let oldest = (0..3).min_by_key(|&i| txnid(i)).unwrap();
    b[oldest * PS + 10] = 0x7f;
    f.write_all_at(&b[oldest * PS..oldest * PS + 20], (oldest * PS) as u64).unwrap();
}

fn vm_hwm_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Child side: checks the database at `RDBX_BOUNDED_DB` and prints its peak RSS.
#[test]
fn bounded_child() {
    let Ok(path) = std::env::var("RDBX_BOUNDED_DB") else { return };
    let env = Env::builder().no_sub_dir(true).max_dbs(2).read_only(true).open(&path).unwrap();
    let t = Instant::now();
    let r = env.check(&CheckOptions::default(), &mut |_| {}).unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(r.metas.iter().filter(|m| !m.valid).count() == 1, "{:?}", r.metas);
    assert_eq!(r.major, 0, "{:?}", r.problems);
    println!("RDBX-BOUNDED vmhwm_kb={} secs={secs:.3} minor={}", vm_hwm_kb(), r.minor);
}

#[test]
fn check_of_a_sparse_file_with_an_invalid_meta_is_bounded() {
    let d = tempfile::tempdir().unwrap();
    let path: PathBuf = d.path().join("db");
    build(&path);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "bounded_child", "--nocapture", "--test-threads=1"])
        .env("RDBX_BOUNDED_DB", &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find(|l| l.contains("RDBX-BOUNDED")).expect("the child's figures");
    eprintln!("{line}");
    let kb: u64 = line.split("vmhwm_kb=").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(kb < 200 * 1024, "the check of a sparse 8 GiB file peaked at {kb} KiB of resident memory");
}
