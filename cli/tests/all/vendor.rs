//! The vendored jaq stays honest (vendor/README.md): `vendor/jaq.diff` is every change made to the
//! published crates, current, and each of its hunks says why in an `lro:` comment.
//! `bash vendor/diff.sh` rewrites the diff and `vendor/jaq.sha256` after a change.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CRATES: [&str; 3] = ["jaq-core", "jaq-std", "jaq-json"];
const REGENERATE: &str = "run `bash vendor/diff.sh`, and mark the change with an `lro:` comment";

fn vendor() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vendor")
}

fn sources(dir: &Path, prefix: &str, out: &mut BTreeMap<String, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("{prefix}/{}", path.file_name().unwrap().to_str().unwrap());
        if path.is_dir() {
            sources(&path, &name, out);
        } else {
            out.insert(name, path);
        }
    }
}

/// The diff was taken from exactly the sources that are here: none changed, none added.
#[test]
fn vendor_sources_are_those_the_diff_was_taken_from() {
    let mut found = BTreeMap::new();
    for krate in CRATES {
        sources(&vendor().join(krate).join("src"), &format!("{krate}/src"), &mut found);
    }
    let listed = std::fs::read_to_string(vendor().join("jaq.sha256")).unwrap();
    let listed: BTreeMap<&str, &str> = listed
        .lines()
        .map(|line| {
            let (digest, name) = line.split_once("  ").expect("sha256sum's format");
            (name, digest)
        })
        .collect();
    let names: Vec<&str> = found.keys().map(String::as_str).collect();
    assert_eq!(names, listed.keys().copied().collect::<Vec<_>>(), "{REGENERATE}");
    for (name, path) in &found {
        let digest: String = Sha256::digest(std::fs::read(path).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest, listed[name.as_str()], "vendor/{name} changed: {REGENERATE}");
    }
}

struct Hunk {
    file: String,
    header: String,
    new_start: usize,
    /// The lines of the new side: context and added lines.
    new: Vec<String>,
    marked: bool,
}

fn hunks(diff: &str) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut file = String::new();
    for line in diff.lines() {
        if let Some(name) = line.strip_prefix("+++ b/") {
            file = name.to_string();
        } else if line.starts_with("--- ") || line.starts_with("diff ") {
        } else if let Some(range) = line.strip_prefix("@@ -") {
            let new = range.split(' ').nth(1).and_then(|r| r.strip_prefix('+'));
            let start = new.and_then(|r| r.split(',').next()?.parse().ok());
            out.push(Hunk {
                file: file.clone(),
                header: line.to_string(),
                new_start: start.unwrap_or_else(|| panic!("a hunk header: {line}")),
                new: Vec::new(),
                marked: false,
            });
        } else if let Some(hunk) = out.last_mut() {
            match line.split_at(line.len().min(1)) {
                ("+", added) => {
                    hunk.marked |= added.contains("lro:");
                    hunk.new.push(added.to_string());
                }
                (" ", same) => hunk.new.push(same.to_string()),
                ("", _) => hunk.new.push(String::new()),
                ("-" | "\\", _) => {}
                _ => panic!("not a line of a unified diff: {line}"),
            }
        }
    }
    out
}

/// Every hunk carries its reason, and its new side is what the vendored file holds there.
#[test]
fn vendor_diff_marks_every_change_and_matches_the_sources() {
    let diff = std::fs::read_to_string(vendor().join("jaq.diff")).unwrap();
    let hunks = hunks(&diff);
    assert!(hunks.len() >= 40, "{} hunks: is vendor/jaq.diff whole?", hunks.len());
    let unmarked: Vec<String> = hunks
        .iter()
        .filter(|h| !h.marked)
        .map(|h| format!("{} {}", h.file, h.header))
        .collect();
    assert!(unmarked.is_empty(), "hunks with no `lro:` comment: {unmarked:#?}");
    for hunk in &hunks {
        let text = std::fs::read_to_string(vendor().join(&hunk.file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // A new file's hunk starts at line 1; an empty new side (deleted file) at 0.
        let at = hunk.new_start.saturating_sub(1);
        let here = lines.get(at..at + hunk.new.len());
        assert_eq!(
            here.map(|l| l.to_vec()),
            Some(hunk.new.iter().map(String::as_str).collect()),
            "vendor/{} {} is not what the file holds: {REGENERATE}",
            hunk.file,
            hunk.header
        );
    }
}
