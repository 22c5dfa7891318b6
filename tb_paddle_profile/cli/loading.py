"""What the commands load: the loader's options from the arguments, and one run named by its folder."""

from __future__ import annotations

import os
import sys
from typing import Optional

from tb_paddle_profile.pipeline.batch import LoadFailure, LoadOptions, load_run


def _options(args) -> LoadOptions:
    return LoadOptions(
        cache_dir=args.cache_dir,
        cache=not args.no_cache,
        jobs=args.jobs,
        verbose=getattr(args, "verbose", False),
        progress=getattr(args, "progress_line", None),
    )


def _listing(run_dir: str):
    """discovery.local_traces of ``run_dir`` (what _one_run and load_run look at: listed once), or None when
    it is not a folder or cannot be listed (load_run says why)."""
    from tb_paddle_profile.pipeline.discovery import local_traces

    if not os.path.isdir(run_dir):
        return None
    try:
        return local_traces(run_dir)
    except OSError:
        return None


def _one_run(run_dir: str, listed=None) -> Optional[str]:
    """The one-line error when ``run_dir`` holds several runs (folders of traces, as the tab lists them:
    each folder holding traces is a run), naming them; None for one run (or a path load_run refuses).
    ``listed``: _listing(run_dir), when the caller has it."""
    if listed is None:
        listed = _listing(run_dir)
    if listed is None:
        return None
    files = listed[2]
    runs: dict = {}
    for f in files:
        rel = os.path.relpath(os.path.dirname(f.path), run_dir)
        runs[rel] = runs.get(rel, 0) + 1
    if len(runs) <= 1:
        return None
    listed = ", ".join(f"{'.' if r == '.' else r} ({n} trace{'s' if n > 1 else ''})" for r, n in sorted(runs.items()))
    first = os.path.join(run_dir, sorted(r for r in runs if r != ".")[0])
    return f"{run_dir}: {len(runs)} runs here: {listed}; name one (e.g. {first}), as the tab shows them apart"


def _reported_run(args, analyze: bool = True):
    """(RunLoad or None, internal, failed) of the run the command names, each file's error printed on
    stderr (one line each); None when nothing could be analysed (the exit status is then 3 for a bug of
    ours, else 2)."""
    listed = _listing(args.run_dir)
    several = _one_run(args.run_dir, listed)
    if several:
        print(f"error: {several}", file=sys.stderr)
        return None, 0, 1
    try:
        run = load_run(args.run_dir, args.span, _options(args), analyze=analyze, listed=listed)
    except LoadFailure as exc:
        for error, _ in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return None, 0, 1
    for error, _ in run.errors:
        print(f"error: {error}", file=sys.stderr)
    internal = sum(bug for _, bug in run.errors)
    return (run if run.result is not None else None), internal, len(run.errors) - internal
