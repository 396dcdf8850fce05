//! `WithLro` with a store (lro-host's `store` feature): two replicas of the example server, each
//! with a disk of its own, sharing one bucket of a real S3 server (moto's, from the test
//! packages `bash tests/run` installs into .venv), as a Rust server deployed behind a load
//! balancer is.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use lro_host::mcp::{Offloader, Stored};
use lro_host::rmcp::WithLro;
use lro_host::store::Store;
use serde_json::{Value, json};

use crate::common;
use crate::rmcp_server::{call, connect, example, text};

/// moto's S3 server on a free loopback port, with the bucket `offloads`; stopped on drop.
struct Moto {
    child: Child,
    env: Vec<(String, String)>,
}

impl Moto {
    fn start() -> Moto {
        let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python");
        let script = "import boto3, sys\n\
            from moto.server import ThreadedMotoServer\n\
            server = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)\n\
            server.start()\n\
            port = server.get_host_and_port()[1]\n\
            boto3.client('s3', endpoint_url=f'http://127.0.0.1:{port}', region_name='us-east-1', aws_access_key_id='k', aws_secret_access_key='s').create_bucket(Bucket='offloads')\n\
            print(port, flush=True)\n\
            sys.stdin.read()\n";
        let mut child = Command::new(python)
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Its log of every request is noise in the test's output.
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{python}: {e}; `bash tests/run` installs moto into .venv"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("moto did not start (is it in .venv? `bash tests/run` installs it): {line:?}"));
        let env = [
            ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")),
            ("AWS_ACCESS_KEY_ID", "k".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "s".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ];
        Moto {
            child,
            env: env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A replica: the example server wrapped with an offloader of `dir` and its own client of the
/// store, naming files by handle (its clients cannot read its disk).
async fn replica(dir: &std::path::Path, moto: &Moto) -> WithLro<example::Notes> {
    let store = Store::with_env("s3://offloads/notes", 64 << 20, 100, moto.env.clone()).expect("the store");
    let config = common::config(dir, 1600);
    let offloader = tokio::task::spawn_blocking(move || Offloader::prepare(common::RUNTIME.clone(), config))
        .await
        .unwrap()
        .expect("the offloader prepares its directory");
    let offloader = Offloader {
        handles: true,
        store: Some(Stored {
            store: Arc::new(store),
            scope: String::new(),
            sweeps: true,
        }),
        ..offloader
    };
    WithLro::with_offloader(example::Notes, offloader).expect("the wrapper")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_answers_for_an_offload_another_replica_made() {
    let moto = Moto::start();
    let (a_dir, b_dir) = (common::tempdir().unwrap(), common::tempdir().unwrap());
    let a = connect(replica(a_dir.path(), &moto).await).await;
    let b = connect(replica(b_dir.path(), &moto).await).await;

    let large = call(&a, "search_notes", json!({})).await;
    let descriptor: Value = serde_json::from_str(&text(&large)).expect("a descriptor");
    let handle = descriptor["files"]["notes"]
        .as_str()
        .expect("the notes' file")
        .to_owned();
    assert!(handle.starts_with("lro://offload/"), "{handle}");

    let counted = call(
        &b,
        "lro_extract",
        json!({"file_path": handle, "query": "length", "slurp": true}),
    )
    .await;
    assert_eq!((counted.is_error, text(&counted)), (None, "300".to_owned()));
    let listed = b.peer().list_all_resources().await.unwrap();
    assert!(
        listed.iter().any(|r| r.uri == handle),
        "b lists a's offload: {listed:?}"
    );
    let name = handle.trim_start_matches("lro://offload/");
    assert_eq!(
        std::fs::read(b_dir.path().join(name)).unwrap(),
        std::fs::read(a_dir.path().join(name)).unwrap(),
        "b's cache holds a's file, byte for byte"
    );
}
