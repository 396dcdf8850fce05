//! The v2 jq recipe library, line schemas per detail level, and shell quoting.
//!
//! The programs are the spec's v2 library (listed in `docs/FORMAT.md`), made robust to missing
//! fields: where a field a program tests or does arithmetic on may be absent or null
//! (`.namespace`, `.title`, `.content`, `.confidence`), the program supplies a neutral value with
//! `//`, as the spec's recipe 7 already does for `.tags`, so that one odd record cannot stop jq
//! 1.6 with an error. Recipes 1 to 8 use light fields only; 9 and 10 adapt to the detail level;
//! none references `.score`. The shell command runs the very same program.

use serde_json::{Value, json};

use crate::{Detail, Recipe, RecipeLibrary, RecipeParam, json_string};

/// One recipe as the libraries below write it.
#[derive(Clone, Copy)]
struct Row {
    number: u8,
    /// The recipe's short name in the `lro_extract` guidance's list ("count by namespace").
    label: &'static str,
    description: &'static str,
    program: &'static str,
    /// `jq -s`: the program reads every record as one array.
    slurp: bool,
    /// `jq -r`: strings are printed raw.
    raw: bool,
    /// The program's `$name`s with their defaults.
    params: &'static [(&'static str, &'static str)],
}

/// A recipe run on each record.
const fn each(number: u8, label: &'static str, description: &'static str, program: &'static str) -> Row {
    Row {
        number,
        label,
        description,
        program,
        slurp: false,
        raw: false,
        params: &[],
    }
}

/// A recipe run on all records at once (`jq -s`).
const fn slurped(number: u8, label: &'static str, description: &'static str, program: &'static str) -> Row {
    Row {
        slurp: true,
        ..each(number, label, description, program)
    }
}

impl Row {
    /// Printing strings raw (`jq -r`).
    const fn raw(self) -> Row {
        Row { raw: true, ..self }
    }

    /// With the `$name`s the program reads, and their defaults.
    const fn params(self, params: &'static [(&'static str, &'static str)]) -> Row {
        Row { params, ..self }
    }

    /// The same recipe under another number.
    const fn numbered(self, number: u8) -> Row {
        Row { number, ..self }
    }
}

const UNIVERSAL: [Row; 8] = [
    each(
        1,
        "titles+namespaces",
        "List titles with namespaces",
        "[.title, .namespace] | @tsv",
    )
    .raw(),
    each(
        2,
        "filter namespace",
        "Filter by namespace prefix",
        "select((.namespace // \"\") | startswith($namespace))",
    )
    .params(&[("namespace", "_semantic")]),
    each(
        3,
        "search titles",
        "Search titles by keyword",
        "select((.title // \"\") | test($keyword; \"i\"))",
    )
    .params(&[("keyword", "keyword")]),
    each(4, "IDs+titles", "Extract IDs and titles only", "{id, title, namespace}"),
    each(
        5,
        "filter type",
        "Filter by memory type",
        "select(.memory_type == $memory_type)",
    )
    .params(&[("memory_type", "semantic")]),
    slurped(
        6,
        "count by namespace",
        "Count by namespace",
        "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
    ),
    each(7, "filter tag", "Filter by tag", "select((.tags // []) | index($tag))").params(&[("tag", "TAG")]),
    slurped(8, "sort by date", "Sort by created date", "sort_by(.created)"),
];

const CONTENT_SEARCH: Row = each(
    10,
    "search content",
    "Full-text search in content (.content)",
    "select((.content // \"\") | test($pattern; \"i\"))",
)
.params(&[("pattern", "pattern")]);

fn adaptive(detail: Detail) -> [Row; 2] {
    match detail {
        Detail::Light => [
            slurped(
                9,
                "unique namespaces",
                "List unique namespaces",
                "map(.namespace) | unique",
            ),
            slurped(
                10,
                "count by type",
                "Count by memory_type",
                "group_by(.memory_type) | map({memory_type: .[0].memory_type, count: length})",
            ),
        ],
        Detail::Medium => [
            slurped(
                9,
                "sort by confidence",
                "Sort by confidence desc (.confidence)",
                "sort_by(-(.confidence // 0))",
            ),
            CONTENT_SEARCH,
        ],
        Detail::Full => [
            slurped(
                9,
                "sort by confidence",
                "Sort by confidence desc (.provenance.confidence)",
                "sort_by(-(.provenance.confidence // 0))",
            ),
            CONTENT_SEARCH,
        ],
    }
}

/// The MIF v1 library (the older LRO section of the MIF documentation, listed in `docs/FORMAT.md`), with the same guards against missing fields.
const V1: [Row; 10] = [
    each(
        1,
        "titles+scores",
        "List all titles with scores",
        "[.title, .provenance.confidence] | @tsv",
    )
    .raw(),
    UNIVERSAL[1],
    UNIVERSAL[2],
    slurped(
        4,
        "sort by confidence",
        "Sort by confidence (descending)",
        "sort_by(-(.provenance.confidence // 0))",
    ),
    UNIVERSAL[3].numbered(5),
    UNIVERSAL[4].numbered(6),
    each(
        7,
        "with entities",
        "Get memories with entities",
        "select((.entities // []) | length > 0)",
    ),
    slurped(
        8,
        "count by namespace",
        "Count by namespace",
        "group_by(.namespace) | map({namespace: .[0].namespace, count: length}) | sort_by(-.count)",
    ),
    slurped(
        9,
        "top 10 by score",
        "Get top N by score",
        "sort_by(-(.provenance.confidence // 0)) | .[:10]",
    ),
    each(
        10,
        "search content",
        "Full-text search in content",
        "select((.content // \"\") | test($pattern; \"i\"))",
    )
    .params(&[("pattern", "pattern")]),
];

/// The ten v2 recipes for `detail`. `file` goes, shell-quoted, into each command; without it
/// the commands keep the placeholder `{file}`.
pub fn recipes(detail: Detail, file: Option<&str>) -> Vec<Recipe> {
    library(RecipeLibrary::V2, detail, file)
}

fn rows(library: RecipeLibrary, detail: Detail) -> Vec<Row> {
    match library {
        RecipeLibrary::V2 => UNIVERSAL.iter().chain(adaptive(detail).iter()).copied().collect(),
        RecipeLibrary::V1 => V1.to_vec(),
    }
}

/// Each recipe's number and short name, as the guidance names them ("6", "count by namespace").
pub fn labels(library: RecipeLibrary, detail: Detail) -> Vec<(u8, &'static str)> {
    rows(library, detail).iter().map(|r| (r.number, r.label)).collect()
}

/// The ten recipes of `library` for `detail`.
pub fn library(library: RecipeLibrary, detail: Detail, file: Option<&str>) -> Vec<Recipe> {
    let rows = rows(library, detail);
    let quoted = file.map_or_else(|| "{file}".to_owned(), shell_quote);
    rows.iter()
        .map(
            |&Row {
                 number,
                 description,
                 program,
                 slurp,
                 raw,
                 params,
                 ..
             }| {
                let mut shell_program = program.to_owned();
                for (name, default) in params {
                    shell_program = shell_program.replace(&format!("${name}"), &json_string(default));
                }
                let flag = if slurp {
                    " -s"
                } else if raw {
                    " -r"
                } else {
                    ""
                };
                Recipe {
                    number,
                    description: description.to_owned(),
                    program: program.to_owned(),
                    slurp,
                    raw,
                    params: params
                        .iter()
                        .map(|(name, default)| RecipeParam {
                            name: (*name).to_owned(),
                            default: (*default).to_owned(),
                        })
                        .collect(),
                    command: format!("tail -n +2 {quoted} | jq{flag} '{shell_program}'"),
                }
            },
        )
        .collect()
}

/// Quotes `text` for a POSIX shell: single quotes, with each `'` written as `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Top-level MIF fields that some detail level has and `detail` does not.
pub fn fields_absent_at(detail: Detail) -> Vec<&'static str> {
    const ALL: [&str; 12] = [
        "content",
        "summary",
        "confidence",
        "entities",
        "relationships",
        "wiki_links",
        "embedding",
        "provenance",
        "temporal",
        "citations",
        "blocks",
        "extensions",
    ];
    let schema = line_schema(detail);
    ALL.into_iter()
        .filter(|f| schema["properties"].get(*f).is_none())
        .collect()
}

/// The JSON Schema of one record line at `detail`. Only the identity fields are required: a
/// memory server may omit the others, and the schema describes rather than validates.
pub fn line_schema(detail: Detail) -> Value {
    let string = || json!({"type": "string"});
    let time = || json!({"type": "string", "format": "date-time"});
    let mut properties = json!({
        "id": string(),
        "memory_type": {"enum": ["semantic", "episodic", "procedural"]},
        "namespace": string(),
        "title": string(),
        "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        "created": time(),
        "modified": time(),
        "status": string(),
    });
    let props = properties.as_object_mut().expect("an object literal");
    match detail {
        Detail::Light => {}
        Detail::Medium => {
            props.insert("content".into(), string());
            props.insert("summary".into(), string());
            props.insert(
                "confidence".into(),
                json!({"type": "number", "minimum": 0, "maximum": 1}),
            );
        }
        Detail::Full => {
            props.insert("content".into(), string());
            props.insert("summary".into(), string());
            for key in ["entities", "relationships", "wiki_links", "citations"] {
                props.insert(key.into(), json!({"type": "array"}));
            }
            for key in ["embedding", "blocks", "extensions"] {
                props.insert(key.into(), json!({"type": "object"}));
            }
            props.insert(
                "provenance".into(),
                json!({"type": "object", "properties": {
                    "source_type": string(), "source_ref": string(), "agent": string(),
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "trust_level": string(),
                }}),
            );
            props.insert(
                "temporal".into(),
                json!({"type": "object", "properties": {
                    "valid_from": time(), "valid_until": time(), "recorded_at": time(),
                    "ttl": {}, "decay": {"type": "object"},
                    "access_count": {"type": "integer"}, "last_accessed": time(),
                }}),
            );
        }
    }
    // No "$schema" key: it is still a JSON Schema, and the key would cost ~15 tokens in every descriptor.
    json!({
        "type": "object",
        "required": ["id", "memory_type", "namespace", "title", "created"],
        "properties": properties,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_has_ten_numbered_recipes_without_score() {
        for detail in [Detail::Light, Detail::Medium, Detail::Full] {
            let list = recipes(detail, Some("/tmp/x.jsonl"));
            assert_eq!(list.len(), 10);
            for (i, r) in list.iter().enumerate() {
                assert_eq!(r.number as usize, i + 1);
                assert!(!r.program.contains("score") && !r.command.contains("score"));
                assert!(r.command.starts_with("tail -n +2 '/tmp/x.jsonl' | jq"), "{}", r.command);
                assert!(!r.command.contains('$'), "a variable left in {}", r.command);
            }
        }
    }

    #[test]
    fn adaptive_recipes_use_the_fields_of_their_level() {
        let light = recipes(Detail::Light, None);
        assert!(
            light
                .iter()
                .all(|r| !r.program.contains("content") && !r.program.contains("confidence"))
        );
        assert_eq!(recipes(Detail::Medium, None)[8].program, "sort_by(-(.confidence // 0))");
        assert_eq!(
            recipes(Detail::Full, None)[8].program,
            "sort_by(-(.provenance.confidence // 0))"
        );
        assert_eq!(
            recipes(Detail::Full, None)[9].program,
            "select((.content // \"\") | test($pattern; \"i\"))"
        );
    }

    #[test]
    fn shell_commands_carry_defaults_and_flags() {
        let list = recipes(Detail::Light, None);
        assert_eq!(
            list[0].command,
            "tail -n +2 {file} | jq -r '[.title, .namespace] | @tsv'"
        );
        assert_eq!(
            list[1].command,
            "tail -n +2 {file} | jq 'select((.namespace // \"\") | startswith(\"_semantic\"))'"
        );
        assert_eq!(
            list[5].command,
            "tail -n +2 {file} | jq -s 'group_by(.namespace) | map({namespace: .[0].namespace, count: length})'"
        );
        assert_eq!(
            list[6].command,
            "tail -n +2 {file} | jq 'select((.tags // []) | index(\"TAG\"))'"
        );
    }

    #[test]
    fn the_v1_library_is_the_mif_list() {
        let v1 = library(RecipeLibrary::V1, Detail::Light, None);
        assert_eq!(v1.len(), 10);
        assert_eq!(v1[6].description, "Get memories with entities");
        assert!(v1.iter().enumerate().all(|(i, r)| r.number as usize == i + 1));
        assert_eq!(fields_absent_at(Detail::Full), ["confidence"]);
        assert!(fields_absent_at(Detail::Light).contains(&"content"));
    }

    #[test]
    fn quotes_paths_for_the_shell() {
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("/tmp/it's"), r"'/tmp/it'\''s'");
    }

    #[test]
    fn schemas_differ_by_level() {
        let light = line_schema(Detail::Light);
        assert!(light["properties"].get("content").is_none());
        assert!(line_schema(Detail::Medium)["properties"]["confidence"].is_object());
        let full = line_schema(Detail::Full);
        assert!(full["properties"].get("confidence").is_none());
        assert!(full["properties"]["provenance"]["properties"]["confidence"].is_object());
    }
}
