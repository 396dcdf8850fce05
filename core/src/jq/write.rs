//! The output writer: values printed the way jq 1.6 prints them, which is what agents compare
//! against (numbers as doubles with shortest round-trip digits, jq's string escapes).

use std::fmt::Write as _;

use jaq_json::{Num, Val};

/// Compact JSON, as `jq -c` writes it.
pub fn to_json(value: &Val) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

/// The value as `jq -r` prints it: strings raw, everything else as JSON.
pub fn to_raw(value: &Val) -> String {
    match value {
        Val::TStr(s) | Val::BStr(s) => String::from_utf8_lossy(s).into_owned(),
        other => to_json(other),
    }
}

/// Writes `value` as compact JSON the way jq 1.6 does.
pub fn write_json(out: &mut String, value: &Val) {
    match value {
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Num(n) => write_num(out, n),
        Val::TStr(s) | Val::BStr(s) => write_string(out, &String::from_utf8_lossy(s)),
        Val::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Val::Obj(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match k {
                    Val::TStr(s) | Val::BStr(s) => write_string(out, &String::from_utf8_lossy(s)),
                    other => write_string(out, &to_json(other)),
                }
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
    }
}

/// `s` as a JSON string literal, with the escapes jq writes.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// jq 1.6 holds every number as a double and prints it with `%.17g`-style shortest digits.
pub(crate) fn write_num(out: &mut String, n: &Num) {
    match n {
        Num::Int(i) if (*i as i64).unsigned_abs() <= 1u64 << 53 => {
            let _ = write!(out, "{i}");
        }
        Num::Int(i) => write_f64(out, *i as f64),
        Num::Float(f) => write_f64(out, *f),
        Num::BigInt(b) => write_f64(out, b.to_string().parse().unwrap_or(f64::NAN)),
        Num::Dec(d) => write_f64(out, d.parse().unwrap_or(f64::NAN)),
    }
}

/// Formats a double as jq 1.6 does (its `jvp_dtoa_fmt`): the shortest digits that round-trip,
/// positional unless the exponent is below -4 or more than 15 past the digits; NaN as null,
/// infinities as the largest double.
pub fn write_f64(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("null");
        return;
    }
    let f = if f.is_infinite() { f.signum() * f64::MAX } else { f };
    if f == 0.0 {
        out.push_str(if f.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("LowerExp always writes an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i64 = exponent.parse().expect("LowerExp writes a decimal exponent");
    let decpt = exponent + 1;
    let ndigits = digits.len() as i64;
    if decpt <= -4 || decpt > ndigits + 15 {
        out.push_str(&digits[..1]);
        if ndigits > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else if decpt >= ndigits {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (decpt - ndigits) as usize));
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
}

#[cfg(test)]
mod tests {
    use crate::jq::tests::run;

    #[test]
    fn numbers_print_like_jq_1_6() {
        let cases = [
            ("1.0", "1"),
            ("3.00", "3"),
            ("1e15", "1000000000000000"),
            ("1e16", "1e+16"),
            ("123456789012345678", "123456789012345680"),
            ("0.0001", "0.0001"),
            ("0.00001234", "1.234e-05"),
            ("1.5e300", "1.5e+300"),
            ("1e1000", "1.7976931348623157e+308"),
            ("-0.0", "-0"),
            ("12345678901234567890123", "12345678901234568000000"),
            ("5e-324", "5e-324"),
            ("1.25", "1.25"),
            ("100", "100"),
        ];
        for (input, expected) in cases {
            assert_eq!(run(".", input).unwrap(), [expected], "{input}");
        }
        assert_eq!(
            run("[nan, infinite, -infinite, 6 / 4, 6 / 2]", "null").unwrap(),
            ["[null,1.7976931348623157e+308,-1.7976931348623157e+308,1.5,3]"]
        );
    }

    #[test]
    fn strings_escape_like_jq() {
        assert_eq!(
            run(".", r#""a\"b\\c\n\t\r\b\f\u0001\u007f/é""#).unwrap(),
            [r#""a\"b\\c\n\t\r\b\f\u0001\u007f/é""#]
        );
    }
}
