//! Hot-path workload for profiling: `cargo run --release --example hot [get|scan|randscan|intget|intscan|intiter|put|multi|multidel|wscan|rwscan|multiwscan|multirwscan|prune|multiprune|rwupdate|load] [PAGE_SIZE]`
//! (`wscan`/`rwscan`: a walk of the table with a read cursor / a write
//! cursor inside a write transaction; `multi*`: the same over a multimap of
//! 1,000 keys with values inline and in nested trees; `prune`: a write
//! cursor's walk deleting 1 record in 10, as the benchmark's prune row;
//! `rwupdate`: a write cursor's walk replacing every value at the cursor;
//! `multiprune`: a multimap of N/10 keys with 10 values each (sub-pages;
//! `RDBX_HOT_PER_KEY` values each instead, e.g. 1000: nested trees),
//! committed, then a write cursor's walk deleting every other value
//! (`RDBX_HOT_DEL_EVERY=k`: 1 in k; 1 deletes every value, as a pruning
//! job that drops old keys value by value does).)
//! (`RDBX_HOT_WRITEMAP=1`: with WRITEMAP; `RDBX_HOT_N`: records, default 1,000,000;
//! `RDBX_HOT_OPS`: gets or records scanned in the intget/intscan modes, puts in
//! the put mode, default 100,000).
use rdbx::{Db, Durability, Env, Geometry, PutFlags};

/// xorshift64: the next pseudo-random number after `x`.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn main() -> rdbx::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_else(|| "get".into());
    let dir = std::path::Path::new("/dev/shm").join(format!("rdbx-hot-{}", std::process::id()));
    let page_size = std::env::args().nth(2).and_then(|v| v.parse().ok());
    let env = Env::builder()
        .write_map(std::env::var_os("RDBX_HOT_WRITEMAP").is_some())
        .max_dbs(2)
        .durability(Durability::SafeNoSync)
        .geometry(Geometry { page_size, size_upper: Some(4 << 30), ..Default::default() })
        .open(&dir)?;
    // Operations of the intget/intscan modes (`RDBX_HOT_OPS`; for callgrind).
    let ops: Option<u64> = std::env::var("RDBX_HOT_OPS").ok().and_then(|v| v.parse().ok());
    let n: u64 = std::env::var("RDBX_HOT_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let t0 = std::time::Instant::now();
    let mut txn = env.begin_rw_txn()?;
    for i in 0..n {
        txn.put(Db::MAIN, &i.to_be_bytes(), &[7u8; 32], PutFlags::APPEND)?;
    }
    txn.commit()?;
    let load = t0.elapsed();
    let t0 = std::time::Instant::now();
    let mut sum = 0usize;
    match what.as_str() {
        "get" => {
            let r = env.begin_ro_txn()?;
            let mut x = 1u64;
            for _ in 0..n {
                sum += r.get(Db::MAIN, &(next(&mut x) % n).to_be_bytes())?.map_or(0, |v| v.len());
            }
        }
        "scan" => {
            let r = env.begin_ro_txn()?;
            for _ in 0..5 {
                let mut c = r.cursor(Db::MAIN)?;
                while let Some((_, v)) = c.next()? {
                    sum += v.len();
                }
            }
        }
        "randscan" => {
            // A table filled in a scattered key order (leaves split all over
            // the file, nodes in insertion order within each leaf), scanned
            // `RDBX_HOT_OPS / n` times (default 5).
            let mut txn = env.begin_rw_txn()?;
            let db = txn.create_db(Some("rand"), rdbx::DbFlags::empty())?;
            for i in 0..n {
                let k = i.wrapping_mul(0x9E37_79B1) % n;
                txn.put(db, &k.to_be_bytes(), &[7u8; 32], PutFlags::empty())?;
            }
            txn.commit()?;
            let r = env.begin_ro_txn()?;
            let t1 = std::time::Instant::now();
            for _ in 0..ops.map_or(5, |o| o.div_ceil(n.max(1))) {
                let mut c = r.cursor(db)?;
                while let Some((_, v)) = c.next()? {
                    sum += v.len();
                }
            }
            println!("{what} alone {:?}", t1.elapsed());
        }
        "intget" | "intscan" | "intiter" => {
            let mut txn = env.begin_rw_txn()?;
            let ints = txn.create_db(Some("ints"), rdbx::DbFlags::INTEGER_KEY)?;
            for i in 0..n {
                txn.put(ints, &i.to_ne_bytes(), &[7u8; 32], PutFlags::APPEND)?;
            }
            txn.commit()?;
            let r = env.begin_ro_txn()?;
            let t1 = std::time::Instant::now();
            if what == "intget" {
                let mut x = 1u64;
                for _ in 0..ops.unwrap_or(20_000_000 / n.max(1) * n) {
                    sum += r.get(ints, &(next(&mut x) % n).to_ne_bytes())?.map_or(0, |v| v.len());
                }
            } else if what == "intiter" {
                for _ in 0..ops.map_or((100_000_000 / n.max(1)).max(5), |o| o.div_ceil(n.max(1))) {
                    for p in r.iter(ints)? {
                        sum += p?.1.len();
                    }
                }
            } else {
                for _ in 0..ops.map_or((100_000_000 / n.max(1)).max(5), |o| o.div_ceil(n.max(1))) {
                    let mut c = r.cursor(ints)?;
                    while let Some((_, v)) = c.next()? {
                        sum += v.len();
                    }
                }
            }
            println!("{what} alone {:?}", t1.elapsed());
        }
        "put" => {
            let mut x = 1u64;
            for _ in 0..ops.map_or(100, |o| o.div_ceil(1000)) {
                let mut txn = env.begin_rw_txn()?;
                for _ in 0..1000 {
                    txn.put(Db::MAIN, &(next(&mut x) % n).to_be_bytes(), &[9u8; 32], PutFlags::empty())?;
                }
                txn.commit()?;
            }
        }
        "multi" | "multidel" => {
            let mut txn = env.begin_rw_txn()?;
            let db = txn.create_db(Some("multi"), rdbx::DbFlags::DUP_SORT)?;
            txn.commit()?;
            let mut x = 1u64;
            for _ in 0..100 {
                let mut txn = env.begin_rw_txn()?;
                for _ in 0..1000 {
                    let v = next(&mut x);
                    txn.put(db, &(v % 1000).to_be_bytes(), &v.to_be_bytes(), PutFlags::empty())?;
                }
                txn.commit()?;
            }
            if what == "multidel" {
                // Every other value again, deleted one by one.
                let t1 = std::time::Instant::now();
                let mut x = 1u64;
                for _ in 0..50 {
                    let mut txn = env.begin_rw_txn()?;
                    for _ in 0..1000 {
                        let v = next(&mut x);
                        next(&mut x);
                        txn.del(db, &(v % 1000).to_be_bytes(), Some(&v.to_be_bytes()))?;
                    }
                    txn.commit()?;
                }
                println!("multidel {:?}", t1.elapsed());
            }
        }
        "wscan" | "rwscan" | "multiwscan" | "multirwscan" => {
            let mut txn = env.begin_rw_txn()?;
            let db = if what.starts_with("multi") {
                let db = txn.create_db(Some("multi"), rdbx::DbFlags::DUP_SORT)?;
                for i in 0..n {
                    // Key i % 1000 gets n / 1000 values; every tenth key gets one.
                    let k = i % 1000;
                    if k % 10 != 0 || i < 1000 {
                        txn.put(db, &k.to_be_bytes(), &i.to_be_bytes(), PutFlags::empty())?;
                    }
                }
                db
            } else {
                Db::MAIN
            };
            let t1 = std::time::Instant::now();
            let mut walked = 0u64;
            for _ in 0..5 {
                if what.ends_with("rwscan") {
                    let mut c = txn.rw_cursor(db)?;
                    while let Some((_, v)) = c.next()? {
                        sum += v.len();
                        walked += 1;
                    }
                } else {
                    let mut c = txn.cursor(db)?;
                    while let Some((_, v)) = c.next()? {
                        sum += v.len();
                        walked += 1;
                    }
                }
            }
            println!(
                "{what} alone {:?} ({walked} steps, {:.1} ns a step)",
                t1.elapsed(),
                t1.elapsed().as_nanos() as f64 / walked as f64
            );
            txn.abort();
        }
        "multiprune" => {
            let mut txn = env.begin_rw_txn()?;
            let db = txn.create_db(Some("multi"), rdbx::DbFlags::DUP_SORT)?;
            let per_key: u64 = std::env::var("RDBX_HOT_PER_KEY").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
            for i in 0..n {
                txn.put(db, &(i / per_key.max(1)).to_be_bytes(), &i.to_be_bytes(), PutFlags::empty())?;
            }
            txn.commit()?;
            let t1 = std::time::Instant::now();
            let mut txn = env.begin_rw_txn()?;
            let mut c = txn.rw_cursor(db)?;
            let every: u64 = std::env::var("RDBX_HOT_DEL_EVERY").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
            let (mut walked, mut deleted) = (0u64, 0u64);
            let mut at = c.first()?.is_some();
            while at {
                if walked % every.max(1) == 0 {
                    c.del()?;
                    deleted += 1;
                }
                walked += 1;
                at = c.next()?.is_some();
            }
            drop(c);
            txn.commit()?;
            sum = deleted as usize;
            println!("{what} alone {:?} ({walked} walked, {deleted} deleted)", t1.elapsed());
        }
        "rwupdate" => {
            let t1 = std::time::Instant::now();
            let mut txn = env.begin_rw_txn()?;
            let mut c = txn.rw_cursor(Db::MAIN)?;
            let mut walked = 0u64;
            let mut key = Vec::new();
            let mut at = c.first()?.is_some();
            while at {
                key.clear();
                key.extend_from_slice(c.get_current()?.map_or(&[][..], |(k, _)| k));
                c.put(&key, &[8u8; 32], PutFlags::CURRENT)?;
                walked += 1;
                at = c.next()?.is_some();
            }
            drop(c);
            txn.commit()?;
            sum = walked as usize;
            println!("{what} alone {:?} ({walked} updated)", t1.elapsed());
        }
        "prune" => {
            let t1 = std::time::Instant::now();
            let mut txn = env.begin_rw_txn()?;
            let mut c = txn.rw_cursor(Db::MAIN)?;
            let (mut walked, mut deleted) = (0u64, 0u64);
            let mut at = c.first()?.map(|(k, _)| k[7] % 10 == 0);
            while let Some(del) = at {
                walked += 1;
                if del {
                    c.del()?;
                    deleted += 1;
                }
                at = c.next()?.map(|(k, _)| k[7] % 10 == 0);
            }
            drop(c);
            txn.commit()?;
            sum = deleted as usize;
            println!("{what} alone {:?} ({walked} walked, {deleted} deleted)", t1.elapsed());
        }
        _ => {}
    }
    println!("load {:?}, {what} {:?} ({sum})", load, t0.elapsed());
    drop(env);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
