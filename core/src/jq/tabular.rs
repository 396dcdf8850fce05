//! `@tsv` and `@csv` as jq 1.6 writes them.

use jaq_json::Val;

use super::{to_json, type_name, write_num};

/// Which of the two formats.
#[derive(Clone, Copy)]
pub(crate) enum Tabular {
    Tsv,
    Csv,
}

/// jq 1.6's `@tsv` and `@csv`: an array of scalars to one line.
pub(crate) fn format(value: &Val, kind: Tabular) -> Result<Val, jaq_core::Error<Val>> {
    let (name, sep) = match kind {
        Tabular::Tsv => ("tsv", '\t'),
        Tabular::Csv => ("csv", ','),
    };
    let Val::Arr(items) = value else {
        return Err(jaq_core::Error::str(format!(
            "{} ({}) cannot be {name}-formatted, only an array can be",
            type_name(value),
            to_json(value)
        )));
    };
    let mut line = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            line.push(sep);
        }
        match item {
            Val::Null => {}
            Val::Bool(b) => line.push_str(if *b { "true" } else { "false" }),
            Val::Num(n) => write_num(&mut line, n),
            Val::TStr(s) | Val::BStr(s) => {
                let s = String::from_utf8_lossy(s);
                match kind {
                    Tabular::Tsv => {
                        for c in s.chars() {
                            match c {
                                '\t' => line.push_str("\\t"),
                                '\n' => line.push_str("\\n"),
                                '\r' => line.push_str("\\r"),
                                '\\' => line.push_str("\\\\"),
                                c => line.push(c),
                            }
                        }
                    }
                    Tabular::Csv => {
                        line.push('"');
                        line.push_str(&s.replace('"', "\"\""));
                        line.push('"');
                    }
                }
            }
            Val::Arr(_) | Val::Obj(_) => {
                return Err(jaq_core::Error::str(format!(
                    "{} ({}) is not valid in a csv row",
                    type_name(item),
                    to_json(item)
                )));
            }
        }
    }
    Ok(Val::utf8_str(line.into_bytes()))
}

#[cfg(test)]
mod tests {
    use crate::jq::tests::run;

    #[test]
    fn tsv_and_csv_follow_jq_1_6() {
        assert_eq!(
            run("@tsv", r#"["a\tb\\c\nd\re", 1.1, 3.0, null, true]"#).unwrap(),
            [r#""a\\tb\\\\c\\nd\\re\t1.1\t3\t\ttrue""#]
        );
        assert_eq!(
            run("@csv", r#"["a\"b", 1.1, null, false]"#).unwrap(),
            [r#""\"a\"\"b\",1.1,,false""#]
        );
        assert_eq!(
            run("@tsv", "[[1]]").unwrap_err(),
            "array ([1]) is not valid in a csv row"
        );
        assert_eq!(
            run("@csv", "{}").unwrap_err(),
            "object ({}) cannot be csv-formatted, only an array can be"
        );
    }
}
