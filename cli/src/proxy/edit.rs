//! JSON text edited member by member. Where the proxy changes a message it forwards (a result's
//! `resultType`, a capability, its own tools and resources, a request's `_meta`), it adds,
//! replaces or removes the one member it needs and prints every other member as the text that
//! arrived: a value parsed and printed again would not be what was sent
//! (`123456789012345678901234567890` prints as `1.2345678901234568e+29`, `1E+2` as `100.0`,
//! `"\u00e9"` as `"é"`). Only the whitespace between members is not kept.
//!
//! The text is JSON already read once (a message's `result` or `params`, which serde_json
//! checked as a `RawValue`); the walking is `lro_core::json_text`'s.

use std::borrow::Cow;
use std::fmt;

use lro_core::json_text::raw;

/// An object as its members' texts, in the order they came: each key as its JSON string
/// literal, each value as its JSON text.
#[derive(Default)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Object<'a> {
    /// The members of `text`, valid JSON; `None` when it is not an object.
    pub fn parse(text: &'a str) -> Option<Object<'a>> {
        let members = raw::member_texts(text)?
            .into_iter()
            .map(|(key, value)| (Cow::Borrowed(key), Cow::Borrowed(value)))
            .collect();
        Some(Object { members })
    }

    /// The text of the member `name`; of the last one when the key is repeated, as serde_json
    /// and `JSON.parse` read it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.members
            .iter()
            .rev()
            .find(|(key, _)| is_key(key, name))
            .map(|(_, value)| value.as_ref())
    }

    /// The member `name` decoded as a string; `None` when absent or not a string.
    pub fn get_str(&self, name: &str) -> Option<String> {
        serde_json::from_str(self.get(name)?).ok()
    }

    /// The names of the members, decoded, in order.
    pub fn names(&self) -> Vec<String> {
        self.members
            .iter()
            .filter_map(|(key, _)| serde_json::from_str(key).ok())
            .collect()
    }

    /// True when the object has a member `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Sets the member `name` to the JSON text `value`: in its place when present (every one of
    /// a repeated key), else after the others.
    pub fn set(&mut self, name: &str, value: impl Into<Cow<'a, str>>) {
        let value = value.into();
        let mut found = false;
        for (key, slot) in &mut self.members {
            if is_key(key, name) {
                *slot = value.clone();
                found = true;
            }
        }
        if !found {
            self.members.push((Cow::Owned(quoted(name)), value));
        }
    }

    /// Adds the member `name` when the object has none; true when it was added.
    pub fn set_default(&mut self, name: &str, value: impl Into<Cow<'a, str>>) -> bool {
        if self.contains(name) {
            return false;
        }
        self.set(name, value);
        true
    }

    /// Removes every member `name`; true when there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.members.len();
        self.members.retain(|(key, _)| !is_key(key, name));
        self.members.len() != before
    }

    /// True when the object has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

impl fmt::Display for Object<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (key, value)) in self.members.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{key}:{value}")?;
        }
        f.write_str("}")
    }
}

/// True when the key literal `key` (a JSON string, quotes and escapes as sent) reads `name`.
fn is_key(key: &str, name: &str) -> bool {
    let inner = &key[1..key.len() - 1];
    if inner.contains('\\') {
        serde_json::from_str::<String>(key).is_ok_and(|k| k == name)
    } else {
        inner == name
    }
}

/// Members longer than this are not compared by value in [`rebase`]: a result's data is what the
/// component replaces, and reading it twice more would cost what offloading saves.
const COMPARED: usize = 64 * 1024;

/// The component's edit of an object (`rewritten`, printed from a parsed value) applied to the
/// object as it was sent: a member the component left alone keeps the text that came, one it
/// removed is removed, one it changed or added is its own.
pub fn rebase(sent: &str, rewritten: &str) -> String {
    let (Some(mut object), Some(new)) = (Object::parse(sent), Object::parse(rewritten)) else {
        return rewritten.to_owned();
    };
    for name in object.names() {
        if !new.contains(&name) {
            object.remove(&name);
        }
    }
    for name in new.names() {
        let Some(value) = new.get(&name) else { continue };
        if !object.get(&name).is_some_and(|old| same(old, value)) {
            object.set(&name, value.to_owned());
        }
    }
    object.to_string()
}

/// True when two JSON texts hold the same value (as serde_json reads numbers); a long one is
/// taken for changed unless it is the same text.
fn same(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.len() > COMPARED || b.len() > COMPARED {
        return false;
    }
    let read = |text: &str| super::message::parse::<serde_json::Value>(text).ok();
    read(a).is_some_and(|a| read(b).is_some_and(|b| a == b))
}

/// The text of the member `name` of the object `text` (valid JSON), borrowed from it; of the
/// last one when the key is repeated.
pub fn member<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let object = Object::parse(text)?;
    object.members.into_iter().rev().find_map(|(key, value)| match value {
        Cow::Borrowed(value) if is_key(&key, name) => Some(value),
        _ => None,
    })
}

/// `text` as a JSON string literal.
pub fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// `text` (an object) with the member `name` set to `value` in the object at `path`: each object
/// on the way is kept as it came but for the one member that leads on, and is made (empty) where
/// it is missing or not an object. `None` when `text` is not an object.
pub fn set_at(text: &str, path: &[&str], name: &str, value: &str) -> Option<String> {
    let mut object = Object::parse(text)?;
    match path.split_first() {
        None => object.set(name, value),
        Some((first, rest)) => {
            let inner = object.get(first).unwrap_or("{}");
            let inner = set_at(inner, rest, name, value).or_else(|| set_at("{}", rest, name, value))?;
            object.set(first, inner);
        }
    }
    Some(object.to_string())
}

/// The JSON array text of `elements`, each as its text.
pub fn array<S: AsRef<str>>(elements: &[S]) -> String {
    let mut text = String::from("[");
    for (i, element) in elements.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(element.as_ref());
    }
    text.push(']');
    text
}

/// The elements of the array `text` (valid JSON), each as its text; `None` when not an array.
pub fn elements(text: &str) -> Option<Vec<&str>> {
    raw::elements(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SENT: &str = r#"{ "big" : 123456789012345678901234567890, "e":1E+2, "k\u0041":"\u00e9", "e":-0.0 }"#;

    #[test]
    fn members_are_printed_as_they_came() {
        let object = Object::parse(SENT).unwrap();
        assert_eq!(
            object.to_string(),
            r#"{"big":123456789012345678901234567890,"e":1E+2,"k\u0041":"\u00e9","e":-0.0}"#
        );
        assert_eq!(object.get("e"), Some("-0.0"), "the last of a repeated key");
        assert_eq!(
            object.get("kA"),
            Some(r#""\u00e9""#),
            "keys are read as JSON reads them"
        );
        assert_eq!(object.get_str("kA").as_deref(), Some("\u{e9}"));
        assert_eq!(object.names(), ["big", "e", "kA", "e"]);
        assert_eq!(member(SENT, "big"), Some("123456789012345678901234567890"));
        assert!(Object::parse("[1]").is_none() && Object::parse(" {} ").unwrap().is_empty());
    }

    #[test]
    fn an_edit_touches_one_member() {
        let mut object = Object::parse(SENT).unwrap();
        object.set("e", "1");
        assert!(object.set_default("resultType", "\"complete\""));
        assert!(!object.set_default("big", "0"));
        assert!(object.remove("kA"));
        assert_eq!(
            object.to_string(),
            r#"{"big":123456789012345678901234567890,"e":1,"e":1,"resultType":"complete"}"#
        );
    }

    #[test]
    fn set_at_makes_the_path_and_keeps_the_rest() {
        let capabilities = r#"{"experimental":{"x":1E+2,"lro":5},"roots":{}}"#;
        assert_eq!(
            set_at(capabilities, &["experimental", "lro"], "proxy", "true").unwrap(),
            r#"{"experimental":{"x":1E+2,"lro":{"proxy":true}},"roots":{}}"#
        );
        assert_eq!(
            set_at("{}", &["a", "b"], "c", "1E+2").unwrap(),
            r#"{"a":{"b":{"c":1E+2}}}"#
        );
        assert!(set_at("[]", &[], "c", "1").is_none());
    }

    #[test]
    fn a_rebased_edit_keeps_what_the_component_left_alone() {
        let sent = r#"{"name":"t","inputSchema":{"maximum":1E+2},"outputSchema":{},"_meta":{"n":123456789012345678901234567890}}"#;
        let printed = r#"{"name":"t","inputSchema":{"maximum":100.0},"_meta":{"n":1.2345678901234568e29},"added":1}"#;
        assert_eq!(
            rebase(sent, printed),
            r#"{"name":"t","inputSchema":{"maximum":1E+2},"_meta":{"n":123456789012345678901234567890},"added":1}"#
        );
        let replaced = r#"{"name":"t","inputSchema":{"maximum":5}}"#;
        assert_eq!(rebase(sent, replaced), replaced);
    }

    #[test]
    fn arrays_are_their_elements_as_sent() {
        let items = elements(r#"[ 1E+2 , {"a" : 1} ]"#).unwrap();
        assert_eq!(array(&items), r#"[1E+2,{"a" : 1}]"#);
        assert_eq!(array::<&str>(&[]), "[]");
    }
}
