"""Whether a test's body ran: conftest.py's pytest_runtest_makereport keeps each phase's report on the item."""


def ran(request) -> bool:
    """True when the test's body ran (passed or failed), False when it was skipped."""
    report = getattr(request.node, "report_call", None)
    return report is not None and not report.skipped
