//! What the `config_file` fuzz target runs on one input, shared by the target
//! (`fuzz/fuzz_targets/config_file.rs`, under libFuzzer) and by `cli/tests/all/fuzz_replay.rs`
//! (every file of `tests/fuzz/config_file/`), so a finding replays exactly as it was found:
//! the text as a TOML config file, as the value of each `ATLATL_PROMPT__OFFLOAD__*` variable,
//! as each key's flag and as each key's JSON value. It calls lro-core's `layers::load`, which
//! the component's `configuration.load` runs, natively (the fuzzer needs no component). It
//! returns normally for `Ok` or an `InvalidConfig` error with a message; a panic is a finding.

use lro_core::layers::{self, KEYS, Layer, Setting};
use lro_core::{Config, Error};

/// An `Err` must be a config error with a message.
fn typed(result: Result<Config, Error>) {
    match result {
        Ok(_) => {}
        Err(Error::InvalidConfig(m)) => assert!(!m.is_empty(), "an error without a message"),
        Err(other) => panic!("not a config error: {other:?}"),
    }
}

pub fn config_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let load = |layer: Layer<'_>| typed(layers::load(Config::default(), &[layer]));
    load(Layer::Toml { name: "lro.toml", text });
    load(Layer::Json {
        name: "the arguments",
        text,
    });
    for key in KEYS {
        let vars = [(layers::env_var(key), text.to_owned())];
        load(Layer::Environment(&vars));
        let settings = [Setting {
            key: (*key).to_owned(),
            value: text.to_owned(),
            source: "--flag".to_owned(),
        }];
        load(Layer::Settings(&settings));
        let json = format!("{{\"{key}\": {text}}}");
        load(Layer::Json {
            name: "the arguments",
            text: &json,
        });
    }
}
