"""One generated 1,024-rank run (DP128 × PP4 × MP2, small per rank, one planted slow GPU), made once
per test session and preprocessed by the CLI into its own cache: the run the scale tests
(tests/integration/test_scale_1024.py, tests/browser/test_frontend_scale.py) check the CLI, a real TensorBoard and the
browser on. Generating and preprocessing it takes about two minutes on CI's two cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

RUN = "scale"
DP, MP, PP = 128, 2, 4
SLOW_RANK = 517


@dataclass
class ScaleRun:
    logdir: Path  # holds RUN/
    cache: Path  # filled by `tb-paddle-profile preprocess`
    manifest: dict  # the generator's synth_manifest.json (planted truth)

    @property
    def run_dir(self) -> Path:
        return self.logdir / RUN


def make(
    root: Path,
    dp: int = DP,
    slow_rank: int = SLOW_RANK,
    layers: int = 4,
    *,
    mp: int = MP,
    pp: int = PP,
    names: str = "rank",
    slow_host_rank: int = -1,
) -> ScaleRun:
    """The run DP dp x PP4 x MP2 (1,024 ranks by default; the 4,096-rank page-weight check takes dp 512
    and fewer layers), its rank slow_rank's GPU slowed (or, slow_host_rank >= 0, that rank's data loader
    stalled), preprocessed into its own cache; names "default": Paddle's host_<host>pid_<pid>."""
    logdir, cache = root / "logdir", root / "cache"
    env = dict(os.environ)
    slow = ["--slow-host-rank", str(slow_host_rank)] if slow_host_rank >= 0 else ["--slow-rank", str(slow_rank)]
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            str(dp),
            "--mp",
            str(mp),
            "--pp",
            str(pp),
            "--layers",
            str(layers),
            "--micro-batches",
            "1",
            "--steps",
            "2",
            *slow,
            "--names",
            names,
            "--jobs",
            str(os.cpu_count() or 1),
            "--out",
            str(logdir / RUN),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=env,
    )
    assert gen.returncode == 0, gen.stderr[-2000:]
    pre = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "preprocess", str(logdir), "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=env,
    )
    assert pre.returncode == 0, pre.stderr[-2000:]
    manifest = json.loads((logdir / RUN / "synth_manifest.json").read_text())
    return ScaleRun(logdir, cache, manifest)
