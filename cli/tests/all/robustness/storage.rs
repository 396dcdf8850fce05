//! The storage caps, and load from several processes.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::common::*;
use crate::robustness::*;
use lro_host::{Config, Event, Operation, Outcome};

/// Expired files are evicted, oldest first; files within the expiry they recorded never are.
#[test]
fn the_directory_stays_within_its_caps_evicting_expired_files_oldest_first() {
    let dir = private_dir();
    let (runtime, events) = with_events();
    // ttl 0: each file has expired as soon as it is written, so each may be evicted.
    let config = Config {
        max_files: 5,
        ttl_seconds: 0,
        ..config(dir.path(), 100)
    };
    let paths: Vec<String> = (0..12)
        .map(|_| {
            offloaded_path(
                runtime
                    .offload(&config, &request(Operation::Recall, None, &light(20)))
                    .unwrap(),
            )
        })
        .collect();
    // Oldest by ULID: files made in the same millisecond are ordered by the ULID's random part,
    // not by when they were made, so the expectation is the names sorted, not creation order.
    let mut by_ulid = paths.clone();
    by_ulid.sort();
    let mut left = names_ending(dir.path(), ".jsonl");
    left.sort();
    let newest: Vec<String> = by_ulid[7..]
        .iter()
        .map(|p| Path::new(p).file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, newest);
    let evicted: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::OffloadFileEvicted(e) if e.cap == "max-files" => Some(e.path.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, by_ulid[..7]);

    // A file still within its expiry is never evicted: the write degrades, naming the cap.
    let promised = Config {
        ttl_seconds: 3600,
        ..config.clone()
    };
    let kept: Vec<String> = (0..5)
        .map(|_| {
            offloaded_path(
                runtime
                    .offload(&promised, &request(Operation::Recall, None, &light(20)))
                    .unwrap(),
            )
        })
        .collect();
    let Outcome::Degraded(degraded) = runtime
        .offload(&config, &request(Operation::Recall, None, &light(20)))
        .unwrap()
    else {
        panic!("no room without deleting a file within its expiry")
    };
    assert!(
        degraded
            .warning
            .contains("(max_files) is taken by files that have not expired"),
        "{}",
        degraded.warning
    );
    let mut left: Vec<String> = names_ending(dir.path(), ".jsonl")
        .iter()
        .map(|n| format!("{}/{n}", dir.path().display()))
        .collect();
    left.sort();
    let mut kept_sorted = kept.clone();
    kept_sorted.sort();
    assert_eq!(left, kept_sorted);
    let size = std::fs::metadata(&kept[0]).unwrap().len();
    for path in &kept {
        std::fs::remove_file(path).unwrap();
    }

    // A byte cap of about three files keeps three; a result larger than the cap degrades.
    let config = Config {
        max_files: 0,
        max_bytes: size * 3 + size / 2,
        ..config
    };
    for _ in 0..4 {
        runtime
            .offload(&config, &request(Operation::Recall, None, &light(20)))
            .unwrap();
    }
    assert_eq!(names_ending(dir.path(), ".jsonl").len(), 3);
    let Outcome::Degraded(degraded) = runtime
        .offload(&config, &request(Operation::Recall, None, &light(200)))
        .unwrap()
    else {
        panic!("over the cap by itself")
    };
    assert!(degraded.warning.contains("(max_bytes)"), "{}", degraded.warning);
    assert_eq!(
        names_ending(dir.path(), ".jsonl").len(),
        3,
        "nothing evicted for a result that cannot fit"
    );
}

// ---- processes sharing one directory (issue 34, item 3) -----------------------------------

/// `lro --events offload --threshold 10 --output-dir DIR FLAGS... -` started in its own process,
/// waiting for its records on stdin (it loads the component first).
fn start_offload(dir: &Path, flags: &[&str]) -> std::process::Child {
    lro()
        .args(["--events", "offload", "--threshold", "10", "--output-dir"])
        .arg(dir)
        .args(flags)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Hands a started offload its records; returns what it printed (the result) and its events.
fn finish_offload(
    mut child: std::process::Child,
    records: &[serde_json::Value],
) -> (serde_json::Value, Vec<serde_json::Value>) {
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(serde_json::to_string(records).unwrap().as_bytes())
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "lro offload: {stderr}");
    let events = stderr.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    (serde_json::from_slice(&out.stdout).unwrap(), events)
}

fn offload_process(
    dir: &Path,
    flags: &[&str],
    records: &[serde_json::Value],
) -> (serde_json::Value, Vec<serde_json::Value>) {
    finish_offload(start_offload(dir, flags), records)
}

/// Two proxies on the default directory, one with `--ttl 3600`, the other with `--ttl 1` and
/// `--max-files 2`: the short-lived one neither sweeps nor evicts the other's files before the
/// expiry they recorded; when its own write cannot fit, it degrades, naming the cap.
#[test]
fn a_short_ttl_process_leaves_a_long_ttl_processs_files_alone() {
    let dir = private_dir();
    let (first, _) = offload_process(dir.path(), &["--ttl", "3600"], &light(20));
    let (second, _) = offload_process(dir.path(), &["--ttl", "3600"], &light(21));
    let kept: Vec<String> = [&first, &second]
        .iter()
        .map(|d| d["file_path"].as_str().unwrap().to_owned())
        .collect();
    // A sweeper whose own ttl has long passed for these files (as if minutes went by).
    let later = lro_core::time::format_rfc3339_ms(lro_core::time::now_ms() + 600_000);
    let out = lro()
        .args(["sweep", "--ttl", "1", "--now", &later, "--output-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["deleted"], serde_json::json!([]), "{report}");
    assert_eq!(report["kept"], 2);

    // The real ttl of 1 s passes too, then a writer capped at two files comes along.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (degraded, events) = offload_process(dir.path(), &["--ttl", "1", "--max-files", "2"], &light(22));
    assert_eq!(degraded["truncated"], true, "{degraded}");
    let warning = degraded["lro_warning"].as_str().unwrap();
    assert!(warning.contains("(max_files)"), "{warning}");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "OffloadWriteFailed"
                && e["error"].as_str().is_some_and(|m| m.contains("(max_files)"))),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| e["event"] == "OffloadFileEvicted"), "{events:?}");
    for path in &kept {
        assert!(Path::new(path).exists(), "{path} was deleted before its expiry");
    }
    assert_eq!(names_ending(dir.path(), ".jsonl").len(), 2);
    assert!(names_ending(dir.path(), ".tmp").is_empty());

    // Both are still extractable by the short-lived process.
    let out = lro()
        .args(["extract", &kept[0], "--recipe", "4", "--ttl", "1", "--output-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 20);

    // Its own expired file is evicted, oldest first, when the capped writer needs room.
    let (own, _) = offload_process(dir.path(), &["--ttl", "1", "--max-files", "3"], &light(23));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (fresh, events) = offload_process(dir.path(), &["--ttl", "1", "--max-files", "3"], &light(24));
    assert_eq!(fresh["offloaded"], true, "{fresh}");
    let evicted: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "OffloadFileEvicted")
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(evicted, [own["file_path"].as_str().unwrap()]);
    for path in &kept {
        assert!(Path::new(path).exists(), "{path} was evicted before its expiry");
    }
    let header: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&kept[0]).unwrap().lines().next().unwrap()).unwrap();
    let created = lro_core::time::parse_rfc3339_ms(header["timestamp"].as_str().unwrap()).unwrap();
    assert_eq!(
        header["expires_at"],
        lro_core::time::format_rfc3339_ms(created + 3_600_000),
        "the header records the writer's promise"
    );
}

/// Many processes at once, each capped at five files and N bytes: the directory never ends up
/// holding more, whatever the interleaving, and no temporary is left behind.
#[test]
fn concurrent_processes_keep_the_directory_within_its_caps() {
    const PROCESSES: usize = 40;
    let dir = private_dir();
    let size_of_one = {
        let probe = private_dir();
        let (d, _) = offload_process(probe.path(), &[], &light(30));
        std::fs::metadata(d["file_path"].as_str().unwrap()).unwrap().len()
    };
    let max_bytes = size_of_one * 3 + size_of_one / 2;
    let max_bytes_flag = max_bytes.to_string();
    // Five files expired already (written with ttl 0 through the library: the command refuses
    // a ttl of 0), which any writer may evict, while none may evict another's promised file.
    let (runtime, _) = with_events();
    let expired = Config {
        ttl_seconds: 0,
        ..config(dir.path(), 10)
    };
    for _ in 0..5 {
        offloaded_path(
            runtime
                .offload(&expired, &request(Operation::Recall, None, &light(30)))
                .unwrap(),
        );
    }
    // Every process loads the component, then waits for its records: handing them over all at
    // once makes the writes as simultaneous as they can be.
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            start_offload(
                dir.path(),
                &["--ttl", "3600", "--max-files", "5", "--max-bytes", &max_bytes_flag],
            )
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let records = light(30);
    let threads: Vec<_> = children
        .into_iter()
        .map(|child| {
            let records = records.clone();
            std::thread::spawn(move || finish_offload(child, &records))
        })
        .collect();
    let mut offloaded = 0;
    for t in threads {
        let (result, _) = t.join().unwrap();
        if result["offloaded"] == true {
            offloaded += 1;
        } else {
            assert_eq!(result["truncated"], true, "{result}");
        }
    }
    assert!(offloaded >= 1, "at least the first writer fits");
    let files = names_ending(dir.path(), ".jsonl");
    let bytes: u64 = files
        .iter()
        .map(|n| std::fs::metadata(dir.path().join(n)).unwrap().len())
        .sum();
    assert!(files.len() <= 5, "{} files: {files:?}", files.len());
    assert!(bytes <= max_bytes, "{bytes} bytes, over the cap of {max_bytes}");
    assert!(names_ending(dir.path(), ".tmp").is_empty());
    println!(
        "{offloaded} of {PROCESSES} offloaded; {} files, {bytes} bytes left",
        files.len()
    );
}

// ---- load ----------------------------------------------------------------------------------

const LOAD_PROCESSES: usize = 8;
const LOAD_OFFLOADS: usize = 200;

/// 8 processes × 200 offloads into one directory: every name unique, nothing lost, nothing
/// half-written. The processes are this test binary run again with `LRO_LOAD_DIR` set.
#[test]
fn eight_processes_offload_into_one_directory_without_loss() {
    if let Ok(dir) = std::env::var("LRO_LOAD_DIR") {
        let config = Config {
            max_files: 0,
            ..config(Path::new(&dir), 100)
        };
        for i in 0..LOAD_OFFLOADS {
            let records = light(10 + i % 20);
            let path = offloaded_path(
                RUNTIME
                    .offload(&config, &request(Operation::Recall, None, &records))
                    .unwrap(),
            );
            println!("OFFLOADED {} {path}", records.len());
        }
        return;
    }
    let dir = private_dir();
    let started = Instant::now();
    let children: Vec<_> = (0..LOAD_PROCESSES)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "robustness::storage::eight_processes_offload_into_one_directory_without_loss",
                    "--nocapture",
                ])
                .env("LRO_LOAD_DIR", dir.path())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut written = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            if let Some(rest) = line.strip_prefix("OFFLOADED ") {
                let (count, path) = rest.split_once(' ').unwrap();
                written.push((count.parse::<usize>().unwrap(), path.to_owned()));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(written.len(), LOAD_PROCESSES * LOAD_OFFLOADS);
    let mut unique: Vec<&String> = written.iter().map(|(_, p)| p).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), written.len(), "every name is unique");
    for (count, path) in &written {
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(text.lines().count(), count + 1, "{path} is whole");
        assert!(text.ends_with('\n'));
    }
    assert_eq!(names_ending(dir.path(), ".jsonl").len(), written.len());
    assert!(names_ending(dir.path(), ".tmp").is_empty());
    println!(
        "load: {} offloads from {LOAD_PROCESSES} processes in {seconds:.1} s ({:.0} per second, debug build), 0 lost",
        written.len(),
        written.len() as f64 / seconds
    );
}
