import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# The small real and GPU-shaped traces with the tables Paddle printed for them, committed with the tests
# (tests/data/traces/README.md says where they came from). The name is kept from when they lived beside
# the repository in ../shared/traces, which is still read as an extra source: a trace set there that is
# not committed here is tested too (trace_folders()). TBP_EXTRA_TRACES=DIR names another extra source;
# TBP_EXTRA_TRACES= (empty) turns the extra source off.
SHARED_TRACES = TESTS / "data" / "traces"
EXTRA_TRACES = Path(os.environ.get("TBP_EXTRA_TRACES", str(REPO.parent / "shared" / "traces")))


def trace_folders() -> list:
    """Every trace set: the committed ones, then those of the extra source that are not committed."""
    committed = sorted(d for d in SHARED_TRACES.iterdir() if d.is_dir())
    names = {d.name for d in committed}
    extra = []
    if os.environ.get("TBP_EXTRA_TRACES", None) != "" and EXTRA_TRACES.is_dir():
        extra = sorted(d for d in EXTRA_TRACES.iterdir() if d.is_dir() and d.name not in names)
    return committed + extra
sys.path.insert(0, str(TESTS))
# the repository root: tbp_synth (the trace generator, not shipped in the package) is imported from there
if str(REPO) not in sys.path:
    sys.path.insert(1, str(REPO))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long work (real Paddle training, big runs, a browser): left out of "
                                       "the fast tier, `pytest -m 'not slow'`; CI runs everything")
    config.addinivalue_line("markers", "browser: drives a real Chromium through Playwright")


SLOW_LIST = TESTS / "slow_tests.txt"


def pytest_collection_modifyitems(config, items):
    """Every browser test and each test listed in slow_tests.txt (measured: tools/update_slow_tests.py)
    is `slow`."""
    listed = {ln.strip() for ln in SLOW_LIST.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    for item in items:
        if item.get_closest_marker("browser") or item.nodeid.split("[")[0] in listed:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so that a fixture's teardown can tell whether the
    test body ran (see ran())."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def ran(request) -> bool:
    """True when the test's body ran (passed or failed), False when it was skipped."""
    report = getattr(request.node, "report_call", None)
    return report is not None and not report.skipped


def take_the_grid_away(monkeypatch) -> None:
    """The cross-rank topology keeps its pipelines (send/recv chains) but loses its DP x PP x MP grid, as on
    runs whose grid is not inferred (issue 24: DP16 x PP8 x MP8 with Paddle's default names)."""
    from tb_paddle_profile.analysis.crossrank import topology

    real = topology.build

    def without_grid(*a, **kw):
        topo, axes, g_axis = real(*a, **kw)
        assert topo.pipelines
        n = len(topo.coord_pp)
        topo.coord_dp, topo.coord_pp, topo.coord_mp = [-1] * n, [-1] * n, [-1] * n
        topo.dp = topo.pp = topo.mp = 0
        topo.complete = False
        return topo, axes, g_axis

    monkeypatch.setattr(topology, "build", without_grid)


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The committed trace sets (tests/data/traces)."""
    assert SHARED_TRACES.is_dir(), f"{SHARED_TRACES} is missing: it is part of the repository"
    return SHARED_TRACES


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for all browser tests (Playwright's sync API allows one per process)."""
    from browser_util import launch_browser
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def scale_run(tmp_path_factory):
    """The generated 1,024-rank run, preprocessed (tests/scale_run.py)."""
    import scale_run as sr
    return sr.make(tmp_path_factory.mktemp("scale_run"))
