//! Operations commands (issue 14): checksum, diff, meta, page, space — the
//! engine's library calls shown in the shell's formats (the same numbers as
//! the `rdbx-tools` subcommands of the same names).

use super::{table_cell, Action, Ctx, Fail, Result};
use crate::access::{self, ReadTxn};
use crate::output::Cell;
use crate::spec::Invocation;
use crate::values::parse_item;

/// An interrupted library call, or its error in words.
fn engine(e: rdbx::Error, interrupted: bool) -> Fail {
    match e {
        rdbx::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted || interrupted => "interrupted".into(),
        e => e.into(),
    }
}

/// The `--from` and `--to` keys.
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// `--from` / `--to` of a command: keys in the table's key format.
fn range_keys(r: &dyn ReadTxn, table: Option<&[u8]>, inv: &Invocation) -> Result<KeyRange> {
    let t = access::open_table(r, table)?;
    let width = access::key_width(r, &t)?;
    let key = |name: &str| -> Result<Option<Vec<u8>>> {
        inv.value(name).map(|w| parse_item(w, width).map_err(Fail::from)).transpose()
    };
    Ok((key("from")?, key("to")?))
}

pub fn checksum(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let table = match inv.value("table") {
        Some(w) => Some(access::table_name(w)?),
        None => None,
    };
    let interrupt = cx.s.interrupt.clone();
    let sums = cx.read(|_, r, _| {
        let (from, to) = match &table {
            Some(t) => range_keys(r, t.as_deref(), inv)?,
            None if inv.value("from").is_some() || inv.value("to").is_some() => {
                let (f, t) = (inv.value("from"), inv.value("to"));
                let b = |w: Option<&crate::values::Word>| w.map(crate::values::parse_bytes).transpose();
                (b(f)?, b(t)?)
            }
            None => (None, None),
        };
        if let Some(t) = &table {
            access::open_table(r, t.as_deref())?;
        }
        let opts = rdbx::ChecksumOptions {
            tables: table.clone().into_iter().collect(),
            from,
            to,
            interrupt: Some(interrupt.clone()),
        };
        rdbx::checksums(r, &opts).map_err(|e| engine(e, interrupt.load(std::sync::atomic::Ordering::Relaxed)))
    })?;
    let mut l = cx.s.out.listing(&["table", "records", "flags", "sha256"], 1000);
    for t in &sums.tables {
        l.push(&[
            table_cell(t.name.as_deref()),
            Cell::Int(t.records),
            Cell::text(crate::values::flag_words(t.flags)),
            Cell::text(t.hex()),
        ])?;
    }
    l.flush()?;
    drop(l);
    cx.s.out.footer(&format!("database sha256 {} ({} tables, txn {})", sums.hex(), sums.tables.len(), sums.txnid))?;
    Ok(Action::Done)
}
