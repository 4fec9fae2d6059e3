//! Issue 14 in the shell: checksum, diff, meta, page; the warning when the
//! newest meta is damaged (scripted and at the terminal).

mod common;

use std::path::Path;
use std::process::Command;

use common::{cmd, json, make_db, run};
use rexpect::session::spawn_command;

fn copy_db(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("mdbx.dat"), to.join("mdbx.dat")).unwrap();
}

/// Zeroes the newest meta page of the database in `dir`; returns its slot.
fn zero_newest_meta(dir: &Path) -> usize {
    let p = dir.join("mdbx.dat");
    let mut b = std::fs::read(&p).unwrap();
    let ps = u32::from_le_bytes(b[20 + 40 + 4..20 + 40 + 8].try_into().unwrap()) as usize;
    let txn = |i: usize| u64::from_le_bytes(b[i * ps + 28..i * ps + 36].try_into().unwrap());
    let head = (0..3).max_by_key(|&i| txn(i)).unwrap();
    b[head * ps..(head + 1) * ps].fill(0);
    std::fs::write(&p, b).unwrap();
    head
}

#[test]
fn checksum_diff_meta_page_in_scripts() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    std::fs::create_dir(&a).unwrap();
    make_db(&a);
    let b = d.path().join("b");
    copy_db(&a, &b);
    let r = run(&[b.to_str().unwrap(), "--write", "-c", "put --table colors red changed"], None);
    assert!(r.ok(), "{r:?}");

    let r = run(&["-f", "json", a.to_str().unwrap(), "-c", "checksum"], None);
    assert!(r.ok(), "{r:?}");
    let ca = json(&r);
    let r = run(&["-f", "json", b.to_str().unwrap(), "-c", "checksum"], None);
    let cb = json(&r);
    let differ: Vec<&str> =
        ca.iter().zip(&cb).filter(|(x, y)| x != y).map(|(x, _)| x["table"].as_str().unwrap()).collect();
    assert_eq!(differ, ["colors"], "{ca:?} {cb:?}");

    let r = run(&["-f", "json", a.to_str().unwrap(), "-c", &format!("diff {} --table colors", b.display())], None);
    assert!(r.ok(), "{r:?}");
    let j = json(&r);
    assert_eq!((j[0]["changed"].as_u64(), j[0]["added"].as_u64()), (Some(1), Some(0)), "{r:?}");
    assert_eq!(
        (j[1]["change"].as_str(), j[1]["key"].as_str(), j[1]["new"].as_str()),
        (Some("~"), Some("red"), Some("changed"))
    );
    let r = cmd(&a, &format!("diff {} --table tags", b.display()));
    assert!(r.ok() && r.stdout.contains("added") && !r.stdout.contains("change "), "{r:?}");
    let r = cmd(&a, "diff");
    assert!(!r.ok() && r.stderr.contains("--table-b"), "{r:?}");

    let r = cmd(&a, "meta");
    assert!(r.ok() && r.stdout.contains("head") && r.stdout.contains("steady"), "{r:?}");
    let r = run(&["-f", "json", a.to_str().unwrap(), "-c", "page 0; page 3"], None);
    assert!(r.ok(), "{r:?}");
    let j = json(&r);
    assert_eq!(j[0]["belongs_to"], "meta page 0");
    let r = run(&["-f", "json", a.to_str().unwrap(), "-c", "space"], None);
    assert!(r.ok(), "{r:?}");
    let j = json(&r);
    assert!(j[0]["allocated_pages"].as_u64().unwrap() > 3 && j.len() > 2, "{r:?}");
    for c in ["help checksum", "help diff", "help meta", "help page", "help space", "gc"] {
        assert!(cmd(&a, c).ok(), "{c}");
    }
}

#[test]
fn a_damaged_newest_meta_is_pointed_out_when_opening() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    std::fs::create_dir(&a).unwrap();
    make_db(&a);
    // A second commit, so that an older intact snapshot exists.
    let r = run(&[a.to_str().unwrap(), "--write", "-c", "put --table colors red again"], None);
    assert!(r.ok(), "{r:?}");
    let r = cmd(&a, "tables");
    assert!(r.ok() && !r.stderr.contains("damaged"), "{r:?}");
    let slot = zero_newest_meta(&a);
    let r = cmd(&a, "meta");
    assert!(r.ok(), "{r:?}");
    assert!(r.stderr.contains(&format!("meta page {slot}")) && r.stderr.contains("rdbx-tools meta --use"), "{r:?}");
    assert!(r.stdout.contains("invalid"), "{r:?}");

    // At the terminal.
    let mut c = Command::new(common::BIN);
    c.arg(&a).env("RDBX_HISTORY", d.path().join("history")).env("TERM", "xterm");
    let mut p = spawn_command(c, Some(30_000)).expect("spawn rdbx in a pty");
    p.exp_string("is damaged").expect("the warning");
    p.exp_string("meta --use").expect("the rescue");
    p.exp_string("[ro]").expect("the prompt");
    p.send_line("meta").unwrap();
    p.exp_string("may have held a newer commit").expect("meta says it too");
    p.send_line("quit").unwrap();
    p.exp_eof().expect("quits");
}
