"""jq's own test files through the Python host's `query`, judged against the same skip list as
the Rust host (tests/cases/jq/upstream-skips.txt; the parser mirrors core/tests/upstream/mod.rs,
which says how cases are judged). The component is the same, so the verdicts must be the same."""

import json
import math
import os
from pathlib import Path

from conftest import CASES, REPO
from lro_wasm import LroError

FILES = ["jq-1.6.test", "jq.test", "man.test", "onig.test"]
JQ_TESTS = Path(os.environ.get("LRO_JQ_TESTS") or REPO.parent / "shared" / "jq-tests")


def skip_line(line):
    t = line.lstrip(" \t")
    return t == "" or t.startswith("#")


def parse(file, text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cases, i, must_fail = [], 0, False
    while i < len(lines):
        line = lines[i]
        i += 1
        if skip_line(line):
            continue
        if line in ("%%FAIL", "%%FAIL IGNORE MSG"):
            must_fail = True
            continue
        case = {"id": f"{file}:{i}", "program": line, "must_fail": must_fail, "input": "", "expected": []}
        if not must_fail:
            case["input"] = lines[i] if i < len(lines) else ""
            i += 1
        while i < len(lines) and not skip_line(lines[i]):
            case["expected"].append(lines[i])
            i += 1
        cases.append(case)
        must_fail = False
    return cases


def load(text):
    value = json.loads(text)
    return value


def same(a, b):
    """jq's jv_equal: numbers as doubles (1e1000 is the largest double), no bool/number mixing."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        clamp = lambda x: math.copysign(1.7976931348623157e308, x) if math.isinf(x) else float(x)  # noqa: E731
        return clamp(a) == clamp(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def run(lro, program, input):
    """("compile", msg) | ("outputs", values, error) | ("input", msg), as the Rust runner."""
    try:
        return ("outputs", lro.query(program, input)["values"], None)
    except LroError as e:
        if e.kind == "invalid-filter":
            return ("compile", e.message)
        if e.kind != "filter-failed":
            return ("input", f"{e.kind}: {e.message}")
        wrapped = f'def lro_case_: {program}; try lro_case_ catch {{"lro-upstream-error": .}}'
        try:
            values = lro.query(wrapped, input)["values"]
        except LroError:
            values = []
        return ("outputs", [v for v in values if not v.startswith('{"lro-upstream-error":')], e.message)


def judge(case, ran):
    if case["must_fail"]:
        return None if ran[0] == "compile" else f"compiled, but jq refuses it: {ran}"
    if ran[0] != "outputs":
        return str(ran)
    outputs = ran[1]
    for n, expected in enumerate(case["expected"]):
        try:
            want = load(expected)
        except ValueError:
            return f"expected output {expected!r} is not JSON"
        if n >= len(outputs):
            return f"{len(outputs)} outputs {outputs}, then {ran[2]!r}; expected {case['expected']}"
        if not same(want, load(outputs[n])):
            return f"got {outputs}, expected {case['expected']}"
    if len(outputs) > len(case["expected"]):
        return f"superfluous outputs: got {outputs}, expected {case['expected']}"
    return None


def skips():
    listed = {}
    for line in (CASES / "jq" / "upstream-skips.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            case_id, reason, _why, program = line.split("\t", 3)
            listed[case_id] = (reason, program)
    return listed


def test_jq_upstream_cases_pass_in_the_python_host_except_the_skip_list(lro):
    cases = [c for f in FILES for c in parse(f, (JQ_TESTS / f).read_text(encoding="utf-8"))]
    assert len(cases) > 1000, f"only {len(cases)} cases in {JQ_TESTS}"
    listed = skips()
    failures = []
    for case in cases:
        verdict = judge(case, run(lro, case["program"], case["input"]))
        skip = listed.get(case["id"])
        if skip is None and verdict is not None:
            failures.append(f"{case['id']} `{case['program']}`: {verdict}")
        elif skip is not None and verdict is None:
            failures.append(f"{case['id']} `{case['program']}`: passes, but the skip list says {skip[0]}")
        elif skip is not None and skip[1] != case["program"]:
            failures.append(f"{case['id']}: the skip list names `{skip[1]}`, the case is `{case['program']}`")
    assert not failures, f"{len(failures)} cases disagree with the skip list:\n" + "\n".join(failures)
