"""The Python host's figures for `lro bench --only hosts` (cli/src/bench/hosts.rs), which runs
this file and asks it for rounds of measurements: the same calls the Rust host is measured with,
on the same sample files, through `lro_wasm` as a Python MCP server would make them, beside the
offloader a Python author would otherwise write by hand.

    python tests/bench/hosts.py WASM SAMPLES_DIR OUTPUT_DIR

SAMPLES_DIR holds `tiny.json` and `records-N.json` (a JSON array of records each); every
offload writes into OUTPUT_DIR, emptied between calls outside the timing. Each line read from
standard input, `{"reps_small": S, "reps_large": L}`, runs one round (every call S times, or L
times for more than 500 records, the tiny call 10 × S times) and prints one line of JSON: the
round's medians in seconds. The script ends at the end of its input.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid

from lro_wasm import Lro

THRESHOLD_TOKENS = 1600


def median(samples: list) -> float:
    samples = sorted(samples)
    return samples[len(samples) // 2]


def empty(directory: str) -> None:
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))


def handwritten(records: list, directory: str) -> dict:
    """A hand-written offloader: one JSON line per record, written when the result's estimated
    tokens (4 characters a token) pass the threshold, and a small descriptor."""
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    chars = sum(len(line) for line in lines)
    if chars // 4 <= THRESHOLD_TOKENS:
        return {"inline": "[" + ",".join(lines) + "]"}
    path = os.path.join(directory, f"hand-{uuid.uuid4().hex}.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
        f.write("\n")
    return {"file_path": path, "count": len(records), "tokens": chars // 4}


def timed(reps: int, directory: str, call) -> float:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
        empty(directory)
    return median(samples)


def main() -> None:
    wasm, samples, out = sys.argv[1:4]
    lro = Lro(wasm)
    config = lro.config(output_dir=out, threshold_tokens=THRESHOLD_TOKENS)

    with open(os.path.join(samples, "tiny.json"), encoding="utf-8") as f:
        tiny = json.load(f)
    request = {"operation": "recall", "query": "caching", "detail": "full", "records": tiny}
    if lro.offload(config, request)["kind"] != "inline":
        raise SystemExit("the tiny call was not answered inline")
    sizes = []
    for name in sorted(os.listdir(samples)):
        if not name.startswith("records-"):
            continue
        n = int(name[len("records-"):-len(".json")])
        with open(os.path.join(samples, name), encoding="utf-8") as f:
            text = f.read()
        records = json.loads(text)
        as_text = {"operation": "recall", "query": "caching", "detail": "full", "records": text}
        as_objects = {**as_text, "records": records}
        for req in (as_text, as_objects):
            outcome = lro.offload(config, req)
            if outcome["kind"] != "offloaded":
                raise SystemExit(f"{n} records were not offloaded ({outcome['kind']}): {outcome.get('warning', '')}")
            empty(out)
        sizes.append((n, records, as_text, as_objects))

    for line in sys.stdin:
        reps = json.loads(line)
        small, large = reps["reps_small"], reps["reps_large"]
        figures: dict = {"host": "python", "offload": {}}
        figures["tiny"] = timed(small * 10, out, lambda: lro.offload(config, request))
        for n, records, as_text, as_objects in sizes:
            count = small if n <= 500 else large
            figures["offload"][str(n)] = {
                "text": timed(count, out, lambda: lro.offload(config, as_text)),
                "objects": timed(count, out, lambda: lro.offload(config, as_objects)),
                "handwritten": timed(count, out, lambda: handwritten(records, out)),
            }
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
