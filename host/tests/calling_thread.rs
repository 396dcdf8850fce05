//! A call's file operations run on the thread that makes the call. wasmtime-wasi otherwise hands
//! each one to tokio's blocking-thread pool and waits for it: two context switches per WASI call,
//! several per offload. A test binary of its own, so that no other test's threads are counted;
//! Linux only, since it counts them in `/proc`.
#![cfg(target_os = "linux")]

use lro_host::{Config, ExtractRequest, Operation, Options, Outcome, Request, Runtime};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task lists this process's threads")
        .count()
}

#[test]
fn file_operations_are_never_handed_to_a_thread_pool() {
    let compiled = Runtime::new(Options::default()).expect("the component loads");
    // Fresh instances as well as kept ones: each makes its own preopen.
    for kept_instances in [0, 4] {
        let runtime = compiled.with_options(Options {
            kept_instances,
            ..Options::default()
        });
        let dir = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .unwrap();
        let config = Config {
            output_dir: dir.path().to_str().unwrap().to_owned(),
            threshold_tokens: 100,
            ..runtime.defaults().unwrap()
        };
        // wasmtime-wasi's own runtime starts its worker threads when first used; they are no
        // hand-off, so they are counted before the calls.
        wasmtime_wasi::runtime::in_tokio(async {});
        let before = threads();

        let records: Vec<String> = (0..200)
            .map(|i| {
                format!(
                    r#"{{"id":"m{i}","namespace":"_semantic/n{}","title":"Record {i}"}}"#,
                    i % 3
                )
            })
            .collect();
        let request = Request {
            operation: Operation::List,
            query: None,
            detail: None,
            records: format!("[{}]", records.join(",")),
            text: None,
        };
        for _ in 0..3 {
            // Each offload creates, writes, checks and renames a file, and lists the directory.
            let Outcome::Offloaded(offloaded) = runtime.offload(&config, &request).unwrap() else {
                panic!("200 records over a 100-token threshold are offloaded");
            };
            let extracted = runtime
                .extract(
                    &config,
                    &ExtractRequest {
                        path: offloaded.path,
                        recipe: Some(1),
                        query: None,
                        params: None,
                        slurp: false,
                        limit: Some(u32::MAX),
                    },
                )
                .unwrap();
            assert_eq!(extracted.total, 200);
        }
        runtime.sweep(&config, u64::MAX / 2).unwrap();

        assert_eq!(
            threads(),
            before,
            "kept_instances {kept_instances}: the calls started threads (a blocking-thread pool's)"
        );
    }
}
