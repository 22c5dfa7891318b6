import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"
sys.path.insert(0, str(TESTS))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs real Paddle training or other long work (CI runs it)")
    config.addinivalue_line("markers", "browser: drives a real Chromium through Playwright")


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


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"the shared traces are not beside the repository ({SHARED_TRACES.name})")
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
