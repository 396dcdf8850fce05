//! jq recipes generated for a generic section from its records (the generic profile's
//! counterpart of the spec's numbered library): every field and example value in them is one the
//! records hold, so each recipe answers something when run as printed.

use super::schema::{Field, Profile};
use super::sections::sanitize;
use crate::json_string;
use crate::recipes::shell_quote;

/// A generated recipe: a name, and the jq program with its mode.
pub(super) struct GenRecipe {
    /// `count_items`, `count_by_state_items`, ...: the key in the descriptor's `jq_recipes`.
    pub(super) name: String,
    /// The jq program.
    pub(super) program: String,
    /// Runs over all lines at once (`jq -s`).
    pub(super) slurp: bool,
}

/// The jq path of a field: `.state`, `.node.state`, `.["odd key"]`.
pub(super) fn path_expr(path: &[String]) -> String {
    let mut out = String::new();
    for member in path {
        let plain = member
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && member.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            out.push('.');
            out.push_str(member);
        } else {
            // `.a["b"]`, not `.a.["b"]`, which jq 1.6 does not read.
            let dot = if out.is_empty() { "." } else { "" };
            out.push_str(&format!("{dot}[{}]", json_string(member)));
        }
    }
    if out.is_empty() { ".".into() } else { out }
}

/// Recipes for one section, most useful first (a descriptor over its budget keeps the leading
/// ones): count, the first 10, counts by a low-cardinality string field, a filter on it by its
/// most common value, the top 10 by a number or a time, a search of the main text field for a
/// word its first record holds, and counts by a second low-cardinality field.
/// `name` is the section's unique name in file names (`[a-z0-9_]`).
pub(super) fn section_recipes(name: &str, profile: &Profile) -> Vec<GenRecipe> {
    let s = name;
    let recipe = |name: String, program: String, slurp: bool| GenRecipe { name, program, slurp };
    let mut out = vec![
        recipe(format!("count_{s}"), "length".into(), true),
        recipe(format!("first_10_{s}"), ".[:10][]".into(), true),
    ];
    let n = profile.count;
    if !profile.objects() {
        return out;
    }
    let usable = |f: &&Field| f.path.iter().all(|m| m.len() <= 40) && f.present * 5 >= n * 4;
    // Low-cardinality string fields: a few distinct values, each shared by several records.
    let grouping: Vec<&Field> = profile
        .fields
        .iter()
        .filter(usable)
        .filter(|f| f.strings == f.present && f.distinct().is_some_and(|d| (2..=20).contains(&d) && d * 2 <= n))
        .take(2)
        .collect();
    let count_by = |field: &Field| {
        let p = path_expr(&field.path);
        recipe(
            format!("count_by_{}_{s}", sanitize(field.name(), 24)),
            format!(
                "group_by({p}) | map({{{}: .[0]{p}, count: length}})",
                json_string(field.name())
            ),
            true,
        )
    };
    if let Some(field) = grouping.first() {
        out.push(count_by(field));
    }
    if let Some(field) = grouping.first()
        && let Some((value, _)) = field.values.iter().max_by_key(|(_, count)| *count)
    {
        out.push(recipe(
            format!("where_{}_{s}", sanitize(field.name(), 24)),
            format!("select({} == {value})", path_expr(&field.path)),
            false,
        ));
    }
    // A number (amounts, sizes, scores) or a time to rank by.
    let ranked = profile
        .fields
        .iter()
        .filter(usable)
        .find(|f| f.numbers == f.present && f.distinct().is_none_or(|d| d > 2) && !is_identifier(f.name()))
        .or_else(|| profile.fields.iter().filter(usable).find(|f| f.times == f.present));
    if let Some(field) = ranked {
        out.push(recipe(
            format!("top_10_by_{}_{s}", sanitize(field.name(), 24)),
            format!("sort_by({}) | reverse | .[:10][]", path_expr(&field.path)),
            true,
        ));
    }
    // The main text field: prose (most values hold a space), the longest on average.
    let main_text = profile
        .fields
        .iter()
        .filter(|f| f.path.iter().all(|m| m.len() <= 40) && f.strings > 0 && f.prose * 2 >= f.strings)
        .filter(|f| f.text_len / f.strings >= 20)
        .max_by_key(|f| f.text_len / f.strings);
    if let Some(field) = main_text
        && let Some(word) = field.first_text.as_deref().and_then(example_word)
    {
        out.push(recipe(
            format!("search_{}_{s}", sanitize(field.name(), 24)),
            format!(
                "select(({} // \"\") | tostring | test({}; \"i\"))",
                path_expr(&field.path),
                json_string(&word)
            ),
            false,
        ));
    }
    // A second grouping helps least: it goes last, the first to be cut.
    if let Some(field) = grouping.get(1) {
        out.push(count_by(field));
    }
    out
}

/// `id`, `user_id`, `number`, a text's line `n`: numbers that name a record rather than measure it.
fn is_identifier(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    // `n` and `line` number the lines of a text.
    matches!(name.as_str(), "id" | "number" | "n" | "line")
        || name.ends_with("_id")
        || name.ends_with("id") && name.len() <= 4
}

/// The longest plain word (letters and digits, 4 to 24 of them) of a text: a search term the
/// record it came from is sure to match, with nothing a regex would read specially.
fn example_word(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| (4..=24).contains(&w.chars().count()))
        .max_by_key(|w| w.chars().count())
        .map(str::to_lowercase)
}

/// The shell command of a generated recipe over `path`.
pub fn recipe_command(path: &str, program: &str, slurp: bool) -> String {
    format!(
        "tail -n +2 {} | jq -c{} {}",
        shell_quote(path),
        if slurp { "s" } else { "" },
        shell_quote(program)
    )
}

/// The `lro_extract` call of a generated recipe over `path`, as the guidance prints it.
pub fn extract_call(path: &str, program: &str, slurp: bool) -> String {
    format!(
        "lro_extract(file_path={}, query={}{})",
        json_string(path),
        json_string(program),
        if slurp { ", slurp=true" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn recipes_use_real_fields_and_values() {
        let lines: Vec<String> = (0..40)
            .map(|i| {
                json!({"state": if i % 3 == 0 { "open" } else { "closed" }, "id": i, "amount": i * 7 % 13,
                       "body": format!("a long body of text number {i} for searching")})
                .to_string()
            })
            .collect();
        let profile = Profile::of(lines.iter().map(String::as_str));
        let recipes = section_recipes("items", &profile);
        let names: Vec<&str> = recipes.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "count_items",
                "first_10_items",
                "count_by_state_items",
                "where_state_items",
                "top_10_by_amount_items",
                "search_body_items"
            ]
        );
        assert_eq!(recipes[3].program, "select(.state == \"closed\")");
        assert_eq!(
            recipes[5].program,
            "select((.body // \"\") | tostring | test(\"searching\"; \"i\"))"
        );
    }

    #[test]
    fn nested_fields_are_paths() {
        assert_eq!(path_expr(&["node".into(), "state".into()]), ".node.state");
        assert_eq!(path_expr(&["_source".into(), "a b".into()]), "._source[\"a b\"]");
        let lines: Vec<String> = (0..30)
            .map(|i| json!({"node": {"state": (["OPEN", "CLOSED"][i % 2])}}).to_string())
            .collect();
        let recipes = section_recipes("edges", &Profile::of(lines.iter().map(String::as_str)));
        assert_eq!(
            recipes[2].program,
            "group_by(.node.state) | map({\"state\": .[0].node.state, count: length})"
        );
    }
}
