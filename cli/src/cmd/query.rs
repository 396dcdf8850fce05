//! `lro query`: a jq filter in the component's sandbox over JSON values; no files.

use crate::flags::{Cli, QueryArgs};
use crate::output::{print_values, read_input};

pub fn run(cli: &Cli, args: &QueryArgs) -> anyhow::Result<()> {
    let input = read_input(args.input.as_deref())?;
    let result = crate::runtime(cli)?.query(&args.filter, &input, args.slurp, args.raw_output, None)?;
    print_values(&result)
}
