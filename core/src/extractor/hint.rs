//! Hints for a filter that reads fields the file's detail level does not have (they are null
//! there, so the filter matches nothing or fails), or `.score`, which is never in the file.

use crate::recipes::fields_absent_at;
use crate::{Detail, Error};

/// Adds a hint naming the fields the program uses that this detail level does not have.
pub(super) fn with_hint(error: Error, program: &str, detail: Option<Detail>) -> Error {
    let Some(hint) = absent_field_hint(program, detail) else {
        return error;
    };
    match error {
        Error::FilterFailed(m) => Error::FilterFailed(format!("{m}. {hint}")),
        Error::InvalidFilter(m) => Error::InvalidFilter(format!("{m}. {hint}")),
        other => other,
    }
}

/// The hint for `program` at `detail`, if it reads absent fields or `.score`.
pub(super) fn absent_field_hint(program: &str, detail: Option<Detail>) -> Option<String> {
    let detail = detail?;
    // The parser's reading of the filter, as extraction's plan has it: a `.` in a string or a
    // comment names nothing.
    let used = crate::plan::named_fields(program)?;
    let absent: Vec<&str> = fields_absent_at(detail)
        .into_iter()
        .filter(|f| used.iter().any(|u| u == f))
        .collect();
    let score = used.iter().any(|u| u == "score");
    if absent.is_empty() && !score {
        return None;
    }
    let mut hint = String::from("Hint:");
    if !absent.is_empty() {
        let list: Vec<String> = absent.iter().map(|f| format!("`.{f}`")).collect();
        hint.push_str(&format!(
            " {} not present at {} detail, so {} null here.",
            list.join(", "),
            detail.as_str(),
            if absent.len() == 1 { "it is" } else { "they are" }
        ));
        if absent.contains(&"confidence") && detail == Detail::Full {
            hint.push_str(" At full detail confidence is `.provenance.confidence`.");
        } else if detail != Detail::Full {
            hint.push_str(&format!(
                " Call the tool again with a richer detail level to use {}.",
                if absent.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    if score {
        hint.push_str(" `.score` is never in the file: lines are in rank order instead.");
    }
    Some(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_fields_skip_strings_and_nested_keys() {
        assert_eq!(
            crate::plan::named_fields(
                r#"select(.content | test(".x")) | .provenance.confidence, .[0].title, (.a).b, .c?.d, $x.e, "\(.f)", {g, h: 1}, .["i"] # .j"#
            ),
            Some(
                ["content", "provenance", "a", "c", "f", "g", "i"]
                    .map(String::from)
                    .to_vec()
            )
        );
        // Recipe 9 at full detail reads the confidence where that level has it.
        assert_eq!(
            absent_field_hint("sort_by(-.provenance.confidence)", Some(Detail::Full)),
            None
        );
    }

    #[test]
    fn hints_name_fields_absent_at_the_level() {
        let hint = absent_field_hint("select(.content | test(\"x\"))", Some(Detail::Light)).unwrap();
        assert!(hint.contains("`.content` not present at light detail"), "{hint}");
        let hint = absent_field_hint("sort_by(.confidence)", Some(Detail::Full)).unwrap();
        assert!(hint.contains(".provenance.confidence"), "{hint}");
        assert!(absent_field_hint(".content", Some(Detail::Medium)).is_none());
        assert!(
            absent_field_hint(".score", Some(Detail::Medium))
                .unwrap()
                .contains("rank order")
        );
    }
}
