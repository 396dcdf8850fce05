//! What every generic descriptor of a fixture must hold: its files, recipes and counts
//! checked against the data the tool sent.

use super::*;

pub(super) fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub(super) fn lines_of(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Splits `tail -n +2 'PATH' | jq -c[s] 'PROGRAM'` into (slurp, program).
pub(super) fn parse_command(command: &str) -> (bool, String) {
    let (_, jq) = command.split_once(" | jq -c").expect(command);
    let slurp = jq.starts_with('s');
    let quoted = jq.trim_start_matches('s').trim_start();
    let program = quoted
        .strip_prefix('\'')
        .and_then(|q| q.strip_suffix('\''))
        .expect(command)
        .replace("'\\''", "'");
    (slurp, program)
}

/// The members of a section path as the descriptor writes it: `data.rows` → ["data", "rows"],
/// `files["a b"]` → ["files", "a b"].
pub(super) fn path_members(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('[') {
            let mut values = serde_json::Deserializer::from_str(quoted).into_iter::<String>();
            out.push(values.next().unwrap().unwrap());
            rest = quoted[values.byte_offset()..].strip_prefix(']').unwrap();
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    out
}

pub(super) fn set_path(root: &mut Value, path: &str, value: Value) {
    let members = path_members(path);
    let mut at = root;
    for (i, m) in members.iter().enumerate() {
        if !at.is_object() {
            *at = json!({});
        }
        let map = at.as_object_mut().unwrap();
        if i + 1 == members.len() {
            map.insert(m.clone(), value);
            return;
        }
        at = map.entry(m.clone()).or_insert_with(|| json!({}));
    }
    *at = value;
}

pub(super) fn check_generic(case: &str, dir: &Path, expected: &Value, original_data: &Value, descriptor: &Value) {
    assert_eq!(descriptor["offloaded"], true, "{case}");
    let inline = expected["inline"].as_object().unwrap();
    for (k, v) in inline {
        assert_eq!(&descriptor[k], v, "{case}: inline key {k}");
    }
    let reserved = [
        "offloaded",
        "summary",
        "files",
        "schemas",
        "preview",
        "jq_recipes",
        "tokens",
        "guidance",
        "lro_warning",
    ];
    let extra: Vec<&String> = descriptor
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !reserved.contains(&k.as_str()) && !inline.contains_key(*k))
        .collect();
    assert!(extra.is_empty(), "{case}: unexpected inline keys {extra:?}");
    // One figure per thing: saved = what the result would cost - what the descriptor costs.
    let tokens = &descriptor["tokens"];
    assert_eq!(
        tokens["saved"].as_i64().unwrap(),
        tokens["result"].as_i64().unwrap() - tokens["descriptor"].as_i64().unwrap(),
        "{case}"
    );

    let mut rebuilt = Value::Object(Map::new());
    for (k, v) in inline {
        set_path(&mut rebuilt, k, v.clone());
    }
    let mut rebuilt_array = None;
    for (section, want) in expected["sections"].as_object().unwrap() {
        let path = descriptor["files"][section]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: no file for {section}"));
        let header: Value =
            serde_json::from_str(std::fs::read_to_string(path).unwrap().lines().next().unwrap()).unwrap();
        assert_eq!(
            (
                header["type"].as_str(),
                header["detail"].as_str(),
                header["section"].as_str()
            ),
            (Some("lro_header"), Some("generic"), Some(section.as_str()))
        );
        let lines = lines_of(path);
        let summary = &descriptor["summary"][section];
        assert_eq!(summary["count"], want["count"], "{case}/{section}");
        if let Some(shape) = want.get("shape") {
            assert_eq!(&summary["shape"], shape, "{case}/{section}");
        }
        assert_eq!(lines.len() as u64, want["count"].as_u64().unwrap());
        let schema = &descriptor["schemas"][section]["line_schema"];
        match &want["types"] {
            Value::String(t) => assert_eq!(&schema["type"], t, "{case}/{section}"),
            Value::Object(types) => {
                for (field, t) in types {
                    assert_eq!(
                        &schema["properties"][field]["type"], t,
                        "{case}/{section}.{field}: {schema}"
                    );
                }
            }
            _ => {}
        }
        if let Some(required) = want.get("required") {
            assert_eq!(&schema["required"], required, "{case}/{section}");
        }
        match (summary["shape"].as_str().unwrap(), original_data) {
            ("other", _) => {
                for line in lines {
                    set_path(&mut rebuilt, line["key"].as_str().unwrap(), line["value"].clone());
                }
            }
            ("lines", Value::String(_)) => {
                rebuilt_array = Some(Value::String(
                    lines
                        .iter()
                        .map(|l| l["text"].as_str().unwrap())
                        .collect::<Vec<_>>()
                        .join("\n"),
                ))
            }
            ("entries", _) => {
                let map: Map<String, Value> = lines
                    .into_iter()
                    .map(|l| (l["key"].as_str().unwrap().to_owned(), l["value"].clone()))
                    .collect();
                set_path(&mut rebuilt, section, Value::Object(map));
            }
            ("table", _) => {
                let rows = lines
                    .into_iter()
                    .map(|l| Value::Array(l.as_object().unwrap().values().cloned().collect()))
                    .collect();
                set_path(&mut rebuilt, section, Value::Array(rows));
            }
            (_, Value::Array(_)) => rebuilt_array = Some(Value::Array(lines)),
            _ => set_path(&mut rebuilt, section, Value::Array(lines)),
        }
    }
    let rebuilt = rebuilt_array.unwrap_or(rebuilt);
    assert_eq!(
        norm(rebuilt),
        norm(original_data.clone()),
        "{case}: the files and inline keys hold all the data"
    );

    let names: Vec<&str> = descriptor["jq_recipes"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let want: Vec<&str> = expected["recipes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, want, "{case}");
    let files: Vec<&str> = descriptor["files"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut answers = std::collections::HashMap::new();
    for (name, command) in descriptor["jq_recipes"].as_object().unwrap() {
        let command = command.as_str().unwrap();
        let jq_values = shell_jq(command, false);
        answers.insert(name.clone(), jq_values.clone());
        let (slurp, program) = parse_command(command);
        let file = files.iter().find(|f| command.contains(*f)).unwrap();
        // Through the `lro extract` command, as a user (or a host's test) runs it.
        let mut args = vec!["extract", file, "--query", program.as_str(), "--limit", "4000000000"];
        if slurp {
            args.push("--slurp");
        }
        args.extend(["--output-dir", dir.to_str().unwrap()]);
        let out = Command::new(env!("CARGO_BIN_EXE_lro"))
            .args(&args)
            .env("LRO_CACHE_DIR", cache_dir())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{case}: lro extract for {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours: Vec<Value> = serde_json::Deserializer::from_slice(&out.stdout)
            .into_iter::<Value>()
            .map(|v| norm(v.unwrap()))
            .collect();
        assert_eq!(ours, jq_values, "{case}: recipe {name}");
        assert!(!ours.is_empty(), "{case}: recipe {name} found nothing");
    }
    // The same recipes as the guidance prints them for `lro_extract`, called exactly so.
    let guidance = descriptor["guidance"].as_str().unwrap();
    let printed = printed_calls(guidance);
    // Every recipe's call, unless the budget kept fewer calls than recipes.
    assert!(
        !printed.is_empty() && printed.len() <= answers.len(),
        "{case}: {guidance}"
    );
    let mut extract = config(dir, 1_000_000);
    extract.extract_tool = true;
    for (name, arguments) in printed {
        let out = RUNTIME
            .call_tool(&extract, &arguments.to_string())
            .unwrap_or_else(|e| panic!("{case}: {name} as printed: {e:?}"));
        let ours: Vec<Value> = out
            .values
            .iter()
            .map(|v| norm(serde_json::from_str(v).unwrap()))
            .collect();
        assert_eq!(Some(&ours), answers.get(&name), "{case}: {name} as printed");
    }
}
