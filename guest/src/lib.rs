//! The LRO component: binds the `lro:component/lro` world to `lro-core`.
//!
//! Only the glue lives here: each exported function converts its arguments ([`convert`]), calls
//! lro-core, and converts the answer back. The logic is in `lro-core`, which is tested as ordinary Rust.

mod bindings {
    wit_bindgen::generate!({ path: "../wit", world: "lro" });
}
mod convert;

use bindings::exports::lro::component::{configuration, custodian, extractor, interceptor};
use bindings::lro::component::{events, types};
use convert::{config, detail, error, extracted, operation};

struct Lro;

/// Reports an event to the host as it happens.
fn emit(event: lro_core::Event) {
    events::emit(&convert::event(event));
}

impl interceptor::Guest for Lro {
    fn offload(c: types::Config, r: interceptor::Request) -> Result<interceptor::Outcome, types::Error> {
        let request = lro_core::offload::Request {
            operation: operation(r.operation),
            query: r.query.as_deref(),
            detail: r.detail.map(detail),
            records: &r.records,
            text: r.text.as_deref(),
        };
        lro_core::offload(&config(c), &request, &mut emit)
            .map(convert::outcome)
            .map_err(error)
    }

    fn recipes(c: types::Config, d: types::Detail, file: Option<String>) -> Result<Vec<types::Recipe>, types::Error> {
        let c = config(c);
        c.validate().map_err(error)?;
        Ok(lro_core::recipes::library(c.recipes, detail(d), file.as_deref())
            .into_iter()
            .map(convert::recipe)
            .collect())
    }

    fn intercept(c: types::Config, call: interceptor::ToolCall) -> Result<interceptor::ToolOutcome, types::Error> {
        let tool_call = lro_core::mcp::ToolCall {
            tool: &call.tool,
            arguments: &call.arguments,
            result: call.result.into(),
            meta: call.meta.as_deref(),
        };
        lro_core::mcp::intercept(&config(c), tool_call, &mut emit)
            .map(convert::tool_outcome)
            .map_err(error)
    }

    fn intercept_file(
        c: types::Config,
        call: interceptor::ToolCall,
        source: interceptor::ResultFile,
    ) -> Result<interceptor::ToolOutcome, types::Error> {
        let result = read_range(&c.output_dir, &source).map_err(types::Error::InvalidInput)?;
        let tool_call = lro_core::mcp::ToolCall {
            tool: &call.tool,
            arguments: &call.arguments,
            result: result.into(),
            meta: call.meta.as_deref(),
        };
        lro_core::mcp::intercept(&config(c), tool_call, &mut emit)
            .map(convert::tool_outcome)
            .map_err(error)
    }

    fn rewrite_tools(c: types::Config, tools: String) -> Result<String, types::Error> {
        lro_core::mcp::rewrite_tools(&config(c), &tools).map_err(error)
    }

    fn estimate(text: String) -> u32 {
        lro_core::estimate(&text)
    }
}

impl extractor::Guest for Lro {
    fn extract(c: types::Config, r: extractor::ExtractRequest) -> Result<extractor::ExtractResult, types::Error> {
        let request = lro_core::ExtractRequest {
            path: &r.path,
            recipe: r.recipe,
            query: r.query.as_deref(),
            params: r.params.as_deref(),
            slurp: r.slurp,
            limit: r.limit,
        };
        lro_core::extract(&config(c), &request, lro_core::time::now_ms())
            .map(extracted)
            .map_err(error)
    }

    fn tool_definition() -> String {
        lro_core::tool_definition().to_string()
    }

    fn call_tool(c: types::Config, arguments: String) -> Result<extractor::ExtractResult, types::Error> {
        lro_core::call_tool(&config(c), &arguments, lro_core::time::now_ms())
            .map(extracted)
            .map_err(error)
    }

    fn query(
        filter: String,
        input: String,
        slurp: bool,
        raw: bool,
        limit: Option<u32>,
    ) -> Result<extractor::ExtractResult, types::Error> {
        lro_core::query(&filter, &input, slurp, raw, limit)
            .map(extracted)
            .map_err(error)
    }
}

impl custodian::Guest for Lro {
    fn sweep(c: types::Config, now: u64) -> Result<custodian::SweepReport, types::Error> {
        lro_core::sweep(&config(c), now, &mut emit)
            .map(convert::sweep_report)
            .map_err(error)
    }
}

impl configuration::Guest for Lro {
    fn defaults() -> types::Config {
        convert::wit_config(lro_core::Config::default())
    }

    fn load(base: types::Config, layers: configuration::ConfigLayers) -> Result<types::Config, types::Error> {
        use lro_core::layers::{Layer, Setting};
        let environment: Vec<(String, String)> = layers.environment.into_iter().map(|v| (v.name, v.value)).collect();
        let settings: Vec<Setting> = layers
            .settings
            .into_iter()
            .map(|s| Setting {
                key: s.key,
                value: s.value,
                source: s.source,
            })
            .collect();
        let mut order = Vec::with_capacity(4);
        if let Some(d) = &layers.file {
            order.push(Layer::Toml {
                name: &d.name,
                text: &d.text,
            });
        }
        order.push(Layer::Environment(&environment));
        order.push(Layer::Settings(&settings));
        if let Some(d) = &layers.arguments {
            order.push(Layer::Json {
                name: &d.name,
                text: &d.text,
            });
        }
        lro_core::layers::load(config(base), &order)
            .map(convert::wit_config)
            .map_err(error)
    }
}

bindings::export!(Lro with_types_in bindings);

/// The text of `source`'s range, read into one buffer of its exact size (the one copy of a large
/// result the interceptor holds). Errors name the file and what was wrong.
fn read_range(dir: &str, source: &interceptor::ResultFile) -> Result<String, String> {
    use std::io::{Read, Seek, SeekFrom};
    let name = &source.name;
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
        return Err(format!("result-file name {name:?} is not a plain file name"));
    }
    let path = std::path::Path::new(dir).join(name);
    let length = usize::try_from(source.length)
        .map_err(|_| format!("{name}: a range of {} bytes is too long", source.length))?;
    let mut file = std::fs::File::open(&path).map_err(|e| format!("{name}: cannot open it: {e}"))?;
    // Checked before any memory is taken for the range.
    let size = file
        .metadata()
        .map_err(|e| format!("{name}: cannot read its size: {e}"))?
        .len();
    if source.offset.checked_add(source.length).is_none_or(|end| end > size) {
        return Err(format!(
            "{name}: the range of {} bytes at {} is past the end of the file ({size} bytes)",
            source.length, source.offset
        ));
    }
    file.seek(SeekFrom::Start(source.offset))
        .map_err(|e| format!("{name}: cannot seek to byte {}: {e}", source.offset))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(length)
        .map_err(|_| format!("{name}: {length} bytes do not fit in the component's memory"))?;
    bytes.resize(length, 0);
    // A quarter MiB a read: the host copies each read through a buffer of the size asked for, so
    // one read of the whole range would hold the result twice.
    let mut read = 0;
    while read < length {
        let end = (read + (256 << 10)).min(length);
        match file.read(&mut bytes[read..end]) {
            Ok(0) => {
                return Err(format!(
                    "{name}: the range {}..{} is past the end of the file ({read} of {length} bytes read)",
                    source.offset,
                    source.offset + source.length
                ));
            }
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("{name}: cannot read it: {e}")),
        }
    }
    String::from_utf8(bytes).map_err(|e| format!("{name}: the result is not UTF-8: {e}"))
}
