//! The custodian's rules: which names are ours, when a file or a stored object expires, and
//! the caps every write keeps.

use super::*;

const ULID: &str = "01JDEF7X2K0000000000000000";

#[test]
fn a_stored_object_expires_by_the_rule_of_a_file_on_disk() {
    let ms = Ulid::from_string(ULID).unwrap().timestamp_ms();
    let name = format!("atlatl-recall-{ULID}.jsonl");
    let header = |expires: Option<u64>| {
        let mut h = serde_json::json!({"type": "lro_header", "timestamp": crate::time::format_rfc3339_ms(ms)});
        if let Some(at) = expires {
            h["expires_at"] = crate::time::format_rfc3339_ms(at).into();
        }
        format!("{h}\n{{\"id\":1}}\n").into_bytes()
    };
    let ttl = 60_000;
    // The header's promise decides, whatever the reader's ttl.
    assert_eq!(
        stored_expiry("atlatl", &name, &header(Some(ms + 5_000)), ms, ttl),
        Some(ms + 5_000)
    );
    // No promise recorded: created plus the reader's ttl.
    assert_eq!(stored_expiry("atlatl", &name, &header(None), ms, ttl), Some(ms + ttl));
    // A promise beyond the longest ttl is cut to it.
    let far = ms + (MAX_TTL_SECONDS + 10) * 1000;
    assert_eq!(
        stored_expiry("atlatl", &name, &header(Some(far)), ms, ttl),
        Some(ms + MAX_TTL_SECONDS * 1000)
    );
    // A header cut before its end of line is no header: the ULID's time and the ttl.
    let cut = &header(Some(ms + 5_000))[..20];
    assert_eq!(stored_expiry("atlatl", &name, cut, ms, ttl), Some(ms + ttl));
    // Not our file, or not with this prefix: never deleted.
    assert_eq!(stored_expiry("atlatl", "notes.jsonl", &header(Some(ms)), ms, ttl), None);
    assert_eq!(stored_expiry("other", &name, &header(Some(ms)), ms, ttl), None);
    assert_eq!(
        stored_expiry("atlatl", &format!(".{name}.tmp"), &header(Some(ms)), ms, ttl),
        None
    );
}

#[test]
fn recognises_only_our_names() {
    let ulid = Ulid::from_string(ULID).unwrap();
    assert_eq!(
        classify("atlatl", &format!("atlatl-recall-{ULID}.jsonl")),
        Some(Kind::Offload(ulid))
    );
    assert_eq!(
        classify("atlatl", &format!("atlatl-my-tool_2-{ULID}.jsonl")),
        Some(Kind::Offload(ulid))
    );
    assert_eq!(
        classify("atlatl", &format!(".atlatl-recall-{ULID}.jsonl.tmp")),
        Some(Kind::Temporary(ulid))
    );
    for other in [
        format!("lro-recall-{ULID}.jsonl"),
        format!("atlatl-recall-{ULID}.json"),
        format!("atlatl-{ULID}.jsonl"),
        format!("atlatl-Recall-{ULID}.jsonl"),
        "atlatl-recall-notaulid.jsonl".to_owned(),
        "atlatl-recall-01JDEF7X2K000000000000000U.jsonl".to_owned(),
        format!("atlatlx-recall-{ULID}.jsonl"),
        "notes.txt".to_owned(),
    ] {
        assert_eq!(classify("atlatl", &other), None, "{other}");
    }
}

/// A file in `dir` named for `ms`, with a header dated `ms` that records `expires_at` when
/// given (a file written before headers recorded it when not).
fn file_at(dir: &std::path::Path, ms: u64, expires_at: Option<u64>) -> String {
    use crate::time::format_rfc3339_ms;
    let ulid = Ulid::from_parts(ms, 7);
    let mut header = serde_json::json!({"type": "lro_header", "operation": "recall", "query": null, "count": 0,
        "schema_version": "0.1", "timestamp": format_rfc3339_ms(ms), "estimated_tokens": 1, "detail": "light"});
    if let Some(at) = expires_at {
        header["expires_at"] = format_rfc3339_ms(at).into();
    }
    let path = dir.join(format!("atlatl-recall-{ulid}.jsonl"));
    fs::write(&path, format!("{header}\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

fn config(dir: &std::path::Path, ttl_seconds: u64) -> Config {
    Config {
        output_dir: dir.to_str().unwrap().to_owned(),
        threshold_tokens: 10,
        ttl_seconds,
        ..Config::default()
    }
}

fn now() -> u64 {
    let since = std::time::SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

/// A sweeper with a short ttl leaves a file until the expiry its writer recorded, and deletes
/// it then; a file without a recorded expiry goes by the sweeper's ttl, as before.
#[test]
fn a_sweep_goes_by_the_expiry_each_file_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let t = now() - 10_000;
    let promised = file_at(dir.path(), t, Some(t + 3_600_000));
    let unstated = file_at(dir.path(), t + 1, None);
    let short = config(dir.path(), 2);
    let report = sweep(&short, t + 5_000, &mut |_| {}).unwrap();
    assert_eq!(report.deleted, [unstated]);
    assert_eq!(report.kept, 1);
    assert!(sweep(&short, t + 3_599_999, &mut |_| {}).unwrap().deleted.is_empty());
    let mut events = Vec::new();
    let long = config(dir.path(), 86_400);
    assert_eq!(
        sweep(&long, t + 3_600_000, &mut |e| events.push(e)).unwrap().deleted,
        std::slice::from_ref(&promised)
    );
    assert_eq!(
        events,
        [Event::OffloadFileExpired {
            path: promised,
            created: t,
            expired: t + 3_600_000
        }]
    );
}

/// A recorded expiry is honoured up to MAX_TTL_SECONDS after the file's creation, and the
/// creation itself cannot be dated in the future: no header keeps a file forever.
#[test]
fn a_recorded_expiry_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let t = now() - 10_000;
    let max = MAX_TTL_SECONDS * 1000;
    let far = file_at(dir.path(), t, Some(t + 10 * max));
    let (created, expires) = lifetime(
        &far,
        &classify("atlatl", far.rsplit('/').next().unwrap()).unwrap(),
        1000,
        None,
    );
    assert_eq!((created, expires), (t, t + max));
    // A header dated a year ahead of its ULID and its modification time.
    let ulid = Ulid::from_parts(t, 9);
    let future = dir.path().join(format!("atlatl-list-{ulid}.jsonl"));
    let ahead = t + max;
    fs::write(
        &future,
        format!(
            "{{\"type\":\"lro_header\",\"timestamp\":\"{}\",\"expires_at\":\"{}\"}}\n",
            crate::time::format_rfc3339_ms(ahead),
            crate::time::format_rfc3339_ms(ahead + max)
        ),
    )
    .unwrap();
    let (created, expires) = lifetime(future.to_str().unwrap(), &Kind::Offload(ulid), 1000, None);
    assert_eq!(created, t);
    assert_eq!(expires, t + max);
    let config = Config {
        max_files: 0,
        max_bytes: 0,
        ..config(dir.path(), 1)
    };
    assert_eq!(sweep(&config, t + max, &mut |_| {}).unwrap().deleted.len(), 2);
}

/// The expiry a writer records: created + its ttl, the ttl bounded by MAX_TTL_SECONDS.
#[test]
fn writers_promise_their_ttl() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(promised_expiry(&config(dir.path(), 3600), 1000), 3_601_000);
    assert_eq!(promised_expiry(&config(dir.path(), 0), 1000), 1000);
    assert_eq!(
        promised_expiry(&config(dir.path(), u64::MAX), 1000),
        1000 + MAX_TTL_SECONDS * 1000
    );
}

/// Another process's temporary is left alone for TEMPORARY_GRACE_MS at least, however short
/// the sweeper's ttl: it may be a write in progress.
#[test]
fn a_short_ttl_sweeper_leaves_temporaries_for_the_grace_time() {
    let dir = tempfile::tempdir().unwrap();
    let t = now() - 1_000;
    let ulid = Ulid::from_parts(t, 3);
    let tmp = dir.path().join(format!(".atlatl-recall-{ulid}.jsonl.tmp"));
    fs::write(&tmp, "half").unwrap();
    let short = config(dir.path(), 1);
    assert!(sweep(&short, t + 60_000, &mut |_| {}).unwrap().deleted.is_empty());
    assert!(tmp.exists());
    assert!(
        sweep(&short, t + TEMPORARY_GRACE_MS - 1, &mut |_| {})
            .unwrap()
            .deleted
            .is_empty()
    );
    assert_eq!(
        sweep(&short, t + TEMPORARY_GRACE_MS, &mut |_| {})
            .unwrap()
            .deleted
            .len(),
        1
    );
    // A longer ttl than the grace time keeps it longer.
    fs::write(&tmp, "half").unwrap();
    let long = config(dir.path(), 7200);
    assert!(
        sweep(&long, t + TEMPORARY_GRACE_MS, &mut |_| {})
            .unwrap()
            .deleted
            .is_empty()
    );
}

/// Eviction deletes expired files only, oldest first; a write that would need a file still
/// within its recorded expiry fails naming the cap, and deletes nothing more.
#[test]
fn eviction_deletes_only_expired_files() {
    let dir = tempfile::tempdir().unwrap();
    let t = now() - 10_000;
    let expired = file_at(dir.path(), t, Some(t + 1));
    let promised = file_at(dir.path(), t + 1, Some(t + 3_600_000));
    let capped = Config {
        max_files: 2,
        ..config(dir.path(), 3600)
    };
    let mut events = Vec::new();
    make_room(&capped, 1, 10, &[], t + 5_000, &mut |e| events.push(e)).unwrap();
    assert!(
        matches!(&events[..], [Event::OffloadFileEvicted { path, cap, .. }] if *path == expired && cap == "max-files")
    );
    assert!(!std::path::Path::new(&expired).exists());
    // Two more cannot fit: the promised file is not evicted.
    events.clear();
    let err = make_room(&capped, 2, 10, &[], t + 5_000, &mut |e| events.push(e)).unwrap_err();
    assert!(
        err.to_string()
            .contains("cap of 2 files (max_files) is taken by files that have not expired"),
        "{err}"
    );
    assert!(
        err.to_string().contains(&crate::time::format_rfc3339_ms(t + 3_600_000)),
        "{err}"
    );
    assert!(events.is_empty());
    assert!(std::path::Path::new(&promised).exists());
    // Bytes as well: the promised file's bytes count, whatever the caller's ttl.
    let size = fs::metadata(&promised).unwrap().len();
    let bytes = Config {
        max_files: 0,
        max_bytes: size + 10,
        ..config(dir.path(), 1)
    };
    let err = make_room(&bytes, 1, 11, &[], t + 5_000, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("(max_bytes)"), "{err}");
    make_room(&bytes, 1, 10, &[], t + 5_000, &mut |_| {}).unwrap();
}

/// Temporaries count toward the caps (they are other writers' reservations); this call's own
/// are counted but never evicted.
#[test]
fn temporaries_count_toward_the_caps() {
    let dir = tempfile::tempdir().unwrap();
    let t = now();
    let theirs = dir
        .path()
        .join(format!(".atlatl-recall-{}.jsonl.tmp", Ulid::from_parts(t, 1)));
    let mine = format!(".atlatl-recall-{}.jsonl.tmp", Ulid::from_parts(t, 2));
    fs::write(&theirs, "x").unwrap();
    fs::write(dir.path().join(&mine), "y").unwrap();
    let capped = Config {
        max_files: 1,
        ..config(dir.path(), 1)
    };
    let err = make_room(&capped, 0, 0, std::slice::from_ref(&mine), t + 5_000, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("(max_files)"), "{err}");
    assert!(theirs.exists() && dir.path().join(&mine).exists());
    // Once the other writer's grace time has passed, its temporary is evicted.
    make_room(&capped, 0, 0, &[mine], t + TEMPORARY_GRACE_MS, &mut |_| {}).unwrap();
    assert!(!theirs.exists());
}
