"""`tb-paddle-profile`: Paddle's summary tables from saved traces, in the terminal.

Each subcommand is a thin shell over the engine and one renderer.
"""
from __future__ import annotations

import argparse
import difflib
import logging
import os
import sys
import traceback
from typing import List, Optional, Tuple

from tb_paddle_profile.core import terminal
from tb_paddle_profile.core.progress import Progress
from tb_paddle_profile.core.version import __version__

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
                       verbose=getattr(args, "verbose", False), progress=getattr(args, "progress_line", None))


def _progress(args) -> Progress:
    """The progress line of a command: on stderr, drawn when stderr is a terminal (or with --progress),
    never with --no-progress."""
    wanted = getattr(args, "progress", None)
    enabled = wanted if wanted is not None else sys.stderr.isatty()
    return Progress(enabled=bool(enabled))


def _one_run(run_dir: str) -> Optional[str]:
    """The one-line error when ``run_dir`` holds several runs (folders of traces, as the tab lists them:
    each folder holding traces is a run), naming them; None for one run (or a path load_run refuses)."""
    from tb_paddle_profile.pipeline.discovery import local_traces

    if not os.path.isdir(run_dir):
        return None
    try:
        _, _, files = local_traces(run_dir)
    except OSError:
        return None
    runs: dict = {}
    for f in files:
        rel = os.path.relpath(os.path.dirname(f.path), run_dir)
        runs[rel] = runs.get(rel, 0) + 1
    if len(runs) <= 1:
        return None
    listed = ", ".join(f"{'.' if r == '.' else r} ({n} trace{'s' if n > 1 else ''})" for r, n in sorted(runs.items()))
    first = os.path.join(run_dir, sorted(r for r in runs if r != ".")[0])
    return (f"{run_dir}: {len(runs)} runs here: {listed}; name one (e.g. {first}), "
            f"as the tab shows them apart")


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
                if args.csv_dir:
                    sub = args.csv_dir if len(loaded) == 1 else os.path.join(args.csv_dir, _stem(f.file_name))
                    if not write_csv_dir(display, sub, f.file_name, views=args.views, table_key=args.table):
                        failed += 1
                    continue
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
                traceback.print_exc(file=terminal.raw(sys.stderr))
            internal += 1
            continue
        if len(loaded) > 1:
            print(f"{'' if i == 0 else chr(10)}==> {terminal.visible(f.path)} <==")
        print(out, end="" if args.format == "csv" else "\n")
    return 3 if internal else 2 if failed else 0


def _stem(file_name: str) -> str:
    for end in (".paddle_trace.json.gz", ".paddle_trace.json"):
        if file_name.endswith(end):
            return file_name[: -len(end)]
    return file_name


def _reported_run(args, analyze: bool = True):
    """(RunLoad or None, internal, failed) of the run the command names, each file's error printed on
    stderr (one line each); None when nothing could be analysed (the exit status is then 3 for a bug of
    ours, else 2)."""
    several = _one_run(args.run_dir)
    if several:
        print(f"error: {several}", file=sys.stderr)
        return None, 0, 1
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

        if not emit_csv(args, parallel_display(result, args.time_unit), args.run_dir):
            return 2
    else:
        print(parallel_text.render(result, time_unit=args.time_unit, width=args.width), end="")
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
        if not emit_csv(args, result.display, args.run_dir):
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
        several = _one_run(path)
        if several:
            raise LoadFailure(several)
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
            traceback.print_exc(file=terminal.raw(sys.stderr))
        return 3
    if args.format == "json":
        print(to_json(result))
    elif args.format == "csv":
        if not emit_csv(args, result.display, args.baseline):
            return 2
    else:
        print(render_text(result, args.time_unit, width=args.width), end="")
    if args.fail_if_slower is not None:
        return gate(result, args.fail_if_slower, args.time_unit)
    return 0


def _threshold(text: str) -> float:
    """``--fail-if-slower``: "5%", "5" (percent) or "0.5%" -> a fraction (0.05)."""
    raw = text.strip().rstrip("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (e.g. 5%)") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the allowed slow-down must be 0% or more")
    return value / 100.0


def step_times(result) -> Optional[Tuple[float, float]]:
    """(baseline, candidate) mean step time (ns) of a RunDiff: the "step time" row of its decomposition
    table (view "step"), the total its parts add up to; None when one side has no step."""
    from tb_paddle_profile.present.display.export import records

    for view in result.display.views:
        for table in view.tables:
            if view.key == "step" and table.key == "decomposition":
                for row in records(table):
                    if row.get("part") == "step time" and row.get("baseline_ns") is not None \
                            and row.get("candidate_ns") is not None:
                        return float(row["baseline_ns"]), float(row["candidate_ns"])
    return None


def gate(result, allowed: float, time_unit: str = "ms") -> int:
    """`diff --fail-if-slower P%`: 1 (and one line on stderr saying why) when the candidate's mean step
    time exceeds the baseline's by more than ``allowed`` (a fraction), else 0 (and one line saying so)."""
    from tb_paddle_profile.present.display import cells
    from tb_paddle_profile.v1 import display_pb2 as dpb

    def format_duration(ns: float, unit: str) -> str:
        return cells.format_value(cells.fmt(dpb.CELL_DURATION, unit, style="unit"), cells.num(ns), unit)

    got = step_times(result)
    if got is None:
        print("gate: error: one side has no ProfileStep, so no step time to compare", file=sys.stderr)
        return 2
    base, cand = got
    change = (cand - base) / base if base > 0 else 0.0
    said = (f"the step time went from {format_duration(base, time_unit)} to {format_duration(cand, time_unit)} "
            f"({change * 100:+.1f}%)")
    if change > allowed:
        print(f"gate: FAIL: {said}, more than the {allowed * 100:g}% allowed", file=sys.stderr)
        return 1
    print(f"gate: ok: {said}, within the {allowed * 100:g}% allowed", file=sys.stderr)
    return 0


def emit_csv(args, display, source: str) -> bool:
    """`--format csv` of a command: into ``--csv-dir`` (one file per table) or on stdout (print_csv)."""
    if getattr(args, "csv_dir", None):
        return write_csv_dir(display, args.csv_dir, source, table_key=args.table)
    return print_csv(display, args.table, source)


def print_csv(display, table_key, source: str) -> bool:
    """`--format csv`: `table_key` ("KEY" or "VIEW/KEY") prints that one table as plain CSV (a header
    line, then the rows: what ``pandas.read_csv`` reads as it is); without it every table of the
    Display's views (raw values, display/export.py), each under a line "# <view>/<table key>: <title>"
    and followed by a blank line (for reading; --csv-dir writes them as one plain file each). False (and
    a one-line error naming `source`) when no table has the key."""
    out = csv_text(display, table_key, source)
    if out is None:
        return False
    print(out, end="")
    return True


def _csv_tables(display, table_key, source: str, views=None):
    """[(view key, table)] of a Display (one with ``table_key``); None (and a one-line error naming
    ``source``) when no table has the key."""
    tables = [(v.key, t) for v in display.views for t in v.tables if not views or t.paddle_view in views]
    if table_key:
        chosen = [(v, t) for v, t in tables if table_key in (t.key, f"{v}/{t.key}")]
        if not chosen:
            keys = ", ".join(f"{v}/{t.key}" for v, t in tables)
            print(f"error: {source}: no table {table_key!r} (tables: {keys})", file=sys.stderr)
            return None
        tables = chosen[:1]
    return tables


def csv_text(display, table_key, source: str, views=None) -> Optional[str]:
    """The text of print_csv; ``views`` (Paddle's view names, `summary --views`) keeps only Paddle's tables
    of those views. None (and a one-line error naming ``source``) when no table has ``table_key``."""
    from tb_paddle_profile.present.display.export import to_csv

    tables = _csv_tables(display, table_key, source, views)
    if tables is None:
        return None
    if table_key:
        return to_csv(tables[0][1])
    return "".join(f"# {v}/{t.key}: {t.title}\n{to_csv(t)}\n" for v, t in tables)


def write_csv_dir(display, folder: str, source: str, views=None, table_key=None) -> bool:
    """`--csv-dir DIR`: every table (or the one of ``table_key``) as ``DIR/<view>.<table key>.csv``, plain
    CSV each; the files written are listed on stderr. False (and one line) when nothing could be written."""
    from tb_paddle_profile.present.display.export import to_csv

    tables = _csv_tables(display, table_key, source, views)
    if tables is None:
        return False
    try:
        os.makedirs(folder, exist_ok=True)
        for v, t in tables:
            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{v}.{t.key}") + ".csv"
            with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as out:
                out.write(to_csv(t))
    except OSError as exc:
        print(f"error: {folder}: cannot write the CSV files: {exc.strerror or exc}", file=sys.stderr)
        return False
    print(f"{len(tables)} table(s) of {source} written to {folder}", file=sys.stderr)
    return True


def _cmd_preprocess(args) -> int:
    from tb_paddle_profile.pipeline.preprocess import preprocess

    from tb_paddle_profile.pipeline.dask import cli_main, wants_dask  # [J2 dask] the per-file job on a Dask cluster, and

    if wants_dask(args):  # a cache at a URL (filled through dask_preprocess.py only)
        return cli_main(args)
    if "://" not in args.logdir and not os.path.isdir(args.logdir):
        print(f"error: {args.logdir}: {'not a folder' if os.path.lexists(args.logdir) else 'no such folder'}",
              file=sys.stderr)
        return 2
    try:
        results = preprocess(args.logdir, cache_dir=args.cache_dir, sidecar=args.sidecar, jobs=args.jobs,
                             timeline=not args.no_timeline, progress=args.progress_line)
    except OSError as exc:  # the logdir cannot be listed
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    finally:
        args.progress_line.finish()
    if not results:
        print(f"error: {args.logdir}: no *.paddle_trace.json files found", file=sys.stderr)
        return 2
    failed = 0
    for path, ok, message in results:
        if not ok:
            failed += 1
            print(f"error: {message}", file=sys.stderr)
        elif args.verbose:
            print(terminal.visible(f"{path}: {message}"))
    done = "summarized" if args.no_timeline else "summarized and indexed"
    print(f"{len(results) - failed} of {len(results)} traces {done} into the cache")
    return 2 if failed else 0


def _cmd_export(args) -> int:
    """`export RUN_DIR -o merged.json[.gz]`: every rank of a span in one Chrome trace, on the corrected clock."""
    from tb_paddle_profile.present.merged_trace import write_merged_trace

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    try:
        stats = write_merged_trace(run.result, run.used, args.output, ranks=args.ranks, matched=run.matched_table())
    except ValueError as exc:  # a --ranks that names no rank of the run, a trace that cannot be read
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{args.output}: {stats['ranks']} rank(s), {stats['events']} events, {stats['flows']} launch→kernel "
          f"flows, {stats['collectives']} collective instances as arrows (open it in https://ui.perfetto.dev or chrome://tracing)", file=sys.stderr)
    return 3 if internal else 2 if failed else 0


def _cmd_report(args) -> int:
    """`report RUN_DIR -o report.html`: one self-contained HTML page of the run's display model."""
    from tb_paddle_profile.present.display.parallel import parallel_display
    from tb_paddle_profile.present.html_report import render_report

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    displays = [("Across ranks", run.result.display if run.result.HasField("display")
                 else parallel_display(run.result, args.time_unit))]
    try:
        from tb_paddle_profile.present.display.whatif import whatif_answer

        args.progress_line.phase("what-if estimates")
        answer = whatif_answer(run.digests, args.run_dir, run.span, args.time_unit)
        displays.append(("What-if", answer.display))
        slowest = _slowest_rank_display(args, run)
        if slowest is not None:
            displays.append(slowest)
    finally:
        args.progress_line.finish()
    html = render_report(f"{args.run_dir} · span {run.result.span}", displays, time_unit=args.time_unit,
                         notes=list(run.result.notes))
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(html)
    except OSError as exc:
        print(f"error: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{args.output}: {len(html) / 1e6:.2f} MB, {len(run.result.ranks)} rank(s)", file=sys.stderr)
    return 3 if internal else 2 if failed else 0


def _slowest_rank_display(args, run):
    """("Slowest rank", a Display of its top operators and kernels) for the report, from its Summary
    (in the cache the run was just loaded through); None when it cannot be read."""
    from tb_paddle_profile.present.display.summary import summary_display
    from tb_paddle_profile.present.html_report import top_rows

    ranks = [r for r in run.result.ranks if r.file_name]
    by_name = {f.file_name: f for f in run.used}
    ranks = [r for r in ranks if r.file_name in by_name]
    if not ranks:
        return None
    slow = max(ranks, key=lambda r: r.step_time_ns)
    ((_, data, _, _),) = load_summaries(by_name[slow.file_name].path, _options(args))
    if data is None:
        return None
    display = summary_display(Summary.FromString(data), time_unit=args.time_unit)
    title = f"top operators and kernels of {slow.label or slow.worker}, the rank with the longest step"
    return "Slowest rank", top_rows(display, ["operators", "kernels"], 25, title)


def _cache_args(p) -> None:
    p.add_argument("--cache-dir", default=None,
                   help="the cache the TensorBoard plugin reads (default: $TB_PADDLE_PROFILE_CACHE or "
                        "~/.cache/tb_paddle_profile): summaries, digests and timeline indexes are read from it "
                        "and stored into it")
    p.add_argument("--no-cache", action="store_true", help="neither read nor fill the cache")
    p.add_argument("-v", "--verbose", action="store_true", help="say how many traces were parsed and how many "
                                                               "came from the cache (on stderr)")


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: must be 1 or more (1: no worker processes)")
    return n


JOBS_HELP = ("worker processes that parse traces (default: the CPUs available, at most 8; a single large trace "
             "is read by that many threads of the native scanner instead; 1: serial)")

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

DOCS = ("Every command's options and examples: tb-paddle-profile COMMAND --help. --format csv and the "
        "Python API (import tb_paddle_profile as tbp; help(tbp)) give every table with its column keys.")


class _Parser(argparse.ArgumentParser):
    """argparse, with a suggestion for a mistyped command."""

    def error(self, message: str):
        if "invalid choice" in message and self.prog == "tb-paddle-profile":
            import re

            m = re.search(r"invalid choice: '([^']*)'", message)
            commands = [c for c in COMMANDS]
            close = difflib.get_close_matches(m.group(1), commands, n=1, cutoff=0.6) if m else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.exit(2, f"tb-paddle-profile: error: unknown command {m.group(1)!r}{hint}; commands: "
                         f"{', '.join(commands)}\n" if m else f"tb-paddle-profile: error: {message}\n")
        super().error(message)


COMMANDS = ["summary", "parallel", "whatif", "diff", "export", "report", "preprocess", "distributed"]


def _common() -> argparse.ArgumentParser:
    """Options of every command: --debug, --progress / --no-progress."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="print the traceback of an internal error (a bug of the tool) and the loader's log")
    bar = common.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                     help="draw the progress line on stderr even when it is not a terminal")
    bar.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                     help="no progress line (default: drawn when stderr is a terminal)")
    return common


def _width_arg(p) -> None:
    p.add_argument("--width", type=int, default=120, metavar="COLUMNS",
                   help="text: a table wider than this is printed in parts that each fit, keeping its name "
                        "column (default 120; 0: never split)")


def _output_args(p, what: str, csv_heading: str) -> None:
    p.add_argument("--format", choices=("text", "json", "csv"), default=None,
                   help=f"text (default): {what}; json: the protobuf as proto3 JSON; csv: every table with raw "
                        f"values (ns, fractions, bytes), each under a line '{csv_heading}', or with --table one "
                        "table as plain CSV (pandas.read_csv reads it as it is)")
    p.add_argument("--table", default=None, metavar="KEY",
                   help="one table as plain CSV (implies --format csv; an error with another --format); an "
                        "unknown key lists the keys there are")
    p.add_argument("--csv-dir", default=None, metavar="DIR",
                   help="write every table (or the --table one) as DIR/<view>.<table>.csv, plain CSV each "
                        "(implies --format csv)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tb-paddle-profile", description=__doc__.splitlines()[0],
                     epilog=EXAMPLES + "\n" + DOCS, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tb-paddle-profile {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _common()

    def add(name, help, examples, **kw):
        return sub.add_parser(name, help=help, description=help, parents=[common],
                              epilog="examples:\n" + "".join(f"  {e}\n" for e in examples),
                              formatter_class=argparse.RawDescriptionHelpFormatter, **kw)

    s = add("summary", "print Paddle's summary tables for a trace (or every trace in a folder)",
            ["tb-paddle-profile summary run/rank0_time_....paddle_trace.json --sorted-by GPUTotal --time-unit us",
             "tb-paddle-profile summary run/ --views kernel memory",
             "tb-paddle-profile summary run/ --format csv --table operators > operators.csv",
             "tb-paddle-profile summary run/ --csv-dir tables/"])
    s.add_argument("trace", help="a *.paddle_trace.json[.gz] file, or a folder searched recursively")
    s.add_argument("--sorted-by", default="CPUTotal", choices=text.SORTED_KEYS,
                   help="Paddle's SortedKeys for the Operator, Kernel and UserDefined tables (default CPUTotal)")
    s.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    s.add_argument("--views", nargs="+", type=_view, metavar="VIEW",
                   help="only these views (Paddle's SummaryView names or: " + ", ".join(VIEW_ALIASES) + ")")
    s.add_argument("--no-op-detail", action="store_true", help="operators without their inner events and kernels")
    s.add_argument("--thread-sep", action="store_true", help="one Operator/UserDefined table per thread")
    _output_args(s, "Paddle's tables, as Profiler.summary() prints them", "# <view>/<table>: <title>")
    s.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(s)
    s.set_defaults(func=_cmd_summary)

    # `distributed` is the command's old name, kept as an alias (docs/architecture.md, glossary)
    d = add("parallel", "hybrid-parallel analysis across the ranks of a run: collectives by kind, exposed "
                        "communication, stragglers, pipeline bubbles, advice",
            ["tb-paddle-profile parallel run/", "tb-paddle-profile parallel run/ --span 1 --format json",
             "tb-paddle-profile parallel run/ --table waits > waits.csv"], aliases=["distributed"])
    d.add_argument("run_dir", help="the folder holding one run's traces (one per rank; searched recursively)")
    d.add_argument("--span", default=None, help="which recorded span (Paddle's span_index; default the first)")
    d.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    _output_args(d, "the verdict, findings and tables", "# parallel/<key>: <title>")
    _width_arg(d)
    d.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(d)
    d.set_defaults(func=_cmd_parallel)

    w = add("whatif", "the critical path across ranks and what-if estimates (DP all-reduce hidden, straggler "
                      "fixed, stages balanced, twice the micro-batches, no launch overhead), the pipeline "
                      "schedule and MFU",
            ["tb-paddle-profile whatif run/", "tb-paddle-profile whatif run/ --model-config config.yaml",
             "tb-paddle-profile whatif run/ --params 1.3e9 --tokens-per-step 524288 --peak-tflops 312"])
    w.add_argument("run_dir", help="the folder holding one run's traces (one per rank; searched recursively)")
    w.add_argument("--span", default=None, help="which recorded span (default the first)")
    w.add_argument("--params", type=float, default=None, help="MFU: the model's parameter count")
    w.add_argument("--tokens-per-step", type=float, default=None, help="MFU: tokens per step (the global batch)")
    w.add_argument("--model-config", default=None, metavar="FILE",
                   help="MFU: a PaddleNLP-style YAML/JSON config giving the model and batch")
    w.add_argument("--peak-tflops", type=float, default=None,
                   help="MFU: the GPU's peak TFLOP/s (default: from its name in the trace)")
    w.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    _output_args(w, "sentences and tables", "# whatif/<key>: <title>")
    w.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(w)
    w.set_defaults(func=_cmd_whatif)

    c = add("diff", "compare two ranks (trace files) or two runs (folders): tables side by side with deltas, "
                    "and the step-time change split into parts; --fail-if-slower makes it a CI gate",
            ["tb-paddle-profile diff base_run/ new_run/",
             "tb-paddle-profile diff base_run/@0 new_run/@1",
             "tb-paddle-profile diff base/rank0_....paddle_trace.json new/rank0_....paddle_trace.json",
             "tb-paddle-profile diff base_run/ new_run/ --fail-if-slower 5%   # CI: exit 1 past 5% slower"])
    c.add_argument("baseline", help="a trace file, or a run folder (RUN_DIR@SPAN chooses a span)")
    c.add_argument("candidate", help="the same kind as the baseline")
    c.add_argument("--baseline-span", default=None, help="the baseline run's span (default the first)")
    c.add_argument("--candidate-span", default=None, help="the candidate run's span (default the first)")
    c.add_argument("--sorted-by", default="CPUTotal", choices=text.SORTED_KEYS,
                   help="two ranks: the tables' order before sorting by |delta| (CPU keys: CPU deltas; GPU keys: GPU)")
    c.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    _output_args(c, "the sentence and the tables", "# <view>/<table>: <title>")
    _width_arg(c)
    c.add_argument("--fail-if-slower", type=_threshold, default=None, metavar="PCT",
                   help="a regression gate: exit 1, with one line on stderr saying why, when the candidate's "
                        "mean step time is more than PCT (e.g. 5%%) above the baseline's")
    c.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(c)
    c.set_defaults(func=_cmd_diff)

    e = add("export", "write every rank of a run's span into ONE Chrome-trace JSON on the run's corrected clock "
                      "(one process per rank named by its label, launch→kernel flows, memory counters), for "
                      "Perfetto (ui.perfetto.dev) or chrome://tracing",
            ["tb-paddle-profile export run/ -o run.json.gz", "tb-paddle-profile export run/ --ranks 0-3,8 -o some.json"])
    e.add_argument("run_dir", help="the folder holding one run's traces")
    e.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the file to write (.json, or .json.gz compressed); never inside the run's folder unless "
                        "named so")
    e.add_argument("--span", default=None, help="which recorded span (default the first)")
    e.add_argument("--ranks", default=None, help="only these ranks: 0,1,4-7 (default: all)")
    e.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(e)
    e.set_defaults(func=_cmd_export)

    r = add("report", "write one self-contained HTML report of a run (verdict, findings, per-rank tables, "
                      "what-if): opens from disk, no network",
            ["tb-paddle-profile report run/ -o report.html"])
    r.add_argument("run_dir", help="the folder holding one run's traces")
    r.add_argument("-o", "--output", default="report.html", metavar="FILE", help="default report.html")
    r.add_argument("--span", default=None, help="which recorded span (default the first)")
    r.add_argument("--time-unit", default="ms", choices=text.TIME_UNITS, help="default ms")
    r.add_argument("--jobs", type=_jobs, default=None, help=JOBS_HELP)
    _cache_args(r)
    r.set_defaults(func=_cmd_report)

    p = add("preprocess", "summarize every trace under a logdir into the cache ahead of time",
            ["tb-paddle-profile preprocess logdir/ && tensorboard --logdir logdir/",
             "tb-paddle-profile preprocess s3://bucket/logdir --dask local:4"])
    p.add_argument("logdir", help="a folder or an fsspec URL (s3://bucket/prefix, ...)")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: $TB_PADDLE_PROFILE_CACHE or ~/.cache)")
    p.add_argument("--sidecar", action="store_true", help="also write the summary next to each trace")
    p.add_argument("--jobs", type=_jobs, default=None, help="worker processes (default: the CPUs available, at most 8)")
    p.add_argument("--no-timeline", action="store_true",
                   help="summaries only; do not build the timeline indexes (built on first view then)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--dask", metavar="ADDRESS", default=None,  # [J2 dask]
                   help="parse on a Dask cluster: a scheduler (tcp://host:8786) or local:N (N local worker "
                        "processes); needs tb_paddle_profile[dask]")
    p.set_defaults(func=_cmd_preprocess)
    return parser


def _resolve_format(parser, args) -> None:
    """--table and --csv-dir imply --format csv; with --format text or json they are an error."""
    if not hasattr(args, "table"):
        return
    wants_csv = args.table is not None or args.csv_dir is not None
    if args.format is None:
        args.format = "csv" if wants_csv else "text"
    elif wants_csv and args.format != "csv":
        flag = "--table" if args.table is not None else "--csv-dir"
        parser.error(f"{flag} is for CSV output; it cannot go with --format {args.format}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print(f"usage: tb-paddle-profile COMMAND ... ({', '.join(COMMANDS[:-1])})\n\n{EXAMPLES}\n"
              f"tb-paddle-profile --help for more, tb-paddle-profile COMMAND --help for a command's options.",
              file=sys.stderr)
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
