//! The demo database of `rdbx --create-demo PATH`: a few small tables of
//! different kinds to try the shell on.

use std::path::Path;

use rdbx::{DbFlags, PutFlags};

/// Creates the demo database in a new or empty directory. A path that
/// already holds a database (a non-empty data file) is refused: the demo
/// records would overwrite the user's.
pub fn create(path: &Path) -> Result<String, String> {
    let data = if path.is_dir() { path.join("mdbx.dat") } else { path.to_path_buf() };
    if std::fs::metadata(&data).is_ok_and(|m| m.len() > 0) {
        let what = if rdbx_dump::guard::file_kind(&data) == rdbx_dump::guard::FileKind::DataFile {
            format!("it already holds a database ({})", data.display())
        } else {
            format!("{} exists and is not empty", data.display())
        };
        return Err(format!(
            "{what}; nothing was changed. Give a new or empty directory for the demo, or open the database with `rdbx {}`",
            path.display()
        ));
    }
    if !path.exists() {
        std::fs::create_dir_all(path).map_err(|e| e.to_string())?;
    }
    let env = crate::db::builder().max_dbs(16).open(path).map_err(|e| e.to_string())?;
    let mut txn = env.begin_rw_txn().map_err(|e| e.to_string())?;
    let e = |e: rdbx::Error| e.to_string();
    let none = PutFlags::empty();

    let fruit = txn.create_db(Some("fruit"), DbFlags::empty()).map_err(e)?;
    let fruits: &[(&str, &str)] = &[
        ("apple", "red"),
        ("banana", "yellow"),
        ("cherry", "dark red"),
        ("grape", "purple"),
        ("kiwi", "green"),
        ("lemon", "yellow"),
        ("orange", "orange"),
        ("plum", "violet"),
    ];
    for (k, v) in fruits {
        txn.put(fruit, k.as_bytes(), v.as_bytes(), none).map_err(e)?;
    }

    let numbers = txn.create_db(Some("numbers"), DbFlags::INTEGER_KEY).map_err(e)?;
    for n in 1u64..=50 {
        let v = format!("{n} squared is {}", n * n);
        txn.put(numbers, &n.to_ne_bytes(), v.as_bytes(), none).map_err(e)?;
    }

    let domains = txn.create_db(Some("domains"), DbFlags::REVERSE_KEY).map_err(e)?;
    let hosts: &[(&str, &str)] = &[
        ("www.example.com", "93.184.215.14"),
        ("mail.example.com", "93.184.215.25"),
        ("example.org", "93.184.215.34"),
        ("docs.rs", "18.244.28.43"),
        ("crates.io", "18.244.28.10"),
        ("www.rust-lang.org", "18.244.28.2"),
    ];
    for (k, v) in hosts {
        txn.put(domains, k.as_bytes(), v.as_bytes(), none).map_err(e)?;
    }

    let blobs = txn.create_db(Some("blobs"), DbFlags::empty()).map_err(e)?;
    for i in 0u8..8 {
        let v: Vec<u8> = (0..16).map(|j| i.wrapping_mul(31).wrapping_add(j * 7)).collect();
        txn.put(blobs, format!("bytes-{i}").as_bytes(), &v, none).map_err(e)?;
    }
    let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    txn.put(blobs, b"big", &big, none).map_err(e)?;
    txn.put(blobs, &[0x00, 0xff, 0x10], b"a binary key", none).map_err(e)?;

    let by_color = txn.create_db(Some("by-color"), DbFlags::DUP_SORT).map_err(e)?;
    for (fruit, color) in fruits {
        txn.put(by_color, color.as_bytes(), fruit.as_bytes(), none).map_err(e)?;
    }

    txn.commit().map_err(e)?;
    Ok(format!(
        "tables fruit ({} records), numbers ({} records, INTEGER_KEY), domains ({} records, \
         REVERSE_KEY), blobs (10 records, one of 20000 bytes), by-color ({} records, DUP_SORT)",
        fruits.len(),
        50,
        hosts.len(),
        fruits.len()
    ))
}
