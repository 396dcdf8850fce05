//! Walking a record line's members as text: projecting a record to the members a filter reads,
//! and the members' own text for outputs printed without building a jq value.

use std::borrow::Cow;

use jaq_json::Val;

use crate::jq;
use crate::json_text::{is_jq_canonical, skip_string, skip_value, skip_ws};

/// Parses a record line, keeping only the `keys` members when it is an object (any other value
/// whole). Members left out are skipped, not validated.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn parse_projected(line: &str, keys: &[String]) -> Result<Val, String> {
    let mut members: Vec<(Val, Val)> = Vec::with_capacity(keys.len());
    let object = walk_members(line, |name, text| {
        if keys.iter().any(|k| k == name) {
            let value = jq::parse(text).map_err(|e| format!("member {name:?}: {e}"))?;
            members.push((jq::string(name), value));
        }
        Ok(())
    })?;
    if !object {
        return jq::parse(line);
    }
    Ok(Val::obj(members.into_iter().collect()))
}

/// Each of `members` of a record line that is an object, printed as jq prints it (`None` when
/// the record has no such member; the last value when it has several, as parsing keeps), or
/// `None` when the line is not an object or has an escaped member name. Checks the line as
/// [`parse_projected`] does, with the same errors.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
pub fn member_texts<'l>(line: &'l str, members: &[String]) -> Result<Option<Vec<Option<Cow<'l, str>>>>, String> {
    let mut texts: Vec<Option<Cow<'l, str>>> = vec![None; members.len()];
    let object = walk_members(line, |name, text| {
        let mut printed: Option<Cow<'l, str>> = None;
        for (slot, member) in texts.iter_mut().zip(members) {
            if member != name {
                continue;
            }
            if printed.is_none() {
                printed = Some(if is_jq_canonical(text) {
                    Cow::Borrowed(text)
                } else {
                    let value = jq::parse(text).map_err(|e| format!("member {name:?}: {e}"))?;
                    Cow::Owned(jq::to_json(&value))
                });
            }
            *slot = printed.clone();
        }
        Ok(())
    })?;
    Ok(object.then_some(texts))
}

/// Calls `member(name, value text)` for each member of a record line, in order, and checks the
/// line's structure around them (the values themselves are skipped, not validated). False when
/// the line is not an object, or at an escaped member name: the caller then drops what it was
/// given and parses the line whole.
#[cfg_attr(target_arch = "wasm32", target_feature(enable = "simd128"))]
fn walk_members<'l>(
    line: &'l str,
    mut member: impl FnMut(&'l str, &'l str) -> Result<(), String>,
) -> Result<bool, String> {
    let b = line.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Ok(false);
    }
    i += 1;
    let at = |i: usize, what: &str| format!("byte offset {i}: {what}");
    i = skip_ws(b, i);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            if b.get(i) != Some(&b'"') {
                return Err(at(i, "expected a member name"));
            }
            let end = skip_string(b, i).ok_or_else(|| at(i, "unterminated string"))?;
            let name = &line[i + 1..end - 1];
            // Names are short: a byte loop, not a search set up for long texts.
            if name.bytes().any(|c| c == b'\\') {
                // An escaped member name: rare enough to take the general path.
                return Ok(false);
            }
            i = skip_ws(b, end);
            if b.get(i) != Some(&b':') {
                return Err(at(i, "expected `:`"));
            }
            i = skip_ws(b, i + 1);
            let start = i;
            i = skip_value(b, i).ok_or_else(|| at(start, "expected a value"))?;
            member(name, &line[start..i])?;
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b',') => i = skip_ws(b, i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return Err(at(i, "expected `,` or `}`")),
            }
        }
    }
    if skip_ws(b, i) != b.len() {
        return Err(at(i, "unexpected text after the record"));
    }
    Ok(true)
}
