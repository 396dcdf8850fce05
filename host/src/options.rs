//! How a [`Runtime`](crate::Runtime) runs calls: limits, the compiled-component cache, the
//! event sink.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::Event;

/// Receives every event the component emits, during the call that causes it.
pub type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// Limits and caching for a [`Runtime`](crate::Runtime).
#[derive(Clone)]
pub struct Options {
    /// Wall-clock limit for every call that runs no filter (offload, intercept, sweep,
    /// rewrite_tools, recipes, estimate, tool_definition). Default: 10 s.
    pub deadline: Duration,
    /// Limit on the component's linear memory for those calls, in bytes. Default: 2 GiB.
    pub memory: usize,
    /// Wall-clock limit for one extraction, `call_tool` or query, which run an untrusted filter.
    /// Default: 1 s, so a runaway filter is stopped well inside two seconds even on a loaded
    /// machine (a bulk copy inside the component and freeing its memory add to the deadline).
    pub filter_deadline: Duration,
    /// Memory limit for one extraction, `call_tool` or query, in bytes. Default: 512 MiB (a slurped file of
    /// 50,000 records takes about 150 MiB).
    pub filter_memory: usize,
    /// Where to keep the compiled component between processes; None compiles it every time
    /// (about a second). See [`Options::default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Receives the component's events.
    pub events: Option<EventSink>,
    /// How many instances to keep for the calls that run no user filter and carry at most 1 MiB
    /// of arguments (offload, intercept, sweep, rewrite_tools, recipes, estimate,
    /// tool_definition, defaults): such a call reuses a kept instance made for the same
    /// directory (the same one, not only the same path), permissions and memory limit, instead
    /// of instantiating the component (docs/HOSTS.md, step 2). An instance that trapped is never
    /// kept. 0 gives every call a fresh instance. Default: 4.
    pub kept_instances: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            deadline: Duration::from_secs(10),
            memory: 2 << 30,
            filter_deadline: Duration::from_secs(1),
            filter_memory: 512 << 20,
            cache_dir: None,
            events: None,
            kept_instances: 4,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("deadline", &self.deadline)
            .field("memory", &self.memory)
            .field("filter_deadline", &self.filter_deadline)
            .field("filter_memory", &self.filter_memory)
            .field("cache_dir", &self.cache_dir)
            .field("events", &self.events.is_some())
            .field("kept_instances", &self.kept_instances)
            .finish()
    }
}

impl Options {
    /// `$LRO_CACHE_DIR`, else `$XDG_CACHE_HOME/lro`, else `$HOME/.cache/lro`; None when the
    /// chosen variable is set but empty, or none is set.
    pub fn default_cache_dir() -> Option<PathBuf> {
        let var = |name: &str| std::env::var_os(name);
        if let Some(dir) = var("LRO_CACHE_DIR") {
            return (!dir.is_empty()).then(|| PathBuf::from(dir));
        }
        if let Some(dir) = var("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("lro"));
        }
        var("HOME")
            .filter(|d| !d.is_empty())
            .map(|home| PathBuf::from(home).join(".cache/lro"))
    }
}
