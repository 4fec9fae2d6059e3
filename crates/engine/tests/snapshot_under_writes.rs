//! A copy and a check each read one snapshot while other transactions
//! commit: the commits that run in the middle of them reuse free pages, and
//! must leave the pages of that snapshot alone (copies as-is and compacted,
//! pages written from buffers and with WRITEMAP).

use rdbx::{CheckOptions, CheckProgress, CopyOptions, CopyProgress, DbFlags, Env, Geometry, PutFlags, Stage};

const KEYS: u32 = 4000;

/// Every record of table `t` set to generation `gen`, in one commit.
fn rewrite_all(env: &Env, gen: u8) {
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("t"), DbFlags::empty()).unwrap();
    for i in 0..KEYS {
        txn.put(t, &i.to_be_bytes(), &[gen; 150], PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
}

/// Takes the table through generations 1 to 4: the GC then holds the
/// pages of the earlier ones, free for the commits that follow.
fn generations_1_to_4(env: &Env) {
    for gen in 1..=4 {
        rewrite_all(env, gen);
    }
}

fn open(path: &std::path::Path, write_map: bool) -> Env {
    Env::builder()
        .max_dbs(2)
        .write_map(write_map)
        .geometry(Geometry { page_size: Some(4096), ..Default::default() })
        .open(path)
        .unwrap()
}

#[test]
fn commits_in_the_middle_of_a_copy_leave_its_snapshot_alone() {
    for write_map in [false, true] {
        for compact in [false, true] {
            let d = tempfile::tempdir().unwrap();
            let env = open(&d.path().join("src"), write_map);
            generations_1_to_4(&env);
            let dst = d.path().join("copy");
            let opts = CopyOptions { compact, ..Default::default() };
            let mut started = false;
            std::thread::scope(|s| {
                let mut progress = |_: CopyProgress| {
                    if !std::mem::replace(&mut started, true) {
                        // The copy holds its snapshot (generation 4) and
                        // has read nothing yet: six more generations commit
                        // in another thread before it goes on.
                        s.spawn(|| (5..=10).for_each(|gen| rewrite_all(&env, gen))).join().unwrap();
                    }
                };
                env.copy_to(&dst, &opts, &mut progress).unwrap();
            });
            assert!(started, "no progress report");
            let ctx = format!("write_map {write_map}, compact {compact}");
            let copy = Env::builder().max_dbs(2).open(&dst).unwrap();
            let txn = copy.begin_ro_txn().unwrap();
            let t = txn.open_db(Some("t")).unwrap();
            let mut c = txn.cursor(t).unwrap();
            let mut n = 0u32;
            let mut rec = c.first().unwrap();
            while let Some((k, v)) = rec {
                assert_eq!(k, n.to_be_bytes(), "{ctx}: key #{n}");
                assert_eq!(v, [4u8; 150], "{ctx}: the value of key {n} is not the snapshot's");
                n += 1;
                rec = c.next().unwrap();
            }
            assert_eq!(n, KEYS, "{ctx}: records in the copy");
            drop(txn);
            let r = copy.check(&CheckOptions::default(), &mut |_| {}).unwrap();
            assert_eq!(r.problem_count(), 0, "{ctx}: {:?}", r.problems);
            // And the source moved on to generation 10.
            let txn = env.begin_ro_txn().unwrap();
            let t = txn.open_db(Some("t")).unwrap();
            assert_eq!(txn.get(t, &0u32.to_be_bytes()).unwrap(), Some(&[10u8; 150][..]), "{ctx}");
        }
    }
}

#[test]
fn commits_in_the_middle_of_a_check_leave_its_snapshot_alone() {
    for write_map in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let env = open(d.path(), write_map);
        generations_1_to_4(&env);
        let mut started = false;
        let report = std::thread::scope(|s| {
            let mut progress = |p: CheckProgress| {
                // The check holds its snapshot and is about to walk the
                // trees: six more generations commit first.
                if p.stage == Stage::Trees && !std::mem::replace(&mut started, true) {
                    s.spawn(|| (5..=10).for_each(|gen| rewrite_all(&env, gen))).join().unwrap();
                }
            };
            env.check(&CheckOptions::default(), &mut progress).unwrap()
        });
        assert!(started, "no progress report of the trees stage");
        assert_eq!(report.problem_count(), 0, "write_map {write_map}: {:?}", report.problems);
        let again = env.check(&CheckOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(again.problem_count(), 0, "write_map {write_map}, after: {:?}", again.problems);
    }
}
