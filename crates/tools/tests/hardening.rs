//! Issue 10 ("Tools"): a valid DUPSORT table is not a problem.

mod common;

use std::path::Path;

use common::*;
use rdbx::{DbFlags, Env, PutFlags};

fn s(p: &Path) -> String {
    p.display().to_string()
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
