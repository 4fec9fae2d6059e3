//! What the commands read through: one trait over read-only and write
//! transactions (so reads inside `begin ... commit` see the pending changes),
//! and finding a table by name with what is needed to read its keys.

use rdbx::{Db, DbFlags};

use crate::values::{render, IntWidth, ItemKind};

/// The read methods shared by every transaction kind (the engine's trait:
/// reads inside `begin ... commit` see the pending changes).
pub use rdbx::ReadTxn;

/// The pseudo name of the main (unnamed) table.
pub const MAIN: &str = "@MAIN";

/// A table name as people see it: `@MAIN`, or the name in quotes.
pub fn label(name: Option<&[u8]>) -> String {
    match name {
        None => MAIN.to_string(),
        Some(n) => format!("'{}'", render(n)),
    }
}

/// The name a word stands for: `None` for `@MAIN`.
pub fn table_name(w: &crate::values::Word) -> Result<Option<Vec<u8>>, String> {
    if w.is(MAIN) {
        return Ok(None);
    }
    let b = crate::values::parse_bytes(w)?;
    if b.is_empty() {
        return Err("a table name cannot be empty".into());
    }
    Ok(Some(b))
}

/// An open table and how to read and show its items.
#[derive(Debug, Clone)]
pub struct TableRef {
    pub db: Db,
    pub name: Option<Vec<u8>>,
    pub flags: DbFlags,
}

impl TableRef {
    pub fn label(&self) -> String {
        label(self.name.as_deref())
    }
    pub fn key_kind(&self) -> ItemKind {
        ItemKind::of_keys(self.flags)
    }
    pub fn value_kind(&self) -> ItemKind {
        ItemKind::of_values(self.flags)
    }
    pub fn dupsort(&self) -> bool {
        self.flags.contains(DbFlags::DUP_SORT)
    }
}

/// Opens table `name` (`None`: the main table).
pub fn open_table(r: &dyn ReadTxn, name: Option<&[u8]>) -> Result<TableRef, String> {
    let db = r.open_db_bytes(name).map_err(|e| match e {
        rdbx::Error::NotFound => missing_table(name),
        rdbx::Error::Incompatible(_) => {
            format!("{} is a plain record of the main table, not a table", label(name))
        }
        e => format!("table {}: {e}", label(name)),
    })?;
    let flags = r.db_flags(db).map_err(|e| format!("table {}: {e}", label(name)))?;
    Ok(TableRef { db, name: name.map(<[u8]>::to_vec), flags })
}

/// The error for a table that does not exist.
pub fn missing_table(name: Option<&[u8]>) -> String {
    let shown = label(name);
    format!("no table named {shown} ('tables' lists them; 'create {}' makes one)", name.map(render).unwrap_or_default())
}

/// Width of the integer keys of an INTEGER_KEY table (None for other tables).
pub fn key_width(r: &dyn ReadTxn, t: &TableRef) -> rdbx::Result<Option<IntWidth>> {
    if !t.flags.contains(DbFlags::INTEGER_KEY) {
        return Ok(None);
    }
    let mut c = r.cursor(t.db)?;
    Ok(Some(match c.first()? {
        Some((k, _)) if k.len() == 4 => IntWidth::Four,
        _ => IntWidth::Eight,
    }))
}

/// Width of the integer values of an INTEGER_DUP table (None for other tables).
pub fn value_width(r: &dyn ReadTxn, t: &TableRef) -> rdbx::Result<Option<IntWidth>> {
    if !t.flags.contains(DbFlags::INTEGER_DUP) {
        return Ok(None);
    }
    let mut c = r.cursor(t.db)?;
    Ok(Some(match c.first()? {
        Some((_, v)) if v.len() == 4 => IntWidth::Four,
        _ => IntWidth::Eight,
    }))
}
