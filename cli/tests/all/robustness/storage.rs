//! The storage caps, and load from several processes.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::common::*;
use crate::robustness::*;
use lro_host::{Config, Event, Operation, Outcome};

#[test]
fn the_directory_stays_within_its_caps_evicting_the_oldest_first() {
    let dir = private_dir();
    let (runtime, events) = with_events();
    let config = Config {
        max_files: 5,
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

    // A byte cap of about three files keeps three; a result larger than the cap degrades.
    let size = std::fs::metadata(&paths[11]).unwrap().len();
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
