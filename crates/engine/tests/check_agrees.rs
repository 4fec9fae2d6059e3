//! The integrity check must see every damage that reading sees: each page
//! header field of every page of a small database (plain, multimap with
//! sub-pages and nested trees, large values) is damaged in turn; when a full
//! read of the damaged copy (cursor scans with every value, gets of every key)
//! fails, `Env::check` must report at least one problem.
//!
//! Knobs: `RDBX_CHECK_AGREES_VALUES` (damaging values per header field,
//! default 6), `RDBX_CHECK_AGREES_RANDOM` (random byte damages, default 1500).

use std::path::Path;

use rdbx::{Db, DbFlags, Env, Geometry, PutFlags};

fn build(dir: &Path) {
    let env = Env::builder()
        .max_dbs(8)
        .geometry(Geometry { page_size: Some(4096), ..Default::default() })
        .open(dir)
        .expect("create");
    let mut txn = env.begin_rw_txn().expect("begin");
    let plain = txn.create_db(Some("plain"), DbFlags::empty()).expect("db");
    for i in 0..400u32 {
        txn.put(plain, format!("key-{i:05}").as_bytes(), &vec![i as u8; 10 + i as usize % 60], PutFlags::empty())
            .expect("put");
    }
    let multi = txn.create_db(Some("multi"), DbFlags::DUP_SORT).expect("db");
    for k in 0..40u32 {
        // Few values: a sub-page; many: a nested tree.
        let n = if k % 10 == 0 { 300 } else { 1 + k % 7 };
        for v in 0..n {
            txn.put(multi, &k.to_be_bytes(), format!("value-{v:04}").as_bytes(), PutFlags::empty()).expect("put");
        }
    }
    let big = txn.create_db(Some("big"), DbFlags::empty()).expect("db");
    for i in 0..6u32 {
        txn.put(big, &i.to_be_bytes(), &vec![7u8; 5000 + 3000 * i as usize], PutFlags::empty()).expect("put");
    }
    txn.commit().expect("commit");
}

/// Reads everything; the first error, if any.
fn read_all(dir: &Path) -> Result<(), String> {
    let env = Env::builder().max_dbs(8).read_only(true).open(dir).map_err(|e| format!("open: {e:?}"))?;
    let txn = env.begin_ro_txn().map_err(|e| format!("{e:?}"))?;
    let mut dbs = vec![Db::MAIN];
    for name in txn.table_names().map_err(|e| format!("{e:?}"))? {
        dbs.push(txn.open_db_bytes(Some(&name)).map_err(|e| format!("open_db: {e:?}"))?);
    }
    for db in dbs {
        let mut keys = Vec::new();
        let mut c = txn.cursor(db).map_err(|e| format!("{e:?}"))?;
        let mut n = 0u64;
        while let Some((k, _)) = c.next().map_err(|e| format!("next: {e:?}"))? {
            keys.push(k.to_vec());
            n += 1;
            if n > 1_000_000 {
                return Err("endless scan".into());
            }
        }
        let mut c = txn.cursor(db).map_err(|e| format!("{e:?}"))?;
        while c.prev().map_err(|e| format!("prev: {e:?}"))?.is_some() {}
        for k in keys {
            txn.get(db, &k).map_err(|e| format!("get: {e:?}"))?;
        }
    }
    Ok(())
}

#[test]
fn check_reports_what_reading_finds() {
    let per_field: usize = std::env::var("RDBX_CHECK_AGREES_VALUES").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let base = tempfile::tempdir().expect("tempdir");
    build(base.path());
    let good = std::fs::read(base.path().join("mdbx.dat")).expect("read");
    let ps = 4096;
    let used = {
        let env = Env::builder().max_dbs(8).read_only(true).open(base.path()).expect("open");
        env.info().expect("info").first_unallocated as usize
    };
    let work = tempfile::tempdir().expect("tempdir");
    let path = work.path().join("mdbx.dat");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let (mut cases, mut read_failed, mut missed) = (0, 0, Vec::new());
    // Phase 1: header fields of every page. Phase 2: random bytes anywhere
    // in the used pages (node areas, sub-pages, nested descriptors).
    let random: usize = std::env::var("RDBX_CHECK_AGREES_RANDOM").ok().and_then(|s| s.parse().ok()).unwrap_or(1500);
    for k in 0..random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = 3 * ps + (x as usize >> 8) % ((used - 3) * ps);
        let mut bad = good.clone();
        bad[at] ^= 1 << (x % 8);
        if k % 3 == 0 {
            bad[at] = (x >> 40) as u8;
        }
        if bad[at] == good[at] {
            continue;
        }
        std::fs::write(&path, &bad).expect("write");
        let _ = std::fs::remove_file(work.path().join("mdbx.lck"));
        cases += 1;
        let Err(why) = read_all(work.path()) else { continue };
        read_failed += 1;
        let Ok(env) = Env::builder().max_dbs(8).read_only(true).open(work.path()) else { continue };
        let problems = env.check(&Default::default(), &mut |_| {}).map_or(1, |r| r.problem_count());
        if problems == 0 {
            missed.push(format!(
                "page {} byte {} = {:02x} (was {:02x}): reading fails ({why})",
                at / ps,
                at % ps,
                bad[at],
                good[at]
            ));
        }
    }
    for pgno in 3..used {
        // Header fields: (offset, width): txnid, dupfix ksize, flags, lower, upper, pgno.
        for &(off, width) in &[(0usize, 8usize), (8, 2), (10, 2), (12, 2), (14, 2), (16, 4)] {
            for j in 0..per_field {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut bad = good.clone();
                let at = pgno * ps + off;
                let old = bad[at..at + width].to_vec();
                match j {
                    0 => bad[at..at + width].fill(0),
                    1 => bad[at..at + width].fill(0xFF),
                    2 => bad[at] ^= 2,
                    3 => bad[at] = bad[at].wrapping_add(2),
                    _ => bad[at..at + width].copy_from_slice(&x.to_le_bytes()[..width]),
                }
                if bad[at..at + width] == old[..] {
                    continue;
                }
                std::fs::write(&path, &bad).expect("write");
                let _ = std::fs::remove_file(work.path().join("mdbx.lck"));
                cases += 1;
                let Err(why) = read_all(work.path()) else { continue };
                read_failed += 1;
                let env = match Env::builder().max_dbs(8).read_only(true).open(work.path()) {
                    Ok(e) => e,
                    Err(_) => continue, // the open itself refused it
                };
                let problems = match env.check(&Default::default(), &mut |_| {}) {
                    Ok(r) => r.problem_count(),
                    Err(_) => 1,
                };
                if problems == 0 {
                    missed.push(format!(
                        "page {pgno} offset {off} = {:02x?}: reading fails ({why})",
                        &bad[at..at + width]
                    ));
                }
            }
        }
    }
    eprintln!("{cases} damaged copies, {read_failed} that reading rejects, {} that check missed", missed.len());
    assert!(missed.is_empty(), "check reported no problem where reading fails:\n{}", missed.join("\n"));
}

/// A damaged `upper` that leaves a gap in a page's node area does not stop
/// reads (every node still lies inside the area), but libmdbx's check reports
/// it ("invalid page upper"), and so must ours.
#[test]
fn a_gap_in_the_node_area_is_reported() {
    let base = tempfile::tempdir().expect("tempdir");
    build(base.path());
    let good = std::fs::read(base.path().join("mdbx.dat")).expect("read");
    let ps = 4096;
    let work = tempfile::tempdir().expect("tempdir");
    let path = work.path().join("mdbx.dat");
    let mut tried = 0;
    for pgno in 3..good.len() / ps {
        let page = &good[pgno * ps..(pgno + 1) * ps];
        let flags = u16::from_le_bytes([page[10], page[11]]);
        let (lower, upper) = (u16::from_le_bytes([page[12], page[13]]), u16::from_le_bytes([page[14], page[15]]));
        if !(flags == 0x01 || flags == 0x02) || upper < lower + 2 {
            continue;
        }
        let mut bad = good.clone();
        bad[pgno * ps + 14..pgno * ps + 16].copy_from_slice(&(upper - 2).to_le_bytes());
        std::fs::write(&path, &bad).expect("write");
        let _ = std::fs::remove_file(work.path().join("mdbx.lck"));
        assert!(read_all(work.path()).is_ok(), "page {pgno}: reading noticed the gap");
        let env = Env::builder().max_dbs(8).read_only(true).open(work.path()).expect("open");
        let report = env.check(&Default::default(), &mut |_| {}).expect("check");
        assert!(report.problem_count() > 0, "page {pgno}: upper {upper} -> {} not reported", upper - 2);
        tried += 1;
        if tried == 10 {
            break;
        }
    }
    assert!(tried > 0);
}
