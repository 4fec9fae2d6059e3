//! Issue 10 ("Tools"): output files never land on a database, and a valid
//! DUPSORT table is not a problem.

mod common;

use std::path::Path;

use common::*;
use rdbx::{DbFlags, Env, PutFlags};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn ok(args: &[&str]) -> Run {
    let r = run(args);
    assert_eq!(r.code, 0, "{args:?}: {r:?}");
    r
}

/// A small database in directory `dir`: plain, DUPSORT (with and without
/// multi-values) tables.
fn small_db(dir: &Path) -> Env {
    let env = Env::builder().max_dbs(8).open(dir).expect("create env");
    let mut txn = env.begin_rw_txn().unwrap();
    let none = PutFlags::empty();
    let plain = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
    for i in 0..200u32 {
        txn.put(plain, format!("k{i:04}").as_bytes(), format!("v{i}").as_bytes(), none).unwrap();
    }
    let tags = txn.create_db(Some("tags"), DbFlags::DUP_SORT).unwrap();
    for (k, v) in [("fruit", "apple"), ("fruit", "pear"), ("veg", "kale")] {
        txn.put(tags, k.as_bytes(), v.as_bytes(), none).unwrap();
    }
    txn.commit().unwrap();
    env
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// ---------------------------------------------------------------------------
// 7. Output files never land on a database.

#[test]
fn copy_and_dump_refuse_to_write_onto_the_source_database() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    std::fs::create_dir(&db).unwrap();
    // Kept open, as a shell would: a truncated data file would kill this
    // process with SIGBUS on the next read.
    let env = small_db(&db);
    let dat = db.join("mdbx.dat");
    let lck = db.join("mdbx.lck");
    let before = read(&dat);
    let elsewhere = tempfile::tempdir().unwrap();
    let hard = elsewhere.path().join("hard-link.dat");
    std::fs::hard_link(&dat, &hard).unwrap();
    let soft = elsewhere.path().join("sym-link.dat");
    std::os::unix::fs::symlink(&dat, &soft).unwrap();
    let lck_link = elsewhere.path().join("lock-link");
    std::fs::hard_link(&lck, &lck_link).unwrap();
    for src in [&dat, &db] {
        for dst in [&dat, &lck, &hard, &soft, &lck_link] {
            for args in [
                vec!["copy".to_string(), "-f".into(), s(src), s(dst)],
                vec!["copy".to_string(), "-f".into(), "-c".into(), s(src), s(dst)],
                vec!["copy".to_string(), s(src), s(dst)],
                vec!["dump".to_string(), "-a".into(), "-f".into(), s(dst), s(src)],
            ] {
                let r = run(&args);
                assert_eq!(r.code, 1, "{args:?}: {r:?}");
                assert!(r.stderr.contains(&s(dst)), "the error names the file: {args:?}: {r:?}");
                assert!(r.stderr.contains("choose another"), "the error says what to do: {args:?}: {r:?}");
            }
        }
    }
    assert_eq!(read(&dat), before, "the data file is untouched");
    assert!(std::fs::metadata(&lck).unwrap().len() > 0, "the lock file is untouched");
    let txn = env.begin_ro_txn().unwrap();
    let t = txn.open_db(Some("plain")).unwrap();
    assert_eq!(txn.get(t, b"k0007").unwrap(), Some(&b"v7"[..]));
    drop(txn);
    drop(env);
    ok(&["chk", "-q", &s(&db)]);
}

#[test]
fn outputs_refuse_the_files_of_another_database() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    let other = d.path().join("other");
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&other).unwrap();
    drop(small_db(&src));
    let other_env = small_db(&other);
    let odat = other.join("mdbx.dat");
    let olck = other.join("mdbx.lck");
    let (dat_before, lck_before) = (read(&odat), read(&olck));
    // dump has no force flag: never onto a database file.
    for dst in [&odat, &olck] {
        let r = run(&["dump", "-a", "-f", &s(dst), &s(&src)]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains(&s(dst)) && r.stderr.contains("MDBX database"), "{r:?}");
    }
    // copy: a lock file never, a data file only with -f.
    let r = run(&["copy", "-f", &s(&src), &s(&olck)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&s(&olck)) && r.stderr.contains("lock file"), "{r:?}");
    let r = run(&["copy", &s(&src), &s(&odat)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&s(&odat)) && r.stderr.contains("-f"), "{r:?}");
    // load: not into the lock file of a database (open, or closed and empty).
    let dump = ok(&["dump", "-s", "plain", &s(&src)]).raw_stdout;
    let r = run_stdin(&["load", &s(&olck)], Some(&dump));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&s(&olck)) && r.stderr.contains("lock file"), "{r:?}");
    assert_eq!(read(&odat), dat_before);
    assert_eq!(read(&olck), lck_before);
    drop(other_env);
    // Closed: the lock file is now empty (libmdbx truncates it) or stale.
    std::fs::write(&olck, b"").unwrap();
    let r = run_stdin(&["load", &s(&olck)], Some(&dump));
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("lock file"), "{r:?}");
    assert_eq!(std::fs::metadata(&olck).unwrap().len(), 0, "the lock file was not initialised as a database");
    assert_eq!(read(&odat), dat_before);
    // The user asked for it: copy -f replaces another database's data file,
    // dump -f an ordinary file.
    ok(&["copy", "-q", "-f", &s(&src), &s(&odat)]);
    ok(&["chk", "-q", &s(&odat)]);
    let txt = d.path().join("notes.txt");
    std::fs::write(&txt, "old text\n").unwrap();
    ok(&["dump", "-a", "-f", &s(&txt), &s(&src)]);
    assert!(read(&txt).starts_with(b"VERSION=3\n"));
}

// ---------------------------------------------------------------------------
// 9. A DUPSORT table without multi-values is valid.

#[test]
fn dupsort_table_without_multi_values_is_not_a_problem() {
    let d = tempfile::tempdir().unwrap();
    {
        let env = Env::builder().max_dbs(4).open(d.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("single"), DbFlags::DUP_SORT).unwrap();
        for k in ["a", "b", "c", "d"] {
            txn.put(t, k.as_bytes(), b"only", PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    let r = run(&["chk", &s(d.path())]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.is_empty() && !r.stdout.contains("single"), "nothing said without -v: {r:?}");
    let r = run(&["chk", "-v", &s(d.path())]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("single") && r.stdout.contains("DUPSORT"), "-v tells: {r:?}");
    let r = run(&["chk", "--json", &s(d.path())]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["problems"]["total"], 0);
    assert!(v["info"].to_string().contains("single"), "{v}");
}
