//! Rules 3 and 4 of [`read_text`](super::read_text): Markdown tables, and TSV or CSV, as records
//! keyed by their column names.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{TextKind, TextRecords};

/// Rule 3: the first Markdown table of `text` (a header row, a separator row of `---` cells as
/// many as the header's, one or more body rows; every row holding a `|`), when its lines are at
/// least half of the non-empty lines. Each body row is an object of its cells by column: a
/// missing cell is `""`, an extra one is keyed `column_N`. The non-blank lines around the table
/// are its `rest`.
pub(super) fn markdown(text: &str) -> Option<TextRecords> {
    let lines: Vec<&str> = text.lines().collect();
    let non_empty = lines.iter().filter(|l| !l.trim().is_empty()).count();
    // The separator is checked first: it is the rare line, and the cheap test.
    let header = lines.windows(3).position(|w| {
        w[0].contains('|') && w[2].contains('|') && separator_width(w[1]).is_some_and(|n| n == cells(w[0]).len())
    })?;
    let body = header + 2;
    let end = body
        + lines
            .get(body..)?
            .iter()
            .take_while(|l| l.contains('|') && !l.trim().is_empty())
            .count();
    if (end - header) * 2 < non_empty {
        return None;
    }
    let mut names = Names::default();
    let columns: Vec<String> = cells(lines.get(header)?)
        .iter()
        .enumerate()
        .map(|(k, name)| names.add(name, k))
        .collect();
    // Keys of cells beyond the header's, by position, named once for every row.
    let mut extra: Vec<String> = Vec::new();
    let mut records = Vec::with_capacity(end - body);
    for line in lines.get(body..end)? {
        let row = cells(line);
        while columns.len() + extra.len() < row.len() {
            let position = columns.len() + extra.len();
            extra.push(names.add("", position));
        }
        let mut record = Map::new();
        let mut row = row.into_iter();
        for column in &columns {
            record.insert(column.clone(), Value::String(row.next().unwrap_or_default()));
        }
        for (column, cell) in extra.iter().zip(row) {
            record.insert(column.clone(), Value::String(cell));
        }
        records.push(Value::Object(record).to_string());
    }
    let rest = lines
        .iter()
        .enumerate()
        .filter(|&(i, l)| (i < header || i >= end) && !l.trim().is_empty())
        .map(|(i, l)| (i + 1, (*l).to_owned()))
        .collect();
    Some(TextRecords {
        columns,
        rest,
        ..TextRecords::new(TextKind::Markdown, records)
    })
}

/// The cells of a table row, trimmed, with `\|` read as `|`.
fn cells(line: &str) -> Vec<String> {
    let mut row = line.trim();
    row = row.strip_prefix('|').unwrap_or(row);
    if !row.ends_with("\\|") {
        row = row.strip_suffix('|').unwrap_or(row);
    }
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => {
                cells.push(cell.trim().to_owned());
                cell.clear();
            }
            _ => cell.push(c),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// How many cells the separator row `line` has (`| --- | :-: |`); `None` when it is not one.
fn separator_width(line: &str) -> Option<usize> {
    if !line.contains('|') {
        return None;
    }
    let cells = cells(line);
    cells
        .iter()
        .all(|c| {
            let c = c.strip_prefix(':').unwrap_or(c);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.bytes().all(|b| b == b'-')
        })
        .then_some(cells.len())
}

/// Column names made unique, in order.
#[derive(Default)]
struct Names {
    used: HashSet<String>,
    /// The next suffix to try for a name, so that many copies of one name cost one probe each.
    next: HashMap<String, usize>,
}

impl Names {
    /// `name` (`column_N` when empty, N being `position` + 1), suffixed `_2`, `_3`, ... when taken.
    fn add(&mut self, name: &str, position: usize) -> String {
        let base = if name.is_empty() {
            format!("column_{}", position + 1)
        } else {
            name.to_owned()
        };
        if self.used.insert(base.clone()) {
            return base;
        }
        let next = self.next.entry(base.clone()).or_insert(2);
        loop {
            let candidate = format!("{base}_{next}");
            *next += 1;
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

// CSV and TSV

/// Rule 4: the column names and records of `text` read as RFC 4180 rows delimited by
/// `delimiter`, when the header has at least 2 names, each non-empty once trimmed and at most 100
/// characters, and at least 2 data rows follow, each exactly as wide as the header. Blank lines
/// before the header and after the last row are not rows. Fields stay as in the file, unquoted
/// but not trimmed.
pub(super) fn delimited(text: &str, delimiter: u8) -> Option<(Vec<String>, Vec<String>)> {
    let b = text.as_bytes();
    // From the start of the first non-blank line to the end of the last one: blank lines around
    // the rows are not rows, but a last row's trailing delimiters are fields.
    let first = text.len() - text.trim_start().len();
    let start = b.get(..first)?.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    let last = text.trim_end().len();
    let end = b
        .get(last..)?
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(b.len(), |p| last + p);
    if start >= end {
        return None;
    }
    let mut rows = Rows {
        s: text.get(start..end)?,
        i: 0,
        delimiter,
    };
    let mut fields = Vec::new();
    rows.next(&mut fields)?;
    let header_ok = fields.len() >= 2
        && fields.iter().all(|f| {
            let name = f.trim();
            !name.is_empty() && name.chars().count() <= 100
        });
    if !header_ok {
        return None;
    }
    let header = std::mem::take(&mut fields);
    // Naming the columns waits for a row as wide as the header: a long line of commas alone
    // would otherwise cost a name per field.
    if rows.i >= rows.s.len() {
        return None;
    }
    rows.next(&mut fields)?;
    if fields.len() != header.len() {
        return None;
    }
    let mut names = Names::default();
    let columns: Vec<String> = header.iter().enumerate().map(|(k, f)| names.add(f.trim(), k)).collect();
    let mut records = Vec::new();
    loop {
        let record: Map<String, Value> = columns
            .iter()
            .cloned()
            .zip(fields.drain(..).map(Value::String))
            .collect();
        records.push(Value::Object(record).to_string());
        if rows.i >= rows.s.len() {
            break;
        }
        rows.next(&mut fields)?;
        if fields.len() != columns.len() {
            return None;
        }
    }
    (records.len() >= 2).then_some((columns, records))
}

/// An RFC 4180 reader of delimited rows.
struct Rows<'a> {
    s: &'a str,
    i: usize,
    delimiter: u8,
}

impl Rows<'_> {
    /// Reads the row at the current position into `fields`; `None` when a quoted field is not
    /// closed, or is followed by anything but a delimiter or a line break.
    fn next(&mut self, fields: &mut Vec<String>) -> Option<()> {
        let b = self.s.as_bytes();
        let d = self.delimiter;
        fields.clear();
        loop {
            if b.get(self.i) == Some(&b'"') {
                self.i += 1;
                let mut field = String::new();
                loop {
                    let close = self.i + memchr::memchr(b'"', b.get(self.i..)?)?;
                    field.push_str(self.s.get(self.i..close)?);
                    self.i = close + 1;
                    if b.get(self.i) == Some(&b'"') {
                        field.push('"');
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                fields.push(field);
                match b.get(self.i) {
                    None => return Some(()),
                    Some(&c) if c == d => self.i += 1,
                    Some(b'\n') => {
                        self.i += 1;
                        return Some(());
                    }
                    Some(b'\r') if b.get(self.i + 1) == Some(&b'\n') => {
                        self.i += 2;
                        return Some(());
                    }
                    Some(_) => return None,
                }
            } else {
                let start = self.i;
                let stop = memchr::memchr2(d, b'\n', b.get(start..)?).map_or(b.len(), |p| start + p);
                self.i = stop;
                let at_delimiter = b.get(stop) == Some(&d);
                let mut end = stop;
                if !at_delimiter && end > start && b.get(end - 1) == Some(&b'\r') {
                    end -= 1;
                }
                fields.push(self.s.get(start..end)?.to_owned());
                self.i += 1;
                if !at_delimiter {
                    return Some(());
                }
            }
        }
    }
}
