//! What the `config_file` fuzz target runs on one input, shared by the target
//! (`fuzz/fuzz_targets/config_file.rs`, under libFuzzer) and by `cli/tests/all/fuzz_replay.rs`
//! (every file of `tests/fuzz/config_file/`), so a finding replays exactly as it was found:
//! the text as a TOML config file, as the value of each `ATLATL_PROMPT__OFFLOAD__*` variable,
//! and as each key's flag. It returns normally for `Ok` or a typed `ConfigError`; a panic is a
//! finding.

use lro_host::config::{self, ConfigError, Flag, KEYS};
use lro_host::{Config, DescriptorStyle, RecipeLibrary};

/// An `Err` must be a typed config error with a message.
fn typed<T>(result: Result<T, ConfigError>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an error without a message: {e:?}");
            None
        }
    }
}

/// The layers go over any config; the fuzzer needs no component to get the defaults.
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

pub fn config_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = crate::common::tempdir().expect("a temporary directory");
    let file = dir.path().join("lro.toml");
    std::fs::write(&file, text).expect("writing the file");
    typed(config::load(base(), Some(&file), &|_| None, &[]));
    for key in KEYS {
        let var = config::env_var(key);
        let env = |name: &str| (name == var).then(|| text.to_owned());
        typed(config::load(base(), None, &env, &[]));
        let flag = Flag {
            key,
            name: "--flag",
            value: text.to_owned(),
        };
        typed(config::load(base(), None, &|_| None, &[flag]));
    }
}
