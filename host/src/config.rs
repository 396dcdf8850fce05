//! The `[prompt.offload]` configuration: defaults < TOML file < environment < command-line flags.

use std::path::{Path, PathBuf};

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
    #[error("unknown key prompt.offload.{key} in {file}; known keys: {known}", known = KEYS.join(", "))]
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

/// The keys of `[prompt.offload]` (besides the `tools` tables), as the README's table lists them.
pub const KEYS: [&str; 11] = [
    "enabled",
    "threshold_tokens",
    "ttl_seconds",
    "output_dir",
    "prefix",
    "descriptor",
    "schema_version",
    "native",
    "recipes",
    "max_bytes",
    "max_files",
];

/// Effective settings, before the offload directory is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `enabled`: offload at all.
    pub enabled: bool,
    /// `threshold_tokens`: offload above this estimate.
    pub threshold_tokens: u32,
    /// `ttl_seconds`: how long files live.
    pub ttl_seconds: u64,
    /// `output_dir`: where files go; empty means [`Settings::default_output_dir`].
    pub output_dir: String,
    /// `prefix`: file name prefix.
    pub prefix: String,
    /// `descriptor`: `full` or `bare`.
    pub descriptor: DescriptorStyle,
    /// `schema_version`: MIF version in headers.
    pub schema_version: String,
    /// `native`: the host offers `lro_extract`, so guidance points there.
    pub native: bool,
    /// `recipes`: `v2` (the spec's library) or `v1` (the MIF v1 list).
    pub recipes: RecipeLibrary,
    /// `[prompt.offload.tools.NAME]` tables: per-tool `enabled`, `threshold`, `sections`, `inline_keys`.
    pub tools: Vec<ToolSettings>,
    /// `max_bytes`: cap on the bytes of all LRO files in the directory; 0 means none.
    pub max_bytes: u64,
    /// `max_files`: cap on the number of LRO files in the directory; 0 means none.
    pub max_files: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            threshold_tokens: 1600,
            ttl_seconds: 3600,
            output_dir: String::new(),
            prefix: "atlatl".into(),
            descriptor: DescriptorStyle::Full,
            schema_version: "0.1".into(),
            native: false,
            recipes: RecipeLibrary::V2,
            tools: Vec::new(),
            max_bytes: lro_core::DEFAULT_MAX_BYTES,
            max_files: lro_core::DEFAULT_MAX_FILES,
        }
    }
}

/// Values given on the command line; `None` leaves the lower layers in force.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--disabled`.
    pub enabled: Option<bool>,
    /// `--threshold`.
    pub threshold_tokens: Option<u32>,
    /// `--ttl`.
    pub ttl_seconds: Option<u64>,
    /// `--output-dir`.
    pub output_dir: Option<String>,
    /// `--prefix`.
    pub prefix: Option<String>,
    /// `--descriptor`.
    pub descriptor: Option<DescriptorStyle>,
    /// `--schema-version`.
    pub schema_version: Option<String>,
    /// `--native`.
    pub native: Option<bool>,
    /// `--recipes`.
    pub recipes: Option<RecipeLibrary>,
    /// `--max-bytes`.
    pub max_bytes: Option<u64>,
    /// `--max-files`.
    pub max_files: Option<u32>,
}

/// A raw value from one layer.
enum Raw<'a> {
    Toml(&'a toml::Value),
    Text(&'a str),
}

impl Settings {
    /// Layers `file` (if any), the `ATLATL_PROMPT__OFFLOAD__*` variables read through `env`, and
    /// `flags` over the defaults.
    pub fn load(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        flags: &Overrides,
    ) -> Result<Self, ConfigError> {
        let mut settings = Settings::default();
        if let Some(path) = file {
            settings.apply_file(path)?;
        }
        for key in KEYS {
            let var = format!("ATLATL_PROMPT__OFFLOAD__{}", key.to_ascii_uppercase());
            if let Some(value) = env(&var) {
                settings.set(key, Raw::Text(&value), &var)?;
            }
        }
        let flags = flags.clone();
        settings.enabled = flags.enabled.unwrap_or(settings.enabled);
        settings.threshold_tokens = flags.threshold_tokens.unwrap_or(settings.threshold_tokens);
        settings.ttl_seconds = flags.ttl_seconds.unwrap_or(settings.ttl_seconds);
        settings.output_dir = flags.output_dir.unwrap_or(settings.output_dir);
        settings.prefix = flags.prefix.unwrap_or(settings.prefix);
        settings.descriptor = flags.descriptor.unwrap_or(settings.descriptor);
        settings.schema_version = flags.schema_version.unwrap_or(settings.schema_version);
        settings.native = flags.native.unwrap_or(settings.native);
        settings.recipes = flags.recipes.unwrap_or(settings.recipes);
        settings.max_bytes = flags.max_bytes.unwrap_or(settings.max_bytes);
        settings.max_files = flags.max_files.unwrap_or(settings.max_files);
        Ok(settings)
    }

    /// [`Settings::load`] with the process environment.
    pub fn from_environment(file: Option<&Path>, flags: &Overrides) -> Result<Self, ConfigError> {
        Self::load(file, &|name| std::env::var(name).ok(), flags)
    }

    /// These settings with another output directory.
    pub fn with_output_dir(self, dir: impl Into<String>) -> Self {
        Settings {
            output_dir: dir.into(),
            ..self
        }
    }

    /// The directory used when `output_dir` is empty: `lro-{uid}` in the system temporary
    /// directory. The spec says the temporary directory itself; a private subdirectory keeps the
    /// component's sandbox (which is exactly this directory) away from everyone else's files.
    pub fn default_output_dir() -> PathBuf {
        std::env::temp_dir().join(format!("lro-{}", rustix::process::geteuid().as_raw()))
    }

    /// The component's config record.
    pub fn config(&self) -> Result<Config, ConfigError> {
        let dir = if self.output_dir.is_empty() {
            Self::default_output_dir()
        } else {
            PathBuf::from(&self.output_dir)
        };
        let dir = dir.to_str().ok_or_else(|| ConfigError::Invalid {
            key: "output_dir".into(),
            source_name: "settings".into(),
            message: "the path is not valid UTF-8".into(),
        })?;
        Ok(Config {
            enabled: self.enabled,
            threshold: self.threshold_tokens,
            ttl: self.ttl_seconds,
            dir: dir.to_owned(),
            prefix: self.prefix.clone(),
            descriptor: self.descriptor,
            native: self.native,
            schema_version: self.schema_version.clone(),
            recipes: self.recipes,
            tools: self.tools.clone(),
            max_bytes: self.max_bytes,
            max_files: self.max_files,
            dir_problem: None,
        })
    }

    fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
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
                for (name, table) in tools {
                    self.tools.push(tool_settings(name, table, &name_of(path))?);
                }
                continue;
            }
            if !KEYS.contains(&key.as_str()) {
                return Err(ConfigError::Unknown {
                    key: key.clone(),
                    file: name.clone(),
                });
            }
            self.set(key, Raw::Toml(value), &name)?;
        }
        Ok(())
    }

    fn set(&mut self, key: &str, raw: Raw<'_>, source: &str) -> Result<(), ConfigError> {
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
            "enabled" => self.enabled = boolean()?,
            "native" => self.native = boolean()?,
            "threshold_tokens" => self.threshold_tokens = number(u64::from(u32::MAX))? as u32,
            "ttl_seconds" => self.ttl_seconds = number(u64::MAX / 1000)?,
            "max_bytes" => self.max_bytes = number(u64::MAX)?,
            "max_files" => self.max_files = number(u64::from(u32::MAX))? as u32,
            "output_dir" => self.output_dir = string()?,
            "prefix" => self.prefix = string()?,
            "schema_version" => self.schema_version = string()?,
            "descriptor" => {
                self.descriptor = match string()?.as_str() {
                    "full" => DescriptorStyle::Full,
                    "bare" => DescriptorStyle::Bare,
                    _ => return Err(invalid(format!("expected \"full\" or \"bare\", got {shown}"))),
                }
            }
            "recipes" => {
                self.recipes = match string()?.as_str() {
                    "v2" => RecipeLibrary::V2,
                    "v1" => RecipeLibrary::V1,
                    _ => return Err(invalid(format!("expected \"v2\" or \"v1\", got {shown}"))),
                }
            }
            _ => unreachable!("KEYS lists every key handled here"),
        }
        Ok(())
    }
}

fn name_of(path: &Path) -> String {
    path.display().to_string()
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
        threshold: None,
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
            "threshold" | "threshold_tokens" => {
                let n = v.as_integer().and_then(|i| u32::try_from(i).ok());
                tool.threshold =
                    Some(n.ok_or_else(|| {
                        invalid(key, format!("expected a whole number from 0 to 4294967295, got {v}"))
                    })?);
            }
            "sections" => tool.sections = Some(strings(key, v)?),
            "inline_keys" => tool.inline_keys = Some(strings(key, v)?),
            _ => {
                return Err(invalid(
                    key,
                    "unknown key; known keys: enabled, threshold, sections, inline_keys".into(),
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

    fn write(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    #[test]
    fn flags_beat_environment_beat_file_beat_defaults() {
        let file = write("[prompt.offload]\nthreshold_tokens = 100\nttl_seconds = 60\nprefix = \"lro\"\n");
        let env: HashMap<&str, &str> = HashMap::from([
            ("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "200"),
            ("ATLATL_PROMPT__OFFLOAD__TTL_SECONDS", "70"),
        ]);
        let lookup = |k: &str| env.get(k).map(|v| (*v).to_owned());
        let flags = Overrides {
            threshold_tokens: Some(300),
            ..Overrides::default()
        };
        let s = Settings::load(Some(file.path()), &lookup, &flags).unwrap();
        assert_eq!((s.threshold_tokens, s.ttl_seconds, s.prefix.as_str()), (300, 70, "lro"));
        let s = Settings::load(Some(file.path()), &lookup, &Overrides::default()).unwrap();
        assert_eq!(s.threshold_tokens, 200);
        let s = Settings::load(Some(file.path()), &|_| None, &Overrides::default()).unwrap();
        assert_eq!((s.threshold_tokens, s.ttl_seconds), (100, 60));
        let s = Settings::load(None, &|_| None, &Overrides::default()).unwrap();
        assert_eq!(s, Settings::default());
    }

    #[test]
    fn bad_values_name_the_key_and_source() {
        let env = |k: &str| (k == "ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS").then(|| "lots".to_owned());
        let err = Settings::load(None, &env, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "prompt.offload.threshold_tokens (from ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS): expected a whole number from 0 to 4294967295, got \"lots\""
        );
        let file = write("[prompt.offload]\nenabled = \"yes\"\n");
        let err = Settings::load(Some(file.path()), &|_| None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("prompt.offload.enabled (from ") && err.ends_with("expected true or false, got \"yes\""),
            "{err}"
        );
        let file = write("[prompt.offload]\ndescriptor = \"rich\"\n");
        let err = Settings::load(Some(file.path()), &|_| None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("expected \"full\" or \"bare\", got \"rich\""), "{err}");
        let file = write("[prompt.offload]\nthreshold = 5\n");
        let err = Settings::load(Some(file.path()), &|_| None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("unknown key prompt.offload.threshold in"), "{err}");
        let file = write("[prompt.offload\n");
        let err = Settings::load(Some(file.path()), &|_| None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("config file "), "{err}");
    }

    #[test]
    fn tool_tables_configure_each_tool() {
        let file = write(
            "[prompt.offload.tools.github_search]\nthreshold = 500\nsections = [\"items\"]\ninline_keys = [\"total_count\"]\n[prompt.offload.tools.ls]\nenabled = false\n",
        );
        let s = Settings::load(Some(file.path()), &|_| None, &Overrides::default()).unwrap();
        assert_eq!(s.tools.len(), 2);
        let gh = s.tools.iter().find(|t| t.name == "github_search").unwrap();
        assert_eq!(
            (gh.threshold, gh.sections.as_deref(), gh.enabled),
            (Some(500), Some(&["items".to_owned()][..]), None)
        );
        assert_eq!(s.tools.iter().find(|t| t.name == "ls").unwrap().enabled, Some(false));
        let bad = write("[prompt.offload.tools.ls]\nsections = \"items\"\n");
        let err = Settings::load(Some(bad.path()), &|_| None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("prompt.offload.tools.ls.sections (from ")
                && err.ends_with("expected a list of strings, got \"items\""),
            "{err}"
        );
    }

    /// Every key works from the file, from the environment and from its flag, with the same
    /// effect; and the README's configuration table documents every key.
    #[test]
    fn every_key_works_from_file_environment_and_flag() {
        // key, its TOML value, its environment text, the flag's value, and the field it sets.
        type Check = fn(&Settings) -> bool;
        let table: [(&str, &str, &str, Overrides, Check); 11] = [
            (
                "enabled",
                "false",
                "false",
                Overrides {
                    enabled: Some(false),
                    ..Overrides::default()
                },
                |s| !s.enabled,
            ),
            (
                "threshold_tokens",
                "77",
                "77",
                Overrides {
                    threshold_tokens: Some(77),
                    ..Overrides::default()
                },
                |s| s.threshold_tokens == 77,
            ),
            (
                "ttl_seconds",
                "60",
                "60",
                Overrides {
                    ttl_seconds: Some(60),
                    ..Overrides::default()
                },
                |s| s.ttl_seconds == 60,
            ),
            (
                "output_dir",
                "\"/x\"",
                "/x",
                Overrides {
                    output_dir: Some("/x".into()),
                    ..Overrides::default()
                },
                |s| s.output_dir == "/x",
            ),
            (
                "prefix",
                "\"lro\"",
                "lro",
                Overrides {
                    prefix: Some("lro".into()),
                    ..Overrides::default()
                },
                |s| s.prefix == "lro",
            ),
            (
                "descriptor",
                "\"bare\"",
                "bare",
                Overrides {
                    descriptor: Some(DescriptorStyle::Bare),
                    ..Overrides::default()
                },
                |s| s.descriptor == DescriptorStyle::Bare,
            ),
            (
                "schema_version",
                "\"0.2\"",
                "0.2",
                Overrides {
                    schema_version: Some("0.2".into()),
                    ..Overrides::default()
                },
                |s| s.schema_version == "0.2",
            ),
            (
                "native",
                "true",
                "true",
                Overrides {
                    native: Some(true),
                    ..Overrides::default()
                },
                |s| s.native,
            ),
            (
                "recipes",
                "\"v1\"",
                "v1",
                Overrides {
                    recipes: Some(RecipeLibrary::V1),
                    ..Overrides::default()
                },
                |s| s.recipes == RecipeLibrary::V1,
            ),
            (
                "max_bytes",
                "1000",
                "1000",
                Overrides {
                    max_bytes: Some(1000),
                    ..Overrides::default()
                },
                |s| s.max_bytes == 1000,
            ),
            (
                "max_files",
                "3",
                "3",
                Overrides {
                    max_files: Some(3),
                    ..Overrides::default()
                },
                |s| s.max_files == 3,
            ),
        ];
        assert_eq!(
            table.iter().map(|row| row.0).collect::<Vec<_>>(),
            KEYS,
            "the table walks every key"
        );
        let readme = include_str!("../../README.md");
        for (key, toml, env, flags, check) in table {
            assert!(
                !check(&Settings::default()),
                "{key}: the test value must differ from the default"
            );
            let file = write(&format!("[prompt.offload]\n{key} = {toml}\n"));
            let s = Settings::load(Some(file.path()), &|_| None, &Overrides::default()).unwrap();
            assert!(check(&s), "{key} from the file");
            let var = format!("ATLATL_PROMPT__OFFLOAD__{}", key.to_ascii_uppercase());
            let s = Settings::load(None, &|k| (k == var).then(|| env.to_owned()), &Overrides::default()).unwrap();
            assert!(check(&s), "{key} from {var}");
            let s = Settings::load(None, &|_| None, &flags).unwrap();
            assert!(check(&s), "{key} from its flag");
            assert!(
                readme.contains(&format!("| `{key}` |")),
                "README's configuration table lacks {key}"
            );
        }
    }

    #[test]
    fn other_sections_of_the_file_are_ignored() {
        let file = write("[server]\nport = 1\n[prompt]\nbudget = 3\n[prompt.offload]\nenabled = false\n");
        let s = Settings::load(Some(file.path()), &|_| None, &Overrides::default()).unwrap();
        assert!(!s.enabled);
    }
}
