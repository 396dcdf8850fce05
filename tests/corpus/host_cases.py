"""Writes tests/cases/host/corpus-<case>/case.json for every corpus case: the case's result through
the MCP-level interceptor, as `lro proxy` runs it (its threshold, `lro_extract` offered). The Rust
host blesses expected.json (`LRO_BLESS=1 cargo test -p lro-cli --test all shared_cases`); the
Python and Node hosts compare with it, so the three give the same descriptor, events (each file's
record count and size in bytes) and forwarded result. Run `python3 tests/corpus/host_cases.py`
after adding a case.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
HOST = HERE.parent / "cases" / "host"

for folder in sorted(p for p in HERE.iterdir() if (p / "result.json").is_file()):
    call = json.loads((folder / "call.json").read_text())
    case = {
        "about": f"the corpus case tests/corpus/{folder.name} ({call['server']}) through the MCP-level interceptor",
        "config": {"threshold_tokens": call["threshold"], "extract_tool": True},
        "steps": [
            {
                "call": "intercept",
                "args": {
                    "call": {
                        "tool": call["tool"],
                        "arguments": call["arguments"],
                        "result": {"$text": f"../corpus/{folder.name}/result.json"},
                        "meta": None,
                    }
                },
            }
        ],
    }
    out = HOST / f"corpus-{folder.name}"
    out.mkdir(exist_ok=True)
    (out / "case.json").write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
