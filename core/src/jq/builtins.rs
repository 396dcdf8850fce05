//! The Rust-defined builtins: jq filters written in Rust rather than in `defs.jq`, for what jq
//! cannot say the way jq 1.6 does (`@tsv`, `@csv`, `tojson` with jq 1.6's numbers) and for what a
//! filter run once per record calls often enough that a jq definition cost too much (`test`,
//! `startswith`, `endswith`, `ltrimstr`, `rtrimstr`). `defs.jq` wraps the `lro_*_` ones.

use jaq_core::native::{Fun, bome, run, unary, v};
use jaq_core::{DataT, RunPtr};
use jaq_json::Val;

use super::tabular::{self, Tabular};
use super::{to_json, type_name};

/// The Rust-defined builtins, for jaq's compiler.
pub(super) fn funs<D: for<'a> DataT<V<'a> = Val>>() -> impl Iterator<Item = Fun<D>> {
    // Built in two steps, as jaq-json builds its own: the fn pointers only unify with
    // `RunPtr<D>` when their type is stated in a generic signature (`filters`).
    filters().into_vec().into_iter().map(run)
}

/// Each builtin's name, arity and implementation.
fn filters<D: for<'a> DataT<V<'a> = Val>>() -> Box<[jaq_core::native::Filter<RunPtr<D>>]> {
    Box::new([
        ("@tsv", v(0), |cv| bome(tabular::format(&cv.1, Tabular::Tsv))),
        ("@csv", v(0), |cv| bome(tabular::format(&cv.1, Tabular::Csv))),
        ("lro_tojson_", v(0), |cv| {
            bome(Ok(Val::utf8_str(to_json(&cv.1).into_bytes())))
        }),
        ("lro_ltrimstr_", v(1), |cv| unary(cv, |v, p| Ok(trim(v, &p, true)))),
        ("lro_affix_", v(2), |mut cv| {
            let prefix = cv.0.pop_var();
            let affix = cv.0.pop_var();
            // The type check is here, not in the jq definition: run per record, a jq-level
            // check cost more than the comparison (`type` builds a string each time).
            let (Val::TStr(s) | Val::BStr(s), Val::TStr(a) | Val::BStr(a)) = (&cv.1, &affix) else {
                let op = if matches!(prefix, Val::Bool(true)) {
                    "startswith"
                } else {
                    "endswith"
                };
                return bome(Err(not_string(op, &cv.1, "and its argument must both be strings")));
            };
            bome(Ok(Val::Bool(if matches!(prefix, Val::Bool(true)) {
                s.starts_with(a)
            } else {
                s.ends_with(a)
            })))
        }),
        ("lro_test_", v(2), |mut cv| {
            let flags = cv.0.pop_var();
            let re = cv.0.pop_var();
            bome(regex_test(&cv.1, &re, &flags).map(Val::Bool))
        }),
        ("lro_rtrimstr_", v(1), |cv| unary(cv, |v, p| Ok(trim(v, &p, false)))),
        ("lro_builtins_", v(0), |_| bome(Ok(builtins()))),
    ])
}

/// jq's `builtins`: every public builtin as `"name/arity"`. Helpers (a name that starts with `_`
/// or `lro_`, or ends with `_`) and formats (`@csv`) are left out, as jq leaves them out.
fn builtins() -> Val {
    let mut names: Vec<String> = super::defined()
        .into_iter()
        .filter(|(name, _)| !(name.starts_with(['_', '@']) || name.starts_with("lro_") || name.ends_with('_')))
        .map(|(name, arity)| format!("{name}/{arity}"))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(|name| Val::utf8_str(name.into_bytes())).collect()
}

/// The error `lro_not_string` raises: `OP: TYPE (JSON, cut at 60 characters) WHAT`.
fn not_string(op: &str, value: &Val, what: &str) -> jaq_core::Error<Val> {
    let json = to_json(value);
    let shown = if json.chars().count() > 60 {
        json.chars().take(57).collect::<String>() + "..."
    } else {
        json
    };
    jaq_core::Error::str(format_args!("{op}: {} ({shown}) {what}", type_name(value)))
}

/// jq's `ltrimstr`/`rtrimstr` on two strings: the input without the affix, or unchanged.
fn trim(value: Val, affix: &Val, prefix: bool) -> Val {
    let (Val::TStr(s), Val::TStr(a)) = (&value, affix) else {
        return value;
    };
    let rest = if prefix {
        s.strip_prefix(&a[..])
    } else {
        s.strip_suffix(&a[..])
    };
    match rest {
        Some(rest) => Val::utf8_str(rest.to_vec()),
        None => value,
    }
}

/// `test(re; flags)` on a string: whether `re` matches, as jaq's `matches(re; flags) | any` says,
/// without building match objects, and with the compiled regex kept for the next input. jaq
/// compiles the regex again for every call, which cost most of a per-record `test` over a file.
pub(crate) fn regex_test(input: &Val, re: &Val, flags: &Val) -> Result<bool, jaq_core::Error<Val>> {
    use jaq_std::ValT as _;
    let text = input.try_as_utf8_bytes()?;
    let flags = std::str::from_utf8(flags.try_as_utf8_bytes()?).map_err(jaq_core::Error::str)?;
    let re = std::str::from_utf8(re.try_as_utf8_bytes()?).map_err(jaq_core::Error::str)?;
    if let Some(found) = literal_test(text, re, flags) {
        return Ok(found);
    }
    let compiled = REGEXES.with_borrow_mut(|cache| -> Result<_, jaq_core::Error<Val>> {
        if let Some(at) = cache.iter().position(|(r, f, _)| r == re && f == flags) {
            return Ok(cache[at].2.clone());
        }
        let (regex, ignore_empty) = jaq_std::compile_regex(re, flags).map_err(jaq_core::Error::str)?;
        let compiled = std::rc::Rc::new((regex, ignore_empty));
        if cache.len() == REGEX_CACHE {
            cache.remove(0);
        }
        cache.push((re.to_owned(), flags.to_owned(), compiled.clone()));
        Ok(compiled)
    })?;
    let (regex, ignore_empty) = &*compiled;
    Ok(if *ignore_empty {
        regex.find_iter(text).any(|m| !m.as_bytes().is_empty())
    } else {
        regex.is_match(text)
    })
}

/// `test` of a regex without metacharacters, with no flag but `i` or `g` (no effect on a test):
/// a substring search, much faster than the regex engine. None when the regex is not such a
/// literal, or when `i` needs Unicode's case folding, which the regex engine does: a needle
/// with a letter outside ASCII, or with `k` or `s` in a text that is not all ASCII (the Kelvin
/// sign and the long s fold to them). Any other ASCII letter folds only to its ASCII other case.
fn literal_test(text: &[u8], re: &str, flags: &str) -> Option<bool> {
    if re.is_empty()
        || re
            .bytes()
            .any(|c| b"\\.+*?()|[]{}^$#".contains(&c) || c.is_ascii_whitespace())
    {
        return None;
    }
    let ignore_case = match flags {
        "" | "g" => false,
        "i" | "gi" | "ig" => true,
        _ => return None,
    };
    let needle = re.as_bytes();
    if !ignore_case {
        return Some(memchr::memmem::find(text, needle).is_some());
    }
    if !needle.is_ascii()
        || (needle.iter().any(|c| matches!(c, b'k' | b'K' | b's' | b'S')) && !crate::json_text::is_ascii(text))
    {
        return None;
    }
    let first = needle[0];
    let mut from = 0;
    while let Some(at) = memchr::memchr2(first.to_ascii_lowercase(), first.to_ascii_uppercase(), &text[from..]) {
        let start = from + at;
        if text.len() - start < needle.len() {
            return Some(false);
        }
        if text[start..start + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(true);
        }
        from = start + 1;
    }
    Some(false)
}

/// How many compiled regexes `test` keeps (a filter rarely has more than a few).
const REGEX_CACHE: usize = 16;

type CompiledRegex = std::rc::Rc<(regex::bytes::Regex, bool)>;

thread_local! {
    static REGEXES: std::cell::RefCell<Vec<(String, String, CompiledRegex)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use crate::jq::tests::run;

    #[test]
    fn string_builtins_name_themselves_on_wrong_types() {
        assert_eq!(
            run("test(\"x\")", "null").unwrap_err(),
            "test: null (null) cannot be matched, as it is not a string"
        );
        assert_eq!(
            run(".a | startswith(\"x\")", r#"{"a": 1}"#).unwrap_err(),
            "startswith: number (1) and its argument must both be strings"
        );
        assert_eq!(
            run("endswith(1)", r#""abc""#).unwrap_err(),
            "endswith: string (\"abc\") and its argument must both be strings"
        );
        assert_eq!(
            run("startswith(\"x\")", &format!("[{}]", "1,".repeat(40) + "1")).unwrap_err(),
            format!(
                "startswith: array ([{}...) and its argument must both be strings",
                "1,".repeat(28)
            )
        );
        assert_eq!(
            run(
                "[test(\"B\"; \"i\"), startswith(\"a\"), startswith(\"\"), endswith(\"c\"), endswith(\"b\")]",
                r#""abc""#
            )
            .unwrap(),
            ["[true,true,true,true,false]"]
        );
        assert_eq!(run("[match(\"b+\").string, gsub(\"b\"; \"x\"), sub(\"(?<l>[a-z])\"; \"<\\(.l)>\"), [scan(\"[ac]\")], split(\", *\"; null)]", r#""abbc, d""#).unwrap(),
            [r#"["bb","axxc, d","<a>bbc, d",["a","c"],["abbc","d"]]"#]);
    }

    #[test]
    fn test_agrees_with_matches_for_every_flag_and_keeps_working_past_its_cache() {
        // jaq's own definition, which `test` replaces: the two must agree.
        let slow = |re: &str, flags: &str, input: &str| {
            run(&format!("matches({re:?}; {flags:?}) | any"), &format!("{input:?}")).unwrap()
        };
        let fast = |re: &str, flags: &str, input: &str| {
            run(&format!("test({re:?}; {flags:?})"), &format!("{input:?}")).unwrap()
        };
        // With `i`, the substring search must know where Unicode folds: É to é, the Kelvin
        // sign (U+212A) to k, the long s (U+017F) to s.
        let inputs = [
            "", "abc", "ABC", "a\nb", "xx\nAB", "aaa", "é A", "É A", "a-b", "xaBc", "\u{212a}", "\u{17f}x", "ks",
            "Straße",
        ];
        for re in [
            "", "a", "^a", "b$", "a.b", "(?:a )?", "A B", "x*", "é", "bC", "Bc", "abcd", "é a", "-", "É", "k", "S",
            "KS", "sx", "SS", "ß",
        ] {
            for flags in ["", "i", "g", "n", "gn", "m", "s", "x", "l", "p", "ix"] {
                for input in inputs {
                    let input = input.replace("\\n", "\n");
                    assert_eq!(
                        fast(re, flags, &input),
                        slow(re, flags, &input),
                        "{re:?} {flags:?} {input:?}"
                    );
                }
            }
        }
        // More distinct regexes than the cache holds, then the first ones again.
        for round in 0..2 {
            for i in 0..40 {
                assert_eq!(fast(&format!("^{i}$"), "", &i.to_string()), ["true"], "round {round}");
                assert_eq!(fast(&format!("^{i}$"), "", "x"), ["false"]);
            }
        }
        for (re, flags, message) in [
            ("(", "", r#"invalid regex "(": unclosed group (at offset 0)"#),
            ("a", "q", "invalid regex flag: q"),
        ] {
            let args = format!("{re:?}; {flags:?}");
            let error = run(&format!("test({args})"), "\"a\"").unwrap_err();
            assert!(error.starts_with(message), "{error}");
            assert_eq!(error, run(&format!("matches({args}) | any"), "\"a\"").unwrap_err());
        }
        assert!(run("test(1)", "\"a\"").unwrap_err().contains("string"));
    }

    /// The regex engine's byte search also finds matches that start between the bytes of one
    /// character (the empty string, or any match with `(?-u)`); those matches are not jq's, and
    /// turning their offsets into characters panicked (a trap in the component). jq 1.6 fails on
    /// the empty ones (`cannot allocate memory`), and jq 1.8 repeats an offset (`[0,1,1]`): the
    /// answers are the ones the offsets in characters give.
    #[test]
    fn matches_start_between_characters() {
        let cases = [
            (r#"[match(""; "g").offset]"#, "[0,1,2]"),
            (r#"[match("a*"; "g") | [.offset, .length]]"#, "[[0,0],[1,1]]"),
            (r#"[splits("")]"#, r#"["","é","a",""]"#),
            (r#"gsub(""; "-")"#, r#""-é-a-""#),
            (r#"[scan("x*")] | length"#, "3"),
            // `(?-u)` (the regex crate's, not jq's) lets a match start inside a character.
            (r#"[match("(?-u:.)"; "g") | .offset]"#, "[0,1]"),
        ];
        for (filter, expected) in cases {
            assert_eq!(run(filter, r#""éa""#).unwrap(), [expected], "{filter}");
        }
    }
}
