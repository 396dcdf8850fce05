//! `lro bench`'s descriptor section: descriptor sizes and the tokens they save, per style and
//! size.

use super::*;

pub(super) fn section(s: &Setup<'_>, out: &mut String, targets: &mut Vec<Target>) -> anyhow::Result<()> {
    let Setup { runtime, sizes, .. } = *s;
    writeln!(
        out,
        "\n## Descriptor size and token savings\n\nEstimated tokens (the component's own estimate) of the \
     text forwarded instead of the records, at each detail level (records of that level) and \
     descriptor style, beside the inline result it replaced. *LRO / inline* is the ratio the \
     paper reports in Table 5 (0.38× to 1.28× at n = 50 to 500, measured over whole agent \
     sessions, so only the direction compares); *saved* is 1 minus it. The paper's Table 1 \
     assumes a descriptor of about 800 tokens (D).\n"
    )?;
    writeln!(
        out,
        "| detail | records | inline | full descriptor | LRO / inline | saved | bare descriptor | LRO / inline |\n\
     |---|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    // Descriptors carry the file path 12 times (file_path, guidance, ten commands), so their size
    // depends on it: measure them where files go by default. Only the files made here are removed.
    let default_dir = lro_host::default_output_dir();
    let desc_config = Config {
        output_dir: default_dir
            .to_str()
            .context("the default output directory must be UTF-8")?
            .to_owned(),
        ..runtime.defaults()?
    };
    let bare_config = Config {
        descriptor: DescriptorStyle::Bare,
        ..desc_config.clone()
    };
    let mut path_len = 0;
    let (mut worst_full, mut worst_bare) = (0u32, 0u32);
    // The largest full descriptor of each level, with its path, for the breakdown below.
    let mut largest: Vec<(&str, String, String)> = Vec::new();
    for detail in [Detail::Light, Detail::Medium, Detail::Full] {
        for &n in sizes {
            let input = records(detail, n);
            let req = request(detail, &input);
            let (full, bare) = (
                runtime.offload(&desc_config, &req)?,
                runtime.offload(&bare_config, &req)?,
            );
            let (Outcome::Offloaded(full), Outcome::Offloaded(bare)) = (full, bare) else {
                bail!("{n} {detail:?} records were not offloaded");
            };
            std::fs::remove_file(&full.path)?;
            std::fs::remove_file(&bare.path)?;
            path_len = full.path.len();
            let full_tokens = runtime.estimate(&full.descriptor)?;
            if n == *sizes.last().expect("sizes") {
                largest.push((detail_name(detail), full.descriptor.clone(), full.path.clone()));
            }
            let bare_tokens = runtime.estimate(&bare.descriptor)?;
            worst_full = worst_full.max(full_tokens);
            worst_bare = worst_bare.max(bare_tokens);
            let inline = full.tokens;
            let ratio = f64::from(full_tokens) / f64::from(inline);
            writeln!(
                out,
                "| {} | {n} | {inline} | {full_tokens} | {ratio:.3}× | {:.1}% | {bare_tokens} | {:.4}× |",
                detail_name(detail),
                (1.0 - ratio) * 100.0,
                f64::from(bare_tokens) / f64::from(inline)
            )?;
        }
    }
    writeln!(
        out,
        "\nFiles in the default output directory, `{}`: paths of {path_len} characters. Each further \
     character of the path adds 3 tokens to a full descriptor (12 copies, 4 characters a token).",
        default_dir.display()
    )?;
    writeln!(
        out,
        "\nWhere the tokens of a full descriptor go (the largest of each level): each member of the \
         descriptor object as `\"name\":value`, and, across all of them, what the copies of the file \
         path cost (the descriptor against the same text with the path left out of it).\n\n\
         | detail | summary | file_path | line_schema | jq_recipes | guidance | whole | of which path copies |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for (detail, descriptor, path) in &largest {
        let value: serde_json::Value = serde_json::from_str(descriptor).context("a descriptor is JSON")?;
        let mut row = format!("| {detail} |");
        for key in ["summary", "file_path", "line_schema", "jq_recipes", "guidance"] {
            let member = format!("\"{key}\":{}", value.get(key).context("a descriptor member")?);
            write!(row, " {} |", runtime.estimate(&member)?)?;
        }
        let whole = runtime.estimate(descriptor)?;
        let without_path = runtime.estimate(&descriptor.replace(path.as_str(), ""))?;
        writeln!(out, "{row} {whole} | {} |", whole - without_path)?;
    }
    targets.push(Target {
        what: "full descriptor, largest at any level and size".into(),
        figure: format!("{worst_full} tokens (target ≤ 800; file paths of {path_len} characters)"),
        met: worst_full <= 800,
    });
    targets.push(Target {
        what: "bare descriptor, largest".into(),
        figure: format!("{worst_bare} tokens (target ≤ 100)"),
        met: worst_bare <= 100,
    });
    Ok(())
}
