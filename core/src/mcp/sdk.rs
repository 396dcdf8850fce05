//! The shapes MCP SDKs give a tool's result, read and written: where the data is (structured
//! content, one JSON text, one JSON value per text block, or plain text), and how the descriptor
//! takes its place without breaking the schema a result comes with. The result is kept as the
//! text of its members, so every member the interceptor does not replace is forwarded as sent.

use std::borrow::Cow;
use std::ops::Range;

use serde::de::IgnoredAny;

use super::RESULT_DEPTH;
use crate::estimate::Counts;
use crate::json_text::raw::{Kind, elements, kind, member_texts, members, minify};
use crate::json_text::{ParseError, Valid, parse, type_phrase, unescape_in_place};
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

/// One block of a result's `content`.
enum Block {
    /// A text block: the range of its decoded text.
    Text(Range<usize>),
    /// Any other block (image, audio, link, resource, or not an object): its range, as sent.
    Other(Range<usize>),
}

/// A `CallToolResult` read from text the interceptor owns. The text of its text blocks, and of a
/// `structuredContent` that is a single-key wrapper of text, is decoded where it lies (an escaped
/// string is never shorter than its text), so a large result is held once, not as its JSON and
/// again as its text. The members that held those strings are then read through stand-ins:
/// `content` as `[]` (its blocks are here), the wrapper as `{"key":""}` (its text is
/// [`Owned::wrapped`]).
pub(super) struct Owned {
    buf: String,
    members: Vec<(String, Range<usize>)>,
    blocks: Vec<Block>,
    /// The wrapper's member index, key (as sent) and decoded text.
    wrapper: Option<(usize, String, Range<usize>)>,
    /// The wrapper's stand-in.
    stand_in: String,
    /// The estimate of the structured content, compact, as sent.
    structured_tokens: Option<u32>,
    /// The characters of the text content as sent (its blocks joined by a newline): a JSON
    /// block is compacted where it lies (below), and the estimate is of what the model reads.
    text_counts: Counts,
}

impl Owned {
    /// Reads a result object, nested at most [`RESULT_DEPTH`] levels, and checks every member
    /// as [`Valid`] (it may be copied into a file or forwarded as it is); the strings decoded
    /// in place are checked as they are decoded.
    pub(super) fn read(text: String) -> Result<Self, Error> {
        let (members, blocks, wrapper, structured_tokens) = Self::layout(&text)?;
        let mut bytes = text.into_bytes();
        let decode = |bytes: &mut [u8], range: Range<usize>, what: &str| -> Result<Range<usize>, Error> {
            let len = unescape_in_place(&mut bytes[range.clone()])
                .map_err(|e| Error::InvalidInput(format!("{what} is not valid JSON: {e}")))?;
            Ok(range.start..range.start + len)
        };
        let mut text_counts = Counts::default();
        let mut texts = 0;
        let mut decoded = Vec::with_capacity(blocks.len());
        for block in blocks {
            decoded.push(match block {
                Block::Text(range) => {
                    let range = decode(&mut bytes, range, "result.content")?;
                    let counts = Counts::of(std::str::from_utf8(&bytes[range.clone()]).unwrap_or_default());
                    text_counts.other += counts.other + u64::from(texts > 0);
                    text_counts.cjk += counts.cjk;
                    texts += 1;
                    Block::Text(compact(&mut bytes, range)?)
                }
                other => other,
            });
        }
        let blocks = decoded;
        let wrapper = match wrapper {
            Some((index, key, range)) => {
                let range = decode(&mut bytes, range, "result.structuredContent")?;
                Some((index, key, compact(&mut bytes, range)?))
            }
            None => None,
        };
        // Decoded text is UTF-8 and the rest of each string became spaces.
        let buf = String::from_utf8(bytes)
            .map_err(|e| Error::InvalidInput(format!("result is not UTF-8 once decoded: {e}")))?;
        let stand_in = wrapper
            .as_ref()
            .map(|(_, key, _)| format!("{{{key}:\"\"}}"))
            .unwrap_or_default();
        Ok(Owned {
            buf,
            members,
            blocks,
            wrapper,
            stand_in,
            structured_tokens,
            text_counts,
        })
    }

    /// What `read` needs to know before it decodes: each member's range, each block's, the
    /// strings to decode (the bodies between their quotes) and the structured content's estimate.
    #[allow(clippy::type_complexity, reason = "one private call site")]
    fn layout(
        text: &str,
    ) -> Result<
        (
            Vec<(String, Range<usize>)>,
            Vec<Block>,
            Option<(usize, String, Range<usize>)>,
            Option<u32>,
        ),
        Error,
    > {
        parse::<IgnoredAny>(text, RESULT_DEPTH).map_err(|e| Error::InvalidInput(format!("result is {e}")))?;
        if kind(text) != Kind::Object {
            return Err(Error::InvalidInput(format!(
                "result must be a CallToolResult object, got {}",
                type_phrase(text)
            )));
        }
        let at = |part: &str| part.as_ptr() as usize - text.as_ptr() as usize;
        let range = |part: &str| at(part)..at(part) + part.len();
        // The body of a string literal, between its quotes.
        let body = |literal: &str| at(literal) + 1..at(literal) + literal.len() - 1;
        let members = member_texts(text).ok_or_else(|| Error::InvalidInput("result is not a JSON object".into()))?;
        let mut decoded = Vec::with_capacity(members.len());
        for (key, value) in &members {
            let key: String =
                serde_json::from_str(key).map_err(|e| Error::InvalidInput(format!("result has a bad key: {e}")))?;
            decoded.push((key, *value));
        }
        let last = |name: &str| decoded.iter().rposition(|(k, v)| k == name && v.trim() != "null");
        let content = last("content");
        let structured = last("structuredContent");
        let wrapper = structured.and_then(|i| match member_texts(decoded[i].1)?.as_slice() {
            [(key, value)] if kind(value) == Kind::String => Some((i, (*key).to_owned(), body(value))),
            _ => None,
        });
        for (i, (key, value)) in decoded.iter().enumerate() {
            if Some(i) == content || wrapper.as_ref().is_some_and(|(w, ..)| *w == i) {
                continue;
            }
            parse::<Valid>(value, RESULT_DEPTH).map_err(|e| Error::InvalidInput(format!("result.{key} is {e}")))?;
        }
        let structured_tokens = structured.map(|i| Counts::of(&minify(decoded[i].1)).tokens());
        let mut blocks = Vec::new();
        if let Some(i) = content {
            let raw = decoded[i].1;
            let items = elements(raw).ok_or_else(|| {
                Error::InvalidInput(format!("result.content must be an array, got {}", type_phrase(raw)))
            })?;
            for item in items {
                blocks.push(Self::block(item, &range, &body)?);
            }
        }
        let members = decoded.into_iter().map(|(k, v)| (k, range(v))).collect();
        Ok((members, blocks, wrapper, structured_tokens))
    }

    /// One content block: a text block is an object whose `type` is `"text"` and whose `text`
    /// is a string (the last of a repeated key, as a parser reads it).
    fn block(
        item: &str,
        range: &impl Fn(&str) -> Range<usize>,
        body: &impl Fn(&str) -> Range<usize>,
    ) -> Result<Block, Error> {
        let invalid = |e: String| Error::InvalidInput(format!("result.content is {e}"));
        fn text_of<'t>(members: &[(String, &'t str)]) -> Option<&'t str> {
            let last = |name: &str| members.iter().rev().find(|(k, _)| k == name).map(|(_, v)| *v);
            let is_text = last("type").is_some_and(|t| serde_json::from_str::<String>(t).is_ok_and(|t| t == "text"));
            last("text").filter(|t| is_text && kind(t) == Kind::String)
        }
        let members = members(item);
        match members.as_deref().map(|m| (m, text_of(m))) {
            Some((members, Some(text))) => {
                for (_, value) in members.iter().filter(|(_, v)| !std::ptr::eq(*v, text)) {
                    parse::<Valid>(value, RESULT_DEPTH).map_err(|e| invalid(e.to_string()))?;
                }
                Ok(Block::Text(body(text)))
            }
            _ => {
                parse::<Valid>(item, RESULT_DEPTH).map_err(|e| invalid(e.to_string()))?;
                Ok(Block::Other(range(item)))
            }
        }
    }

    /// The members, each as sent but for the stand-ins.
    pub(super) fn members(&self) -> Members<'_> {
        Members(
            self.members
                .iter()
                .enumerate()
                .map(|(i, (key, range))| {
                    let text: &str = match key.as_str() {
                        "content" => "[]",
                        _ if self.wrapper.as_ref().is_some_and(|(w, ..)| *w == i) => &self.stand_in,
                        _ => &self.buf[range.clone()],
                    };
                    (key.clone(), text)
                })
                .collect(),
        )
    }

    /// The text of each text block, decoded.
    pub(super) fn texts(&self) -> Vec<&str> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(range) => Some(&self.buf[range.clone()]),
                Block::Other(_) => None,
            })
            .collect()
    }

    /// The blocks that are not text, as sent.
    pub(super) fn kept(&self) -> Vec<&str> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Other(range) => Some(&self.buf[range.clone()]),
                Block::Text(_) => None,
            })
            .collect()
    }

    /// The text a single-key `structuredContent` wrapper holds, decoded.
    pub(super) fn wrapped(&self) -> Option<&str> {
        self.wrapper.as_ref().map(|(_, _, range)| &self.buf[range.clone()])
    }

    /// The characters of the text content as sent, its blocks joined by a newline.
    pub(super) fn text_counts(&self) -> Counts {
        self.text_counts
    }

    /// The estimate of the structured content as sent (compact), when there is one.
    pub(super) fn structured_tokens(&self) -> Option<u32> {
        self.structured_tokens
    }
}

/// A decoded text at `range` of `bytes`, compacted where it lies when it is a JSON array or object
/// with whitespace between its tokens (as Python's `json.dumps` writes it): its records are
/// then borrowed as they lie, where each would otherwise be copied compacted, a second copy of
/// the result. Every token stays as sent. Returns the text's range.
fn compact(bytes: &mut [u8], range: Range<usize>) -> Result<Range<usize>, Error> {
    let Ok(text) = std::str::from_utf8(&bytes[range.clone()]) else {
        return Ok(range);
    };
    // Text too deep to read is left as it is, for `data_of` to refuse.
    if !is_container(text) || !crate::json_text::raw::has_whitespace(text) || !is_json(text).unwrap_or(false) {
        return Ok(range);
    }
    let len = crate::json_text::raw::minify_in_place(&mut bytes[range.clone()]);
    Ok(range.start..range.start + len)
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
pub(super) fn data_of<'a>(
    structured: Option<&'a str>,
    wrapped: Option<&'a str>,
    blocks: &[&'a str],
    text: &'a str,
) -> Result<Data<'a>, Error> {
    if let Some(raw) = structured {
        if let Some(inner) = wrapped {
            return Ok(if is_json(inner)? && is_container(inner) {
                Data::Json(Cow::Borrowed(inner))
            } else {
                Data::Text(Cow::Borrowed(inner))
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
        let owned = Owned::read(
            "{\"_meta\":{\"n\":1E+2},\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"structuredContent\":{\"result\":\"x\"},\"resultType\":\"complete\"}"
                .to_owned(),
        )
        .unwrap();
        assert_eq!(
            replace(&owned.members(), &[], "d", "{}"),
            "{\"_meta\":{\"n\":1E+2},\"content\":[{\"type\":\"text\",\"text\":\"d\"}],\"structuredContent\":{\"result\":\"d\"},\"resultType\":\"complete\"}"
        );
    }

    #[test]
    fn text_is_decoded_where_it_lies_and_the_rest_kept_as_sent() {
        let text = "[{\"a\":\"é\\n😀\u{1}\"}]";
        let result = serde_json::json!({
            "content": [{"type": "image", "data": "AA=="}, {"type": "text", "text": text}, {"type": "text", "text": "two"}],
            "structuredContent": {"result": text},
            "_meta": {"k": [1, 2]},
        })
        .to_string()
        .replace("\"_meta\":{\"k\":[1,2]}", "\"_meta\":{\"k\": [1E+2, 2]}");
        let owned = Owned::read(result).unwrap();
        assert_eq!(owned.texts(), [text, "two"]);
        assert_eq!(owned.wrapped(), Some(text));
        assert_eq!(owned.kept(), ["{\"type\":\"image\",\"data\":\"AA==\"}"]);
        let members = owned.members();
        assert_eq!(members.get("_meta"), Some("{\"k\": [1E+2, 2]}"));
        assert_eq!(members.get("structuredContent"), Some("{\"result\":\"\"}"));
        assert!(wraps_text(members.get("structuredContent").unwrap()));
    }

    #[test]
    fn json_text_is_compacted_where_it_lies_and_estimated_as_sent() {
        let text = "[ {\"a\": 1E+2, \"b\": \"x  y\"} ,\n {\"a\": 2} ]";
        let result = serde_json::json!({"content": [{"type": "text", "text": text}, {"type": "text", "text": "not json  at all"}]});
        let owned = Owned::read(result.to_string()).unwrap();
        assert_eq!(
            owned.texts(),
            ["[{\"a\":1E+2,\"b\":\"x  y\"},{\"a\":2}]", "not json  at all"]
        );
        assert_eq!(owned.text_counts(), Counts::of(&format!("{text}\nnot json  at all")));
    }

    #[test]
    fn undecodable_text_is_invalid_input_naming_the_member() {
        for (result, member) in [
            (r#"{"content":[{"type":"text","text":"a\ud800b"}]}"#, "result.content"),
            (
                r#"{"content":[],"structuredContent":{"result":"\udc00"}}"#,
                "result.structuredContent",
            ),
        ] {
            let Err(Error::InvalidInput(message)) = Owned::read(result.to_owned()) else {
                panic!("{result}")
            };
            assert!(
                message.starts_with(member) && message.contains("surrogate"),
                "{message}"
            );
        }
    }

    #[test]
    fn structured_content_is_read_as_sent() {
        let Data::Json(raw) = data_of(Some("{\"n\": 123456789012345678901234567890}"), None, &[], "").unwrap() else {
            panic!()
        };
        assert_eq!(raw, "{\"n\": 123456789012345678901234567890}");
        let Data::Text(text) = data_of(Some("{\"result\":\"\"}"), Some("a\nb"), &[], "").unwrap() else {
            panic!()
        };
        assert_eq!(text, "a\nb");
        let Data::Json(joined) = data_of(None, None, &["{\"a\":1}", "{\"a\":2}"], "{\"a\":1}\n{\"a\":2}").unwrap()
        else {
            panic!()
        };
        assert_eq!(joined, "[{\"a\":1},{\"a\":2}]");
    }
}
