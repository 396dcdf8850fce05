//! Writing a generic result: each section to its own JSONL file, all or none, then the
//! descriptor in the result's place; when writing fails, the truncated fallback.

use std::collections::HashSet;

use serde_json::json;
use ulid::Ulid;

use super::descriptor::generic_descriptor;
use super::schema::Profile;
use super::sdk::{Data, Members, replace};
use super::sections::{Split, sanitize, split};
use super::{ToolOutcome, ToolSettings};
use crate::estimate::Counts;
use crate::time::format_rfc3339_ms;
use crate::{Config, Error, Event, json_string, offload};

/// A file written for a section.
pub(super) struct Written {
    /// Its absolute path.
    pub(super) path: String,
    /// The section's name as file and recipe names show it (`[a-z0-9_]`, unique in the result).
    pub(super) name: String,
    /// Estimated tokens of its lines.
    pub(super) tokens: u32,
}

/// Offloads any tool's data as sections.
#[allow(clippy::too_many_arguments, reason = "one private call site")]
pub(super) fn generic(
    config: &Config,
    tool: &str,
    settings: Option<&ToolSettings>,
    data: Data<'_>,
    result: &Members<'_>,
    kept: &[&str],
    tokens: u32,
    emit: &mut dyn FnMut(Event),
) -> Result<ToolOutcome, Error> {
    let split = split(&data, settings);
    let ulid = Ulid::generate();
    let tool_name = sanitize(tool, 40);
    let mut used_names = HashSet::new();
    // Every file's text first: the storage caps are checked for all of them at once.
    let mut planned = Vec::new();
    for section in &split.sections {
        let mut section_name = sanitize(&section.key, 24);
        while !used_names.insert(section_name.clone()) {
            section_name.push('_');
        }
        let operation = format!("{tool_name}-{section_name}");
        let name = format!("{}-{operation}-{ulid}.jsonl", config.prefix);
        // Every line must be one `lro_extract` can read again, as at the record level.
        let max = crate::jq::MAX_DEPTH;
        if let Some(i) = section
            .lines
            .iter()
            .position(|l| crate::json_text::depth(l.as_bytes(), max) > max)
        {
            return Err(Error::InvalidInput(format!(
                "{}[{i}] is nested more than {max} levels deep; offloaded records may nest at most {max} levels, \
                 the most lro_extract reads",
                section.key
            )));
        }
        let section_tokens = section
            .lines
            .iter()
            .fold(Counts::default(), |c, l| c + Counts::of(l))
            .tokens();
        let header = json!({
            "type": "lro_header", "operation": operation, "query": null, "count": section.lines.len(),
            "schema_version": config.schema_version, "timestamp": format_rfc3339_ms(ulid.timestamp_ms()),
            "expires_at": format_rfc3339_ms(crate::custodian::promised_expiry(config, ulid.timestamp_ms())),
            "estimated_tokens": section_tokens, "detail": "generic", "tool": tool, "section": section.key,
        })
        .to_string();
        planned.push((name, operation, header, section_tokens, section_name));
    }
    let created = ulid.timestamp_ms();
    let writes: Vec<offload::Planned<'_, _>> = planned
        .iter()
        .zip(&split.sections)
        .map(|((name, _, header, ..), section)| offload::Planned {
            name,
            header,
            lines: section.lines.iter().map(AsRef::as_ref),
        })
        .collect();
    let mut files = Vec::new();
    let failure = match offload::write_files(config, &writes, created, emit) {
        Ok(sizes) => {
            for (((name, operation, _, section_tokens, section_name), section), bytes) in
                planned.iter().zip(&split.sections).zip(sizes)
            {
                let path = format!("{}/{name}", config.dir_base());
                emit(Event::OffloadCreated {
                    path: path.clone(),
                    operation: operation.clone(),
                    count: u32::try_from(section.lines.len()).unwrap_or(u32::MAX),
                    tokens: *section_tokens,
                    bytes,
                });
                files.push(Written {
                    path,
                    name: section_name.clone(),
                    tokens: *section_tokens,
                });
            }
            None
        }
        Err((i, e)) => Some(match planned.get(i) {
            Some((name, ..)) => format!("writing {}/{name}: {e}", config.dir_base()),
            None => format!("writing into {}: {e}", config.dir_base()),
        }),
    };
    drop(writes);
    if let Some(error) = failure {
        let (payload, warning, total, returned) = degrade(config, &split, &error);
        emit(Event::OffloadWriteFailed {
            path: config.output_dir.clone(),
            operation: tool.to_owned(),
            error,
            total,
            returned,
        });
        return Ok(ToolOutcome::Degraded {
            result: replace(result, kept, &payload, &payload),
            warning,
        });
    }
    let profiles: Vec<Profile> = split
        .sections
        .iter()
        .map(|s| Profile::of(s.lines.iter().map(AsRef::as_ref)))
        .collect();
    let descriptor = generic_descriptor(config, &split, &profiles, &files, tokens);
    Ok(ToolOutcome::Offloaded {
        result: replace(result, kept, &descriptor, &descriptor),
        files: files.into_iter().map(|f| f.path).collect(),
        tokens,
    })
}

/// A JSON object's text from members whose values are JSON text already.
pub(super) fn object_text<'a>(members: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json_string(key));
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}

/// The truncated fallback: the inline values, then the leading lines of each section that fit
/// the threshold, with counts and a warning.
fn degrade(config: &Config, split: &Split<'_>, error: &str) -> (String, String, u32, u32) {
    let total: usize = split.sections.iter().map(|s| s.lines.len()).sum();
    let warning_for = |returned: usize| {
        format!(
            "LRO could not write the offload file ({error}). Showing {returned} of {total} items, truncated to fit {} tokens; \
             the rest is not available. Narrow the request to see them.",
            config.threshold_tokens
        )
    };
    let build = |kept: &[usize], returned: usize| {
        let warning = json_string(&warning_for(returned));
        let (total_text, returned_text) = (total.to_string(), returned.to_string());
        let arrays: Vec<String> = split
            .sections
            .iter()
            .zip(kept)
            .map(|(s, n)| format!("[{}]", s.lines[..*n].join(",")))
            .collect();
        let mut members: Vec<(&str, &str)> = vec![
            ("truncated", "true"),
            ("total_count", &total_text),
            ("returned_count", &returned_text),
            ("lro_warning", &warning),
        ];
        for (k, v) in &split.inline {
            if !members.iter().any(|(m, _)| m == k) {
                members.push((k, v));
            }
        }
        for (section, array) in split.sections.iter().zip(&arrays) {
            members.push((&section.key, array));
        }
        object_text(members)
    };
    let mut kept = vec![0; split.sections.len()];
    let mut budget = Counts::of(&build(&kept, total));
    'sections: for (i, section) in split.sections.iter().enumerate() {
        for (j, line) in section.lines.iter().enumerate() {
            let next = budget
                + Counts::of(line)
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
    let payload = build(&kept, returned);
    let total32 = u32::try_from(total).unwrap_or(u32::MAX);
    (
        payload,
        warning_for(returned),
        total32,
        u32::try_from(returned).unwrap_or(u32::MAX),
    )
}
