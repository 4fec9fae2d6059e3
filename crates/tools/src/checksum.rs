//! `checksum`: a content digest per table and one for the database
//! ([`rdbx::checksums`]): equal for a copy, a compacted copy or a dump/load
//! round trip; different after any change of a record.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::common::{self, locate, open_env, ToolError, INTERRUPTED_MSG, PROG};

const HELP: &str = "\
One line per table: the SHA-256 digest of its records, the table, its
records and flags; then the digest of the database. The digest covers each
record as u64le(key length) key u64le(value length) value, in the table's
order (multimap values in value order): not the page layout, the GC, txnids,
flags or sequences. A compacted copy has the same digests; the main table's
records that describe named tables are left out. The database digest hashes,
per table (main first, then by name), u64le(name length) name
u64le(records) table-digest. See crates/tools/README.md for the definition.

KEY is text, or 0x followed by hex digits.

EXIT STATUS: 0 success, 1 any failure or interruption (Ctrl-C).";

/// Arguments of `checksum`.
#[derive(Args, Debug)]
#[command(after_help = HELP)]
pub struct ChecksumArgs {
    /// Only this table (repeatable; @MAIN is the main table)
    #[arg(short = 's', long = "table", value_name = "TABLE")]
    tables: Vec<String>,
    /// First key included
    #[arg(long, value_name = "KEY")]
    from: Option<String>,
    /// First key excluded
    #[arg(long, value_name = "KEY")]
    to: Option<String>,
    /// Print one JSON object
    #[arg(long)]
    json: bool,
    /// Database directory or data file
    path: PathBuf,
}

pub fn run(a: ChecksumArgs) -> u8 {
    match checksum(&a) {
        Ok(()) => 0,
        Err(e) => {
            if a.json {
                common::json_error(json!({"path": a.path.display().to_string()}), e.code, &e.msg);
            }
            eprintln!("{PROG} checksum: {e}");
            1
        }
    }
}

fn checksum(a: &ChecksumArgs) -> Result<(), ToolError> {
    let bytes = |s: &Option<String>| -> Result<Option<Vec<u8>>, ToolError> {
        s.as_deref().map(common::parse_bytes).transpose().map_err(|m| ToolError::sys(libc::EINVAL, m))
    };
    let opts = rdbx::ChecksumOptions {
        tables: a.tables.iter().map(|t| common::table_arg(t)).collect(),
        from: bytes(&a.from)?,
        to: bytes(&a.to)?,
        interrupt: Some(common::interrupt_flag()),
    };
    let t = locate(&a.path)?;
    let env = open_env(&t, true)?;
    let p = a.path.display();
    let txn = env.begin_ro_txn().map_err(|e| ToolError::engine(&e, &p))?;
    for n in opts.tables.iter().flatten() {
        if txn.open_db_bytes(Some(n)).is_err() {
            return Err(ToolError::sys(libc::EINVAL, format!("{p}: no table named '{}'", common::render(n))));
        }
    }
    let sums = rdbx::checksums(&txn, &opts).map_err(|e| match &e {
        rdbx::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted => {
            ToolError::sys(libc::EINTR, INTERRUPTED_MSG)
        }
        _ => ToolError::engine(&e, &p),
    })?;
    if a.json {
        let tables: Vec<serde_json::Value> = sums
            .tables
            .iter()
            .map(|t| {
                let mut m = serde_json::Map::new();
                match &t.name {
                    Some(n) => common::json_bytes(&mut m, "name", n),
                    None => {
                        m.insert("name".into(), serde_json::Value::Null);
                        m.insert("name_hex".into(), serde_json::Value::Null);
                    }
                }
                m.insert("main".into(), t.name.is_none().into());
                m.insert("flags".into(), t.flags.bits().into());
                m.insert("flags_text".into(), common::flags_text(t.flags.bits() as u16).into());
                m.insert("records".into(), t.records.into());
                m.insert("bytes".into(), t.bytes.into());
                m.insert("sha256".into(), t.hex().into());
                m.into()
            })
            .collect();
        let range = |b: &Option<Vec<u8>>| b.as_ref().map(|b| rdbx::to_hex(b));
        println!(
            "{}",
            json!({
                "path": a.path.display().to_string(),
                "txnid": sums.txnid,
                "algorithm": "sha256",
                "from_hex": range(&opts.from),
                "to_hex": range(&opts.to),
                "tables": tables,
                "sha256": sums.hex(),
            })
        );
        return Ok(());
    }
    for t in &sums.tables {
        let flags = common::flags_text(t.flags.bits() as u16);
        let flags = if flags == "none" { String::new() } else { format!("  {flags}") };
        println!("{}  {}  {} records{flags}", t.hex(), common::table_label(t.name.as_deref()), t.records);
    }
    println!("{}  (database: {} tables, txn {})", sums.hex(), sums.tables.len(), sums.txnid);
    Ok(())
}
