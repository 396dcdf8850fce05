//! What every MCP integration of the component does, written once: `lro proxy` (a message relay
//! in front of any server) and [`crate::rmcp::WithLro`] (a wrapper of an rmcp server) both
//! start from an [`Offloader`].
//!
//! An integration offers `lro_extract` (the spec's native extraction), so `extract_tool` is
//! always on; it lists the tool with the component's own definition, answers it with
//! [`Offloader::extract`], passes each complete `tools/call` result through
//! [`Runtime::intercept`](crate::Runtime::intercept), serves the offloaded files as resources
//! (`resources`, with the `rmcp` feature), and sweeps expired files at start
//! ([`Offloader::prepare`]) and then every [`Offloader::sweep_interval`] ([`Sweeper`], with the
//! `rmcp` feature).
//!
//! Component calls block for as long as the component runs (a filter may take up to its
//! deadline) and the component's WASI layer runs its own async executor, so in an async server
//! make them on a blocking thread (`tokio::task::spawn_blocking`), never on the executor.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{Config, Error, Runtime};

pub mod handles;
#[cfg(feature = "rmcp")]
pub mod resources;
#[cfg(feature = "store")]
mod stored;
#[cfg(feature = "store")]
pub use stored::Stored;

/// The name of the extraction tool, as the component defines it.
pub const EXTRACT_TOOL: &str = "lro_extract";

/// The component, the configuration and the tool definition an MCP integration serves with.
#[derive(Clone)]
pub struct Offloader {
    /// The component.
    pub runtime: Runtime,
    /// The offload configuration, `extract_tool` on; `output_dir` is absolute and canonical
    /// (so a descriptor's `file_path` and a path the integration builds agree).
    pub config: Config,
    /// `lro_extract` as `tools/list` lists it: the component's definition, JSON text.
    pub tool_definition: String,
    /// Name offloaded files by their `lro://offload/` handle instead of their path, for
    /// clients that cannot read this machine's disk ([`handles`]). Off after
    /// [`Offloader::prepare`].
    pub handles: bool,
    /// The object store its offloads are also kept in, so that other replicas answer for them
    /// ([`crate::store`]); None after [`Offloader::prepare`].
    #[cfg(feature = "store")]
    pub store: Option<Stored>,
}

/// What `lro_extract` answers: the text of a `CallToolResult`'s one text block, and whether it
/// is an error result (a refusal or a filter error the model can read and correct).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractAnswer {
    /// The extracted values, or `kind: message` for an error.
    pub text: String,
    /// True for a refusal or a filter error.
    pub is_error: bool,
}

impl Offloader {
    /// An offloader for `config` with `extract_tool` on, the output directory (empty: the
    /// default, [`crate::default_output_dir`]) created owner-only and made canonical, and
    /// expired files swept. It calls the component: see the module documentation.
    pub fn prepare(runtime: Runtime, mut config: Config) -> Result<Self, Error> {
        config.extract_tool = true;
        if config.output_dir.is_empty() {
            config.output_dir = crate::default_output_dir().to_string_lossy().into_owned();
        }
        // Owner-only, as every offloading call would create it; the sweep then checks it.
        use std::os::unix::fs::DirBuilderExt;
        if let Err(e) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&config.output_dir)
        {
            return Err(Error::Directory {
                path: config.output_dir.clone().into(),
                message: e.to_string(),
            });
        }
        runtime.sweep(&config, now_ms())?;
        if let Ok(canonical) = std::fs::canonicalize(&config.output_dir) {
            config.output_dir = canonical.to_string_lossy().into_owned();
        }
        let tool_definition = runtime.tool_definition()?;
        Ok(Offloader {
            runtime,
            config,
            tool_definition,
            handles: false,
            #[cfg(feature = "store")]
            store: None,
        })
    }

    /// Intercepts a tool's result ([`Runtime::intercept`](crate::Runtime::intercept)) with this
    /// offloader's configuration; with a [`Offloader::store`], the files are written through to
    /// it before the answer, and a store that cannot take them degrades the result (the spec's
    /// fallback, an `offload-write-failed` event naming the store's error) and leaves no file.
    /// With [`Offloader::handles`] on, an offloaded result names its files by handle
    /// ([`Offloader::name_by_handles`]); `files` keeps their paths.
    pub fn intercept(&self, call: &crate::ToolCall) -> Result<crate::ToolOutcome, Error> {
        let outcome = self.runtime.intercept(&self.config, call)?;
        #[cfg(feature = "store")]
        if let Some(problem) = self.write_through(&outcome) {
            return self.runtime.intercept_refused(&self.config, call, None, problem);
        }
        Ok(self.named(outcome))
    }

    /// `outcome` with an offloaded result's files named as [`Offloader::handles`] says.
    fn named(&self, mut outcome: crate::ToolOutcome) -> crate::ToolOutcome {
        if let crate::ToolOutcome::Offloaded(offloaded) = &mut outcome
            && self.handles
        {
            offloaded.result = self.name_by_handles(&offloaded.result, &offloaded.files);
        }
        outcome
    }

    /// [`Offloader::intercept`] for a result held in a file of the offload directory
    /// ([`Runtime::intercept_file`](crate::Runtime::intercept_file)).
    pub fn intercept_file(
        &self,
        call: &crate::ToolCall,
        source: &crate::ResultFile,
    ) -> Result<crate::ToolOutcome, Error> {
        let outcome = self.runtime.intercept_file(&self.config, call, source)?;
        #[cfg(feature = "store")]
        if let Some(problem) = self.write_through(&outcome) {
            return self
                .runtime
                .intercept_refused(&self.config, call, Some(source), problem);
        }
        Ok(self.named(outcome))
    }

    /// How often to sweep while serving: every `ttl/2`, at least once a second and at most once
    /// an hour, so files die on time in a server that runs for days.
    pub fn sweep_interval(&self) -> Duration {
        Duration::from_secs(self.config.ttl_seconds / 2).clamp(Duration::from_secs(1), Duration::from_secs(3600))
    }

    /// Deletes the expired files now (in the directory; the store's are
    /// [`Offloader::sweep_store`]'s).
    pub fn sweep(&self) -> Result<crate::SweepReport, Error> {
        self.runtime.sweep(&self.config, now_ms())
    }

    /// Answers a call of `lro_extract` with these `arguments` (JSON text, passed as they came so
    /// the component checks them against its own schema).
    /// With [`Offloader::handles`] on, `file_path` may be a handle, and an answer names files
    /// by their handles.
    pub fn extract(&self, arguments: &str) -> ExtractAnswer {
        let resolved;
        let arguments = if self.handles {
            match self.resolve_arguments(arguments) {
                Ok(arguments) => {
                    resolved = arguments;
                    resolved.as_str()
                }
                Err(answer) => return answer,
            }
        } else {
            arguments
        };
        #[cfg(feature = "store")]
        if let Err(answer) = self.fetch_named(arguments) {
            return answer;
        }
        match self.runtime.call_tool(&self.config, arguments) {
            Ok(extracted) => ExtractAnswer {
                text: extracted.text,
                is_error: false,
            },
            Err(e) if self.handles => ExtractAnswer {
                text: self.paths_as_handles(&error_text(&e)),
                is_error: true,
            },
            Err(e) => ExtractAnswer {
                text: error_text(&e),
                is_error: true,
            },
        }
    }
}

/// The periodic sweep of a serving integration, on the tokio runtime it was started on.
/// Dropping it stops the sweep.
#[cfg(feature = "rmcp")]
pub struct Sweeper(tokio::task::JoinHandle<()>);

#[cfg(feature = "rmcp")]
impl Sweeper {
    /// Sweeps `offloader`'s directory every [`Offloader::sweep_interval`] from now on (the
    /// first sweep was [`Offloader::prepare`]'s), on a blocking thread; a failed sweep is
    /// reported on standard error and the next one tried. None outside a tokio runtime.
    pub fn start(offloader: &Offloader) -> Option<Self> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let offloader = offloader.clone();
        Some(Sweeper(handle.spawn(async move {
            let mut ticks = tokio::time::interval(offloader.sweep_interval());
            ticks.tick().await; // the first tick is now
            loop {
                ticks.tick().await;
                let this = offloader.clone();
                let swept = tokio::task::spawn_blocking(move || {
                    #[cfg(feature = "store")]
                    if let Some(Err(e)) = this.sweep_store() {
                        eprintln!("lro: sweeping expired offloads from {e}");
                    }
                    this.sweep()
                })
                .await;
                if let Ok(Err(e)) = swept {
                    eprintln!("lro: sweeping expired files: {e}");
                }
            }
        })))
    }
}

#[cfg(feature = "rmcp")]
impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `text` cut to `max` characters, saying how long it was: what an error message quotes of a
/// client's input, which may be megabytes.
pub fn clip(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}... ({count} characters in all)")
}

#[cfg(feature = "rmcp")]
impl ExtractAnswer {
    /// The answer as the `CallToolResult` every Rust integration sends: one text block, and
    /// `isError: true` for a refusal or a filter error (no `isError` otherwise, which MCP
    /// reads as false).
    pub fn into_result(self) -> rmcp::model::CallToolResult {
        use rmcp::model::{CallToolResult, ContentBlock};
        let mut result = CallToolResult::success(vec![ContentBlock::text(self.text)]);
        result.is_error = self.is_error.then_some(true);
        result
    }
}

#[cfg(feature = "rmcp")]
impl Offloader {
    /// `lro_extract` as rmcp's `Tool`, from the component's definition; an error names what did
    /// not fit (a component and an rmcp version that do not fit together).
    pub fn extract_tool(&self) -> Result<rmcp::model::Tool, String> {
        serde_json::from_str(&self.tool_definition).map_err(|e| e.to_string())
    }
}

/// An error as every host's `lro_extract` reports it: `kind: message`.
pub fn error_text(error: &Error) -> String {
    match error.component_message() {
        Some(message) => format!("{}: {message}", error.kind()),
        None => format!("{}: {error}", error.kind()),
    }
}

/// Milliseconds since the Unix epoch, the component's `timestamp-ms` (the guest's clock is
/// `lro_core::time::now_ms`, read the same way).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
