//! A line-oriented script of write operations, so a test can hand the same
//! work to libmdbx in-process or in a child process (`mdbx-oracle write`).
//!
//! One operation per line, fields separated by single spaces. A table is `-`
//! for the main table or `x<hex of the name>`; keys and values are
//! `x<hex>` (`x` alone is the empty string); flags are hexadecimal.
//!
//! ```text
//! create TABLE FLAGS          open or create a table with these flags
//! put TABLE KEY VALUE [FLAGS] put a record (MDBX_put_flags_t)
//! del TABLE KEY [VALUE]       delete a key (or one key/value pair)
//! clear TABLE                 empty a table
//! drop TABLE                  delete a table
//! commit                      commit the current transaction, start another
//! ```
//! The last transaction is committed at the end of the script.

use std::collections::HashMap;

use crate::oracle;

/// One write operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Create { table: Option<Vec<u8>>, flags: u32 },
    Put { table: Option<Vec<u8>>, key: Vec<u8>, value: Vec<u8>, flags: u32 },
    Del { table: Option<Vec<u8>>, key: Vec<u8>, value: Option<Vec<u8>> },
    Clear { table: Option<Vec<u8>> },
    Drop { table: Option<Vec<u8>> },
    Commit,
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(1 + 2 * b.len());
    s.push('x');
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let h = s.strip_prefix('x').ok_or_else(|| format!("expected x<hex>, got {s:?}"))?;
    crate::golden::decode(crate::golden::DumpFormat::ByteValue, h.as_bytes())
}

fn table_str(t: &Option<Vec<u8>>) -> String {
    match t {
        None => "-".into(),
        Some(n) => hex(n),
    }
}

fn parse_table(s: &str) -> Result<Option<Vec<u8>>, String> {
    if s == "-" {
        Ok(None)
    } else {
        unhex(s).map(Some)
    }
}

fn parse_flags(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).map_err(|e| format!("flags {s:?}: {e}"))
}

/// Write a script.
pub fn format_ops(ops: &[Op]) -> String {
    let mut s = String::new();
    for op in ops {
        match op {
            Op::Create { table, flags } => s.push_str(&format!("create {} {flags:x}\n", table_str(table))),
            Op::Put { table, key, value, flags } => {
                s.push_str(&format!("put {} {} {}", table_str(table), hex(key), hex(value)));
                if *flags != 0 {
                    s.push_str(&format!(" {flags:x}"));
                }
                s.push('\n');
            }
            Op::Del { table, key, value } => {
                s.push_str(&format!("del {} {}", table_str(table), hex(key)));
                if let Some(v) = value {
                    s.push(' ');
                    s.push_str(&hex(v));
                }
                s.push('\n');
            }
            Op::Clear { table } => s.push_str(&format!("clear {}\n", table_str(table))),
            Op::Drop { table } => s.push_str(&format!("drop {}\n", table_str(table))),
            Op::Commit => s.push_str("commit\n"),
        }
    }
    s
}

/// Read a script.
pub fn parse_ops(text: &str) -> Result<Vec<Op>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        let err = |e: String| format!("ops line {}: {e}", n + 1);
        let op = match (f[0], f.len()) {
            ("", 1) => continue,
            ("create", 3) => {
                Op::Create { table: parse_table(f[1]).map_err(err)?, flags: parse_flags(f[2]).map_err(err)? }
            }
            ("put", 4 | 5) => Op::Put {
                table: parse_table(f[1]).map_err(err)?,
                key: unhex(f[2]).map_err(err)?,
                value: unhex(f[3]).map_err(err)?,
                flags: if f.len() == 5 { parse_flags(f[4]).map_err(err)? } else { 0 },
            },
            ("del", 3 | 4) => Op::Del {
                table: parse_table(f[1]).map_err(err)?,
                key: unhex(f[2]).map_err(err)?,
                value: if f.len() == 4 { Some(unhex(f[3]).map_err(err)?) } else { None },
            },
            ("clear", 2) => Op::Clear { table: parse_table(f[1]).map_err(err)? },
            ("drop", 2) => Op::Drop { table: parse_table(f[1]).map_err(err)? },
            ("commit", 1) => Op::Commit,
            _ => return Err(err(format!("bad line {line:?}"))),
        };
        out.push(op);
    }
    Ok(out)
}

/// Apply a script with libmdbx. Returns the number of transactions committed.
/// A `del` that matches nothing is not an error.
pub fn apply_oracle(env: &oracle::Env, ops: &[Op]) -> oracle::Result<usize> {
    let mut dbis: HashMap<Option<Vec<u8>>, oracle::Dbi> = HashMap::new();
    let mut txn = Some(env.begin_rw()?);
    let mut pending = false;
    let mut commits = 0;
    for op in ops {
        let t = match txn.as_mut() {
            Some(t) => t,
            None => txn.insert(env.begin_rw()?),
        };
        let mut dbi_of = |t: &mut oracle::Txn<'_>, table: &Option<Vec<u8>>| -> oracle::Result<oracle::Dbi> {
            if let Some(d) = dbis.get(table) {
                return Ok(*d);
            }
            let d = t.open_table(table.as_deref())?;
            dbis.insert(table.clone(), d);
            Ok(d)
        };
        match op {
            Op::Create { table, flags } => {
                let d = t.create_table(table.as_deref(), *flags)?;
                dbis.insert(table.clone(), d);
            }
            Op::Put { table, key, value, flags } => {
                let d = dbi_of(t, table)?;
                t.put(d, key, value, *flags)?;
            }
            Op::Del { table, key, value } => {
                let d = dbi_of(t, table)?;
                t.del(d, key, value.as_deref())?;
            }
            Op::Clear { table } => {
                let d = dbi_of(t, table)?;
                t.drop_table(d, false)?;
            }
            Op::Drop { table } => {
                let d = dbi_of(t, table)?;
                t.drop_table(d, true)?;
                dbis.remove(table);
            }
            Op::Commit => {
                txn.take().expect("txn").commit()?;
                commits += 1;
                pending = false;
                continue;
            }
        }
        pending = true;
    }
    if let Some(t) = txn.take() {
        if pending {
            t.commit()?;
            commits += 1;
        } else {
            t.abort();
        }
    }
    Ok(commits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_round_trip() {
        let ops = vec![
            Op::Create { table: Some(b"t".to_vec()), flags: 0x08 },
            Op::Put { table: None, key: vec![], value: vec![], flags: 0 },
            Op::Put { table: Some(b"t".to_vec()), key: vec![1, 2, 3, 4], value: vec![0xff], flags: 0x10 },
            Op::Del { table: Some(b"t".to_vec()), key: vec![1, 2, 3, 4], value: Some(vec![]) },
            Op::Del { table: None, key: vec![9], value: None },
            Op::Commit,
            Op::Clear { table: Some(b"t".to_vec()) },
            Op::Drop { table: Some(b"t".to_vec()) },
        ];
        let text = format_ops(&ops);
        assert_eq!(parse_ops(&text).unwrap(), ops);
    }
}
