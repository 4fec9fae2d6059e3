//! Fill/delete cycles (page reuse check): `cargo run --example cycles PATH [PAGE_SIZE] [CYCLES]`.
use rdbx::{DbFlags, Env, Geometry, PutFlags};

fn main() -> rdbx::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: cycles PATH [PAGE_SIZE] [CYCLES]");
    let ps: usize = args.next().map_or(256, |s| s.parse().unwrap());
    let cycles: u32 = args.next().map_or(10, |s| s.parse().unwrap());
    let env = Env::builder().max_dbs(4).geometry(Geometry { page_size: Some(ps), ..Default::default() }).open(&path)?;
    let records = 1200u32;
    for cycle in 1..=cycles {
        for part in 0..4 {
            let mut txn = env.begin_rw_txn()?;
            let a = txn.create_db(Some("a"), DbFlags::empty())?;
            for j in part * records / 4..(part + 1) * records / 4 {
                let key = format!("key-{:08}", j.wrapping_mul(2_654_435_761) % 1_000_003);
                let len = match j % 16 {
                    0 => 2 * ps + 5,
                    1..=3 => ps / 3,
                    _ => 20 + (j as usize % 50),
                };
                txn.put(a, key.as_bytes(), &vec![(j + cycle) as u8; len], PutFlags::empty())?;
            }
            txn.commit()?;
        }
        let mut txn = env.begin_rw_txn()?;
        let a = txn.open_db(Some("a"))?;
        txn.clear_db(a)?;
        txn.commit()?;
        println!("cycle {cycle}: first_unallocated {}", env.info()?.first_unallocated);
    }
    Ok(())
}
