"""The package as built: what the wheel holds, what it requires, and where the test data comes from.

The wheel is built offline (``pip wheel --no-deps --no-build-isolation``, with this venv's setuptools)
from a copy of the repository's files, so the repository gets no build/ or egg-info from it.
tools/check_wheel.sh (run by .ci/run) goes further: it installs the wheel in a clean venv from the
registry and runs the CLI and TensorBoard from it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser

import pytest

from support.paths import REPO, SHARED_TRACES, trace_folders


def _repo_files():
    """The files a clone holds (tracked, plus new files not ignored): what a wheel is built from."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [n for n in out.split("\0") if n and (REPO / n).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the repository's files")
    src = tmp_path_factory.mktemp("src")
    for name in _repo_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            str(src),
            "-w",
            str(dist),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (path,) = dist.glob("tb_paddle_profile-*.whl")
    with zipfile.ZipFile(path) as z:
        yield z


def test_the_wheel_ships_the_package_and_its_data_and_not_the_generator(wheel):
    names = wheel.namelist()
    assert not [n for n in names if "synth" in n], "the trace generator must not ship"
    assert not [n for n in names if n.startswith(("tests/", "bench/", "tools/", "examples/", "frontend/"))]
    top = {n.split("/")[0] for n in names}
    assert top == {"tb_paddle_profile", next(n for n in top if n.endswith(".dist-info"))}
    # the built tab, the typed protobuf stubs, and every Python module of the package's source tree
    assert "tb_paddle_profile/static/index.js" in names
    assert (
        wheel.getinfo("tb_paddle_profile/static/index.js").file_size
        == (REPO / "tb_paddle_profile/static/index.js").stat().st_size
    )
    pyi = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "tb_paddle_profile/v1").glob("*.pyi"))
    assert pyi and set(pyi) <= set(names)
    source = {n for n in _repo_files() if n.startswith("tb_paddle_profile/") and n.endswith(".py")}
    assert source and source <= set(names), sorted(source - set(names))


def test_the_wheel_requires_tensorboard_and_registers_the_plugin_and_the_cli(wheel):
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(wheel.read(info).decode())
    requires = meta.get_all("Requires-Dist") or []
    plain = [r for r in requires if "extra ==" not in r]
    assert any(r.replace(" ", "").startswith("tensorboard>=") for r in plain), plain
    assert any(r.replace(" ", "").startswith("pandas>=") for r in plain), plain  # the Python API
    assert "tensorboard" in (meta.get_all("Provides-Extra") or [])  # the old extra still resolves
    entry = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "tb-paddle-profile = tb_paddle_profile.cli:main" in entry
    assert "paddle_profile = tb_paddle_profile.plugin.tb_plugin:PaddleProfilePlugin" in entry


def test_the_generator_runs_from_the_repository_root():
    r = subprocess.run(
        [sys.executable, "-m", "tbp_synth", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert r.returncode == 0, r.stderr
    assert "python -m tbp_synth" in r.stdout


def test_the_test_traces_are_in_the_repository(monkeypatch):
    """The trace sets with the tables Paddle printed are committed; ../shared is an extra source only."""
    monkeypatch.setenv("TBP_EXTRA_TRACES", "")
    folders = trace_folders()
    assert {f.name for f in folders} == {"cpu-gpt-single", "cpu-gpt-2rank-gloo", "gpu-synthetic-2rank"}
    assert all(f.parent == SHARED_TRACES for f in folders)
    for f in folders:
        traces = list(f.glob("*.paddle_trace.json"))
        assert traces and list(f.glob("paddle_summary.*.txt")), f
        assert all(t.stat().st_size <= 5 << 20 for t in traces)
    assert "Operator Summary" in (SHARED_TRACES / "cpu-gpt-single" / "paddle_summary.CPUTotal.ms.txt").read_text()
    tracked = set(_repo_files())
    assert {p.relative_to(REPO).as_posix() for f in folders for p in f.iterdir()} <= tracked


def test_an_extra_source_adds_only_the_trace_sets_not_committed(monkeypatch, tmp_path):
    (tmp_path / "gpu-synthetic-2rank").mkdir()  # also committed: the committed one is used
    (tmp_path / "another-run").mkdir()
    monkeypatch.setenv("TBP_EXTRA_TRACES", str(tmp_path))
    from support import paths

    monkeypatch.setattr(paths, "EXTRA_TRACES", tmp_path)
    folders = paths.trace_folders()
    assert [f for f in folders if f.parent == tmp_path] == [tmp_path / "another-run"]
    assert SHARED_TRACES / "gpu-synthetic-2rank" in folders
