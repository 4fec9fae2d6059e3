//! `rdbx-tools stat`, `copy` and `drop`: figures equal to the real mdbx_stat
//! (golden files and libmdbx), copies that check clean and hold the same
//! records, drops that leak nothing.

mod common;

use std::path::Path;

use common::*;
use rdbx_tests::oracle;

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn ok(args: &[&str]) -> Run {
    let r = run(args);
    assert_eq!(r.code, 0, "{args:?}: {r:?}");
    r
}

#[test]
fn stat_equals_golden_mdbx_stat() {
    let d = tempfile::tempdir().unwrap();
    for name in ["g1", "g2", "g3"] {
        let p = golden_copy(name, d.path());
        let r = ok(&["stat", "-e", "-f", "-a", &s(&p)]);
        assert_eq!(r.stdout, String::from_utf8(golden_text(&format!("{name}.stat"))).unwrap(), "{name}");
    }
    let p = golden_copy("gmain", d.path());
    let r = ok(&["stat", "-e", &s(&p)]);
    assert_eq!(r.stdout, String::from_utf8(golden_text("gmain.stat")).unwrap());
    // -f works on an empty GC too (the real tool fails there).
    let r = ok(&["stat", "-ff", &s(&p)]);
    assert!(r.stdout.contains("GC|whole: 0 pages") || r.stdout.contains("GC|whole: 0"), "{r:?}");
}

#[test]
fn stat_options_json_readers_and_errors() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let r = ok(&["stat", "-s", "users", &s(&p)]);
    assert_eq!(r.stdout, "Status of users\n  Pagesize: 4096\n  Tree depth: 2\n  Branch pages: 1\n  Leaf pages: 57\n  Large/Overflow pages: 0\n  Entries: 3000\n");
    let r = ok(&["stat", "-r", &s(&p)]);
    assert!(r.stdout.starts_with("Reader Table\n   #\tslot\t"), "{r:?}");
    assert!(r.stdout.contains(&format!("{}", std::process::id())) || r.stdout.lines().count() == 3, "{r:?}");
    let r = ok(&["stat", "-rr", &s(&p)]);
    assert!(r.stdout.contains("No stale readers.") || r.stdout.contains("stale readers cleared"), "{r:?}");
    let r = ok(&["stat", "-e", "-f", "-a", "--json", &s(&p)]);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["environment"]["last_txnid"], 15);
    assert_eq!(v["gc"]["allocated"], 923);
    assert_eq!(v["tables"].as_array().unwrap().len(), 11);
    let r = run(&["stat", "-s", "nosuch", &s(&p)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no table named 'nosuch'"), "{r:?}");
    assert_eq!(run(&["stat", "-a", "-s", "users", &s(&p)]).code, 1);
    assert_eq!(run(&["stat", "--bogus", &s(&p)]).code, 1);
    let r = run(&["stat", &s(&d.path().join("nope"))]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("nope"));
}

#[test]
fn stat_figures_equal_libmdbx_on_rdbx_made_database() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("db");
    ok(&["load", "-q", "-b", "5000", "-f", &s(&golden_dir().join("g1.dump")), &s(&p)]);
    let ours = ok(&["stat", "-a", &s(&p)]).stdout;
    let env =
        oracle::Env::open(&p, &oracle::EnvOptions { read_only: true, max_dbs: 64, ..Default::default() }).unwrap();
    let txn = env.begin_ro().unwrap();
    let theirs = oracle::format_stats(&oracle::all_stats(&txn).unwrap());
    assert_eq!(ours, theirs);
    let info = env.info().unwrap();
    drop(txn);
    env.close().unwrap();
    let e = ok(&["stat", "-e", &s(&p)]).stdout;
    assert!(e.contains(&format!("Last transaction ID: {}\n", info.recent_txnid)), "{e}");
    assert!(e.contains(&format!("Current datafile: {} bytes", info.geo_current)), "{e}");
    if let Some(mstat) = real_tool("mdbx_stat") {
        let r = run_real(&mstat, &["-q", "-e", "-f", "-a", &s(&p)], None);
        assert_eq!(r.code, 0, "{r:?}");
        let ours = ok(&["stat", "-e", "-f", "-a", &s(&p)]).stdout;
        let strip = |t: &str| {
            t.lines()
                .filter(|l| !l.contains("Max readers") && !l.contains("reader slots"))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&ours), strip(&r.stdout));
    }
}

#[test]
fn copy_and_compact() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let before = std::fs::read(&p).unwrap();
    let plain = d.path().join("plain.copy");
    let compact = d.path().join("compact.copy");
    ok(&["copy", "-q", &s(&p), &s(&plain)]);
    let r = ok(&["copy", "--compact", &s(&p), &s(&compact)]);
    // Dense: no more pages than the source uses without its GC (920).
    let pages: u64 =
        r.stderr.split(" pages -> ").nth(1).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!(pages <= 920, "{r:?}");
    assert_eq!(std::fs::read(&p).unwrap(), before, "copy must not write to the source");
    assert!(!Path::new(&format!("{}-lck", plain.display())).exists(), "a copy has no lock file");
    let (lp, lc) = (std::fs::metadata(&plain).unwrap().len(), std::fs::metadata(&compact).unwrap().len());
    assert!(lc < lp, "compact {lc} >= plain {lp}");
    for c in [&plain, &compact] {
        assert_eq!(run(&["chk", "-q", &s(c)]).code, 0);
        assert!(ok(&["dump", "-a", &s(c)]).raw_stdout == golden_text("g1.dump"));
        let sum = oracle::chk(c).unwrap();
        assert!(sum.is_clean(), "{}", sum.report());
    }
    let j = ok(&["chk", "--json", &s(&compact)]).stdout;
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    assert_eq!(v["space"]["gc_listed_pages"], 0);
    assert_eq!(v["space"]["allocated_pages"], pages);
    assert_eq!(v["space"]["leaked_pages"], 0);
    if let Some(mchk) = real_tool("mdbx_chk") {
        for c in [&plain, &compact] {
            let r = run_real(&mchk, &["-q", &s(c)], None);
            assert_eq!(r.code, 0, "real mdbx_chk on {}: {r:?}", c.display());
        }
    }
    // libmdbx writes to the densely packed copy (full pages split) and it stays clean.
    {
        let env = oracle::Env::open(&compact, &oracle::EnvOptions { max_dbs: 64, ..Default::default() }).unwrap();
        let mut txn = env.begin_rw().unwrap();
        let t = txn.open_table(Some(b"many")).unwrap();
        for i in 0u32..3000 {
            txn.put(t, format!("new-{i:05}").as_bytes(), &[i as u8; 40], 0).unwrap();
        }
        let u = txn.open_table(Some(b"tags")).unwrap();
        for i in 0u32..500 {
            txn.put(u, b"tag-new", format!("v{i:04}").as_bytes(), 0).unwrap();
        }
        txn.commit().unwrap();
        env.close().unwrap();
    }
    assert!(oracle::chk(&compact).unwrap().is_clean());
    assert_eq!(run(&["chk", "-q", &s(&compact)]).code, 0);
    // Errors: existing destination, missing source.
    let r = run(&["copy", &s(&p), &s(&plain)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("exists"), "{r:?}");
    ok(&["copy", "-q", "-f", "-c", &s(&p), &s(&plain)]);
    assert_eq!(run(&["copy", &s(&d.path().join("nope")), &s(&d.path().join("x"))]).code, 1);
    assert!(!d.path().join("x").exists());
}

#[test]
fn compact_copy_of_a_database_with_a_big_gc_is_much_smaller() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g3", d.path());
    ok(&["drop", "-q", "-s", "many", &s(&p)]);
    ok(&["drop", "-q", "-s", "tags", &s(&p)]);
    let c = d.path().join("c");
    ok(&["copy", "-q", "-c", &s(&p), &s(&c)]);
    let alloc = |x: &Path| {
        let j = ok(&["chk", "--json", &s(x)]).stdout;
        let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
        v["space"]["allocated_pages"].as_u64().unwrap()
    };
    let (a, b) = (alloc(&p), alloc(&c));
    assert!(b * 2 < a, "compact {b} pages vs source {a} pages");
    assert!(std::fs::metadata(&c).unwrap().len() < std::fs::metadata(&p).unwrap().len());
    assert_eq!(run(&["chk", "-q", &s(&c)]).code, 0);
    assert!(ok(&["dump", "-a", &s(&c)]).raw_stdout == ok(&["dump", "-a", &s(&p)]).raw_stdout);
}

#[test]
fn copy_while_a_writer_is_active() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let want = ok(&["dump", "-a", &s(&p)]).raw_stdout;
    let env = oracle::Env::open(&p, &oracle::EnvOptions { max_dbs: 64, ..Default::default() }).unwrap();
    let mut txn = env.begin_rw().unwrap();
    let t = txn.open_table(Some(b"users")).unwrap();
    txn.put(t, b"zzz-new", b"uncommitted", 0).unwrap();
    // A write transaction is open in this process: copy and dump still work
    // from the last committed snapshot.
    let c = d.path().join("hot");
    ok(&["copy", "-q", "-c", &s(&p), &s(&c)]);
    txn.commit().unwrap();
    env.close().unwrap();
    assert!(ok(&["dump", "-a", &s(&c)]).raw_stdout == want);
    assert_eq!(run(&["chk", "-q", &s(&c)]).code, 0);
}

#[test]
fn drop_empties_or_deletes_without_leaking() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let r = ok(&["drop", "-s", "many", &s(&p)]);
    assert!(r.stderr.contains("emptied") && r.stdout.is_empty(), "{r:?}");
    let st = ok(&["stat", "-s", "many", &s(&p)]).stdout;
    assert!(st.contains("Entries: 0\n") && st.contains("Tree depth: 0\n"), "{st}");
    ok(&["drop", "-q", "-d", "-s", "rev", &s(&p)]);
    let l = String::from_utf8(ok(&["dump", "-l", &s(&p)]).raw_stdout).unwrap();
    assert!(!l.lines().any(|x| x == "rev") && l.lines().any(|x| x == "many"), "{l}");
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0, "no page may leak");
    assert!(oracle::chk(&p).unwrap().is_clean());
    // Unknown table.
    let r = run(&["drop", "-s", "nosuch", &s(&p)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no table named 'nosuch'"));
    // Without -s and with tables: refused unless --force; then nothing leaks.
    let r = run(&["drop", &s(&p)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("--force"), "{r:?}");
    ok(&["drop", "-q", "--force", &s(&p)]);
    let st = ok(&["stat", "-a", &s(&p)]).stdout;
    assert_eq!(st, "Status of Main DB\n  Pagesize: 4096\n  Tree depth: 0\n  Branch pages: 0\n  Leaf pages: 0\n  Large/Overflow pages: 0\n  Entries: 0\n");
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0, "mdbx_drop leaks every table's pages here; rdbx must not");
    if let Some(mchk) = real_tool("mdbx_chk") {
        let r = run_real(&mchk, &["-q", &s(&p)], None);
        assert_eq!(r.code, 0, "{r:?}");
    }
    // A zero-length file is refused, not initialised.
    let z = d.path().join("zero");
    std::fs::write(&z, b"").unwrap();
    assert_eq!(run(&["drop", &s(&z)]).code, 1);
    assert_eq!(std::fs::metadata(&z).unwrap().len(), 0);
    assert_eq!(run(&["drop", "-s", "x", &s(&d.path().join("nope"))]).code, 1);
}

#[test]
fn directory_layout_is_detected() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g2", d.path());
    assert!(p.is_dir());
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0);
    assert!(ok(&["dump", "-a", &s(&p)]).raw_stdout == golden_text("g2.dump"));
    let c = d.path().join("g2.copy");
    ok(&["copy", "-q", "-c", &s(&p), &s(&c)]);
    assert_eq!(run(&["chk", "-q", &s(&c)]).code, 0);
    // The data file itself also works as PATH.
    assert_eq!(run(&["chk", "-q", &s(&p.join("mdbx.dat"))]).code, 0);
}

#[test]
fn help_documents_exit_codes() {
    let r = ok(&["--help"]);
    assert!(r.stdout.contains("EXIT STATUS") && r.stdout.contains("chk:"), "{r:?}");
    for sub in ["stat", "dump", "load", "copy", "drop"] {
        let r = ok(&[sub, "--help"]);
        assert!(r.stdout.contains("EXIT STATUS"), "{sub}: {r:?}");
    }
    assert_eq!(run(&["nosuch"]).code, 1);
    assert_eq!(run::<&str>(&[]).code, 1);
}

#[test]
fn stat_page_operations_of_the_session() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    // Nobody has the database open: a new session, only libmdbx's initial WOP.
    let r = ok(&["stat", "-p", &s(&p)]);
    let want_fresh = "Page Operations (for current session):
      New:        0\t// quantity of a new pages added
      CoW:        0\t// quantity of pages copied for altering
    Clone:        0\t// quantity of parent's dirty pages clones for nested transactions
    Split:        0\t// page splits during insertions or updates
    Merge:        0\t// page merges during deletions or updates
    Spill:        0\t// quantity of spilled/ousted `dirty` pages during large transactions
  Unspill:        0\t// quantity of unspilled/redone `dirty` pages during large transactions
      WOP:        1\t// number of explicit write operations (not a pages) to a disk
 PreFault:        0\t// number of prefault write operations (not a pages)
  mInCore:        0\t// number of mincore() calls
    mSync:        0\t// number of explicit msync-to-disk operations (not a pages)
    fSync:        0\t// number of explicit fsync-to-disk operations (not a pages)
";
    // (The main table's status follows, as with mdbx_stat.)
    assert!(r.stdout.starts_with(want_fresh), "{}", r.stdout);
    assert!(r.stdout.contains("Status of Main DB"), "{}", r.stdout);
    // While a process has it open, the counters are those of its session.
    let env = rdbx::Env::builder().max_dbs(64).open(&p).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.open_db(Some("users")).unwrap();
    for i in 0u32..500 {
        txn.put(t, format!("new-user-{i:05}").as_bytes(), &[b'x'; 200], rdbx::PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    let o = env.page_ops();
    assert!(o.newly > 0 && o.cow > 0 && o.split > 0 && o.fsync > 0, "{o:?}");
    let r = ok(&["stat", "-p", "-e", &s(&p)]);
    for (name, v) in [("New", o.newly), ("CoW", o.cow), ("Split", o.split), ("WOP", o.wops), ("fSync", o.fsync)] {
        let line = format!("{name:>9}: {v:>8}\t//");
        assert!(r.stdout.contains(&line), "{line:?} in\n{}", r.stdout);
    }
    assert!(r.stdout.find("Page Operations").unwrap() < r.stdout.find("Environment Info").unwrap(), "-p comes first");
    let j: serde_json::Value = serde_json::from_str(&ok(&["stat", "-p", "--json", &s(&p)]).stdout).unwrap();
    assert_eq!(j["page_operations"]["newly"], o.newly, "{j}");
    assert_eq!(j["page_operations"]["split"], o.split, "{j}");
}

#[test]
fn copy_without_destination_writes_standard_output() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    // Standard output is a pipe here: the copy streams, the summary goes to
    // standard error, and the bytes are those of a copy to a file.
    for compact in [false, true] {
        let flags: &[&str] = if compact { &["copy", "-c"] } else { &["copy"] };
        let r = run(&[flags, &[&s(&p)]].concat());
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stderr.contains("to standard output"), "{r:?}");
        let file = d.path().join(format!("file-{compact}.db"));
        let q = run(&[flags, &["-q", &s(&p), &s(&file)]].concat());
        assert_eq!(q.code, 0, "{q:?}");
        assert!(r.raw_stdout == std::fs::read(&file).unwrap(), "compact {compact}: stream and file differ");
        let streamed = d.path().join(format!("streamed-{compact}.db"));
        std::fs::write(&streamed, &r.raw_stdout).unwrap();
        let c = run(&["chk", "-q", &s(&streamed)]);
        assert_eq!(c.code, 0, "{c:?}");
        let dump = |f: &Path| run(&["dump", "-a", &s(f)]).raw_stdout;
        assert!(dump(&streamed) == dump(&p), "compact {compact}: contents differ");
    }
    // Standard output is a terminal: refused as such.
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the given integers; the rest may be null.
    let rc =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    if rc != 0 {
        eprintln!("note: no pseudo-terminal available: skipping the terminal case");
        return;
    }
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: both descriptors were just opened by openpty and are owned here only.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let out = std::process::Command::new(bin())
        .args(["copy", &s(&p)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(slave))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    drop(master);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refusing to write a binary database to the terminal"), "{err}");
}

#[test]
fn drop_nonblock_fails_at_once_and_the_default_waits() {
    let d = tempfile::tempdir().unwrap();
    let p = golden_copy("g1", d.path());
    let entries = |p: &Path| ok(&["stat", "-s", "users", &s(p)]).stdout;
    let before = entries(&p);
    assert!(before.contains("Entries: 3000\n"), "{before}");
    let env = rdbx::Env::builder().max_dbs(64).open(&p).unwrap();
    let txn = env.begin_rw_txn().unwrap();
    let r = run_no_wait(&["drop", "--nonblock", "-s", "users", &s(&p)], None);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&s(&p)) && r.stderr.contains("another writer is active"), "{r:?}");
    let holder = format!("held by process {}", std::process::id());
    assert!(r.stderr.contains(&holder), "the message names the process holding the lock: {r:?}");
    assert!(r.stderr.contains("retry") && r.stderr.contains("--nonblock"), "{r:?}");
    assert_eq!(entries(&p), before, "nothing may change");
    // Without --nonblock drop waits for the writer (as mdbx_drop), then runs.
    let mut child = std::process::Command::new(bin())
        .args(["drop", "-q", "-s", "users", &s(&p)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(child.try_wait().unwrap().is_none(), "drop must wait while the write lock is taken");
    txn.abort();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    drop(env);
    assert!(entries(&p).contains("Entries: 0\n"));
    assert_eq!(run(&["chk", "-q", &s(&p)]).code, 0);
    // --nonblock with nobody else writing works as usual.
    let r = ok(&["drop", "--nonblock", "-d", "-s", "users", &s(&p)]);
    assert!(r.stderr.contains("deleted"), "{r:?}");
}

#[test]
fn stat_says_what_retains_gc_pages() {
    use rdbx::{Db, Env, PutFlags};
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("db");
    let env = Env::builder().open(&p).unwrap();
    let write = |n: u64| {
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..200u64 {
            txn.put(Db::MAIN, &(i % 150).to_be_bytes(), &[n as u8; 100], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    };
    write(0);
    let reader = env.begin_ro_txn().unwrap();
    let snap = reader.id();
    for n in 1..=3 {
        write(n);
    }
    let r = ok(&["stat", "-f", &s(&p)]);
    assert!(r.stdout.contains("  max reader lag 3\n"), "{r:?}");
    let line = format!("  GC|retained by: reader pid {} (snapshot txnid {snap}, lag 3)\n", std::process::id());
    assert!(r.stdout.contains(&line), "{r:?}");
    let r = ok(&["stat", "-f", "--json", &s(&p)]);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["gc"]["retained_by"]["kind"], "reader");
    assert_eq!(v["gc"]["retained_by"]["pid"], std::process::id());
    assert_eq!(v["gc"]["max_reader_lag"], 3);
    assert!(v["gc"]["free_tail"].is_u64(), "{v}");
    drop(reader);
    let r = ok(&["stat", "-f", "--json", &s(&p)]);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(v["gc"]["retained_by"].is_null(), "{v}");
}
