"""The repository's paths and the trace sets the tests read."""

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
# The small real and GPU-shaped traces with the tables Paddle printed for them, committed with the tests
# (tests/data/traces/README.md says where they came from). ../shared/traces beside the repository is read
# as an extra source: a trace set there that is not committed here is tested too (trace_folders()).
# TBP_EXTRA_TRACES=DIR names another extra source; TBP_EXTRA_TRACES= (empty) turns the extra source off.
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
