//! The fields of a record a filter names, for the hint that says when they are absent at a
//! file's detail level (`extractor::hint`).

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::path::Part;

use super::literal;

/// The first key of every path from the input that `code` writes with a constant name (`.a`,
/// `."a b"`, `.["a"]`, `.a?.b`, the shorthand `{a}`), wherever in the filter, in order and
/// without repeats: the record fields a filter names. `.b` of `.a.b` or `(.a).b` is not one, nor
/// is a key of `$x.a`. `None` when `code` does not parse.
pub fn named_fields(code: &str) -> Option<Vec<String>> {
    let term = jaq_core::load::parse(code, |p| p.term())?;
    let mut fields = Vec::new();
    visit(&term, &mut fields);
    Some(fields)
}

fn push(fields: &mut Vec<String>, name: String) {
    if !fields.contains(&name) {
        fields.push(name);
    }
}

fn visit(term: &Term<&str>, fields: &mut Vec<String>) {
    match term {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Var(_) | Term::Break(_) | Term::Arr(None) => {}
        Term::Str(_, parts) => {
            for part in parts {
                if let StrPart::Term(t) = part {
                    visit(t, fields);
                }
            }
        }
        Term::Arr(Some(t)) | Term::Neg(t) | Term::Label(_, t) => visit(t, fields),
        Term::Obj(entries) => {
            for (key, value) in entries {
                match value {
                    None if matches!(key, Term::Str(..)) => {
                        if let Some(name) = literal(key) {
                            push(fields, name);
                        }
                    }
                    None => {}
                    Some(value) => visit(value, fields),
                }
                visit(key, fields);
            }
        }
        Term::BinOp(l, op, r) => {
            visit(l, fields);
            if let BinaryOp::Pipe(Some(pattern)) = op {
                visit_pattern(pattern, fields);
            }
            if let BinaryOp::PipeAlt(patterns) = op {
                patterns.iter().for_each(|p| visit_pattern(p, fields));
            }
            visit(r, fields);
        }
        Term::Fold(_, xs, pattern, args) => {
            visit(xs, fields);
            visit_pattern(pattern, fields);
            args.iter().for_each(|a| visit(a, fields));
        }
        Term::TryCatch(body, catch) => {
            visit(body, fields);
            if let Some(catch) = catch {
                visit(catch, fields);
            }
        }
        Term::IfThenElse(branches, otherwise) => {
            for (cond, then) in branches {
                visit(cond, fields);
                visit(then, fields);
            }
            if let Some(otherwise) = otherwise {
                visit(otherwise, fields);
            }
        }
        Term::Def(defs, body) => {
            defs.iter().for_each(|d| visit(&d.body, fields));
            visit(body, fields);
        }
        Term::Call(_, args) => args.iter().for_each(|a| visit(a, fields)),
        Term::Path(base, path) => {
            if matches!(**base, Term::Id)
                && let Some((Part::Index(key), _)) = path.0.first()
                && let Some(name) = literal(key)
            {
                push(fields, name);
            }
            visit(base, fields);
            for (part, _) in &path.0 {
                match part {
                    Part::Index(i) => visit(i, fields),
                    Part::Range(from, to) => {
                        from.iter().chain(to).for_each(|t| visit(t, fields));
                    }
                }
            }
        }
    }
}

fn visit_pattern(pattern: &Pattern<&str>, fields: &mut Vec<String>) {
    match pattern {
        Pattern::Var(_) => {}
        Pattern::Arr(items) => items.iter().for_each(|p| visit_pattern(p, fields)),
        Pattern::Obj(entries) => {
            for (key, value) in entries {
                visit(key, fields);
                visit_pattern(value, fields);
            }
        }
    }
}
