//! The Rust host's errors and limits: typed, naming the problem, never failing a tool call
//! for a write, and never leaving the next call broken.

use super::*;

#[test]
fn bad_input_is_a_typed_error_naming_the_problem() {
    let dir = crate::common::tempdir().unwrap();
    let cfg = config(dir.path(), 100);
    let call = |records: &str| {
        let request = Request {
            operation: Operation::Recall,
            query: None,
            detail: None,
            records: records.into(),
            text: None,
        };
        RUNTIME.offload(&cfg, &request).unwrap_err()
    };
    assert!(
        matches!(call("[{\"id\": 1},"), Error::Component(ComponentError::InvalidInput(m)) if m.contains("not valid JSON"))
    );
    assert!(
        matches!(call("{\"records\": []}"), Error::Component(ComponentError::InvalidInput(m)) if m.contains("must be a JSON array"))
    );
    assert!(
        matches!(call("[{}, \"x\"]"), Error::Component(ComponentError::InvalidInput(m)) if m.contains("records[1] is a string"))
    );
    let mut bad = cfg.clone();
    bad.prefix = "../evil".into();
    let err = RUNTIME
        .offload(&bad, &request(Operation::Recall, None, &[]))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Component(ComponentError::InvalidConfig(m)) if m.contains("prefix")),
        "{err}"
    );
}

#[test]
fn limits_stop_a_call_and_the_next_call_works() {
    let dir = crate::common::tempdir().unwrap();
    let big = request(
        Operation::Recall,
        Some(Detail::Full),
        &sample(lro_core::Detail::Full, 20_000, false),
    );
    let small = RUNTIME.with_options(Options {
        memory: 8 << 20,
        ..RUNTIME.options().clone()
    });
    let err = small.offload(&config(dir.path(), 1600), &big).unwrap_err();
    assert!(matches!(err, Error::MemoryLimit(_)), "{err}");
    assert!(err.to_string().contains("8 MiB memory limit"), "{err}");
    // Which limit, and how to raise it (issue 34, item 14).
    assert!(
        err.to_string()
            .contains("raise it with Options::filter_memory (extract, call_tool, query) or Options::memory"),
        "{err}"
    );

    let hasty = RUNTIME.with_options(Options {
        deadline: std::time::Duration::from_millis(1),
        ..RUNTIME.options().clone()
    });
    let err = hasty.offload(&config(dir.path(), 1600), &big).unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
    assert!(
        err.to_string()
            .contains("1ms time limit and was stopped; raise it with Options::filter_deadline")
            && err.to_string().contains("--timeout SECONDS of the lro command"),
        "{err}"
    );

    // The same runtimes, and the shared one, keep working.
    let ok = request(Operation::Recall, None, &sample(lro_core::Detail::Light, 3, false));
    assert!(matches!(
        small.offload(&config(dir.path(), 1600), &ok).unwrap(),
        Outcome::Inline(_)
    ));
    assert!(matches!(
        RUNTIME.offload(&config(dir.path(), 1600), &big).unwrap(),
        Outcome::Offloaded(_)
    ));
}

#[test]
fn a_path_that_is_not_a_directory_degrades_the_result_and_never_fails_the_call() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let records = sample(lro_core::Detail::Light, 30, false);
    let (runtime, events) = with_events();
    let outcome = runtime
        .offload(&config(file.path(), 100), &request(Operation::Recall, None, &records))
        .unwrap();
    let Outcome::Degraded(degraded) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(degraded.warning.contains("not a directory"), "{}", degraded.warning);
    assert_eq!(degraded.total, 30);
    let events = events.lock().unwrap();
    assert!(
        matches!(&events[..], [Event::OffloadWriteFailed(e)] if e.error.contains("not a directory")),
        "{events:?}"
    );
    // Extraction has no fallback: there it is an error naming the directory.
    let err = RUNTIME
        .extract(
            &config(file.path(), 100),
            &lro_host::ExtractRequest {
                path: format!(
                    "{}/atlatl-recall-01JDEF7X2K0000000000000000.jsonl",
                    file.path().display()
                ),
                recipe: Some(1),
                query: None,
                params: None,
                slurp: false,
                limit: None,
            },
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Directory { message, .. } if message == "not a directory"),
        "{err}"
    );
}

/// `dir_problem` is the host's to set: a caller's is refused, with the message every host gives.
#[test]
fn a_callers_dir_problem_is_refused() {
    let dir = crate::common::tempdir().unwrap();
    let config = Config {
        dir_problem: Some("mine".into()),
        ..config(dir.path(), 100)
    };
    let err = RUNTIME
        .offload(&config, &request(Operation::List, None, &[json!({"id": "1"})]))
        .unwrap_err();
    assert_eq!(err.kind(), lro_host::ErrorKind::InvalidConfig);
    assert_eq!(
        err.to_string(),
        "invalid config: config.dir_problem: set by the host, never by callers"
    );
    assert!(names(dir.path()).is_empty(), "nothing is written");
}

/// The defaults run under the standard limits: a caller's tiny deadline fails its own calls,
/// not the defaults every call starts from.
#[test]
fn the_defaults_ignore_a_callers_tiny_deadline() {
    let tiny = RUNTIME.with_options(Options {
        deadline: Duration::from_nanos(1),
        ..RUNTIME.options().clone()
    });
    assert_eq!(tiny.defaults().unwrap(), defaults());
}

/// The component's one-pass split of the records (WebAssembly SIMD there, SSE2 or eight bytes a
/// step in machine code) writes the same lines and estimates the same tokens as the machine
/// code does, for strings with an escape, a non-ASCII or a control character at every position
/// of the steps, and for text that is not compact.
#[test]
fn the_component_reads_records_as_the_machine_code_does() {
    let specials = [
        "\\\"", "\\\\", "\\n", "\\/", "\\u00e9", "\\u0001", "é", "日", "😀", "\u{7f}",
    ];
    let mut records = Vec::new();
    for len in [15, 16, 17, 31, 33] {
        for at in 0..len {
            for special in specials {
                let body: String = (0..len).map(|k| if k == at { special } else { "x" }).collect();
                records.push(format!(
                    r#"{{"id":"r{}","namespace":"n{at}","title":"{body}","n":1.5}}"#,
                    records.len()
                ));
            }
        }
    }
    for text in [
        format!("[{}]", records.join(",")),
        format!("[\n  {}\n]", records.join(" ,\n  ")),
    ] {
        let dir = crate::common::tempdir().unwrap();
        let cfg = config(dir.path(), 100);
        let req = Request {
            operation: Operation::Recall,
            query: None,
            detail: None,
            records: text.clone(),
            text: None,
        };
        let component = offloaded(RUNTIME.offload(&cfg, &req).unwrap());
        let machine_cfg = lro_core::Config {
            output_dir: cfg.output_dir.clone(),
            threshold_tokens: 100,
            ..lro_core::Config::default()
        };
        let machine_req = lro_core::offload::Request {
            operation: lro_core::Operation::Recall,
            query: None,
            detail: None,
            records: &text,
            text: None,
        };
        let lro_core::Outcome::Offloaded { path, tokens, .. } =
            lro_core::offload::offload(&machine_cfg, &machine_req, &mut |_| {}).unwrap()
        else {
            panic!("the machine code did not offload");
        };
        assert_eq!(component.tokens, tokens);
        let lines = |path: &str| {
            std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .skip(1)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let (ours, theirs) = (lines(&component.path), lines(&path));
        assert_eq!(ours.len(), records.len());
        assert_eq!(ours, theirs);
        // Each line is what serde_json prints for the record.
        for (line, record) in ours.iter().zip(&records) {
            assert_eq!(line, &serde_json::from_str::<Value>(record).unwrap().to_string());
        }
    }
}

/// The host reads the component's errors with the kinds the WIT names and the words lro-core
/// writes: `host/src/error.rs` keeps them in one table, and this fails when it drifts from
/// either.
#[test]
fn component_errors_read_as_lro_core_writes_them() {
    use lro_core::Error as Core;
    use lro_host::{ComponentError as Wit, Error as Host};
    let m = || "the message".to_owned();
    let pairs = [
        (Core::InvalidConfig(m()), Wit::InvalidConfig(m())),
        (Core::InvalidInput(m()), Wit::InvalidInput(m())),
        (Core::Io(m()), Wit::Io(m())),
        (Core::InvalidRequest(m()), Wit::InvalidRequest(m())),
        (Core::NotFound(m()), Wit::NotFound(m())),
        (Core::OutsideDirectory(m()), Wit::OutsideDirectory(m())),
        (Core::NotLroFile(m()), Wit::NotLroFile(m())),
        (Core::Expired(m()), Wit::Expired(m())),
        (Core::Corrupt(m()), Wit::Corrupt(m())),
        (Core::InvalidFilter(m()), Wit::InvalidFilter(m())),
        (Core::FilterFailed(m()), Wit::FilterFailed(m())),
    ];
    let wit =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/types.wit")).unwrap();
    let variant = &wit[wit.find("variant error {").expect("the WIT error variant")..];
    let cases: Vec<&str> = variant[..variant.find('}').unwrap()]
        .lines()
        .map(str::trim)
        .filter_map(|line| line.strip_suffix("(string),"))
        .collect();
    let kinds: Vec<&str> = pairs
        .iter()
        .map(|(_, wit)| Host::Component(wit.clone()).kind().as_str())
        .collect();
    assert_eq!(kinds, cases, "every WIT case, named as the WIT names it");
    for (core, wit) in pairs {
        let host = Host::Component(wit);
        assert_eq!(host.to_string(), core.to_string());
        assert_eq!(host.component_message(), Some("the message"));
    }
}
