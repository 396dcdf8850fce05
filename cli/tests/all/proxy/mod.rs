//! `lro proxy` driven in process by rmcp's client, in front of rmcp's server, for both protocol
//! generations of the client (the server speaks whichever the client asks for, or only the
//! older one): tools, interception, `lro_extract`, resources, forwarding, lifecycle.

mod harness;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use harness::{Generation, HttpUpstream, Upstream, call, direct, rows, text, wire, wire_http};
use lro_cli::proxy::{Ending, Offloader};
use rmcp::model::*;
use serde_json::{Value, json};

use crate::common;

const BOTH: [Generation; 2] = [Generation::Legacy, Generation::Modern];

/// The proxy's offloader; the component is called outside the async runtime, as the command does.
async fn offloader(dir: &Path, threshold: u32) -> Offloader {
    prepared(common::config(dir, threshold)).await
}

async fn prepared(config: lro_host::Config) -> Offloader {
    tokio::task::spawn_blocking(move || Offloader::prepare(common::RUNTIME.clone(), config))
        .await
        .unwrap()
        .expect("the proxy prepares its directory")
}

fn data_lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the offloaded file")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// 2,000 rows through the proxy: a descriptor whose file holds exactly what the upstream sent,
/// and the model's next call, `lro_extract` counting them. The descriptor and that answer.
async fn offload_and_count(wired: &harness::Wired, what: &str) -> (Value, CallToolResult) {
    let result = call(&wired.client, "rows", json!({"n": 2000})).await.expect(what);
    let descriptor: Value = serde_json::from_str(&text(&result)).expect("a descriptor");
    let file = descriptor["files"]["items"]
        .as_str()
        .expect("the items section's file")
        .to_owned();
    assert_eq!(
        data_lines(&file),
        rows(2000).as_array().unwrap().clone(),
        "{what}: the file holds exactly what the upstream sent"
    );
    let counted = call(
        &wired.client,
        "lro_extract",
        json!({"file_path": file, "query": "length", "slurp": true}),
    )
    .await
    .expect("lro_extract answers");
    assert_eq!(text(&counted), "2000", "{what}");
    (descriptor, counted)
}

#[tokio::test]
async fn tools_list_gains_lro_extract_and_drops_output_schemas() {
    for generation in BOTH {
        let dir = crate::common::tempdir().unwrap();
        let wired = wire(Upstream::new(true), offloader(dir.path(), 500).await, generation).await;
        let tools = wired
            .client
            .peer()
            .list_all_tools()
            .await
            .expect("tools/list through the proxy");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            ["rows", "fail", "image", "hang", "roots", "exit", "caps", "lro_extract"],
            "{generation:?}"
        );
        assert!(
            tools.iter().all(|t| t.output_schema.is_none()),
            "{generation:?}: a descriptor would break an outputSchema"
        );
        let ours = serde_json::to_value(&tools[7]).unwrap();
        let definition = tokio::task::spawn_blocking(|| common::RUNTIME.tool_definition().unwrap())
            .await
            .unwrap();
        let definition: Value = serde_json::from_str(&definition).unwrap();
        assert_eq!(
            ours["inputSchema"], definition["inputSchema"],
            "the component's own definition"
        );
    }
}

#[tokio::test]
async fn large_results_become_descriptors_whose_file_holds_the_upstream_data() {
    for generation in BOTH {
        for legacy_upstream in [true, false] {
            let dir = crate::common::tempdir().unwrap();
            let wired = wire(
                Upstream::new(legacy_upstream),
                offloader(dir.path(), 500).await,
                generation,
            )
            .await;
            let (descriptor, counted) = offload_and_count(&wired, &format!("{generation:?}")).await;
            assert!(
                descriptor["guidance"].as_str().unwrap().contains("lro_extract"),
                "the guidance names the tool"
            );
            assert_eq!(counted.is_error, None);
            if let Generation::Modern = generation {
                assert_eq!(
                    counted.result_type,
                    Some(ResultType::COMPLETE),
                    "2026-07-28 results carry resultType"
                );
            }
        }
    }
}

#[tokio::test]
async fn lro_extract_refusals_are_results_the_model_reads() {
    let dir = crate::common::tempdir().unwrap();
    let wired = wire(
        Upstream::new(true),
        offloader(dir.path(), 500).await,
        Generation::Legacy,
    )
    .await;
    let refused = call(
        &wired.client,
        "lro_extract",
        json!({"file_path": "/etc/passwd", "query": "."}),
    )
    .await
    .expect("a result, not a protocol error");
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).starts_with("outside-directory: "), "{}", text(&refused));
    let bad = call(&wired.client, "lro_extract", json!({"file_path": "/x", "query": "."}))
        .await
        .expect("a result");
    assert_eq!(bad.is_error, Some(true));
}

#[tokio::test]
async fn small_results_errors_and_images_are_identical_to_a_direct_connection() {
    // A direct connection needs a server of the client's generation.
    for (generation, legacy_upstream) in [(Generation::Legacy, true), (Generation::Modern, false)] {
        let dir = crate::common::tempdir().unwrap();
        let wired = wire(
            Upstream::new(legacy_upstream),
            offloader(dir.path(), 500).await,
            generation,
        )
        .await;
        let straight = direct(Upstream::new(legacy_upstream), generation).await;
        for (tool, arguments) in [("rows", json!({"n": 3})), ("fail", json!({})), ("image", json!({}))] {
            let proxied = call(&wired.client, tool, arguments.clone()).await.unwrap();
            let direct = call(&straight, tool, arguments).await.unwrap();
            assert_eq!(
                serde_json::to_value(&proxied).unwrap(),
                serde_json::to_value(&direct).unwrap(),
                "{tool} {generation:?}"
            );
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing was offloaded"
        );
    }
}

#[tokio::test]
async fn resources_pass_through_and_offloaded_files_are_resources() {
    for generation in BOTH {
        let dir = crate::common::tempdir().unwrap();
        let wired = wire(Upstream::new(true), offloader(dir.path(), 500).await, generation).await;
        let peer = wired.client.peer();
        let notes = peer
            .read_resource(ReadResourceRequestParams::new("mem://notes"))
            .await
            .expect("an upstream resource");
        assert!(format!("{notes:?}").contains("the notes"));

        let result = call(&wired.client, "rows", json!({"n": 500})).await.unwrap();
        let descriptor: Value = serde_json::from_str(&text(&result)).unwrap();
        let file = descriptor["files"]["items"].as_str().unwrap().to_owned();
        let name = Path::new(&file).file_name().unwrap().to_str().unwrap().to_owned();

        let listed = peer.list_all_resources().await.expect("resources/list");
        let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            ["mem://notes".to_owned(), format!("lro://offload/{name}")],
            "{generation:?}"
        );
        let templates = peer
            .list_all_resource_templates()
            .await
            .expect("resources/templates/list");
        assert_eq!(templates.last().unwrap().uri_template, "lro://offload/{file}{?from,to}");

        let uri = format!("lro://offload/{name}?from=10&to=13");
        let read = peer
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .expect("a range of records");
        let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
            panic!("text contents")
        };
        let got: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(got, rows(500).as_array().unwrap()[10..13].to_vec(), "{generation:?}");

        let missing = peer
            .read_resource(ReadResourceRequestParams::new(
                "lro://offload/atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
            ))
            .await;
        let error = format!("{:?}", missing.expect_err("no such file"));
        assert!(error.contains("not-found"), "{error}");
        let bad = peer
            .read_resource(ReadResourceRequestParams::new(format!("lro://offload/{name}?from=x")))
            .await;
        assert!(format!("{:?}", bad.expect_err("a bad range")).contains("from must be a record number"));
    }
}

#[tokio::test]
async fn the_upstream_sees_the_proxy_marker() {
    for generation in BOTH {
        let dir = crate::common::tempdir().unwrap();
        let wired = wire(
            Upstream::new(matches!(generation, Generation::Legacy)),
            offloader(dir.path(), 500).await,
            generation,
        )
        .await;
        let caps = call(&wired.client, "caps", json!({})).await.unwrap();
        let caps: Value = serde_json::from_str(&text(&caps)).expect("client capabilities");
        assert_eq!(
            caps["experimental"]["lro"]["proxy"],
            json!(true),
            "{generation:?}: {caps}"
        );
        assert!(caps.get("roots").is_some(), "the client's own capabilities are kept");
    }
}

#[tokio::test]
async fn progress_arrives_and_cancellation_reaches_the_upstream() {
    let dir = crate::common::tempdir().unwrap();
    let upstream = Upstream::new(true);
    let cancelled = upstream.cancelled.clone();
    let mut wired = wire(upstream, offloader(dir.path(), 500).await, Generation::Legacy).await;
    let peer = wired.client.peer().clone();
    let pending = tokio::spawn(async move { call_hang(&peer).await });
    let progress = tokio::time::timeout(Duration::from_secs(5), wired.seen.recv())
        .await
        .expect("progress within 5 s");
    assert_eq!(progress.as_deref(), Some("progress 1"));
    // Dropping the call sends notifications/cancelled, as a user pressing stop does.
    pending.abort();
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the upstream saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn call_hang(peer: &rmcp::Peer<rmcp::RoleClient>) -> Result<CallToolResult, rmcp::ServiceError> {
    peer.call_tool(CallToolRequestParams::new("hang")).await
}

#[tokio::test]
async fn server_requests_reach_the_client() {
    let dir = crate::common::tempdir().unwrap();
    let wired = wire(
        Upstream::new(true),
        offloader(dir.path(), 500).await,
        Generation::Legacy,
    )
    .await;
    let roots = call(&wired.client, "roots", json!({}))
        .await
        .expect("the server's roots/list was answered");
    assert!(text(&roots).contains("file:///projects"), "{}", text(&roots));
}

#[tokio::test]
async fn an_upstream_that_dies_fails_the_call_at_once_and_ends_the_session() {
    let dir = crate::common::tempdir().unwrap();
    let wired = wire(
        Upstream::new(true),
        offloader(dir.path(), 500).await,
        Generation::Legacy,
    )
    .await;
    let started = Instant::now();
    let failed = call(&wired.client, "exit", json!({}))
        .await
        .expect_err("the call fails");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "failed in {:?}",
        started.elapsed()
    );
    let message = format!("{failed:?}");
    assert!(
        message.contains("upstream server closed its output before answering"),
        "{message}"
    );
    let ending = tokio::time::timeout(Duration::from_secs(5), wired.ending)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ending, Ending::UpstreamDied(_)), "{ending:?}");
}

#[tokio::test]
async fn an_upstream_with_its_own_lro_extract_is_refused() {
    let dir = crate::common::tempdir().unwrap();
    let mut upstream = Upstream::new(true);
    upstream.clash = true;
    let wired = wire(upstream, offloader(dir.path(), 500).await, Generation::Legacy).await;
    let ending = tokio::time::timeout(Duration::from_secs(5), wired.ending)
        .await
        .unwrap()
        .unwrap();
    let Ending::Refused(reason) = ending else {
        panic!("{ending:?}")
    };
    assert!(reason.contains("already has a tool named `lro_extract`"), "{reason}");
}

#[tokio::test]
async fn expired_files_are_swept_at_start_and_while_serving() {
    let dir = crate::common::tempdir().unwrap();
    let mut config = common::config(dir.path(), 500);
    config.ttl_seconds = 2;
    let offloader = prepared(config).await;
    let wired = wire(Upstream::new(true), offloader.clone(), Generation::Legacy).await;
    let result = call(&wired.client, "rows", json!({"n": 500})).await.unwrap();
    let descriptor: Value = serde_json::from_str(&text(&result)).unwrap();
    let file = descriptor["files"]["items"].as_str().unwrap().to_owned();
    assert!(Path::new(&file).exists());
    // The sweep runs every ttl/2 = 1 s: the file is gone a little after its 2 s.
    let started = Instant::now();
    while Path::new(&file).exists() {
        assert!(started.elapsed() < Duration::from_secs(6), "swept while serving");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // At start: a file left by an earlier run is swept before the first client is served.
    let config = offloader.config.clone();
    let call = lro_host::ToolCall {
        tool: "rows".into(),
        arguments: "{}".into(),
        result: json!({"content": [{"type": "text", "text": rows(500).to_string()}]}).to_string(),
        meta: None,
    };
    let left = tokio::task::spawn_blocking(move || common::RUNTIME.intercept(&config, &call))
        .await
        .unwrap();
    let Ok(lro_host::ToolOutcome::Offloaded(left)) = left else {
        panic!("offloaded")
    };
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let _ = prepared(offloader.config.clone()).await;
    assert!(!Path::new(&left.files[0]).exists(), "swept at start");
}

#[tokio::test]
async fn a_streamable_http_upstream_is_offloaded_and_forwarded_like_a_child() {
    for generation in BOTH {
        for legacy_upstream in [true, false] {
            let dir = crate::common::tempdir().unwrap();
            let upstream = Upstream::new(legacy_upstream);
            let cancelled = upstream.cancelled.clone();
            let server = HttpUpstream::start(upstream).await;
            let mut wired = wire_http(&server.url, offloader(dir.path(), 500).await, generation).await;
            let what = format!("{generation:?}, legacy upstream: {legacy_upstream}");
            let tools = wired
                .client
                .peer()
                .list_all_tools()
                .await
                .expect("tools/list over HTTP");
            assert_eq!(tools.last().map(|t| t.name.as_ref()), Some("lro_extract"), "{what}");

            offload_and_count(&wired, &what).await;

            if legacy_upstream == matches!(generation, Generation::Legacy) {
                let straight = direct(Upstream::new(legacy_upstream), generation).await;
                for (tool, arguments) in [("rows", json!({"n": 3})), ("fail", json!({}))] {
                    let proxied = call(&wired.client, tool, arguments.clone()).await.unwrap();
                    let direct = call(&straight, tool, arguments).await.unwrap();
                    assert_eq!(
                        serde_json::to_value(&proxied).unwrap(),
                        serde_json::to_value(&direct).unwrap(),
                        "{tool}, {what}"
                    );
                }
            }

            // Progress comes back on the POST's event stream; the cancellation goes up as a POST.
            let peer = wired.client.peer().clone();
            let pending = tokio::spawn(async move { call_hang(&peer).await });
            let progress = tokio::time::timeout(Duration::from_secs(5), wired.seen.recv())
                .await
                .expect("progress within 5 s");
            assert_eq!(progress.as_deref(), Some("progress 1"), "{what}");
            pending.abort();
            let started = Instant::now();
            while !cancelled.load(Ordering::SeqCst) {
                assert!(started.elapsed() < Duration::from_secs(5), "{what}: cancelled upstream");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

#[tokio::test]
async fn an_http_upstream_that_goes_away_fails_calls_at_once_and_is_reconnected() {
    for generation in BOTH {
        let dir = crate::common::tempdir().unwrap();
        let mut server = HttpUpstream::start(Upstream::new(false)).await;
        let wired = wire_http(&server.url, offloader(dir.path(), 500).await, generation).await;
        let before = call(&wired.client, "rows", json!({"n": 3})).await.expect("a call");

        server.stop().await;
        let started = Instant::now();
        let failed = call(&wired.client, "rows", json!({"n": 3}))
            .await
            .expect_err("no server, no answer");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "failed in {:?}",
            started.elapsed()
        );
        let message = format!("{failed:?}");
        assert!(message.contains(&server.url), "the error names the server: {message}");

        // A new server that has never heard of the proxy's session: the proxy initialises again.
        let server = server.restart().await;
        let after = call(&wired.client, "rows", json!({"n": 3}))
            .await
            .expect("the proxy reconnects to the restarted server");
        assert_eq!(text(&after), text(&before), "{generation:?}");
        assert!(!wired.ending.is_finished(), "the proxy kept serving");
        drop(server);
    }
}

/// `lro proxy -- lro sample --serve`: both real processes, what `lro bench` and the README run.
#[tokio::test]
async fn the_real_binary_in_front_of_the_sample_server() {
    use rmcp::ServiceExt;
    let dir = crate::common::tempdir().unwrap();
    let lro = env!("CARGO_BIN_EXE_lro");
    let mut child = tokio::process::Command::new(lro)
        .args(["proxy", "--threshold", "1600", "--output-dir"])
        .arg(dir.path())
        .args(["--", lro, "sample", "--serve", "--count", "300", "--seed", "7"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pipes = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(pipes).await.expect("an MCP session through the proxy");
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["recall_memories", "count_memories", "lro_extract"]);

    let tool_call = |name: &'static str, arguments: Value| {
        let params = CallToolRequestParams::new(name).with_arguments(arguments.as_object().unwrap().clone());
        client.peer().call_tool(params)
    };
    let count = tool_call("count_memories", json!({})).await.unwrap();
    assert_eq!(
        count.structured_content,
        Some(json!({"count": 300})),
        "small results pass"
    );

    let all = tool_call("recall_memories", json!({"limit": 0})).await.unwrap();
    let descriptor: Value = serde_json::from_str(&text(&all)).expect("a descriptor");
    // MIF records: a record-level descriptor, one file.
    let file = descriptor["file_path"].as_str().expect("the memories' file").to_owned();
    let sample = std::process::Command::new(lro)
        .args(["sample", "--count", "300", "--seed", "7"])
        .output()
        .unwrap();
    let sample: Value = serde_json::from_slice(&sample.stdout).unwrap();
    assert_eq!(
        data_lines(&file),
        sample.as_array().unwrap().clone(),
        "the file holds the store"
    );

    let three = tool_call("recall_memories", json!({"query": "", "limit": 3}))
        .await
        .unwrap();
    let three: Value = serde_json::from_str(&text(&three)).unwrap();
    assert_eq!(three["memories"].as_array().map(Vec::len), Some(3), "3 memories inline");
    let refused = tool_call("recall_memories", json!({"limit": "ten"})).await;
    assert!(
        format!("{refused:?}").contains("limit must be a non-negative integer"),
        "{refused:?}"
    );
    client.cancel().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("the proxy ends when its client does")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// `lro demo`, the README's first command: the whole session runs and prints each step.
#[test]
fn lro_demo_plays_a_session_through_the_proxy() {
    let dir = crate::common::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(["demo", "--output-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("recall_memories, count_memories, lro_extract"),
        "{stdout}"
    );
    assert!(stdout.contains("The server answered with 500 memories"), "{stdout}");
    assert!(
        stdout.contains("    lro_extract(query=\"length\", slurp=true)\n    500\n"),
        "{stdout}"
    );
    assert!(stdout.contains("\"args\":[\"proxy\",\"--\",\"npx\""), "{stdout}");
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(
        files.len(),
        1,
        "the one offloaded file stays for the reader to try jq on"
    );
}
