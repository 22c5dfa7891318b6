"""Loading a batch of trace files outside TensorBoard: the CLI's commands and the Python API.

The files go through the plugin's own loader and per-file job (jobs.run_job): the summaries and
digests come from the cache the tab reads (default folder, ``cache_dir``; ``cache=False``: nothing
kept), and a trace parsed here is in that cache afterwards, timeline index included. One file runs in
this process; more go to the loader's worker processes.

    load_summaries(target, LoadOptions(...)) -> [(file, Summary bytes or None, error, bug)]
    load_run(run_dir, span, LoadOptions(...)) -> RunLoad (the stored cross-rank analysis)
"""

from __future__ import annotations

import collections
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from tb_paddle_profile.analysis.crossrank.encode import MatchedTable
from tb_paddle_profile.core.progress import Progress, follow
from tb_paddle_profile.pipeline.discovery import TraceFile, local_traces
from tb_paddle_profile.pipeline.jobs import JobOutcome, JobSpec, run_job
from tb_paddle_profile.pipeline.loader import FAILED, LOADING, QUEUED, READY, FileState, Loader
from tb_paddle_profile.pipeline.runs import (
    RunAnalyses,
    analysis_key,
    analyze_split,
    duplicate_notes,
    span_files,
    span_order,
)
from tb_paddle_profile.store.cache import CachedResult, SummaryCache
from tb_paddle_profile.store.cache_store import open_cache
from tb_paddle_profile.trace.reader import parse_workers
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2
from tb_paddle_profile.core import terminal


@dataclass(frozen=True)
class LoadOptions:
    """How a batch is loaded: ``cache_dir`` (None: ``$TB_PADDLE_PROFILE_CACHE`` or the default folder),
    ``cache`` (False: nothing read or kept), ``jobs`` (parsing processes/threads; None: the cores, at
    most 8), ``verbose`` (say on stderr how many traces were parsed and how many came from the cache),
    ``progress`` (a core.progress.Progress drawn while the files load; None: none)."""

    cache_dir: Optional[str] = None
    cache: bool = True
    jobs: Optional[int] = None
    verbose: bool = False
    progress: Optional[Progress] = None


class _Loaded:
    """The batch's files in the loader (or, for one file, its job run in this process)."""

    def __init__(self, opts: LoadOptions, fs, root: Optional[str], files: List):
        cache = open_cache(cache_dir=opts.cache_dir) if opts.cache else SummaryCache(None)
        self.files = files
        self.progress = opts.progress
        self.loader: Union[_Inline, Loader]
        if len(files) == 1 and not files[0].refused:
            # One file: the same job, run in this process (no worker process to start for it).
            self.loader = _Inline(fs, cache, files[0], root, opts.jobs or parse_workers())
            return
        # growing_window 0: a truncated file is a failed one here (nobody waits for it to settle)
        self.loader = Loader(
            fs,
            cache,
            workers=opts.jobs or parse_workers(),
            root=root,
            growing_window=0.0,
            index=cache.cache_dir is not None,
        )
        self.loader.track(files)

    def wait(self):
        progress = self.progress
        if progress is None:
            self.loader.wait_idle()
            return self.loader.states(self.files)
        follow(self.loader, self.files, progress, (QUEUED, LOADING))
        return self.loader.states(self.files)

    def report(self, verbose: bool) -> None:
        if verbose:
            st = self.loader.stats
            print(
                f"{len(self.files)} trace(s): {st['parsed']} parsed, {st['cache_hits']} from the cache", file=sys.stderr
            )

    def close(self) -> None:
        self.loader.close()


class _Inline:
    """The part of the Loader the CLI uses, for one file whose job (jobs.run_job) runs in this process."""

    def __init__(self, fs, cache, f, root: Optional[str], workers: int):
        self.cache = cache
        self.stats: Dict[str, int] = collections.Counter()
        self._spec = JobSpec(
            path=f.path,
            file_name=f.file_name,
            key=f.key,
            cache_dir=str(cache.cache_dir) if cache.cache_dir is not None else None,
            sidecar=cache.sidecar,
            fs=fs,
            root=root,
            index=cache.cache_dir is not None,
            parse_workers=workers,
        )
        self._out: Optional[JobOutcome] = None

    def wait_idle(self, timeout=None) -> bool:
        if self._out is None:
            self._out = out = run_job(self._spec)
            self.stats["parsed"] += out.parsed
            self.stats["cache_hits"] += out.kind == "cached"
            if out.kind == "bug":
                terminal.logger(__name__).debug("%s\n%s", out.error, terminal.Lines(out.traceback))
            if out.ok and not out.stored and self.cache.cache_dir is None and hasattr(self.cache, "url"):
                self.cache.put_digest(self._spec.key, out.digest)  # a cache at a URL: stored here
                self.cache.put(self._spec.key, CachedResult(True, out.summary, ""))
        return True

    def states(self, files):
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


def load_summaries(
    target: str, opts: LoadOptions = LoadOptions()
) -> List[Tuple[TraceFile, Optional[bytes], str, bool]]:
    """[(file, serialized Summary or None, error line, whether the error is a bug of ours)] of every trace
    at ``target`` (a file, or a folder searched recursively; ordered by path), loaded through the plugin's
    cache and job. The one loading path of ``summary`` and of tbp.load / tbp.load_all."""
    try:
        fs, root, files = local_traces(target)
    except OSError as exc:
        raise LoadFailure(f"{target}: {' '.join(str(exc).split())}") from None
    if not files or (not os.path.isdir(target) and not os.path.lexists(target)):
        raise LoadFailure(f"{target}: no *.paddle_trace.json files found")
    files.sort(key=lambda f: f.path)
    loaded = _Loaded(opts, fs, root, files)
    out = []
    try:
        for f, state in zip(files, loaded.wait()):
            # Every file is tried, whatever happened to the others.
            data = loaded.loader.summary_bytes(f) if state.state == READY else None
            error, bug = ("", False) if data is not None else _failure(state, f.file_name)
            out.append((f, data, error, bug))
        loaded.report(opts.verbose)
    finally:
        loaded.close()
    return out


class RunLoad:
    """One span of a run as ``parallel`` (and tbp.load_run) analyse it: ``result`` the RunParallel (its
    notes included; None when no rank loaded), ``used`` the files analysed, ``errors`` [(line, bug)] of
    the files left out (refused ones first)."""

    # set by load_run when a rank loaded (for what the analysis does not hold: the what-if answers)
    digests: List[bytes]
    span: str

    def __init__(self, result, used, errors, matched):
        self.result, self.used, self.errors, self._matched = result, used, errors, matched

    def matched_table(self) -> MatchedTable:
        """The matched instances as columns (analysis.crossrank.encode.MatchedTable)."""
        return MatchedTable.from_bytes(self._matched())

    def with_matched(self):
        """``result`` with its matched instances (kept apart from the stored analysis)."""
        self.result.MergeFromString(MatchedTable.from_bytes(self._matched()).encode())
        return self.result

    def json_value(self) -> dict:
        """The proto3 JSON values of with_matched() (core.protojson.to_value), its matched instances made from
        their columns rather than as messages (``parallel --format json``); ``result`` is left as it is."""
        from tb_paddle_profile.core.protojson import to_value

        value = to_value(self.result)
        if len(self.result.matched):  # with_matched() made them messages already
            return value
        value["matched"] = self.matched_table().json_value()
        return value


def load_run(
    run_dir: str, span: Optional[str], opts: LoadOptions = LoadOptions(), analyze: bool = True, listed=None
) -> RunLoad:
    """The analysis of one span (default the first) of the run in ``run_dir``: the ranks' digests through
    the plugin's cache and job, the run assembly of the tab (runs.py), the stored analysis computed once.
    ``analyze=False``: no analysis (``result`` an empty RunParallel with the notes), ``digests`` only.
    ``listed``: local_traces(run_dir) when the caller listed it already."""
    if not os.path.isdir(run_dir):
        raise LoadFailure(f"{run_dir}: not a folder of *.paddle_trace.json files")
    try:
        fs, root, files = listed if listed is not None else local_traces(run_dir)
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
    if not spans:
        raise LoadFailure(f"{run_dir}: none of its {len(files)} trace files could be read", errors)
    if not chosen:
        raise LoadFailure(f"{run_dir}: no trace of span {span!r} (spans: {', '.join(spans) or 'none'})", errors)
    loaded = _Loaded(opts, fs, root, chosen)
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
        loaded.report(opts.verbose)
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
        if opts.progress is not None:
            opts.progress.phase(f"analysing {len(digests)} ranks")
        analyses = RunAnalyses(loaded.loader.cache if loaded.loader.cache.cache_dir is not None else None)
        key = analysis_key(keys)
        compute = lambda: analyze_split(digests, ".", span)  # noqa: E731
        result = plugin_pb2.RunParallel.FromString(analyses.get(key, compute))
    finally:
        loaded.close()
    result.notes.extend(notes)
    got = RunLoad(result, used, errors, lambda: analyses.matched(key, compute))
    got.digests, got.span = digests, span  # for what the analysis does not hold (the what-if answers)
    return got
