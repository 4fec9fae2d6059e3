//! Issue 10 ("Tools"): output files never land on a database, a valid
//! DUPSORT table is not a problem, and Ctrl-C (SIGINT/SIGTERM) stops long
//! work, removes partial output and keeps the source intact.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use rdbx::{DbFlags, Env, Geometry, PutFlags};

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

/// A database of about `mib` MiB in directory `dir` (many small records, so
/// that walking it takes a while).
fn big_db(dir: &Path, mib: usize) {
    let env = Env::builder()
        .max_dbs(4)
        .geometry(Geometry { size_upper: Some(4 << 30), growth_step: Some(64 << 20), ..Default::default() })
        .open(dir)
        .expect("create env");
    let none = PutFlags::empty();
    let val = [0x5au8; 100];
    let per_txn = 100_000u64;
    let total = (mib as u64 * 1024 * 1024) / 130;
    let mut i = 0u64;
    while i < total {
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("bulk"), DbFlags::empty()).unwrap();
        for _ in 0..per_txn.min(total - i) {
            txn.put(t, format!("key-{i:012}").as_bytes(), &val, none).unwrap();
            i += 1;
        }
        txn.commit().unwrap();
    }
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

// ---------------------------------------------------------------------------
// 10. Ctrl-C.

#[test]
fn interrupted_copy_stops_and_removes_its_output() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    std::fs::create_dir(&db).unwrap();
    big_db(&db, 96);
    let src_size = std::fs::metadata(db.join("mdbx.dat")).unwrap().len();
    let want = ok(&["dump", "-s", "bulk", &s(&db)]).raw_stdout;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        for compact in [false, true] {
            // Catch the copy in the middle: stop it as soon as its output
            // exists, signal it, let it go on. Should it have been done
            // already (a very fast machine), try again.
            let mut caught = false;
            for attempt in 0..20 {
                let dst = d.path().join(format!("copy-{sig}-{compact}-{attempt}"));
                let mut args = vec!["copy".to_string()];
                if compact {
                    args.push("-c".into());
                }
                args.extend([s(&db), s(&dst)]);
                let child = spawn(&args, Stdio::null());
                let deadline = Instant::now() + Duration::from_secs(120);
                while !dst.exists() && Instant::now() < deadline {
                    std::thread::yield_now();
                }
                signal(&child, libc::SIGSTOP);
                let partial = std::fs::metadata(&dst).map(|m| m.len()).unwrap_or(0);
                // A compacting copy writes its pages from 3 on; size grows with them.
                let midway = partial < src_size / 2;
                if midway {
                    signal(&child, sig);
                }
                signal(&child, libc::SIGCONT);
                let r = wait(child, "copy");
                if !midway {
                    assert_eq!(r.code, 0, "{r:?}");
                    let _ = std::fs::remove_file(&dst);
                    continue;
                }
                assert_eq!(r.code, 1, "the copy must stop (signal {sig}, compact {compact}): {r:?}");
                assert!(r.stderr.contains("Interrupted by signal/user"), "{r:?}");
                assert!(!r.stdout.contains("copied"), "{r:?}");
                assert!(!dst.exists(), "the partial copy {} must be removed", dst.display());
                caught = true;
                break;
            }
            assert!(caught, "the copy always finished before the test could signal it");
        }
    }
    assert!(ok(&["dump", "-s", "bulk", &s(&db)]).raw_stdout == want, "the source is intact");
    ok(&["chk", "-q", &s(&db)]);
}

#[test]
fn interrupted_copy_to_a_stuck_pipe_stops() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    std::fs::create_dir(&db).unwrap();
    big_db(&db, 8);
    // Nobody reads standard output: the copy blocks in write(2) once the pipe
    // is full; a signal must still stop it.
    let child = spawn(&["copy".into(), s(&db)], Stdio::null());
    wait_blocked_on_pipe(&child);
    signal(&child, libc::SIGINT);
    let r = wait(child, "copy to a pipe");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("Interrupted by signal/user"), "{r:?}");
    ok(&["chk", "-q", &s(&db)]);
}

#[test]
fn interrupted_chk_stops_during_the_walk() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    std::fs::create_dir(&db).unwrap();
    big_db(&db, 96);
    let j = ok(&["chk", "--json", &s(&db)]).stdout;
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    let all_walked = v["space"]["used_pages"].as_u64().unwrap();
    let mut caught = false;
    for _attempt in 0..20 {
        let mut child = spawn(&["chk".into(), s(&db)], Stdio::null());
        // The banner comes before the walk.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert!(first.contains("chk"), "{first:?}");
        signal(&child, libc::SIGINT);
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
        let r = wait(child, "chk");
        if r.code == 0 {
            continue; // done before the signal arrived
        }
        assert_eq!(r.code, 5, "{rest}{r:?}");
        assert!(rest.contains("interrupted by signal"), "{rest}{r:?}");
        // It stopped where it was, not after the whole walk.
        let (done, _) = walked(&rest).unwrap_or_else(|| panic!("no page counts in {rest:?}"));
        assert!(done < all_walked, "walked {done} of the {all_walked} pages of a whole walk: {rest}");
        caught = true;
        break;
    }
    assert!(caught, "chk always finished before the signal");
    ok(&["chk", "-q", &s(&db)]);
}

/// "after walking N of M pages" in the interruption message.
fn walked(text: &str) -> Option<(u64, u64)> {
    let t = text.split("after walking ").nth(1)?;
    let mut it = t.split_whitespace();
    let done = it.next()?.parse().ok()?;
    it.next()?; // "of"
    let total = it.next()?.parse().ok()?;
    Some((done, total))
}

#[test]
fn interrupted_load_reading_a_silent_input_stops() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    std::fs::create_dir(&src).unwrap();
    drop(small_db(&src));
    let dump = ok(&["dump", "-s", "plain", &s(&src)]).raw_stdout;
    // The header and a few records, then nothing (and no end of input):
    // load waits in read(2) as it would on a terminal.
    let cut = dump.len() / 2;
    let cut = cut + dump[cut..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let cut = cut + dump[cut..].iter().position(|&b| b == b'\n').unwrap() + 1;
    for (sig, fresh) in [(libc::SIGINT, true), (libc::SIGTERM, true), (libc::SIGINT, false)] {
        let target = d.path().join(format!("loaded-{sig}-{fresh}"));
        if !fresh {
            std::fs::create_dir(&target).unwrap();
            drop(small_db(&target));
        }
        let before = (!fresh).then(|| ok(&["dump", "-a", &s(&target)]).raw_stdout);
        let mut child = spawn(&["load".into(), s(&target)], Stdio::piped());
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&dump[..cut]).unwrap();
        stdin.flush().unwrap();
        // Started: it has read what there is and waits for more.
        wait_blocked_on_pipe(&child);
        assert!(target.join("mdbx.dat").exists());
        signal(&child, sig);
        let r = wait(child, "load");
        drop(stdin);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains("Interrupted by signal/user"), "{r:?}");
        match before {
            // A database the load created is partial output: removed.
            None => assert!(!target.exists(), "{} must be removed: {r:?}", target.display()),
            // An existing database keeps what it had (the batch was rolled back).
            Some(b) => {
                assert!(ok(&["dump", "-a", &s(&target)]).raw_stdout == b, "{r:?}");
                ok(&["chk", "-q", &s(&target)]);
            }
        }
    }
}
