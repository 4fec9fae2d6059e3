//! Writes a sample database: `cargo run --example fill PATH [PAGE_SIZE] [N]`.
use rdbx::{DbFlags, Env, Geometry, PutFlags};

fn main() -> rdbx::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: fill PATH [PAGE_SIZE] [N]");
    let ps: usize = args.next().map(|s| s.parse().unwrap()).unwrap_or(4096);
    let n: u64 = args.next().map(|s| s.parse().unwrap()).unwrap_or(10000);
    let env = Env::builder().max_dbs(8).geometry(Geometry { page_size: Some(ps), ..Default::default() }).open(&path)?;
    let mut x = 88172645463325252u64;
    for round in 0..4 {
        let mut txn = env.begin_rw_txn()?;
        let a = txn.create_db(Some("alpha"), DbFlags::empty())?;
        let b = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY)?;
        let r = txn.create_db(Some("rev"), DbFlags::REVERSE_KEY)?;
        let d = txn.create_db(Some("dups"), DbFlags::DUP_SORT)?;
        let f = txn.create_db(Some("dfix"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP)?;
        let rd = txn.create_db(Some("rdup"), DbFlags::DUP_SORT | DbFlags::REVERSE_DUP)?;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = format!("k{:08}", x % (n * 2));
            let vlen = if x.is_multiple_of(97) { (x % (3 * ps as u64)) as usize } else { (x % 50) as usize };
            let v = vec![(i % 251) as u8; vlen];
            txn.put(a, k.as_bytes(), &v, PutFlags::empty())?;
            txn.put(b, &(x % 100000).to_le_bytes(), k.as_bytes(), PutFlags::empty())?;
            txn.put(r, k.as_bytes(), b"r", PutFlags::empty())?;
            let dk = format!("d{}", x % 37);
            txn.put(d, dk.as_bytes(), format!("val{}", x % 5000).as_bytes(), PutFlags::empty())?;
            txn.put(f, dk.as_bytes(), &((x % 100000) as u32).to_le_bytes(), PutFlags::empty())?;
            txn.put(rd, dk.as_bytes(), format!("v{}", x % 300).as_bytes(), PutFlags::empty())?;
            if round > 1 && i % 4 == 0 {
                txn.del(d, dk.as_bytes(), Some(format!("val{}", (x >> 5) % 5000).as_bytes()))?;
                txn.del(f, dk.as_bytes(), Some(&(((x >> 5) % 100000) as u32).to_le_bytes()))?;
            }
            if round == 3 && i % 1000 == 0 {
                txn.del(rd, dk.as_bytes(), None)?;
            }
            if round > 0 && i % 3 == 0 {
                let k = format!("k{:08}", (x >> 3) % (n * 2));
                txn.del(a, k.as_bytes(), None)?;
                txn.del(r, k.as_bytes(), None)?;
            }
        }
        txn.commit()?;
    }
    Ok(())
}
