//! The `[prompt.offload]` configuration a user gives, layered over a base (normally
//! [`Config::default`]): the WIT `configuration.load`. Every host gathers the layers (a file's
//! text, the environment, its flags or arguments) and calls this, so the keys, their types, the
//! old names and every error message are written here only.
//!
//! The keys are the spec's, the same in every layer. `ATLATL_` is the prefix of the spec's
//! environment variables: LRO was specified for atlatl, a memory server, and keeps its names.

use crate::mcp::ToolSettings;
use crate::{Config, DescriptorStyle, Error, RecipeLibrary};

/// The keys of `[prompt.offload]` (besides the `tools` tables), in docs/CONFIGURATION.md's order.
pub const KEYS: &[&str] = &[
    "enabled",
    "threshold_tokens",
    "ttl_seconds",
    "output_dir",
    "prefix",
    "descriptor",
    "schema_version",
    "extract_tool",
    "recipes",
    "max_bytes",
    "max_files",
];

/// The keys of one `[prompt.offload.tools.NAME]` table.
pub const TOOL_KEYS: &[&str] = &["enabled", "threshold_tokens", "sections", "inline_keys"];

/// Keys renamed to the spec's names, old name first: meeting an old one, the error names the new.
pub const RENAMED: &[(&str, &str)] = &[
    ("threshold", "threshold_tokens"),
    ("ttl", "ttl_seconds"),
    ("dir", "output_dir"),
    ("native", "extract_tool"),
];

/// What every configuration variable's name starts with; the key follows in capitals.
pub const ENV_PREFIX: &str = "ATLATL_PROMPT__OFFLOAD__";

/// The environment variable of a key: [`ENV_PREFIX`] and the key in capitals.
pub fn env_var(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.to_ascii_uppercase())
}

/// A value given as text for one key (a command-line flag), parsed as a variable's text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The key under `[prompt.offload]`.
    pub key: String,
    /// The value, as text.
    pub value: String,
    /// Where it came from, for error messages (`--threshold-tokens`).
    pub source: String,
}

/// One layer of configuration; [`load`] applies layers in order, each over those before it.
#[derive(Debug, Clone, Copy)]
pub enum Layer<'a> {
    /// A TOML document (a configuration file's text) and the file's name: its
    /// `[prompt.offload]` and `[prompt.offload.tools.NAME]` tables. Other tables belong to other
    /// programs and are left alone.
    Toml {
        /// The file, for error messages.
        name: &'a str,
        /// The document.
        text: &'a str,
    },
    /// Environment variables, name and value. Names outside [`ENV_PREFIX`] are ignored, so a
    /// host may pass the whole environment; a name under it that names no key is refused.
    Environment(&'a [(String, String)]),
    /// Values given as text, each with its source.
    Settings(&'a [Setting]),
    /// A JSON object of keys to typed values (a host's arguments in code), and how to name it
    /// in messages. `tools` is a list of objects with a `name`, or an object of tool names to
    /// their settings; a `null` value sets nothing.
    Json {
        /// The arguments' name, for error messages (`the arguments of load_config`).
        name: &'a str,
        /// The object's JSON text.
        text: &'a str,
    },
}

/// `base` with `layers` applied in order. Per-tool settings layer per tool and per key. The
/// error (`Error::InvalidConfig`) names the key and where its value came from.
pub fn load(base: Config, layers: &[Layer<'_>]) -> Result<Config, Error> {
    let mut config = base;
    for layer in layers {
        match *layer {
            Layer::Toml { name, text } => apply_toml(&mut config, name, text)?,
            Layer::Environment(vars) => apply_environment(&mut config, vars)?,
            Layer::Settings(settings) => {
                for s in settings {
                    set(&mut config, &s.key, Raw::Text(&s.value), &s.source, &s.source)?;
                }
            }
            Layer::Json { name, text } => apply_json(&mut config, name, text)?,
        }
    }
    Ok(config)
}

/// A value from one layer, in that layer's own notation.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Toml(&'a toml::Value),
    Text(&'a str),
    Json(&'a serde_json::Value),
}

impl<'a> Raw<'a> {
    /// The value as an error message quotes it, in the notation it was written in.
    fn shown(self) -> String {
        match self {
            Raw::Toml(v) => v.to_string(),
            Raw::Text(t) => format!("{t:?}"),
            Raw::Json(v) => v.to_string(),
        }
    }

    fn boolean(self) -> Option<bool> {
        match self {
            Raw::Toml(toml::Value::Boolean(b)) | Raw::Json(serde_json::Value::Bool(b)) => Some(*b),
            Raw::Text(t) if t.eq_ignore_ascii_case("true") || t == "1" => Some(true),
            Raw::Text(t) if t.eq_ignore_ascii_case("false") || t == "0" => Some(false),
            _ => None,
        }
    }

    fn number(self, max: u64) -> Option<u64> {
        let n = match self {
            Raw::Toml(toml::Value::Integer(i)) => u64::try_from(*i).ok(),
            Raw::Text(t) => t.trim().parse::<u64>().ok(),
            Raw::Json(v) => v.as_u64(),
            _ => None,
        };
        n.filter(|n| *n <= max)
    }

    fn string(self) -> Option<&'a str> {
        match self {
            Raw::Toml(toml::Value::String(s)) => Some(s),
            Raw::Text(t) => Some(t),
            Raw::Json(serde_json::Value::String(s)) => Some(s),
            _ => None,
        }
    }

    fn strings(self) -> Option<Vec<String>> {
        match self {
            Raw::Toml(toml::Value::Array(a)) => a.iter().map(|s| s.as_str().map(str::to_owned)).collect(),
            Raw::Json(serde_json::Value::Array(a)) => a.iter().map(|s| s.as_str().map(str::to_owned)).collect(),
            _ => None,
        }
    }
}

fn invalid(key: &str, source: &str, message: impl std::fmt::Display) -> Error {
    Error::InvalidConfig(format!("prompt.offload.{key} (from {source}): {message}"))
}

fn unknown(key: &str, place: &str) -> Error {
    let hint = RENAMED
        .iter()
        .find(|(old, _)| *old == key)
        .map(|(_, new)| format!(" (now {new})"))
        .unwrap_or_default();
    Error::InvalidConfig(format!(
        "unknown key prompt.offload.{key} in {place}{hint}; known keys: {}",
        KEYS.join(", ")
    ))
}

fn file_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::InvalidConfig(format!("config file {name}: {message}"))
}

const U32_MAX: u64 = u32::MAX as u64;

/// Sets one key. `source` names where the value came from, `place` where an unknown key was met.
fn set(config: &mut Config, key: &str, raw: Raw<'_>, source: &str, place: &str) -> Result<(), Error> {
    let expected = |what: &str| invalid(key, source, format!("expected {what}, got {}", raw.shown()));
    let boolean = || raw.boolean().ok_or_else(|| expected("true or false"));
    let number = |max: u64| {
        raw.number(max)
            .ok_or_else(|| expected(&format!("a whole number from 0 to {max}")))
    };
    let string = || raw.string().map(str::to_owned).ok_or_else(|| expected("a string"));
    let one_of = |first: &str, second: &str| {
        raw.string()
            .filter(|s| *s == first || *s == second)
            .ok_or_else(|| expected(&format!("\"{first}\" or \"{second}\"")))
    };
    match key {
        "enabled" => config.enabled = boolean()?,
        "extract_tool" => config.extract_tool = boolean()?,
        "threshold_tokens" => config.threshold_tokens = number(U32_MAX)? as u32,
        "ttl_seconds" => config.ttl_seconds = number(u64::MAX)?,
        "max_bytes" => config.max_bytes = number(u64::MAX)?,
        "max_files" => config.max_files = number(U32_MAX)? as u32,
        "output_dir" => config.output_dir = string()?,
        "prefix" => config.prefix = string()?,
        "schema_version" => config.schema_version = string()?,
        "descriptor" => {
            config.descriptor = match one_of("full", "bare")? {
                "full" => DescriptorStyle::Full,
                _ => DescriptorStyle::Bare,
            }
        }
        "recipes" => {
            config.recipes = match one_of("v2", "v1")? {
                "v2" => RecipeLibrary::V2,
                _ => RecipeLibrary::V1,
            }
        }
        _ => return Err(unknown(key, place)),
    }
    Ok(())
}

/// Layers one tool's settings over what earlier layers set for the same tool.
fn set_tool<'v>(
    config: &mut Config,
    name: &str,
    settings: impl Iterator<Item = (&'v str, Raw<'v>)>,
    source: &str,
) -> Result<(), Error> {
    let index = match config.tools.iter().position(|t| t.name == name) {
        Some(i) => i,
        None => {
            config.tools.push(ToolSettings {
                name: name.to_owned(),
                enabled: None,
                threshold_tokens: None,
                sections: None,
                inline_keys: None,
            });
            config.tools.len() - 1
        }
    };
    let tool = &mut config.tools[index];
    for (key, raw) in settings {
        let expected = |what: &str| {
            invalid(
                &format!("tools.{name}.{key}"),
                source,
                format!("expected {what}, got {}", raw.shown()),
            )
        };
        match key {
            "enabled" => tool.enabled = Some(raw.boolean().ok_or_else(|| expected("true or false"))?),
            "threshold_tokens" => {
                let n = raw
                    .number(U32_MAX)
                    .ok_or_else(|| expected(&format!("a whole number from 0 to {U32_MAX}")))?;
                tool.threshold_tokens = Some(n as u32);
            }
            "sections" => tool.sections = Some(raw.strings().ok_or_else(|| expected("a list of strings"))?),
            "inline_keys" => tool.inline_keys = Some(raw.strings().ok_or_else(|| expected("a list of strings"))?),
            _ => {
                return Err(invalid(
                    &format!("tools.{name}.{key}"),
                    source,
                    format!("unknown key; known keys: {}", TOOL_KEYS.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

fn apply_toml(config: &mut Config, name: &str, text: &str) -> Result<(), Error> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| file_error(name, e))?;
    let Some(offload) = table.get("prompt").and_then(|prompt| prompt.get("offload")) else {
        return Ok(());
    };
    let offload = offload
        .as_table()
        .ok_or_else(|| file_error(name, "[prompt.offload] must be a table"))?;
    for (key, value) in offload {
        if key != "tools" {
            set(config, key, Raw::Toml(value), name, name)?;
            continue;
        }
        let tools = value
            .as_table()
            .ok_or_else(|| file_error(name, "[prompt.offload.tools] must be a table"))?;
        for (tool, table) in tools {
            let table = table
                .as_table()
                .ok_or_else(|| invalid(&format!("tools.{tool}"), name, format!("expected a table, got {table}")))?;
            set_tool(
                config,
                tool,
                table.iter().map(|(k, v)| (k.as_str(), Raw::Toml(v))),
                name,
            )?;
        }
    }
    Ok(())
}

fn apply_environment(config: &mut Config, vars: &[(String, String)]) -> Result<(), Error> {
    // In name order, so that of two bad variables the same one is reported whatever the order
    // the host listed them in.
    let mut ours: Vec<(&str, &str, &str)> = vars
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), name.strip_prefix(ENV_PREFIX)?, value.as_str())))
        .collect();
    ours.sort_unstable();
    for (var, suffix, value) in ours {
        let key = suffix.to_ascii_lowercase();
        if let Some((_, new)) = RENAMED.iter().find(|(old, _)| *old == key) {
            // Not an unknown key: say which variable to set instead.
            return Err(invalid(&key, var, format!("renamed: set {} instead", env_var(new))));
        }
        if !KEYS.contains(&key.as_str()) {
            return Err(unknown(&key, var));
        }
        if suffix != key.to_ascii_uppercase() {
            return Err(invalid(
                &key,
                var,
                format!(
                    "variables are named with the key in capitals: set {} instead",
                    env_var(&key)
                ),
            ));
        }
        set(config, &key, Raw::Text(value), var, var)?;
    }
    Ok(())
}

fn apply_json(config: &mut Config, name: &str, text: &str) -> Result<(), Error> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Error::InvalidConfig(format!("{name}: not JSON: {e}")))?;
    let serde_json::Value::Object(object) = value else {
        return Err(Error::InvalidConfig(format!(
            "{name}: expected an object of [prompt.offload] keys, got {value}"
        )));
    };
    for (key, value) in &object {
        if value.is_null() {
            continue;
        }
        if key != "tools" {
            set(config, key, Raw::Json(value), name, name)?;
            continue;
        }
        let bad_tools = || {
            invalid(
                "tools",
                name,
                format!(
                    "expected a list of {{\"name\": ..., ...}} objects or an object of tool names to settings, got {value}"
                ),
            )
        };
        let tools: Vec<(&str, &serde_json::Value)> = match value {
            serde_json::Value::Object(map) => map.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            serde_json::Value::Array(list) => list
                .iter()
                .map(|t| Some((t.get("name")?.as_str()?, t)))
                .collect::<Option<_>>()
                .ok_or_else(bad_tools)?,
            _ => return Err(bad_tools()),
        };
        for (tool, settings) in tools {
            let serde_json::Value::Object(settings) = settings else {
                return Err(invalid(
                    &format!("tools.{tool}"),
                    name,
                    format!("expected an object, got {settings}"),
                ));
            };
            let given = settings
                .iter()
                .filter(|(k, v)| k.as_str() != "name" && !v.is_null())
                .map(|(k, v)| (k.as_str(), Raw::Json(v)));
            set_tool(config, tool, given, name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
