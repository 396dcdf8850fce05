//! The line schema of a generic section, inferred from its lines.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// Fields listed in an inferred schema.
const SCHEMA_FIELDS: usize = 16;

/// A JSON Schema of the section's lines, inferred: field names in first-seen order, their JSON
/// types, and which fields every line has.
pub fn infer_schema(lines: &[Value]) -> Value {
    fn type_name(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    fn types(set: &[&'static str]) -> Value {
        // "integer" is a "number" too: list "number" once when both occur. A fixed order keeps
        // the schema the same whatever order the lines come in.
        const ORDER: [&str; 7] = ["string", "integer", "number", "boolean", "object", "array", "null"];
        let mut set: Vec<&str> = set.to_vec();
        if set.contains(&"number") {
            set.retain(|t| *t != "integer");
        }
        set.sort_by_key(|t| ORDER.iter().position(|o| o == t));
        if set.len() == 1 { json!(set[0]) } else { json!(set) }
    }
    if !lines.iter().all(Value::is_object) {
        let mut seen: Vec<&'static str> = Vec::new();
        for l in lines {
            let t = type_name(l);
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
        return json!({"type": types(&seen)});
    }
    let mut order: Vec<&str> = Vec::new();
    let mut seen: HashMap<&str, (Vec<&'static str>, usize)> = HashMap::new();
    for line in lines {
        for (key, value) in line.as_object().expect("checked above") {
            let entry = seen.entry(key.as_str()).or_insert_with(|| {
                order.push(key.as_str());
                (Vec::new(), 0)
            });
            let t = type_name(value);
            if !entry.0.contains(&t) {
                entry.0.push(t);
            }
            entry.1 += 1;
        }
    }
    let listed: Vec<&str> = order
        .iter()
        .copied()
        .filter(|k| k.len() <= 40)
        .take(SCHEMA_FIELDS)
        .collect();
    let mut properties = Map::new();
    for key in &listed {
        properties.insert((*key).to_owned(), json!({"type": types(&seen[key].0)}));
    }
    let required: Vec<&str> = listed.iter().copied().filter(|k| seen[k].1 == lines.len()).collect();
    let mut schema = json!({"type": "object", "properties": properties, "required": required});
    if order.len() > listed.len() {
        schema["$comment"] = json!(format!("{} more fields not listed", order.len() - listed.len()));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_record_types_and_required_fields() {
        let lines = vec![
            json!({"a": 1, "b": "x", "c": null}),
            json!({"a": 2.5, "b": "y"}),
            json!({"a": 3, "b": null, "d": [1]}),
        ];
        let schema = infer_schema(&lines);
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(schema["properties"]["b"]["type"], json!(["string", "null"]));
        assert_eq!(schema["properties"]["d"]["type"], "array");
        assert_eq!(schema["required"], json!(["a", "b"]));
        assert_eq!(
            infer_schema(&[json!(1), json!("x")])["type"],
            json!(["string", "integer"])
        );
    }
}
