//! An [`Offloader`] with a store ([`crate::store`]): offloads written through to it, files read
//! back from it when a call names one this replica does not have, and its expired objects
//! swept.

use std::path::Path;
use std::sync::Arc;

use super::{ExtractAnswer, Offloader, now_ms};
use crate::ToolOutcome;
use crate::store::{Store, StoreError};

/// The store an offloader keeps its offloads in, and its part of it.
#[derive(Clone, Debug)]
pub struct Stored {
    /// The store, shared by every offloader of the process.
    pub store: Arc<Store>,
    /// This offloader's keys' folder under the store's prefix: the principal's name for
    /// `lro proxy --listen`, empty for a server of one principal.
    pub scope: String,
    /// The offloader's periodic sweep ([`super::Sweeper`]) also deletes the expired objects
    /// of its scope. False where one task sweeps the whole store for every offloader (the
    /// proxy), so that each session's sweep does not list the store again.
    pub sweeps: bool,
}

impl Offloader {
    /// Writes an offloaded result's files through to the store; on failure deletes them (here
    /// and there) and returns why, for the component to degrade the result with.
    pub(super) fn write_through(&self, outcome: &ToolOutcome) -> Option<String> {
        let (Some(stored), ToolOutcome::Offloaded(offloaded)) = (&self.store, outcome) else {
            return None;
        };
        let mut uploaded = Vec::new();
        let mut failed = None;
        for file in &offloaded.files {
            match stored.store.put(&stored.scope, Path::new(file)) {
                Ok(()) => uploaded.push(file.clone()),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let failed = failed?;
        for file in &offloaded.files {
            let _ = std::fs::remove_file(file);
        }
        // Only what went up: a store that failed one request may hang on the next.
        stored.store.delete(&stored.scope, &uploaded);
        Some(failed.to_string())
    }

    /// Makes sure the file `name` of the offload directory is here, reading it from the store
    /// when it is not. A store that cannot be reached is an error result saying so, never
    /// confused with a missing file (which the component then reports as it always does).
    pub(super) fn fetch(&self, name: &str) -> Result<(), ExtractAnswer> {
        let Some(stored) = &self.store else {
            return Ok(());
        };
        match stored.store.fetch(
            &stored.scope,
            Path::new(&self.config.output_dir),
            name,
            &self.config.prefix,
        ) {
            Ok(_) => Ok(()),
            Err(e) => Err(ExtractAnswer {
                text: unavailable(&e),
                is_error: true,
            }),
        }
    }

    /// [`Offloader::fetch`] for the file `lro_extract`'s arguments name, when it is one of the
    /// offload directory's.
    pub(super) fn fetch_named(&self, arguments: &str) -> Result<(), ExtractAnswer> {
        if self.store.is_none() {
            return Ok(());
        }
        let Ok(serde_json::Value::Object(object)) = serde_json::from_str::<serde_json::Value>(arguments) else {
            return Ok(());
        };
        let Some(path) = object.get("file_path").and_then(|p| p.as_str()).map(Path::new) else {
            return Ok(());
        };
        match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
            (Some(dir), Some(name)) if dir == Path::new(&self.config.output_dir) => self.fetch(name),
            _ => Ok(()),
        }
    }

    /// Deletes this offloader's expired objects from the store; None without a store, or when
    /// [`Stored::sweeps`] is false.
    pub fn sweep_store(&self) -> Option<Result<u32, StoreError>> {
        let stored = self.store.as_ref().filter(|s| s.sweeps)?;
        let ttl_ms = self.config.ttl_seconds.saturating_mul(1000);
        Some(
            stored
                .store
                .sweep(&stored.scope, 0, &self.config.prefix, ttl_ms, now_ms()),
        )
    }
}

/// What a call that needs a stored file answers when it cannot be had.
pub(super) fn unavailable(error: &StoreError) -> String {
    match error {
        StoreError::Local { .. } => {
            eprintln!("lro: reading an offload back from the store: {error}");
            "failed: the offload is in the store but could not be copied to this server's disk; tell the server's operator".to_owned()
        }
        _ => format!(
            "unavailable: the offload could not be read from the store ({error}); it is kept there, so call again in a moment"
        ),
    }
}
