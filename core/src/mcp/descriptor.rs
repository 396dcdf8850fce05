//! The generic descriptor and what the model reads of it: every estimate here is of text the
//! model would read, and the descriptor drops what helps least until it fits its budget.

use serde_json::{Map, Value, json};

use super::recipes::{GenRecipe, recipe_command, section_recipes};
use super::schema::infer_schema;
use super::sections::Section;
use crate::estimate::Counts;
use crate::{Config, json_string};

/// The descriptor of a generic result stays under this many estimated tokens.
pub const DESCRIPTOR_BUDGET: u32 = 800;

/// The estimated tokens of a value as compact JSON.
pub(super) fn estimate_value(value: &Value) -> u32 {
    Counts::of(&value.to_string()).tokens()
}

/// The descriptor of sections written to `paths`.
pub(super) fn generic_descriptor(
    config: &Config,
    inline: &Map<String, Value>,
    sections: &[Section],
    paths: &[&str],
    section_tokens: &[u32],
    tokens: u32,
) -> Value {
    // Computed once; the levels below only choose how much of it to show.
    let schemas: Vec<Value> = sections.iter().map(|s| infer_schema(&s.lines)).collect();
    let recipes: Vec<Vec<GenRecipe>> = sections.iter().map(|s| section_recipes(&s.key, &s.lines)).collect();
    let guidance = generic_guidance(config.extract_tool, sections, paths, tokens);
    // Richest first; each step drops what helps least until the descriptor fits its budget.
    for level in 0..4 {
        let mut d = Map::new();
        d.insert("offloaded".into(), json!(true));
        for (k, v) in inline {
            d.insert(k.clone(), v.clone());
        }
        let mut summary = Map::new();
        let mut files = Map::new();
        let mut schema_map = Map::new();
        let mut recipe_map = Map::new();
        for (i, (section, path)) in sections.iter().zip(paths).enumerate() {
            summary.insert(
                section.key.clone(),
                json!({"count": section.lines.len(), "estimated_tokens": section_tokens[i]}),
            );
            files.insert(section.key.clone(), json!(path));
            if level < 2 {
                let mut schema = schemas[i].clone();
                if level == 1 {
                    schema.as_object_mut().expect("an object").remove("required");
                }
                schema_map.insert(
                    section.key.clone(),
                    json!({"description": "Line 1 is header metadata. Lines 2+ are data objects.", "line_schema": schema}),
                );
            }
            let keep = if level < 3 { recipes[i].len() } else { 2 };
            for r in recipes[i].iter().take(keep) {
                recipe_map.insert(r.name.clone(), json!(recipe_command(path, &r.program, r.slurp)));
            }
        }
        d.insert("summary".into(), Value::Object(summary));
        d.insert("files".into(), Value::Object(files));
        if level < 2 {
            d.insert("schemas".into(), Value::Object(schema_map));
        }
        d.insert("jq_recipes".into(), Value::Object(recipe_map));
        d.insert("guidance".into(), json!(guidance));
        let value = Value::Object(d);
        if estimate_value(&value) <= DESCRIPTOR_BUDGET || level == 3 {
            return value;
        }
    }
    unreachable!("the loop returns at its last level")
}

/// The guidance of a generic descriptor: which file holds which section, and how to query them.
fn generic_guidance(extract_tool: bool, sections: &[Section], paths: &[&str], tokens: u32) -> String {
    let keys: Vec<&str> = sections.iter().map(|s| s.key.as_str()).collect();
    let mut text = format!(
        "Results offloaded to JSONL ({} section(s): {}; ~{tokens} tokens saved).\nFiles:\n",
        keys.len(),
        keys.join(", ")
    );
    for (key, path) in keys.iter().zip(paths) {
        text.push_str(&format!("  - {key}: {path}\n"));
    }
    if extract_tool {
        text.push_str(&format!(
            "\nUse the `lro_extract` tool with a jq query, e.g. lro_extract(file_path={}, query=\".\"), \
             or with slurp=true for whole-set questions such as query=\"length\".\n",
            json_string(paths.first().copied().unwrap_or_default())
        ));
    } else {
        text.push_str("\nUse the jq_recipes above to extract specific data, or read files directly.\n");
    }
    text.push_str("Header line (line 1) contains metadata; data objects start at line 2.");
    text
}
