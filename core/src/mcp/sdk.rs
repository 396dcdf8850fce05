//! The shapes MCP SDKs give a tool's result, read and written: where the data is (structured
//! content, one JSON text, one JSON value per text block, or plain text), and how the descriptor
//! takes its place without breaking the schema a result comes with. The result is kept as the
//! text of its members, so every member the interceptor does not replace is forwarded as sent.

use std::borrow::Cow;

use serde::de::IgnoredAny;

use super::RESULT_DEPTH;
use crate::json_text::raw::{Kind, kind, members, minify};
use crate::json_text::{ParseError, Valid, parse, type_name};
use crate::{Error, json_string};

/// The data of a result: JSON text of an array or object exactly as sent, or text that is not
/// JSON.
pub(super) enum Data<'a> {
    Json(Cow<'a, str>),
    Text(Cow<'a, str>),
}

/// A `CallToolResult` as the text of each member, in order.
pub(super) struct Members<'a>(pub(super) Vec<(String, &'a str)>);

impl<'a> Members<'a> {
    /// Reads a result object, nested at most [`RESULT_DEPTH`] levels. Every member but
    /// `content` is checked as [`Valid`] (it may be copied into a file or forwarded as it is);
    /// `content`, the largest, is decoded once by the caller, which checks it then.
    pub(super) fn read(text: &'a str) -> Result<Self, Error> {
        parse::<IgnoredAny>(text, RESULT_DEPTH).map_err(|e| Error::InvalidInput(format!("result is {e}")))?;
        if kind(text) != Kind::Object {
            return Err(Error::InvalidInput(format!(
                "result must be a CallToolResult object, got {}",
                type_name(text)
            )));
        }
        let members = members(text).ok_or_else(|| Error::InvalidInput("result is not a JSON object".into()))?;
        for (key, value) in members.iter().filter(|(k, _)| k != "content") {
            parse::<Valid>(value, RESULT_DEPTH).map_err(|e| Error::InvalidInput(format!("result.{key} is {e}")))?;
        }
        Ok(Members(members))
    }

    /// The text of member `key`, unless it is absent or `null`.
    pub(super) fn get(&self, key: &str) -> Option<&'a str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .filter(|v| v.trim() != "null")
    }
}

/// True when `text` is JSON (of any type) nested at most [`RESULT_DEPTH`] levels; deeper JSON is
/// `invalid-input`, as the result itself would be.
fn is_json(text: &str) -> Result<bool, Error> {
    match parse::<Valid>(text, RESULT_DEPTH) {
        Ok(_) => Ok(true),
        Err(ParseError::Invalid(_)) => Ok(false),
        Err(too_deep @ ParseError::TooDeep(_)) => Err(Error::InvalidInput(format!(
            "the result's text is JSON {too_deep}; its records may nest at most {} levels",
            crate::jq::MAX_DEPTH
        ))),
    }
}

fn is_container(text: &str) -> bool {
    matches!(kind(text), Kind::Object | Kind::Array)
}

/// The data of a result, as the SDKs send it: structured content (unwrapped when it is a
/// single-key wrapper of text, as the Python SDK makes of a tool returning `str` and the
/// reference servers of every text result: the text's JSON, or the text itself when it is not
/// JSON), else the text content when it is a JSON array or object, else one JSON value per text
/// block (the Python SDK's shape for a tool returning a list), else plain text.
pub(super) fn data_of<'a>(structured: Option<&'a str>, blocks: &[&'a str], text: &'a str) -> Result<Data<'a>, Error> {
    if let Some(raw) = structured {
        if let Some(inner) = wrapped_text(raw) {
            return Ok(if is_json(&inner)? && is_container(&inner) {
                Data::Json(Cow::Owned(inner))
            } else {
                Data::Text(Cow::Owned(inner))
            });
        }
        if is_container(raw) {
            return Ok(Data::Json(Cow::Borrowed(raw)));
        }
    }
    if is_container(text) && is_json(text)? {
        return Ok(Data::Json(Cow::Borrowed(text)));
    }
    if blocks.len() > 1 {
        for block in blocks {
            if !is_json(block)? {
                return Ok(Data::Text(Cow::Borrowed(text)));
            }
        }
        return Ok(Data::Json(Cow::Owned(format!("[{}]", blocks.join(",")))));
    }
    Ok(Data::Text(Cow::Borrowed(text)))
}

/// True when `raw` is a single-key wrapper of text such as `{"result": "..."}`.
pub(super) fn wraps_text(raw: &str) -> bool {
    matches!(members(raw).as_deref(), Some([(_, value)]) if kind(value) == Kind::String)
}

/// The string of a single-key object such as `{"result": "..."}`.
fn wrapped_text(raw: &str) -> Option<String> {
    match members(raw)?.as_slice() {
        [(_, value)] if kind(value) == Kind::String => serde_json::from_str(value).ok(),
        _ => None,
    }
}

/// The result with its text content replaced by `text` (the blocks that are not text, `kept`,
/// follow it as sent), and its structured content (if it had any) by the JSON text `value`; every other member (`_meta`, `resultType`, ...) stays as it was sent.
/// Structured content that was a single-key wrapper of text (`{"result": "..."}`) stays one,
/// holding `text`, so it still matches the schema such a wrapper comes with.
pub(super) fn replace(result: &Members<'_>, kept: &[&str], text: &str, value: &str) -> String {
    let mut content = format!("[{{\"type\":\"text\",\"text\":{}}}", json_string(text));
    for block in kept {
        content.push(',');
        content.push_str(&minify(block));
    }
    content.push(']');
    let mut out = String::with_capacity(content.len() + value.len() + 64);
    out.push('{');
    let mut first = true;
    let mut put = |out: &mut String, key: &str, raw: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&json_string(key));
        out.push(':');
        out.push_str(raw);
    };
    let mut seen_content = false;
    for (key, raw) in &result.0 {
        match key.as_str() {
            "content" if !seen_content => {
                seen_content = true;
                put(&mut out, key, &content);
            }
            "content" => {}
            "structuredContent" if raw.trim() != "null" => match members(raw).as_deref() {
                Some([(wrapper, inner)]) if kind(inner) == Kind::String => {
                    let wrapped = format!("{{{}:{}}}", json_string(wrapper), json_string(text));
                    put(&mut out, key, &wrapped);
                }
                _ => put(&mut out, key, value),
            },
            // Compact, every token as sent.
            _ => put(&mut out, key, &minify(raw)),
        }
    }
    if !seen_content {
        put(&mut out, "content", &content);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_keeps_every_other_member_as_sent() {
        let result = Members::read(
            "{\"_meta\":{\"n\":1E+2},\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"structuredContent\":{\"result\":\"x\"},\"resultType\":\"complete\"}",
        )
        .unwrap();
        assert_eq!(
            replace(&result, &[], "d", "{}"),
            "{\"_meta\":{\"n\":1E+2},\"content\":[{\"type\":\"text\",\"text\":\"d\"}],\"structuredContent\":{\"result\":\"d\"},\"resultType\":\"complete\"}"
        );
    }

    #[test]
    fn structured_content_is_read_as_sent() {
        let Data::Json(raw) = data_of(Some("{\"n\": 123456789012345678901234567890}"), &[], "").unwrap() else {
            panic!()
        };
        assert_eq!(raw, "{\"n\": 123456789012345678901234567890}");
        let Data::Text(text) = data_of(Some("{\"result\":\"a\\nb\"}"), &[], "").unwrap() else {
            panic!()
        };
        assert_eq!(text, "a\nb");
        let Data::Json(joined) = data_of(None, &["{\"a\":1}", "{\"a\":2}"], "{\"a\":1}\n{\"a\":2}").unwrap() else {
            panic!()
        };
        assert_eq!(joined, "[{\"a\":1},{\"a\":2}]");
    }
}
