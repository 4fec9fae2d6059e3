//! Prints the tables of a database with their statistics: `cargo run --example peek PATH`.
fn main() -> rdbx::Result<()> {
    let path = std::env::args().nth(1).expect("usage: peek PATH");
    let env = rdbx::Env::builder().max_dbs(64).read_only(true).open(&path)?;
    let txn = env.begin_ro_txn()?;
    println!("main: {:?}", txn.db_stat(txn.open_db(None)?)?);
    for name in txn.table_names()? {
        let db = txn.open_db_bytes(Some(&name))?;
        let st = txn.db_stat(db)?;
        let mut n = 0u64;
        let mut c = txn.cursor(db)?;
        let scan = loop {
            match c.next() {
                Ok(Some(_)) => n += 1,
                Ok(None) => break "ok".to_string(),
                Err(e) => break format!("{e}"),
            }
        };
        println!("{}: {:?} scanned {n} ({scan})", String::from_utf8_lossy(&name), st);
    }
    Ok(())
}
