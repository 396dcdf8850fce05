//! `lro bench`'s extraction section: every recipe and the common queries over offloaded files,
//! through the component and as machine code, and a large file under the default limits.

use super::*;

pub(super) fn section(s: &Setup<'_>, out: &mut String, targets: &mut Vec<Target>) -> anyhow::Result<()> {
    let Setup {
        runtime,
        config,
        machine,
        work,
        cache,
        quick,
        ..
    } = *s;
    let jaq = jaq_version();
    writeln!(
        out,
        "\n## Extraction\n\nEvery recipe of the full-detail library over a file of full-detail records, \
     every value printed (no output cap). *Component*: `Runtime::extract` (Store, instantiation, \
     reading the file through WASI, jaq). *Machine code*: the same extraction code (`lro-core`, jaq) \
     compiled for this machine. *jq process*: the recipe's shell command from the descriptor, \
     `tail -n +2 FILE | jq ...`, run by `sh` as an agent would, output read from a pipe. \
     *jaq process*: the same command with `jaq` (the command-line tool of the jq engine lro \
     embeds) in place of `jq`, the other tool an agent could run; {} It prints some numbers \
     otherwise than jq (`1.0` where jq prints `1`): its output is checked to have as many \
     lines as jq's.\n",
        match &jaq {
            Some(version) => format!("here {version} (`cargo install jaq`)."),
            None => "not measured in this run: no `jaq` on PATH (`cargo install jaq`).".to_owned(),
        }
    )?;
    writeln!(
        out,
        "| records | recipe | values | component | machine-code jaq | jq process | jaq process | component / machine code | jq / component | jaq / component |\n\
     |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    let extract_sizes: Vec<usize> = EXTRACT_SIZES.iter().copied().filter(|&n| !quick || n <= 500).collect();
    let (mut worst_machine, mut worst_jq) = (0.0f64, f64::INFINITY);
    let (mut worst_machine_at, mut worst_jq_at) = (String::new(), String::new());
    for &n in &extract_sizes {
        let input = records(Detail::Full, n);
        let path = match runtime.offload(config, &request(Detail::Full, &input))? {
            Outcome::Offloaded(o) => o.path,
            _ => bail!("{n} records were not offloaded"),
        };
        let recipes = runtime.recipes(config, Detail::Full, Some(&path))?;
        let reps = if quick {
            3
        } else if n <= 500 {
            30
        } else {
            3
        };
        for recipe in &recipes {
            let number = u32::from(recipe.number);
            let wasm_req = ExtractRequest {
                path: path.clone(),
                recipe: Some(number),
                query: None,
                params: None,
                slurp: false,
                limit: Some(u32::MAX),
            };
            let machine_req = MachineRequest {
                path: &path,
                recipe: Some(number),
                query: None,
                params: None,
                slurp: false,
                limit: Some(u32::MAX),
            };
            let (mut wasm, mut nat, mut jq, mut jaq_times) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let jaq_command = recipe.command.replacen("| jq ", "| jaq ", 1);
            // Why jaq's figure is missing for this recipe, when it is.
            let mut jaq_failed = if jaq.is_none() {
                Some("–".to_owned())
            } else if jaq_command == recipe.command {
                Some("(no `jq` in the command)".to_owned())
            } else {
                None
            };
            let mut values = 0;
            for _ in 0..reps {
                let start = Instant::now();
                let result = runtime.extract(config, &wasm_req)?;
                wasm.push(start.elapsed());
                values = result.total;
                let start = Instant::now();
                let result = lro_core::extractor::extract(machine, &machine_req, lro_core::time::now_ms())?;
                nat.push(start.elapsed());
                if result.total != values {
                    bail!(
                        "recipe {number}: the machine code gave {} values, the component {values}",
                        result.total
                    );
                }
                let start = Instant::now();
                let output = Command::new("sh")
                    .args(["-c", &recipe.command])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .output()?;
                jq.push(start.elapsed());
                if !output.status.success() {
                    bail!("{}: {}", recipe.command, String::from_utf8_lossy(&output.stderr));
                }
                if jaq_failed.is_none() {
                    let start = Instant::now();
                    let by_jaq = Command::new("sh")
                        .args(["-c", &jaq_command])
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .output()?;
                    jaq_times.push(start.elapsed());
                    let lines = |text: &[u8]| text.iter().filter(|&&c| c == b'\n').count();
                    if !by_jaq.status.success() {
                        let said = String::from_utf8_lossy(&by_jaq.stderr);
                        jaq_failed = Some(format!("fails: {}", said.lines().next().unwrap_or("").trim()));
                    } else if lines(&by_jaq.stdout) != lines(&output.stdout) {
                        jaq_failed = Some(format!(
                            "differs: {} lines, jq {}",
                            lines(&by_jaq.stdout),
                            lines(&output.stdout)
                        ));
                    }
                }
            }
            let (w, v, j) = (median(wasm), median(nat), median(jq));
            let (to_machine, jq_over) = (w.as_secs_f64() / v.as_secs_f64(), j.as_secs_f64() / w.as_secs_f64());
            let (jaq_time, jaq_over) = match jaq_failed {
                Some(why) => (why, "–".to_owned()),
                None => {
                    let t = median(jaq_times);
                    (ms(t), format!("{:.1}×", t.as_secs_f64() / w.as_secs_f64()))
                }
            };
            writeln!(
                out,
                "| {n} | {number}. {} | {values} | {} | {} | {} | {jaq_time} | {to_machine:.2}× | {jq_over:.1}× | {jaq_over} |",
                recipe.description,
                ms(w),
                ms(v),
                ms(j)
            )?;
            if to_machine > worst_machine {
                (worst_machine, worst_machine_at) = (to_machine, format!("recipe {number} at {n}"));
            }
            if n == 50_000 && jq_over < worst_jq {
                (worst_jq, worst_jq_at) = (jq_over, format!("recipe {number}"));
            }
        }
        remove_all_in(work)?;
    }
    large_file(out, targets, config, cache, quick)?;
    remove_all_in(work)?;
    targets.push(Target {
        what: "extraction: component / machine-code jaq, worst recipe".into(),
        figure: format!("{worst_machine:.2}× ({worst_machine_at}; target ≤ 1.5× for every recipe)"),
        met: worst_machine <= 1.5,
    });
    if !quick {
        targets.push(Target {
            what: "extraction at 50,000 records: jq process / component, worst recipe".into(),
            figure: format!("{worst_jq:.1}× ({worst_jq_at}; target ≥ 2× for every recipe)"),
            met: worst_jq >= 2.0,
        });
    }
    Ok(())
}
