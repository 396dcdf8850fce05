//! The `[prompt.offload]` configuration, layered: the component's defaults
//! ([`Runtime::defaults`](crate::Runtime::defaults)) < a TOML file < the
//! `ATLATL_PROMPT__OFFLOAD__*` environment variables < command-line flags. The keys are the
//! spec's, and the same in every layer and every host.

use std::path::Path;

use crate::{Config, DescriptorStyle, RecipeLibrary, ToolSettings};

/// A configuration value that cannot be used; the message names the key and where it came from.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key has a value of the wrong type or out of range.
    #[error("prompt.offload.{key} (from {source_name}): {message}")]
    Invalid {
        /// The key under `[prompt.offload]`.
        key: String,
        /// The file, environment variable or flag the value came from.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// The file names a key this version does not know.
    #[error("unknown key prompt.offload.{key} in {file}{hint}; known keys: {known}", hint = renamed_hint(key), known = KEYS.join(", "))]
    Unknown {
        /// The key.
        key: String,
        /// The file.
        file: String,
    },
    /// The file cannot be read or is not TOML.
    #[error("config file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// The keys of `[prompt.offload]` (besides the `tools` tables), as docs/CONFIGURATION.md lists them.
pub const KEYS: [&str; 11] = [
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

/// A raw value from one layer.
enum Raw<'a> {
    Toml(&'a toml::Value),
    Text(&'a str),
}

/// Keys renamed to the spec's names, old name first: every host names the new one when it meets
/// the old (Python and Node keep the same table).
pub const RENAMED: [(&str, &str); 4] = [
    ("threshold", "threshold_tokens"),
    ("ttl", "ttl_seconds"),
    ("dir", "output_dir"),
    ("native", "extract_tool"),
];

fn renamed_hint(key: &str) -> String {
    RENAMED
        .iter()
        .find(|(old, _)| *old == key)
        .map(|(_, new)| format!(" (now {new})"))
        .unwrap_or_default()
}

/// A value given on the command line for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The key under `[prompt.offload]`, one of [`KEYS`].
    pub key: &'static str,
    /// The flag's long name (`--threshold-tokens`, also for its short alias), for error messages.
    pub name: &'static str,
    /// The value, as text; parsed like an environment variable's.
    pub value: String,
}

/// Layers `file` (if any), the `ATLATL_PROMPT__OFFLOAD__*` variables read through `env`, and
/// `flags` over `defaults` (normally [`Runtime::defaults`](crate::Runtime::defaults)).
pub fn load(
    defaults: Config,
    file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    flags: &[Flag],
) -> Result<Config, ConfigError> {
    let mut config = defaults;
    if let Some(path) = file {
        apply_file(&mut config, path)?;
    }
    for key in KEYS {
        let var = env_var(key);
        if let Some(value) = env(&var) {
            set(&mut config, key, Raw::Text(&value), &var)?;
        }
    }
    // A variable under an old name would otherwise be ignored without a word.
    for (old, new) in RENAMED {
        let var = env_var(old);
        if env(&var).is_some() {
            return Err(ConfigError::Invalid {
                key: old.to_owned(),
                source_name: var,
                message: format!("renamed: set {} instead", env_var(new)),
            });
        }
    }
    for flag in flags {
        set(&mut config, flag.key, Raw::Text(&flag.value), flag.name)?;
    }
    Ok(config)
}

/// [`load`] with the process environment.
pub fn from_environment(defaults: Config, file: Option<&Path>, flags: &[Flag]) -> Result<Config, ConfigError> {
    load(defaults, file, &|name| std::env::var(name).ok(), flags)
}

/// The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__` and the key in capitals.
pub fn env_var(key: &str) -> String {
    format!("ATLATL_PROMPT__OFFLOAD__{}", key.to_ascii_uppercase())
}

fn apply_file(config: &mut Config, path: &Path) -> Result<(), ConfigError> {
    let name = path.display().to_string();
    let file_err = |message: String| ConfigError::File {
        path: name.clone(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file_err(e.to_string()))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| file_err(e.to_string()))?;
    let Some(prompt) = table.get("prompt") else {
        return Ok(());
    };
    let Some(offload) = prompt.get("offload") else {
        return Ok(());
    };
    let offload = offload
        .as_table()
        .ok_or_else(|| file_err("[prompt.offload] must be a table".into()))?;
    for (key, value) in offload {
        if key == "tools" {
            let tools = value
                .as_table()
                .ok_or_else(|| file_err("[prompt.offload.tools] must be a table".into()))?;
            for (tool, table) in tools {
                config.tools.push(tool_settings(tool, table, &name)?);
            }
            continue;
        }
        if !KEYS.contains(&key.as_str()) {
            return Err(ConfigError::Unknown {
                key: key.clone(),
                file: name.clone(),
            });
        }
        set(config, key, Raw::Toml(value), &name)?;
    }
    Ok(())
}

fn set(config: &mut Config, key: &str, raw: Raw<'_>, source: &str) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        key: key.to_owned(),
        source_name: source.to_owned(),
        message,
    };
    let shown = match &raw {
        Raw::Toml(v) => v.to_string(),
        Raw::Text(t) => format!("{t:?}"),
    };
    let boolean = || match &raw {
        Raw::Toml(toml::Value::Boolean(b)) => Ok(*b),
        Raw::Text(t) if t.eq_ignore_ascii_case("true") || *t == "1" => Ok(true),
        Raw::Text(t) if t.eq_ignore_ascii_case("false") || *t == "0" => Ok(false),
        _ => Err(invalid(format!("expected true or false, got {shown}"))),
    };
    let number = |max: u64| {
        let n = match &raw {
            Raw::Toml(toml::Value::Integer(i)) => u64::try_from(*i).ok(),
            Raw::Text(t) => t.trim().parse::<u64>().ok(),
            _ => None,
        };
        n.filter(|n| *n <= max)
            .ok_or_else(|| invalid(format!("expected a whole number from 0 to {max}, got {shown}")))
    };
    let string = || match &raw {
        Raw::Toml(toml::Value::String(s)) => Ok(s.clone()),
        Raw::Text(t) => Ok((*t).to_owned()),
        _ => Err(invalid(format!("expected a string, got {shown}"))),
    };
    match key {
        "enabled" => config.enabled = boolean()?,
        "extract_tool" => config.extract_tool = boolean()?,
        "threshold_tokens" => config.threshold_tokens = number(u64::from(u32::MAX))? as u32,
        "ttl_seconds" => config.ttl_seconds = number(u64::MAX)?,
        "max_bytes" => config.max_bytes = number(u64::MAX)?,
        "max_files" => config.max_files = number(u64::from(u32::MAX))? as u32,
        "output_dir" => config.output_dir = string()?,
        "prefix" => config.prefix = string()?,
        "schema_version" => config.schema_version = string()?,
        "descriptor" => {
            config.descriptor = match string()?.as_str() {
                "full" => DescriptorStyle::Full,
                "bare" => DescriptorStyle::Bare,
                _ => return Err(invalid(format!("expected \"full\" or \"bare\", got {shown}"))),
            }
        }
        "recipes" => {
            config.recipes = match string()?.as_str() {
                "v2" => RecipeLibrary::V2,
                "v1" => RecipeLibrary::V1,
                _ => return Err(invalid(format!("expected \"v2\" or \"v1\", got {shown}"))),
            }
        }
        _ => {
            return Err(ConfigError::Unknown {
                key: key.to_owned(),
                file: source.to_owned(),
            });
        }
    }
    Ok(())
}

/// One `[prompt.offload.tools.NAME]` table.
fn tool_settings(name: &str, table: &toml::Value, file: &str) -> Result<ToolSettings, ConfigError> {
    let invalid = |key: &str, message: String| ConfigError::Invalid {
        key: format!("tools.{name}.{key}"),
        source_name: file.to_owned(),
        message,
    };
    let table = table.as_table().ok_or_else(|| invalid("", "expected a table".into()))?;
    let mut tool = ToolSettings {
        name: name.to_owned(),
        enabled: None,
        threshold_tokens: None,
        sections: None,
        inline_keys: None,
    };
    let strings = |key: &str, v: &toml::Value| -> Result<Vec<String>, ConfigError> {
        v.as_array()
            .and_then(|a| {
                a.iter()
                    .map(|s| s.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| invalid(key, format!("expected a list of strings, got {v}")))
    };
    for (key, v) in table {
        match key.as_str() {
            "enabled" => {
                tool.enabled = Some(
                    v.as_bool()
                        .ok_or_else(|| invalid(key, format!("expected true or false, got {v}")))?,
                )
            }
            "threshold_tokens" => {
                let n = v.as_integer().and_then(|i| u32::try_from(i).ok());
                tool.threshold_tokens =
                    Some(n.ok_or_else(|| {
                        invalid(key, format!("expected a whole number from 0 to 4294967295, got {v}"))
                    })?);
            }
            "sections" => tool.sections = Some(strings(key, v)?),
            "inline_keys" => tool.inline_keys = Some(strings(key, v)?),
            _ => {
                return Err(invalid(
                    key,
                    "unknown key; known keys: enabled, threshold_tokens, sections, inline_keys".into(),
                ));
            }
        }
    }
    Ok(tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A base to layer over; any config serves, the tests only look at what the layers change.
    fn base() -> Config {
        Config {
            enabled: true,
            threshold_tokens: 1600,
            ttl_seconds: 3600,
            output_dir: String::new(),
            prefix: "atlatl".into(),
            descriptor: DescriptorStyle::Full,
            extract_tool: false,
            schema_version: "0.1".into(),
            recipes: RecipeLibrary::V2,
            tools: Vec::new(),
            max_bytes: 1 << 30,
            max_files: 1000,
            dir_problem: None,
        }
    }

    fn write(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    fn flag(key: &'static str, value: &str) -> Flag {
        Flag {
            key,
            name: "--flag",
            value: value.into(),
        }
    }

    #[test]
    fn flags_beat_environment_beat_file_beat_defaults() {
        let file = write("[prompt.offload]\nthreshold_tokens = 100\nttl_seconds = 60\nprefix = \"lro\"\n");
        let env: HashMap<&str, &str> = HashMap::from([
            ("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "200"),
            ("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS", "70"),
        ]);
        let lookup = |k: &str| env.get(k).map(|v| (*v).to_owned());
        let c = load(base(), Some(file.path()), &lookup, &[flag("threshold_tokens", "300")]).unwrap();
        assert_eq!((c.threshold_tokens, c.ttl_seconds, c.prefix.as_str()), (300, 70, "lro"));
        let c = load(base(), Some(file.path()), &lookup, &[]).unwrap();
        assert_eq!(c.threshold_tokens, 200);
        let c = load(base(), Some(file.path()), &|_| None, &[]).unwrap();
        assert_eq!((c.threshold_tokens, c.ttl_seconds), (100, 60));
        assert_eq!(load(base(), None, &|_| None, &[]).unwrap(), base());
    }

    #[test]
    fn bad_values_name_the_key_and_source() {
        let env = |k: &str| (k == "ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS").then(|| "lots".to_owned());
        let err = load(base(), None, &env, &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            "prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS): expected a whole number from 0 to 4294967295, got \"lots\""
        );
        let err = load(
            base(),
            None,
            &|_| None,
            &[Flag {
                key: "max_files",
                name: "--max-files",
                value: "-1".into(),
            }],
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "prompt.offload.max_files (from --max-files): expected a whole number from 0 to 4294967295, got \"-1\""
        );
        let file = write("[prompt.offload]\nenabled = \"yes\"\n");
        let err = load(base(), Some(file.path()), &|_| None, &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("prompt.offload.enabled (from ") && err.ends_with("expected true or false, got \"yes\""),
            "{err}"
        );
        let file = write("[prompt.offload]\ndescriptor = \"rich\"\n");
        let err = load(base(), Some(file.path()), &|_| None, &[]).unwrap_err().to_string();
        assert!(err.ends_with("expected \"full\" or \"bare\", got \"rich\""), "{err}");
        // The old short names are not configuration keys, and the error names the spec's.
        for (old, new) in RENAMED {
            let file = write(&format!("[prompt.offload]\n{old} = 5\n"));
            let err = load(base(), Some(file.path()), &|_| None, &[]).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("unknown key prompt.offload.{old} in")),
                "{err}"
            );
            assert!(err.contains(&format!(" (now {new}); known keys: ")), "{err}");
            let var = env_var(old);
            let err = load(base(), None, &|k| (k == var).then(|| "1".to_owned()), &[])
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!(
                    "prompt.offload.{old} (from {var}): renamed: set {} instead",
                    env_var(new)
                )
            );
        }
        let file = write("[prompt.offload\n");
        let err = load(base(), Some(file.path()), &|_| None, &[]).unwrap_err().to_string();
        assert!(err.starts_with("config file "), "{err}");
    }

    #[test]
    fn tool_tables_configure_each_tool() {
        let file = write(
            "[prompt.offload.tools.github_search]\nthreshold_tokens = 500\nsections = [\"items\"]\ninline_keys = [\"total_count\"]\n[prompt.offload.tools.ls]\nenabled = false\n",
        );
        let c = load(base(), Some(file.path()), &|_| None, &[]).unwrap();
        assert_eq!(c.tools.len(), 2);
        let gh = c.tools.iter().find(|t| t.name == "github_search").unwrap();
        assert_eq!(
            (gh.threshold_tokens, gh.sections.as_deref(), gh.enabled),
            (Some(500), Some(&["items".to_owned()][..]), None)
        );
        assert_eq!(c.tools.iter().find(|t| t.name == "ls").unwrap().enabled, Some(false));
        let bad = write("[prompt.offload.tools.ls]\nsections = \"items\"\n");
        let err = load(base(), Some(bad.path()), &|_| None, &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("prompt.offload.tools.ls.sections (from ")
                && err.ends_with("expected a list of strings, got \"items\""),
            "{err}"
        );
        let bad = write("[prompt.offload.tools.ls]\nthreshold = 5\n");
        let err = load(base(), Some(bad.path()), &|_| None, &[]).unwrap_err().to_string();
        assert!(err.contains("known keys: enabled, threshold_tokens"), "{err}");
    }

    /// Every key works from the file, from the environment and as a flag's text, with the same
    /// effect; and docs/CONFIGURATION.md documents every key.
    #[test]
    fn every_key_works_from_file_environment_and_flag() {
        // key, its TOML value, its text (environment and flag), and the field it sets.
        type Check = fn(&Config) -> bool;
        let table: [(&str, &str, &str, Check); 11] = [
            ("enabled", "false", "false", |c| !c.enabled),
            ("threshold_tokens", "77", "77", |c| c.threshold_tokens == 77),
            ("ttl_seconds", "60", "60", |c| c.ttl_seconds == 60),
            ("output_dir", "\"/x\"", "/x", |c| c.output_dir == "/x"),
            ("prefix", "\"lro\"", "lro", |c| c.prefix == "lro"),
            ("descriptor", "\"bare\"", "bare", |c| {
                c.descriptor == DescriptorStyle::Bare
            }),
            ("schema_version", "\"0.2\"", "0.2", |c| c.schema_version == "0.2"),
            ("extract_tool", "true", "true", |c| c.extract_tool),
            ("recipes", "\"v1\"", "v1", |c| c.recipes == RecipeLibrary::V1),
            ("max_bytes", "1000", "1000", |c| c.max_bytes == 1000),
            ("max_files", "3", "3", |c| c.max_files == 3),
        ];
        assert_eq!(
            table.iter().map(|row| row.0).collect::<Vec<_>>(),
            KEYS,
            "the table walks every key"
        );
        let reference = include_str!("../../docs/CONFIGURATION.md");
        for (key, toml, text, check) in table {
            assert!(!check(&base()), "{key}: the test value must differ from the base");
            let file = write(&format!("[prompt.offload]\n{key} = {toml}\n"));
            assert!(
                check(&load(base(), Some(file.path()), &|_| None, &[]).unwrap()),
                "{key} from the file"
            );
            let var = env_var(key);
            let c = load(base(), None, &|k| (k == var).then(|| text.to_owned()), &[]).unwrap();
            assert!(check(&c), "{key} from {var}");
            let key_static = KEYS.iter().find(|k| **k == key).unwrap();
            assert!(
                check(&load(base(), None, &|_| None, &[flag(key_static, text)]).unwrap()),
                "{key} as a flag"
            );
            assert!(
                reference.contains(&format!("| `{key}` |")),
                "docs/CONFIGURATION.md's table lacks {key}"
            );
        }
    }

    #[test]
    fn other_sections_of_the_file_are_ignored() {
        let file = write("[server]\nport = 1\n[prompt]\nbudget = 3\n[prompt.offload]\nenabled = false\n");
        assert!(!load(base(), Some(file.path()), &|_| None, &[]).unwrap().enabled);
    }
}
