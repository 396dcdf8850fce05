//! The generic descriptor and what the model reads of it: every estimate here is of text the
//! model would read, and the descriptor drops what helps least until it fits its budget.
//!
//! Its token figures name one thing each: a section's `estimated_tokens` is what its file holds,
//! `tokens.result` what the result would have cost the model, `tokens.descriptor` what this
//! descriptor costs, and `tokens.saved` the difference of those two, which the guidance repeats.

use serde_json::{Map, Value, json};

use super::generic::{Written, object_text};
use super::recipes::{GenRecipe, extract_call, recipe_command, section_recipes};
use super::schema::{Profile, infer_schema};
use super::sections::Split;
use crate::estimate::Counts;
use crate::{Config, DescriptorStyle, json_string};

/// The descriptor of a generic result stays under this many estimated tokens.
pub const DESCRIPTOR_BUDGET: u32 = 800;
/// The preview of the first records, all sections together, stays under this many tokens.
const PREVIEW_BUDGET: u32 = 200;
/// A string in a shortened preview record is cut to this many characters.
const PREVIEW_STRING: usize = 60;

/// What one attempt at the descriptor shows.
#[derive(Clone, Copy)]
struct Level {
    /// Schemas, and their `required` lists.
    schemas: bool,
    required: bool,
    /// Preview records per section.
    preview: usize,
    /// Recipes per section, and of those, how many the guidance prints as `lro_extract` calls.
    recipes: usize,
    calls: usize,
    /// Each section's path and shape in the summary.
    paths: bool,
}

/// Richest first: each drops what helps least, until the descriptor fits its budget. Schemas
/// (the fields any query needs) go last; the preview and the recipes thin out before them, and
/// the recipes' `lro_extract` calls (which repeat the file's path) before the recipes.
#[rustfmt::skip]
const LEVELS: [Level; 8] = [
    Level { schemas: true, required: true, preview: 3, recipes: usize::MAX, calls: usize::MAX, paths: true },
    Level { schemas: true, required: true, preview: 1, recipes: usize::MAX, calls: usize::MAX, paths: true },
    Level { schemas: true, required: true, preview: 1, recipes: 4, calls: 4, paths: true },
    Level { schemas: true, required: false, preview: 1, recipes: 4, calls: 2, paths: true },
    Level { schemas: true, required: false, preview: 0, recipes: 2, calls: 2, paths: true },
    Level { schemas: true, required: false, preview: 0, recipes: 2, calls: 1, paths: true },
    Level { schemas: true, required: false, preview: 0, recipes: 1, calls: 1, paths: false },
    Level { schemas: false, required: false, preview: 0, recipes: 1, calls: 1, paths: false },
];

/// The descriptor (JSON text) of sections written to `files`, for a result estimated at `tokens`.
pub(super) fn generic_descriptor(
    config: &Config,
    split: &Split,
    profiles: &[Profile],
    files: &[Written],
    tokens: u32,
) -> String {
    let sections = &split.sections;
    // Computed once; the levels below only choose how much of it to show.
    let schemas: Vec<Value> = profiles.iter().map(infer_schema).collect();
    let recipes: Vec<Vec<GenRecipe>> = files
        .iter()
        .zip(profiles)
        .map(|(f, p)| section_recipes(&f.name, p))
        .collect();
    let previews = config.descriptor == DescriptorStyle::Full;
    let warning = (!split.warnings.is_empty()).then(|| json_string(&split.warnings.join(" ")));
    // Richest first; each step drops what helps least until the descriptor fits its budget.
    let mut last = String::new();
    for level in LEVELS {
        let mut summary = Map::new();
        let mut file_map = Map::new();
        let mut schema_map = Map::new();
        let mut recipe_map = Map::new();
        let keep = level.recipes;
        let preview = (previews && level.preview > 0).then(|| preview(split, level.preview));
        for (i, (section, file)) in sections.iter().zip(files).enumerate() {
            let mut entry = Map::new();
            if level.paths {
                if let Some(path) = &section.path {
                    entry.insert("path".into(), json!(path));
                }
                entry.insert("shape".into(), json!(section.shape));
            }
            entry.insert("count".into(), json!(section.lines.len()));
            entry.insert("estimated_tokens".into(), json!(file.tokens));
            summary.insert(section.key.clone(), Value::Object(entry));
            file_map.insert(section.key.clone(), json!(file.path));
            if level.schemas {
                let mut schema = schemas[i].clone();
                if !level.required
                    && let Some(map) = schema.as_object_mut()
                {
                    map.remove("required");
                }
                schema_map.insert(
                    section.key.clone(),
                    json!({"description": "Line 1 is header metadata. Lines 2+ are data objects.", "line_schema": schema}),
                );
            }
            for r in recipes[i].iter().take(keep) {
                recipe_map.insert(r.name.clone(), json!(recipe_command(&file.path, &r.program, r.slurp)));
            }
        }
        let summary = Value::Object(summary).to_string();
        let file_map = Value::Object(file_map).to_string();
        let schema_map = Value::Object(schema_map).to_string();
        let recipe_map = Value::Object(recipe_map).to_string();
        // The descriptor's own cost is part of it: measured, written in, measured again.
        let mut own = 0;
        // A figure one digit longer can move the estimate by a token: four rounds settle it.
        for round in 0..4 {
            // Negative when a result just over a low threshold costs less than its descriptor.
            let saved = i64::from(tokens) - i64::from(own);
            let guidance = json_string(&guidance(
                config.extract_tool,
                split,
                files,
                &recipes,
                level.calls,
                tokens,
                own,
            ));
            let figures = format!("{{\"result\":{tokens},\"descriptor\":{own},\"saved\":{saved}}}");
            let mut members: Vec<(&str, &str)> = vec![("offloaded", "true")];
            members.extend(split.inline.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            if let Some(warning) = &warning {
                members.push(("lro_warning", warning));
            }
            members.push(("summary", &summary));
            members.push(("files", &file_map));
            if level.schemas {
                members.push(("schemas", &schema_map));
            }
            if let Some(preview) = &preview {
                members.push(("preview", preview));
            }
            members.push(("jq_recipes", &recipe_map));
            members.push(("tokens", &figures));
            members.push(("guidance", &guidance));
            let text = object_text(members);
            let measured = Counts::of(&text).tokens();
            last = text;
            if measured == own || round == 3 {
                own = own.max(measured);
                break;
            }
            own = measured;
        }
        if own <= DESCRIPTOR_BUDGET {
            return last;
        }
    }
    last
}

/// The first records of each section, whole when they fit, within [`PREVIEW_BUDGET`]: a JSON
/// object of arrays, by section. A first record too large to show whole is shown shortened
/// (long strings cut, nested values summarised), so the model sees the shape of every section.
fn preview(split: &Split, per_section: usize) -> String {
    let shown: Vec<_> = split.sections.iter().filter(|s| s.shape != "other").collect();
    let share = PREVIEW_BUDGET / u32::try_from(shown.len().max(1)).unwrap_or(1);
    let mut members: Vec<(String, String)> = Vec::new();
    for section in shown {
        let mut used = 0;
        let mut records: Vec<String> = Vec::new();
        for line in section.lines.iter().take(per_section) {
            let cost = Counts::of(line).tokens();
            if used + cost > share {
                if records.is_empty()
                    && let Ok(value) = crate::json_text::parse::<Value>(line, crate::jq::MAX_DEPTH)
                {
                    records.push(shorten(&value, 0).to_string());
                }
                break;
            }
            used += cost;
            records.push(line.to_string());
        }
        members.push((section.key.clone(), format!("[{}]", records.join(","))));
    }
    object_text(members.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A record cut down for the preview: strings to [`PREVIEW_STRING`] characters, values below the
/// first level to a note of their size.
fn shorten(value: &Value, depth: usize) -> Value {
    match value {
        Value::String(s) if s.chars().count() > PREVIEW_STRING => {
            Value::String(format!("{}…", s.chars().take(PREVIEW_STRING).collect::<String>()))
        }
        Value::Array(items) if depth >= 1 => json!(format!("[… {} items]", items.len())),
        Value::Object(map) if depth >= 2 => json!(format!("{{… {} fields}}", map.len())),
        Value::Array(items) => Value::Array(items.iter().take(3).map(|v| shorten(v, depth + 1)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v, depth + 1))).collect()),
        other => other.clone(),
    }
}

/// The guidance of a generic descriptor: what was offloaded, where, and how to query it (the
/// recipes as `lro_extract` calls when the host offers the tool).
fn guidance(
    extract_tool: bool,
    split: &Split,
    files: &[Written],
    recipes: &[Vec<GenRecipe>],
    keep: usize,
    tokens: u32,
    own: u32,
) -> String {
    let listed: Vec<String> = split
        .sections
        .iter()
        .map(|s| format!("{} ({} records)", s.key, s.lines.len()))
        .collect();
    let saving = match tokens.checked_sub(own) {
        Some(saved) => format!("saving ~{saved}"),
        None => "more than the result itself".into(),
    };
    let mut text = format!(
        "Results offloaded to JSONL: {}. The full result would cost ~{tokens} tokens; this descriptor ~{own}, \
         {saving}. `files` gives each section's file.\n",
        listed.join(", "),
    );
    if extract_tool {
        text.push_str("\nQuery them with the `lro_extract` tool. These calls run as printed:\n");
        for (file, section_recipes) in files.iter().zip(recipes) {
            for r in section_recipes.iter().take(keep) {
                text.push_str(&format!(
                    "  - {}: {}\n",
                    r.name,
                    extract_call(&file.path, &r.program, r.slurp)
                ));
            }
        }
        text.push_str(
            "Or write your own query over the fields in schemas: it runs once per record, or once over an array \
             of all records with slurp=true (counting, grouping, sorting).\n",
        );
    } else {
        text.push_str(
            "\nRun the jq_recipes as printed, or your own jq over the fields in schemas; add -s to see all \
             records as one array (counting, grouping, sorting).\n",
        );
    }
    text.push_str("Line 1 of each file is header metadata; records start at line 2.");
    text
}
