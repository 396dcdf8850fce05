//! The descriptor of an offloaded result set: its summary, line schema, recipes and guidance.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::{Value, json};

use super::records::Record;
use crate::recipes::{labels, library, line_schema};
use crate::{Config, DescriptorStyle, Detail, Operation, RecipeLibrary, json_string};

/// FNV-1a: a result set has few distinct namespaces but one lookup per record, and SipHash's
/// protection against chosen keys costs more than the counting here (a few percent of an
/// offload) while a caller that chose its namespaces could only slow its own call.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The five most frequent namespaces, most frequent first, then by name.
fn top_namespaces<'a>(records: &'a [Record<'_>]) -> Vec<&'a str> {
    let mut counts: HashMap<&str, usize, BuildHasherDefault<Fnv>> = HashMap::default();
    for ns in records.iter().filter_map(|r| r.namespace.as_deref()) {
        *counts.entry(ns).or_default() += 1;
    }
    let mut ranked: Vec<(&str, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.into_iter().take(5).map(|(ns, _)| ns).collect()
}

/// `[lowest, highest]` of the search hits' scores, or null when there are none.
fn score_range(records: &[Record]) -> Value {
    let mut scores = records.iter().filter_map(|r| r.score);
    let Some(first) = scores.next() else { return Value::Null };
    let (min, max) = scores.fold((first, first), |(lo, hi), s| (lo.min(s), hi.max(s)));
    json!([min, max])
}

/// The descriptor JSON of a written file, in the config's style.
pub(super) fn descriptor(
    config: &Config,
    operation: Operation,
    detail: Detail,
    path: &str,
    records: &[Record],
    tokens: u32,
) -> String {
    let count = records.len();
    let summary = json!({
        "count": count,
        "estimated_tokens": tokens,
        "operation": operation.as_str(),
        "top_namespaces": top_namespaces(records),
        "score_range": score_range(records),
        "detail": detail.as_str(),
    });
    let value = match config.descriptor {
        DescriptorStyle::Bare => json!({"offloaded": true, "summary": summary, "file_path": path}),
        DescriptorStyle::Full => {
            let recipes: Vec<Value> = library(config.recipes, detail, Some(path))
                .into_iter()
                .map(|r| json!({"description": r.description, "command": r.command}))
                .collect();
            json!({
                "offloaded": true,
                "summary": summary,
                "file_path": path,
                "line_schema": line_schema(detail),
                "jq_recipes": recipes,
                "guidance": guidance(config.extract_tool, config.recipes, operation, detail, path, count, tokens),
            })
        }
    };
    value.to_string()
}

/// The spec's guidance template (shell commands, or the `lro_extract` tool), plus the two facts it leaves implicit: line
/// order, and what light detail lacks. The recipes it names are those of `library` (the v1
/// template's numbers for the v1 library: its count by namespace is #8, not #6).
pub fn guidance(
    extract_tool: bool,
    library: RecipeLibrary,
    operation: Operation,
    detail: Detail,
    path: &str,
    count: usize,
    tokens: u32,
) -> String {
    let d = detail.as_str();
    let labels = labels(library, detail);
    let numbered = |label: &str| labels.iter().find(|(_, l)| *l == label).map_or(0, |(n, _)| *n);
    let mut text = format!("Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n");
    if extract_tool {
        let p = json_string(path);
        let example = match detail {
            Detail::Light => "select(.memory_type == \"episodic\")",
            Detail::Medium => "select(.confidence > 0.8)",
            Detail::Full => "select(.provenance.confidence > 0.8)",
        };
        // The spec's list breaks its line after the third and the eighth recipe.
        let listed: Vec<String> = labels.iter().map(|(n, l)| format!("{n}={l}")).collect();
        let available = format!(
            "{},\n{},\n{}.",
            listed[..3].join(", "),
            listed[3..8].join(", "),
            listed[8..].join(", ")
        );
        text.push_str(&format!(
            "Detail level: {d}\n\
             Use the `lro_extract` tool to query this result set. Examples:\n\
             - Browse: lro_extract(file_path={p}, recipe=1)\n\
             - Filter by namespace: lro_extract(file_path={p}, recipe=2, params={{\"namespace\": \"_semantic\"}})\n\
             - Search by keyword: lro_extract(file_path={p}, recipe=3, params={{\"keyword\": \"your term\"}})\n\
             - Custom filter: lro_extract(file_path={p}, query={})\n\
             Available recipes: {available}\n",
            json_string(example)
        ));
    } else {
        // "titles+namespaces" is "titles with namespaces" in this template.
        let browse = labels[0].1.replace('+', " with ");
        let analyze = numbered("count by namespace");
        text.push_str(&format!(
            "File: {path}\n\
             Detail level: {d}\n\
             Use the jq recipes above to extract specific data. Common patterns:\n\
             - Browse: recipe #1 ({browse})\n\
             - Filter: recipe #2 (by namespace) or #3 (by keyword)\n\
             - Analyze: recipe #{analyze} (count by namespace)\n\
             Read the file directly only if you need the complete dataset.\n\
             The header line (line 1) contains metadata; memory objects start at line 2.\n"
        ));
    }
    if operation.is_ranked() {
        text.push_str("Records are in rank order, best match first.");
    } else {
        text.push_str("Records are in the order the tool returned them.");
    }
    if detail == Detail::Light {
        text.push_str("\nLight detail has no content field; ask for medium or full detail to search content.");
    }
    text
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn top_namespaces_are_most_frequent_first_then_by_name() {
        let names = ["b", "a", "c", "a", "d", "e", "f", "b", "f"];
        let records: Vec<Record> = names
            .iter()
            .map(|n| Record {
                inline: Cow::Borrowed(""),
                line: None,
                namespace: Some((*n).into()),
                score: None,
                level: 0,
                counts: Default::default(),
            })
            .collect();
        assert_eq!(top_namespaces(&records), ["a", "b", "f", "c", "d"]);
    }

    #[test]
    fn guidance_follows_the_templates() {
        let shell = guidance(
            false,
            RecipeLibrary::V2,
            Operation::Recall,
            Detail::Full,
            "/tmp/f.jsonl",
            247,
            38285,
        );
        assert!(shell.starts_with(
            "Results offloaded to JSONL (247 memories, ~38285 tokens saved).\nFile: /tmp/f.jsonl\nDetail level: full\n"
        ));
        assert!(shell.contains("rank order"));
        let tool = guidance(
            true,
            RecipeLibrary::V2,
            Operation::List,
            Detail::Medium,
            "/tmp/f.jsonl",
            1,
            2,
        );
        assert!(tool.contains("lro_extract(file_path=\"/tmp/f.jsonl\", recipe=1)"));
        assert!(tool.contains("query=\"select(.confidence > 0.8)\""));
        assert!(!tool.contains("File:"));
    }

    #[test]
    fn guidance_names_the_recipes_of_the_library_in_use() {
        // The v1 library's recipe 6 filters by type; its count by namespace is 8.
        let shell = guidance(false, RecipeLibrary::V1, Operation::Recall, Detail::Full, "/f", 1, 2);
        assert!(shell.contains("- Browse: recipe #1 (titles with scores)\n"), "{shell}");
        assert!(shell.contains("- Analyze: recipe #8 (count by namespace)\n"), "{shell}");
        let tool = guidance(true, RecipeLibrary::V1, Operation::Recall, Detail::Light, "/f", 1, 2);
        assert!(
            tool.contains(
                "Available recipes: 1=titles+scores, 2=filter namespace, 3=search titles,\n\
             4=sort by confidence, 5=IDs+titles, 6=filter type, 7=with entities, 8=count by namespace,\n\
             9=top 10 by score, 10=search content.\n"
            ),
            "{tool}"
        );
        // The spec's v2 text, word for word.
        let tool = guidance(true, RecipeLibrary::V2, Operation::Recall, Detail::Light, "/f", 1, 2);
        assert!(
            tool.contains(
                "Available recipes: 1=titles+namespaces, 2=filter namespace, 3=search titles,\n\
             4=IDs+titles, 5=filter type, 6=count by namespace, 7=filter tag, 8=sort by date,\n\
             9=unique namespaces, 10=count by type.\n"
            ),
            "{tool}"
        );
        let shell = guidance(false, RecipeLibrary::V2, Operation::Recall, Detail::Full, "/f", 1, 2);
        assert!(shell.contains("- Browse: recipe #1 (titles with namespaces)\n- Filter: recipe #2 (by namespace) or #3 (by keyword)\n- Analyze: recipe #6 (count by namespace)\n"), "{shell}");
    }
}
