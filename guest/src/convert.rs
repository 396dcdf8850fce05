//! Conversions between the WIT types (generated in `bindings`) and lro-core's. Field by field and
//! case by case, with no defaults of their own: a field added on either side fails to compile
//! here until it is mapped.

use crate::bindings::exports::lro::component::{custodian, extractor, interceptor};
use crate::bindings::lro::component::{events, types};

/// A WIT config as lro-core's.
pub fn config(c: types::Config) -> lro_core::Config {
    lro_core::Config {
        enabled: c.enabled,
        threshold_tokens: c.threshold_tokens,
        ttl_seconds: c.ttl_seconds,
        output_dir: c.output_dir,
        prefix: c.prefix,
        descriptor: match c.descriptor {
            types::DescriptorStyle::Full => lro_core::DescriptorStyle::Full,
            types::DescriptorStyle::Bare => lro_core::DescriptorStyle::Bare,
        },
        extract_tool: c.extract_tool,
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
                threshold_tokens: t.threshold_tokens,
                sections: t.sections,
                inline_keys: t.inline_keys,
            })
            .collect(),
        max_bytes: c.max_bytes,
        max_files: c.max_files,
        dir_problem: c.dir_problem,
    }
}

/// lro-core's config as a WIT one (for `configuration.defaults`).
pub fn wit_config(c: lro_core::Config) -> types::Config {
    types::Config {
        enabled: c.enabled,
        threshold_tokens: c.threshold_tokens,
        ttl_seconds: c.ttl_seconds,
        output_dir: c.output_dir,
        prefix: c.prefix,
        descriptor: match c.descriptor {
            lro_core::DescriptorStyle::Full => types::DescriptorStyle::Full,
            lro_core::DescriptorStyle::Bare => types::DescriptorStyle::Bare,
        },
        extract_tool: c.extract_tool,
        schema_version: c.schema_version,
        recipes: match c.recipes {
            lro_core::RecipeLibrary::V2 => types::RecipeLibrary::V2,
            lro_core::RecipeLibrary::V1 => types::RecipeLibrary::V1,
        },
        tools: c
            .tools
            .into_iter()
            .map(|t| types::ToolSettings {
                name: t.name,
                enabled: t.enabled,
                threshold_tokens: t.threshold_tokens,
                sections: t.sections,
                inline_keys: t.inline_keys,
            })
            .collect(),
        max_bytes: c.max_bytes,
        max_files: c.max_files,
        dir_problem: c.dir_problem,
    }
}

/// A WIT detail level as lro-core's.
pub fn detail(d: types::Detail) -> lro_core::Detail {
    match d {
        types::Detail::Light => lro_core::Detail::Light,
        types::Detail::Medium => lro_core::Detail::Medium,
        types::Detail::Full => lro_core::Detail::Full,
    }
}

/// A WIT operation as lro-core's.
pub fn operation(o: types::Operation) -> lro_core::Operation {
    match o {
        types::Operation::Recall => lro_core::Operation::Recall,
        types::Operation::Search => lro_core::Operation::Search,
        types::Operation::List => lro_core::Operation::List,
        types::Operation::Inject => lro_core::Operation::Inject,
    }
}

/// lro-core's error as the WIT one: the same case, the same text.
pub fn error(e: lro_core::Error) -> types::Error {
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

/// lro-core's event as the WIT one.
pub fn event(event: lro_core::Event) -> events::Event {
    match event {
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
    }
}

/// The outcome of `offload` as the WIT one.
pub fn outcome(outcome: lro_core::Outcome) -> interceptor::Outcome {
    match outcome {
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
    }
}

/// A recipe of the library as the WIT one.
pub fn recipe(r: lro_core::Recipe) -> types::Recipe {
    types::Recipe {
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
    }
}

/// The outcome of `intercept` as the WIT one.
pub fn tool_outcome(outcome: lro_core::mcp::ToolOutcome) -> interceptor::ToolOutcome {
    use lro_core::mcp::{PassReason, ToolOutcome};
    match outcome {
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
    }
}

/// An extraction's result as the WIT one.
pub fn extracted(e: lro_core::Extracted) -> extractor::ExtractResult {
    extractor::ExtractResult {
        values: e.values,
        raw: e.raw,
        total: e.total,
        truncated: e.truncated,
        text: e.text,
    }
}

/// A sweep's report as the WIT one.
pub fn sweep_report(report: lro_core::SweepReport) -> custodian::SweepReport {
    custodian::SweepReport {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `configuration.defaults` is lro-core's `Config::default()`, every field carried over.
    #[test]
    fn configs_convert_both_ways_without_loss() {
        let defaults = lro_core::Config::default();
        assert_eq!(config(wit_config(defaults.clone())), defaults);
        let set = lro_core::Config {
            enabled: false,
            threshold_tokens: 7,
            ttl_seconds: 9,
            output_dir: "/srv/lro".to_owned(),
            prefix: "p".to_owned(),
            descriptor: lro_core::DescriptorStyle::Bare,
            extract_tool: true,
            schema_version: "2".to_owned(),
            recipes: lro_core::RecipeLibrary::V1,
            tools: vec![lro_core::mcp::ToolSettings {
                name: "t".to_owned(),
                enabled: Some(true),
                threshold_tokens: Some(3),
                sections: Some(vec!["items".to_owned()]),
                inline_keys: None,
            }],
            max_bytes: 1,
            max_files: 2,
            dir_problem: Some("read-only".to_owned()),
        };
        assert_eq!(config(wit_config(set.clone())), set);
    }
}
