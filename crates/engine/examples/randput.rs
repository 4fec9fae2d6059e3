//! Random puts for counting instructions per put and per page allocation
//! (`valgrind --tool=callgrind`): `cargo run --release --example randput`.
//! `RDBX_RP_N` puts (default 100,000) of random 16-byte keys with
//! `RDBX_RP_VAL`-byte values (default 100), `RDBX_RP_TXN` puts per
//! transaction (default 1,000), into a new database in /dev/shm (in
//! `RDBX_RP_DIR` if set, kept afterwards, e.g. to compare files).
use rdbx::{Db, Durability, Env, Geometry, PutFlags};

/// xorshift64: the next pseudo-random number after `x`.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn var(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> rdbx::Result<()> {
    let (n, per_txn, val) = (var("RDBX_RP_N", 100_000), var("RDBX_RP_TXN", 1000).max(1), var("RDBX_RP_VAL", 100));
    let keep = std::env::var_os("RDBX_RP_DIR");
    let dir = match &keep {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::Path::new("/dev/shm").join(format!("rdbx-randput-{}", std::process::id())),
    };
    // A bounded map (valgrind cannot reserve the default upper bound).
    let geometry = Geometry { size_upper: Some(4 << 30), ..Default::default() };
    let env = Env::builder().durability(Durability::SafeNoSync).geometry(geometry).open(&dir)?;
    let v = vec![0x5Au8; val];
    let mut x = 7u64;
    let t0 = std::time::Instant::now();
    let mut done = 0;
    while done < n {
        let mut txn = env.begin_rw_txn()?;
        for _ in 0..per_txn.min(n - done) {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&next(&mut x).to_le_bytes());
            k[8..].copy_from_slice(&next(&mut x).to_le_bytes());
            txn.put(Db::MAIN, &k, &v, PutFlags::empty())?;
        }
        done += per_txn.min(n - done);
        txn.commit()?;
    }
    let info = env.info()?;
    println!("{n} puts in {:?}; {} pages used", t0.elapsed(), info.first_unallocated);
    drop(env);
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
