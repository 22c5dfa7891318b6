"""Keep tests/slow_tests.txt: the tests the fast tier (`pytest -m "not slow"`) leaves out.

    python -m pytest -q -p no:cacheprovider -m "not slow" --durations=0 > /tmp/fast.log   # the fast tier (or all)
    python tools/update_slow_tests.py /tmp/fast.log --budget 80      # list the costliest until it fits in 80 s
    python tools/update_slow_tests.py --check-modules                # every package module imported by the fast tier?

A test (file::function, its parametrizations summed over setup, call and teardown) is listed when it
took THRESHOLD seconds or more in that run (0.5 s when no --budget is given), and, with --budget, the
costliest fast tests are listed until the run's wall time less theirs fits in BUDGET seconds (the run's
other time, collection and the tests too short for the table, is counted as it was). More logs only add
costs (each test's largest), e.g. a run of listed tests. Tests already listed stay, with one exception:
every test file that has a non-browser test keeps at least one test in the fast tier (its cheapest
measured one, or one too short to be in the table), so that the fast tier still runs every file; a file
whose every test is listed gets its cheapest one back when a log measured it at KEEP_MAX seconds or less,
else it is named as a file without a fast test. conftest.py marks the listed tests, and every browser
test, `slow`. A module whose shared fixture is costly moves its cost to its next fast test: run the fast
tier with --durations=0 again and update until it fits.

--check-modules runs the fast tier (the files with a fast test, in this process) and reports every
module under tb_paddle_profile/ (v1/, the generated protobuf code, aside) that no fast test file, fast
test or their Python subprocesses imported (sys.modules at the end of the run and at each subprocess's
exit, through a sitecustomize on PYTHONPATH; a subprocess given an environment without it is not seen).
It exits 1 when one is missing; keep a test that imports it fast with a line `!file::function` in the
list (the update leaves such a test in the fast tier whatever it costs).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIST = REPO / "tests" / "slow_tests.txt"
PACKAGE = "tb_paddle_profile"
HEADER = (
    "# Tests the fast tier leaves out (conftest.py marks them `slow`, and every browser test): measured on\n"
    "# the 2-core machine, the costliest until the fast tier fits its budget (80 s, with room under the\n"
    "# 2 minutes); every test file keeps a fast test unless its cheapest takes seconds alone.\n"
    "# Kept by tools/update_slow_tests.py; one test (file::function) a line; `!file::function`: kept\n"
    "# fast whatever it costs (the only fast test importing a module: --check-modules).\n"
)


def read_list() -> tuple[set, set]:
    """The listed tests, and those kept fast whatever they cost (a line `!file::function`: the one fast
    test that imports some module, found by --check-modules)."""
    if not LIST.exists():
        return set(), set()
    lines = [ln.strip() for ln in LIST.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return {ln for ln in lines if not ln.startswith("!")}, {ln[1:] for ln in lines if ln.startswith("!")}


def read_log(path: str) -> tuple[dict, float | None]:
    """Each test's seconds (setup + call + teardown, parametrizations summed) and the run's wall time."""
    text = Path(path).read_text(errors="replace")
    if "slowest durations" not in text:
        raise SystemExit(f"{path}: no '--durations' table in it")
    cost: dict = collections.Counter()
    for line in text.split("slowest durations", 1)[1].splitlines():
        m = re.match(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+)", line)
        if m:
            cost[m.group(2).split("[")[0]] += float(m.group(1))
    walls = re.findall(r"^=* ?\d+ (?:passed|failed|error).*\bin ([\d.]+)s(?: \([\d:]+\))?(?: =+)?\s*$", text, re.M)
    return cost, (float(walls[-1]) if walls else None)


def collect_non_browser() -> list:
    """Every collected test that is not a browser test (file::function), through pytest --collect-only."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not browser"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout
    return sorted({ln.strip().split("[")[0] for ln in out.splitlines() if "::" in ln})


def update(a) -> None:
    cost: dict = collections.Counter()
    first, wall = read_log(a.logs[0])  # the run whose wall time the budget is about
    for log in a.logs:
        c = first if log == a.logs[0] else read_log(log)[0]
        for t, s in c.items():
            cost[t] = max(cost[t], s)
    listed, pinned = read_list()
    listed -= pinned
    tests = collect_non_browser()
    if not tests:
        raise SystemExit("pytest --collect-only found no test")
    by_file = collections.defaultdict(list)
    for t in tests:
        by_file[t.split("::")[0]].append(t)
    # each file's protected test: its cheapest not yet listed (an unmeasured one counts as 0 s), else its
    # cheapest listed one when a log measured it at KEEP_MAX seconds or less (else the file stays slow)
    keep, whole = {}, {}
    for f, ts in by_file.items():
        fast = [t for t in ts if t not in listed]
        measured = [t for t in ts if t in cost]
        if fast:
            keep[f] = min(fast, key=lambda t: (cost.get(t, 0.0), t))
        elif measured and min(cost[t] for t in measured) <= a.keep_max:
            keep[f] = min(measured, key=lambda t: (cost[t], t))
        else:
            whole[f] = min((cost[t] for t in measured), default=None)
    back = {t for t in keep.values() if t in listed}
    listed -= back
    fast_now = [t for t in tests if t not in listed]
    threshold = a.threshold if a.threshold is not None else (None if a.budget is not None else 0.5)
    new = set()
    if threshold is not None:
        new = {t for t in fast_now if cost.get(t, 0.0) >= threshold} - set(keep.values()) - pinned
    if a.budget is not None:
        if wall is None:
            raise SystemExit("--budget: the log has no final 'in N s' line")
        measured_fast = sum(cost.get(t, 0.0) for t in fast_now)
        other = max(0.0, wall - sum(first.values()))  # collection, the short tests, pytest itself
        left = other + measured_fast - sum(cost.get(t, 0.0) for t in new)
        for t in sorted(
            (t for t in fast_now if t not in new and t not in keep.values() and t not in pinned),
            key=lambda t: -cost.get(t, 0.0),
        ):
            if left <= a.budget or cost.get(t, 0.0) <= 0.0:
                break
            new.add(t)
            left -= cost[t]
        print(
            f"fast tier: {wall:.0f} s measured, about {left:.0f} s expected ({other:.0f} s outside the "
            f"measured tests), budget {a.budget:.0f} s"
            + ("" if left <= a.budget else ": NOT met, every file's cheapest test left")
        )
    stale = {t for t in listed if t.split("::")[0] not in by_file and not (REPO / t.split("::")[0]).exists()}
    final = (listed | new) - stale
    LIST.write_text(HEADER + "".join(f"{t}\n" for t in sorted(final)) + "".join(f"!{t}\n" for t in sorted(pinned)))
    print(
        f"{len(new)} test(s) added, {len(back)} given back to the fast tier (a file had none left), "
        f"{len(stale)} gone from the repository dropped; {len(final)} listed in {LIST.name}; "
        f"{len(tests) - len(final & set(tests))} of {len(tests)} non-browser test functions fast"
    )
    for f, c in sorted(whole.items()):
        print(
            f"  no fast test in {f}: its cheapest "
            + (f"took {c:.1f} s (> --keep-max {a.keep_max:g})" if c is not None else "is in no log given")
        )


SITECUSTOMIZE = """import atexit, os, sys


def _tbp_modules():
    try:
        names = [m for m in list(sys.modules) if m == "{package}" or m.startswith("{package}.")]
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is not None and spec.name.startswith("{package}"):
            names.append(spec.name)   # python -m {package}
        if names:
            with open(os.path.join({dir!r}, f"{{os.getpid()}}.modules"), "a") as f:
                f.write("\\n".join(names) + "\\n")
    except Exception:
        pass


atexit.register(_tbp_modules)
"""


def package_modules() -> set:
    root = REPO / PACKAGE
    mods = set()
    for p in root.rglob("*.py"):
        rel = p.relative_to(REPO).with_suffix("")
        if rel.parts[1:2] == ("v1",):
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        mods.add(".".join(parts))
    return mods


def check_modules(a) -> int:
    import pytest

    if any(m == PACKAGE or m.startswith(PACKAGE + ".") for m in sys.modules):
        raise SystemExit(f"{PACKAGE} is imported before the run: the check would see nothing")
    base = ["-p", "no:cacheprovider", f"--basetemp={a.basetemp}"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow", *base],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout
    files = sorted({ln.strip().split("::")[0] for ln in out.splitlines() if "::" in ln})
    # what the tests' Python subprocesses (the CLI, TensorBoard, pool workers) import: each writes its
    # modules at exit, through a sitecustomize on PYTHONPATH (a subprocess given its own environment
    # without PYTHONPATH, or one that ends by os._exit, is not seen)
    seen_dir = Path(tempfile.mkdtemp(prefix="tbp_modules_"))
    (seen_dir / "sitecustomize.py").write_text(SITECUSTOMIZE.format(dir=str(seen_dir), package=PACKAGE))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(seen_dir), os.environ.get("PYTHONPATH")) if p)
    # the fast tier's files only, so that a browser-only file's imports do not count
    rc = pytest.main(["-q", "-m", "not slow", *base, *files])
    seen = {m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")}
    in_subprocesses = set()
    for f in seen_dir.glob("*.modules"):
        in_subprocesses |= set(f.read_text().split())
    shutil.rmtree(seen_dir, ignore_errors=True)
    seen |= in_subprocesses
    missing = sorted(package_modules() - seen)
    print(
        f"\n{len(package_modules()) - len(missing)} of {len(package_modules())} modules under {PACKAGE}/ "
        f"(v1/ aside) imported by the fast tier ({len(files)} test files, their subprocesses' imports "
        f"included; pytest exit {int(rc)})"
    )
    for m in missing:
        print(f"  not imported: {m}")
    return 1 if missing else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "logs", nargs="*", metavar="LOG", help="pytest --durations=0 output (several: each test's largest time)"
    )
    ap.add_argument("--threshold", type=float, help="list every test this slow (s; default 0.5 without --budget)")
    ap.add_argument("--budget", type=float, help="list the costliest until the fast tier fits in this many s")
    ap.add_argument(
        "--keep-max",
        type=float,
        default=3.0,
        help="a file whose tests are all listed gets its "
        "cheapest back when a log measured it at this many s or less (default 3)",
    )
    ap.add_argument(
        "--check-modules", action="store_true", help="run the fast tier and report package modules it does not import"
    )
    ap.add_argument("--basetemp", default="/tmp/bt_check_modules", help="with --check-modules")
    a = ap.parse_args()
    if a.check_modules:
        sys.path.insert(0, str(REPO))
        raise SystemExit(check_modules(a))
    if not a.logs:
        ap.error("a --durations log is needed (or --check-modules)")
    update(a)


if __name__ == "__main__":
    main()
