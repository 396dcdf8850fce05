//! `select` conditions on one member that Rust evaluates without running jq ([`Cond`]).

use jaq_core::load::parse::{BinaryOp, Term};
use jaq_core::ops::Cmp;
use jaq_json::Val;

use super::{literal, member_of_input};
use crate::jq;

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
pub(super) fn cond_of(term: &Term<&str>) -> Option<Cond> {
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
