//! A copy reads one snapshot while other transactions commit: the commits
//! that run in the middle of it reuse free pages, and must leave the pages
//! of the copy's snapshot alone, with the copy as-is and compacted, with
//! pages written from buffers and with WRITEMAP.

use rdbx::{CheckOptions, CopyOptions, CopyProgress, DbFlags, Env, Geometry, PutFlags};

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

#[test]
fn commits_in_the_middle_of_a_copy_leave_its_snapshot_alone() {
    for write_map in [false, true] {
        for compact in [false, true] {
            let d = tempfile::tempdir().unwrap();
            let env = Env::builder()
                .max_dbs(2)
                .write_map(write_map)
                .geometry(Geometry { page_size: Some(4096), ..Default::default() })
                .open(d.path().join("src"))
                .unwrap();
            // Generations 1 to 4: the GC then holds the pages of the
            // earlier ones, free for the commits during the copy.
            for gen in 1..=4 {
                rewrite_all(&env, gen);
            }
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
            drop(c);
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
