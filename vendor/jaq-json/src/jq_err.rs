//! lro: runtime errors in jq 1.6's words, which filters see when they `try ... catch .`.

use crate::{Error, Val};
use alloc::string::String;

/// jq's name for a value's kind.
pub(crate) fn kind(v: &Val) -> &'static str {
    match v {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::TStr(_) | Val::BStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    }
}

/// `KIND (JSON)`, the JSON cut to 11 bytes and `...` when longer than 14, as jq 1.6 prints it.
pub(crate) fn typed(v: &Val) -> String {
    let json = String::from_utf8_lossy(&v.to_json()).into_owned();
    let shown = if json.len() > 14 {
        let mut end = 11;
        while !json.is_char_boundary(end) {
            end -= 1;
        }
        alloc::format!("{}...", &json[..end])
    } else {
        json
    };
    alloc::format!("{} ({shown})", kind(v))
}

/// `Cannot index KIND with "KEY"` for a string key, else `Cannot index KIND with KIND`.
pub(crate) fn index(v: &Val, key: &Val) -> Error {
    match key {
        Val::TStr(k) | Val::BStr(k) => Error::str(format_args!(
            "Cannot index {} with string \"{}\"",
            kind(v),
            String::from_utf8_lossy(k)
        )),
        _ => Error::str(format_args!("Cannot index {} with {}", kind(v), kind(key))),
    }
}

/// `Cannot iterate over KIND (JSON)`.
pub(crate) fn iterate(v: &Val) -> Error {
    Error::str(format_args!("Cannot iterate over {}", typed(v)))
}

/// `KIND (JSON) and KIND (JSON) cannot be OP`.
pub(crate) fn math(l: &Val, op: &str, r: &Val) -> Error {
    Error::str(format_args!("{} and {} cannot be {op}", typed(l), typed(r)))
}
