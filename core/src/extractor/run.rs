//! Running a filter over the record lines of a file, once per record or once over all of them
//! (`slurp`), parsing only the members the filter reads (see [`crate::plan`]).

use jaq_json::Val;

use super::Extracted;
use super::hint::with_hint;
use super::output::{Output, cap_error};
use crate::jq::{self, Filter, Flow};
use crate::json_text::{self, is_jq_canonical};
use crate::plan::{self, Plan, Slurp};
use crate::{Detail, Error};

/// Runs `filter` (compiled from `program`, with variables `names` bound to `vars`) over the
/// record lines in `body`, into an output capped at `limit` tokens.
#[allow(
    clippy::too_many_arguments,
    reason = "one private call site; a struct would only rename them"
)]
pub(super) fn run_over_lines(
    filter: &Filter,
    names: &[&str],
    vars: &[Val],
    body: &str,
    slurp: bool,
    raw: bool,
    limit: u32,
    detail: Option<Detail>,
    program: &str,
) -> Result<Extracted, Error> {
    let mut out = Output::new(raw, limit);
    let lines = json_text::lines(body).enumerate().filter(|(_, l)| !l.trim().is_empty());
    let corrupt = |i: usize, e: String| Error::Corrupt(format!("line {} is not a valid record: {e}", i + 2));
    let parse = |(i, line): (usize, &str)| jq::parse(line).map_err(|e| corrupt(i, e));
    let failed = |e: String, at: Option<usize>| {
        let at = at.map_or(String::new(), |i| format!(" (on the record at line {})", i + 2));
        // The filter's own text (it may carry any value) is cut to the cap; where it failed and
        // the hint come after it whole.
        let e = cap_error(e, limit);
        with_hint(Error::FilterFailed(format!("{e}{at}")), program, detail)
    };
    if slurp {
        let lines: Vec<(usize, &str)> = lines.collect();
        let projected = |keys: &[String]| {
            lines
                .iter()
                .map(|&(i, line)| plan::parse_projected(line, keys).map_err(|e| corrupt(i, e)))
                .collect::<Result<Val, Error>>()
        };
        let keys = match plan::slurped(program) {
            Slurp::Whole => None,
            Slurp::Project(keys) => Some(keys),
            Slurp::SortBy { key, keys } => {
                let sorted =
                    sorted_positions(&key, names, vars, projected(&keys)?, lines.len()).map_err(|e| failed(e, None))?;
                if let Some(positions) = sorted {
                    let mut text = String::with_capacity(body.len() + 2);
                    text.push('[');
                    for (n, position) in positions.into_iter().enumerate() {
                        let (i, line) = lines[position];
                        if n > 0 {
                            text.push(',');
                        }
                        if is_jq_canonical(line) {
                            text.push_str(line);
                        } else {
                            text.push_str(&jq::to_json(&parse((i, line))?));
                        }
                    }
                    text.push(']');
                    out.push_text(text);
                    return Ok(out.finish(detail, program));
                }
                // The key halted, or did something else unforeseen: sort the records themselves.
                None
            }
        };
        let records = match &keys {
            Some(keys) => projected(keys)?,
            None => lines.iter().copied().map(parse).collect::<Result<Val, Error>>()?,
        };
        filter
            .run(records, vars, &mut |v| out.push(&v))
            .map_err(|e| failed(e, None))?;
    } else {
        match plan::per_record(program) {
            plan @ (Plan::Whole | Plan::Project(_)) => {
                let keys = match &plan {
                    Plan::Project(keys) => Some(keys),
                    _ => None,
                };
                for (i, line) in lines {
                    out.at_line(i + 2);
                    let record = match keys {
                        Some(keys) => plan::parse_projected(line, keys).map_err(|e| corrupt(i, e))?,
                        None => parse((i, line))?,
                    };
                    if filter
                        .run(record, vars, &mut |v| out.push(&v))
                        .map_err(|e| failed(e, Some(i)))?
                        != Flow::Continue
                    {
                        break;
                    }
                }
            }
            Plan::Construct(fields) => {
                let members: Vec<String> = fields.iter().map(|(_, member)| member.clone()).collect();
                let keys = distinct(&members);
                let names: Vec<String> = fields.iter().map(|(name, _)| jq::to_json(&jq::string(name))).collect();
                for (i, line) in lines {
                    out.at_line(i + 2);
                    let Some(texts) = plan::member_texts(line, &members).map_err(|e| corrupt(i, e))? else {
                        // Not an object (jq's error, or what the filter makes of it), or an
                        // escaped member name: the general path.
                        let record = plan::parse_projected(line, &keys).map_err(|e| corrupt(i, e))?;
                        if filter
                            .run(record, vars, &mut |v| out.push(&v))
                            .map_err(|e| failed(e, Some(i)))?
                            != Flow::Continue
                        {
                            break;
                        }
                        continue;
                    };
                    let mut text = String::with_capacity(2 + names.iter().map(|n| n.len() + 16).sum::<usize>());
                    text.push('{');
                    for (n, (name, value)) in names.iter().zip(&texts).enumerate() {
                        if n > 0 {
                            text.push(',');
                        }
                        text.push_str(name);
                        text.push(':');
                        text.push_str(value.as_deref().unwrap_or("null"));
                    }
                    text.push('}');
                    if !out.push_text(text) {
                        break;
                    }
                }
            }
            Plan::Tabular { members, csv } => {
                let kind = if csv { jq::Tabular::Csv } else { jq::Tabular::Tsv };
                let keys = distinct(&members);
                let names: Vec<Val> = members.iter().map(|m| jq::string(m)).collect();
                for (i, line) in lines {
                    out.at_line(i + 2);
                    let record = plan::parse_projected(line, &keys).map_err(|e| corrupt(i, e))?;
                    // `.a` of an object is its member or null; the array of them formatted as
                    // the filter would. Anything else (a line that is not an object, a value
                    // the format refuses) runs the filter, which says what jq says.
                    let line_out = match &record {
                        Val::Obj(map) => {
                            let array: Val = names.iter().map(|n| map.get(n).cloned().unwrap_or(Val::Null)).collect();
                            jq::tabular(&array, kind).ok()
                        }
                        _ => None,
                    };
                    let go_on = match line_out {
                        Some(text) => out.push(&text),
                        None => {
                            filter
                                .run(record, vars, &mut |v| out.push(&v))
                                .map_err(|e| failed(e, Some(i)))?
                                == Flow::Continue
                        }
                    };
                    if !go_on {
                        break;
                    }
                }
            }
            Plan::Select { cond, keys, native } => {
                // `select(COND)` outputs the record once for every true output of COND.
                let cond = Filter::compile(&cond, names)?;
                let native = native.and_then(|native| native.bind(names, vars));
                for (i, line) in lines {
                    out.at_line(i + 2);
                    let record = plan::parse_projected(line, &keys).map_err(|e| corrupt(i, e))?;
                    let mut selected = Selected { line, whole: None };
                    if let Some(holds) = native.as_ref().and_then(|native| native.holds(&record)) {
                        if holds && !selected.push(&mut out, || parse((i, line)))? {
                            break;
                        }
                        continue;
                    }
                    let mut bad_line = None;
                    let flow = cond
                        .run(record, vars, &mut |v| {
                            if matches!(v, Val::Null | Val::Bool(false)) {
                                return true;
                            }
                            selected.push(&mut out, || parse((i, line))).unwrap_or_else(|e| {
                                bad_line = Some(e);
                                false
                            })
                        })
                        .map_err(|e| failed(e, Some(i)))?;
                    if let Some(e) = bad_line {
                        return Err(e);
                    }
                    if flow != Flow::Continue {
                        break;
                    }
                }
            }
        }
    }
    Ok(out.finish(detail, program))
}

/// A record line `select` outputs, parsed only if it must be.
struct Selected<'l> {
    line: &'l str,
    whole: Option<Val>,
}

impl Selected<'_> {
    /// Outputs the line (once per true output of the condition); false when the output wants
    /// no more (the cap is reached). Most lines print as they are written, with no record built
    /// (a string would print differently in raw mode); the others are parsed once, by `parse`.
    fn push(&mut self, out: &mut Output, parse: impl FnOnce() -> Result<Val, Error>) -> Result<bool, Error> {
        if out.is_full() {
            return Ok(false);
        }
        if !(out.raw && self.line.starts_with('"')) && is_jq_canonical(self.line) {
            return Ok(out.push_text(self.line.to_owned()));
        }
        if self.whole.is_none() {
            self.whole = Some(parse()?);
        }
        Ok(out.push(self.whole.as_ref().expect("parsed above")))
    }
}

/// `members` sorted, each once: the keys to project.
fn distinct(members: &[String]) -> Vec<String> {
    let mut keys = members.to_vec();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The order `sort_by(KEY)` puts `records` (projected to what KEY reads) in, as positions: jaq
/// sorts the positions by the same keys, so the order is the one it gives the records, ties
/// included. `None` when the run does not give one permutation of `0..count`.
fn sorted_positions(
    key: &str,
    names: &[&str],
    vars: &[Val],
    records: Val,
    count: usize,
) -> Result<Option<Vec<usize>>, String> {
    let program = format!(". as $__lro_records | [range(length)] | sort_by($__lro_records[.] | ({key}))");
    let Ok(order) = Filter::compile(&program, names) else {
        return Ok(None);
    };
    let mut outputs = Vec::new();
    order.run(records, vars, &mut |v| {
        outputs.push(v);
        true
    })?;
    let [Val::Arr(positions)] = &outputs[..] else {
        return Ok(None);
    };
    let positions: Option<Vec<usize>> = positions
        .iter()
        .map(|p| match p {
            Val::Num(n) => n
                .as_isize()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < count),
            _ => None,
        })
        .collect();
    Ok(positions.filter(|p| p.len() == count))
}
