//! Rule 5 of [`read_text`](super::read_text): text in blocks that each start alike (`git log`'s
//! `commit <hash>`, mcp-server-git's `Commit: <hash>`), one record per block.

use serde_json::{Map, Value};

/// Lines of text with their 1-based line numbers.
type Lines = Vec<(usize, String)>;

/// The word that starts each block: the first word of the first non-empty line, or of the one
/// after it when the first is a title (`Commit history:`, a line ending in a colon whose word
/// starts no other line). Letters only, at least 2, with an optional colon (`commit`, `Commit:`).
fn start_word<'t>(lines: &[&'t str]) -> Option<&'t str> {
    let mut non_empty = lines.iter().filter(|l| !l.trim().is_empty());
    let first = non_empty.next()?;
    let word_of = |line: &'t str| line.split([' ', '\t']).next().filter(|w| is_word(w));
    let starts = |word: &str| lines.iter().filter(|l| starts_with_word(l, word)).count();
    match word_of(first) {
        Some(word) if starts(word) >= 3 => Some(word),
        _ if first.trim_end().ends_with(':') => word_of(non_empty.next()?),
        _ => None,
    }
}

fn is_word(word: &str) -> bool {
    let letters = word.strip_suffix(':').unwrap_or(word);
    letters.chars().count() >= 2 && letters.chars().all(char::is_alphabetic)
}

fn starts_with_word(line: &str, word: &str) -> bool {
    line.strip_prefix(word)
        .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
}

/// Rule 5: the blocks of `text` as records, when a start word (see [`start_word`]) starts at
/// least 3 unindented lines and fewer than half of the non-empty lines. Each such line starts a
/// block. The non-blank lines before the first (a title) are returned apart, with their 1-based
/// line numbers, so that the count of records is the count of blocks.
pub(super) fn blocks(text: &str) -> Option<(Vec<String>, Lines)> {
    let lines: Vec<&str> = text.lines().collect();
    let non_empty = lines.iter().filter(|l| !l.trim().is_empty()).count();
    let word = start_word(&lines)?;
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| starts_with_word(l, word))
        .map(|(i, _)| i)
        .collect();
    if starts.len() < 3 || starts.len() * 2 >= non_empty {
        return None;
    }
    let before = lines.get(..*starts.first()?)?;
    let rest = before
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, (*l).to_owned()))
        .collect();
    let mut records = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let block = lines.get(start..end)?;
        records.push(block_record(block, k + 1, start + 1, word)?);
    }
    Some((records, rest))
}

/// One block as a record: `n`, `line`, its first line's rest under the start word (without its
/// colon), its `Key: value` lines, and `text`, the rest.
fn block_record(block: &[&str], n: usize, line: usize, word: &str) -> Option<String> {
    let (head, body) = block.split_first()?;
    let mut record = Map::new();
    record.insert("n".into(), n.into());
    record.insert("line".into(), line.into());
    let rest = head.strip_prefix(word)?.trim();
    record.insert(field_name(word.strip_suffix(':').unwrap_or(word)), rest.into());
    let fields = body.iter().map_while(|l| key_value(l)).count();
    for (key, value) in body.iter().take(fields).filter_map(|l| key_value(l)) {
        record.entry(field_name(key)).or_insert_with(|| value.into());
    }
    record.insert("text".into(), dedent(body.get(fields..)?).into());
    Some(Value::Object(record).to_string())
}

/// `line` as `Key: value`, the key of letters, digits, `-` and `_`, at most 40 of them.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let key_ok =
        !key.is_empty() && key.len() <= 40 && key.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    // `http://...` is not a field.
    let spaced = value.is_empty() || value.starts_with([' ', '\t']);
    (key_ok && spaced).then(|| (key, value.trim()))
}

/// A field name that does not take the place of `n`, `line` or `text`.
fn field_name(name: &str) -> String {
    match name {
        "n" | "line" | "text" => format!("{name}_"),
        _ => name.to_owned(),
    }
}

/// `lines` joined, without the blank lines around them or their common indentation.
fn dedent(lines: &[&str]) -> String {
    let blank = |l: &&str| l.trim().is_empty();
    let Some(first) = lines.iter().position(|l| !blank(l)) else {
        return String::new();
    };
    let last = lines.iter().rposition(|l| !blank(l)).unwrap_or(first);
    let lines = lines.get(first..=last).unwrap_or_default();
    let indent = |l: &str| l.bytes().take_while(|&c| c == b' ' || c == b'\t').count();
    let common = lines.iter().filter(|l| !blank(l)).map(|l| indent(l)).min().unwrap_or(0);
    let mut text = String::new();
    for (k, l) in lines.iter().enumerate() {
        if k > 0 {
            text.push('\n');
        }
        // Leading spaces and tabs are single bytes, so the cut is a character boundary.
        text.push_str(l.get(common.min(indent(l))..).unwrap_or_default());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mcp-server-git 2026.10.19's `git_log` text: a title, then `Commit:` blocks.
    #[test]
    fn a_titled_log_is_one_record_per_commit_and_the_title_kept_apart() {
        let mut text = String::from("Commit history:\n");
        for i in 0..4 {
            text.push_str(&format!(
                "Commit: {i:040}\nAuthor: Ada Lovelace\nDate: 2024-03-0{i} 09:43:00+00:00\nMessage: Fix: step {i}\n\n- touches file_{i}\n- change {i}\n\n\n"
            ));
        }
        let (records, rest) = blocks(&text).unwrap();
        assert_eq!(records.len(), 4);
        assert_eq!(rest, [(1, "Commit history:".to_owned())]);
        let first: Value = serde_json::from_str(&records[0]).unwrap();
        assert_eq!(first["Commit"], format!("{:040}", 0));
        assert_eq!(first["Author"], "Ada Lovelace");
        assert_eq!(first["Message"], "Fix: step 0");
        assert_eq!(first["text"], "- touches file_0\n- change 0");
        assert_eq!(first["line"], 2);
    }

    #[test]
    fn lines_that_start_with_a_dash_or_a_title_alone_are_not_blocks() {
        assert!(blocks("Results:\n- a\n- b\n- c\n- d").is_none());
        assert!(blocks("Title:\nonly one line").is_none());
    }
}
