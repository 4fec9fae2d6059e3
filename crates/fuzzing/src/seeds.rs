//! The seed corpus: small databases written by rdbx (image target), dumps of
//! them (dump target), and operation sequences (ops target).
//!
//! `cargo test -p rdbx-fuzzing --test corpus -- --ignored generate_corpus`
//! rewrites `fuzz/corpus/`.

use std::io;
use std::path::Path;

use rdbx::{CopyOptions, DbFlags, Durability, Env, Geometry, PutFlags};

/// What a seed database holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A freshly created database.
    Empty,
    /// A plain table, enough records for a few pages.
    Plain,
    /// A DUP_SORT table: keys with a few values (sub-pages) and one key
    /// with many values (a nested tree); a DUP_FIXED table.
    Dups,
    /// An INTEGER_KEY table.
    IntKey,
    /// A large value, and records deleted again (GC records).
    Large,
    /// All of the above.
    Mixed,
}

const KINDS: [(Kind, &str); 6] = [
    (Kind::Empty, "empty"),
    (Kind::Plain, "plain"),
    (Kind::Dups, "dups"),
    (Kind::IntKey, "intkey"),
    (Kind::Large, "large"),
    (Kind::Mixed, "mixed"),
];

fn build(dir: &Path, ps: usize, kind: Kind) -> rdbx::Result<Env> {
    let geometry = Geometry {
        page_size: Some(ps),
        size_lower: Some(0),
        size_now: Some(0),
        size_upper: Some(4 << 20),
        growth_step: Some(4096),
        shrink_threshold: Some(64 << 10),
    };
    let env =
        Env::builder().max_dbs(8).durability(Durability::UtterlyNoSync).geometry(geometry).open(dir.join("db"))?;
    let small = ps <= 1024;
    let mut txn = env.begin_rw_txn()?;
    if matches!(kind, Kind::Plain | Kind::Mixed) {
        let db = txn.create_db(Some("plain"), DbFlags::empty())?;
        let n = if small { 40 } else { 120 };
        for i in 0..n {
            txn.put(
                db,
                format!("key-{i:04}").as_bytes(),
                format!("value {i} {}", "x".repeat(i % 23)).as_bytes(),
                PutFlags::empty(),
            )?;
        }
        txn.sequence(db, 7)?;
    }
    if matches!(kind, Kind::Dups | Kind::Mixed) {
        let db = txn.create_db(Some("dups"), DbFlags::DUP_SORT)?;
        for k in 0..5u8 {
            for v in 0..(k + 1) {
                txn.put(db, &[b'a' + k], format!("v{v}").as_bytes(), PutFlags::empty())?;
            }
        }
        let many = if small { 60 } else { 400 };
        for v in 0..many {
            txn.put(db, b"many", format!("dup-{v:05}").as_bytes(), PutFlags::empty())?;
        }
        let fixed = txn.create_db(Some("fixed"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED)?;
        for v in 0..40u32 {
            txn.put(fixed, b"f", &v.to_be_bytes(), PutFlags::empty())?;
        }
        txn.put(fixed, b"g", &1u32.to_be_bytes(), PutFlags::empty())?;
    }
    if matches!(kind, Kind::IntKey | Kind::Mixed) {
        let db = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY)?;
        for i in 0..60u64 {
            txn.put(db, &(i * 1_000_003).to_ne_bytes(), &i.to_le_bytes()[..(i % 8) as usize], PutFlags::empty())?;
        }
    }
    if matches!(kind, Kind::Large | Kind::Mixed) {
        let big: Vec<u8> = (0..3 * ps + 100).map(|i| (i % 251) as u8).collect();
        txn.put(rdbx::Db::MAIN, b"large", &big, PutFlags::empty())?;
        for i in 0..30 {
            txn.put(rdbx::Db::MAIN, format!("tmp-{i:03}").as_bytes(), &[i as u8; 40], PutFlags::empty())?;
        }
    }
    txn.set_canary(1, 2, 3);
    txn.commit()?;
    if matches!(kind, Kind::Large | Kind::Mixed) {
        // Deleted in a later transaction: their pages go to the GC.
        let mut txn = env.begin_rw_txn()?;
        for i in 0..30 {
            txn.del(rdbx::Db::MAIN, format!("tmp-{i:03}").as_bytes(), None)?;
        }
        txn.commit()?;
    }
    Ok(env)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(name), bytes)
}

fn other<E: std::fmt::Debug>(e: E) -> io::Error {
    io::Error::other(format!("{e:?}"))
}

/// Writes the seed corpus under `corpus` (`corpus/image`, `corpus/dump`,
/// `corpus/ops`), replacing files of the same names.
pub fn write_corpus(corpus: &Path) -> io::Result<()> {
    let tmp = tempfile::tempdir()?;
    for ps in [256usize, 4096] {
        for (kind, kname) in KINDS {
            let dir = tmp.path().join(format!("{kname}-{ps}"));
            std::fs::create_dir_all(&dir)?;
            let env = build(&dir, ps, kind).map_err(other)?;
            let mut image = vec![0u8];
            image.extend(std::fs::read(env.data_path())?);
            assert!(image.len() <= crate::image::MAX_IMAGE + 1, "seed {kname}-{ps} is too large: {}", image.len());
            write(&corpus.join("image"), &format!("{kname}-{ps}"), &image)?;
            if kind == Kind::Mixed {
                // A compacted copy too (no GC, dense pages).
                let dst = dir.join("compact.dat");
                env.copy_to(&dst, &CopyOptions { compact: true, ..Default::default() }, &mut |_| {}).map_err(other)?;
                let mut image = vec![0u8];
                image.extend(std::fs::read(&dst)?);
                write(&corpus.join("image"), &format!("{kname}-{ps}-compact"), &image)?;
            }
            if ps == 256 && matches!(kind, Kind::Mixed | Kind::Dups | Kind::Plain) {
                for (mode, opts) in [
                    ("bytevalue", rdbx_dump::DumpOptions { all: true, ..Default::default() }),
                    (
                        "print",
                        rdbx_dump::DumpOptions { all: true, format: rdbx_dump::Format::Print, ..Default::default() },
                    ),
                    (
                        "concise",
                        rdbx_dump::DumpOptions {
                            all: true,
                            concise: true,
                            format: rdbx_dump::Format::Print,
                            ..Default::default()
                        },
                    ),
                ] {
                    if kind != Kind::Mixed && mode != "print" {
                        continue;
                    }
                    let mut out = vec![0u8];
                    rdbx_dump::dump(&env, &opts, &mut out, &mut |_| {}, &mut |_| true).map_err(other)?;
                    write(&corpus.join("dump"), &format!("{kname}-{mode}"), &out)?;
                }
            }
        }
    }
    // Hand-written dump inputs: header variants and plain text (-T).
    let dumps: [(&str, &[u8]); 4] = [
        (
            "geometry5",
            b"\0VERSION=3\ngeometry=l4096,c65536,u1048576,s131072,g65536\ncanary=v5,x1,y2,z3\nformat=print\ndatabase=t\\\r\r\ntype=btree\ndb_pagesize=256\nmapsize=1048576\nmaxreaders=10\ntxnid=0x10\nsequence=077\nduplicates=1\ndupsort=1\nreversedup=1\nunknown=1\nHEADER=END\n key\n value\n  second\n \\20space\n \\5c\\\\\nDATA=END\nVERSION=3\nformat=bytevalue\nHEADER=END\n 6b\n 76\n",
        ),
        ("plaintext", b"\x01key one\nvalue one\n\\00\\01\n\\ff\n"),
        ("crlf", b"\0VERSION=3\r\nformat=bytevalue\r\nintegerkey=1\r\nHEADER=END\r\n 0100000000000000\r\n 00\r\nDATA=END\r\n"),
        ("broken", b"\0VERSION=3\nformat=print\nHEADER=END\n a\n b\n c\n"),
    ];
    for (name, text) in dumps {
        write(&corpus.join("dump"), name, text)?;
    }
    // Operation sequences: a few pseudo-random ones per page size, and two
    // that grow the tables (bulk puts, nested transactions).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (i, len) in [64usize, 200, 400, 800, 1500, 3000].into_iter().enumerate() {
        let mut ops = vec![i as u8 % 4];
        ops.extend((0..len).map(|_| rnd() as u8));
        write(&corpus.join("ops"), &format!("random-{i}"), &ops)?;
    }
    let grow: &[u8] = &[
        0, 9, 1, 60, 20, 10, 0x41, 200, 10, 5, 9, 2, 50, 30, 10, 0x42, 100, 3, 6, 6, 0x0e, 0, 20, 5, 0x8b, 10, 7, 8,
        13, 0x41, 4, 0x42, b'v', b'0', 13, 0x41, 6, 3, 0x41, 6,
    ];
    write(&corpus.join("ops"), "grow-256", grow)?;
    let mut grow4k = grow.to_vec();
    grow4k[0] = 3;
    write(&corpus.join("ops"), "grow-4096", &grow4k)?;
    Ok(())
}
