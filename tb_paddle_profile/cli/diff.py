"""`tb-paddle-profile diff`: two ranks or two runs side by side, and the `--fail-if-slower` gate."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Optional, Tuple, cast

from tb_paddle_profile.cli.output import emit_answer
from tb_paddle_profile.cli.loading import _one_run, _options
from tb_paddle_profile.core import terminal
from tb_paddle_profile.core.errors import our_bug
from tb_paddle_profile.pipeline.batch import LoadFailure, load_run, load_summaries


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
        out = run_diff(
            runs[0],
            runs[1],
            [(path, "", rp.span, f"{path} span {rp.span}") for (path, _), rp in zip(sides, runs)],
            time_unit=args.time_unit,
        )
        out.alignment.extend(
            f"{side}: {n}"
            for side, rp in zip(("baseline", "candidate"), runs)
            for n in rp.notes
            if n.startswith("left out")
        )
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
    if not emit_answer(args, result, args.baseline, lambda: render_text(result, args.time_unit, width=args.width)):
        return 2
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
                    if (
                        row.get("part") == "step time"
                        and row.get("baseline_ns") is not None
                        and row.get("candidate_ns") is not None
                    ):
                        return float(cast(float, row["baseline_ns"])), float(cast(float, row["candidate_ns"]))
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
    said = (
        f"the step time went from {format_duration(base, time_unit)} to {format_duration(cand, time_unit)} "
        f"({change * 100:+.1f}%)"
    )
    if change > allowed:
        print(f"gate: FAIL: {said}, more than the {allowed * 100:g}% allowed", file=sys.stderr)
        return 1
    print(f"gate: ok: {said}, within the {allowed * 100:g}% allowed", file=sys.stderr)
    return 0
