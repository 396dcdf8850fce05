//! The shapes MCP SDKs give a tool's result, read and written: where the data is (structured
//! content, one JSON text, one JSON value per text block, or plain text), and how the descriptor
//! takes its place without breaking the schema a result comes with.

use serde_json::{Map, Value, json};

use super::RESULT_DEPTH;
use crate::Error;
use crate::json_text::{ParseError, parse};

/// The data of a result: a JSON value, or text that is not JSON.
pub(super) enum Data {
    Json(Value),
    Text(String),
}

/// The data of a result, as the SDKs send it: structured content (unwrapped when it is a
/// single-key wrapper of text, as the Python SDK makes of a tool returning `str` and the
/// reference servers of every text result: the text's JSON, or the text itself when it is not
/// JSON), else the text content parsed as JSON, else one JSON value per text block (the Python
/// SDK's shape for a tool returning a list), else plain text. JSON text nested deeper than
/// [`RESULT_DEPTH`] levels is `invalid-input`, as the result itself would be.
pub(super) fn data_of(structured: Option<&Value>, blocks: &[&str], text: &str) -> Result<Data, Error> {
    let parsed = |t: &str| match parse::<Value>(t, RESULT_DEPTH) {
        Ok(value) => Ok(Some(value)),
        Err(ParseError::Invalid(_)) => Ok(None),
        Err(too_deep @ ParseError::TooDeep(_)) => Err(Error::InvalidInput(format!(
            "the result's text is JSON {too_deep}; its records may nest at most {} levels",
            crate::jq::MAX_DEPTH
        ))),
    };
    if let Some(value) = structured {
        return Ok(match wrapped_text(value) {
            Some(inner) => match parsed(inner)?.filter(|v| v.is_array() || v.is_object()) {
                Some(json) => Data::Json(json),
                None => Data::Text(inner.to_owned()),
            },
            None => Data::Json(value.clone()),
        });
    }
    if let Some(v) = parsed(text)?.filter(|v| v.is_array() || v.is_object()) {
        return Ok(Data::Json(v));
    }
    if blocks.len() > 1 {
        let mut values = Vec::with_capacity(blocks.len());
        for block in blocks {
            match parsed(block)? {
                Some(value) => values.push(value),
                None => return Ok(Data::Text(text.to_owned())),
            }
        }
        return Ok(Data::Json(Value::Array(values)));
    }
    Ok(Data::Text(text.to_owned()))
}

/// The string of a single-key object such as `{"result": "..."}`.
fn wrapped_text(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.values().next()?.as_str(),
        _ => None,
    }
}

/// The result with its content replaced by `text`, and its structured content (if it had any)
/// by `value`; every other field (`_meta`, `resultType`, ...) stays as it was. Structured content
/// that was a single-key wrapper of text (`{"result": "..."}`) stays one, holding `text`, so it
/// still matches the schema such a wrapper comes with.
pub(super) fn replace(result: &mut Map<String, Value>, text: &str, value: Value) -> String {
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    if let Some(structured) = result.get_mut("structuredContent").filter(|v| !v.is_null()) {
        *structured = match structured {
            Value::Object(map) if map.len() == 1 && map.values().all(Value::is_string) => {
                let key = map.keys().next().cloned().unwrap_or_default();
                json!({ key: text })
            }
            _ => value,
        };
    }
    Value::Object(std::mem::take(result)).to_string()
}
