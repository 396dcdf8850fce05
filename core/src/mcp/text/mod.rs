//! A tool's text result (text that is not JSON) read as records, so that an offloaded text is a
//! JSONL file a model can count and filter with jq rather than one record per line of text: a
//! `git log` becomes one record per commit, a CSV's rows get their column names, and the Python
//! `repr` of a list of rows (what the reference `mcp-server-sqlite` returns) becomes the JSON it
//! stands for.
//!
//! [`read_text`] tries these rules in order, and the first that matches wins:
//!
//! 1. **Python literal**: the trimmed text starts with `[`, `{` or `(` and parses whole as a
//!    Python literal whose value is a list, tuple, dict or set: strings in single, double or
//!    triple quotes with `r`, `b` or `u` prefixes and Python's escapes (adjacent strings are
//!    joined, as Python does), ints (`-1`, `1_000`, `0x1f`), floats (`1.5`, `1e5`, `.5`),
//!    `True`, `False`, `None`, lists, tuples and sets (arrays), dicts (objects; a key that is not
//!    a string becomes its literal text, `1` → `"1"`). A call such as `Decimal('1.50')` or
//!    `datetime.datetime(2024, 1, 2, 3, 4)`, an object's default repr such as
//!    `<Color.RED: 1>`, `nan` and `inf` become strings of their source text. Numbers keep their
//!    digits as written, made valid JSON (`1_000` → `1000`, `.5` → `0.5`, `5.` → `5.0`, `+1` →
//!    `1`). More than 512 levels of nesting is not Python.
//! 2. **NDJSON**: at least 2 non-empty lines, each a JSON object or array. Each line is a
//!    record, minified with every number and string kept as sent.
//! 3. **Markdown table**: a header row (`| a | b |`, the outer pipes optional), a separator row
//!    of cells like `---`, `:--`, `:-:`, and at least one body row, making up at least half of
//!    the non-empty lines. Each body row is an object of its cells by column name (trimmed, `\|`
//!    read as `|`; a missing cell is `""`, an extra cell is keyed `column_N`). Only the first
//!    table is read; the non-blank lines before and after it are kept apart with their line
//!    numbers.
//! 4. **TSV, then CSV**: tab- or comma-delimited rows with RFC 4180 quoting (a quoted field may
//!    hold the delimiter, `""` and line breaks); a header of at least 2 non-empty names of at
//!    most 100 characters, at least 2 data rows, and every row with as many fields as the
//!    header. Each data row is an object of its fields (as in the file, unquoted, not trimmed)
//!    by column name.
//! 5. **Blocks**: the first word of the first non-empty line (letters only, at least 2 of them,
//!    with an optional colon, such as `commit` or `Commit:`), or of the next line when the first
//!    is a title ending in a colon (`Commit history:`), starts at least 3 unindented lines, and
//!    fewer than half of the non-empty lines. Each such line starts a record: `n` (1-based),
//!    `line` (its line number), the word (without its colon) as a key for the rest of the line,
//!    then each `Key: value` line right after it as a field (the first of a repeated key kept),
//!    then `text`, the block's other lines with the surrounding blank lines and the common
//!    indentation removed. A field named `n`, `line` or `text` is suffixed with `_`. The lines
//!    before the first block (a title) are kept apart, like the prose around a table.
//! 6. **Lines**: otherwise, `{"n": i, "text": line}` for every line (1-based).
//!
//! Column names are made unique: an empty name becomes `column_N` (its 1-based position), and a
//! repeated one gets `_2`, `_3`, ... Every rule reads its text in time linear in its length.

mod blocks;
mod python;
mod table;

use serde_json::json;

use crate::json_text::parse;
use crate::json_text::raw::minify;
use blocks::blocks;
use python::python;
use table::{delimited, markdown};

/// What a text was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    /// A Python literal (the `repr` of a list, dict, tuple or set).
    Python,
    /// One JSON object or array per line.
    Ndjson,
    /// A Markdown table, with any prose around it.
    Markdown,
    /// Comma-separated values with a header row.
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// Blocks that each start with the same word, such as `git log`'s commits.
    Blocks,
    /// One record per line.
    Lines,
}

impl TextKind {
    /// The kind's name as the descriptor and the docs write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TextKind::Python => "python",
            TextKind::Ndjson => "ndjson",
            TextKind::Markdown => "markdown",
            TextKind::Csv => "csv",
            TextKind::Tsv => "tsv",
            TextKind::Blocks => "blocks",
            TextKind::Lines => "lines",
        }
    }
}

/// A text read as records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextRecords {
    /// What the text was read as.
    pub(crate) kind: TextKind,
    /// For `Python`: the JSON text of the whole value (the caller walks it like any JSON result); empty otherwise.
    pub(crate) json: String,
    /// For the other kinds: one compact JSON text per record, in order.
    pub(crate) records: Vec<String>,
    /// Column names, for `Markdown`, `Csv`, `Tsv`.
    pub(crate) columns: Vec<String>,
    /// Lines of the text outside the records (prose before or after a Markdown table, the title
    /// before blocks), with their 1-based line numbers; empty for the other kinds.
    pub(crate) rest: Vec<(usize, String)>,
}

impl TextRecords {
    fn new(kind: TextKind, records: Vec<String>) -> Self {
        TextRecords {
            kind,
            json: String::new(),
            records,
            columns: Vec::new(),
            rest: Vec::new(),
        }
    }
}

/// Reads `text` (already known not to be JSON) for what it is; the first rule that matches wins.
/// The rules, in order, are listed in the [module documentation](self).
pub(crate) fn read_text(text: &str) -> TextRecords {
    // Numbers keep their digits: one out of range (`1e400`, which Python itself prints as
    // `inf`) would be a line no reader takes, so such a text is not read as Python.
    if let Some(json) = python(text).filter(|j| parse::<crate::json_text::Valid>(j, crate::jq::MAX_DEPTH).is_ok()) {
        return TextRecords {
            json,
            ..TextRecords::new(TextKind::Python, Vec::new())
        };
    }
    if let Some(records) = ndjson(text) {
        return TextRecords::new(TextKind::Ndjson, records);
    }
    if let Some(table) = markdown(text) {
        return table;
    }
    for (delimiter, kind) in [(b'\t', TextKind::Tsv), (b',', TextKind::Csv)] {
        if let Some((columns, records)) = delimited(text, delimiter) {
            return TextRecords {
                columns,
                ..TextRecords::new(kind, records)
            };
        }
    }
    if let Some((records, rest)) = blocks(text) {
        return TextRecords {
            rest,
            ..TextRecords::new(TextKind::Blocks, records)
        };
    }
    TextRecords::new(TextKind::Lines, lines(text))
}

// ---------------------------------------------------------------------------------------------
// 2. NDJSON

/// Rule 2: each non-empty line of `text` minified (every number and string kept as sent), when
/// there are at least 2 and each is a JSON object or array.
fn ndjson(text: &str) -> Option<Vec<String>> {
    let mut records = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !matches!(line.as_bytes().first(), Some(b'{' | b'[')) {
            return None;
        }
        // Records as deep as the rest of lro reads them (serde_json alone stops at 128 levels).
        // Each line is copied as it is: it must be JSON every reader takes.
        parse::<crate::json_text::Valid>(line, crate::jq::MAX_DEPTH).ok()?;
        records.push(minify(line).into_owned());
    }
    (records.len() >= 2).then_some(records)
}

// ---------------------------------------------------------------------------------------------
// 6. Lines

/// Rule 6: `{"n": i, "text": line}` for every line of `text` (1-based, as [`str::lines`] gives
/// them).
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .map(|(i, l)| json!({"n": i + 1, "text": l}).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn values(records: &[String]) -> Vec<Value> {
        records.iter().map(|r| serde_json::from_str(r).unwrap()).collect()
    }

    #[test]
    fn kind_names() {
        let kinds = [
            TextKind::Python,
            TextKind::Ndjson,
            TextKind::Markdown,
            TextKind::Csv,
            TextKind::Tsv,
            TextKind::Blocks,
            TextKind::Lines,
        ];
        let names: Vec<_> = kinds.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["python", "ndjson", "markdown", "csv", "tsv", "blocks", "lines"]);
    }

    // What mcp-server-sqlite returns for a query: `str()` of a list of dicts (printed by CPython
    // 3 for these rows; the `Decimal` is what an adapter returning NUMERIC columns gives).
    #[test]
    fn python_repr_of_rows() {
        let text = r#"[{'id': 1, 'name': "O'Brien", 'price': 1.5, 'note': None, 'total': Decimal('1.50')}, {'id': 2, 'name': 'Widget "Pro"', 'price': 12.0, 'note': "it's\nnew", 'total': Decimal('12')}]"#;
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Python);
        assert!(read.records.is_empty() && read.columns.is_empty() && read.rest.is_empty());
        assert_eq!(
            read.json,
            r#"[{"id":1,"name":"O'Brien","price":1.5,"note":null,"total":"Decimal('1.50')"},{"id":2,"name":"Widget \"Pro\"","price":12.0,"note":"it's\nnew","total":"Decimal('12')"}]"#
        );
    }

    #[test]
    fn python_literals_of_every_kind() {
        let text = "(\n  {1: (True, False), (1, 'a'): {'x', 'y'}, None: set()},\n  \
                    [r'C:\\dir\\n', b'\\x00\\xff', u'caf\\u00e9 \\U0001F600', '''a\n'b'''],\n  \
                    ['\\d\\q', 'tab\\there', \"\\'\", 'join' \"ed\", ('in parens')],\n  \
                    [datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.timezone.utc), <Color.RED: 1>],\n  \
                    [-1, +2, 0x1F, -0o17, 0b101, 1e5, 1.5E-3, 5., -.25, 007.5, nan, -inf, 1j],\n)";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Python);
        assert_eq!(
            read.json,
            concat!(
                r#"[{"1":[true,false],"(1, 'a')":["x","y"],"None":"set()"},"#,
                r#"["C:\\dir\\n","\u0000ÿ","café 😀","a\n'b"],"#,
                r#"["\\d\\q","tab\there","'","joined","in parens"],"#,
                r#"["datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)","<Color.RED: 1>"],"#,
                r#"[-1,2,31,-15,5,1e5,1.5E-3,5.0,-0.25,7.5,"nan","-inf","1j"]]"#
            )
        );
        let parsed: Value = serde_json::from_str(&read.json).unwrap();
        assert!(parsed.is_array());
    }

    #[test]
    fn python_that_does_not_parse_whole_is_not_python() {
        for text in [
            "[{'id': 1}, {'id': 2}] and 3 more rows",
            "[INFO] server started\n[INFO] listening on :8080",
            "{'a': 1, 'b': open_file}",
            "['unterminated]",
            "('a' 'b')",
            "(1)",
            "[1, 2,, 3]",
            "{'a': 1, 'b'}",
        ] {
            assert_ne!(read_text(text).kind, TextKind::Python, "{text}");
        }
    }

    #[test]
    fn numbers_are_kept_as_written() {
        let read = read_text("[123456789012345678901234567890, 1_000, .5, 1.50, 1E+2, 0.0]");
        assert_eq!(read.kind, TextKind::Python);
        assert_eq!(read.json, "[123456789012345678901234567890,1000,0.5,1.50,1E+2,0.0]");

        let read = read_text("{\"big\": 123456789012345678901234567890}\n{\"e\": 1E+2, \"f\": 1.50}\n");
        assert_eq!(read.kind, TextKind::Ndjson);
        assert_eq!(
            read.records,
            ["{\"big\":123456789012345678901234567890}", "{\"e\":1E+2,\"f\":1.50}"]
        );
    }

    /// Text copied into a file must be JSON `lro_extract` reads: a number out of range or a lone
    /// surrogate is not taken as Python or NDJSON (it stays lines).
    #[test]
    fn values_no_reader_takes_are_not_records() {
        for text in [
            "[1e400, 2]",
            "{\"a\": 1e400}\n{\"a\": 1}",
            "{\"a\": \"\\ud800\"}\n{\"a\": 1}",
        ] {
            assert_eq!(read_text(text).kind, TextKind::Lines, "{text}");
        }
    }

    #[test]
    fn ndjson_lines_are_minified() {
        let text = "{\"level\":\"info\",\"msg\":\"started\"}\n\n{ \"level\" : \"warn\", \"msg\": \"slow  query\", \"ms\": [ 1200, 3 ] }\r\n[1, 2]\n";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Ndjson);
        assert_eq!(
            read.records,
            [
                r#"{"level":"info","msg":"started"}"#,
                r#"{"level":"warn","msg":"slow  query","ms":[1200,3]}"#,
                "[1,2]",
            ]
        );
        // One line that is not JSON, and it is not NDJSON.
        assert_ne!(read_text("{\"a\":1}\n{\"a\":2}\nnot json\n").kind, TextKind::Ndjson);
    }

    #[test]
    fn markdown_table_with_prose_around_it() {
        let text = "Found 3 open issues in lro:\n\n\
                    | # | Title | Labels | |\n\
                    |---:|:------|:--:|---|\n\
                    | 12 | Offload `a \\| b` pipes | bug | x |\n\
                    | 15 | Sections for text | enhancement |\n\
                    | 19 | Sweep on start | bug | y | extra |\n\
                    \n\
                    Showing 3 of 3.";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Markdown);
        assert_eq!(read.columns, ["#", "Title", "Labels", "column_4"]);
        assert_eq!(
            values(&read.records),
            [
                json!({"#": "12", "Title": "Offload `a | b` pipes", "Labels": "bug", "column_4": "x"}),
                json!({"#": "15", "Title": "Sections for text", "Labels": "enhancement", "column_4": ""}),
                json!({"#": "19", "Title": "Sweep on start", "Labels": "bug", "column_4": "y", "column_5": "extra"}),
            ]
        );
        assert_eq!(
            read.rest,
            [
                (1, "Found 3 open issues in lro:".to_owned()),
                (9, "Showing 3 of 3.".to_owned())
            ]
        );
        // Key order is the column order.
        assert!(read.records[0].starts_with(r##"{"#":"12","Title""##));
    }

    #[test]
    fn markdown_table_in_a_long_text_is_not_the_text() {
        let mut text = "| a | b |\n|---|---|\n| 1 | 2 |\n".to_owned();
        for i in 0..10 {
            text.push_str(&format!("Paragraph {i} of the report goes on for a while.\n"));
        }
        assert_eq!(read_text(&text).kind, TextKind::Lines);
    }

    #[test]
    fn csv_with_quotes_and_an_embedded_newline() {
        let text = "id,name,address,note\r\n\
                    1,Ada Lovelace,\"12 St James's Square, London\",\r\n\
                    2,\"Charles \"\"Babbage\"\"\",Marylebone,\"first line\nsecond line\"\r\n\
                    3,Grace Hopper, Arlington ,none\r\n\r\n";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Csv);
        assert_eq!(read.columns, ["id", "name", "address", "note"]);
        assert_eq!(
            values(&read.records),
            [
                json!({"id": "1", "name": "Ada Lovelace", "address": "12 St James's Square, London", "note": ""}),
                json!({"id": "2", "name": "Charles \"Babbage\"", "address": "Marylebone", "note": "first line\nsecond line"}),
                json!({"id": "3", "name": "Grace Hopper", "address": " Arlington ", "note": "none"}),
            ]
        );
        assert!(read.rest.is_empty());
    }

    #[test]
    fn tsv_with_duplicate_columns() {
        let text = "pid\tuser\t%cpu\tcommand\tuser\n\
                    1\troot\t0.0\t/sbin/init splash\troot\n\
                    412\tpostgres\t2.5\tpostgres: checkpointer, writer\tpg\n\
                    1033\tada\t\tbash\t\n";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Tsv);
        assert_eq!(read.columns, ["pid", "user", "%cpu", "command", "user_2"]);
        assert_eq!(
            values(&read.records)[1],
            json!({"pid": "412", "user": "postgres", "%cpu": "2.5", "command": "postgres: checkpointer, writer", "user_2": "pg"})
        );
        assert_eq!(
            values(&read.records)[2],
            json!({"pid": "1033", "user": "ada", "%cpu": "", "command": "bash", "user_2": ""})
        );
    }

    #[test]
    fn prose_with_commas_stays_lines() {
        let text = "The offloader writes each section to its own file, and the descriptor\n\
                    names them, with a schema per file, so a model can pick one.\n\
                    When writing fails, for any reason, the result is truncated instead,\n\
                    and a warning says so, which keeps the call from failing.\n\
                    Files expire after a day, by default, and are swept on start.";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Lines);
        assert_eq!(read.records.len(), 5);
    }

    #[test]
    fn git_log_is_one_block_per_commit() {
        let text = "commit 76ba568e610d1e211dd6dea8ebd8d924825500d8
Merge: d5bd00a 5eaeb3e
Author: Ada Lovelace <ada@example.org>
Date:   Mon Mar 4 16:45:00 2024 +0100

    Merge branch 'feature'

commit d5bd00a4c6e4c52630e774e579d4c0a977aa6000
Author: Ada Lovelace <ada@example.org>
Date:   Sun Mar 3 09:15:00 2024 +0100

    Document the offload directory

commit a293eac22f59a46ee99b792175f3620d86b8f4f5
Author: Ada Lovelace <ada@example.org>
Date:   Fri Mar 1 10:00:00 2024 +0100

    Add a

commit 5eaeb3eb4295aa1a9e11ea82bbdc4919a34e0043
Author: Ada Lovelace <ada@example.org>
Date:   Sat Mar 2 11:30:00 2024 +0100

    Parse the header row once
    
    The reader used to split every line twice; now the header's
      field count is kept and each row is checked against it.
    
    Fixes #42
";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Blocks);
        let records = values(&read.records);
        assert_eq!(records.len(), 4);
        assert_eq!(
            records[0],
            json!({
                "n": 1, "line": 1, "commit": "76ba568e610d1e211dd6dea8ebd8d924825500d8",
                "Merge": "d5bd00a 5eaeb3e", "Author": "Ada Lovelace <ada@example.org>",
                "Date": "Mon Mar 4 16:45:00 2024 +0100", "text": "Merge branch 'feature'"
            })
        );
        assert_eq!(
            records[3],
            json!({
                "n": 4, "line": 20, "commit": "5eaeb3eb4295aa1a9e11ea82bbdc4919a34e0043",
                "Author": "Ada Lovelace <ada@example.org>", "Date": "Sat Mar 2 11:30:00 2024 +0100",
                "text": "Parse the header row once\n\nThe reader used to split every line twice; now the header's\n  field count is kept and each row is checked against it.\n\nFixes #42"
            })
        );
        assert!(read.records[0].starts_with(r#"{"n":1,"line":1,"commit":"#));
    }

    #[test]
    fn block_fields_do_not_take_reserved_names() {
        let text = "text one\nline: 5\nn: 2\nline: 6\nbody\n\ntext two\n\ntext three\nsee: also\n";
        let read = read_text(text);
        assert_eq!(read.kind, TextKind::Blocks);
        assert_eq!(
            values(&read.records),
            [
                json!({"n": 1, "line": 1, "text_": "one", "line_": "5", "n_": "2", "text": "body"}),
                json!({"n": 2, "line": 7, "text_": "two", "text": ""}),
                json!({"n": 3, "line": 9, "text_": "three", "see": "also", "text": ""}),
            ]
        );
    }

    #[test]
    fn plain_lines() {
        let read = read_text("total 8\r\ndrwxr-xr-x 2 ada ada 4096 .\n\n-rw-r--r-- 1 ada ada 0 a");
        assert_eq!(read.kind, TextKind::Lines);
        assert_eq!(
            read.records,
            [
                r#"{"n":1,"text":"total 8"}"#,
                r#"{"n":2,"text":"drwxr-xr-x 2 ada ada 4096 ."}"#,
                r#"{"n":3,"text":""}"#,
                r#"{"n":4,"text":"-rw-r--r-- 1 ada ada 0 a"}"#,
            ]
        );
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let deep = "[".repeat(10_000);
        let deep_closed = format!("{}{}", "(".repeat(600), ")".repeat(600));
        let odd = [
            "",
            " \n\t\r\n ",
            "|",
            "\"",
            "'",
            "[",
            "{'a': [1, 2}",
            "(((]",
            "[1, 2]]",
            "{:}",
            "[-]",
            "[1e]",
            "[0x]",
            "[0xffffffffffffffffffffffffffffffffffffffff]",
            "['\\x4']",
            "['\\U00110000']",
            "['\\ud800', '\\ud83d\\ude00']",
            "[r'\\",
            "[<a<b>",
            "[f(]",
            "[b'é\\é']",
            "a,b\n\"x",
            "a,b\n\"x\"y,1\n2,3",
            "|\n|-|\n|",
            "| a |\n| - |\n| \\|",
            "commit\ncommit\ncommit",
            "é",
            "\u{feff}[1]",
            deep.as_str(),
            deep_closed.as_str(),
        ];
        for text in odd {
            let read = read_text(text);
            // Whatever it was read as, the records are JSON.
            for record in &read.records {
                serde_json::from_str::<Value>(record).unwrap();
            }
            if read.kind == TextKind::Python {
                serde_json::from_str::<serde::de::IgnoredAny>(&read.json).unwrap();
            }
        }
        assert_eq!(read_text("").kind, TextKind::Lines);
        assert!(read_text("").records.is_empty());
        assert_eq!(read_text(&deep).kind, TextKind::Lines);
        assert_eq!(read_text(&deep_closed).kind, TextKind::Lines);
        let ok_deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        assert_eq!(read_text(&ok_deep).kind, TextKind::Python);
        assert_eq!(read_text("['\\ud800', '\\ud83d\\ude00']").json, "[\"\u{fffd}\",\"😀\"]");
    }
}
