//! What a filter reads of each record, so that extraction builds only that much of it.
//!
//! Most extractions look at a few fields of records that have twenty: `[.title, .namespace] |
//! @tsv`, `{id, title, namespace}`, `select(.title | test($keyword; "i"))`. Building every field
//! of every line as a jq value, then dropping it, was most of the time an extraction took. This
//! module finds, from the filter's syntax, which top-level fields can influence its outputs and
//! errors; extraction then parses only those members of each record line and skips the rest of
//! the line without building anything.
//!
//! The analysis is conservative: anything it does not understand (a call it does not know, a
//! `def`, `..`, `keys`, `to_entries`, a dynamic index, an update) needs the whole record, and then
//! the record is parsed whole, as before. What it relies on: a filter that only indexes the record
//! with constant keys, passes it through, or tests its truthiness behaves the same on the record
//! with the other members left out (objects stay objects, everything else is untouched).
//!
//! A filter that only builds an object of members (`{id, title, namespace}`) goes further: its
//! outputs are printed from the members' text, with no jq value built at all; so does
//! `[.a, .b] | @tsv`. A `select` whose condition tests one member against a variable or a string
//! (`startswith`, `endswith`, `test`, `==`, `!=`, `index`) evaluates it in Rust ([`Cond`]),
//! running the filter only where the test cannot say what jq would (an error, another type).

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::path::{Opt, Part};

/// What is needed of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// All of it.
    All,
    /// If it is an object, these members (sorted, no duplicates); an empty list means only
    /// what kind of value it is. Any other value is needed whole.
    Keys(Vec<String>),
}

impl Need {
    fn none() -> Need {
        Need::Keys(Vec::new())
    }

    fn key(k: String) -> Need {
        Need::Keys(vec![k])
    }

    fn union(self, other: Need) -> Need {
        match (self, other) {
            (Need::Keys(mut a), Need::Keys(b)) => {
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                Need::Keys(a)
            }
            _ => Need::All,
        }
    }
}

/// How to run a filter over record lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Parse each line whole.
    Whole,
    /// Parse only these members of each record; the filter's outputs are the same.
    Project(Vec<String>),
    /// The filter is `select(COND)` and COND reads only these members: run COND on the projected
    /// record and parse the line whole only when it selects the record.
    Select {
        /// The text of COND.
        cond: String,
        /// The members COND reads.
        keys: Vec<String>,
        /// COND as a test Rust evaluates on the projected record, when it is one of those
        /// ([`Cond`]); the filter still runs wherever the test cannot say what jq would.
        native: Option<Cond>,
    },
    /// The filter builds an object of members of the record under constant names (`{id, title,
    /// t: .time}`): `(name, member)` pairs in the object's order, names distinct. Each output is
    /// printed from the members' text ([`member_texts`]) with no jq value built, for every line
    /// that is an object.
    Construct(Vec<(String, String)>),
    /// The filter is `[.a, .b, ...] | @tsv` (or `@csv`) over members of the record: the array is
    /// built from the projected members, with no filter run, and formatted as jq 1.6 does.
    Tabular {
        /// The members, in the array's order (repeats allowed).
        members: Vec<String>,
        /// `@csv`, else `@tsv`.
        csv: bool,
    },
}

/// The plan for running `code` once per record.
pub fn per_record(code: &str) -> Plan {
    let Some(term) = jaq_core::load::parse(code, |p| p.term()) else {
        return Plan::Whole;
    };
    if let Some(fields) = construct(&term) {
        return Plan::Construct(fields);
    }
    if let Some((members, csv)) = tabular(&term) {
        return Plan::Tabular { members, csv };
    }
    if let Need::Keys(keys) = need(&term, Need::All) {
        return Plan::Project(keys);
    }
    // `select(COND)` passes the record through whole, so the analysis above needs all of it;
    // but COND alone often needs little.
    if let Term::Call("select", args) = &term
        && let [cond] = &args[..]
        && let Need::Keys(keys) = need(cond, Need::none())
        && let Some(inner) = sole_argument(code, "select")
    {
        return Plan::Select {
            cond: inner.to_owned(),
            keys,
            native: cond_of(cond),
        };
    }
    Plan::Whole
}

/// The `(name, member)` pairs of an object construction whose every value is a member of the
/// input under a constant name (`{id}`, `{"a b"}`, `{t: .time}`, `{t: ."a b"}`), with distinct
/// names; `None` for anything else (`.time?`, `.a.b`, `$x`, a computed name, ...).
fn construct(term: &Term<&str>) -> Option<Vec<(String, String)>> {
    let Term::Obj(entries) = term else { return None };
    let mut fields: Vec<(String, String)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let name = literal(k)?;
        let member = match v {
            None => name.clone(),
            Some(value) => member_of_input(value)?,
        };
        if fields.iter().any(|(n, _)| *n == name) {
            return None;
        }
        fields.push((name, member));
    }
    Some(fields)
}

/// The members and format of `[.a, ."b c", ...] | @tsv` (or `@csv`): every element a member of
/// the input under a constant name; `None` for anything else (`.a?`, `.a.b`, `$x`, ...).
fn tabular(term: &Term<&str>) -> Option<(Vec<String>, bool)> {
    let Term::BinOp(array, BinaryOp::Pipe(None), format) = term else {
        return None;
    };
    let csv = match &**format {
        Term::Call("@tsv", args) if args.is_empty() => false,
        Term::Call("@csv", args) if args.is_empty() => true,
        _ => return None,
    };
    let Term::Arr(Some(elements)) = &**array else {
        return None;
    };
    let mut members = Vec::new();
    each_of_commas(elements, &mut |element| {
        members.push(member_of_input(element)?);
        Some(())
    })?;
    Some((members, csv))
}

/// The name of the member `term` reads when it is `.name`, `."a b"` or `.["a b"]` (not
/// optional, a constant name); `None` for anything else.
fn member_of_input(term: &Term<&str>) -> Option<String> {
    let Term::Path(base, path) = term else {
        return None;
    };
    let (Term::Id, [(Part::Index(name), Opt::Essential)]) = (&**base, &path.0[..]) else {
        return None;
    };
    literal(name)
}

/// Calls `f` on each term of `a, b, c` in order, however the parser nested the commas; `None`
/// as soon as `f` gives `None`.
fn each_of_commas<'a>(term: &'a Term<&'a str>, f: &mut impl FnMut(&'a Term<&'a str>) -> Option<()>) -> Option<()> {
    match term {
        Term::BinOp(l, BinaryOp::Comma, r) => {
            each_of_commas(l, f)?;
            each_of_commas(r, f)
        }
        term => f(term),
    }
}

/// How to run a filter over the array of every record (`slurp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slurp {
    /// Build the array of whole records.
    Whole,
    /// Build the array of records with only these members; the filter's outputs are the same,
    /// because records reach them only through these members (`group_by(.namespace) | map(...)`).
    Project(Vec<String>),
    /// The filter is `sort_by(KEY)` and KEY reads only these members: sort the projected records,
    /// then print the record lines themselves in that order.
    SortBy {
        /// The text of KEY.
        key: String,
        /// The members KEY reads.
        keys: Vec<String>,
    },
}

/// The plan for running `code` once over the array of every record.
pub fn slurped(code: &str) -> Slurp {
    let Some(term) = jaq_core::load::parse(code, |p| p.term()) else {
        return Slurp::Whole;
    };
    if let Need::Keys(keys) = elements(&term) {
        return Slurp::Project(keys);
    }
    if let Term::Call("sort_by", args) = &term
        && let [key] = &args[..]
        && let Need::Keys(keys) = need(key, Need::All)
        && let Some(inner) = sole_argument(code, "sort_by")
    {
        return Slurp::SortBy {
            key: inner.to_owned(),
            keys,
        };
    }
    Slurp::Whole
}

/// The text of the argument of `code`, which parses as one call `NAME(ARG)`. None when the text
/// has a comment: it could swallow the parentheses a plan puts the argument back between.
fn sole_argument<'a>(code: &'a str, name: &str) -> Option<&'a str> {
    if code.contains('#') {
        return None;
    }
    code.trim().strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')
}

/// A number literal.
fn is_number(term: &Term<&str>) -> bool {
    matches!(term, Term::Num(_))
}

/// What `term`, run on an array of records, needs of each record so that its outputs and errors
/// stay the same. `All` whenever a record could reach an output (or anything not understood)
/// whole: a projected record must never be printed.
fn elements(term: &Term<&str>) -> Need {
    match term {
        Term::Num(_) | Term::Var(_) | Term::Arr(None) => Need::none(),
        Term::Str(None, parts) if parts.iter().all(|p| !matches!(p, StrPart::Term(_))) => Need::none(),
        Term::Arr(Some(t)) => elements(t),
        Term::Obj(entries) => entries.iter().fold(Need::none(), |acc, (k, v)| match (literal(k), v) {
            (Some(_), Some(v)) => acc.union(elements(v)),
            _ => Need::All,
        }),
        Term::BinOp(l, op, r) => match op {
            BinaryOp::Comma | BinaryOp::Math(_) | BinaryOp::Cmp(_) => elements(l).union(elements(r)),
            BinaryOp::Pipe(None) => match &**l {
                // The rest sees only what the per-record filter made of each record.
                Term::Call("map", args) if args.len() == 1 => need(&args[0], Need::All),
                // Arrays of the records themselves, reordered or grouped.
                Term::Call("sort_by" | "unique_by", args) if args.len() == 1 => {
                    need(&args[0], Need::All).union(elements(r))
                }
                Term::Call("group_by", args) if args.len() == 1 => need(&args[0], Need::All).union(groups(r)),
                // One record, or each: the rest is a per-record filter.
                Term::Call("first" | "last", args) if args.is_empty() => need(r, Need::All),
                Term::Path(base, path) if matches!(**base, Term::Id) && path.0.len() == 1 => match &path.0[0].0 {
                    Part::Index(i) if is_number(i) => need(r, Need::All),
                    Part::Range(None, None) => need(r, Need::All),
                    _ => Need::All,
                },
                _ => Need::All,
            },
            _ => Need::All,
        },
        Term::Call("length", args) if args.is_empty() => Need::none(),
        Term::Call("map", args) if args.len() == 1 => need(&args[0], Need::All),
        // `.[0].namespace`, `.[].id`: a record, then one of its members.
        Term::Path(base, path) if matches!(**base, Term::Id) && path.0.len() >= 2 => {
            let record = match &path.0[0].0 {
                Part::Index(i) => is_number(i),
                Part::Range(None, None) => true,
                Part::Range(..) => false,
            };
            // Later parts index the member, which is whole; their indices must not read the
            // array (`.[0].a[.[1]]`).
            let constant = path.0[2..].iter().all(|(part, _)| match part {
                Part::Index(i) => literal(i).is_some() || is_number(i),
                Part::Range(from, to) => from.iter().chain(to.iter()).all(|i| is_number(i)),
            });
            match &path.0[1].0 {
                Part::Index(k) if record && constant => literal(k).map_or(Need::All, Need::key),
                _ => Need::All,
            }
        }
        _ => Need::All,
    }
}

/// What `term`, run on an array of groups of records (the output of `group_by`), needs of each
/// record.
fn groups(term: &Term<&str>) -> Need {
    match term {
        Term::Call("length", args) if args.is_empty() => Need::none(),
        Term::Call("map", args) if args.len() == 1 => elements(&args[0]),
        Term::BinOp(l, BinaryOp::Pipe(None), _) => match &**l {
            Term::Call("map", args) if args.len() == 1 => elements(&args[0]),
            _ => Need::All,
        },
        _ => Need::All,
    }
}

/// A string literal without interpolation, as its text.
fn literal(term: &Term<&str>) -> Option<String> {
    let Term::Str(None, parts) = term else { return None };
    let mut out = String::new();
    for part in parts {
        match part {
            StrPart::Str(s) => out.push_str(s),
            StrPart::Char(c) => out.push(*c),
            StrPart::Term(_) => return None,
        }
    }
    Some(out)
}

/// What `term` needs of its input so that its outputs, as far as `out` says they are needed, and
/// its errors stay the same.
fn need(term: &Term<&str>, out: Need) -> Need {
    match term {
        Term::Id => out,
        Term::Num(_) | Term::Var(_) | Term::Break(_) | Term::Arr(None) => Need::none(),
        Term::Str(None, parts) => parts.iter().fold(Need::none(), |acc, part| match part {
            StrPart::Term(t) => acc.union(need(t, Need::All)),
            StrPart::Str(_) | StrPart::Char(_) => acc,
        }),
        Term::Arr(Some(t)) | Term::Neg(t) => need(t, Need::All),
        Term::Obj(entries) => entries.iter().fold(Need::none(), |acc, (k, v)| {
            let value = match (k, v) {
                (_, Some(v)) => need(v, Need::All),
                // `{$x}` is `{x: $x}`
                (Term::Var(_), None) => Need::none(),
                // `{id}` and `{"id"}` are `{id: .id}`
                (k, None) => match literal(k) {
                    Some(name) => Need::key(name),
                    None => Need::All,
                },
            };
            acc.union(need(k, Need::All)).union(value)
        }),
        Term::BinOp(l, op, r) => match op {
            BinaryOp::Pipe(None) => need(l, need(r, out)),
            BinaryOp::Pipe(Some(pattern)) => pattern_need(pattern).union(need(l, Need::All)).union(need(r, out)),
            BinaryOp::Comma | BinaryOp::Alt => need(l, out.clone()).union(need(r, out)),
            BinaryOp::Or | BinaryOp::And => need(l, Need::none()).union(need(r, Need::none())),
            BinaryOp::Math(_) | BinaryOp::Cmp(_) => need(l, Need::All).union(need(r, Need::All)),
            // Which alternative matches can depend on any member.
            BinaryOp::PipeAlt(_) => Need::All,
            BinaryOp::Assign | BinaryOp::Update | BinaryOp::UpdateMath(_) | BinaryOp::UpdateAlt => Need::All,
        },
        Term::Label(_, t) => need(t, out),
        // The handler's input is the error, not this input.
        Term::TryCatch(t, _) => need(t, out),
        Term::IfThenElse(branches, otherwise) => {
            let mut acc = match otherwise {
                Some(t) => need(t, out.clone()),
                None => out.clone(),
            };
            for (cond, then) in branches {
                acc = acc.union(need(cond, Need::none())).union(need(then, out.clone()));
            }
            acc
        }
        Term::Call(name, args) => match (*name, &args[..]) {
            ("select", [cond]) => need(cond, Need::none()).union(out),
            // jq's definitions pass `f`'s outputs on (some of them): `first(f)`, `last(f)`,
            // `limit(n; f)`; `n` reads the input as well.
            ("first" | "last", [f]) => need(f, out),
            ("limit", [n, f]) => need(n, Need::All).union(need(f, out)),
            // `null`, `true` and `false` are calls in jaq's syntax.
            ("empty" | "not" | "null" | "true" | "false", []) => Need::none(),
            _ => Need::All,
        },
        Term::Path(base, path) => {
            let mut acc = Need::none();
            for (part, _) in &path.0 {
                let indices = match part {
                    Part::Index(i) => vec![i],
                    Part::Range(from, to) => from.iter().chain(to.iter()).collect(),
                };
                for index in indices {
                    // Indices are evaluated with the path's input as theirs.
                    if literal(index).is_none() {
                        acc = acc.union(need(index, Need::All));
                    }
                }
            }
            let first = match path.0.first() {
                Some((Part::Index(i), _)) => literal(i).map_or(Need::All, Need::key),
                Some((Part::Range(..), _)) => Need::All,
                None => out,
            };
            acc.union(need(base, first))
        }
        Term::Recurse | Term::Str(Some(_), _) | Term::Fold(..) | Term::Def(..) => Need::All,
    }
}

/// What destructuring with `pattern` evaluates on the input (object keys may be filters).
fn pattern_need(pattern: &Pattern<&str>) -> Need {
    match pattern {
        Pattern::Var(_) => Need::none(),
        Pattern::Arr(items) => items.iter().fold(Need::none(), |acc, p| acc.union(pattern_need(p))),
        Pattern::Obj(entries) => entries.iter().fold(Need::none(), |acc, (k, p)| {
            let key = match k {
                Term::Var(_) => Need::none(),
                k if literal(k).is_some() => Need::none(),
                k => need(k, Need::All),
            };
            acc.union(key).union(pattern_need(p))
        }),
    }
}

mod cond;
mod fields;
mod members;
#[cfg(test)]
mod tests;

use cond::cond_of;
pub use cond::{BoundCond, Cond, Fallback, Operand, Test};
pub use fields::named_fields;
pub use members::{member_texts, parse_projected};
