//! Tables: tables, use, create, drop, stat.

use rdbx::DbFlags;

use super::{table_cell, Action, Ctx, Result};
use crate::access::{self, label, open_table};
use crate::output::Cell;
use crate::spec::Invocation;
use crate::values::{flag_by_name, flag_words, ItemKind, FLAG_NAMES};

pub fn tables(cx: &mut Ctx<'_, '_>) -> Result<Action> {
    cx.read(|s, r, _| {
        let names = r.table_names()?;
        let mut l = s.out.listing(&["name", "flags", "records", "depth", "pages"], 1000);
        for n in &names {
            let row = match open_table(r, Some(n))
                .and_then(|t| r.db_stat(t.db).map(|st| (t, st)).map_err(|e| e.to_string()))
            {
                Ok((t, st)) => [
                    Cell::item(n, ItemKind::Bytes),
                    Cell::text(flag_words(t.flags)),
                    Cell::Int(st.entries),
                    Cell::Int(st.depth as u64),
                    Cell::Int(st.branch_pages + st.leaf_pages + st.overflow_pages),
                ],
                Err(e) => [
                    Cell::item(n, ItemKind::Bytes),
                    Cell::text(format!("(cannot open: {e})")),
                    Cell::Absent,
                    Cell::Absent,
                    Cell::Absent,
                ],
            };
            l.push(&row)?;
        }
        l.flush()?;
        drop(l);
        if names.is_empty() {
            let main = r.db_stat(rdbx::Db::MAIN)?.entries;
            s.out.footer(&format!("no named tables; the main table (@MAIN) holds {main} record(s)"))?;
        } else {
            s.out.footer(&format!("{} table(s)", names.len()))?;
        }
        Ok(Action::Done)
    })
}

pub fn use_table(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = match inv.arg(0) {
        None => None,
        Some(w) => access::table_name(w)?,
    };
    if let Some(n) = &name {
        cx.read(|_, r, _| open_table(r, Some(n)).map(|_| ()).map_err(Into::into))?;
    }
    cx.s.table = name;
    Ok(Action::Done)
}

pub fn create(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let w = inv.arg(0).ok_or("create needs a TABLE name")?;
    let Some(name) = access::table_name(w)? else {
        return Err("@MAIN is the main table: it always exists".into());
    };
    let mut flags = DbFlags::empty();
    for (f, _) in FLAG_NAMES {
        if inv.flag(f) {
            flags |= flag_by_name(f).unwrap_or_default();
        }
    }
    if !flags.is_valid_persistent() {
        return Err("these flags do not go together: --dupfixed, --integerdup and --reversedup need --dupsort, \
                    --integerdup needs --dupfixed, and --integerkey excludes --reversekey"
            .into());
    }
    let shown = label(Some(&name));
    let msg = cx.write(|_, txn| {
        match txn.open_db_bytes(Some(&name)) {
            Ok(db) => {
                let f = txn.db_flags(db)?;
                return Err(format!("table {shown} already exists (flags: {})", flag_words(f)).into());
            }
            Err(rdbx::Error::NotFound) => {}
            Err(rdbx::Error::Incompatible(_)) => {
                return Err(format!("the main table has a plain record named {shown}; pick another name").into())
            }
            Err(e) => return Err(e.into()),
        }
        txn.create_db_bytes(Some(&name), flags | DbFlags::CREATE)?;
        Ok(if flags.is_empty() {
            format!("created table {shown}")
        } else {
            format!("created table {shown} ({})", flag_words(flags))
        })
    })?;
    cx.s.note(&msg)?;
    Ok(Action::Done)
}

pub fn drop_table(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let w = inv.arg(0).ok_or("drop needs a TABLE name")?;
    let Some(name) = access::table_name(w)? else {
        return Err("the main table cannot be dropped (drop the named tables one by one)".into());
    };
    let empty = inv.flag("empty");
    let shown = label(Some(&name));
    let entries = cx.read(|_, r, _| {
        let t = open_table(r, Some(&name))?;
        Ok(r.db_stat(t.db)?.entries)
    })?;
    if cx.src.interactive() && !inv.flag("yes") {
        let q = if empty {
            format!("delete the {entries} record(s) of table {shown}?")
        } else {
            format!("drop table {shown} and its {entries} record(s)?")
        };
        if !cx.src.confirm(&q) {
            cx.s.note("nothing was changed")?;
            return Ok(Action::Done);
        }
    }
    cx.write(|_, txn| {
        let db = txn.open_db_bytes(Some(&name))?;
        if empty {
            txn.clear_db(db)?;
        } else {
            txn.drop_db(db)?;
        }
        Ok(())
    })?;
    if empty {
        cx.s.note(&format!("deleted the {entries} record(s) of table {shown}"))?;
    } else {
        cx.s.note(&format!("dropped table {shown} ({entries} record(s))"))?;
        if cx.s.table.as_deref() == Some(&name[..]) {
            cx.s.table = None;
            cx.s.note("the current table is now @MAIN")?;
        }
    }
    Ok(Action::Done)
}

pub fn stat(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = match inv.arg(0) {
        Some(w) => access::table_name(w)?,
        None => cx.s.table.clone(),
    };
    cx.read(|s, r, _| {
        let t = open_table(r, name.as_deref())?;
        let st = r.db_stat(t.db)?;
        let seq = r.db_sequence(t.db)?;
        s.out.record(&[
            ("table", table_cell(t.name.as_deref())),
            ("flags", Cell::text(flag_words(t.flags))),
            ("page_size", Cell::Int(st.page_size as u64)),
            ("depth", Cell::Int(st.depth as u64)),
            ("branch_pages", Cell::Int(st.branch_pages)),
            ("leaf_pages", Cell::Int(st.leaf_pages)),
            ("large_pages", Cell::Int(st.overflow_pages)),
            ("records", Cell::Int(st.entries)),
            ("mod_txnid", Cell::Int(st.mod_txnid)),
            ("sequence", Cell::Int(seq)),
        ])?;
        Ok(Action::Done)
    })
}
