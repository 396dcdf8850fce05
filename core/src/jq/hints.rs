//! What a compile error adds when a filter names something that is not there: why a jq builtin
//! is left out of the sandbox, the arities a builtin does take, or the nearest builtins by
//! spelling. A model reads the error and retries; a near miss should cost it one turn, not a
//! search through the manual.

/// jq builtins that lro leaves out on purpose, and why. The filter sees one value, as `.`, and
/// nothing of the process, the file system or the clock's time zone.
const UNAVAILABLE: &[(&str, &str)] = &[
    ("input", READS_NO_INPUT),
    ("inputs", READS_NO_INPUT),
    ("input_line_number", READS_NO_INPUT),
    ("$__prog_args", "the sandbox has no command line"),
    ("get_search_list", NO_MODULES),
    ("get_prog_origin", NO_MODULES),
    ("get_jq_origin", NO_MODULES),
    ("modulemeta", NO_MODULES),
    ("$__prog_name", "the sandbox has no command line"),
];

const READS_NO_INPUT: &str = "the sandbox reads no input besides `.`: the filter runs once per \
     value; to see every value at once, slurp them (`slurp`, or `--slurp` on the command line)";
const NO_MODULES: &str = "modules are not available in the sandbox";

/// Names from other languages that models reach for, and the jq that does the job.
const ALIASES: &[(&str, &str)] = &[
    ("len", "`length`"),
    ("count", "`length`"),
    ("size", "`length`"),
    ("filter", "`select` (or `map(select(...))` over an array)"),
    ("where", "`select`"),
    ("sum", "`add`"),
    ("avg", "`add / length`"),
    ("mean", "`add / length`"),
    ("uniq", "`unique`"),
    ("distinct", "`unique`"),
    ("lower", "`ascii_downcase`"),
    ("lowercase", "`ascii_downcase`"),
    ("downcase", "`ascii_downcase`"),
    ("upper", "`ascii_upcase`"),
    ("uppercase", "`ascii_upcase`"),
    ("upcase", "`ascii_upcase`"),
    ("replace", "`sub` or `gsub`"),
    ("items", "`to_entries`"),
    ("entries", "`to_entries`"),
    ("values_of", "`.[]`"),
    ("parse_json", "`fromjson`"),
    ("from_json", "`fromjson`"),
    ("to_json", "`tojson`"),
    ("stringify", "`tojson`"),
    ("to_string", "`tostring`"),
    ("to_number", "`tonumber`"),
    ("contains_key", "`has`"),
    ("regex", "`test`, `match` or `capture`"),
    ("head", "`limit` or `.[:n]`"),
    ("take", "`limit` or `.[:n]`"),
    ("tail", "`.[-n:]`"),
    ("skip", "`.[n:]`"),
    ("push", "`. + [value]`"),
    ("append", "`. + [value]`"),
    ("concat", "`add` or `+`"),
    ("count_by", "`group_by(f) | map({key: (.[0] | f), count: length})`"),
];

/// The help to add to "undefined filter `name`" when `name` is called with `arity` arguments;
/// `defined` lists every builtin as (name, arity).
pub(super) fn filter_hint(name: &str, arity: usize, defined: &[(&str, usize)]) -> Option<String> {
    if let Some((_, why)) = UNAVAILABLE.iter().find(|(n, _)| *n == name) {
        return Some(format!("`{name}` is not available: {why}"));
    }
    let mut arities: Vec<usize> = defined.iter().filter(|(n, _)| *n == name).map(|(_, a)| *a).collect();
    if !arities.is_empty() {
        arities.sort_unstable();
        arities.dedup();
        let arities: Vec<String> = arities.iter().map(|a| a.to_string()).collect();
        let takes = match arities.as_slice() {
            [one] if one == "1" => "1 argument".to_owned(),
            [one] => format!("{one} arguments"),
            [rest @ .., last] => format!("{} or {last} arguments", rest.join(", ")),
            [] => unreachable!("not empty"),
        };
        let given = if arity == 1 {
            "1 argument".to_owned()
        } else {
            format!("{arity} arguments")
        };
        return Some(format!(
            "`{name}` takes {takes}, not {given} (arguments are separated by `;`)"
        ));
    }
    if let Some((_, instead)) = ALIASES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Some(format!("jq has no `{name}`; use {instead}"));
    }
    let names = defined
        .iter()
        .filter(|(n, _)| !n.starts_with('_'))
        .map(|(n, a)| (*n, *a == arity));
    nearest(name, names).map(|names| format!("did you mean {names}?"))
}

/// The help to add to "undefined variable `$name`": the nearest defined variable.
pub(super) fn var_hint(name: &str, defined: &[&str]) -> Option<String> {
    if let Some((_, why)) = UNAVAILABLE.iter().find(|(n, _)| *n == name) {
        return Some(format!("`{name}` is not available: {why}"));
    }
    nearest(name, defined.iter().map(|n| (*n, true))).map(|names| format!("did you mean {names}?"))
}

/// Up to three of `names` nearest to `name`, each as (name, preferred), written as "`a`, `b` or
/// `c`". A name counts as near when a few edits (a third of its length, at least one) turn one
/// into the other, case aside; among equally near ones, preferred names (the right arity) come
/// first.
fn nearest<'a>(name: &str, names: impl Iterator<Item = (&'a str, bool)>) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let most = name.chars().count().div_ceil(3);
    let mut found: Vec<(usize, bool, &str)> = Vec::new();
    for (candidate, preferred) in names {
        let distance = edits(&lower, &candidate.to_ascii_lowercase());
        if distance <= most.max(1) && !found.iter().any(|(_, _, n)| *n == candidate) {
            found.push((distance, !preferred, candidate));
        }
    }
    found.sort_unstable();
    let names: Vec<String> = found.iter().take(3).map(|(_, _, n)| format!("`{n}`")).collect();
    match names.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} or {last}", rest.join(", "))),
    }
}

/// Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: edits between a[..i] and b[..j]
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFINED: &[(&str, usize)] = &[
        ("length", 0),
        ("ltrimstr", 1),
        ("rtrimstr", 1),
        ("limit", 2),
        ("range", 1),
        ("range", 2),
        ("range", 3),
        ("to_entries", 0),
        ("_private", 0),
    ];

    #[test]
    fn near_misses_name_the_builtin() {
        assert_eq!(filter_hint("lenght", 0, DEFINED).unwrap(), "did you mean `length`?");
        assert_eq!(filter_hint("Length", 0, DEFINED).unwrap(), "did you mean `length`?");
        assert_eq!(
            filter_hint("to_entry", 0, DEFINED).unwrap(),
            "did you mean `to_entries`?"
        );
        assert_eq!(
            filter_hint("trimstr", 1, DEFINED).unwrap(),
            "did you mean `ltrimstr` or `rtrimstr`?"
        );
        assert_eq!(filter_hint("xyzzy", 0, DEFINED), None);
        assert_eq!(
            filter_hint("private", 0, DEFINED),
            None,
            "private helpers are not offered"
        );
    }

    #[test]
    fn a_wrong_arity_names_the_right_ones() {
        assert_eq!(
            filter_hint("limit", 1, DEFINED).unwrap(),
            "`limit` takes 2 arguments, not 1 argument (arguments are separated by `;`)"
        );
        assert_eq!(
            filter_hint("range", 0, DEFINED).unwrap(),
            "`range` takes 1, 2 or 3 arguments, not 0 arguments (arguments are separated by `;`)"
        );
    }

    #[test]
    fn unavailable_builtins_say_why() {
        let hint = filter_hint("inputs", 0, DEFINED).unwrap();
        assert!(
            hint.starts_with("`inputs` is not available: the sandbox reads no input"),
            "{hint}"
        );
        assert!(filter_hint("get_search_list", 0, DEFINED).unwrap().contains("modules"));
        assert!(var_hint("$__prog_args", &[]).unwrap().contains("command line"));
    }

    #[test]
    fn names_from_other_languages_get_the_jq_way() {
        assert_eq!(filter_hint("len", 0, DEFINED).unwrap(), "jq has no `len`; use `length`");
    }

    #[test]
    fn variables_are_matched_to_defined_ones() {
        assert_eq!(var_hint("$nmae", &["$ENV", "$name"]).unwrap(), "did you mean `$name`?");
        assert_eq!(var_hint("$zzzzzz", &["$ENV"]), None);
    }
}
