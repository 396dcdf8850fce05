//! What a user reads points only at files in the repository.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Defect 12: everything a user reads points only at files that exist in the repository: every
/// relative Markdown link resolves, and no tracked file cites the specification folder or notes
/// that live outside the repository, or tells the reader to run `npm ci` (which fails here).
#[test]
fn what_a_user_reads_points_only_at_files_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let listed = Command::new("git").arg("ls-files").current_dir(&root).output().unwrap();
    assert!(
        listed.status.success(),
        "git ls-files: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let files: Vec<PathBuf> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .filter(|f| !f.starts_with("tests/fuzz/") && !f.starts_with("tests/cases/"))
        .map(|f| root.join(f))
        .filter(|f| {
            let name = f.file_name().unwrap().to_str().unwrap();
            [".md", ".rs", ".wit", ".js", ".py", ".toml"]
                .iter()
                .any(|e| name.ends_with(e))
                || name == "run"
        })
        .collect();
    assert!(files.len() > 50, "{} files", files.len());
    let mut stale = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        // This test names the patterns it looks for.
        if *file != root.join(file!()) {
            for pattern in [
                "../shared",
                "FACTS.md",
                "spec/lro-spec",
                "spec/mif-lro",
                "spec/python-offload",
                "spec/README",
            ] {
                if text.contains(pattern) {
                    stale.push(format!("{shown}: cites {pattern}, which is not in the repository"));
                }
            }
            for (i, line) in text.lines().enumerate() {
                // "Not `npm ci`" explains why; an instruction to run it is stale.
                if line.contains("npm ci")
                    && !line.to_lowercase().contains("not `npm ci`")
                    && !line.contains("`npm ci` refuses")
                {
                    stale.push(format!("{shown}:{}: tells the reader to run npm ci", i + 1));
                }
            }
        }
        if shown.ends_with(".md") {
            for target in text
                .split("](")
                .skip(1)
                .filter_map(|rest| rest.split([')', ' ', '#']).next())
            {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !file.parent().unwrap().join(target).exists() {
                    stale.push(format!("{shown}: links to {target}, which does not exist"));
                }
            }
        }
    }
    assert!(stale.is_empty(), "stale text:\n{}", stale.join("\n"));
}
