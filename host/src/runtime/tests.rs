//! Kept instances (docs/HOSTS.md, step 2). That a kept instance answers as a fresh one is what
//! the shared cases check (`cli/tests/all/shared_cases.rs`): they all run through one runtime.

use std::os::unix::fs::PermissionsExt;
use std::sync::LazyLock;

use super::*;
use crate::{OffloadedResult, Operation};

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| Runtime::new(Options::default()).expect("the component loads"));

fn records(n: usize, content: &str) -> String {
    let records: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"id":"m{i}","namespace":"_semantic/kept","title":"Record {i}","content":"{content}"}}"#))
        .collect();
    format!("[{}]", records.join(","))
}

fn request(records: String) -> Request {
    Request {
        operation: Operation::List,
        query: None,
        detail: None,
        records,
        text: None,
    }
}

/// From the shared runtime's defaults, so that the runtime under test keeps nothing for it.
fn config(dir: &Path) -> Config {
    Config {
        output_dir: dir.to_str().unwrap().to_owned(),
        threshold_tokens: 100,
        ..RUNTIME.defaults().unwrap()
    }
}

fn offloaded(outcome: Outcome) -> OffloadedResult {
    match outcome {
        Outcome::Offloaded(offloaded) => offloaded,
        other => panic!("not offloaded: {other:?}"),
    }
}

fn lines(path: &str) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

fn kept(runtime: &Runtime) -> usize {
    runtime.kept.lock().unwrap().len()
}

#[test]
fn a_directory_replaced_at_its_path_gets_the_next_file() {
    let runtime = RUNTIME.with_options(Options::default());
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("offload");
    let config = config(&dir);
    let first = offloaded(runtime.offload(&config, &request(records(50, ""))).unwrap());
    // The kept store still has the old directory open: the next call must not write there.
    std::fs::rename(&dir, tmp.path().join("moved")).unwrap();
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let second = offloaded(runtime.offload(&config, &request(records(60, ""))).unwrap());
    assert_eq!(
        Path::new(&second.path).parent(),
        Some(dir.canonicalize().unwrap().as_path())
    );
    assert_eq!(lines(&second.path), 61, "the header and the records");
    let moved: Vec<_> = std::fs::read_dir(tmp.path().join("moved"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(moved, [Path::new(&first.path).file_name().unwrap()]);
}

#[test]
fn a_directory_made_writable_is_mounted_as_it_is_at_each_call() {
    let runtime = RUNTIME.with_options(Options::default());
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("modes");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
    let config = config(&dir);
    let outcome = runtime.offload(&config, &request(records(50, ""))).unwrap();
    assert!(matches!(outcome, Outcome::Degraded(_)), "{outcome:?}");
    assert_eq!(kept(&runtime), 1, "the read-only mount is kept");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let offloaded = offloaded(runtime.offload(&config, &request(records(70, ""))).unwrap());
    assert_eq!(lines(&offloaded.path), 71);
}

#[test]
fn a_trap_in_a_kept_instance_drops_it_and_the_next_call_works() {
    // 2 MiB is enough for small calls and too little for 2,000 records of 200 characters
    // (0.66 MB of arguments: small enough to run in the kept instance).
    let runtime = RUNTIME.with_options(Options {
        memory: 2 << 20,
        ..Options::default()
    });
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .unwrap();
    let config = config(tmp.path());
    let outcome = runtime.offload(&config, &request(records(3, ""))).unwrap();
    assert!(matches!(outcome, Outcome::Inline(_)), "{outcome:?}");
    assert_eq!(kept(&runtime), 1);
    let big = request(records(2000, &"x".repeat(200)));
    assert!(big.records.len() <= KEEP_MAX_BYTES);
    let error = runtime.offload(&config, &big).unwrap_err();
    assert!(matches!(error, Error::MemoryLimit(_)), "{error}");
    assert_eq!(kept(&runtime), 0);
    let offloaded = offloaded(runtime.offload(&config, &request(records(200, ""))).unwrap());
    assert_eq!(offloaded.count, 200);
    let files: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files, [PathBuf::from(&offloaded.path)]);
}

#[test]
fn large_arguments_and_user_filters_run_in_fresh_instances() {
    let runtime = RUNTIME.with_options(Options::default());
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .unwrap();
    let config = config(tmp.path());
    let big = request(records(4000, &"x".repeat(250)));
    assert!(big.records.len() > KEEP_MAX_BYTES);
    let offloaded = offloaded(runtime.offload(&config, &big).unwrap());
    // Its instance, grown to several times its arguments, was not kept.
    assert_eq!(kept(&runtime), 0);
    let extract = ExtractRequest {
        path: offloaded.path.clone(),
        recipe: None,
        query: Some("length".into()),
        params: None,
        slurp: true,
        limit: None,
    };
    assert_eq!(runtime.extract(&config, &extract).unwrap().values, ["4000"]);
    assert_eq!(
        runtime.query(".a", r#"{"a": 1}"#, false, false, None).unwrap().values,
        ["1"]
    );
    assert_eq!(kept(&runtime), 0);
    let outcome = runtime.offload(&config, &request(records(3, ""))).unwrap();
    assert!(matches!(outcome, Outcome::Inline(_)), "{outcome:?}");
    assert_eq!(kept(&runtime), 1);
    // A second call with the same directory and limits reuses it; other limits get their own.
    runtime.sweep(&config, 0).unwrap();
    assert_eq!(kept(&runtime), 1);
    runtime.defaults().unwrap();
    runtime.estimate("").unwrap();
    assert_eq!(kept(&runtime), 2, "no directory: another instance");
}

#[test]
fn no_instance_is_kept_when_none_may_be() {
    let runtime = RUNTIME.with_options(Options {
        kept_instances: 0,
        ..Options::default()
    });
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .unwrap();
    let config = config(tmp.path());
    for n in [3, 200] {
        runtime.offload(&config, &request(records(n, ""))).unwrap();
    }
    runtime.estimate("").unwrap();
    assert_eq!(kept(&runtime), 0);
}
