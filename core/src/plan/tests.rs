use super::*;
use crate::jq;
use jaq_json::Val;

fn keys(list: &[&str]) -> Plan {
    Plan::Project(list.iter().map(|s| (*s).to_owned()).collect())
}

#[test]
fn recipes_read_only_their_fields() {
    let tabular = |members: &[&str], csv: bool| Plan::Tabular {
        members: members.iter().map(|m| (*m).to_owned()).collect(),
        csv,
    };
    assert_eq!(
        per_record("[.title, .namespace] | @tsv"),
        tabular(&["title", "namespace"], false)
    );
    assert_eq!(
        per_record(r#"[.a, ."b c", .["d"], .a, .e] | @csv"#),
        tabular(&["a", "b c", "d", "a", "e"], true)
    );
    // Anything else in the array, or after the format, is run by jaq on the members it reads.
    assert_eq!(per_record("[.a, .b?] | @tsv"), keys(&["a", "b"]));
    assert_eq!(per_record("[.a, .b.c] | @tsv"), keys(&["a", "b"]));
    assert_eq!(per_record("[.a, 1] | @csv"), keys(&["a"]));
    assert_eq!(per_record("[.a] | @tsv | length"), keys(&["a"]));
    assert_eq!(per_record("[.a] | @json"), keys(&["a"]));
    assert_eq!(per_record("[] | @tsv"), keys(&[]));
    let fields = |pairs: &[(&str, &str)]| {
        Plan::Construct(pairs.iter().map(|(n, m)| ((*n).to_owned(), (*m).to_owned())).collect())
    };
    assert_eq!(
        per_record("{id, title, namespace}"),
        fields(&[("id", "id"), ("title", "title"), ("namespace", "namespace")])
    );
    assert_eq!(
        per_record(r#"{t: .time, "a b", u: ."c d", v: .["e"], w: .time}"#),
        fields(&[("t", "time"), ("a b", "a b"), ("u", "c d"), ("v", "e"), ("w", "time")])
    );
    // Anything else an object may hold is run by jaq, on the members it reads.
    assert_eq!(per_record("{a, a: .b}"), keys(&["a", "b"]));
    assert_eq!(per_record("{a: .b?}"), keys(&["b"]));
    assert_eq!(per_record("{a: .b.c}"), keys(&["b"]));
    assert_eq!(per_record("{a: 1}"), keys(&[]));
    assert_eq!(per_record("{(.k): .v}"), keys(&["k", "v"]));
    assert_eq!(
        per_record(r#"select(.title | test($keyword; "i"))"#),
        Plan::Select {
            cond: r#".title | test($keyword; "i")"#.into(),
            keys: vec!["title".into()],
            native: Some(Cond {
                member: "title".into(),
                default: None,
                test: Test::Regex("i".into()),
                operand: Operand::Var("keyword".into())
            })
        }
    );
    assert_eq!(
        per_record("select((.tags // []) | index($tag))"),
        Plan::Select {
            cond: "(.tags // []) | index($tag)".into(),
            keys: vec!["tags".into()],
            native: Some(Cond {
                member: "tags".into(),
                default: Some(Fallback::EmptyArray),
                test: Test::Index,
                operand: Operand::Var("tag".into())
            })
        }
    );
    assert_eq!(
        per_record(r#"select(.memory_type == "x") | {id, t: .provenance.confidence}"#),
        keys(&["id", "memory_type", "provenance"])
    );
    assert_eq!(per_record(r#".["a b"], ."c", .d?"#), keys(&["a b", "c", "d"]));
    assert_eq!(per_record(r#"if .a then .b else 1 end"#), keys(&["a", "b"]));
    assert_eq!(per_record(r#""\(.a) and \(.b)""#), keys(&["a", "b"]));
    assert_eq!(per_record(r#".a as $x | .b + $x"#), keys(&["a", "b"]));
    assert_eq!(per_record(r#"try .a catch ."#), keys(&["a"]));
    assert_eq!(per_record("1, null, $x"), keys(&[]));
    // jq's `first(f)`, `last(f)`, `limit(n; f)` read what `f` reads (issue 34, item 14).
    assert_eq!(per_record("first(.id)"), keys(&["id"]));
    assert_eq!(per_record("limit(2; .a, .b)"), keys(&["a", "b"]));
    assert_eq!(per_record("limit(.n; .a)"), keys(&["a", "n"]));
    assert_eq!(per_record("last(.a) | {x: .}"), keys(&["a"]));
    assert_eq!(per_record("first(.)"), Plan::Whole);
}

#[test]
fn select_conditions_on_one_member_are_evaluated_without_jq() {
    let native = |code: &str| match per_record(code) {
        Plan::Select { native, .. } => native,
        plan => panic!("{code}: {plan:?}"),
    };
    let cond = |member: &str, test: Test, operand: Result<&str, &str>| {
        Some(Cond {
            member: member.into(),
            default: None,
            test,
            operand: match operand {
                Ok(var) => Operand::Var(var.to_owned()),
                Err(text) => Operand::Str(text.to_owned()),
            },
        })
    };
    // Every per-record condition of the recipe libraries.
    let with_default = |default: Fallback, cond: Option<Cond>| {
        cond.map(|c| Cond {
            default: Some(default),
            ..c
        })
    };
    let empty = || Fallback::Str(String::new());
    assert_eq!(
        native(r#"select((.namespace // "") | startswith($namespace))"#),
        with_default(empty(), cond("namespace", Test::Prefix, Ok("namespace")))
    );
    assert_eq!(
        native(r#"select((.title // "") | test($keyword; "i"))"#),
        with_default(empty(), cond("title", Test::Regex("i".into()), Ok("keyword")))
    );
    assert_eq!(
        native(r#"select((.content // "") | test($pattern; "i"))"#),
        with_default(empty(), cond("content", Test::Regex("i".into()), Ok("pattern")))
    );
    assert_eq!(
        native("select(.memory_type == $memory_type)"),
        cond("memory_type", Test::Equal(true), Ok("memory_type"))
    );
    assert_eq!(
        native("select((.tags // []) | index($tag))"),
        with_default(Fallback::EmptyArray, cond("tags", Test::Index, Ok("tag")))
    );
    assert_eq!(
        native("select(.namespace | startswith($namespace))"),
        cond("namespace", Test::Prefix, Ok("namespace"))
    );
    assert_eq!(
        native(r#"select(.id | endswith("7"))"#),
        cond("id", Test::Suffix, Err("7"))
    );
    assert_eq!(
        native(r#"select(.content | test("a.b"))"#),
        cond("content", Test::Regex(String::new()), Err("a.b"))
    );
    assert_eq!(
        native("select($t == .memory_type)"),
        cond("memory_type", Test::Equal(true), Ok("t"))
    );
    assert_eq!(
        native(r#"select(."a b" != "x")"#),
        cond("a b", Test::Equal(false), Err("x"))
    );
    assert_eq!(
        native("select(.tags | index($tag))"),
        cond("tags", Test::Index, Ok("tag"))
    );
    // A number literal, as `select(.id == 399999)` over a large file (issue 34, item 14).
    assert_eq!(
        native("select(.id == 399999)").map(|c| c.operand),
        Some(Operand::Num("399999".into()))
    );
    // Anything else runs through jaq.
    for code in [
        "select(.a == .b)",
        "select(.a == -1)",
        "select(.a.b == $x)",
        "select(.a? == $x)",
        "select((.a // 1) | startswith($x))",
        "select((.a // null) | index($x))",
        "select((.a // .b) | index($x))",
        "select(.a | test($x; $flags))",
        "select(.a | test($x; \"i\"; \"g\"))",
        "select(.a | startswith($x, $y))",
        "select(.a | ascii_downcase | startswith($x))",
        "select(.a < $x)",
        "select(.a | length > 3)",
    ] {
        assert_eq!(native(code), None, "{code}");
    }
}

#[test]
fn a_condition_says_nothing_where_jq_would_fail_or_it_does_not_evaluate() {
    let bound = |code: &str| match per_record(code) {
        Plan::Select {
            native: Some(native), ..
        } => native.bind(&["x"], &[jq::string("ab")]).unwrap(),
        plan => panic!("{code}: {plan:?}"),
    };
    let record = |json: &str| jq::parse(json).unwrap();
    let prefix = bound("select(.a | startswith($x))");
    assert_eq!(prefix.holds(&record(r#"{"a": "abc"}"#)), Some(true));
    assert_eq!(prefix.holds(&record(r#"{"a": "b"}"#)), Some(false));
    assert_eq!(prefix.holds(&record(r#"{"a": 1}"#)), None, "jq's error");
    assert_eq!(prefix.holds(&record(r#"{}"#)), None, "null: jq's error");
    assert_eq!(prefix.holds(&record(r#"[1]"#)), None, "not an object");
    let regex = bound(r#"select(.a | test($x; "i"))"#);
    assert_eq!(regex.holds(&record(r#"{"a": "xAB"}"#)), Some(true));
    assert_eq!(regex.holds(&record(r#"{"a": null}"#)), None);
    let bad_flags = bound(r#"select(.a | test($x; "q"))"#);
    assert_eq!(bad_flags.holds(&record(r#"{"a": "ab"}"#)), None, "jq's error");
    let index = bound("select((.a // []) | index($x))");
    assert_eq!(index.holds(&record(r#"{"a": ["c", "ab"]}"#)), Some(true));
    assert_eq!(index.holds(&record(r#"{"a": ["abc"]}"#)), Some(false));
    assert_eq!(index.holds(&record(r#"{"a": false}"#)), Some(false));
    assert_eq!(index.holds(&record(r#"{"b": 1}"#)), Some(false));
    assert_eq!(index.holds(&record(r#"{"a": "xab"}"#)), None, "a string's positions");
    let defaulted = bound(r#"select((.a // "abc") | startswith($x))"#);
    assert_eq!(defaulted.holds(&record(r#"{"a": false}"#)), Some(true));
    assert_eq!(defaulted.holds(&record(r#"{"a": "b"}"#)), Some(false));
    assert_eq!(
        defaulted.holds(&record(r#"{"a": 0}"#)),
        None,
        "0 is not replaced: jq's error"
    );
    let equal = bound("select(.a == $x)");
    assert_eq!(equal.holds(&record(r#"{"a": "ab"}"#)), Some(true));
    assert_eq!(equal.holds(&record(r#"{"a": ["ab"]}"#)), Some(false));
    assert_eq!(equal.holds(&record(r#"{}"#)), Some(false));
    // A variable the filter does not have: its compile error is jq's to give.
    let Plan::Select {
        native: Some(unbound), ..
    } = per_record("select(.a == $y)")
    else {
        panic!()
    };
    assert!(unbound.bind(&["x"], &[Val::Null]).is_none());
}

#[test]
fn anything_that_sees_the_whole_record_parses_it_whole() {
    for code in [
        ".",
        "keys",
        "length",
        "to_entries",
        "..",
        ".[]",
        ".[$k]",
        ".[0]",
        "tojson",
        "select(.a) | .",
        "select(length > 2)",
        ". as $r | $r",
        "del(.a)",
        ".a = 1",
        "def f: .a; f",
        "reduce .a[] as $x (0; . + $x)",
        "@json",
        "with_entries(.)",
        "{(.a): .} | keys",
        ". as {(keys[0]): $v} | $v",
        "{a: .}",
        "[.]",
        ". == {}",
        "not_a_builtin",
        "select(.a) | select(.b)",
    ] {
        let plan = per_record(code);
        assert!(
            plan == Plan::Whole || matches!(&plan, Plan::Select { .. } if code.starts_with("select(")),
            "{code}: {plan:?}"
        );
    }
    assert_eq!(per_record("this is not jq"), Plan::Whole);
    // A comment could swallow the parenthesis the plan puts COND back between.
    assert_eq!(per_record("select(.a) # )"), Plan::Whole);
}

#[test]
fn slurped_recipes_read_only_their_fields() {
    let project = |list: &[&str]| Slurp::Project(list.iter().map(|s| (*s).to_owned()).collect());
    assert_eq!(
        slurped("group_by(.namespace) | map({namespace: .[0].namespace, count: length})"),
        project(&["namespace"])
    );
    assert_eq!(slurped("map(.namespace) | unique"), project(&["namespace"]));
    assert_eq!(slurped("length"), project(&[]));
    assert_eq!(slurped("[.[].id, .[0].title?]"), project(&["id", "title"]));
    assert_eq!(slurped("sort_by(.a) | map(.b)"), project(&["a", "b"]));
    assert_eq!(slurped(".[0] | {id}"), project(&["id"]));
    assert_eq!(slurped("group_by(.a) | length"), project(&["a"]));
    assert_eq!(
        slurped("sort_by(.created)"),
        Slurp::SortBy {
            key: ".created".into(),
            keys: vec!["created".into()]
        }
    );
    assert_eq!(
        slurped("sort_by(-.provenance.confidence)"),
        Slurp::SortBy {
            key: "-.provenance.confidence".into(),
            keys: vec!["provenance".into()]
        }
    );
}

#[test]
fn anything_that_outputs_a_slurped_record_builds_it_whole() {
    for code in [
        ".",
        ".[0]",
        "first",
        ".[]",
        "map(.)",
        "group_by(.a)",
        "group_by(.a) | map(.[0])",
        "group_by(.a) | map(first)",
        "group_by(.a) | .[0]",
        "unique_by(.a)",
        "min_by(.a)",
        "sort_by(.a) | .[0]",
        "sort_by(keys)",
        "sort_by(.a) # )",
        ".[0].a[.[1]]",
        "add",
        "to_entries",
        "map(select(.a))",
        "{(.[0].k): 1}",
        "def f: .; f",
        "[.[] | .]",
        "tojson",
        "not jq",
    ] {
        assert_eq!(slurped(code), Slurp::Whole, "{code}");
    }
}

#[test]
fn projected_parsing_keeps_the_members_asked_for() {
    let line = r#" {"id":"a","skip":{"x":[1,{"y":"]}"}],"s":"\"{"},"n":-1.5e3,"t":[true,null],"id2":"q"} "#;
    let v = parse_projected(line, &["n".into(), "t".into(), "id".into()]).unwrap();
    assert_eq!(jq::to_json(&v), r#"{"id":"a","n":-1500,"t":[true,null]}"#);
    assert_eq!(jq::to_json(&parse_projected(line, &[]).unwrap()), "{}");
    assert_eq!(jq::to_json(&parse_projected("[1, 2]", &[]).unwrap()), "[1,2]");
    assert_eq!(jq::to_json(&parse_projected("{ }", &["a".into()]).unwrap()), "{}");
    // An escaped name takes the general path, which keeps everything.
    assert_eq!(
        jq::to_json(&parse_projected(r#"{"a\u0062":1,"c":2}"#, &["ab".into()]).unwrap()),
        r#"{"ab":1,"c":2}"#
    );
    for bad in [
        r#"{"a":1"#,
        r#"{"a" 1}"#,
        r#"{"a":1} x"#,
        r#"{"a":}"#,
        r#"{"a":"x}"#,
        r#"{a:1}"#,
    ] {
        assert!(parse_projected(bad, &["a".into()]).is_err(), "{bad}");
    }
    // A member that is read is validated as any JSON.
    assert!(parse_projected(r#"{"a":tru}"#, &["a".into()]).is_err());
}
