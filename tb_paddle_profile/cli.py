"""`tb-paddle-profile`: Paddle's summary tables from saved traces, in the terminal.

Each subcommand is a thin shell over the engine and one renderer.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from typing import List, Optional

from .engine import summarize_reader
from .errors import TraceError, TransientError, our_bug
from .naming import is_trace_file
from .paths import open_checked, read_checked
from .reader import parse_workers, peek_span
from .render import text
from .v1 import to_json
from .v1.summary_pb2 import Summary

VIEW_ALIASES = {
    "device": "DeviceView", "overview": "OverView", "model": "ModelView", "distributed": "DistributedView",
    "kernel": "KernelView", "operator": "OperatorView", "memory": "MemoryView",
    "memory_manipulation": "MemoryManipulationView", "udf": "UDFView",
}


def _view(name: str) -> str:
    if name in text.VIEWS:
        return name
    key = name.lower().replace("-", "_")
    for candidate in (key, key[:-4].rstrip("_") if key.endswith("view") else None):
        if candidate in VIEW_ALIASES:
            return VIEW_ALIASES[candidate]
    raise argparse.ArgumentTypeError(
        f"unknown view {name!r}; use one of {', '.join(text.VIEWS)} or {', '.join(VIEW_ALIASES)}")


def _traces(target: str) -> List[str]:
    """The traces a command reads: the file named, or every trace-named file under the folder named.
    Linked folders are not walked (no loops, nothing outside); linked files are listed and then read
    under the path policy of paths.py with the folder as the root (see _root)."""
    if os.path.isdir(target):
        found = []
        for root, dirs, files in os.walk(target):  # followlinks=False
            dirs.sort()
            found.extend(os.path.join(root, f) for f in sorted(files) if is_trace_file(f))
        return found
    return [target]


def _root(target: str) -> Optional[str]:
    """The root for paths.open_checked: the folder given; None for a file named explicitly (followed)."""
    return target if os.path.isdir(target) else None


def _summarize_path(path: str, root: Optional[str], workers: int = 1) -> Summary:
    """The Summary of one trace, read under the path policy (a refused file is a one-line TraceError)."""
    name = os.path.basename(path)

    def read() -> bytes:
        try:
            return read_checked(None, path, root, name)
        except OSError as exc:
            raise TraceError(name, exc.strerror or str(exc)) from None

    return summarize_reader(read, path, workers)


def _cmd_summary(args) -> int:
    paths = _traces(args.trace)
    if not paths:
        print(f"{args.trace}: no *.paddle_trace.json files found", file=sys.stderr)
        return 2
    root = _root(args.trace)
    failed = internal = 0
    for i, path in enumerate(paths):
        # Every file is tried, whatever happened to the others. Exit status: 0 all summarized,
        # 2 some files were not usable traces (or could not be read), 3 an internal error (ours).
        try:
            summary = _summarize_path(path, root, workers=args.jobs or parse_workers())
            if args.format == "json":
                out = to_json(summary)
            else:
                out = text.render(summary, sorted_by=args.sorted_by, time_unit=args.time_unit,
                                  op_detail=not args.no_op_detail, thread_sep=args.thread_sep, views=args.views)
        except (TraceError, TransientError) as err:
            print(f"error: {err}", file=sys.stderr)
            failed += 1
            continue
        except Exception as exc:  # a bug of ours: said as such, with the traceback under --debug
            print(f"error: {our_bug(os.path.basename(path), exc)}", file=sys.stderr)
            logging.getLogger(__name__).debug("internal error on %s", path, exc_info=True)
            if args.debug:
                traceback.print_exc(file=sys.stderr)
            internal += 1
            continue
        if len(paths) > 1:
            print(f"{'' if i == 0 else chr(10)}==> {path} <==")
        print(out)
    return 3 if internal else 2 if failed else 0


def _span_of(path: str, root: Optional[str]) -> str:
    with open_checked(None, path, root) as f:
        span = peek_span(f.read(1 << 14))
    return span if span is not None else ""


def _span_key(span: str):
    return (0, int(span), "") if span.isdigit() else (1, 0, span)


def _cmd_distributed(args) -> int:
    from .analysis.cross_rank import analyze_run
    from .render import parallel_text

    paths = _traces(args.run_dir)
    if not paths:
        print(f"{args.run_dir}: no *.paddle_trace.json files found", file=sys.stderr)
        return 2
    root = _root(args.run_dir)
    by_span = {}
    unreadable = 0
    for path in paths:
        try:
            by_span.setdefault(_span_of(path, root), []).append(path)
        except TraceError as err:  # refused by the path policy
            print(f"error: {err}", file=sys.stderr)
            unreadable += 1
        except OSError as exc:
            print(f"error: {os.path.basename(path)}: {exc.strerror or exc}", file=sys.stderr)
            unreadable += 1
    spans = sorted(by_span, key=_span_key)
    span = args.span if args.span is not None else (spans[0] if spans else "")
    if span not in by_span:
        print(f"{args.run_dir}: no trace of span {span!r} (spans: {', '.join(spans) or 'none'})", file=sys.stderr)
        return 2
    summaries, failed = _summarize_all(by_span[span], args.jobs, root)
    failed += unreadable
    notes = []
    if len(spans) > 1:
        notes.append(f"Spans {', '.join(spans)} found; this is span {span} (--span chooses).")
    latest = {}
    for s in summaries:  # a worker exported twice in one span: keep its latest file
        key = (s.meta.worker, s.meta.pid)
        if key not in latest or s.meta.export_time > latest[key].meta.export_time:
            latest[key] = s
    if len(latest) < len(summaries):
        notes.append(f"{len(summaries) - len(latest)} older file(s) of the same worker and span left out.")
    summaries = sorted(latest.values(), key=lambda s: (s.meta.rank, s.meta.file_name))
    if not summaries:
        return 2
    result = analyze_run(summaries, run=args.run_dir, span=span)
    result.notes.extend(notes)
    if args.format == "json":
        print(to_json(result))
    else:
        print(parallel_text.render(result, time_unit=args.time_unit), end="")
    return 2 if failed else 0


def _summarize_all(paths: List[str], jobs: Optional[int], root: Optional[str] = None):
    """Summaries of the files (in worker processes when there are several), and how many failed."""
    cores = jobs or parse_workers()
    jobs = min(len(paths), cores, 8)
    per_file = max(1, cores // max(1, jobs))  # fewer files than cores: each file's decode shares them
    results = []
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_summarize_or_error, paths, [per_file] * len(paths), [root] * len(paths)))
    else:
        results = [_summarize_or_error(p, per_file, root) for p in paths]
    summaries, failed = [], 0
    for data, error in results:
        if error:
            print(f"error: {error}", file=sys.stderr)
            failed += 1
        else:
            s = Summary()
            s.ParseFromString(data)
            summaries.append(s)
    return summaries, failed


def _summarize_or_error(path: str, workers: int = 1, root: Optional[str] = None):
    try:
        return _summarize_path(path, root, workers=workers).SerializeToString(), None
    except (TraceError, TransientError) as err:
        return None, str(err)
    except Exception as exc:  # a bug of ours: one line, and the other files still go on
        logging.getLogger(__name__).debug("internal error on %s", path, exc_info=True)
        return None, our_bug(os.path.basename(path), exc)


def _cmd_preprocess(args) -> int:
    from .preprocess import preprocess

    try:
        results = preprocess(args.logdir, cache_dir=args.cache_dir, sidecar=args.sidecar, jobs=args.jobs,
                             timeline=not args.no_timeline)
    except OSError as exc:  # the logdir cannot be listed
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    failed = 0
    for path, ok, message in results:
        if not ok:
            failed += 1
            print(f"error: {message}", file=sys.stderr)
        elif args.verbose:
            print(f"{path}: {message}")
    done = "summarized" if args.no_timeline else "summarized and indexed"
    print(f"{len(results) - failed} of {len(results)} traces {done} into the cache")
    return 2 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tb-paddle-profile", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("summary", help="print Paddle's summary tables for a trace (or every trace in a folder)")
    s.add_argument("trace", help="a *.paddle_trace.json[.gz] file, or a folder searched recursively")
    s.add_argument("--sorted-by", default="CPUTotal", choices=text.SORTED_KEYS,
                   help="Paddle's SortedKeys for the Operator, Kernel and UserDefined tables (default CPUTotal)")
    s.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    s.add_argument("--views", nargs="+", type=_view, metavar="VIEW",
                   help="only these views (Paddle's SummaryView names or: " + ", ".join(VIEW_ALIASES) + ")")
    s.add_argument("--no-op-detail", action="store_true", help="operators without their inner events and kernels")
    s.add_argument("--thread-sep", action="store_true", help="one Operator/UserDefined table per thread")
    s.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: Paddle's tables; json: the Summary protobuf as proto3 JSON")
    s.add_argument("--jobs", type=int, default=None,
                   help="processes that decode a large trace together (default: the CPUs available, at most 8; 1: serial)")
    s.add_argument("--debug", action="store_true", help="print the traceback of an internal error (a bug of the tool)")
    s.set_defaults(func=_cmd_summary)

    d = sub.add_parser("distributed", help="hybrid-parallel analysis across the ranks of a run: collectives by kind, "
                                           "exposed communication, stragglers, pipeline bubbles, advice")
    d.add_argument("run_dir", help="the folder holding the run's traces (one per rank; searched recursively)")
    d.add_argument("--span", default=None, help="which recorded span (Paddle's span_index; default the first)")
    d.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    d.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: tables; json: the RunParallel protobuf as proto3 JSON")
    d.add_argument("--jobs", type=int, default=None, help="worker processes for parsing (default: cores, at most 8)")
    d.set_defaults(func=_cmd_distributed)

    p = sub.add_parser("preprocess", help="summarize every trace under a logdir into the cache ahead of time")
    p.add_argument("logdir", help="a folder or an fsspec URL (s3://bucket/prefix, ...)")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: $TB_PADDLE_PROFILE_CACHE or ~/.cache)")
    p.add_argument("--sidecar", action="store_true", help="also write the summary next to each trace")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
    p.add_argument("--no-timeline", action="store_true",
                   help="summaries only; do not build the timeline indexes (built on first view then)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=_cmd_preprocess)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
