//! Large Result Offloading in plain Rust: the logic the `lro` WebAssembly component exports.
//!
//! This crate never calls WIT imports: the component (`guest/`) converts its WIT types to the
//! ones here and passes events through a closure, so everything here also runs, and is tested,
//! as ordinary Rust. Files are read and written with `std::fs`, which the component lowers to
//! `wasi:filesystem` inside the one directory the host preopened.
//!
//! Modules follow the WIT interfaces they implement:
//!
//! - `interceptor`: [`offload`](mod@offload) (the record-level `offload`), [`mcp`] (the
//!   MCP-level `intercept` and `rewrite-tools`), [`recipes`] (`recipes`: the jq library
//!   descriptors offer) and [`estimate`](mod@estimate) (`estimate`).
//! - `extractor`: [`extractor`] (`extract`, `tool-definition`, `call-tool`, `query`), over [`jq`]
//!   (jaq with jq 1.6's behaviour) and [`plan`] (what of each record a filter reads).
//! - `custodian`: [`custodian`] (`sweep`, and the storage caps every write keeps).
//! - `configuration`: [`Config::default`] (`defaults`) and [`layers`] (`load`: a user's file,
//!   environment, flags and arguments over it).
//!
//! Shared by them: [`json_text`] (the hand-written scanners of JSON text), [`time`] (RFC 3339)
//! and the file sink. `sample` generates test records; it is behind the `sample` feature, so
//! it is never part of the component.

#![deny(unsafe_code)]

// The fuzz calls (`fuzz_replay/calls.rs`) are shared with the fuzz targets, which name this
// crate `lro_core`; the unit tests that replay them compile them inside it.
#[cfg(test)]
extern crate self as lro_core;

pub mod custodian;
pub mod estimate;
pub mod extractor;
#[cfg(test)]
mod fuzz_replay;
pub mod jq;
pub mod json_text;
pub mod layers;
pub mod mcp;
pub mod offload;
pub mod plan;
pub mod recipes;
#[cfg(any(test, feature = "sample"))]
pub mod sample;
mod sink;
pub mod time;

use std::fmt;

pub use custodian::{SweepFailure, SweepReport, sweep};
pub use estimate::estimate;
pub use extractor::{ExtractRequest, Extracted, call_tool, extract, query, tool_definition};
pub use offload::offload;

/// The memory operation that produced a result set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `recall_memories`.
    Recall,
    /// A search through the search service.
    Search,
    /// `list_memories`.
    List,
    /// `inject_context`.
    Inject,
}

impl Operation {
    /// The name used in file names, headers and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Recall => "recall",
            Operation::Search => "search",
            Operation::List => "list",
            Operation::Inject => "inject",
        }
    }

    /// True when the result set is ranked (line order is rank order).
    pub fn is_ranked(self) -> bool {
        matches!(self, Operation::Recall | Operation::Search)
    }
}

/// The MIF detail level of the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// No `content`.
    Light,
    /// `content`, `summary`, flattened `confidence`.
    Medium,
    /// Everything; `confidence` under `provenance`.
    Full,
}

impl Detail {
    /// The name used in headers, summaries and guidance.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Light => "light",
            Detail::Medium => "medium",
            Detail::Full => "full",
        }
    }

    /// Parses `light`, `medium` or `full`.
    pub fn parse(text: &str) -> Option<Detail> {
        match text {
            "light" => Some(Detail::Light),
            "medium" => Some(Detail::Medium),
            "full" => Some(Detail::Full),
            _ => None,
        }
    }
}

/// How rich the descriptor of an offloaded result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorStyle {
    /// Every field of the spec's `OffloadResponse`.
    Full,
    /// `offloaded`, `summary` and `file_path` only.
    Bare,
}

/// Which recipe library descriptors offer and `lro_extract` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecipeLibrary {
    /// The spec v2 library: recipes 9 and 10 adapt to the detail level.
    V2,
    /// The older MIF v1 list (the LRO section of the MIF v1 documentation), the same at every level.
    V1,
}

/// Settings for one call (the WIT `config` record), under the spec's `[prompt.offload]` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// When false every result stays inline.
    pub enabled: bool,
    /// Offload when the estimate exceeds this many tokens.
    pub threshold_tokens: u32,
    /// Seconds a file lives.
    pub ttl_seconds: u64,
    /// Absolute path of the offload directory (the host resolves the default, empty, before a
    /// call).
    pub output_dir: String,
    /// File name prefix.
    pub prefix: String,
    /// Descriptor style.
    pub descriptor: DescriptorStyle,
    /// Whether the host offers the `lro_extract` tool.
    pub extract_tool: bool,
    /// MIF schema version written to headers.
    pub schema_version: String,
    /// The recipe library.
    pub recipes: RecipeLibrary,
    /// Per-tool settings for the MCP-level interceptor.
    pub tools: Vec<mcp::ToolSettings>,
    /// Cap on the bytes of all LRO files in `output_dir`; 0 means none.
    pub max_bytes: u64,
    /// Cap on the number of LRO files in `output_dir`; 0 means none.
    pub max_files: u32,
    /// Set by the host when `output_dir` failed its checks: nothing is written, offloads degrade.
    pub dir_problem: Option<String>,
}

/// Default of [`Config::max_bytes`]: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// Default of [`Config::max_files`].
pub const DEFAULT_MAX_FILES: u32 = 1000;

/// The spec's defaults, as the WIT `configuration.defaults` returns them. `output_dir` is empty,
/// which stands for the host's default directory: a host resolves it before a call, and
/// [`Config::validate`] refuses it as it is.
impl Default for Config {
    fn default() -> Self {
        Config {
            enabled: true,
            threshold_tokens: 1600,
            ttl_seconds: 3600,
            output_dir: String::new(),
            prefix: "atlatl".to_owned(),
            descriptor: DescriptorStyle::Full,
            extract_tool: false,
            schema_version: "0.1".to_owned(),
            recipes: RecipeLibrary::V2,
            tools: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            max_files: DEFAULT_MAX_FILES,
            dir_problem: None,
        }
    }
}

impl Config {
    /// Checks the fields every function relies on; the error names the field.
    pub fn validate(&self) -> Result<(), Error> {
        if !self.output_dir.starts_with('/') {
            return Err(Error::InvalidConfig(format!(
                "output_dir must be an absolute path, got {:?}",
                self.output_dir
            )));
        }
        let prefix_ok = (1..=32).contains(&self.prefix.len())
            && self
                .prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && self.prefix.as_bytes()[0].is_ascii_alphanumeric();
        if !prefix_ok {
            return Err(Error::InvalidConfig(format!(
                "prefix must be 1 to 32 ASCII letters, digits, '_' or '-', starting with a letter or digit; got {:?}",
                self.prefix
            )));
        }
        if self.schema_version.is_empty() || self.schema_version.contains(['\n', '\r']) {
            return Err(Error::InvalidConfig(format!(
                "schema_version must be a non-empty single line, got {:?}",
                self.schema_version
            )));
        }
        Ok(())
    }

    /// The directory without a trailing slash, ready to join a file name to.
    pub(crate) fn dir_base(&self) -> &str {
        let trimmed = self.output_dir.trim_end_matches('/');
        if trimmed.is_empty() { "" } else { trimmed }
    }
}

/// A parameter of a recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeParam {
    /// Variable name without `$`.
    pub name: String,
    /// Default value.
    pub default: String,
}

/// One entry of the recipe library (the WIT `recipe` record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    /// 1 to 10.
    pub number: u8,
    /// What it does.
    pub description: String,
    /// The jq program with `$name` variables.
    pub program: String,
    /// Runs over all records at once (`jq -s`).
    pub slurp: bool,
    /// Raw string output (`jq -r`).
    pub raw: bool,
    /// Parameters with defaults.
    pub params: Vec<RecipeParam>,
    /// The shell command with the file path and default values in place.
    pub command: String,
}

/// What the host forwards after `offload` (the WIT `outcome` variant).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Stays inline.
    Inline {
        /// Records as compact JSON, or the budgeted text for inject.
        text: String,
        /// Estimated tokens of the result set.
        tokens: u32,
    },
    /// Written to a file.
    Offloaded {
        /// The descriptor JSON.
        descriptor: String,
        /// Absolute path of the file.
        path: String,
        /// Records written.
        count: u32,
        /// Estimated tokens.
        tokens: u32,
        /// File size.
        bytes: u64,
    },
    /// The write failed; truncated inline payload.
    Degraded {
        /// The payload JSON.
        payload: String,
        /// The warning inside it.
        warning: String,
        /// Records in the result set.
        total: u32,
        /// Records in the payload.
        returned: u32,
    },
}

/// Events reported to the host (the WIT `event` variant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A file was written.
    OffloadCreated {
        /// File path.
        path: String,
        /// Operation name.
        operation: String,
        /// Records written.
        count: u32,
        /// Estimated tokens.
        tokens: u32,
        /// File size.
        bytes: u64,
    },
    /// A write failed.
    OffloadWriteFailed {
        /// Path that could not be written.
        path: String,
        /// Operation name.
        operation: String,
        /// What failed.
        error: String,
        /// Records in the result set.
        total: u32,
        /// Records returned inline.
        returned: u32,
    },
    /// A sweep deleted an expired file.
    OffloadFileExpired {
        /// File path.
        path: String,
        /// Created, ms since the epoch.
        created: u64,
        /// Expired, ms since the epoch.
        expired: u64,
    },
    /// A file was deleted early to keep the directory within its caps.
    OffloadFileEvicted {
        /// File path.
        path: String,
        /// Its size.
        bytes: u64,
        /// `max-bytes` or `max-files`.
        cap: String,
    },
}

/// Errors of this crate (the WIT `error` variant).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The config is unusable.
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// An input is not valid JSON or not of the expected shape.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A filesystem operation without fallback failed.
    #[error("i/o error: {0}")]
    Io(String),
    /// An extraction request is malformed (recipe and query both or neither, bad params).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The file does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The path is outside the offload directory.
    #[error("outside the offload directory: {0}")]
    OutsideDirectory(String),
    /// The file is not an LRO file (name or header).
    #[error("not an LRO file: {0}")]
    NotLroFile(String),
    /// The file's time to live has passed.
    #[error("expired: {0}")]
    Expired(String),
    /// A line of the file is not valid JSON.
    #[error("corrupt file: {0}")]
    Corrupt(String),
    /// The jq filter does not parse or compile.
    #[error("invalid filter: {0}")]
    InvalidFilter(String),
    /// The jq filter failed while running.
    #[error("filter failed: {0}")]
    FilterFailed(String),
}

/// Writes `s` as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serialises")
}

/// Displays a JSON value's type the way error messages name it.
pub(crate) struct TypeName<'a>(pub &'a serde_json::Value);

impl fmt::Display for TypeName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use serde_json::Value;
        f.write_str(match self.0 {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        })
    }
}
