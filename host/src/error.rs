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
            Error::Component(e) => Some(component_kind(e).2),
            _ => None,
        }
    }

    /// True when a time, memory or stack limit stopped the call.
    pub fn is_limit(&self) -> bool {
        matches!(self, Error::Timeout(_) | Error::MemoryLimit(_) | Error::StackOverflow)
    }

    /// The error's kind, as every host names it (docs/HOSTS.md).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Component(e) => component_kind(e).0,
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::MemoryLimit(_) => ErrorKind::MemoryLimit,
            Error::StackOverflow => ErrorKind::StackOverflow,
            Error::Trap(_) => ErrorKind::Trap,
            Error::Directory { .. } => ErrorKind::Directory,
            Error::Load(_) => ErrorKind::Load,
        }
    }
}

/// What kind of error ended a call: the component's documented errors (the WIT `error` cases),
/// the limits the host enforces, and host failures. [`ErrorKind::as_str`] is the name every
/// host gives it (`"not-found"`, `"timeout"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// WIT `invalid-config`: the configuration is unusable.
    InvalidConfig,
    /// WIT `invalid-input`: an input is not valid JSON or not of the expected shape.
    InvalidInput,
    /// WIT `io`: a filesystem operation without fallback failed.
    Io,
    /// WIT `invalid-request`: an extraction request is malformed.
    InvalidRequest,
    /// WIT `not-found`: the file does not exist.
    NotFound,
    /// WIT `outside-directory`: the path is outside the offload directory.
    OutsideDirectory,
    /// WIT `not-lro-file`: the file is not an LRO file (name, kind or header).
    NotLroFile,
    /// WIT `expired`: the file's time to live has passed.
    Expired,
    /// WIT `corrupt`: a line of the file is not valid JSON.
    Corrupt,
    /// WIT `invalid-filter`: the jq filter does not parse or compile.
    InvalidFilter,
    /// WIT `filter-failed`: the jq filter failed while running.
    FilterFailed,
    /// The call ran past its deadline.
    Timeout,
    /// The call needed more memory than its limit.
    MemoryLimit,
    /// The component's call stack overflowed.
    StackOverflow,
    /// The component trapped.
    Trap,
    /// The offload directory could not be prepared.
    Directory,
    /// The component could not be compiled, loaded or instantiated.
    Load,
}

impl ErrorKind {
    /// The kind's name, as every host gives it: the WIT case for the component's errors.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidConfig => "invalid-config",
            ErrorKind::InvalidInput => "invalid-input",
            ErrorKind::Io => "io",
            ErrorKind::InvalidRequest => "invalid-request",
            ErrorKind::NotFound => "not-found",
            ErrorKind::OutsideDirectory => "outside-directory",
            ErrorKind::NotLroFile => "not-lro-file",
            ErrorKind::Expired => "expired",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::InvalidFilter => "invalid-filter",
            ErrorKind::FilterFailed => "filter-failed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MemoryLimit => "memory-limit",
            ErrorKind::StackOverflow => "stack-overflow",
            ErrorKind::Trap => "trap",
            ErrorKind::Directory => "directory",
            ErrorKind::Load => "load",
        }
    }

    /// True for the kinds that say the file asked for is not one to read (missing, expired,
    /// outside the directory, not an LRO file): a resource that is not found, not a failure.
    pub fn is_no_such_file(self) -> bool {
        matches!(
            self,
            ErrorKind::NotFound | ErrorKind::Expired | ErrorKind::OutsideDirectory | ErrorKind::NotLroFile
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The one table of the component's errors: each case's kind, the words its message starts
/// with (lro-core's `Error` says the same: `component_errors_read_as_lro_core_writes_them` in
/// cli/tests/all/api/errors.rs fails when they differ), and its message.
fn component_kind(error: &ComponentError) -> (ErrorKind, &'static str, &str) {
    match error {
        ComponentError::InvalidConfig(m) => (ErrorKind::InvalidConfig, "invalid config", m),
        ComponentError::InvalidInput(m) => (ErrorKind::InvalidInput, "invalid input", m),
        ComponentError::Io(m) => (ErrorKind::Io, "i/o error", m),
        ComponentError::InvalidRequest(m) => (ErrorKind::InvalidRequest, "invalid request", m),
        ComponentError::NotFound(m) => (ErrorKind::NotFound, "not found", m),
        ComponentError::OutsideDirectory(m) => (ErrorKind::OutsideDirectory, "outside the offload directory", m),
        ComponentError::NotLroFile(m) => (ErrorKind::NotLroFile, "not an LRO file", m),
        ComponentError::Expired(m) => (ErrorKind::Expired, "expired", m),
        ComponentError::Corrupt(m) => (ErrorKind::Corrupt, "corrupt file", m),
        ComponentError::InvalidFilter(m) => (ErrorKind::InvalidFilter, "invalid filter", m),
        ComponentError::FilterFailed(m) => (ErrorKind::FilterFailed, "filter failed", m),
    }
}

fn describe(error: &ComponentError) -> String {
    let (_, words, message) = component_kind(error);
    format!("{words}: {message}")
}
