"""The Python host's figures for `lro bench --only hosts` (cli/src/bench/hosts.rs), which runs
this file and reads the JSON it prints: the same calls the Rust host is measured with, on the
same sample files, through `lro_wasm` as a Python MCP server would make them, beside the
offloader a Python author would otherwise write by hand.

    python tests/bench/hosts.py WASM SAMPLES_DIR OUTPUT_DIR REPS_SMALL REPS_LARGE

SAMPLES_DIR holds `tiny.json` and `records-N.json` (a JSON array of records each); every
offload writes into OUTPUT_DIR, emptied between calls outside the timing. Times are medians in
seconds.
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
    wasm, samples, out, reps_small, reps_large = sys.argv[1:6]
    reps_small, reps_large = int(reps_small), int(reps_large)
    lro = Lro(wasm)
    config = lro.config(output_dir=out, threshold_tokens=THRESHOLD_TOKENS)
    figures: dict = {"host": "python", "offload": {}}

    with open(os.path.join(samples, "tiny.json"), encoding="utf-8") as f:
        tiny = json.load(f)
    request = {"operation": "recall", "query": "caching", "detail": "full", "records": tiny}
    if lro.offload(config, request)["kind"] != "inline":
        raise SystemExit("the tiny call was not answered inline")
    figures["tiny"] = timed(reps_small * 10, out, lambda: lro.offload(config, request))

    for name in sorted(os.listdir(samples)):
        if not name.startswith("records-"):
            continue
        n = int(name[len("records-"):-len(".json")])
        with open(os.path.join(samples, name), encoding="utf-8") as f:
            text = f.read()
        records = json.loads(text)
        reps = reps_small if n <= 500 else reps_large
        as_text = {"operation": "recall", "query": "caching", "detail": "full", "records": text}
        as_objects = {**as_text, "records": records}
        for req in (as_text, as_objects):
            if lro.offload(config, req)["kind"] != "offloaded":
                raise SystemExit(f"{n} records were not offloaded")
            empty(out)
        figures["offload"][str(n)] = {
            "text": timed(reps, out, lambda: lro.offload(config, as_text)),
            "objects": timed(reps, out, lambda: lro.offload(config, as_objects)),
            "handwritten": timed(reps, out, lambda: handwritten(records, out)),
        }
    json.dump(figures, sys.stdout)
    print()


if __name__ == "__main__":
    main()
