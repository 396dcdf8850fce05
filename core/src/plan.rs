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

use std::borrow::Cow;

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::ops::Cmp;
use jaq_core::path::{Opt, Part};
use jaq_json::Val;

use crate::jq;
use crate::json_text::{is_jq_canonical, skip_string, skip_value, skip_ws};

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

/// A `select` condition on one member of the record that Rust evaluates without running jq: the
/// recipes' conditions (`(.namespace // "") | startswith($namespace)`, `(.title // "") |
/// test($keyword; "i")`, `.memory_type == $memory_type`, `(.tags // []) | index($tag)`) and
/// their like. Running COND through jaq once per record cost more than reading the record's
/// members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    /// The member it reads.
    pub member: String,
    /// `(.m // D)`: D, for a member that is null, false or missing.
    pub default: Option<Fallback>,
    /// What it does with the member.
    pub test: Test,
    /// Its argument.
    pub operand: Operand,
}

/// The argument of a [`Cond`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// A variable, named without `$`.
    Var(String),
    /// A string literal, as its text.
    Str(String),
    /// A number literal, as written (`== 399999`).
    Num(String),
}

/// The `D` of `(.m // D)` in a [`Cond`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// A string literal.
    Str(String),
    /// `[]`.
    EmptyArray,
}

/// What a [`Cond`] does with the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Test {
    /// `startswith(X)`.
    Prefix,
    /// `endswith(X)`.
    Suffix,
    /// `test(X)` or `test(X; FLAGS)`, with these flags.
    Regex(String),
    /// `== X` (true) or `!= X` (false), either way round.
    Equal(bool),
    /// `index(X)`.
    Index,
}

/// COND as a [`Cond`], when it is one.
fn cond_of(term: &Term<&str>) -> Option<Cond> {
    let operand = |term: &Term<&str>| match term {
        Term::Var(name) => name.strip_prefix('$').map(|n| Operand::Var(n.to_owned())),
        term => literal(term).map(Operand::Str),
    };
    match term {
        Term::BinOp(l, BinaryOp::Cmp(op @ (Cmp::Eq | Cmp::Ne)), r) => {
            let (member, other) = match (member_of_input(l), member_of_input(r)) {
                (Some(member), None) => (member, r),
                (None, Some(member)) => (member, l),
                _ => return None,
            };
            let operand = match &**other {
                Term::Num(n) => Operand::Num((*n).to_owned()),
                other => operand(other)?,
            };
            Some(Cond {
                member,
                default: None,
                test: Test::Equal(matches!(op, Cmp::Eq)),
                operand,
            })
        }
        Term::BinOp(l, BinaryOp::Pipe(None), r) => {
            let Term::Call(name, args) = &**r else { return None };
            let (member, default) = match member_of_input(l) {
                Some(member) => (member, None),
                None => {
                    let Term::BinOp(m, BinaryOp::Alt, default) = &**l else {
                        return None;
                    };
                    let default = match &**default {
                        Term::Arr(None) => Fallback::EmptyArray,
                        other => Fallback::Str(literal(other)?),
                    };
                    (member_of_input(m)?, Some(default))
                }
            };
            let test = match (*name, &args[..]) {
                ("startswith", [_]) => Test::Prefix,
                ("endswith", [_]) => Test::Suffix,
                ("test", [_]) => Test::Regex(String::new()),
                ("test", [_, flags]) => Test::Regex(literal(flags)?),
                ("index", [_]) => Test::Index,
                _ => return None,
            };
            Some(Cond {
                member,
                default,
                test,
                operand: operand(args.first()?)?,
            })
        }
        _ => None,
    }
}

impl Cond {
    /// The condition with its operand's value: a variable's from `vars` (in the order of
    /// `names`). None when the variable is not among them (the filter's compile error says so).
    pub fn bind(&self, names: &[&str], vars: &[Val]) -> Option<BoundCond> {
        let operand = match &self.operand {
            Operand::Var(var) => vars.get(names.iter().position(|n| n == var)?)?.clone(),
            Operand::Str(text) => jq::string(text),
            // As jaq reads the literal; a number it cannot read leaves the test to jaq.
            Operand::Num(text) => match jq::parse(text).ok()? {
                number @ Val::Num(_) => number,
                _ => return None,
            },
        };
        let flags = match &self.test {
            Test::Regex(flags) => jq::string(flags),
            _ => Val::Null,
        };
        Some(BoundCond {
            member: jq::string(&self.member),
            default: self.default.as_ref().map(|default| match default {
                Fallback::Str(text) => jq::string(text),
                Fallback::EmptyArray => Val::Arr(Default::default()),
            }),
            test: self.test.clone(),
            operand,
            flags,
        })
    }
}

/// A [`Cond`] ready to evaluate.
#[derive(Debug)]
pub struct BoundCond {
    member: Val,
    default: Option<Val>,
    test: Test,
    operand: Val,
    flags: Val,
}

impl BoundCond {
    /// Whether COND's one output on `record` (a projected record) is true as jq counts truth;
    /// None when jq would not give one plain output (an error, such as `startswith` of a
    /// number, or a case this does not evaluate): then the filter itself must run.
    pub fn holds(&self, record: &Val) -> Option<bool> {
        let Val::Obj(members) = record else { return None };
        let mut value = members.get(&self.member).unwrap_or(&Val::Null);
        if let Some(default) = &self.default
            && matches!(value, Val::Null | Val::Bool(false))
        {
            value = default;
        }
        match (&self.test, value, &self.operand) {
            (Test::Prefix, Val::TStr(s), Val::TStr(a)) => Some(s.starts_with(a)),
            (Test::Suffix, Val::TStr(s), Val::TStr(a)) => Some(s.ends_with(a)),
            (Test::Regex(_), Val::TStr(_), Val::TStr(_)) => jq::regex_test(value, &self.operand, &self.flags).ok(),
            (Test::Equal(equal), value, operand) => Some((value == operand) == *equal),
            // `index` of null is null.
            (Test::Index, Val::Null, _) => Some(false),
            // An array and a value that is not one: the positions of elements equal to it.
            (Test::Index, Val::Arr(elements), operand) if !matches!(operand, Val::Arr(_)) => {
                Some(elements.iter().any(|e| e == operand))
            }
            _ => None,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Plan {
        Plan::Project(list.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn recipes_read_only_their_fields() {
        let tabular = |members: &[&str], csv: bool| Plan::Tabular {
            members: members.iter().map(|m| (*m).to_owned()).collect(),
            csv,
        };
        assert_eq!(
            per_record("[.title, .namespace] | @tsv"),
            tabular(&["title", "namespace"], false)
        );
        assert_eq!(
            per_record(r#"[.a, ."b c", .["d"], .a, .e] | @csv"#),
            tabular(&["a", "b c", "d", "a", "e"], true)
        );
        // Anything else in the array, or after the format, is run by jaq on the members it reads.
        assert_eq!(per_record("[.a, .b?] | @tsv"), keys(&["a", "b"]));
        assert_eq!(per_record("[.a, .b.c] | @tsv"), keys(&["a", "b"]));
        assert_eq!(per_record("[.a, 1] | @csv"), keys(&["a"]));
        assert_eq!(per_record("[.a] | @tsv | length"), keys(&["a"]));
        assert_eq!(per_record("[.a] | @json"), keys(&["a"]));
        assert_eq!(per_record("[] | @tsv"), keys(&[]));
        let fields = |pairs: &[(&str, &str)]| {
            Plan::Construct(pairs.iter().map(|(n, m)| ((*n).to_owned(), (*m).to_owned())).collect())
        };
        assert_eq!(
            per_record("{id, title, namespace}"),
            fields(&[("id", "id"), ("title", "title"), ("namespace", "namespace")])
        );
        assert_eq!(
            per_record(r#"{t: .time, "a b", u: ."c d", v: .["e"], w: .time}"#),
            fields(&[("t", "time"), ("a b", "a b"), ("u", "c d"), ("v", "e"), ("w", "time")])
        );
        // Anything else an object may hold is run by jaq, on the members it reads.
        assert_eq!(per_record("{a, a: .b}"), keys(&["a", "b"]));
        assert_eq!(per_record("{a: .b?}"), keys(&["b"]));
        assert_eq!(per_record("{a: .b.c}"), keys(&["b"]));
        assert_eq!(per_record("{a: 1}"), keys(&[]));
        assert_eq!(per_record("{(.k): .v}"), keys(&["k", "v"]));
        assert_eq!(
            per_record(r#"select(.title | test($keyword; "i"))"#),
            Plan::Select {
                cond: r#".title | test($keyword; "i")"#.into(),
                keys: vec!["title".into()],
                native: Some(Cond {
                    member: "title".into(),
                    default: None,
                    test: Test::Regex("i".into()),
                    operand: Operand::Var("keyword".into())
                })
            }
        );
        assert_eq!(
            per_record("select((.tags // []) | index($tag))"),
            Plan::Select {
                cond: "(.tags // []) | index($tag)".into(),
                keys: vec!["tags".into()],
                native: Some(Cond {
                    member: "tags".into(),
                    default: Some(Fallback::EmptyArray),
                    test: Test::Index,
                    operand: Operand::Var("tag".into())
                })
            }
        );
        assert_eq!(
            per_record(r#"select(.memory_type == "x") | {id, t: .provenance.confidence}"#),
            keys(&["id", "memory_type", "provenance"])
        );
        assert_eq!(per_record(r#".["a b"], ."c", .d?"#), keys(&["a b", "c", "d"]));
        assert_eq!(per_record(r#"if .a then .b else 1 end"#), keys(&["a", "b"]));
        assert_eq!(per_record(r#""\(.a) and \(.b)""#), keys(&["a", "b"]));
        assert_eq!(per_record(r#".a as $x | .b + $x"#), keys(&["a", "b"]));
        assert_eq!(per_record(r#"try .a catch ."#), keys(&["a"]));
        assert_eq!(per_record("1, null, $x"), keys(&[]));
        // jq's `first(f)`, `last(f)`, `limit(n; f)` read what `f` reads (issue 34, item 14).
        assert_eq!(per_record("first(.id)"), keys(&["id"]));
        assert_eq!(per_record("limit(2; .a, .b)"), keys(&["a", "b"]));
        assert_eq!(per_record("limit(.n; .a)"), keys(&["a", "n"]));
        assert_eq!(per_record("last(.a) | {x: .}"), keys(&["a"]));
        assert_eq!(per_record("first(.)"), Plan::Whole);
    }

    #[test]
    fn select_conditions_on_one_member_are_evaluated_without_jq() {
        let native = |code: &str| match per_record(code) {
            Plan::Select { native, .. } => native,
            plan => panic!("{code}: {plan:?}"),
        };
        let cond = |member: &str, test: Test, operand: Result<&str, &str>| {
            Some(Cond {
                member: member.into(),
                default: None,
                test,
                operand: match operand {
                    Ok(var) => Operand::Var(var.to_owned()),
                    Err(text) => Operand::Str(text.to_owned()),
                },
            })
        };
        // Every per-record condition of the recipe libraries.
        let with_default = |default: Fallback, cond: Option<Cond>| {
            cond.map(|c| Cond {
                default: Some(default),
                ..c
            })
        };
        let empty = || Fallback::Str(String::new());
        assert_eq!(
            native(r#"select((.namespace // "") | startswith($namespace))"#),
            with_default(empty(), cond("namespace", Test::Prefix, Ok("namespace")))
        );
        assert_eq!(
            native(r#"select((.title // "") | test($keyword; "i"))"#),
            with_default(empty(), cond("title", Test::Regex("i".into()), Ok("keyword")))
        );
        assert_eq!(
            native(r#"select((.content // "") | test($pattern; "i"))"#),
            with_default(empty(), cond("content", Test::Regex("i".into()), Ok("pattern")))
        );
        assert_eq!(
            native("select(.memory_type == $memory_type)"),
            cond("memory_type", Test::Equal(true), Ok("memory_type"))
        );
        assert_eq!(
            native("select((.tags // []) | index($tag))"),
            with_default(Fallback::EmptyArray, cond("tags", Test::Index, Ok("tag")))
        );
        assert_eq!(
            native("select(.namespace | startswith($namespace))"),
            cond("namespace", Test::Prefix, Ok("namespace"))
        );
        assert_eq!(
            native(r#"select(.id | endswith("7"))"#),
            cond("id", Test::Suffix, Err("7"))
        );
        assert_eq!(
            native(r#"select(.content | test("a.b"))"#),
            cond("content", Test::Regex(String::new()), Err("a.b"))
        );
        assert_eq!(
            native("select($t == .memory_type)"),
            cond("memory_type", Test::Equal(true), Ok("t"))
        );
        assert_eq!(
            native(r#"select(."a b" != "x")"#),
            cond("a b", Test::Equal(false), Err("x"))
        );
        assert_eq!(
            native("select(.tags | index($tag))"),
            cond("tags", Test::Index, Ok("tag"))
        );
        // A number literal, as `select(.id == 399999)` over a large file (issue 34, item 14).
        assert_eq!(
            native("select(.id == 399999)").map(|c| c.operand),
            Some(Operand::Num("399999".into()))
        );
        // Anything else runs through jaq.
        for code in [
            "select(.a == .b)",
            "select(.a == -1)",
            "select(.a.b == $x)",
            "select(.a? == $x)",
            "select((.a // 1) | startswith($x))",
            "select((.a // null) | index($x))",
            "select((.a // .b) | index($x))",
            "select(.a | test($x; $flags))",
            "select(.a | test($x; \"i\"; \"g\"))",
            "select(.a | startswith($x, $y))",
            "select(.a | ascii_downcase | startswith($x))",
            "select(.a < $x)",
            "select(.a | length > 3)",
        ] {
            assert_eq!(native(code), None, "{code}");
        }
    }

    #[test]
    fn a_condition_says_nothing_where_jq_would_fail_or_it_does_not_evaluate() {
        let bound = |code: &str| match per_record(code) {
            Plan::Select {
                native: Some(native), ..
            } => native.bind(&["x"], &[jq::string("ab")]).unwrap(),
            plan => panic!("{code}: {plan:?}"),
        };
        let record = |json: &str| jq::parse(json).unwrap();
        let prefix = bound("select(.a | startswith($x))");
        assert_eq!(prefix.holds(&record(r#"{"a": "abc"}"#)), Some(true));
        assert_eq!(prefix.holds(&record(r#"{"a": "b"}"#)), Some(false));
        assert_eq!(prefix.holds(&record(r#"{"a": 1}"#)), None, "jq's error");
        assert_eq!(prefix.holds(&record(r#"{}"#)), None, "null: jq's error");
        assert_eq!(prefix.holds(&record(r#"[1]"#)), None, "not an object");
        let regex = bound(r#"select(.a | test($x; "i"))"#);
        assert_eq!(regex.holds(&record(r#"{"a": "xAB"}"#)), Some(true));
        assert_eq!(regex.holds(&record(r#"{"a": null}"#)), None);
        let bad_flags = bound(r#"select(.a | test($x; "q"))"#);
        assert_eq!(bad_flags.holds(&record(r#"{"a": "ab"}"#)), None, "jq's error");
        let index = bound("select((.a // []) | index($x))");
        assert_eq!(index.holds(&record(r#"{"a": ["c", "ab"]}"#)), Some(true));
        assert_eq!(index.holds(&record(r#"{"a": ["abc"]}"#)), Some(false));
        assert_eq!(index.holds(&record(r#"{"a": false}"#)), Some(false));
        assert_eq!(index.holds(&record(r#"{"b": 1}"#)), Some(false));
        assert_eq!(index.holds(&record(r#"{"a": "xab"}"#)), None, "a string's positions");
        let defaulted = bound(r#"select((.a // "abc") | startswith($x))"#);
        assert_eq!(defaulted.holds(&record(r#"{"a": false}"#)), Some(true));
        assert_eq!(defaulted.holds(&record(r#"{"a": "b"}"#)), Some(false));
        assert_eq!(
            defaulted.holds(&record(r#"{"a": 0}"#)),
            None,
            "0 is not replaced: jq's error"
        );
        let equal = bound("select(.a == $x)");
        assert_eq!(equal.holds(&record(r#"{"a": "ab"}"#)), Some(true));
        assert_eq!(equal.holds(&record(r#"{"a": ["ab"]}"#)), Some(false));
        assert_eq!(equal.holds(&record(r#"{}"#)), Some(false));
        // A variable the filter does not have: its compile error is jq's to give.
        let Plan::Select {
            native: Some(unbound), ..
        } = per_record("select(.a == $y)")
        else {
            panic!()
        };
        assert!(unbound.bind(&["x"], &[Val::Null]).is_none());
    }

    #[test]
    fn anything_that_sees_the_whole_record_parses_it_whole() {
        for code in [
            ".",
            "keys",
            "length",
            "to_entries",
            "..",
            ".[]",
            ".[$k]",
            ".[0]",
            "tojson",
            "select(.a) | .",
            "select(length > 2)",
            ". as $r | $r",
            "del(.a)",
            ".a = 1",
            "def f: .a; f",
            "reduce .a[] as $x (0; . + $x)",
            "@json",
            "with_entries(.)",
            "{(.a): .} | keys",
            ". as {(keys[0]): $v} | $v",
            "{a: .}",
            "[.]",
            ". == {}",
            "not_a_builtin",
            "select(.a) | select(.b)",
        ] {
            let plan = per_record(code);
            assert!(
                plan == Plan::Whole || matches!(&plan, Plan::Select { .. } if code.starts_with("select(")),
                "{code}: {plan:?}"
            );
        }
        assert_eq!(per_record("this is not jq"), Plan::Whole);
        // A comment could swallow the parenthesis the plan puts COND back between.
        assert_eq!(per_record("select(.a) # )"), Plan::Whole);
    }

    #[test]
    fn slurped_recipes_read_only_their_fields() {
        let project = |list: &[&str]| Slurp::Project(list.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(
            slurped("group_by(.namespace) | map({namespace: .[0].namespace, count: length})"),
            project(&["namespace"])
        );
        assert_eq!(slurped("map(.namespace) | unique"), project(&["namespace"]));
        assert_eq!(slurped("length"), project(&[]));
        assert_eq!(slurped("[.[].id, .[0].title?]"), project(&["id", "title"]));
        assert_eq!(slurped("sort_by(.a) | map(.b)"), project(&["a", "b"]));
        assert_eq!(slurped(".[0] | {id}"), project(&["id"]));
        assert_eq!(slurped("group_by(.a) | length"), project(&["a"]));
        assert_eq!(
            slurped("sort_by(.created)"),
            Slurp::SortBy {
                key: ".created".into(),
                keys: vec!["created".into()]
            }
        );
        assert_eq!(
            slurped("sort_by(-.provenance.confidence)"),
            Slurp::SortBy {
                key: "-.provenance.confidence".into(),
                keys: vec!["provenance".into()]
            }
        );
    }

    #[test]
    fn anything_that_outputs_a_slurped_record_builds_it_whole() {
        for code in [
            ".",
            ".[0]",
            "first",
            ".[]",
            "map(.)",
            "group_by(.a)",
            "group_by(.a) | map(.[0])",
            "group_by(.a) | map(first)",
            "group_by(.a) | .[0]",
            "unique_by(.a)",
            "min_by(.a)",
            "sort_by(.a) | .[0]",
            "sort_by(keys)",
            "sort_by(.a) # )",
            ".[0].a[.[1]]",
            "add",
            "to_entries",
            "map(select(.a))",
            "{(.[0].k): 1}",
            "def f: .; f",
            "[.[] | .]",
            "tojson",
            "not jq",
        ] {
            assert_eq!(slurped(code), Slurp::Whole, "{code}");
        }
    }

    #[test]
    fn projected_parsing_keeps_the_members_asked_for() {
        let line = r#" {"id":"a","skip":{"x":[1,{"y":"]}"}],"s":"\"{"},"n":-1.5e3,"t":[true,null],"id2":"q"} "#;
        let v = parse_projected(line, &["n".into(), "t".into(), "id".into()]).unwrap();
        assert_eq!(jq::to_json(&v), r#"{"id":"a","n":-1500,"t":[true,null]}"#);
        assert_eq!(jq::to_json(&parse_projected(line, &[]).unwrap()), "{}");
        assert_eq!(jq::to_json(&parse_projected("[1, 2]", &[]).unwrap()), "[1,2]");
        assert_eq!(jq::to_json(&parse_projected("{ }", &["a".into()]).unwrap()), "{}");
        // An escaped name takes the general path, which keeps everything.
        assert_eq!(
            jq::to_json(&parse_projected(r#"{"a\u0062":1,"c":2}"#, &["ab".into()]).unwrap()),
            r#"{"ab":1,"c":2}"#
        );
        for bad in [
            r#"{"a":1"#,
            r#"{"a" 1}"#,
            r#"{"a":1} x"#,
            r#"{"a":}"#,
            r#"{"a":"x}"#,
            r#"{a:1}"#,
        ] {
            assert!(parse_projected(bad, &["a".into()]).is_err(), "{bad}");
        }
        // A member that is read is validated as any JSON.
        assert!(parse_projected(r#"{"a":tru}"#, &["a".into()]).is_err());
    }
}
