"""`--format json` of the cross-rank analysis: protobuf's json_format against core/protojson.py.

    python bench/bench_protojson.py [--ranks 8,128,1024] [--work /tmp/bench_crossrank] [--repeat 3]

Uses the digests bench/bench_crossrank.py keeps under --work (generating them the first time). For each
N: the RunParallel with every matched instance (analyze_run, what `parallel --format json` prints),
then, side by side in this process, best of --repeat: json_format.MessageToJson(indent=2, defaults
included) — what the CLI used before — and protojson.to_json (indent=2), their ratio, and the output
size. Both outputs are checked to be the same JSON values once per N. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from google.protobuf import json_format  # noqa: E402

from bench_crossrank import digests_for  # noqa: E402
from tb_paddle_profile.analysis.crossrank import analyze_run  # noqa: E402
from tb_paddle_profile.core.protojson import to_json  # noqa: E402


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="8,128,1024")
    ap.add_argument("--work", default="/tmp/bench_crossrank")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("| ranks | json_format s | protojson s | ratio | output MB |")
    print("|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in a.ranks.split(",")]:
        msg = analyze_run(digests_for(n, a.work, a.jobs), "bench", "0")
        theirs = lambda: json_format.MessageToJson(msg, indent=2, always_print_fields_with_no_presence=True)  # noqa: E731
        ours = lambda: to_json(msg)  # noqa: E731
        assert json.loads(theirs()) == json.loads(ours()), "protojson differs from json_format"
        t_theirs, t_ours = _best(theirs, a.repeat), _best(ours, a.repeat)
        print(
            f"| {n} | {t_theirs:.3f} | {t_ours:.3f} | {t_theirs / t_ours:.1f}x | {len(ours()) / 1e6:.1f} |", flush=True
        )


if __name__ == "__main__":
    main()
