//! The generic profile: any tool's data split into sections (the large arrays; the small values
//! stay inline in the descriptor, the rest joins an `other` section), each section written to
//! its own JSONL file, all or none; when writing fails, the truncated fallback.

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use ulid::Ulid;

use super::descriptor::{estimate_value, generic_descriptor};
use super::sdk::{Data, replace};
use super::{ToolOutcome, ToolSettings};
use crate::estimate::Counts;
use crate::offload;
use crate::time::format_rfc3339_ms;
use crate::{Config, Error, Event};

/// The most sections one result is split into; beyond it, small arrays join the `other` section.
const MAX_SECTIONS: usize = 4;
/// An array of at least this many estimated tokens becomes a section of its own.
const SECTION_MIN_TOKENS: u32 = 100;
/// Scalar values up to this size are kept in the descriptor, up to `INLINE_BUDGET` in all.
const INLINE_MAX_TOKENS: u32 = 40;
const INLINE_BUDGET: u32 = 150;
/// Descriptor keys an inline key may not take.
const RESERVED: [&str; 6] = ["offloaded", "summary", "files", "schemas", "jq_recipes", "guidance"];

/// One file's worth of the data.
pub(super) struct Section {
    /// The member of the result object it holds; `lines` for text, `results` for an array, and
    /// `other` (or `other_keys`) for the members no section took.
    pub(super) key: String,
    /// One JSON value per line of the file.
    pub(super) lines: Vec<Value>,
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

/// Splits the data into inline keys and sections.
fn split(data: Data, settings: Option<&ToolSettings>) -> (Map<String, Value>, Vec<Section>) {
    let object = match data {
        Data::Text(text) => {
            let lines = text
                .lines()
                .enumerate()
                .map(|(i, l)| json!({"n": i + 1, "text": l}))
                .collect();
            return (
                Map::new(),
                vec![Section {
                    key: "lines".into(),
                    lines,
                }],
            );
        }
        Data::Json(Value::Array(items)) => {
            return (
                Map::new(),
                vec![Section {
                    key: "results".into(),
                    lines: items,
                }],
            );
        }
        Data::Json(Value::Object(map)) => map,
        Data::Json(other) => {
            return (
                Map::new(),
                vec![Section {
                    key: "results".into(),
                    lines: vec![other],
                }],
            );
        }
    };
    let chosen: Option<HashSet<&str>> = settings
        .and_then(|s| s.sections.as_ref())
        .map(|s| s.iter().map(String::as_str).collect());
    let wanted_inline: Option<HashSet<&str>> = settings
        .and_then(|s| s.inline_keys.as_ref())
        .map(|s| s.iter().map(String::as_str).collect());

    let mut arrays: Vec<(String, Vec<Value>, u32)> = Vec::new();
    let mut inline = Map::new();
    let mut other = Vec::new();
    let mut inline_used = 0;
    for (key, value) in object {
        let size = estimate_value(&value);
        let is_section = match &chosen {
            Some(keys) => keys.contains(key.as_str()) && value.is_array(),
            None => value.is_array() && size >= SECTION_MIN_TOKENS,
        };
        if is_section {
            let Value::Array(items) = value else {
                unreachable!("checked above")
            };
            arrays.push((key, items, size));
            continue;
        }
        let inline_ok = match &wanted_inline {
            Some(keys) => keys.contains(key.as_str()),
            None => {
                !value.is_array()
                    && !value.is_object()
                    && size <= INLINE_MAX_TOKENS
                    && inline_used + size <= INLINE_BUDGET
            }
        };
        if inline_ok && !RESERVED.contains(&key.as_str()) {
            inline_used += size;
            inline.insert(key, value);
        } else {
            other.push(json!({"key": key, "value": value}));
        }
    }
    // Keep the largest arrays as sections; the rest joins `other`, so nothing is left out.
    let room = if other.is_empty() {
        MAX_SECTIONS
    } else {
        MAX_SECTIONS - 1
    };
    if arrays.len() > room {
        arrays.sort_by_key(|a| std::cmp::Reverse(a.2));
        for (key, items, _) in arrays.split_off(room.saturating_sub(1).max(1)) {
            other.push(json!({"key": key, "value": items}));
        }
    }
    let mut sections: Vec<Section> = arrays
        .into_iter()
        .map(|(key, lines, _)| Section { key, lines })
        .collect();
    if !other.is_empty() {
        let key = if sections.iter().any(|s| s.key == "other") {
            "other_keys"
        } else {
            "other"
        };
        sections.push(Section {
            key: key.into(),
            lines: other,
        });
    }
    (inline, sections)
}

/// Offloads any tool's data as sections.
#[allow(clippy::too_many_arguments, reason = "one private call site")]
pub(super) fn generic(
    config: &Config,
    tool: &str,
    settings: Option<&ToolSettings>,
    data: Data,
    result: &mut Map<String, Value>,
    tokens: u32,
    emit: &mut dyn FnMut(Event),
) -> Result<ToolOutcome, Error> {
    let (inline, sections) = split(data, settings);
    let ulid = Ulid::generate();
    let tool_name = sanitize(tool, 40);
    let mut used_names = HashSet::new();
    // Every file's text first: the storage caps are checked for all of them at once.
    let mut planned = Vec::new();
    for section in &sections {
        let mut section_name = sanitize(&section.key, 24);
        while !used_names.insert(section_name.clone()) {
            section_name.push('_');
        }
        let operation = format!("{tool_name}-{section_name}");
        let name = format!("{}-{operation}-{ulid}.jsonl", config.prefix);
        let lines: Vec<String> = section.lines.iter().map(Value::to_string).collect();
        // Every line must be one `lro_extract` can read again, as at the record level.
        let max = crate::jq::MAX_DEPTH;
        if let Some(i) = lines
            .iter()
            .position(|l| crate::json_text::depth(l.as_bytes(), max) > max)
        {
            return Err(Error::InvalidInput(format!(
                "{}[{i}] is nested more than {max} levels deep; offloaded records may nest at most {max} levels, \
                 the most lro_extract reads",
                section.key
            )));
        }
        let section_tokens = lines.iter().fold(Counts::default(), |c, l| c + Counts::of(l)).tokens();
        let header = json!({
            "type": "lro_header", "operation": operation, "query": null, "count": lines.len(),
            "schema_version": config.schema_version, "timestamp": format_rfc3339_ms(ulid.timestamp_ms()),
            "expires_at": format_rfc3339_ms(crate::custodian::promised_expiry(config, ulid.timestamp_ms())),
            "estimated_tokens": section_tokens, "detail": "generic", "tool": tool, "section": section.key,
        })
        .to_string();
        planned.push((name, operation, header, lines, section_tokens));
    }
    let created = ulid.timestamp_ms();
    let writes: Vec<offload::Planned<'_, _>> = planned
        .iter()
        .map(|(name, _, header, lines, _)| offload::Planned {
            name,
            header,
            lines: lines.iter().map(String::as_str),
        })
        .collect();
    let mut files = Vec::new();
    let failure = match offload::write_files(config, &writes, created, emit) {
        Ok(sizes) => {
            for ((name, operation, _, lines, section_tokens), bytes) in planned.iter().zip(sizes) {
                let path = format!("{}/{name}", config.dir_base());
                files.push((path, lines.len(), *section_tokens, bytes, operation.clone()));
            }
            None
        }
        Err((i, e)) => Some(match planned.get(i) {
            Some((name, ..)) => format!("writing {}/{name}: {e}", config.dir_base()),
            None => format!("writing into {}: {e}", config.dir_base()),
        }),
    };
    if let Some(error) = failure {
        let (value, warning, total, returned) = degrade(config, &inline, &sections, &error);
        let text = value.to_string();
        emit(Event::OffloadWriteFailed {
            path: config.output_dir.clone(),
            operation: tool.to_owned(),
            error,
            total,
            returned,
        });
        return Ok(ToolOutcome::Degraded {
            result: replace(result, &text, value),
            warning,
        });
    }
    for (path, count, section_tokens, bytes, operation) in &files {
        emit(Event::OffloadCreated {
            path: path.clone(),
            operation: operation.clone(),
            count: u32::try_from(*count).unwrap_or(u32::MAX),
            tokens: *section_tokens,
            bytes: *bytes,
        });
    }
    let paths: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let section_tokens: Vec<u32> = files.iter().map(|f| f.2).collect();
    let descriptor = generic_descriptor(config, &inline, &sections, &paths, &section_tokens, tokens);
    let text = descriptor.to_string();
    Ok(ToolOutcome::Offloaded {
        result: replace(result, &text, descriptor),
        files: paths.iter().map(|p| (*p).to_owned()).collect(),
        tokens,
    })
}

/// The truncated fallback: the inline keys, then the leading lines of each section that fit the
/// threshold, with counts and a warning.
fn degrade(
    config: &Config,
    inline: &Map<String, Value>,
    sections: &[Section],
    error: &str,
) -> (Value, String, u32, u32) {
    let total: usize = sections.iter().map(|s| s.lines.len()).sum();
    let warning_for = |returned: usize| {
        format!(
            "LRO could not write the offload file ({error}). Showing {returned} of {total} items, truncated to fit {} tokens; \
             the rest is not available. Narrow the request to see them.",
            config.threshold_tokens
        )
    };
    let build = |kept: &[usize], returned: usize| {
        let mut d = Map::new();
        d.insert("truncated".into(), json!(true));
        d.insert("total_count".into(), json!(total));
        d.insert("returned_count".into(), json!(returned));
        d.insert("lro_warning".into(), json!(warning_for(returned)));
        for (k, v) in inline {
            d.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (section, n) in sections.iter().zip(kept) {
            d.insert(section.key.clone(), Value::Array(section.lines[..*n].to_vec()));
        }
        Value::Object(d)
    };
    let mut kept = vec![0; sections.len()];
    let mut budget = Counts::of(&build(&kept, total).to_string());
    'sections: for (i, section) in sections.iter().enumerate() {
        for (j, line) in section.lines.iter().enumerate() {
            let next = budget
                + Counts::of(&line.to_string())
                + Counts {
                    other: u64::from(j > 0),
                    cjk: 0,
                };
            if next.tokens() > config.threshold_tokens {
                break 'sections;
            }
            budget = next;
            kept[i] += 1;
        }
    }
    let returned: usize = kept.iter().sum();
    let value = build(&kept, returned);
    let total32 = u32::try_from(total).unwrap_or(u32::MAX);
    (
        value,
        warning_for(returned),
        total32,
        u32::try_from(returned).unwrap_or(u32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_split_into_sections_inline_keys_and_the_rest() {
        let items: Vec<Value> = (0..50)
            .map(|i| json!({"id": i, "title": format!("issue number {i} with a title")}))
            .collect();
        let data = json!({"total_count": 500, "incomplete_results": false, "items": items, "facets": {"a": 1}});
        let (inline, sections) = split(Data::Json(data), None);
        assert_eq!(inline.keys().collect::<Vec<_>>(), ["total_count", "incomplete_results"]);
        assert_eq!(
            sections.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
            ["items", "other"]
        );
        assert_eq!(sections[1].lines, [json!({"key": "facets", "value": {"a": 1}})]);
    }

    #[test]
    fn many_arrays_fold_into_other_so_nothing_is_lost() {
        let mut data = Map::new();
        for k in 0..10 {
            data.insert(
                format!("list{k}"),
                json!((0..40).map(|i| format!("value {i} of list {k}")).collect::<Vec<_>>()),
            );
        }
        let (_, sections) = split(Data::Json(Value::Object(data)), None);
        assert!(sections.len() <= MAX_SECTIONS);
        let lines: usize = sections
            .iter()
            .filter(|s| s.key != "other")
            .map(|s| s.lines.len())
            .sum();
        let folded = sections.iter().find(|s| s.key == "other").unwrap().lines.len();
        assert_eq!(lines / 40 + folded, 10);
    }
}
