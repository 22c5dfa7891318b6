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

from .errors import our_bug
from .reader import parse_workers
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


class _Loaded:
    """The CLI's files, loaded by the plugin's own loader and per-file job (jobs.run_job): the summaries
    and digests come from the cache the plugin reads (default folder, ``--cache-dir``; ``--no-cache``:
    nothing kept), and a trace parsed here is in that cache afterwards, timeline index included."""

    def __init__(self, args, fs, root: Optional[str], files: List):
        from .cache import SummaryCache
        from .plugin.discovery import Snapshot
        from .plugin.loader import Loader

        cache = SummaryCache(None) if args.no_cache else SummaryCache.from_env(cache_dir=args.cache_dir)
        self.files = files
        if len(files) == 1 and not files[0].refused:
            # One file: the same job, run in this process (no worker process to start for it).
            self.loader = _Inline(fs, cache, files[0], root, args.jobs or parse_workers())
            return
        # growing_window 0: a truncated file is a failed one here (nobody waits for it to settle)
        self.loader = Loader(fs, cache, workers=args.jobs or parse_workers(), root=root, growing_window=0.0,
                             index=cache.cache_dir is not None)
        runs: dict = {}
        for f in files:
            runs.setdefault(f.run, {}).setdefault(f.worker, {})[f.span] = f
        self.loader.update(Snapshot(logdir="", scanned_at=1.0, runs=runs))

    def wait(self):
        self.loader.wait_idle()
        return self.loader.states(self.files)

    def report(self, verbose: bool) -> None:
        if verbose:
            st = self.loader.stats
            print(f"{len(self.files)} trace(s): {st['parsed']} parsed, {st['cache_hits']} from the cache",
                  file=sys.stderr)

    def close(self) -> None:
        self.loader.close()


class _Inline:
    """The part of the Loader the CLI uses, for one file whose job (jobs.run_job) runs in this process."""

    def __init__(self, fs, cache, f, root: Optional[str], workers: int):
        import collections

        from .jobs import JobSpec

        self.cache = cache
        self.stats = collections.Counter()
        self._spec = JobSpec(path=f.path, file_name=f.file_name, key=f.key,
                             cache_dir=str(cache.cache_dir) if cache.cache_dir is not None else None,
                             sidecar=cache.sidecar, fs=fs, root=root, index=cache.cache_dir is not None,
                             parse_workers=workers)
        self._out = None

    def wait_idle(self, timeout=None) -> bool:
        from .jobs import run_job

        if self._out is None:
            self._out = out = run_job(self._spec)
            self.stats["parsed"] += out.parsed
            self.stats["cache_hits"] += out.kind == "cached"
            if out.kind == "bug":
                logging.getLogger(__name__).debug("%s\n%s", out.error, out.traceback)
            if out.ok and not out.stored and self.cache.cache_dir is None and hasattr(self.cache, "url"):
                self.cache.put_digest(self._spec.key, out.digest)  # a cache at a URL: stored here
                from .cache import CachedResult

                self.cache.put(self._spec.key, CachedResult(True, out.summary, ""))
        return True

    def states(self, files):
        from .plugin.loader import FAILED, READY, FileState

        out = self._out
        if out.ok:
            return [FileState(READY)]
        why = {"bug": "bug", "refused": "refused-read"}.get(out.kind, "" if out.error_kind == "trace" else "transient")
        error = out.error or f"{self._spec.file_name}: not loaded ({out.kind})"
        return [FileState(FAILED, error, out.kind == "cached", why)]

    def summary_bytes(self, f):
        return self._out.summary if self._out is not None and self._out.ok else None

    def digest_bytes(self, f):
        return self._out.digest if self._out is not None and self._out.ok else None

    def close(self) -> None:
        pass


def _failure(state, file_name: str) -> Tuple[str, bool]:
    """(the one line to print, whether it is a bug of ours) of a file that did not load."""
    error = state.error or f"{file_name}: not loaded"
    return error, state.why == "bug"


class LoadFailure(Exception):
    """The command's input cannot be used at all (not a folder, no traces, no such span): one line;
    ``errors`` [(line, bug)] of the files refused on the way (each said before it)."""

    def __init__(self, message: str, errors=()):
        super().__init__(message)
        self.errors = list(errors)


def load_summaries(args, target: str) -> List[Tuple[object, Optional[bytes], str, bool]]:
    """[(file, serialized Summary or None, error line, whether the error is a bug of ours)] of every trace
    at ``target`` (a file, or a folder searched recursively; ordered by path), loaded through the plugin's
    cache and job. The one loading path of ``summary`` and of tbp.load / tbp.load_all."""
    from .plugin.loader import READY
    from .runs import local_traces

    try:
        fs, root, files = local_traces(target)
    except OSError as exc:
        raise LoadFailure(f"{target}: {' '.join(str(exc).split())}") from None
    if not files or (not os.path.isdir(target) and not os.path.lexists(target)):
        raise LoadFailure(f"{target}: no *.paddle_trace.json files found")
    files.sort(key=lambda f: f.path)
    loaded = _Loaded(args, fs, root, files)
    out = []
    try:
        for f, state in zip(files, loaded.wait()):
            # Every file is tried, whatever happened to the others.
            data = loaded.loader.summary_bytes(f) if state.state == READY else None
            error, bug = ("", False) if data is not None else _failure(state, f.file_name)
            out.append((f, data, error, bug))
        loaded.report(getattr(args, "verbose", False))
    finally:
        loaded.close()
    return out


class RunLoad:
    """One span of a run as ``parallel`` (and tbp.load_run) analyse it: ``result`` the RunParallel (its
    notes included; None when no rank loaded), ``used`` the files analysed, ``errors`` [(line, bug)] of
    the files left out (refused ones first)."""

    def __init__(self, result, used, errors, matched):
        self.result, self.used, self.errors, self._matched = result, used, errors, matched

    def with_matched(self):
        """``result`` with its matched instances (kept apart from the stored analysis)."""
        from .analysis.crossrank.encode import MatchedTable

        self.result.MergeFromString(MatchedTable.from_bytes(self._matched()).encode())
        return self.result


def load_run(args, run_dir: str, span: Optional[str], analyze: bool = True) -> RunLoad:
    """The analysis of one span (default the first) of the run in ``run_dir``: the ranks' digests through
    the plugin's cache and job, the run assembly of the tab (runs.py), the stored analysis computed once.
    ``analyze=False``: no analysis (``result`` an empty RunParallel with the notes), ``digests`` only."""
    from .plugin.loader import READY
    from .runs import RunAnalyses, analysis_key, analyze_split, duplicate_notes, local_traces, span_files, span_order
    from .v1 import plugin_pb2, summary_pb2

    if not os.path.isdir(run_dir):
        raise LoadFailure(f"{run_dir}: not a folder of *.paddle_trace.json files")
    try:
        fs, root, files = local_traces(run_dir)
    except OSError as exc:
        raise LoadFailure(f"{run_dir}: {' '.join(str(exc).split())}") from None
    if not files:
        raise LoadFailure(f"{run_dir}: no *.paddle_trace.json files found")
    errors = [(f"{f.file_name}: {f.refused}", False) for f in files if f.refused]
    workers: dict = {}
    for f in files:
        if not f.refused:
            workers.setdefault(f.worker, {})[f.span] = f
    spans = sorted({f.span for f in files if not f.refused and "@" not in f.span}, key=span_order)
    span = str(span) if span is not None else (spans[0] if spans else "")
    chosen = span_files(workers, span)
    if not chosen:
        raise LoadFailure(f"{run_dir}: no trace of span {span!r} (spans: {', '.join(spans) or 'none'})", errors)
    loaded = _Loaded(args, fs, root, chosen)
    try:
        digests, keys, used, notes = [], [], [], []
        for f, state in zip(chosen, loaded.wait()):
            data = loaded.loader.digest_bytes(f) if state.state == READY else None
            if data is None:
                error, bug = _failure(state, f.file_name)
                errors.append((error, bug))
                notes.append(f"left out: {error}")
                continue
            digests.append(summary_pb2.RankDigest.FromString(data))
            keys.append(f.key)
            used.append(f)
        loaded.report(getattr(args, "verbose", False))
        if not digests:
            return RunLoad(None, used, errors, None)
        if not analyze:
            result = plugin_pb2.RunParallel(run=".", span=span)
            result.notes.extend(notes)
            got = RunLoad(result, used, errors, None)
            got.digests, got.span = digests, span
            return got
        if len(spans) > 1:
            notes.append(f"Spans {', '.join(spans)} found; this is span {span} (--span chooses).")
        notes.extend(duplicate_notes(workers, span))
        analyses = RunAnalyses(loaded.loader.cache if loaded.loader.cache.cache_dir is not None else None)
        key = analysis_key(keys)
        compute = lambda: analyze_split(digests, ".", span)  # noqa: E731
        result = plugin_pb2.RunParallel.FromString(analyses.get(key, compute))
    finally:
        loaded.close()
    result.notes.extend(notes)
    return RunLoad(result, used, errors, lambda: analyses.matched(key, compute))


def _cmd_summary(args) -> int:
    try:
        loaded = load_summaries(args, args.trace)
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
                from .display.summary import summary_display

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
        run = load_run(args, args.run_dir, args.span, analyze=analyze)
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
    from .render import parallel_text

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    result = run.with_matched() if args.format == "json" else run.result  # json: the matched instances too
    result.run = args.run_dir
    if args.format == "json":
        print(to_json(result))
    elif args.format == "csv":
        from .display.parallel import parallel_display

        if not print_csv(parallel_display(result, args.time_unit), args.table, args.run_dir):
            return 2
    else:
        print(parallel_text.render(result, time_unit=args.time_unit), end="")
    return 3 if internal else 2 if failed else 0


def _cmd_whatif(args) -> int:
    from .analysis.crossrank.whatif import analyze_whatif
    from .render import whatif_text

    run, internal, failed = _reported_run(args, analyze=False)
    if run is None:
        return 3 if internal else 2
    try:
        result = analyze_whatif(run.digests, args.run_dir, run.span, params=args.params,
                                tokens_per_step=args.tokens_per_step, model_config=args.model_config,
                                peak_tflops=args.peak_tflops, time_unit=args.time_unit)
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
    from .display.diff import rank_diff, run_diff
    from .v1.summary_pb2 import Summary

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
            run = load_run(args, path, span)
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
        ((f, data, error, bug),) = load_summaries(args, path)
        if data is None:
            raise LoadFailure(error, [(error, bug)] if bug else [])
        summaries.append(Summary.FromString(data))
        named.append((path, f.worker, f.span, f"{f.worker} span {f.span} ({f.file_name})"))
    return rank_diff(summaries[0], summaries[1], named, sorted_by=args.sorted_by, time_unit=args.time_unit)


def _cmd_diff(args) -> int:
    from .render.diff_text import render_text

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
    from .display.export import to_csv

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
    from .preprocess import preprocess

    from .dask_preprocess import cli_main, wants_dask  # [J2 dask] the per-file job on a Dask cluster, and

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
    quiet = logging.getLogger("tb_paddle_profile.plugin.loader")
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
