//! The LRO component: binds the `lro:component/lro` world to `lro-core`.
//!
//! Only type conversions live here; the logic is in `lro-core`, which is tested natively.

mod bindings {
    wit_bindgen::generate!({ path: "../wit", world: "lro" });
}

use bindings::exports::lro::component::{custodian, extractor, interceptor};
use bindings::lro::component::{events, types};

struct Lro;

fn config(c: types::Config) -> lro_core::Config {
    lro_core::Config {
        enabled: c.enabled,
        threshold: c.threshold,
        ttl: c.ttl,
        dir: c.dir,
        prefix: c.prefix,
        descriptor: match c.descriptor {
            types::DescriptorStyle::Full => lro_core::DescriptorStyle::Full,
            types::DescriptorStyle::Bare => lro_core::DescriptorStyle::Bare,
        },
        native: c.native,
        schema_version: c.schema_version,
        recipes: match c.recipes {
            types::RecipeLibrary::V2 => lro_core::RecipeLibrary::V2,
            types::RecipeLibrary::V1 => lro_core::RecipeLibrary::V1,
        },
        tools: c
            .tools
            .into_iter()
            .map(|t| lro_core::mcp::ToolSettings {
                name: t.name,
                enabled: t.enabled,
                threshold: t.threshold,
                sections: t.sections,
                inline_keys: t.inline_keys,
            })
            .collect(),
        max_bytes: c.max_bytes,
        max_files: c.max_files,
        dir_problem: c.dir_problem,
    }
}

fn detail(d: types::Detail) -> lro_core::Detail {
    match d {
        types::Detail::Light => lro_core::Detail::Light,
        types::Detail::Medium => lro_core::Detail::Medium,
        types::Detail::Full => lro_core::Detail::Full,
    }
}

fn operation(o: types::Operation) -> lro_core::Operation {
    match o {
        types::Operation::Recall => lro_core::Operation::Recall,
        types::Operation::Search => lro_core::Operation::Search,
        types::Operation::List => lro_core::Operation::List,
        types::Operation::Inject => lro_core::Operation::Inject,
    }
}

fn error(e: lro_core::Error) -> types::Error {
    match e {
        lro_core::Error::InvalidConfig(m) => types::Error::InvalidConfig(m),
        lro_core::Error::InvalidInput(m) => types::Error::InvalidInput(m),
        lro_core::Error::Io(m) => types::Error::Io(m),
        lro_core::Error::InvalidRequest(m) => types::Error::InvalidRequest(m),
        lro_core::Error::NotFound(m) => types::Error::NotFound(m),
        lro_core::Error::OutsideDirectory(m) => types::Error::OutsideDirectory(m),
        lro_core::Error::NotLroFile(m) => types::Error::NotLroFile(m),
        lro_core::Error::Expired(m) => types::Error::Expired(m),
        lro_core::Error::Corrupt(m) => types::Error::Corrupt(m),
        lro_core::Error::InvalidFilter(m) => types::Error::InvalidFilter(m),
        lro_core::Error::FilterFailed(m) => types::Error::FilterFailed(m),
    }
}

fn emit(event: lro_core::Event) {
    let event = match event {
        lro_core::Event::OffloadCreated {
            path,
            operation,
            count,
            tokens,
            bytes,
        } => events::Event::OffloadCreated(events::OffloadCreated {
            path,
            operation,
            count,
            tokens,
            bytes,
        }),
        lro_core::Event::OffloadWriteFailed {
            path,
            operation,
            error,
            total,
            returned,
        } => events::Event::OffloadWriteFailed(events::OffloadWriteFailed {
            path,
            operation,
            error,
            total,
            returned,
        }),
        lro_core::Event::OffloadFileExpired { path, created, expired } => {
            events::Event::OffloadFileExpired(events::OffloadFileExpired { path, created, expired })
        }
        lro_core::Event::OffloadFileEvicted { path, bytes, cap } => {
            events::Event::OffloadFileEvicted(events::OffloadFileEvicted { path, bytes, cap })
        }
    };
    events::emit(&event);
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
        let outcome = lro_core::offload(&config(c), &request, &mut emit).map_err(error)?;
        Ok(match outcome {
            lro_core::Outcome::Inline { text, tokens } => {
                interceptor::Outcome::Inline(interceptor::InlineResult { text, tokens })
            }
            lro_core::Outcome::Offloaded {
                descriptor,
                path,
                count,
                tokens,
                bytes,
            } => interceptor::Outcome::Offloaded(interceptor::OffloadedResult {
                descriptor,
                path,
                count,
                tokens,
                bytes,
            }),
            lro_core::Outcome::Degraded {
                payload,
                warning,
                total,
                returned,
            } => interceptor::Outcome::Degraded(interceptor::DegradedResult {
                payload,
                warning,
                total,
                returned,
            }),
        })
    }

    fn recipes(c: types::Config, d: types::Detail, file: Option<String>) -> Result<Vec<types::Recipe>, types::Error> {
        let c = config(c);
        c.validate().map_err(error)?;
        Ok(lro_core::recipes::library(c.recipes, detail(d), file.as_deref())
            .into_iter()
            .map(|r| types::Recipe {
                number: r.number,
                description: r.description,
                program: r.program,
                slurp: r.slurp,
                raw: r.raw,
                params: r
                    .params
                    .into_iter()
                    .map(|p| types::RecipeParam {
                        name: p.name,
                        default: p.default,
                    })
                    .collect(),
                command: r.command,
            })
            .collect())
    }

    fn intercept(c: types::Config, call: interceptor::ToolCall) -> Result<interceptor::ToolOutcome, types::Error> {
        use lro_core::mcp::{PassReason, ToolOutcome};
        let tool_call = lro_core::mcp::ToolCall {
            tool: &call.tool,
            arguments: &call.arguments,
            result: &call.result,
            meta: call.meta.as_deref(),
        };
        let outcome = lro_core::mcp::intercept(&config(c), &tool_call, &mut emit).map_err(error)?;
        Ok(match outcome {
            ToolOutcome::Unchanged { reason, tokens } => {
                let reason = match reason {
                    PassReason::UnderThreshold => interceptor::PassReason::UnderThreshold,
                    PassReason::Disabled => interceptor::PassReason::Disabled,
                    PassReason::ErrorResult => interceptor::PassReason::ErrorResult,
                    PassReason::NonTextContent => interceptor::PassReason::NonTextContent,
                    PassReason::Proxied => interceptor::PassReason::Proxied,
                    PassReason::BudgetedText => interceptor::PassReason::BudgetedText,
                };
                interceptor::ToolOutcome::Unchanged(interceptor::ToolUnchanged { reason, tokens })
            }
            ToolOutcome::Offloaded { result, files, tokens } => {
                interceptor::ToolOutcome::Offloaded(interceptor::ToolOffloaded { result, files, tokens })
            }
            ToolOutcome::Degraded { result, warning } => {
                interceptor::ToolOutcome::Degraded(interceptor::ToolDegraded { result, warning })
            }
        })
    }

    fn rewrite_tools(c: types::Config, tools: String) -> Result<String, types::Error> {
        lro_core::mcp::rewrite_tools(&config(c), &tools).map_err(error)
    }

    fn estimate(text: String) -> u32 {
        lro_core::estimate(&text)
    }
}

/// The host's wall clock, for expiry checks.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn extracted(e: lro_core::Extracted) -> extractor::ExtractResult {
    extractor::ExtractResult {
        values: e.values,
        raw: e.raw,
        total: e.total,
        truncated: e.truncated,
        text: e.text,
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
        lro_core::extract(&config(c), &request, now_ms())
            .map(extracted)
            .map_err(error)
    }

    fn tool_definition() -> String {
        lro_core::tool_definition().to_string()
    }

    fn call_tool(c: types::Config, arguments: String) -> Result<extractor::ExtractResult, types::Error> {
        lro_core::call_tool(&config(c), &arguments, now_ms())
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
        let report = lro_core::sweep(&config(c), now, &mut emit).map_err(error)?;
        Ok(custodian::SweepReport {
            deleted: report.deleted,
            kept: report.kept,
            failed: report
                .failed
                .into_iter()
                .map(|f| custodian::SweepFailure {
                    path: f.path,
                    reason: f.reason,
                })
                .collect(),
        })
    }
}

bindings::export!(Lro with_types_in bindings);
