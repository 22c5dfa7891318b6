"""Fill the summary cache ahead of time: ``tb-paddle-profile preprocess LOGDIR``.

Runs the same discovery and worker processes as the TensorBoard plugin, once, and waits for them, so
that TensorBoard started afterwards on the same logdir (and cache) parses nothing.

A trace counts as done only when what was asked for is really stored: its summary in the cache folder
(or its sidecar), and its timeline index when timelines are asked for. A cache folder that cannot be
written is reported per trace (with the reason) instead of being filled silently in memory, and the
timeline indexes are then not built at all; waiting for a timeline build is bounded.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tb_paddle_profile.cache import ENV_SIDECAR, SummaryCache, env_flag, read_sidecar, write_sidecar
from tb_paddle_profile.plugin.discovery import Discovery
from tb_paddle_profile.plugin.loader import FAILED, GROWING, READY, Loader

# The longest wait for one trace's timeline index: TIMELINE_WAIT_S, plus TIMELINE_WAIT_S_PER_MB per MB.
TIMELINE_WAIT_S = 600.0
TIMELINE_WAIT_S_PER_MB = 2.0
POLL_S = 0.2


def preprocess(logdir: str, cache_dir: Optional[str] = None, sidecar: bool = False,
               jobs: Optional[int] = None, timeline: bool = False) -> List[Tuple[str, bool, str]]:
    """Summarize every trace under ``logdir`` into the cache; one ``(path, ok, message)`` per trace.

    ``cache_dir`` defaults to ``TB_PADDLE_PROFILE_CACHE`` or ``~/.cache/tb_paddle_profile``; ``sidecar``
    (or ``TB_PADDLE_PROFILE_SIDECAR=1``) also writes each summary next to its trace; ``jobs`` is the number
    of worker processes (default: the cores, at most 8); ``timeline`` also builds each trace's timeline
    index into the cache, so that the Timeline view opens without waiting for it. ``ok`` is False, with
    the one-line reason, for a trace that is not usable and for one whose summary (or index) could not
    be stored. Raises OSError when the logdir cannot be listed.
    """
    cache = SummaryCache.from_env(cache_dir=cache_dir, sidecar=bool(sidecar) or env_flag(ENV_SIDECAR))
    discovery = Discovery(logdir, interval=None)
    loader = Loader(discovery.fs, cache, workers=jobs, root=discovery.root)
    discovery.subscribe(loader.update)
    try:
        snapshot = discovery.scan()
        if snapshot.error:
            raise OSError(f"cannot list {logdir}: {snapshot.error}")
        loader.wait_idle()
        results = []
        stored = []
        problem = None  # why the cache folder cannot be written, once asked
        for trace, state in zip(snapshot.files, loader.states(snapshot.files)):
            shown = _shown(trace)
            if state.state in (READY, FAILED) and cache.sidecar:
                _ensure_sidecar(discovery.fs, trace, cache, discovery.root)
            if state.state == READY:
                if _is_stored(discovery.fs, trace, cache, discovery.root):
                    results.append((shown, True, "cached" if state.cached else "parsed"))
                    stored.append(trace)
                    continue
                if problem is None:
                    problem = _cache_problem(cache)
                results.append((shown, False, f"{trace.file_name}: summarized, but the summary could not be "
                                              f"stored: {problem}"))
            elif state.state == GROWING:
                results.append((shown, False, f"still being written, try again later ({state.error})"))
            else:
                results.append((shown, False, state.error or f"{trace.file_name}: not loaded"))
        if timeline and cache.cache_dir is not None and stored:
            failed = _build_timelines(discovery.fs, cache.cache_dir, stored, jobs, discovery.root)
            results = [(shown, False, failed[shown]) if ok and shown in failed else (shown, ok, message)
                       for shown, ok, message in results]
        return results
    finally:
        discovery.stop()
        loader.close()


def _shown(trace) -> str:
    return trace.source[len("file://"):] if trace.source.startswith("file://") else trace.source


def _is_stored(fs, trace, cache: SummaryCache, root: Optional[str]) -> bool:
    """Whether the summary of `trace` can be found again by a later process (cache folder or sidecar)."""
    if cache.cache_dir is not None and cache.peek(trace.key) is not None:
        return True
    return cache.sidecar and read_sidecar(fs, trace.path, trace.key, root) is not None


def _write_problem(folder: Path) -> str:
    """Why nothing can be written into `folder` ("" when a file can be created there)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
        return ""
    except OSError as err:
        return f"{folder} is not writable: {err.strerror or err}"


def _cache_problem(cache: SummaryCache) -> str:
    if cache.cache_dir is None:
        return "the cache is off (TB_PADDLE_PROFILE_CACHE) and no sidecars were asked for"
    return _write_problem(cache.cache_dir) or f"the cache entry could not be written under {cache.cache_dir}"


def _ensure_sidecar(fs, trace, cache: SummaryCache, root: Optional[str]) -> None:
    """A summary found in the local cache gets its sidecar too, when sidecars are asked for."""
    if read_sidecar(fs, trace.path, trace.key, root) is not None:
        return
    entry = cache.get(trace.key)
    if entry is not None:
        write_sidecar(fs, trace.path, trace.key, entry)


def _build_timelines(fs, cache_dir, files, jobs: Optional[int], root: Optional[str]) -> Dict[str, str]:
    """Build the timeline index of every file (in worker processes) and wait for them, each for a bounded
    time; returns the one-line reason of each file whose index was not stored, by its shown path."""
    from tb_paddle_profile.timeline import INDEX_VERSION, TimelineStore

    failed: Dict[str, str] = {}
    problem = _write_problem(Path(cache_dir) / f"timeline-v{INDEX_VERSION}")
    if problem:  # built into a temporary folder it would be lost at exit: say so instead
        return {_shown(f): f"{f.file_name}: timeline index not built: {problem}" for f in files}
    store = TimelineStore(fs, cache_dir, workers=jobs or 2, root=root)
    try:
        now = time.monotonic()
        deadline = {f.key: now + TIMELINE_WAIT_S + TIMELINE_WAIT_S_PER_MB * f.size / (1 << 20) for f in files}
        pending = list(files)
        while pending:
            still = []
            for f in pending:
                idx, state = store.get(f)
                if idx is not None:
                    if not _index_stored(store, f, cache_dir):
                        failed[_shown(f)] = (f"{f.file_name}: timeline index built, but not stored in "
                                             f"{cache_dir}")
                elif state != "building":
                    failed[_shown(f)] = state
                elif time.monotonic() > deadline[f.key]:
                    failed[_shown(f)] = (f"{f.file_name}: timeline index not built within "
                                         f"{deadline[f.key] - now:.0f} s")
                else:
                    still.append(f)
            pending = still
            if pending:
                time.sleep(POLL_S)
    finally:
        store.close()
    return failed


def _index_stored(store, trace, cache_dir) -> bool:
    """Whether the index of `trace` is in the cache folder (not in a temporary folder of this process)."""
    path = getattr(store, "_path", None)
    if path is None:
        return True
    try:
        target = Path(path(trace))
        return target.is_file() and Path(cache_dir) in target.parents
    except Exception:
        return True
