//! The `[prompt.offload]` configuration as the `lro` command reads it: the component's defaults
//! ([`Runtime::defaults`]) < a TOML file < the `ATLATL_PROMPT__OFFLOAD__*` environment variables
//! < command-line flags. This module only gathers the layers (reads the file, picks the
//! variables); the component applies them ([`Runtime::load_config`], WIT
//! `configuration.load`), so the keys, their types and every message are the same in every
//! host (docs/CONFIGURATION.md).

use std::path::{Path, PathBuf};

use crate::{ComponentError, Config, ConfigDocument, ConfigLayers, ConfigSetting, ConfigVariable, Error, Runtime};

/// What every configuration variable's name starts with; the key follows in capitals.
/// `ATLATL_` because LRO was specified for atlatl, a memory server, and keeps its names.
pub const ENV_PREFIX: &str = "ATLATL_PROMPT__OFFLOAD__";

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The component refused a value, a key or a document (WIT `invalid-config`); the message
    /// names the key and where it came from.
    #[error("{0}")]
    Invalid(String),
    /// The file cannot be read.
    #[error("config file {}: {message}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The component could not be run to layer the configuration.
    #[error("reading the configuration: {0}")]
    Runtime(#[source] Error),
}

impl From<Error> for ConfigError {
    fn from(e: Error) -> Self {
        match e {
            Error::Component(ComponentError::InvalidConfig(m)) => ConfigError::Invalid(m),
            other => ConfigError::Runtime(other),
        }
    }
}

/// A value given on the command line for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The key under `[prompt.offload]`.
    pub key: &'static str,
    /// The flag's long name (`--threshold-tokens`, also for its short alias), for error messages.
    pub name: &'static str,
    /// The value, as text; read like an environment variable's.
    pub value: String,
}

/// The environment variable of a key: [`ENV_PREFIX`] and the key in capitals.
pub fn env_var(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.to_ascii_uppercase())
}

/// The TOML file `path`, as a layer names and reads it.
pub fn document(path: &Path) -> Result<ConfigDocument, ConfigError> {
    Ok(ConfigDocument {
        name: path.display().to_string(),
        text: std::fs::read_to_string(path).map_err(|e| ConfigError::File {
            path: path.to_owned(),
            message: e.to_string(),
        })?,
    })
}

/// The layers over the defaults, lowest first: `file` (if any, read by [`document`]), the
/// variables of `env` under [`ENV_PREFIX`] (others are not passed on), then `flags`.
pub fn layers(
    file: Option<ConfigDocument>,
    env: impl IntoIterator<Item = (String, String)>,
    flags: &[Flag],
) -> Result<ConfigLayers, ConfigError> {
    Ok(ConfigLayers {
        file,
        environment: env
            .into_iter()
            .filter(|(name, _)| name.starts_with(ENV_PREFIX))
            .map(|(name, value)| ConfigVariable { name, value })
            .collect(),
        settings: flags
            .iter()
            .map(|f| ConfigSetting {
                key: f.key.to_owned(),
                value: f.value.clone(),
                source: f.name.to_owned(),
            })
            .collect(),
        arguments: None,
    })
}

/// `base` (normally [`Runtime::defaults`]) with `file`, the configuration variables of `env`
/// and `flags` layered over it by the component.
pub fn load(
    runtime: &Runtime,
    base: &Config,
    file: Option<ConfigDocument>,
    env: impl IntoIterator<Item = (String, String)>,
    flags: &[Flag],
) -> Result<Config, ConfigError> {
    Ok(runtime.load_config(base, &layers(file, env, flags)?)?)
}

/// The variable naming the store (`lro proxy --listen --store`): read by the host that keeps
/// one, never passed to the component, which knows no `store` key (the `lro` command takes the
/// key out of a configuration file too).
pub const STORE_VAR: &str = "ATLATL_PROMPT__OFFLOAD__STORE";

/// The component's defaults with `file`, the process environment and `flags` layered over
/// them. A configuration variable whose value is not UTF-8 is an error naming it.
pub fn from_environment(runtime: &Runtime, file: Option<&Path>, flags: &[Flag]) -> Result<Config, ConfigError> {
    from_environment_document(runtime, file.map(document).transpose()?, flags)
}

/// [`from_environment`] with the file's text already read (and, by `lro proxy`, its `store`
/// key taken out: [`STORE_VAR`]).
pub fn from_environment_document(
    runtime: &Runtime,
    file: Option<ConfigDocument>,
    flags: &[Flag],
) -> Result<Config, ConfigError> {
    let mut env = Vec::new();
    for (name, value) in std::env::vars_os() {
        let Some(name) = name.to_str().filter(|n| n.starts_with(ENV_PREFIX) && *n != STORE_VAR) else {
            continue;
        };
        let value = value
            .into_string()
            .map_err(|_| ConfigError::Invalid(format!("{name}: the value is not UTF-8")))?;
        env.push((name.to_owned(), value));
    }
    load(runtime, &runtime.defaults()?, file, env, flags)
}
