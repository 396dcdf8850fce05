//! The custodian through the component, with a fixed `now`.

use std::path::Path;

use crate::common::*;
use lro_host::{ComponentError, Error, Event};

const HOUR: u64 = 3_600_000;
/// 2026-11-21T00:00:00Z
const T0: u64 = 1_795_219_200_000;

fn ulid_at(ms: u64, n: u128) -> String {
    ulid::Ulid::from_parts(ms, n).to_string()
}

/// Writes an LRO file whose header says it was created at `header_ms`.
fn lro_file(dir: &Path, name: &str, header_ms: u64) {
    let header = serde_json::json!({"type": "lro_header", "operation": "recall", "query": null, "count": 1,
        "schema_version": "0.1", "timestamp": lro_core::time::format_rfc3339_ms(header_ms), "estimated_tokens": 9, "detail": "light"});
    std::fs::write(dir.join(name), format!("{header}\n{{\"id\":\"x\"}}\n")).unwrap();
}

#[test]
fn sweep_deletes_exactly_the_expired_files() {
    let dir = crate::common::tempdir().unwrap();
    let d = dir.path();
    // ttl 1 h, now = T0 + 3 h: anything created at or before T0 + 2 h has expired.
    let old = format!("atlatl-recall-{}.jsonl", ulid_at(T0, 1));
    let boundary = format!("atlatl-search-{}.jsonl", ulid_at(T0 + 2 * HOUR, 2));
    let fresh = format!("atlatl-list-{}.jsonl", ulid_at(T0 + 2 * HOUR + 1, 3));
    // The header wins over the ULID: this name looks fresh, its header says old.
    let header_old = format!("atlatl-inject-{}.jsonl", ulid_at(T0 + 10 * HOUR, 4));
    // An unreadable header falls back to the ULID's time: old.
    let garbled = format!("atlatl-recall-{}.jsonl", ulid_at(T0, 5));
    let leftover = format!(".atlatl-recall-{}.jsonl.tmp", ulid_at(T0, 6));
    lro_file(d, &old, T0);
    lro_file(d, &boundary, T0 + 2 * HOUR);
    lro_file(d, &fresh, T0 + 2 * HOUR + 1);
    lro_file(d, &header_old, T0);
    std::fs::write(d.join(&garbled), "not a header\n").unwrap();
    std::fs::write(d.join(&leftover), "{\"type\":\"lro_header\"").unwrap();
    // Not ours: other prefixes, other names, a directory wearing our name, a symlink.
    let others = [
        format!("lro-recall-{}.jsonl", ulid_at(T0, 7)),
        "notes.txt".to_owned(),
        format!("atlatl-recall-{}.json", ulid_at(T0, 8)),
    ];
    for name in &others {
        std::fs::write(d.join(name), "old").unwrap();
    }
    let dir_named_like_ours = format!("atlatl-recall-{}.jsonl", ulid_at(T0, 9));
    std::fs::create_dir(d.join(&dir_named_like_ours)).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    let link = format!("atlatl-recall-{}.jsonl", ulid_at(T0, 10));
    std::os::unix::fs::symlink(outside.path(), d.join(&link)).unwrap();

    let (runtime, events) = with_events();
    let mut cfg = config(d, 1600);
    cfg.ttl_seconds = 3600;
    let report = runtime.sweep(&cfg, T0 + 3 * HOUR).unwrap();

    let base = d.canonicalize().unwrap();
    let mut expected: Vec<String> = [&old, &boundary, &header_old, &garbled, &leftover]
        .iter()
        .map(|n| format!("{}/{n}", base.display()))
        .collect();
    expected.sort();
    let mut deleted = report.deleted.clone();
    deleted.sort();
    assert_eq!(deleted, expected);
    assert_eq!(report.kept, 1);
    assert!(report.failed.is_empty());

    let mut left = names(d);
    left.sort();
    let mut want: Vec<String> = others.to_vec();
    want.extend([fresh.clone(), dir_named_like_ours, link]);
    want.sort();
    assert_eq!(left, want, "only expired LRO files were deleted");
    assert!(outside.path().exists());

    let events = events.lock().unwrap();
    assert_eq!(events.len(), 5);
    for event in events.iter() {
        let Event::OffloadFileExpired(e) = event else {
            panic!("{event:?}")
        };
        assert_eq!(e.expired, e.created + HOUR);
        assert!(e.expired <= T0 + 3 * HOUR && deleted.contains(&e.path));
    }
}

#[test]
fn files_the_component_wrote_expire_after_their_ttl() {
    let dir = crate::common::tempdir().unwrap();
    let mut cfg = config(dir.path(), 10);
    cfg.ttl_seconds = 60;
    let out = RUNTIME
        .offload(
            &cfg,
            &request(
                lro_host::Operation::Recall,
                None,
                &sample(lro_core::Detail::Light, 20, false),
            ),
        )
        .unwrap();
    let lro_host::Outcome::Offloaded(out) = out else {
        panic!("{out:?}")
    };
    let created = ulid::Ulid::from_string(out.path.rsplit('-').next().unwrap().trim_end_matches(".jsonl"))
        .unwrap()
        .timestamp_ms();
    let before = RUNTIME.sweep(&cfg, created + 59_999).unwrap();
    assert_eq!((before.deleted.len(), before.kept), (0, 1));
    let after = RUNTIME.sweep(&cfg, created + 60_000).unwrap();
    assert_eq!(after.deleted, [out.path]);
    assert!(names(dir.path()).is_empty());
}

#[test]
fn sweeping_a_missing_directory_is_an_io_error() {
    let dir = crate::common::tempdir().unwrap();
    let err = RUNTIME.sweep(&config(&dir.path().join("absent"), 10), T0).unwrap_err();
    assert!(matches!(&err, Error::Directory { .. }), "{err}");
    let ok = RUNTIME.sweep(&config(dir.path(), 10), T0).unwrap();
    assert_eq!((ok.deleted.len(), ok.kept, ok.failed.len()), (0, 0, 0));
    let _ = ComponentError::Io(String::new());
}
