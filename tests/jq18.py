"""Runs jq programs with jq 1.8 (the PyPI `jq` package) for the Rust tests to compare against.

stdin:  {"input": "<JSON Lines text>", "jobs": [{"program": str, "args": {name: str}, "slurp": bool}]}
stdout: {"version": "1.8", "results": [[value, ...], ...]}: the jq release compared with, and one list
        of output values per job, in order.
"""

import json
import sys

import jq


def run(job, text, records):
    program = jq.compile(job["program"], args=job.get("args") or {})
    if job.get("slurp"):
        return program.input_value(records).all()
    return program.input_text(text).all()


def version():
    """The jq release the package bundles, as far as the comparison cares: `toboolean` is new in
    jq 1.8, so an older bundle says so instead of being compared as if it were 1.8."""
    try:
        jq.compile('"true" | toboolean').input_value(None).first()
    except ValueError:
        return "older than 1.8"
    return "1.8"


def main():
    request = json.load(sys.stdin)
    text = request["input"]
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    results = [run(job, text, records) for job in request["jobs"]]
    json.dump({"version": version(), "results": results}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
