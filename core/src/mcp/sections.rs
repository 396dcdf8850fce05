//! The generic profile's reading of the data: where its records are, split into sections (each
//! written to a file of its own by `generic`) and the small values kept inline.
//!
//! The shape rules (docs/FORMAT.md quotes them):
//! - A JSON array is one section, `results`: one element per line.
//! - A JSON object is walked from the top. A member that is a large array (at least
//!   [`SECTION_MIN_TOKENS`]) becomes a section named by its path (`items`, `data.rows`,
//!   `hits.hits`), one element per line; beside a `columns` array of names, an array of arrays
//!   (`rows`) is a table, each row a line keyed by the column names. A large object of at least
//!   [`KEYED_MIN_MEMBERS`] members of one kind, none holding half of it, is keyed by name
//!   (`{"src/a.rs": {...}, ...}`) and becomes a section of `{"key": ..., "value": ...}` lines (jq's
//!   `to_entries` form). Any other large object is walked into, [`MAX_WALK`] levels at most. Small
//!   values (`total`, `success`, cursors, `pageInfo`) stay inline in the descriptor under their
//!   path, up to [`INLINE_BUDGET`] tokens in all; everything else is a line of the `other`
//!   section, `{"key": path, "value": ...}`, so nothing is left out.
//! - Text is read for what it is (see `text`): a Python literal is walked as JSON; NDJSON, CSV,
//!   TSV, Markdown tables and blocks (`git log`) become one record per line, and anything else
//!   one line per line of text.
//! - Every value is written exactly as sent: elements and members are copied as text, only the
//!   whitespace between tokens removed.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::json;

use super::ToolSettings;
use super::sdk::Data;
use super::text::{TextKind, read_text};
use crate::estimate::Counts;
use crate::json_string;
use crate::json_text::raw::{Kind, elements, kind, members, minify};

/// The most sections one result is split into; beyond it, the smaller arrays join `other`.
const MAX_SECTIONS: usize = 4;
/// An array (or keyed object) of at least this many estimated tokens becomes a section.
pub(super) const SECTION_MIN_TOKENS: u32 = 100;
/// A keyed object has at least this many members.
const KEYED_MIN_MEMBERS: usize = 20;
/// How many levels of objects the walk goes into looking for records.
const MAX_WALK: usize = 8;
/// Values up to this size are kept in the descriptor, up to `INLINE_BUDGET` in all.
const INLINE_MAX_TOKENS: u32 = 40;
const INLINE_BUDGET: u32 = 150;
/// Descriptor keys an inline value may not take.
pub(super) const RESERVED: [&str; 9] = [
    "offloaded",
    "summary",
    "files",
    "schemas",
    "preview",
    "jq_recipes",
    "tokens",
    "guidance",
    "lro_warning",
];

/// One file's worth of the data.
pub(super) struct Section<'a> {
    /// Its name in the descriptor: its path in the data (`data.rows`), or `results` (the data
    /// is an array), `entries` (the data is keyed by name), `rows`, `records` or `lines` (text),
    /// `other` (the members no section took).
    pub(super) key: String,
    /// Its path in the original data as jq writes it (`.data.rows`, `.` for the data itself);
    /// none for text and for `other`.
    pub(super) path: Option<String>,
    /// How its lines were made: `elements`, `entries`, `table`, `other`, or the kind of text.
    pub(super) shape: &'static str,
    /// One compact JSON text per line of the file: borrowed from the data when it was compact.
    pub(super) lines: Vec<Cow<'a, str>>,
}

/// The data split up: what stays in the descriptor, and the sections.
pub(super) struct Split<'a> {
    /// Small values by path, as compact JSON text exactly as sent.
    pub(super) inline: Vec<(String, String)>,
    pub(super) sections: Vec<Section<'a>>,
    /// What the descriptor must warn about (a `sections` setting naming nothing).
    pub(super) warnings: Vec<String>,
}

impl Split<'_> {
    /// The same split, owning its lines.
    fn into_owned(self) -> Split<'static> {
        Split {
            inline: self.inline,
            sections: self
                .sections
                .into_iter()
                .map(|s| Section {
                    key: s.key,
                    path: s.path,
                    shape: s.shape,
                    lines: s.lines.into_iter().map(|l| Cow::Owned(l.into_owned())).collect(),
                })
                .collect(),
            warnings: self.warnings,
        }
    }
}

/// `[a-z0-9_]`, for file names and recipe names.
pub fn sanitize(name: &str, max: usize) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(max)
        .collect();
    if out.is_empty() {
        out.push('x');
    }
    out
}

/// A member's path below `prefix`: `data.rows`, `data["odd key"]`.
fn join(prefix: &str, key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (prefix.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{prefix}.{key}"),
        (_, false) => format!("{prefix}[{}]", json_string(key)),
    }
}

/// The jq path of a section path: `data.rows` → `.data.rows`, `["a b"]` → `.["a b"]`.
fn jq_path(path: &str) -> String {
    match path {
        "" => ".".into(),
        p if p.starts_with('[') => format!(".{p}"),
        p => format!(".{p}"),
    }
}

/// True when an object's members are records keyed by name: many of one kind, none dominant.
fn keyed(members: &[(String, &str)], size: usize) -> bool {
    if members.len() < KEYED_MIN_MEMBERS {
        return false;
    }
    let first = kind(members[0].1);
    let same = members.iter().filter(|(_, v)| kind(v) == first).count();
    same * 10 >= members.len() * 9 && members.iter().all(|(_, v)| v.len() * 2 <= size)
}

/// The names of a table's columns: the `columns` member, when it is an array of strings and
/// `rows` an array of arrays.
fn table_columns(members: &[(String, &str)]) -> Option<Vec<String>> {
    let get = |name: &str| members.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
    let rows = elements(get("rows")?)?;
    if rows.is_empty() || !rows.iter().all(|r| kind(r) == Kind::Array) {
        return None;
    }
    elements(get("columns")?)?
        .into_iter()
        .map(|c| {
            if kind(c) == Kind::String {
                serde_json::from_str(c).ok()
            } else {
                None
            }
        })
        .collect()
}

/// One row of a table as an object keyed by the column names (`column_N` past them).
fn table_row(columns: &[String], row: &str) -> String {
    let cells = elements(row).unwrap_or_default();
    let mut out = String::from("{");
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let name = columns.get(i).cloned().unwrap_or_else(|| format!("column_{}", i + 1));
        out.push_str(&json_string(&name));
        out.push(':');
        out.push_str(&minify(cell));
    }
    out.push('}');
    out
}

fn entry_line(key: &str, value: &str) -> String {
    format!("{{\"key\":{},\"value\":{}}}", json_string(key), minify(value))
}

/// The walk over an object, collecting sections, inline values and the rest.
struct Walk<'s, 'a> {
    chosen: Option<&'s [String]>,
    inline_keys: Option<&'s [String]>,
    inline: Vec<(String, String)>,
    inline_used: u32,
    /// Sections found, with their size.
    found: Vec<(Section<'a>, u32)>,
    /// The rest, by path, as compact text.
    other: Vec<(String, String)>,
}

impl<'a> Walk<'_, 'a> {
    fn visit(&mut self, raw: &'a str, prefix: &str, depth: usize) {
        let Some(members) = members(raw) else { return };
        let columns = table_columns(&members);
        for (key, value) in &members {
            let path = join(prefix, key);
            let size = Counts::of(value).tokens();
            // Inline, the path is shown too.
            let inline_size = size + Counts::of(&path).tokens() + 1;
            let value_kind = kind(value);
            let container = matches!(value_kind, Kind::Array | Kind::Object);
            let section = match self.chosen {
                Some(chosen) => container && chosen.contains(&path),
                None => container && size >= SECTION_MIN_TOKENS,
            };
            if section {
                match value_kind {
                    Kind::Array => {
                        let table = columns.as_ref().filter(|_| key == "rows");
                        let lines: Vec<Cow<'a, str>> = match table {
                            Some(columns) => elements(value)
                                .unwrap_or_default()
                                .into_iter()
                                .map(|row| Cow::Owned(table_row(columns, row)))
                                .collect(),
                            None => elements(value).unwrap_or_default().into_iter().map(minify).collect(),
                        };
                        let shape = if table.is_some() { "table" } else { "elements" };
                        self.found.push((section_at(&path, shape, lines), size));
                        continue;
                    }
                    _ => {
                        let inner = members_of(value);
                        let wanted = self.chosen.is_some();
                        if wanted || keyed(&inner, value.len()) {
                            let lines = inner.iter().map(|(k, v)| Cow::Owned(entry_line(k, v))).collect();
                            self.found.push((section_at(&path, "entries", lines), size));
                            continue;
                        }
                    }
                }
            }
            let walk_into = value_kind == Kind::Object
                && depth < MAX_WALK
                && match self.chosen {
                    Some(chosen) => chosen
                        .iter()
                        .any(|c| c.starts_with(&format!("{path}.")) || c.starts_with(&format!("{path}["))),
                    None => size >= SECTION_MIN_TOKENS,
                };
            if walk_into {
                self.visit(value, &path, depth + 1);
                continue;
            }
            self.leaf(path, value, inline_size);
        }
    }

    /// A value no section took: inline when small enough (`size` counts its path too).
    fn leaf(&mut self, path: String, value: &str, size: u32) {
        let inline = match self.inline_keys {
            Some(keys) => keys.contains(&path),
            None => size <= INLINE_MAX_TOKENS && self.inline_used + size <= INLINE_BUDGET,
        };
        if inline && !RESERVED.contains(&path.as_str()) {
            self.inline_used += size;
            self.inline.push((path, minify(value).into_owned()));
        } else {
            self.other.push((path, minify(value).into_owned()));
        }
    }
}

fn members_of(raw: &str) -> Vec<(String, &str)> {
    members(raw).unwrap_or_default()
}

fn section_at<'a>(path: &str, shape: &'static str, lines: Vec<Cow<'a, str>>) -> Section<'a> {
    Section {
        key: path.to_owned(),
        path: Some(jq_path(path)),
        shape,
        lines,
    }
}

/// Splits the data into inline values and sections.
pub(super) fn split<'a>(data: &'a Data<'_>, settings: Option<&ToolSettings>) -> Split<'a> {
    match data {
        Data::Json(raw) => split_json(raw, settings),
        Data::Text(text) => {
            let read = read_text(text);
            if read.kind == TextKind::Python {
                // The JSON is made here: its lines are owned.
                return split_json(&read.json, settings).into_owned();
            }
            let key = match read.kind {
                TextKind::Csv | TextKind::Tsv | TextKind::Markdown => "rows",
                TextKind::Ndjson | TextKind::Blocks => "records",
                _ => "lines",
            };
            let mut split = Split {
                inline: Vec::new(),
                sections: vec![Section {
                    key: key.into(),
                    path: None,
                    shape: read.kind.name(),
                    lines: read.records.into_iter().map(Cow::Owned).collect(),
                }],
                warnings: Vec::new(),
            };
            if !read.rest.is_empty() {
                let rest: Vec<&str> = read.rest.iter().map(|(_, l)| l.as_str()).collect();
                let joined = rest.join("\n");
                if Counts::of(&joined).tokens() <= INLINE_BUDGET {
                    split.inline.push(("text".into(), json_string(&joined)));
                } else {
                    split.sections.push(Section {
                        key: "lines".into(),
                        path: None,
                        shape: "lines",
                        lines: read
                            .rest
                            .iter()
                            .map(|(n, l)| Cow::Owned(json!({"n": n, "text": l}).to_string()))
                            .collect(),
                    });
                }
            }
            split
        }
    }
}

fn split_json<'a>(raw: &'a str, settings: Option<&ToolSettings>) -> Split<'a> {
    let chosen = settings.and_then(|s| s.sections.as_deref());
    let mut walk = Walk {
        chosen,
        inline_keys: settings.and_then(|s| s.inline_keys.as_deref()),
        inline: Vec::new(),
        inline_used: 0,
        found: Vec::new(),
        other: Vec::new(),
    };
    match kind(raw) {
        Kind::Object => {
            let top = members_of(raw);
            if chosen.is_none() && keyed(&top, raw.len()) {
                let lines = top.iter().map(|(k, v)| Cow::Owned(entry_line(k, v))).collect();
                let mut section = section_at("", "entries", lines);
                section.key = "entries".into();
                walk.found.push((section, 0));
            } else {
                walk.visit(raw, "", 0);
            }
        }
        Kind::Array => {
            let lines = elements(raw).unwrap_or_default().into_iter().map(minify).collect();
            let mut section = section_at("", "elements", lines);
            section.key = "results".into();
            walk.found.push((section, 0));
        }
        _ => walk.other.push((String::new(), minify(raw).into_owned())),
    }
    let mut warnings = Vec::new();
    if let Some(chosen) = chosen {
        for name in chosen {
            if !walk.found.iter().any(|(s, _)| &s.key == name) {
                warnings.push(format!(
                    "the `sections` setting names `{name}`, which this result does not have as an array or object; \
                     its data is in the sections listed"
                ));
            }
        }
    }
    // Keep the largest sections; the rest joins `other`, so nothing is left out.
    let mut found = walk.found;
    let room = if walk.other.is_empty() {
        MAX_SECTIONS
    } else {
        MAX_SECTIONS - 1
    };
    if found.len() > room {
        let mut by_size: Vec<usize> = (0..found.len()).collect();
        by_size.sort_by_key(|&i| std::cmp::Reverse(found[i].1));
        // Folding makes an `other` section if there was none: one fewer room either way.
        let keep: HashSet<usize> = by_size.into_iter().take(MAX_SECTIONS - 1).collect();
        let mut kept = Vec::new();
        for (i, (section, size)) in found.into_iter().enumerate() {
            if keep.contains(&i) {
                kept.push((section, size));
            } else {
                let lines = section.lines.join(",");
                walk.other.push((section.key, format!("[{lines}]")));
            }
        }
        found = kept;
    }
    let mut sections: Vec<Section> = found.into_iter().map(|(s, _)| s).collect();
    if !walk.other.is_empty() {
        let key = if sections.iter().any(|s| s.key == "other") {
            "other_keys"
        } else {
            "other"
        };
        sections.push(Section {
            key: key.into(),
            path: None,
            shape: "other",
            lines: walk.other.iter().map(|(k, v)| Cow::Owned(entry_line(k, v))).collect(),
        });
    }
    Split {
        inline: walk.inline,
        sections,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};

    use super::*;

    fn split_of(value: &Value) -> Split<'static> {
        split(&Data::Json(Cow::Owned(value.to_string())), None).into_owned()
    }

    #[test]
    fn objects_split_into_sections_inline_values_and_the_rest() {
        let items: Vec<Value> = (0..50)
            .map(|i| json!({"id": i, "title": format!("issue number {i} with a title")}))
            .collect();
        let data = json!({"total_count": 500, "incomplete_results": false, "items": items, "facets": {"a": 1}});
        let split = split_of(&data);
        let inline: Vec<&str> = split.inline.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(inline, ["total_count", "incomplete_results", "facets"]);
        assert_eq!(split.sections.len(), 1);
        assert_eq!(split.sections[0].key, "items");
        assert_eq!(split.sections[0].lines.len(), 50);
    }

    #[test]
    fn records_are_found_inside_envelopes() {
        let rows: Vec<Value> = (0..200).map(|i| json!({"id": i, "name": format!("row {i}")})).collect();
        let split = split_of(&json!({"success": true, "data": {"rows": rows, "count": 200}}));
        assert_eq!(split.sections.len(), 1);
        assert_eq!(split.sections[0].key, "data.rows");
        assert_eq!(split.sections[0].path.as_deref(), Some(".data.rows"));
        assert_eq!(split.sections[0].lines.len(), 200);
        assert_eq!(
            split.inline,
            [("success".into(), "true".into()), ("data.count".into(), "200".into())]
        );
    }

    #[test]
    fn numbers_and_strings_are_written_as_sent() {
        let raw = format!(
            "{{\"rows\": [{}], \"total\": 1E+2}}",
            (0..100)
                .map(|i| format!(
                    "{{\"n\": 123456789012345678901234567890, \"x\": 1.50, \"i\": {i}, \"s\": \"\\u00e9\"}}"
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let split = split(&Data::Json(Cow::Owned(raw)), None).into_owned();
        assert_eq!(
            split.sections[0].lines[0],
            "{\"n\":123456789012345678901234567890,\"x\":1.50,\"i\":0,\"s\":\"\\u00e9\"}"
        );
        assert_eq!(split.inline, [("total".into(), "1E+2".into())]);
    }

    #[test]
    fn objects_keyed_by_name_become_entries() {
        let files: serde_json::Map<String, Value> = (0..100)
            .map(|i| (format!("src/f{i}.rs"), json!({"size": i * 10, "lang": "rust"})))
            .collect();
        let split = split_of(&json!({"root": "/repo", "files": files}));
        assert_eq!(split.sections[0].key, "files");
        assert_eq!(split.sections[0].shape, "entries");
        assert_eq!(
            split.sections[0].lines[1],
            "{\"key\":\"src/f1.rs\",\"value\":{\"size\":10,\"lang\":\"rust\"}}"
        );
        assert_eq!(split.inline, [("root".into(), "\"/repo\"".into())]);
    }

    #[test]
    fn tables_become_records_keyed_by_their_columns() {
        let rows: Vec<Value> = (0..60).map(|i| json!([i, format!("name {i}"), null])).collect();
        let split = split_of(&json!({"columns": ["id", "name", "note"], "rows": rows}));
        let rows = split.sections.iter().find(|s| s.key == "rows").unwrap();
        assert_eq!(rows.shape, "table");
        assert_eq!(rows.lines[2], "{\"id\":2,\"name\":\"name 2\",\"note\":null}");
    }

    #[test]
    fn a_sections_setting_names_nested_paths_and_reports_unknown_ones() {
        let rows: Vec<Value> = (0..5).map(|i| json!({"id": i})).collect();
        let settings = ToolSettings {
            name: "t".into(),
            sections: Some(vec!["data.rows".into(), "data.nope".into()]),
            ..ToolSettings::default()
        };
        let split = split(
            &Data::Json(Cow::Owned(json!({"data": {"rows": rows}}).to_string())),
            Some(&settings),
        )
        .into_owned();
        assert_eq!(split.sections[0].key, "data.rows");
        assert_eq!(split.sections[0].lines.len(), 5);
        assert_eq!(split.warnings.len(), 1);
        assert!(split.warnings[0].contains("`data.nope`"), "{:?}", split.warnings);
    }

    #[test]
    fn many_arrays_fold_into_other_so_nothing_is_lost() {
        let mut data = serde_json::Map::new();
        for k in 0..10 {
            data.insert(
                format!("list{k}"),
                json!((0..40).map(|i| format!("value {i} of list {k}")).collect::<Vec<_>>()),
            );
        }
        let split = split_of(&Value::Object(data));
        assert!(split.sections.len() <= MAX_SECTIONS);
        let lines: usize = split
            .sections
            .iter()
            .filter(|s| s.key != "other")
            .map(|s| s.lines.len())
            .sum();
        let folded = split.sections.iter().find(|s| s.key == "other").unwrap().lines.len();
        assert_eq!(lines / 40 + folded, 10);
    }
}
