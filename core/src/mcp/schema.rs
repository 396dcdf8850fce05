//! What the records of a generic section are like, gathered in one pass over them (the
//! [`Profile`]), and the line schema inferred from it. The recipes and the preview are made from
//! the same profile, so the schema, the recipes and the counts always describe the same records.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// Fields listed in an inferred schema.
const SCHEMA_FIELDS: usize = 16;
/// Fields of an object-valued field listed in the schema (`node.state`, `_source.title`).
const CHILD_FIELDS: usize = 8;
/// Distinct field names tracked (top-level, and under each object-valued field): enough for any
/// schema; records with ever new keys (maps in disguise) stop adding fields there.
const TRACKED_FIELDS: usize = 64;
/// Distinct values tracked per field: a field with more is not low-cardinality.
const TRACKED_VALUES: usize = 21;

/// One field of the records: a top-level member (`["state"]`) or a member of an object-valued
/// one (`["node", "state"]`).
pub(super) struct Field {
    /// The member names from the record down.
    pub(super) path: Vec<String>,
    /// Records that have it.
    pub(super) present: usize,
    /// The JSON types of its values, in first-seen order.
    pub(super) types: Vec<&'static str>,
    /// Its distinct values as compact JSON, with how many records hold each, up to
    /// [`TRACKED_VALUES`]; `many` when there were more.
    pub(super) values: Vec<(String, usize)>,
    /// More distinct values than were tracked.
    pub(super) many: bool,
    /// String values: how many, their total length in characters, how many are prose (hold a
    /// space), and how many read as a date or time (`2026-01-02...`).
    pub(super) strings: usize,
    pub(super) text_len: usize,
    pub(super) prose: usize,
    pub(super) times: usize,
    /// Number values.
    pub(super) numbers: usize,
    /// The first string value, for a search example.
    pub(super) first_text: Option<String>,
}

impl Field {
    fn new(path: Vec<String>) -> Self {
        Field {
            path,
            present: 0,
            types: Vec::new(),
            values: Vec::new(),
            many: false,
            strings: 0,
            text_len: 0,
            prose: 0,
            times: 0,
            numbers: 0,
            first_text: None,
        }
    }

    fn add(&mut self, value: &Value) {
        self.present += 1;
        let t = schema_type(value);
        if !self.types.contains(&t) {
            self.types.push(t);
        }
        match value {
            Value::String(s) => {
                self.strings += 1;
                self.text_len += s.chars().count();
                self.prose += usize::from(s.contains(' '));
                self.times += usize::from(looks_like_time(s));
                if self.first_text.is_none() {
                    self.first_text = Some(s.clone());
                }
            }
            Value::Number(_) => self.numbers += 1,
            _ => {}
        }
        if matches!(value, Value::Array(_) | Value::Object(_)) || self.many {
            return;
        }
        let text = value.to_string();
        if let Some(entry) = self.values.iter_mut().find(|(v, _)| *v == text) {
            entry.1 += 1;
        } else if self.values.len() < TRACKED_VALUES {
            self.values.push((text, 1));
        } else {
            self.many = true;
        }
    }

    /// The field's name as a recipe or output key shows it: its last member.
    pub(super) fn name(&self) -> &str {
        self.path.last().map_or("", String::as_str)
    }

    /// Distinct values, when they were all tracked.
    pub(super) fn distinct(&self) -> Option<usize> {
        (!self.many).then_some(self.values.len())
    }
}

/// The facts about a section's records that its schema and recipes are made from.
pub(super) struct Profile {
    /// Records in the section.
    pub(super) count: usize,
    /// The JSON types of the records themselves, in first-seen order.
    pub(super) types: Vec<&'static str>,
    /// Top-level fields of object records, in first-seen order, each followed by the fields of
    /// its object values.
    pub(super) fields: Vec<Field>,
    /// More field names than were tracked.
    pub(super) more_fields: bool,
}

impl Profile {
    /// Profiles records given as JSON text, one at a time.
    pub(super) fn of<'a>(lines: impl IntoIterator<Item = &'a str>) -> Self {
        let mut profile = Profile {
            count: 0,
            types: Vec::new(),
            fields: Vec::new(),
            more_fields: false,
        };
        let mut index: HashMap<Vec<String>, usize> = HashMap::new();
        let mut children: HashMap<String, usize> = HashMap::new();
        let mut top = 0;
        for line in lines {
            profile.count += 1;
            // Lines nest at most `jq::MAX_DEPTH` levels: deeper than serde_json's own limit.
            let Ok(value) = crate::json_text::parse::<Value>(line, crate::jq::MAX_DEPTH) else {
                continue;
            };
            let t = schema_type(&value);
            if !profile.types.contains(&t) {
                profile.types.push(t);
            }
            let Value::Object(map) = value else { continue };
            for (key, member) in &map {
                let known = index.contains_key(std::slice::from_ref(key));
                let tracked = profile.add(&mut index, vec![key.clone()], member, top < TRACKED_FIELDS);
                top += usize::from(tracked && !known);
                if tracked && let Value::Object(inner) = member {
                    for (child, v) in inner {
                        let path = vec![key.clone(), child.clone()];
                        let known = index.contains_key(&path);
                        let n = children.entry(key.clone()).or_default();
                        if profile.add(&mut index, path, v, *n < TRACKED_FIELDS) && !known {
                            *n += 1;
                        }
                    }
                }
            }
        }
        // Each field's children right after it, in first-seen order.
        let mut fields = std::mem::take(&mut profile.fields);
        let order: HashMap<Vec<String>, usize> = fields.iter().enumerate().map(|(i, f)| (f.path.clone(), i)).collect();
        fields.sort_by_key(|f| (order[&f.path[..1].to_vec()], f.path.len() > 1, order[&f.path]));
        profile.fields = fields;
        profile
    }

    /// Adds a value at `path`; a field not seen before is added only with `room`. True when
    /// the field is (now) tracked.
    fn add(&mut self, index: &mut HashMap<Vec<String>, usize>, path: Vec<String>, value: &Value, room: bool) -> bool {
        if let Some(&i) = index.get(&path) {
            self.fields[i].add(value);
            return true;
        }
        if !room {
            self.more_fields = true;
            return false;
        }
        let mut field = Field::new(path.clone());
        field.add(value);
        index.insert(path, self.fields.len());
        self.fields.push(field);
        true
    }

    /// True when every record is an object.
    pub(super) fn objects(&self) -> bool {
        self.count > 0 && self.types == ["object"]
    }

    /// The top-level fields.
    pub(super) fn top(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| f.path.len() == 1)
    }
}

/// The JSON Schema `type` a value has: `integer` for a whole number, where jq says `number`.
fn schema_type(v: &Value) -> &'static str {
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

/// `2026-01-02`, `2026-01-02T03:04:05Z` and the like: sortable as text.
fn looks_like_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

fn types(set: &[&'static str]) -> Value {
    // "integer" is a "number" too: list "number" once when both occur. A fixed order keeps the
    // schema the same whatever order the lines come in.
    const ORDER: [&str; 7] = ["string", "integer", "number", "boolean", "object", "array", "null"];
    let mut set: Vec<&str> = set.to_vec();
    if set.contains(&"number") {
        set.retain(|t| *t != "integer");
    }
    set.sort_by_key(|t| ORDER.iter().position(|o| o == t));
    if set.len() == 1 { json!(set[0]) } else { json!(set) }
}

/// A JSON Schema of the section's lines, inferred: field names in first-seen order, their JSON
/// types, which fields every line has, and for a field whose values are objects, their fields.
pub(super) fn infer_schema(profile: &Profile) -> Value {
    if !profile.objects() {
        return json!({"type": types(&profile.types)});
    }
    let listed: Vec<&Field> = profile
        .top()
        .filter(|f| f.name().len() <= 40)
        .take(SCHEMA_FIELDS)
        .collect();
    let mut properties = Map::new();
    for field in &listed {
        let mut schema = json!({"type": types(&field.types)});
        if field.types.contains(&"object") {
            let mut inner = Map::new();
            for child in profile
                .fields
                .iter()
                .filter(|c| c.path.len() == 2 && c.path[0] == field.path[0] && c.name().len() <= 40)
                .take(CHILD_FIELDS)
            {
                inner.insert(child.name().to_owned(), json!({"type": types(&child.types)}));
            }
            if !inner.is_empty() {
                schema["properties"] = Value::Object(inner);
            }
        }
        properties.insert(field.name().to_owned(), schema);
    }
    let required: Vec<&str> = listed
        .iter()
        .filter(|f| f.present == profile.count)
        .map(|f| f.name())
        .collect();
    let mut schema = json!({"type": "object", "properties": properties, "required": required});
    let total = profile.top().count();
    if total > listed.len() || profile.more_fields {
        schema["$comment"] = json!(if profile.more_fields {
            "more fields not listed".to_owned()
        } else {
            format!("{} more fields not listed", total - listed.len())
        });
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(lines: &[Value]) -> Value {
        let texts: Vec<String> = lines.iter().map(Value::to_string).collect();
        infer_schema(&Profile::of(texts.iter().map(String::as_str)))
    }

    #[test]
    fn schemas_record_types_and_required_fields() {
        let schema = schema(&[
            json!({"a": 1, "b": "x", "c": null}),
            json!({"a": 2.5, "b": "y"}),
            json!({"a": 3, "b": null, "d": [1]}),
        ]);
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(schema["properties"]["b"]["type"], json!(["string", "null"]));
        assert_eq!(schema["properties"]["d"]["type"], "array");
        assert_eq!(schema["required"], json!(["a", "b"]));
        let scalars: Vec<String> = ["1", "\"x\""].map(String::from).to_vec();
        let profile = Profile::of(scalars.iter().map(String::as_str));
        assert_eq!(infer_schema(&profile)["type"], json!(["string", "integer"]));
    }

    #[test]
    fn object_fields_show_their_own_fields() {
        let schema = schema(&[
            json!({"cursor": "a", "node": {"state": "OPEN", "number": 1}}),
            json!({"cursor": "b", "node": {"state": "CLOSED", "number": 2}}),
        ]);
        assert_eq!(schema["properties"]["node"]["properties"]["state"]["type"], "string");
        assert_eq!(schema["properties"]["node"]["properties"]["number"]["type"], "integer");
    }
}
