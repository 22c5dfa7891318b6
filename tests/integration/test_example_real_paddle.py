"""Parity of ``tb_paddle_profile summary`` with the tables Paddle itself printed.

``examples/train_gpt.py`` saves, beside each trace, what ``Profiler.summary()`` printed for
several option sets and a ``<trace>.summaries.json`` manifest listing them. For every
listed summary, the project's CLI must print the same text from the trace file alone
(lines compared with trailing spaces stripped, blank lines at both ends ignored; numbers
of events over 16.8 ms may differ within the trace's float32 rounding, see tests/support/parity.py).

- ``test_committed_example_matches_paddle``: the traces committed under
  ``examples/profiler_log`` (fast, needs no paddle).
- ``test_fresh_run_matches_paddle`` (slow): runs the example for real, as one process and
  as two ranks under ``paddle.distributed.launch``, then checks what it wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.parity import compare

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_gpt.py"
COMMITTED = REPO / "examples" / "profiler_log"

# Small enough for a couple of seconds per process on 2 CPU cores; still 4 recorded steps.
SMALL_MODEL = [
    "--steps",
    "5",
    "--layers",
    "1",
    "--hidden",
    "32",
    "--heads",
    "2",
    "--seq-len",
    "16",
    "--batch",
    "2",
    "--vocab",
    "64",
]
RUN_TIMEOUT_S = 600
CLI_TIMEOUT_S = 300


def _summary_cases(root: Path):
    """(trace path, manifest entry, saved summary path) for every manifest under root."""
    for manifest in sorted(root.rglob("*.summaries.json")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        trace = manifest.parent / data["trace"]
        for entry in data["summaries"]:
            yield trace, entry, manifest.parent / entry["file"]


def _cli_command(trace: Path, entry: dict) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "tb_paddle_profile",
        "summary",
        str(trace),
        "--sorted-by",
        entry["sorted_by"],
        "--time-unit",
        entry["time_unit"],
    ]
    if not entry["op_detail"]:
        cmd.append("--no-op-detail")
    if entry["thread_sep"]:
        cmd.append("--thread-sep")
    return cmd


def _cli_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def _parity_failure(trace: Path, entry: dict, saved: Path) -> str | None:
    """None when the CLI prints what Paddle printed, else a readable explanation."""
    cmd = _cli_command(trace, entry)
    shown = " ".join(["python"] + [trace.name if a == str(trace) else a for a in cmd[1:]])
    proc = subprocess.run(cmd, cwd=REPO, env=_cli_env(), capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    if proc.returncode != 0:
        return f"`{shown}` exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    # Real runs hold events over 16.8 ms, whose float32 durations the trace rounds (tests/support/parity.py).
    return compare(proc.stdout, saved.read_text(encoding="utf-8"), exact=False, label=f"{saved.name} / {shown}")


# ----------------------------------------------------------------------------- committed example

_COMMITTED_CASES = list(_summary_cases(COMMITTED)) if COMMITTED.is_dir() else []


def test_committed_example_is_present():
    traces = {trace for trace, _, _ in _COMMITTED_CASES}
    assert len(traces) >= 2, f"expected example traces with manifests under {COMMITTED}"
    for trace, _, saved in _COMMITTED_CASES:
        assert trace.is_file(), f"manifest names a missing trace: {trace.name}"
        assert saved.is_file(), f"manifest names a missing summary: {saved.name}"


@pytest.mark.parametrize(
    "trace, entry, saved",
    [pytest.param(t, e, s, id=f"{s.parent.name}/{s.name}") for t, e, s in _COMMITTED_CASES],
)
def test_committed_example_matches_paddle(trace, entry, saved):
    failure = _parity_failure(trace, entry, saved)
    if failure:
        pytest.fail(failure, pytrace=False)


# ----------------------------------------------------------------------------- fresh real run


@pytest.fixture(scope="module")
def paddle_available():
    proc = subprocess.run(
        [sys.executable, "-c", "import paddle"], capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        pytest.skip(f"paddlepaddle is not importable by {sys.executable}: {last}")


def _run_example(tmp_path: Path, ranks: int) -> Path:
    out = tmp_path / "profiler_log"
    script = [str(EXAMPLE), "--out", str(out), *SMALL_MODEL]
    if ranks == 1:
        cmd = [sys.executable, *script]
    else:
        cmd = [
            sys.executable,
            "-m",
            "paddle.distributed.launch",
            "--nproc_per_node",
            str(ranks),
            "--log_dir",
            str(tmp_path / "launch_log"),
            *script,
        ]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    logs = ""
    for log in sorted((tmp_path / "launch_log").glob("workerlog.*")):
        logs += f"\n--- {log.name}\n" + log.read_text(errors="replace")[-3000:]
    assert proc.returncode == 0, (
        f"example failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}{logs}"
    )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, 2], ids=["single", "2rank"])
def test_fresh_run_matches_paddle(tmp_path, paddle_available, ranks):
    out = _run_example(tmp_path, ranks)
    manifests = sorted(out.glob("*.summaries.json"))
    assert len(manifests) == ranks, [m.name for m in manifests]
    if ranks > 1:
        assert sorted(m.name.split("_time_")[0] for m in manifests) == [f"rank{r}" for r in range(ranks)]
    cases = list(_summary_cases(out))
    assert cases
    failures = [f for f in (_parity_failure(*case) for case in cases) if f]
    if failures:
        pytest.fail(f"{len(failures)} of {len(cases)} summaries differ:\n\n" + "\n\n".join(failures), pytrace=False)
