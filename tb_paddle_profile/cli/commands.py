"""`tb-paddle-profile`: Paddle's summary tables from saved traces, in the terminal.

Each subcommand is a thin shell over the engine and one renderer. This module is the dispatcher: the
parser, the examples and `main`; the commands live in cli/summary.py, cli/runs.py (parallel, whatif,
export, report), cli/diff.py and cli/preprocess.py, their shared arguments in cli/options.py, the run
loading in cli/loading.py and the answers' formats (JSON, CSV, text) in cli/output.py.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
import traceback
from typing import List, Optional

from tb_paddle_profile.cli.diff import _cmd_diff, _threshold
from tb_paddle_profile.cli.options import (
    JOBS_HELP,
    VIEW_ALIASES,
    _cache_args,
    _common,
    _jobs,
    _output_args,
    _view,
    _width_arg,
)
from tb_paddle_profile.cli.preprocess import _cmd_preprocess
from tb_paddle_profile.cli.runs import _cmd_export, _cmd_parallel, _cmd_report, _cmd_whatif
from tb_paddle_profile.cli.summary import _cmd_summary
from tb_paddle_profile.core import terminal
from tb_paddle_profile.core.errors import our_bug
from tb_paddle_profile.core.progress import Progress
from tb_paddle_profile.core.version import __version__
from tb_paddle_profile.present.render import text


def _progress(args) -> Progress:
    """The progress line of a command: on stderr, drawn when stderr is a terminal (or with --progress),
    never with --no-progress."""
    wanted = getattr(args, "progress", None)
    enabled = wanted if wanted is not None else sys.stderr.isatty()
    return Progress(enabled=bool(enabled))


EXAMPLES = """\
examples:
  tb-paddle-profile summary run/rank0_time_....paddle_trace.json     Paddle's summary tables of one rank
  tb-paddle-profile summary run/ --format csv --table operators > ops.csv   one table as plain CSV
  tb-paddle-profile summary run/ --csv-dir tables/                  every table, one CSV file each
  tb-paddle-profile parallel run/                                   the ranks side by side: verdict, findings
  tb-paddle-profile whatif run/                                     the critical path and what-if estimates
  tb-paddle-profile diff base_run/ new_run/ --fail-if-slower 5%     compare two runs; exit 1 past 5% slower
  tb-paddle-profile export run/ -o run.json.gz                      all ranks in one Perfetto trace
  tb-paddle-profile report run/ -o report.html                      one self-contained HTML report
  tb-paddle-profile preprocess logdir/                              fill the cache TensorBoard reads

exit status: 0 done; 1 a --fail-if-slower gate failed; 2 bad input (each file said in one line);
3 a bug of the tool (--debug prints its traceback).
"""

DOCS = (
    "Every command's options and examples: tb-paddle-profile COMMAND --help. --format csv and the "
    "Python API (import tb_paddle_profile as tbp; help(tbp)) give every table with its column keys."
)


class _Parser(argparse.ArgumentParser):
    """argparse, with a suggestion for a mistyped command."""

    def error(self, message: str):
        if "invalid choice" in message and self.prog == "tb-paddle-profile":
            import re

            m = re.search(r"invalid choice: '([^']*)'", message)
            commands = [c for c in COMMANDS]
            close = difflib.get_close_matches(m.group(1), commands, n=1, cutoff=0.6) if m else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.exit(
                2,
                f"tb-paddle-profile: error: unknown command {m.group(1)!r}{hint}; commands: {', '.join(commands)}\n"
                if m
                else f"tb-paddle-profile: error: {message}\n",
            )
        super().error(message)


COMMANDS = ["summary", "parallel", "whatif", "diff", "export", "report", "preprocess", "distributed"]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tb-paddle-profile",
        description=__doc__.splitlines()[0],
        epilog=EXAMPLES + "\n" + DOCS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tb-paddle-profile {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _common()

    def add(name, help, examples, **kw):
        return sub.add_parser(
            name,
            help=help,
            description=help,
            parents=[common],
            epilog="examples:\n" + "".join(f"  {e}\n" for e in examples),
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kw,
        )

    s = add(
        "summary",
        "print Paddle's summary tables for a trace (or every trace in a folder)",
        [
            "tb-paddle-profile summary run/rank0_time_....paddle_trace.json --sorted-by GPUTotal --time-unit us",
            "tb-paddle-profile summary run/ --views kernel memory",
            "tb-paddle-profile summary run/ --format csv --table operators > operators.csv",
            "tb-paddle-profile summary run/rank0_....paddle_trace.json --format text --table launch_latency",
            "tb-paddle-profile summary run/ --csv-dir tables/",
        ],
    )
    s.add_argument("trace", help="a *.paddle_trace.json[.gz] file, or a folder searched recursively")
    s.add_argument(
        "--sorted-by",
        default="CPUTotal",
        choices=text.SORTED_KEYS,
        help="Paddle's SortedKeys for the Operator, Kernel and UserDefined tables (default CPUTotal)",
    )
    s.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    s.add_argument(
        "--views",
        nargs="+",
        type=_view,
        metavar="VIEW",
        help="only these views (Paddle's SummaryView names or: " + ", ".join(VIEW_ALIASES) + ")",
    )
    s.add_argument("--no-op-detail", action="store_true", help="operators without their inner events and kernels")
    s.add_argument("--thread-sep", action="store_true", help="one Operator/UserDefined table per thread")
    _output_args(s, "Paddle's tables, as Profiler.summary() prints them", "# <view>/<table>: <title>", text_table=True)
    s.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(s)
    s.set_defaults(func=_cmd_summary)

    # `distributed` is the command's old name, kept as an alias (docs/architecture.md, glossary)
    d = add(
        "parallel",
        "hybrid-parallel analysis across the ranks of a run: collectives by kind, exposed "
        "communication, stragglers, pipeline bubbles, advice",
        [
            "tb-paddle-profile parallel run/",
            "tb-paddle-profile parallel run/ --span 1 --format json",
            "tb-paddle-profile parallel run/ --table waits > waits.csv",
        ],
        aliases=["distributed"],
    )
    d.add_argument("run_dir", help="the folder holding one run's traces (one per rank; searched recursively)")
    d.add_argument("--span", default=None, help="which recorded span (Paddle's span_index; default the first)")
    d.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    _output_args(d, "the verdict, findings and tables", "# parallel/<key>: <title>")
    _width_arg(d)
    d.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(d)
    d.set_defaults(func=_cmd_parallel)

    w = add(
        "whatif",
        "the critical path across ranks and what-if estimates (DP all-reduce hidden, straggler "
        "fixed, stages balanced, twice the micro-batches, no launch overhead), the pipeline "
        "schedule and MFU",
        [
            "tb-paddle-profile whatif run/",
            "tb-paddle-profile whatif run/ --model-config config.yaml",
            "tb-paddle-profile whatif run/ --params 1.3e9 --tokens-per-step 524288 --peak-tflops 312",
        ],
    )
    w.add_argument("run_dir", help="the folder holding one run's traces (one per rank; searched recursively)")
    w.add_argument("--span", default=None, help="which recorded span (default the first)")
    w.add_argument("--params", type=float, default=None, help="MFU: the model's parameter count")
    w.add_argument("--tokens-per-step", type=float, default=None, help="MFU: tokens per step (the global batch)")
    w.add_argument(
        "--model-config",
        default=None,
        metavar="FILE",
        help="MFU: a PaddleNLP-style YAML/JSON config giving the model and batch",
    )
    w.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="MFU: the GPU's peak TFLOP/s (default: from its name in the trace)",
    )
    w.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    _output_args(w, "sentences and tables", "# whatif/<key>: <title>")
    w.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(w)
    w.set_defaults(func=_cmd_whatif)

    c = add(
        "diff",
        "compare two ranks (trace files) or two runs (folders): tables side by side with deltas, "
        "and the step-time change split into parts; --fail-if-slower makes it a CI gate",
        [
            "tb-paddle-profile diff base_run/ new_run/",
            "tb-paddle-profile diff base_run/@0 new_run/@1",
            "tb-paddle-profile diff base/rank0_....paddle_trace.json new/rank0_....paddle_trace.json",
            "tb-paddle-profile diff base_run/ new_run/ --fail-if-slower 5%   # CI: exit 1 past 5% slower",
        ],
    )
    c.add_argument("baseline", help="a trace file, or a run folder (RUN_DIR@SPAN chooses a span)")
    c.add_argument("candidate", help="the same kind as the baseline")
    c.add_argument("--baseline-span", default=None, help="the baseline run's span (default the first)")
    c.add_argument("--candidate-span", default=None, help="the candidate run's span (default the first)")
    c.add_argument(
        "--sorted-by",
        default="CPUTotal",
        choices=text.SORTED_KEYS,
        help="two ranks: the tables' order before sorting by |delta| (CPU keys: CPU deltas; GPU keys: GPU)",
    )
    c.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    _output_args(c, "the sentence and the tables", "# <view>/<table>: <title>")
    _width_arg(c)
    c.add_argument(
        "--fail-if-slower",
        type=_threshold,
        default=None,
        metavar="PCT",
        help="a regression gate: exit 1, with one line on stderr saying why, when the candidate's "
        "mean step time is more than PCT (e.g. 5%%) above the baseline's",
    )
    c.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(c)
    c.set_defaults(func=_cmd_diff)

    e = add(
        "export",
        "write every rank of a run's span into ONE Chrome-trace JSON on the run's corrected clock "
        "(one process per rank named by its label, launch→kernel flows, memory counters), for "
        "Perfetto (ui.perfetto.dev) or chrome://tracing",
        ["tb-paddle-profile export run/ -o run.json.gz", "tb-paddle-profile export run/ --ranks 0-3,8 -o some.json"],
    )
    e.add_argument("run_dir", help="the folder holding one run's traces")
    e.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the file to write (.json, or .json.gz compressed); never inside the run's folder unless named so",
    )
    e.add_argument("--span", default=None, help="which recorded span (default the first)")
    e.add_argument("--ranks", default=None, help="only these ranks: 0,1,4-7 (default: all)")
    e.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(e)
    e.set_defaults(func=_cmd_export)

    r = add(
        "report",
        "write one self-contained HTML report of a run (verdict, findings, per-rank tables, "
        "what-if): opens from disk, no network",
        ["tb-paddle-profile report run/ -o report.html"],
    )
    r.add_argument("run_dir", help="the folder holding one run's traces")
    r.add_argument("-o", "--output", default="report.html", metavar="FILE", help="default report.html")
    r.add_argument("--span", default=None, help="which recorded span (default the first)")
    r.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    r.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(r)
    r.set_defaults(func=_cmd_report)

    p = add(
        "preprocess",
        "summarize every trace under a logdir into the cache ahead of time",
        [
            "tb-paddle-profile preprocess logdir/ && tensorboard --logdir logdir/",
            "tb-paddle-profile preprocess s3://bucket/logdir --dask local:4",
        ],
    )
    p.add_argument("logdir", help="a folder or an fsspec URL (s3://bucket/prefix, ...)")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: $TB_PADDLE_PROFILE_CACHE or ~/.cache)")
    p.add_argument("--sidecar", action="store_true", help="also write the summary next to each trace")
    p.add_argument("--jobs", type=_jobs, default=None, help="worker processes (default: the CPUs available, at most 8)")
    p.add_argument(
        "--no-timeline",
        action="store_true",
        help="summaries only; do not build the timeline indexes (built on first view then)",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        default=None,  # pipeline/dask.py
        help="parse on a Dask cluster: a scheduler (tcp://host:8786) or local:N (N local worker "
        "processes); needs tb_paddle_profile[dask]",
    )
    p.set_defaults(func=_cmd_preprocess)
    return parser


def _resolve_format(parser, args) -> None:
    """--table and --csv-dir imply --format csv; with --format text or json they are an error (summary:
    --table with --format text prints that table as text)."""
    if not hasattr(args, "table"):
        return
    text_table = args.table is not None and args.format == "text" and getattr(args, "text_table", False)
    wants_csv = (args.table is not None and not text_table) or args.csv_dir is not None
    if args.format is None:
        args.format = "csv" if wants_csv else "text"
    elif wants_csv and args.format != "csv":
        flag = "--table" if args.table is not None else "--csv-dir"
        parser.error(f"{flag} is for CSV output; it cannot go with --format {args.format}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print(
            f"usage: tb-paddle-profile COMMAND ... ({', '.join(COMMANDS[:-1])})\n\n{EXAMPLES}\n"
            f"tb-paddle-profile --help for more, tb-paddle-profile COMMAND --help for a command's options.",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    _resolve_format(parser, args)
    args.progress_line = _progress(args)
    # The CLI prints one line per file that did not load (and the traceback of a bug of ours under
    # --debug); the loader's own log of the same failures, made for TensorBoard's log, stays quiet
    # while the command runs (and only then: main() may run inside another program).
    quiet = logging.getLogger("tb_paddle_profile.pipeline.loader")
    level = quiet.level
    if not getattr(args, "debug", False):
        quiet.setLevel(logging.CRITICAL)
    else:
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    # Names from the traces reach every line printed: their control characters are shown, not obeyed
    # (terminal.py); an error line stays one line. The progress line keeps the stream it drew on.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = terminal.SafeStream(sys.stdout, lines=True), terminal.SafeStream(sys.stderr, lines=False)
    try:
        return args.func(args)
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug of ours anywhere: one line, its traceback with --debug
        print(f"error: {our_bug(getattr(args, 'command', 'tb-paddle-profile'), exc)}", file=sys.stderr)
        if args.debug:
            traceback.print_exc(file=terminal.raw(sys.stderr))
        return 3
    finally:
        sys.stdout, sys.stderr = streams
        args.progress_line.finish()
        quiet.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
