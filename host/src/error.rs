//! What can end a [`Runtime`](crate::Runtime) call: the component's own documented errors, the
//! limits the host enforces, and host failures (directory, loading).

use std::path::PathBuf;
use std::time::Duration;

pub use crate::bindings::lro::component::types::Error as ComponentError;

/// Errors from [`Runtime`](crate::Runtime) calls.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The component returned one of its documented errors (WIT `types.error`).
    #[error("{}", describe(.0))]
    Component(ComponentError),
    /// The call ran past its deadline and was stopped. The text names the options that raise it.
    #[error(
        "limit exceeded: the call ran longer than its {0:?} time limit and was stopped; raise it with \
         Options::filter_deadline (extract, call_tool, query) or Options::deadline (the other calls), \
         --timeout SECONDS of the lro command"
    )]
    Timeout(Duration),
    /// The call needed more memory than its limit (bytes) and was stopped. The text names the
    /// options that raise it.
    #[error(
        "limit exceeded: the call needed more than its {} MiB memory limit and was stopped; raise it with \
         Options::filter_memory (extract, call_tool, query) or Options::memory (the other calls), \
         --memory-limit MIB of the lro command",
        .0 >> 20
    )]
    MemoryLimit(usize),
    /// The component's call stack overflowed: a filter recursing without end, or a filter or
    /// input nested too deeply.
    #[error(
        "limit exceeded: the call stack overflowed (endless recursion, or nesting too deep) and the call was stopped"
    )]
    StackOverflow,
    /// The component trapped (a bug in the component, or input it could not handle).
    #[error("the component trapped: {0}")]
    Trap(String),
    /// The offload directory could not be prepared for the call.
    #[error("offload directory {}: {message}", .path.display())]
    Directory {
        /// The directory as given.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The component could not be compiled, loaded or instantiated.
    #[error("loading the component: {0}")]
    Load(String),
}

impl Error {
    /// True for errors the component returned (its documented WIT errors), false for limits,
    /// traps, directory and loading failures.
    pub fn is_domain(&self) -> bool {
        matches!(self, Error::Component(_))
    }

    /// The component's own message, for its documented errors; `None` for limits, traps and
    /// host failures, whose text is this error's `Display`.
    pub fn component_message(&self) -> Option<&str> {
        match self {
            Error::Component(
                ComponentError::InvalidConfig(m)
                | ComponentError::InvalidInput(m)
                | ComponentError::Io(m)
                | ComponentError::InvalidRequest(m)
                | ComponentError::NotFound(m)
                | ComponentError::OutsideDirectory(m)
                | ComponentError::NotLroFile(m)
                | ComponentError::Expired(m)
                | ComponentError::Corrupt(m)
                | ComponentError::InvalidFilter(m)
                | ComponentError::FilterFailed(m),
            ) => Some(m),
            _ => None,
        }
    }

    /// True when a time, memory or stack limit stopped the call.
    pub fn is_limit(&self) -> bool {
        matches!(self, Error::Timeout(_) | Error::MemoryLimit(_) | Error::StackOverflow)
    }

    /// The error's kind as every host names it (docs/HOSTS.md): the WIT case (`"not-found"`,
    /// `"invalid-filter"`, ...) for the component's errors, else `"timeout"`, `"memory-limit"`,
    /// `"stack-overflow"`, `"trap"`, `"directory"` or `"load"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Component(e) => match e {
                ComponentError::InvalidConfig(_) => "invalid-config",
                ComponentError::InvalidInput(_) => "invalid-input",
                ComponentError::Io(_) => "io",
                ComponentError::InvalidRequest(_) => "invalid-request",
                ComponentError::NotFound(_) => "not-found",
                ComponentError::OutsideDirectory(_) => "outside-directory",
                ComponentError::NotLroFile(_) => "not-lro-file",
                ComponentError::Expired(_) => "expired",
                ComponentError::Corrupt(_) => "corrupt",
                ComponentError::InvalidFilter(_) => "invalid-filter",
                ComponentError::FilterFailed(_) => "filter-failed",
            },
            Error::Timeout(_) => "timeout",
            Error::MemoryLimit(_) => "memory-limit",
            Error::StackOverflow => "stack-overflow",
            Error::Trap(_) => "trap",
            Error::Directory { .. } => "directory",
            Error::Load(_) => "load",
        }
    }
}

fn describe(error: &ComponentError) -> String {
    match error {
        ComponentError::InvalidConfig(m) => format!("invalid config: {m}"),
        ComponentError::InvalidInput(m) => format!("invalid input: {m}"),
        ComponentError::Io(m) => format!("i/o error: {m}"),
        ComponentError::InvalidRequest(m) => format!("invalid request: {m}"),
        ComponentError::NotFound(m) => format!("not found: {m}"),
        ComponentError::OutsideDirectory(m) => format!("outside the offload directory: {m}"),
        ComponentError::NotLroFile(m) => format!("not an LRO file: {m}"),
        ComponentError::Expired(m) => format!("expired: {m}"),
        ComponentError::Corrupt(m) => format!("corrupt file: {m}"),
        ComponentError::InvalidFilter(m) => format!("invalid filter: {m}"),
        ComponentError::FilterFailed(m) => format!("filter failed: {m}"),
    }
}
