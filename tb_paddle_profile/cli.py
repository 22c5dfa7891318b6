"""`tb-paddle-profile`: Paddle's summary tables from saved traces, in the terminal.

Each subcommand is a thin shell over the engine and one renderer.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from .engine import summarize_file
from .errors import TraceError
from .naming import is_trace_file
from .render import text
from .v1 import to_json

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
    if os.path.isdir(target):
        found = []
        for root, dirs, files in os.walk(target):
            dirs.sort()
            found.extend(os.path.join(root, f) for f in sorted(files) if is_trace_file(f))
        return found
    return [target]


def _cmd_summary(args) -> int:
    paths = _traces(args.trace)
    if not paths:
        print(f"{args.trace}: no *.paddle_trace.json files found", file=sys.stderr)
        return 2
    failed = 0
    for i, path in enumerate(paths):
        try:
            summary = summarize_file(path)
        except TraceError as err:
            print(f"error: {err}", file=sys.stderr)
            failed += 1
            continue
        if len(paths) > 1:
            print(f"{'' if i == 0 else chr(10)}==> {path} <==")
        if args.format == "json":
            print(to_json(summary))
        else:
            print(text.render(summary, sorted_by=args.sorted_by, time_unit=args.time_unit,
                              op_detail=not args.no_op_detail, thread_sep=args.thread_sep, views=args.views))
    return 2 if failed else 0


def _cmd_preprocess(args) -> int:
    from .preprocess import preprocess

    results = preprocess(args.logdir, cache_dir=args.cache_dir, sidecar=args.sidecar, jobs=args.jobs)
    failed = 0
    for path, ok, message in results:
        if not ok:
            failed += 1
            print(f"error: {message}", file=sys.stderr)
        elif args.verbose:
            print(f"{path}: {message}")
    print(f"{len(results) - failed} of {len(results)} traces summarized into the cache")
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
    s.set_defaults(func=_cmd_summary)

    p = sub.add_parser("preprocess", help="summarize every trace under a logdir into the cache ahead of time")
    p.add_argument("logdir", help="a folder or an fsspec URL (s3://bucket/prefix, ...)")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: $TB_PADDLE_PROFILE_CACHE or ~/.cache)")
    p.add_argument("--sidecar", action="store_true", help="also write the summary next to each trace")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
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
