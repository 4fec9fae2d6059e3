//! Shows file growth under random updates: `cargo run --release --example growth [safe]`.
use rdbx::{Db, Durability, Env, PutFlags};

fn main() -> rdbx::Result<()> {
    let lazy = std::env::args().nth(1).is_some();
    let dir = std::env::temp_dir().join(format!("rdbx-growth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let env =
        Env::builder().durability(if lazy { Durability::SafeNoSync } else { Durability::SyncDurable }).open(&dir)?;
    let n = 300_000u64;
    let mut txn = env.begin_rw_txn()?;
    for i in 0..n {
        txn.put(Db::MAIN, &i.to_be_bytes(), &[7u8; 32], PutFlags::APPEND)?;
    }
    txn.commit()?;
    let mut x = 1u64;
    for t in 0..100 {
        let mut txn = env.begin_rw_txn()?;
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            txn.put(Db::MAIN, &(x % n).to_be_bytes(), &[9u8; 32], PutFlags::empty())?;
        }
        txn.commit()?;
        if t % 10 == 0 {
            let i = env.info()?;
            println!(
                "txn {t}: first_unallocated {} now {} pages, metas {:?}",
                i.first_unallocated,
                i.size_now / 4096,
                i.metas
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
