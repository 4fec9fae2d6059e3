//! Progress displays (issue 14 item 9): on a terminal they count in human
//! units (records, pages, MiB) and leave a one-line summary when done; off a
//! terminal nothing of them shows. The terminal is util-linux `script`.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `cmd` run with a pseudo-terminal as its stdin, stdout and stderr; `None`
/// without `script(1)`.
fn on_a_terminal(cmd: &str) -> Option<String> {
    let o = Command::new("script").args(["-qec", cmd, "/dev/null"]).output().ok()?;
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn progress_counts_in_units_and_ends_with_a_summary() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    {
        let env = rdbx::Env::builder().max_dbs(4).open(&src).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let t = txn.create_db(Some("t"), rdbx::DbFlags::empty()).unwrap();
        for i in 0..3000u32 {
            txn.put(t, format!("key{i:05}").as_bytes(), b"value", rdbx::PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    let f = d.path().join("t.dump");
    let dst = d.path().join("dst");
    let copy = d.path().join("copy.dat");
    let bin = bin();
    let script = format!(
        "{bin} dump -s t -f {f} {src}; {bin} load -f {f} {dst}; {bin} copy -c {src} {copy}; {bin} chk {src}",
        f = s(&f),
        src = s(&src),
        dst = s(&dst),
        copy = s(&copy)
    );
    let Some(out) = on_a_terminal(&script) else {
        eprintln!("skipped: no script(1) to run the tools on a terminal");
        return;
    };
    assert!(out.contains("dump: 3000 records in 1 section(s)"), "{out}");
    assert!(out.contains("load: 3000 records in 1 section(s)"), "{out}");
    // The bars name their units (the final state of each is drawn).
    assert!(out.contains(" records"), "{out}");
    assert!(out.contains(" KiB") || out.contains(" B/"), "{out}");
    assert!(!out.contains("b-trees"), "{out}");

    // Off a terminal: no bar, no summary line.
    std::fs::remove_dir_all(&dst).unwrap();
    let r = run(&["load", "-f", &s(&f), &s(&dst)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.is_empty() && r.stdout.is_empty(), "{r:?}");
}
