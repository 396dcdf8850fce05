//! The store's parts that need no S3 server: its URL, and its cache's bound. A real S3
//! server drives the rest (tests/e2e/test_store.py, cli/tests/all/rmcp_store.rs).

use super::cache::Cache;
use super::parse_url;

#[test]
fn a_store_url_is_a_bucket_and_a_clean_prefix() {
    assert_eq!(parse_url("s3://offloads").unwrap(), ("offloads".into(), String::new()));
    assert_eq!(
        parse_url("s3://offloads/team/a/").unwrap(),
        ("offloads".into(), "team/a".into())
    );
    for wrong in [
        "s3://",
        "s3://Upper",
        "s3://ab",
        "gs://offloads",
        "s3://b-/x",
        "s3://offloads/../x",
        "/tmp/dir",
    ] {
        let e = parse_url(wrong).unwrap_err().to_string();
        assert!(e.starts_with(&format!("--store {wrong}: ")), "{e}");
        assert!(e.contains("expected s3://BUCKET"), "{e}");
    }
}

#[test]
fn the_cache_deletes_the_least_recently_used_files_beyond_its_limit_but_never_one_in_use() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| {
        let path = dir.path().join(n);
        std::fs::write(&path, [0u8; 10]).unwrap();
        path
    };
    let t0 = Instant::now();
    let later = |s: u64| t0 + Duration::from_secs(s);
    let (a, b, c) = (file("a"), file("b"), file("c"));
    let mut cache = Cache::new(25, 10);
    cache.used_at(&a, 10, later(0));
    cache.used_at(&b, 10, later(1));
    cache.used_at(&c, 10, later(2));
    assert!(
        a.exists() && b.exists() && c.exists(),
        "all three were used within a minute: none goes yet"
    );
    cache.used_at(&a, 10, later(100)); // a is now the more recent
    assert!(a.exists() && c.exists());
    assert!(!b.exists(), "b was used least recently");
    let big = file("big");
    cache.used_at(&big, 100, later(200));
    assert!(big.exists(), "the file just used stays, even alone above the limit");
    assert!(!a.exists() && !c.exists());

    let mut counted = Cache::new(u64::MAX, 2);
    let (d, e, f, g) = (file("d"), file("e"), file("f"), file("g"));
    for (i, path) in [&d, &e, &f].into_iter().enumerate() {
        counted.used_at(path, 10, later(300 + 100 * i as u64));
    }
    assert!(!d.exists() && e.exists() && f.exists(), "at most two files are kept");
    // A file that was here before, never written through nor read back, is not the
    // cache's: a use of it counts nothing, and nothing deletes it.
    counted.touch(&g);
    counted.used_at(&d, 10, later(1000));
    assert!(g.exists());
}
