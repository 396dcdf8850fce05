//! The store's local cache: which files of the offload directory are copies of stored
//! objects, and which of them to delete to keep within its bounds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A file used this recently is never deleted by the cache: a call that has just made sure of
/// it is about to read it.
const IN_USE: Duration = Duration::from_secs(60);

/// The local files known to be in the store (written through, or read back), for the cache's
/// bound: only these are ever deleted by it.
#[derive(Default)]
pub(super) struct Cache {
    limit: u64,
    limit_files: usize,
    bytes: u64,
    tick: u64,
    files: HashMap<PathBuf, (u64, u64, Option<std::time::Instant>)>,
}

impl Cache {
    /// An empty cache of at most `limit` bytes in `limit_files` files.
    pub(super) fn new(limit: u64, limit_files: usize) -> Cache {
        Cache {
            limit,
            limit_files,
            ..Cache::default()
        }
    }

    /// Records `path` (of `size` bytes, in the store) as used now, then deletes the files used
    /// least recently until the rest fit the limits; a file used within [`IN_USE`] is never
    /// deleted here, so the limits may be passed for that long.
    pub(super) fn used(&mut self, path: &Path, size: u64) {
        self.used_at(path, size, std::time::Instant::now());
    }

    /// [`Cache::used`] at the time `now`.
    pub(super) fn used_at(&mut self, path: &Path, size: u64, now: std::time::Instant) {
        self.tick += 1;
        if let Some((old, ..)) = self.files.insert(path.to_owned(), (size, self.tick, Some(now))) {
            self.bytes -= old;
        }
        self.bytes += size;
        while self.bytes > self.limit || self.files.len() > self.limit_files {
            let oldest = self
                .files
                .iter()
                .filter(|(_, (_, _, at))| at.is_none_or(|at| now.duration_since(at) >= IN_USE))
                .min_by_key(|(_, (_, tick, _))| *tick)
                .map(|(p, _)| p.clone());
            let Some(oldest) = oldest else { break };
            if let Some((size, ..)) = self.files.remove(&oldest) {
                self.bytes -= size;
            }
            // Gone already (the sweep, or a client's read of it ended): nothing to free.
            let _ = std::fs::remove_file(&oldest);
        }
    }

    /// Records a use of `path` if it is one of the cache's (a file already here that was never
    /// written through or read back, say from before the store, is not the cache's to delete).
    pub(super) fn touch(&mut self, path: &Path) {
        self.tick += 1;
        if let Some(entry) = self.files.get_mut(path) {
            entry.1 = self.tick;
            entry.2 = Some(std::time::Instant::now());
        }
    }
}
