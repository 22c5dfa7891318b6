"""The CLI prints, line for line, the tables Paddle printed for the test traces.

`tests/data/traces/*/paddle_summary.<rank>.<SortedKey>.<unit>.txt` were printed by Paddle
3.3.1 (`prof.summary(sorted_by=..., op_detail=True, thread_sep=False, time_unit=...)`) for
the trace beside them; the `op_udf.*` files print only the Operator and UDF views with the
options in their names (and so for any trace set of the extra source, support.paths.trace_folders).
These traces have no event over 16.8 ms, so the match is exact.
"""

import re
import subprocess
import sys

import pytest

from support.paths import REPO, SHARED_TRACES, trace_folders
from support.parity import compare

_NAME = re.compile(
    r"paddle_summary\.(?:(?P<op_udf>op_udf)\.)?(?:(?P<rank>rank\d+)\.)?"
    r"(?:(?P<key>CPU\w+|GPU\w+)\.)?(?:(?P<nodetail>no_op_detail)\.)?(?:(?P<sep>thread_sep)\.)?"
    r"(?P<unit>s|ms|us|ns)\.txt$"
)


def _cases():
    if not SHARED_TRACES.is_dir():
        return []
    cases = []
    for summary in [s for d in trace_folders() for s in sorted(d.glob("paddle_summary.*.txt"))]:
        m = _NAME.match(summary.name)
        assert m, summary.name
        traces = sorted(summary.parent.glob("*.paddle_trace.json"))
        if m["rank"]:
            traces = [t for t in traces if t.name.startswith(m["rank"] + "_")]
        assert len(traces) == 1, (summary, traces)
        args = ["--sorted-by", m["key"] or "CPUTotal", "--time-unit", m["unit"]]
        if m["op_udf"]:
            args += ["--views", "OperatorView", "UDFView"]
        if m["nodetail"]:
            args.append("--no-op-detail")
        if m["sep"]:
            args.append("--thread-sep")
        cases.append(pytest.param(traces[0], summary, args, id=f"{summary.parent.name}/{summary.name}"))
    return cases


CASES = _cases()


def test_every_shared_summary_is_checked(shared_traces):
    assert len(CASES) >= 9


@pytest.mark.parametrize("trace, summary, args", CASES)
def test_cli_prints_what_paddle_printed(trace, summary, args):
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", str(trace), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    failure = compare(proc.stdout, summary.read_text(), exact=True, label=summary.name)
    assert failure is None, failure
