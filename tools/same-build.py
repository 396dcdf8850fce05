#!/usr/bin/env python3
"""Whether one cargo command builds nothing that another has not built already.

    cargo +nightly build -Z unstable-options --unit-graph -p lro-cli --bin lro > run.json
    cargo +nightly test -Z unstable-options --unit-graph --workspace --no-run > test.json
    python3 tools/same-build.py run.json test.json

Prints each unit of the first graph that the second lacks, and exits 1 if there is one. Units
are compared whole: package, target, mode, features, profile settings (not the profile's name:
`cargo test` builds dependencies with the `test` profile, which inherits `dev`) and, recursively,
their dependencies. Comparing features alone misses a crate built again because a dependency of
it differs (anyhow's `std` on the proc-macros' side rebuilt wasmtime; docs/BENCH-NOTES.md)."""

import hashlib
import json
import sys


def unit_ids(path):
    units = json.load(open(path))["units"]
    memo = {}

    def identity(i):
        if i not in memo:
            u = units[i]
            profile = {k: v for k, v in u["profile"].items() if k != "name"}
            deps = sorted(identity(d["index"]) for d in u["dependencies"])
            key = [u["pkg_id"], u["target"]["name"], u["target"]["kind"], u["mode"], sorted(u["features"]),
                   profile, u.get("platform"), deps]
            memo[i] = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return memo[i]

    return {identity(i): units[i] for i in range(len(units))}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    first, second = unit_ids(sys.argv[1]), unit_ids(sys.argv[2])
    missing = [u for k, u in first.items() if k not in second]
    for u in missing:
        print(f"{u['pkg_id'].split('#')[-1]} {u['target']['name']} {u['mode']} {','.join(u['features'])}")
    print(f"{len(first)} units, {len(missing)} not in {sys.argv[2]}", file=sys.stderr)
    sys.exit(1 if missing else 0)


main()
