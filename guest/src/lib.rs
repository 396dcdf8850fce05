//! The LRO component: binds the `lro:component/lro` world to `lro-core`.
//!
//! Only type conversions live here; the logic is in `lro-core`, which is tested natively.

mod bindings {
    wit_bindgen::generate!({ path: "../wit", world: "lro" });
}

use bindings::exports::lro::component::{custodian, interceptor};
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
        config(c).validate().map_err(error)?;
        Ok(lro_core::recipes::recipes(detail(d), file.as_deref())
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

    fn estimate(text: String) -> u32 {
        lro_core::estimate(&text)
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
