//! Output formats: boxed tables for people (comfy-table), one JSON object per
//! line for machines (serde_json), raw bytes, and hex. Commands hand over
//! cells and rows; this module decides how they look. Listings stream: rows
//! are written as they come (tables in batches), never collected whole.

use std::io::{self, Write};

use comfy_table::{modifiers, presets, ContentArrangement, Table};
use serde_json::Value;

use crate::pager::ScreenPager;
use crate::values::{as_integer, hex, render_item, render_short, ItemKind};

/// How results are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Boxed tables; printable bytes as text, others as hex.
    #[default]
    Table,
    /// One JSON object per line.
    Json,
    /// Bytes as stored, fields separated by a tab, one record per line.
    Raw,
    /// Keys and values as `0x` hex, fields separated by a tab.
    Hex,
    /// Comma-separated values (RFC 4180), a header line first.
    Csv,
}

impl Format {
    pub const NAMES: [&'static str; 5] = ["table", "json", "csv", "raw", "hex"];

    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "table" | "box" => Some(Format::Table),
            "json" | "jsonl" | "ndjson" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "raw" => Some(Format::Raw),
            "hex" => Some(Format::Hex),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Raw => "raw",
            Format::Hex => "hex",
        }
    }
}

/// How keys (or values) are shown in the table and csv formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemMode {
    /// Printable text as text, anything else as hex; integers of integer
    /// tables as numbers.
    #[default]
    Auto,
    /// Always text: bytes that are not printable UTF-8 as `\xNN` escapes.
    Text,
    /// Always `0x` hex.
    Hex,
}

impl ItemMode {
    pub const NAMES: [&'static str; 3] = ["auto", "text", "hex"];

    pub fn parse(s: &str) -> Option<ItemMode> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Some(ItemMode::Auto),
            "text" => Some(ItemMode::Text),
            "hex" => Some(ItemMode::Hex),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ItemMode::Auto => "auto",
            ItemMode::Text => "text",
            ItemMode::Hex => "hex",
        }
    }

    /// `cell` as this mode shows it.
    fn apply(self, cell: &Cell) -> Cell {
        match (self, cell) {
            (ItemMode::Hex, Cell::Item(b, _)) => Cell::Text(format!("0x{}", hex(b))),
            (ItemMode::Text, Cell::Item(b, _)) => Cell::Text(escaped_text(b)),
            _ => cell.clone(),
        }
    }
}

/// Bytes as text: printable UTF-8 as is, other bytes as `\xNN`.
fn escaped_text(b: &[u8]) -> String {
    let mut s = String::new();
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                let mut buf = [0u8; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    s.push_str(&format!("\\x{byte:02x}"));
                }
            } else {
                s.push(c);
            }
        }
        for byte in chunk.invalid() {
            s.push_str(&format!("\\x{byte:02x}"));
        }
    }
    s
}

/// A CSV field: quoted when it holds a comma, a quote, a line break or
/// leading/trailing space (quotes doubled).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A CSV line of `fields`.
fn csv_line(fields: impl IntoIterator<Item = String>) -> String {
    let mut line = fields.into_iter().map(|f| csv_field(&f)).collect::<Vec<_>>().join(",");
    line.push_str("\r\n");
    line
}

/// A JSON object whose fields keep their order.
#[derive(Default)]
struct Obj(Vec<(String, Value)>);

impl Obj {
    fn insert(&mut self, k: String, v: Value) {
        self.0.push((k, v));
    }
}

/// One field of a result.
#[derive(Debug, Clone)]
pub enum Cell {
    /// A stored key or value.
    Item(Vec<u8>, ItemKind),
    /// A count or id.
    Int(u64),
    /// A number of bytes (shown with its unit to people).
    Size(u64),
    /// Words for people (names, flags, states).
    Text(String),
    /// Yes or no (JSON true/false).
    Bool(bool),
    /// A table: `None` is the main table (`@MAIN`; JSON null and null hex).
    Table(Option<Vec<u8>>),
    /// Nothing (shown as `-`, JSON null).
    Absent,
}

impl Cell {
    pub fn item(b: &[u8], kind: ItemKind) -> Cell {
        Cell::Item(b.to_vec(), kind)
    }
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    pub fn opt(n: Option<u64>) -> Cell {
        n.map_or(Cell::Absent, Cell::Int)
    }

    /// For a table cell (`max`: shorten long items to about that many characters).
    fn for_table(&self, max: Option<usize>) -> String {
        match self {
            Cell::Item(b, k) => match max {
                Some(m) => render_short(b, *k, m),
                None => render_item(b, *k),
            },
            Cell::Int(n) => n.to_string(),
            Cell::Size(n) => crate::values::human_size(*n),
            Cell::Text(s) => s.clone(),
            Cell::Bool(b) => b.to_string(),
            Cell::Table(None) => crate::access::MAIN.into(),
            Cell::Table(Some(n)) => render_item(n, ItemKind::Bytes),
            Cell::Absent => "-".into(),
        }
    }

    /// Bytes for raw output.
    fn raw(&self) -> Vec<u8> {
        match self {
            Cell::Item(b, _) => b.clone(),
            Cell::Size(n) => n.to_string().into_bytes(),
            other => other.for_table(None).into_bytes(),
        }
    }

    /// Text for CSV output: items as people see them, numbers plain.
    fn csv(&self) -> String {
        match self {
            Cell::Item(b, k) => render_item(b, *k),
            Cell::Size(n) => n.to_string(),
            Cell::Absent => String::new(),
            other => other.for_table(None),
        }
    }

    /// Text for hex output.
    fn hex(&self) -> String {
        match self {
            Cell::Item(b, _) => format!("0x{}", hex(b)),
            Cell::Size(n) => n.to_string(),
            other => other.for_table(None),
        }
    }

    /// Adds `name: value` to a JSON object. An item is always two fields,
    /// whatever its bytes (one schema per command): `name` (the number of an
    /// integer item, the text of UTF-8 text, else null) and `name_hex`.
    fn to_json(&self, name: &str, obj: &mut Obj) {
        match self {
            Cell::Item(b, kind) => {
                let v = match (kind, as_integer(b)) {
                    (ItemKind::Integer, Some(n)) => Value::from(n),
                    _ => json_text(b).map_or(Value::Null, Value::from),
                };
                obj.insert(name.into(), v);
                obj.insert(format!("{name}_hex"), Value::from(hex(b)));
            }
            Cell::Int(n) | Cell::Size(n) => {
                obj.insert(name.into(), Value::from(*n));
            }
            Cell::Text(s) => {
                obj.insert(name.into(), Value::from(s.as_str()));
            }
            Cell::Bool(b) => {
                obj.insert(name.into(), Value::from(*b));
            }
            Cell::Table(Some(n)) => Cell::Item(n.clone(), ItemKind::Bytes).to_json(name, obj),
            Cell::Table(None) => {
                obj.insert(name.into(), Value::Null);
                obj.insert(format!("{name}_hex"), Value::Null);
            }
            Cell::Absent => {
                obj.insert(name.into(), Value::Null);
            }
        }
    }
}

/// Bytes that read as text: UTF-8 without control characters other than
/// line breaks and tabs.
fn json_text(b: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(b).ok()?;
    s.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t')).then_some(s)
}

/// Characters a table cell of a listing shows before it is shortened.
pub const CELL_CHARS: usize = 120;

/// Where output goes: the writer, through the screen pager when there is
/// one, or held in memory (see [`Out::hold`]).
struct Sink {
    inner: Box<dyn Write>,
    pager: Option<ScreenPager>,
    held: Option<Vec<u8>>,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match (&mut self.held, &mut self.pager) {
            (Some(h), _) => h.extend_from_slice(buf),
            (None, Some(p)) => p.write(&mut self.inner, buf)?,
            (None, None) => return self.inner.write(buf),
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The output of a session: standard output in the chosen format.
pub struct Out {
    w: Sink,
    pub format: Format,
    /// Leave out confirmations of writes and other status lines.
    pub quiet: bool,
    /// Terminal width tables are fitted to (None: tables are not wrapped).
    pub width: Option<u16>,
    /// Column names above listings (table and csv formats).
    pub headers: bool,
    /// How keys are shown (table and csv formats).
    pub key_mode: ItemMode,
    /// How values are shown (table and csv formats).
    pub value_mode: ItemMode,
}

impl Out {
    pub fn new(w: Box<dyn Write>, format: Format) -> Out {
        Out {
            w: Sink { inner: w, pager: None, held: None },
            format,
            quiet: false,
            width: None,
            headers: true,
            key_mode: ItemMode::Auto,
            value_mode: ItemMode::Auto,
        }
    }

    /// `cell` of the field `name` as the key and value modes show it (table
    /// and csv formats; the other formats have fixed encodings).
    fn shown(&self, name: &str, cell: &Cell) -> Cell {
        if !matches!(self.format, Format::Table | Format::Csv) {
            return cell.clone();
        }
        match name {
            "key" | "from" | "to" => self.key_mode.apply(cell),
            "value" | "old" | "new" => self.value_mode.apply(cell),
            _ => cell.clone(),
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Pages what follows by screen lines (`None`: no pager), starting a
    /// new screenful.
    pub fn set_pager(&mut self, pager: Option<ScreenPager>) {
        self.w.pager = pager;
    }

    /// Whether output goes through the screen pager.
    pub fn paging(&self) -> bool {
        self.w.pager.is_some()
    }

    /// Keeps what is written in memory until [`Out::release`] (so that no
    /// snapshot is held while the pager waits for a key).
    pub fn hold(&mut self) {
        self.w.held.get_or_insert_with(Vec::new);
    }

    /// Writes what was held, through the pager. Returns false when the
    /// pager was told to stop (q): the rest of the command's output is dropped.
    pub fn release(&mut self) -> io::Result<bool> {
        if let Some(h) = self.w.held.take() {
            self.w.write_all(&h)?;
        }
        self.w.flush()?;
        Ok(!self.w.pager.as_ref().is_some_and(|p| p.quit))
    }

    fn table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED).apply_modifier(modifiers::UTF8_ROUND_CORNERS);
        match self.width.filter(|w| *w >= 20) {
            Some(w) => t.set_content_arrangement(ContentArrangement::Dynamic).set_width(w),
            None => t.force_no_tty().set_content_arrangement(ContentArrangement::Disabled),
        };
        t
    }

    fn json_line(&mut self, obj: Obj) -> io::Result<()> {
        let mut s = String::from("{");
        for (i, (k, v)) in obj.0.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&Value::from(k.as_str()).to_string());
            s.push(':');
            s.push_str(&v.to_string());
        }
        s.push('}');
        writeln!(self.w, "{s}")
    }

    /// A status line for people ("loaded 5 records..."): on standard error,
    /// so that standard output holds only data in every format.
    pub fn message(&mut self, text: &str) -> io::Result<()> {
        if self.quiet {
            return Ok(());
        }
        self.w.flush()?;
        let mut err = io::stderr().lock();
        writeln!(err, "{text}")
    }

    /// Text written as is, whatever the format (help, dumps).
    pub fn text(&mut self, text: &str) -> io::Result<()> {
        self.w.write_all(text.as_bytes())
    }

    /// A writer for output that has its own format (dumps).
    pub fn writer(&mut self) -> &mut dyn Write {
        &mut self.w
    }

    /// One value on its own: a table shows just the value, JSON an object
    /// with `fields` (context such as the key) and the value under `name`.
    pub fn value(&mut self, fields: &[(&str, Cell)], name: &str, value: &Cell) -> io::Result<()> {
        let value = &self.shown(name, value);
        match self.format {
            Format::Table => writeln!(self.w, "{}", value.for_table(None)),
            Format::Json => {
                let mut m = Obj::default();
                for (n, c) in fields {
                    c.to_json(n, &mut m);
                }
                value.to_json(name, &mut m);
                self.json_line(m)
            }
            Format::Raw => {
                self.w.write_all(&value.raw())?;
                self.w.write_all(b"\n")
            }
            Format::Hex => writeln!(self.w, "{}", value.hex()),
            Format::Csv => self.w.write_all(csv_line([value.csv()]).as_bytes()),
        }
    }

    /// A set of named fields (statistics): a two-column table, one JSON
    /// object, or `name: value` lines.
    pub fn record(&mut self, fields: &[(&str, Cell)]) -> io::Result<()> {
        match self.format {
            Format::Table => {
                let mut t = self.table();
                for (n, c) in fields {
                    t.add_row(vec![n.to_string(), c.for_table(None)]);
                }
                writeln!(self.w, "{t}")
            }
            Format::Json => {
                let mut m = Obj::default();
                for (n, c) in fields {
                    c.to_json(n, &mut m);
                }
                self.json_line(m)
            }
            Format::Csv => {
                let mut text = String::new();
                if self.headers {
                    text.push_str(&csv_line(["field".to_string(), "value".to_string()]));
                }
                for (n, c) in fields {
                    text.push_str(&csv_line([n.to_string(), c.csv()]));
                }
                self.w.write_all(text.as_bytes())
            }
            Format::Raw | Format::Hex => {
                for (n, c) in fields {
                    let v = if self.format == Format::Raw { c.raw() } else { c.hex().into_bytes() };
                    self.w.write_all(n.as_bytes())?;
                    self.w.write_all(b": ")?;
                    self.w.write_all(&v)?;
                    self.w.write_all(b"\n")?;
                }
                Ok(())
            }
        }
    }

    /// A trailing line for people after a listing (tables only).
    pub fn footer(&mut self, text: &str) -> io::Result<()> {
        if self.format == Format::Table && !self.quiet {
            writeln!(self.w, "{text}")?;
        }
        Ok(())
    }

    /// Starts a listing with these columns; table rows are shown in batches of
    /// `batch` (each batch one box).
    pub fn listing(&mut self, columns: &[&'static str], batch: usize) -> Listing<'_> {
        Listing { out: self, columns: columns.to_vec(), rows: Vec::new(), batch: batch.max(1), started: false }
    }
}

/// Rows being written (see [`Out::listing`]).
pub struct Listing<'o> {
    out: &'o mut Out,
    columns: Vec<&'static str>,
    rows: Vec<Vec<String>>,
    batch: usize,
    /// A row was written (CSV: the header line is out).
    started: bool,
}

impl Listing<'_> {
    /// Adds a row (as many cells as columns).
    pub fn push(&mut self, row: &[Cell]) -> io::Result<()> {
        let styled: Vec<Cell>;
        let row = if self.out.key_mode == ItemMode::Auto && self.out.value_mode == ItemMode::Auto {
            row
        } else {
            styled = self.columns.iter().zip(row).map(|(n, c)| self.out.shown(n, c)).collect();
            &styled
        };
        match self.out.format {
            Format::Table => {
                self.rows.push(row.iter().map(|c| c.for_table(Some(CELL_CHARS))).collect());
                if self.rows.len() >= self.batch {
                    self.flush()?;
                }
                Ok(())
            }
            Format::Json => {
                let mut m = Obj::default();
                for (n, c) in self.columns.iter().zip(row) {
                    c.to_json(n, &mut m);
                }
                self.out.json_line(m)
            }
            Format::Csv => {
                let mut text = String::new();
                if !self.started && self.out.headers {
                    text.push_str(&csv_line(self.columns.iter().map(|c| c.to_string())));
                }
                self.started = true;
                text.push_str(&csv_line(row.iter().map(Cell::csv)));
                self.out.w.write_all(text.as_bytes())
            }
            Format::Raw | Format::Hex => {
                let raw = self.out.format == Format::Raw;
                let mut line = Vec::new();
                for (i, c) in row.iter().enumerate() {
                    if i > 0 {
                        line.push(b'\t');
                    }
                    if raw {
                        line.extend_from_slice(&c.raw());
                    } else {
                        line.extend_from_slice(c.hex().as_bytes());
                    }
                }
                line.push(b'\n');
                self.out.w.write_all(&line)
            }
        }
    }

    /// Writes the rows held back (tables) and flushes.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.rows.is_empty() {
            let mut t = self.out.table();
            if self.out.headers {
                t.set_header(self.columns.clone());
            }
            for r in self.rows.drain(..) {
                t.add_row(r);
            }
            writeln!(self.out.w, "{t}")?;
        }
        self.out.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn run(format: Format, f: impl FnOnce(&mut Out)) -> String {
        let buf = Buf::default();
        let mut out = Out::new(Box::new(buf.clone()), format);
        f(&mut out);
        let v = buf.0.lock().unwrap().clone();
        String::from_utf8_lossy(&v).into_owned()
    }

    fn rows(out: &mut Out) {
        let mut l = out.listing(&["key", "value"], 100);
        l.push(&[Cell::item(b"a", ItemKind::Bytes), Cell::item(&[0, 0xff], ItemKind::Bytes)]).unwrap();
        l.push(&[Cell::item(&7u64.to_ne_bytes(), ItemKind::Integer), Cell::item(b"x y", ItemKind::Bytes)]).unwrap();
        l.flush().unwrap();
    }

    #[test]
    fn listing_formats() {
        // One schema: every item has its field (text, number or null) and its _hex.
        assert_eq!(run(Format::Json, rows), format!("{{\"key\":\"a\",\"key_hex\":\"61\",\"value\":null,\"value_hex\":\"00ff\"}}\n{{\"key\":7,\"key_hex\":\"{}\",\"value\":\"x y\",\"value_hex\":\"782079\"}}\n", hex(&7u64.to_ne_bytes())));
        assert_eq!(run(Format::Hex, rows), format!("0x61\t0x00ff\n0x{}\t0x782079\n", hex(&7u64.to_ne_bytes())));
        let raw = run(Format::Raw, rows);
        assert!(raw.starts_with("a\t\u{0}\u{fffd}\n"));
        let t = run(Format::Table, rows);
        assert!(t.contains("key") && t.contains("0x00ff") && t.contains("x y") && t.contains('7'), "{t}");
    }

    #[test]
    fn csv_and_headers() {
        assert_eq!(run(Format::Csv, rows), "key,value\r\na,0x00ff\r\n7,x y\r\n");
        let quoted = |o: &mut Out| {
            let mut l = o.listing(&["key", "value"], 10);
            l.push(&[Cell::item(b"a,b", ItemKind::Bytes), Cell::item(b"say \"hi\"", ItemKind::Bytes)]).unwrap();
            l.flush().unwrap();
        };
        assert_eq!(run(Format::Csv, quoted), "key,value\r\n\"a,b\",\"say \"\"hi\"\"\"\r\n");
        let bare = |o: &mut Out| {
            o.headers = false;
            rows(o);
        };
        assert_eq!(run(Format::Csv, bare), "a,0x00ff\r\n7,x y\r\n");
        assert!(!run(Format::Table, bare).contains("key"));
        let f = [("entries", Cell::Int(3)), ("txnid", Cell::Absent)];
        assert_eq!(run(Format::Csv, |o| o.record(&f).unwrap()), "field,value\r\nentries,3\r\ntxnid,\r\n");
    }

    #[test]
    fn key_and_value_modes() {
        let hex_keys = |o: &mut Out| {
            o.key_mode = ItemMode::Hex;
            o.value_mode = ItemMode::Text;
            rows(o);
        };
        assert_eq!(
            run(Format::Csv, hex_keys),
            format!("key,value\r\n0x61,\\x00\\xff\r\n0x{},x y\r\n", hex(&7u64.to_ne_bytes()))
        );
        // JSON keeps its schema whatever the modes.
        assert_eq!(run(Format::Json, hex_keys), run(Format::Json, rows));
    }

    #[test]
    fn values_and_records() {
        let v = Cell::item(b"red", ItemKind::Bytes);
        assert_eq!(run(Format::Table, |o| o.value(&[], "value", &v).unwrap()), "red\n");
        assert_eq!(
            run(Format::Json, |o| o.value(&[("key", Cell::text("k"))], "value", &v).unwrap()),
            "{\"key\":\"k\",\"value\":\"red\",\"value_hex\":\"726564\"}\n"
        );
        let f = [("entries", Cell::Int(3)), ("txnid", Cell::Absent)];
        assert_eq!(run(Format::Json, |o| o.record(&f).unwrap()), "{\"entries\":3,\"txnid\":null}\n");
        assert_eq!(run(Format::Raw, |o| o.record(&f).unwrap()), "entries: 3\ntxnid: -\n");
        assert_eq!(run(Format::Json, |o| o.message("ok").unwrap()), "", "status lines go to stderr");
    }
}
