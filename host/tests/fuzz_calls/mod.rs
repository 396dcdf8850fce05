//! What the `config_file` fuzz target runs on one input, shared by the target
//! (`fuzz/fuzz_targets/config_file.rs`, under libFuzzer) and by `host/tests/fuzz_replay.rs`
//! (every file of `tests/fuzz/config_file/`), so a finding replays exactly as it was found:
//! the text as a TOML config file, and as the value of each `ATLATL_PROMPT__OFFLOAD__*`
//! variable. It returns normally for `Ok` or a typed `ConfigError`; a panic is a finding.

use lro_host::{CONFIG_KEYS, ConfigError, Overrides, Settings};

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

pub fn config_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("lro.toml");
    std::fs::write(&file, text).expect("writing the file");
    if let Some(settings) = typed(Settings::load(Some(&file), &|_| None, &Overrides::default())) {
        typed(settings.config());
    }
    for key in CONFIG_KEYS {
        let var = format!("ATLATL_PROMPT__OFFLOAD__{}", key.to_ascii_uppercase());
        let env = |name: &str| (name == var).then(|| text.to_owned());
        if let Some(settings) = typed(Settings::load(None, &env, &Overrides::default())) {
            typed(settings.config());
        }
    }
}
