//! Every recipe command of a descriptor, run as a shell command with the system `jq` on the
//! file written, succeeds, at every detail level.

use std::process::Command;

use crate::common::*;
use lro_host::{Operation, Outcome};
use serde_json::Value;

#[test]
fn every_recipe_runs_with_system_jq_at_every_detail_level() {
    assert_reference_jq();
    for detail in DETAILS {
        let dir = crate::common::tempdir().unwrap();
        let records = sample(core_detail(detail), 500, true);
        let outcome = RUNTIME
            .offload(
                &config(dir.path(), 1600),
                &request(Operation::Recall, Some(detail), &records),
            )
            .unwrap();
        let Outcome::Offloaded(out) = outcome else {
            panic!("{outcome:?}")
        };
        let descriptor: Value = serde_json::from_str(&out.descriptor).unwrap();
        let recipes = descriptor["jq_recipes"].as_array().unwrap();
        assert_eq!(recipes.len(), 10);
        for (i, recipe) in recipes.iter().enumerate() {
            let command = recipe["command"].as_str().unwrap();
            let run = Command::new("sh").args(["-c", command]).output().unwrap();
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(
                run.status.success() && stderr.is_empty(),
                "{detail:?} recipe {}: {command}\n{stderr}",
                i + 1
            );
            let stdout = String::from_utf8(run.stdout).unwrap();
            match i + 1 {
                // One tab-separated line per record.
                1 => assert_eq!(stdout.lines().count(), 500),
                // Counts by namespace add up to every record.
                6 => {
                    let groups: Value = serde_json::from_str(&stdout).unwrap();
                    let total: u64 = groups
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|g| g["count"].as_u64().unwrap())
                        .sum();
                    assert_eq!(total, 500);
                }
                8 => assert_eq!(
                    serde_json::from_str::<Value>(&stdout)
                        .unwrap()
                        .as_array()
                        .unwrap()
                        .len(),
                    500
                ),
                // The sample's tags include the default "TAG", so the filter finds some.
                7 => assert!(!stdout.is_empty()),
                _ => {}
            }
        }
    }
}
