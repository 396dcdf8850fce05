//! `lro_host::rmcp::WithLro` around the example server a user copies
//! (host/examples/rmcp_server.rs, compiled here as it is), driven by rmcp's client: the Rust
//! integration, as an rmcp server author adopts it.

#[path = "../../../host/examples/rmcp_server.rs"]
#[expect(dead_code, reason = "the example's `main` serves stdio; the test serves a pipe")]
pub(crate) mod example;

use std::time::Duration;

use lro_host::mcp::Offloader;
use lro_host::rmcp::WithLro;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::common;

async fn wrapped(config: lro_host::Config) -> WithLro<example::Notes> {
    let offloader = tokio::task::spawn_blocking(move || Offloader::prepare(common::RUNTIME.clone(), config))
        .await
        .unwrap()
        .expect("the offloader prepares its directory");
    WithLro::with_offloader(example::Notes, offloader).expect("the wrapper")
}

async fn serve(config: lro_host::Config) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    connect(wrapped(config).await).await
}

pub(crate) async fn connect(server: WithLro<example::Notes>) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_end).await.expect("the client connects")
}

pub(crate) async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &'static str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let params = CallToolRequestParams::new(tool).with_arguments(arguments.as_object().unwrap().clone());
    client.peer().call_tool(params).await.expect("a result")
}

pub(crate) fn text(result: &rmcp::model::CallToolResult) -> String {
    result.content[0].as_text().expect("a text block").text.clone()
}

#[tokio::test]
async fn the_example_server_offloads_lists_lro_extract_and_answers_its_guidance() {
    let dir = crate::common::tempdir().unwrap();
    let client = serve(common::config(dir.path(), 1600)).await;

    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["count_notes", "search_notes", "lro_extract"],
        "rmcp's order, then ours"
    );
    assert!(
        tools[1].output_schema.is_none(),
        "search_notes may be offloaded: its outputSchema would reject a descriptor"
    );

    let small = call(&client, "search_notes", json!({"count": 4})).await;
    let notes = example::notes(4);
    assert_eq!(
        small.structured_content,
        Some(json!({"notes": notes})),
        "small results pass"
    );

    let large = call(&client, "search_notes", json!({})).await;
    let descriptor: Value = serde_json::from_str(&text(&large)).expect("a descriptor");
    let file = descriptor["files"]["notes"]
        .as_str()
        .expect("the notes' file")
        .to_owned();
    let lines: Vec<example::Note> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, example::notes(300), "the file holds the result");

    // The model's next calls, exactly as the guidance prints them.
    let guidance = descriptor["guidance"].as_str().unwrap();
    let printed = common::printed_calls(guidance);
    assert!(printed.len() >= 2, "{guidance}");
    for (name, arguments) in printed {
        assert_eq!(arguments["file_path"], json!(file), "{guidance}");
        let answered = call(&client, "lro_extract", arguments).await;
        assert_ne!(answered.is_error, Some(true), "{name}: {}", text(&answered));
        match name.as_str() {
            "count_notes" => assert_eq!(text(&answered), "300"),
            "first_10_notes" => assert!(text(&answered).contains("\"note-0000\""), "{}", text(&answered)),
            _ => assert!(!text(&answered).is_empty(), "{name}"),
        }
    }
    let counted = call(
        &client,
        "lro_extract",
        json!({"file_path": file, "query": "length", "slurp": true}),
    )
    .await;
    assert_eq!(text(&counted), "300");
    let refused = call(
        &client,
        "lro_extract",
        json!({"file_path": "/etc/passwd", "query": "."}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).starts_with("outside-directory: "), "{}", text(&refused));
}

#[tokio::test]
async fn the_wrapper_sweeps_expired_files_while_serving() {
    let dir = crate::common::tempdir().unwrap();
    let mut config = common::config(dir.path(), 1600);
    config.ttl_seconds = 1;
    let client = serve(config).await;
    let large = call(&client, "search_notes", json!({})).await;
    let descriptor: Value = serde_json::from_str(&text(&large)).unwrap();
    let file = descriptor["files"]["notes"].as_str().unwrap().to_owned();
    assert!(std::path::Path::new(&file).exists());
    // ttl 1 s: swept every second, so gone within a few.
    let started = std::time::Instant::now();
    while std::path::Path::new(&file).exists() {
        assert!(started.elapsed() < Duration::from_secs(6), "the expired file was swept");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The offloaded files as resources, as `lro proxy` serves them: listed for the session that
/// offloaded them (a clone of the wrapper is another session), read in the extractor, whole or
/// by record range; a URI that is not LRO's reaches the server.
#[tokio::test]
async fn the_wrapper_serves_offloaded_files_as_resources_per_session() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let dir = crate::common::tempdir().unwrap();
    let server = wrapped(common::config(dir.path(), 1600)).await;
    let other_session = connect(server.clone()).await;
    let client = connect(server).await;

    let templates = client.peer().list_all_resource_templates().await.unwrap();
    let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, ["lro://offload/{file}{?from,to}"]);
    assert!(
        client.peer().list_all_resources().await.unwrap().is_empty(),
        "nothing offloaded yet"
    );

    let large = call(&client, "search_notes", json!({})).await;
    let descriptor: Value = serde_json::from_str(&text(&large)).expect("a descriptor");
    let file = descriptor["files"]["notes"].as_str().unwrap().to_owned();
    let name = std::path::Path::new(&file)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let listed = client.peer().list_all_resources().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].uri, format!("lro://offload/{name}"));
    assert_eq!(listed[0].size, Some(std::fs::metadata(&file).unwrap().len()));
    assert!(
        other_session.peer().list_all_resources().await.unwrap().is_empty(),
        "another session does not list this one's files"
    );

    let read = |uri: String| {
        let peer = client.peer().clone();
        async move { peer.read_resource(ReadResourceRequestParams::new(uri)).await }
    };
    let range = read(format!("lro://offload/{name}?from=2&to=4"))
        .await
        .expect("a range");
    let [ResourceContents::TextResourceContents { text, .. }] = range.contents.as_slice() else {
        panic!("one text: {range:?}");
    };
    let ids: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, [json!("note-0002"), json!("note-0003")], "{text}");

    let missing = read("lro://offload/atlatl-gone-01JDEF7X2K0000000000000000.jsonl".into()).await;
    let rmcp::ServiceError::McpError(missing) = missing.unwrap_err() else {
        panic!("an MCP error")
    };
    assert_eq!(missing.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND, "{missing:?}");
    let bad = read(format!("lro://offload/{name}?from=-1")).await.unwrap_err();
    let rmcp::ServiceError::McpError(bad) = bad else {
        panic!("an MCP error")
    };
    assert_eq!(bad.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad:?}");
    let theirs = read("file:///etc/hosts".into()).await.unwrap_err();
    let rmcp::ServiceError::McpError(theirs) = theirs else {
        panic!("an MCP error")
    };
    assert_eq!(
        theirs.code,
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        "the server's own answer: {theirs:?}"
    );
}

/// `lro_extract` goes out as rmcp's `Tool` (the wrapper's list, the proxy's for a server
/// without tools) with every member of the component's definition.
#[tokio::test]
async fn the_extract_tool_keeps_the_component_definition_through_rmcp() {
    let dir = crate::common::tempdir().unwrap();
    let server = wrapped(common::config(dir.path(), 1600)).await;
    let offloader = server.offloader();
    let typed = serde_json::to_value(offloader.extract_tool().expect("an rmcp Tool")).unwrap();
    let defined: Value = serde_json::from_str(&offloader.tool_definition).unwrap();
    assert_eq!(typed, defined);
}
