"""`tb-paddle-profile`: Paddle's summary tables from saved traces, in the terminal.

Each subcommand is a thin shell over the engine and one renderer.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from typing import List, Optional, Tuple

from tb_paddle_profile.core.errors import our_bug
from tb_paddle_profile.pipeline.batch import LoadFailure, LoadOptions, load_run, load_summaries
from tb_paddle_profile.present.render import text
from tb_paddle_profile.core.protojson import to_json
from tb_paddle_profile.v1.summary_pb2 import Summary

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


def _options(args) -> LoadOptions:
    return LoadOptions(cache_dir=args.cache_dir, cache=not args.no_cache, jobs=args.jobs,
                       verbose=getattr(args, "verbose", False))


def _cmd_summary(args) -> int:
    try:
        loaded = load_summaries(args.trace, _options(args))
    except LoadFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = internal = 0
    for i, (f, data, error, bug) in enumerate(loaded):
        # Exit status: 0 all summarized, 2 some files were not usable traces (or could not be read),
        # 3 an internal error (ours).
        if data is None:
            print(f"error: {error}", file=sys.stderr)
            internal += bug
            failed += not bug
            continue
        try:
            summary = Summary.FromString(data)
            if args.format == "json":
                out = to_json(summary)
            elif args.format == "csv":  # the display model's tables (display/summary.py), raw values
                from tb_paddle_profile.present.display.summary import summary_display

                display = summary_display(summary, sorted_by=args.sorted_by, op_detail=not args.no_op_detail,
                                          thread_sep=args.thread_sep, time_unit=args.time_unit)
                out = csv_text(display, args.table, f.file_name, views=args.views)
                if out is None:
                    failed += 1
                    continue
            else:
                out = text.render(summary, sorted_by=args.sorted_by, time_unit=args.time_unit,
                                  op_detail=not args.no_op_detail, thread_sep=args.thread_sep, views=args.views)
        except Exception as exc:  # a bug of ours: said as such, with the traceback under --debug
            print(f"error: {our_bug(f.file_name, exc)}", file=sys.stderr)
            logging.getLogger(__name__).debug("internal error on %s", f.path, exc_info=True)
            if args.debug:
                traceback.print_exc(file=sys.stderr)
            internal += 1
            continue
        if len(loaded) > 1:
            print(f"{'' if i == 0 else chr(10)}==> {f.path} <==")
        print(out, end="" if args.format == "csv" else "\n")
    return 3 if internal else 2 if failed else 0


def _reported_run(args, analyze: bool = True):
    """(RunLoad or None, internal, failed) of the run the command names, each file's error printed on
    stderr (one line each); None when nothing could be analysed (the exit status is then 3 for a bug of
    ours, else 2)."""
    try:
        run = load_run(args.run_dir, args.span, _options(args), analyze=analyze)
    except LoadFailure as exc:
        for error, _ in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return None, 0, 1
    for error, _ in run.errors:
        print(f"error: {error}", file=sys.stderr)
    internal = sum(bug for _, bug in run.errors)
    return (run if run.result is not None else None), internal, len(run.errors) - internal


def _cmd_parallel(args) -> int:
    from tb_paddle_profile.present.render import parallel_text

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    result = run.with_matched() if args.format == "json" else run.result  # json: the matched instances too
    result.run = args.run_dir
    if args.format == "json":
        print(to_json(result))
    elif args.format == "csv":
        from tb_paddle_profile.present.display.parallel import parallel_display

        if not print_csv(parallel_display(result, args.time_unit), args.table, args.run_dir):
            return 2
    else:
        print(parallel_text.render(result, time_unit=args.time_unit), end="")
    return 3 if internal else 2 if failed else 0


def _cmd_whatif(args) -> int:
    from tb_paddle_profile.present.display.whatif import whatif_answer
    from tb_paddle_profile.present.render import whatif_text

    run, internal, failed = _reported_run(args, analyze=False)
    if run is None:
        return 3 if internal else 2
    try:
        result = whatif_answer(run.digests, args.run_dir, run.span, args.time_unit, params=args.params,
                                tokens_per_step=args.tokens_per_step, model_config=args.model_config,
                                peak_tflops=args.peak_tflops)
    except ValueError as exc:   # a bad model config: one line naming the file
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result.notes.extend(run.result.notes)
    if args.format == "json":
        print(to_json(result))
    elif args.format == "csv":
        if not print_csv(result.display, args.table, args.run_dir):
            return 2
    else:
        print(whatif_text.render_display(result.display), end="")
    return 3 if internal else 2 if failed else 0


def _diff_target(target: str, span: Optional[str]) -> Tuple[str, Optional[str]]:
    """(path, span) of a `diff` side: PATH, or RUN_DIR@SPAN when PATH@SPAN is not itself a file."""
    if span is None and "@" in target and not os.path.lexists(target):
        target, span = target.rsplit("@", 1)
    return target, span


def load_diff(args):
    """The RunDiff of `tb-paddle-profile diff` (display/diff.py): two trace files (two ranks: their Summaries
    through load_summaries) or two run folders (their cross-rank analyses through load_run)."""
    from tb_paddle_profile.present.display.diff import rank_diff, run_diff
    from tb_paddle_profile.v1.summary_pb2 import Summary

    sides = [_diff_target(args.baseline, args.baseline_span), _diff_target(args.candidate, args.candidate_span)]
    for path, _ in sides:
        if not os.path.lexists(path):
            raise LoadFailure(f"{path}: no such file or folder")
    kinds = {os.path.isdir(path) for path, _ in sides}
    if len(kinds) > 1:
        raise LoadFailure(f"{sides[0][0]}, {sides[1][0]}: compare two trace files (two ranks) or two run folders")
    if kinds == {True}:
        runs = []
        for path, span in sides:
            run = load_run(path, span, _options(args))
            if run.result is None:
                raise LoadFailure(run.errors[0][0] if run.errors else f"{path}: no rank loaded", run.errors)
            runs.append(run.result)
        out = run_diff(runs[0], runs[1], [(path, "", rp.span, f"{path} span {rp.span}")
                                          for (path, _), rp in zip(sides, runs)], time_unit=args.time_unit)
        out.alignment.extend(f"{side}: {n}" for side, rp in zip(("baseline", "candidate"), runs)
                             for n in rp.notes if n.startswith("left out"))
        return out
    summaries, named = [], []
    for path, _ in sides:
        ((f, data, error, bug),) = load_summaries(path, _options(args))
        if data is None:
            raise LoadFailure(error, [(error, bug)] if bug else [])
        summaries.append(Summary.FromString(data))
        named.append((path, f.worker, f.span, f"{f.worker} span {f.span} ({f.file_name})"))
    return rank_diff(summaries[0], summaries[1], named, sorted_by=args.sorted_by, time_unit=args.time_unit)


def _cmd_diff(args) -> int:
    from tb_paddle_profile.present.render.diff_text import render_text

    try:
        result = load_diff(args)
    except LoadFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3 if any(bug for _, bug in exc.errors) else 2
    except Exception as exc:  # a bug of ours: said as such, with the traceback under --debug
        print(f"error: {our_bug(args.baseline, exc)}", file=sys.stderr)
        if args.debug:
            traceback.print_exc(file=sys.stderr)
        return 3
    if args.format == "json":
        print(to_json(result))
    elif args.format == "csv":
        if not print_csv(result.display, args.table, args.baseline):
            return 2
    else:
        print(render_text(result, args.time_unit), end="")
    return 0


def print_csv(display, table_key, source: str) -> bool:
    """`--format csv`: every table of the Display's views (raw values, display/export.py), each under a
    line "# <view>/<table key>: <title>" and followed by a blank line; `table_key` ("KEY" or
    "VIEW/KEY") prints that one table. False (and a one-line error naming `source`) when no table has the key."""
    out = csv_text(display, table_key, source)
    if out is None:
        return False
    print(out, end="")
    return True


def csv_text(display, table_key, source: str, views=None) -> Optional[str]:
    """The text of print_csv; ``views`` (Paddle's view names, `summary --views`) keeps only Paddle's tables
    of those views. None (and a one-line error naming ``source``) when no table has ``table_key``."""
    from tb_paddle_profile.present.display.export import to_csv

    tables = [(v.key, t) for v in display.views for t in v.tables if not views or t.paddle_view in views]
    if table_key:
        chosen = [(v, t) for v, t in tables if table_key in (t.key, f"{v}/{t.key}")]
        if not chosen:
            keys = ", ".join(f"{v}/{t.key}" for v, t in tables)
            print(f"error: {source}: no table {table_key!r} (tables: {keys})", file=sys.stderr)
            return None
        tables = chosen[:1]
    return "".join(f"# {v}/{t.key}: {t.title}\n{to_csv(t)}\n" for v, t in tables)


def _cmd_preprocess(args) -> int:
    from tb_paddle_profile.pipeline.preprocess import preprocess

    from tb_paddle_profile.pipeline.dask import cli_main, wants_dask  # [J2 dask] the per-file job on a Dask cluster, and

    if wants_dask(args):  # a cache at a URL (filled through dask_preprocess.py only)
        return cli_main(args)
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


def _cache_args(p) -> None:
    p.add_argument("--cache-dir", default=None,
                   help="the cache the TensorBoard plugin reads (default: $TB_PADDLE_PROFILE_CACHE or "
                        "~/.cache/tb_paddle_profile): summaries, digests and timeline indexes are read from it "
                        "and stored into it")
    p.add_argument("--no-cache", action="store_true", help="neither read nor fill the cache")
    p.add_argument("-v", "--verbose", action="store_true", help="say how many traces were parsed and how many "
                                                               "came from the cache (on stderr)")


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
    s.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text: Paddle's tables; json: the Summary protobuf as proto3 JSON; csv: every table of the "
                        "views (the panels' too) with raw values (ns, fractions, bytes), each under a line "
                        "'# <view>/<table>: <title>'")
    s.add_argument("--table", default=None, metavar="KEY",
                   help="with --format csv: only this table (docs/display.md lists the keys)")
    s.add_argument("--jobs", type=int, default=None,
                   help="processes that decode a large trace together (default: the CPUs available, at most 8; 1: serial)")
    s.add_argument("--debug", action="store_true", help="print the traceback of an internal error (a bug of the tool)")
    _cache_args(s)
    s.set_defaults(func=_cmd_summary)

    # `distributed` is the command's old name, kept as an alias (docs/architecture.md, glossary)
    d = sub.add_parser("parallel", aliases=["distributed"],
                       help="hybrid-parallel analysis across the ranks of a run: collectives by kind, "
                            "exposed communication, stragglers, pipeline bubbles, advice")
    d.add_argument("run_dir", help="the folder holding the run's traces (one per rank; searched recursively)")
    d.add_argument("--span", default=None, help="which recorded span (Paddle's span_index; default the first)")
    d.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    d.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text: tables; json: the RunParallel protobuf as proto3 JSON; csv: every table of the view "
                        "(raw values: ns, fractions), each under a '# parallel/<key>: <title>' line")
    d.add_argument("--table", default=None, metavar="KEY",
                   help="with --format csv: only this table (docs/display.md lists the keys)")
    d.add_argument("--jobs", type=int, default=None, help="worker processes for parsing (default: cores, at most 8)")
    _cache_args(d)
    d.set_defaults(func=_cmd_parallel)

    w = sub.add_parser("whatif", help="the critical path across ranks and what-if estimates (DP all-reduce hidden, "
                                      "straggler fixed, stages balanced, twice the micro-batches, no launch "
                                      "overhead), the pipeline schedule and MFU (docs/critical-path.md)")
    w.add_argument("run_dir", help="the folder holding the run's traces (one per rank; searched recursively)")
    w.add_argument("--span", default=None, help="which recorded span (default the first)")
    w.add_argument("--params", type=float, default=None, help="MFU: the model's parameter count")
    w.add_argument("--tokens-per-step", type=float, default=None, help="MFU: tokens per step (the global batch)")
    w.add_argument("--model-config", default=None, metavar="FILE",
                   help="MFU: a PaddleNLP-style YAML/JSON config giving the model and batch")
    w.add_argument("--peak-tflops", type=float, default=None,
                   help="MFU: the GPU's peak TFLOP/s (default: from its name in the trace)")
    w.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    w.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text: sentences and tables; json: the RunWhatIf protobuf as proto3 JSON; csv: every table "
                        "(raw values), each under a '# whatif/<key>: <title>' line")
    w.add_argument("--table", default=None, metavar="KEY", help="with --format csv: only this table")
    w.add_argument("--jobs", type=int, default=None, help="worker processes for parsing (default: cores, at most 8)")
    _cache_args(w)
    w.set_defaults(func=_cmd_whatif)

    c = sub.add_parser("diff", help="compare two ranks (trace files) or two runs (folders): tables side by side with "
                                    "deltas, and the step-time change split into parts (docs/diff.md)")
    c.add_argument("baseline", help="a trace file, or a run folder (RUN_DIR@SPAN chooses a span)")
    c.add_argument("candidate", help="the same kind as the baseline")
    c.add_argument("--baseline-span", default=None, help="the baseline run's span (default the first)")
    c.add_argument("--candidate-span", default=None, help="the candidate run's span (default the first)")
    c.add_argument("--sorted-by", default="CPUTotal", choices=text.SORTED_KEYS,
                   help="two ranks: the tables' order before sorting by |delta| (CPU keys: CPU deltas; GPU keys: GPU)")
    c.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    c.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text: the sentence and the tables; json: the RunDiff protobuf; csv: every table (raw values)")
    c.add_argument("--table", default=None, metavar="KEY", help="with --format csv: only this table")
    c.add_argument("--jobs", type=int, default=None, help="worker processes for parsing (default: cores, at most 8)")
    c.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    _cache_args(c)
    c.set_defaults(func=_cmd_diff)

    p = sub.add_parser("preprocess", help="summarize every trace under a logdir into the cache ahead of time")
    p.add_argument("logdir", help="a folder or an fsspec URL (s3://bucket/prefix, ...)")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: $TB_PADDLE_PROFILE_CACHE or ~/.cache)")
    p.add_argument("--sidecar", action="store_true", help="also write the summary next to each trace")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
    p.add_argument("--no-timeline", action="store_true",
                   help="summaries only; do not build the timeline indexes (built on first view then)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--dask", metavar="ADDRESS", default=None,  # [J2 dask]
                   help="parse on a Dask cluster: a scheduler (tcp://host:8786) or local:N (N local worker "
                        "processes); needs tb_paddle_profile[dask]")
    p.set_defaults(func=_cmd_preprocess)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    # The CLI prints one line per file that did not load (and the traceback of a bug of ours under
    # --debug); the loader's own log of the same failures, made for TensorBoard's log, stays quiet
    # while the command runs (and only then: main() may run inside another program).
    quiet = logging.getLogger("tb_paddle_profile.pipeline.loader")
    level = quiet.level
    if not getattr(args, "debug", False):
        quiet.setLevel(logging.CRITICAL)
    try:
        return args.func(args)
    except BrokenPipeError:
        return 0
    finally:
        quiet.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
