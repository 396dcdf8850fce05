use super::*;

fn toml(text: &str) -> Result<Config, Error> {
    load(Config::default(), &[Layer::Toml { name: "lro.toml", text }])
}

fn env(vars: &[(&str, &str)]) -> Result<Config, Error> {
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    load(Config::default(), &[Layer::Environment(&vars)])
}

fn flag(key: &str, value: &str) -> Result<Config, Error> {
    let settings = [Setting {
        key: key.to_owned(),
        value: value.to_owned(),
        source: "--flag".to_owned(),
    }];
    load(Config::default(), &[Layer::Settings(&settings)])
}

fn json(text: &str) -> Result<Config, Error> {
    load(
        Config::default(),
        &[Layer::Json {
            name: "the arguments",
            text,
        }],
    )
}

fn message(r: Result<Config, Error>) -> String {
    match r {
        Err(Error::InvalidConfig(m)) => m,
        other => panic!("expected an invalid-config error, got {other:?}"),
    }
}

#[test]
fn later_layers_beat_earlier_ones_and_all_beat_the_base() {
    let vars = [
        ("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS".to_owned(), "200".to_owned()),
        ("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS".to_owned(), "70".to_owned()),
        ("HOME".to_owned(), "/root".to_owned()),
    ];
    let flags = [Setting {
        key: "threshold_tokens".into(),
        value: "300".into(),
        source: "--threshold-tokens".into(),
    }];
    let file = Layer::Toml {
        name: "f",
        text: "[prompt.offload]\nthreshold_tokens = 100\nttl_seconds = 60\nprefix = \"lro\"\n",
    };
    let all = [file, Layer::Environment(&vars), Layer::Settings(&flags)];
    let c = load(Config::default(), &all).unwrap();
    assert_eq!((c.threshold_tokens, c.ttl_seconds, c.prefix.as_str()), (300, 70, "lro"));
    assert_eq!(load(Config::default(), &all[..2]).unwrap().threshold_tokens, 200);
    let c = load(Config::default(), &all[..1]).unwrap();
    assert_eq!((c.threshold_tokens, c.ttl_seconds), (100, 60));
    assert_eq!(load(Config::default(), &[]).unwrap(), Config::default());
}

#[test]
fn bad_values_name_the_key_and_where_they_came_from() {
    assert_eq!(
        message(env(&[("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "lots")])),
        "prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS): expected a whole number from 0 to 4294967295, got \"lots\""
    );
    assert_eq!(
        message(flag("max_files", "-1")),
        "prompt.offload.max_files (from --flag): expected a whole number from 0 to 4294967295, got \"-1\""
    );
    assert_eq!(
        message(toml("[prompt.offload]\nenabled = \"yes\"\n")),
        "prompt.offload.enabled (from lro.toml): expected true or false, got \"yes\""
    );
    assert_eq!(
        message(toml("[prompt.offload]\ndescriptor = \"rich\"\n")),
        "prompt.offload.descriptor (from lro.toml): expected \"full\" or \"bare\", got \"rich\""
    );
    assert_eq!(
        message(json(r#"{"threshold_tokens": 5.5}"#)),
        "prompt.offload.threshold_tokens (from the arguments): expected a whole number from 0 to 4294967295, got 5.5"
    );
    assert_eq!(
        message(json(r#"{"enabled": "yes"}"#)),
        "prompt.offload.enabled (from the arguments): expected true or false, got \"yes\""
    );
    assert!(message(toml("[prompt.offload\n")).starts_with("config file lro.toml: "));
    assert_eq!(
        message(toml("[prompt]\noffload = 3\n")),
        "config file lro.toml: [prompt.offload] must be a table"
    );
}

#[test]
fn an_unknown_key_is_refused_alike_from_a_file_a_variable_a_flag_and_arguments() {
    let known = KEYS.join(", ");
    assert_eq!(
        message(toml("[prompt.offload]\nthreshhold_tokens = 5\n")),
        format!("unknown key prompt.offload.threshhold_tokens in lro.toml; known keys: {known}")
    );
    // The typo the issue met: a misspelt variable used to change nothing and say nothing.
    assert_eq!(
        message(env(&[("ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS", "5")])),
        format!(
            "unknown key prompt.offload.threshhold_tokens in ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS; known keys: {known}"
        )
    );
    assert_eq!(
        message(flag("threshhold_tokens", "5")),
        format!("unknown key prompt.offload.threshhold_tokens in --flag; known keys: {known}")
    );
    assert_eq!(
        message(json(r#"{"threshhold_tokens": 5}"#)),
        format!("unknown key prompt.offload.threshhold_tokens in the arguments; known keys: {known}")
    );
    assert_eq!(
        message(env(&[("ATLATL_PROMPT__OFFLOAD__Threshold_Tokens", "5")])),
        "prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__Threshold_Tokens): variables are named with the key in capitals: set ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS instead"
    );
    // Other programs' variables, and other tables of the file, are theirs.
    assert_eq!(
        env(&[("ATLATL_PROMPT__OTHER", "1"), ("PATH", "/bin")]).unwrap(),
        Config::default()
    );
    assert!(
        !toml("[server]\nport = 1\n[prompt]\nbudget = 3\n[prompt.offload]\nenabled = false\n")
            .unwrap()
            .enabled
    );
}

#[test]
fn old_names_point_at_the_new_ones() {
    for (old, new) in RENAMED {
        let err = message(toml(&format!("[prompt.offload]\n{old} = 5\n")));
        assert!(
            err.starts_with(&format!(
                "unknown key prompt.offload.{old} in lro.toml (now {new}); known keys: "
            )),
            "{err}"
        );
        let var = env_var(old);
        assert_eq!(
            message(env(&[(var.as_str(), "1")])),
            format!(
                "prompt.offload.{old} (from {var}): renamed: set {} instead",
                env_var(new)
            )
        );
        let err = message(json(&format!(r#"{{"{old}": 1}}"#)));
        assert!(err.contains(&format!(" (now {new}); known keys: ")), "{err}");
    }
}

#[test]
fn of_two_bad_variables_the_first_by_name_is_reported_whatever_the_order() {
    let a = [
        ("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS", "x"),
        ("ATLATL_PROMPT__OFFLOAD__ENABLED", "x"),
    ];
    let b = [a[1], a[0]];
    assert_eq!(message(env(&a)), message(env(&b)));
    assert!(message(env(&a)).starts_with("prompt.offload.enabled "));
}

#[test]
fn tool_settings_layer_per_tool_and_per_key() {
    // In the file's order, not by name.
    let file = "[prompt.offload.tools.ls]\nenabled = false\n[prompt.offload.tools.github_search]\nthreshold_tokens = 500\nsections = [\"items\"]\ninline_keys = [\"total_count\"]\n";
    let args =
        r#"{"tools": [{"name": "ls", "threshold_tokens": 9}, {"name": "new", "enabled": true, "sections": null}]}"#;
    let c = load(
        Config::default(),
        &[
            Layer::Toml { name: "f", text: file },
            Layer::Json { name: "a", text: args },
        ],
    )
    .unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ls", "github_search", "new"]);
    let gh = &c.tools[1];
    assert_eq!(
        (gh.threshold_tokens, gh.sections.as_deref(), gh.enabled),
        (Some(500), Some(&["items".to_owned()][..]), None)
    );
    assert_eq!(
        (c.tools[0].enabled, c.tools[0].threshold_tokens),
        (Some(false), Some(9))
    );
    assert_eq!((c.tools[2].enabled, c.tools[2].sections.as_ref()), (Some(true), None));
    // The object form, by tool name.
    let c = json(r#"{"tools": {"ls": {"inline_keys": ["a"]}}}"#).unwrap();
    assert_eq!(c.tools[0].inline_keys.as_deref(), Some(&["a".to_owned()][..]));

    assert_eq!(
        message(toml("[prompt.offload.tools.ls]\nsections = \"items\"\n")),
        "prompt.offload.tools.ls.sections (from lro.toml): expected a list of strings, got \"items\""
    );
    assert_eq!(
        message(toml("[prompt.offload.tools.ls]\nthreshold = 5\n")),
        "prompt.offload.tools.ls.threshold (from lro.toml): unknown key; known keys: enabled, threshold_tokens, sections, inline_keys"
    );
    assert!(
        message(json(r#"{"tools": [{"threshold_tokens": 1}]}"#))
            .starts_with("prompt.offload.tools (from the arguments): expected a list of")
    );
}

#[test]
fn null_arguments_set_nothing() {
    assert_eq!(
        json(r#"{"threshold_tokens": null, "tools": null}"#).unwrap(),
        Config::default()
    );
    assert!(message(json("[1]")).starts_with("the arguments: expected an object"));
}

/// Every key works from the file, a variable, a flag's text and arguments, with the same effect;
/// and docs/CONFIGURATION.md documents every key.
#[test]
fn every_key_works_in_every_layer() {
    type Check = fn(&Config) -> bool;
    // key, its TOML (and JSON) value, its text (variable and flag), and the field it sets.
    let table: &[(&str, &str, &str, Check)] = &[
        ("enabled", "false", "false", |c| !c.enabled),
        ("threshold_tokens", "77", "77", |c| c.threshold_tokens == 77),
        ("ttl_seconds", "60", "60", |c| c.ttl_seconds == 60),
        ("output_dir", "\"/x\"", "/x", |c| c.output_dir == "/x"),
        ("prefix", "\"lro\"", "lro", |c| c.prefix == "lro"),
        ("descriptor", "\"bare\"", "bare", |c| {
            c.descriptor == DescriptorStyle::Bare
        }),
        ("schema_version", "\"0.2\"", "0.2", |c| c.schema_version == "0.2"),
        ("extract_tool", "true", "true", |c| c.extract_tool),
        ("recipes", "\"v1\"", "v1", |c| c.recipes == RecipeLibrary::V1),
        ("max_bytes", "1000", "1000", |c| c.max_bytes == 1000),
        ("max_files", "3", "3", |c| c.max_files == 3),
    ];
    assert_eq!(
        table.iter().map(|row| row.0).collect::<Vec<_>>(),
        KEYS,
        "the table walks every key"
    );
    let reference = include_str!("../../../docs/CONFIGURATION.md");
    for (key, value, text, check) in table {
        assert!(
            !check(&Config::default()),
            "{key}: the test value must differ from the default"
        );
        assert!(
            check(&toml(&format!("[prompt.offload]\n{key} = {value}\n")).unwrap()),
            "{key} from a file"
        );
        let var = env_var(key);
        assert!(check(&env(&[(var.as_str(), text)]).unwrap()), "{key} from {var}");
        assert!(check(&flag(key, text).unwrap()), "{key} as a flag");
        assert!(
            check(&json(&format!("{{\"{key}\": {value}}}")).unwrap()),
            "{key} from arguments"
        );
        assert!(
            reference.contains(&format!("| `{key}` |")),
            "docs/CONFIGURATION.md's table lacks {key}"
        );
    }
}
