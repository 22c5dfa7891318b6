"""The tests' hooks and shared fixtures. Tests are in folders by kind: unit/ (in-process, one module or a
few), integration/ (processes, TensorBoard, the CLI, the cache, Dask, real traces end to end) and browser/
(a real Chromium through Playwright); support/ holds the helpers they import (``support.<module>``).
Markers are declared in pytest.ini."""

import pytest

from support.paths import SHARED_TRACES, TESTS

SLOW_LIST = TESTS / "slow_tests.txt"
BROWSER_DIR = TESTS / "browser"


def pytest_collection_modifyitems(config, items):
    """Every test under browser/ is `browser`; every browser test, and each test listed in slow_tests.txt
    (measured: tools/update_slow_tests.py), is `slow`. Browser tests are skipped, with the reason, where
    Chromium or Playwright is missing."""
    listed = {ln.strip() for ln in SLOW_LIST.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    missing = None
    for item in items:
        if BROWSER_DIR in item.path.parents:
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
            if missing is None:
                from support.browser_util import chromium_missing_reason

                missing = chromium_missing_reason() or ""
            if missing:
                item.add_marker(pytest.mark.skip(reason=f"browser tests need Chromium: {missing}"))
        elif item.nodeid.split("[")[0] in listed:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so that a fixture's teardown can tell whether the
    test body ran (support.report.ran)."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def shared_traces():
    """The committed trace sets (tests/data/traces)."""
    assert SHARED_TRACES.is_dir(), f"{SHARED_TRACES} is missing: it is part of the repository"
    return SHARED_TRACES


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for all browser tests (Playwright's sync API allows one per process)."""
    from playwright.sync_api import sync_playwright

    from support.browser_util import launch_browser

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def scale_run(tmp_path_factory):
    """The generated 1,024-rank run, preprocessed (tests/support/scale_run.py)."""
    from support import scale_run as sr

    return sr.make(tmp_path_factory.mktemp("scale_run"))
