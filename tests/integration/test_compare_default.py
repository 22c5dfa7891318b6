"""Compare's default pair (issue 26.5): the candidate is the same rank in the other run, also when the
two runs name their workers differently (Paddle's default names hold each process's pid, which differs
from run to run). Two generated runs with default names and other pids; the run list from the real
routes; frontend/src/panels/compare/choice.ts's resolveChoice compiled with the frontend's esbuild and run
in Node on it; the expected worker from the other run's synth_manifest.json."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format

from support.plugin_testlib import PREFIX, make_plugin, ready
from tb_paddle_profile.v1 import plugin_pb2

REPO = Path(__file__).resolve().parents[2]
FRONTEND = REPO / "frontend"
ESBUILD = FRONTEND / "node_modules" / ".bin" / "esbuild"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not ESBUILD.exists(), reason="needs Node.js and `npm ci` in frontend/"
)


def generate(out: Path, seed: int) -> dict:
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "2",
            "--pp",
            "2",
            "--layers",
            "2",
            "--micro-batches",
            "1",
            "--steps",
            "1",
            "--names",
            "default",
            "--gpus-per-node",
            "4",
            "--seed",
            str(seed),
            "--quiet",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert gen.returncode == 0, gen.stderr[-2000:]
    return json.loads((out / "synth_manifest.json").read_text())


def resolve_in_node(selection: dict, run_list: dict) -> dict:
    bundle = subprocess.run(
        [
            str(ESBUILD),
            str(FRONTEND / "src" / "panels" / "compare" / "choice.ts"),
            "--bundle",
            "--format=cjs",
            "--platform=node",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    script = (
        bundle + "\nconst [sel, list] = JSON.parse(process.argv[1]);\n"
        "process.stdout.write(JSON.stringify(module.exports.resolveChoice(sel, list)));\n"
    )
    out = subprocess.run(
        ["node", "-e", script, json.dumps([selection, run_list])], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_compare_defaults_to_the_same_rank_in_the_other_run(tmp_path, monkeypatch):
    before = generate(tmp_path / "logdir" / "before", seed=1)
    after = generate(tmp_path / "logdir" / "after", seed=2)
    assert {r["worker"] for r in before["ranks"]}.isdisjoint(r["worker"] for r in after["ranks"])  # other pids
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    plugin, client = make_plugin(str(tmp_path / "logdir"))
    try:
        ready(plugin)
        rl = plugin_pb2.RunList.FromString(client.get(f"{PREFIX}/runs").get_data())
    finally:
        plugin.close()
    run_list = json_format.MessageToDict(rl, always_print_fields_with_no_presence=True)
    for rank in (5, 2):
        worker = next(r["worker"] for r in after["ranks"] if r["rank"] == rank)
        sel = {
            "run": "after",
            "worker": worker,
            "span": "0",
            "brun": "",
            "bworker": "",
            "bspan": "",
            "crun": "",
            "cworker": "",
            "cspan": "",
        }
        got = resolve_in_node(sel, run_list)
        assert (got["brun"], got["bworker"]) == ("after", worker)
        assert got["crun"] == "before"
        assert got["cworker"] == next(r["worker"] for r in before["ranks"] if r["rank"] == rank), got
