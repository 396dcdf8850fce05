//! jq recipes generated for a generic section from its lines: the generic profile's counterpart
//! of the spec's numbered library.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::sections::sanitize;
use crate::json_string;
use crate::recipes::shell_quote;

/// A generated recipe: a name, and the jq program with its mode.
pub(super) struct GenRecipe {
    /// `list_all_items`, `count_by_state_items`, ...: the key in the descriptor's `jq_recipes`.
    pub(super) name: String,
    /// The jq program.
    pub(super) program: String,
    /// Runs over all lines at once (`jq -s`).
    pub(super) slurp: bool,
}

/// Recipes for one section: list, count, first 10, counts by each low-cardinality string field
/// (up to two), and a keyword search on the main text field.
pub(super) fn section_recipes(key: &str, lines: &[Value]) -> Vec<GenRecipe> {
    let s = sanitize(key, 24);
    let mut out = vec![
        GenRecipe {
            name: format!("list_all_{s}"),
            program: ".".into(),
            slurp: false,
        },
        GenRecipe {
            name: format!("count_{s}"),
            program: "length".into(),
            slurp: true,
        },
        GenRecipe {
            name: format!("first_10_{s}"),
            program: ".[:10][]".into(),
            slurp: true,
        },
    ];
    if !lines.iter().all(Value::is_object) || lines.is_empty() {
        return out;
    }
    // Per string field: how many lines have it, its distinct values (capped), its total length,
    // and how many of its values are prose (contain a space).
    let mut order: Vec<&str> = Vec::new();
    let mut stats: HashMap<&str, (usize, HashSet<&str>, usize, usize)> = HashMap::new();
    for line in lines {
        for (k, v) in line.as_object().expect("checked above") {
            if let Value::String(text) = v {
                let entry = stats.entry(k.as_str()).or_insert_with(|| {
                    order.push(k.as_str());
                    (0, HashSet::new(), 0, 0)
                });
                entry.0 += 1;
                if entry.1.len() <= 21 {
                    entry.1.insert(text.as_str());
                }
                entry.2 += text.chars().count();
                entry.3 += usize::from(text.contains(' '));
            }
        }
    }
    let n = lines.len();
    let field = |k: &str| json_string(k);
    let mut grouped = 0;
    for k in &order {
        let (present, distinct, ..) = &stats[k];
        let low = distinct.len() >= 2 && distinct.len() <= 20 && distinct.len() * 2 <= n;
        if grouped < 2 && low && present * 5 >= n * 4 && k.len() <= 40 {
            grouped += 1;
            out.push(GenRecipe {
                name: format!("count_by_{}_{s}", sanitize(k, 24)),
                program: format!(
                    "group_by(.[{f}]) | map({{({f}): .[0][{f}], count: length}})",
                    f = field(k)
                ),
                slurp: true,
            });
        }
    }
    // The main text field: prose (most values contain a space), the longest on average.
    let main_text = order
        .iter()
        .filter(|k| k.len() <= 40 && stats[*k].3 * 2 >= stats[*k].0)
        .map(|k| (*k, stats[k].2 / stats[k].0.max(1)))
        .filter(|(_, avg)| *avg >= 20)
        .max_by_key(|(_, avg)| *avg);
    if let Some((k, _)) = main_text {
        out.push(GenRecipe {
            name: format!("search_{}_{s}", sanitize(k, 24)),
            program: format!(
                "select((.[{}] // \"\") | tostring | test(\"keyword\"; \"i\"))",
                field(k)
            ),
            slurp: false,
        });
    }
    out
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn recipes_group_low_cardinality_fields_and_search_the_main_text() {
        let lines: Vec<Value> = (0..40)
            .map(|i| json!({"state": if i % 3 == 0 { "open" } else { "closed" }, "id": format!("id-{i}"), "body": format!("a long body of text number {i} for search")}))
            .collect();
        let names: Vec<String> = section_recipes("items", &lines).into_iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            [
                "list_all_items",
                "count_items",
                "first_10_items",
                "count_by_state_items",
                "search_body_items"
            ]
        );
    }
}
