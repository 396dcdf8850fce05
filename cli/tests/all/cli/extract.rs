//! `lro extract`, `lro query` and `lro offload --tool` as a user runs them.

use super::*;

#[test]
fn extract_prints_values_and_reports_cuts_and_refusals() {
    let dir = crate::common::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let input = sample(&["--detail", "light", "--count", "200"]);
    let out = lro(&["offload", "--threshold", "10", "--output-dir", &d], &input, &[]);
    let path = serde_json::from_str::<Value>(&stdout(&out)).unwrap()["file_path"]
        .as_str()
        .unwrap()
        .to_owned();

    // Recipe 1 prints raw tab-separated lines; the default cap (the threshold) cuts them.
    let out = lro(&["extract", &path, "--recipe", "1", "--output-dir", &d], "", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = stdout(&out);
    assert!(
        lines.lines().all(|l| l.contains('\t') && !l.starts_with('"')),
        "{lines}"
    );
    assert!(
        stderr(&out).starts_with(&format!("lro: showing {} values", lines.lines().count())),
        "{}",
        stderr(&out)
    );
    let all = lro(
        &[
            "extract",
            &path,
            "--recipe",
            "1",
            "--limit",
            "1000000",
            "--output-dir",
            &d,
        ],
        "",
        &[],
    );
    assert_eq!((stdout(&all).lines().count(), stderr(&all).as_str()), (200, ""));

    // Parameters and custom queries.
    let out = lro(
        &[
            "extract",
            &path,
            "--recipe",
            "2",
            "--param",
            "namespace=_procedural",
            "--limit",
            "1000000",
            "--output-dir",
            &d,
        ],
        "",
        &[],
    );
    assert!(
        stdout(&out).lines().all(|l| l.contains("\"namespace\":\"_procedural")),
        "{}",
        stdout(&out)
    );
    let out = lro(
        &["extract", &path, "--query", "length", "--slurp", "--output-dir", &d],
        "",
        &[],
    );
    assert_eq!(stdout(&out), "200\n");
    let out = lro(
        &[
            "extract",
            &path,
            "--query",
            "select(.title == \"none\")",
            "--output-dir",
            &d,
        ],
        "",
        &[],
    );
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), ""));
    assert_eq!(stderr(&out), "lro: no values: the filter matched nothing.\n");

    // Domain errors exit 1, usage errors 2.
    let out = lro(&["extract", &path, "--query", "select(", "--output-dir", &d], "", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("lro: invalid filter: expected"),
        "{}",
        stderr(&out)
    );
    let out = lro(
        &["extract", "/etc/passwd", "--recipe", "1", "--output-dir", &d],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("lro: outside the offload directory: /etc/passwd"),
        "{}",
        stderr(&out)
    );
    let out = lro(
        &["extract", &path, "--recipe", "1", "--query", ".", "--output-dir", &d],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "recipe and query together is a usage error");
    let out = lro(
        &[
            "extract",
            &path,
            "--recipe",
            "2",
            "--param",
            "namespace",
            "--output-dir",
            &d,
        ],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected KEY=VALUE"), "{}", stderr(&out));
    let out = lro(&["extract", &path, "--recipe", "11", "--output-dir", &d], "", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("from 1 to 10, got 11"), "{}", stderr(&out));
}

#[test]
fn query_is_sandboxed_jq_with_compact_output() {
    let out = lro(&["query", ".[] | {a}"], "[{\"a\": 1.0, \"b\": 2}, {\"a\": \"x\"}]", &[]);
    assert_eq!(
        (out.status.code(), stdout(&out).as_str()),
        (Some(0), "{\"a\":1}\n{\"a\":\"x\"}\n")
    );
    let out = lro(&["query", "--raw-output", ".[]"], "[\"a\", 2]", &[]);
    assert_eq!(stdout(&out), "a\n2\n");
    let out = lro(&["query", "--slurp", "add"], "1 2 3", &[]);
    assert_eq!(stdout(&out), "6\n");
    let out = lro(&["query", "repeat(1)", "--timeout", "0.3"], "null", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("lro: limit exceeded: the call ran longer than its 300ms time limit"),
        "{}",
        stderr(&out)
    );
    let out = lro(&["query", "."], "{\"a\": ", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("lro: invalid input: input is not valid JSON"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn offload_tool_reads_and_prints_call_tool_results() {
    let dir = crate::common::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/mcp");
    let github = std::fs::read_to_string(case.join("github_search/result.json")).unwrap();

    // Above the threshold_tokens: the CallToolResult to forward, with the descriptor inside.
    let out = lro(
        &[
            "offload",
            "--tool",
            "search_issues",
            "--arguments",
            "{\"q\": \"bug\"}",
            "--threshold",
            "500",
            "--output-dir",
            &d,
        ],
        &github,
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"]["offloaded"], true);
    let items = result["structuredContent"]["files"]["items"]
        .as_str()
        .unwrap()
        .to_owned();
    // The generic file is queryable with lro extract.
    let count = lro(
        &["extract", &items, "--query", "length", "--slurp", "--output-dir", &d],
        "",
        &[],
    );
    assert_eq!(stdout(&count), "40\n", "{}", stderr(&count));
    let recipe = lro(&["extract", &items, "--recipe", "1", "--output-dir", &d], "", &[]);
    assert_eq!(recipe.status.code(), Some(2));
    assert!(
        stderr(&recipe).contains("no numbered recipes; use `query`"),
        "{}",
        stderr(&recipe)
    );

    // Below it, and for errors and images: the input's own bytes.
    let out = lro(
        &[
            "offload",
            "--tool",
            "search_issues",
            "--threshold",
            "100000",
            "--output-dir",
            &d,
        ],
        &github,
        &[],
    );
    assert!(
        stdout(&out) == github,
        "below the threshold the input is forwarded as it is"
    );
    let image = std::fs::read_to_string(case.join("image_only/result.json")).unwrap();
    let out = lro(
        &[
            "offload",
            "--tool",
            "render_chart",
            "--threshold",
            "1",
            "--output-dir",
            &d,
        ],
        &image,
        &[],
    );
    assert!(stdout(&out) == image, "an image result is forwarded as it is");

    // Per-tool configuration from the file, and bad input.
    let file = dir.path().join("lro.toml");
    std::fs::write(&file, "[prompt.offload.tools.search_issues]\nthreshold_tokens = 500\n").unwrap();
    let out = lro(
        &[
            "offload",
            "--tool",
            "search_issues",
            "--config",
            file.to_str().unwrap(),
            "--output-dir",
            &d,
        ],
        &github,
        &[],
    );
    assert!(stdout(&out).contains("\"offloaded\":true"), "{}", stderr(&out));
    let out = lro(&["offload", "--tool", "x", "--output-dir", &d], "[1, 2]", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("result must be a CallToolResult object, got an array"),
        "{}",
        stderr(&out)
    );
    let out = lro(
        &["offload", "--tool", "x", "--arguments", "[]", "--output-dir", &d],
        "{}",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("arguments must be a JSON object"),
        "{}",
        stderr(&out)
    );
}
