"""Fill the summary cache ahead of time: ``tb-paddle-profile preprocess LOGDIR``.

Runs the same discovery, loader and per-file job (jobs.run_job: one parse gives the summary, the rank
digest and the timeline index) as the TensorBoard plugin, once, and waits for them, so that TensorBoard
started afterwards on the same logdir (and cache) parses nothing.

A trace counts as done only when what was asked for is really stored: its summary in the cache folder
(or its sidecar), and its timeline index when timelines are asked for. A cache folder that cannot be
written is reported per trace (with the reason) instead of being filled silently in memory, and the
timeline indexes are then reported as not stored. With the cache off (sidecars only) there is no
place for timeline indexes: none is built, and a trace whose sidecar holds its summary is done.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tb_paddle_profile.core.progress import follow
from tb_paddle_profile.store.cache import ENV_SIDECAR, SummaryCache, env_flag, read_sidecar, write_sidecar
from tb_paddle_profile.store.cache_store import open_cache
from tb_paddle_profile.pipeline.discovery import Discovery
from tb_paddle_profile.pipeline.loader import FAILED, GROWING, LOADING, QUEUED, READY, Loader

# The longest wait for one trace's timeline index: TIMELINE_WAIT_S, plus TIMELINE_WAIT_S_PER_MB per MB.
TIMELINE_WAIT_S = 600.0
TIMELINE_WAIT_S_PER_MB = 2.0


def preprocess(
    logdir: str,
    cache_dir: Optional[str] = None,
    sidecar: bool = False,
    jobs: Optional[int] = None,
    timeline: bool = False,
    progress=None,
) -> List[Tuple[str, bool, str]]:
    """Summarize every trace under ``logdir`` into the cache; one ``(path, ok, message)`` per trace.

    ``cache_dir`` defaults to ``TB_PADDLE_PROFILE_CACHE`` or ``~/.cache/tb_paddle_profile``; ``sidecar``
    (or ``TB_PADDLE_PROFILE_SIDECAR=1``) also writes each summary next to its trace; ``jobs`` is the number
    of worker processes (default: the cores, at most 8); ``timeline`` also builds each trace's timeline
    index into the cache, so that the Timeline view opens without waiting for it. ``ok`` is False, with
    the one-line reason, for a trace that is not usable and for one whose summary (or index) could not
    be stored. ``progress`` (a core.progress.Progress) is drawn while the traces load. Raises OSError
    when the logdir cannot be listed.
    """
    cache = open_cache(cache_dir=cache_dir, sidecar=bool(sidecar) or env_flag(ENV_SIDECAR))
    unkept = ""
    if timeline and cache.cache_dir is None and cache.sidecar:
        timeline, unkept = False, "; no timeline index: the cache is off (an index is only kept in a cache folder)"
    discovery = Discovery(logdir, interval=None)
    # The loader's jobs (jobs.run_job) make each trace's summary, digest and (with `timeline`) timeline
    # index from one parse, into the cache.
    loader = Loader(discovery.fs, cache, workers=jobs, root=discovery.root, index=timeline)
    discovery.subscribe(loader.update)
    try:
        snapshot = discovery.scan()
        if snapshot.error:
            raise OSError(f"cannot list {logdir}: {snapshot.error}")
        _wait(loader, snapshot.files, progress)
        results = []
        stored = []
        problem = None  # why the cache folder cannot be written, once asked
        for trace, state in zip(snapshot.files, loader.states(snapshot.files)):
            shown = _shown(trace)
            if state.state in (READY, FAILED) and cache.sidecar:
                _ensure_sidecar(discovery.fs, trace, cache, discovery.root)
            if state.state == READY:
                if _is_stored(discovery.fs, trace, cache, discovery.root):
                    results.append((shown, True, ("cached" if state.cached else "parsed") + unkept))
                    stored.append(trace)
                    continue
                if problem is None:
                    problem = _cache_problem(cache)
                results.append(
                    (shown, False, f"{trace.file_name}: summarized, but the summary could not be stored: {problem}")
                )
            elif state.state == GROWING:
                results.append((shown, False, f"still being written, try again later ({state.error})"))
            else:
                results.append((shown, False, state.error or f"{trace.file_name}: not loaded"))
        if timeline and stored:
            failed = _check_timelines(cache, loader, stored)
            results = [
                (shown, False, failed[shown]) if ok and shown in failed else (shown, ok, message)
                for shown, ok, message in results
            ]
        return results
    finally:
        discovery.stop()
        loader.close()


def _wait(loader: Loader, files, progress) -> None:
    if progress is None:
        loader.wait_idle()
    else:
        follow(loader, files, progress, (QUEUED, LOADING))


def _shown(trace) -> str:
    return trace.source[len("file://") :] if trace.source.startswith("file://") else trace.source


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


def _check_timelines(cache: SummaryCache, loader: Loader, files) -> Dict[str, str]:
    """The one-line reason of each file whose timeline index is not in the cache folder, by shown path.
    The job that made a summary made its index from the same parse; a summary found in the cache
    without its index (an older cache, or one filled with --no-timeline) has its job run again."""
    from tb_paddle_profile.timeline import INDEX_VERSION

    failed: Dict[str, str] = {}
    if cache.cache_dir is not None:
        wanted = [(f, loader.request_index(f)) for f in files if not cache.has_index(f.key)]
        for f, fut in wanted:
            try:
                fut.result(timeout=TIMELINE_WAIT_S + TIMELINE_WAIT_S_PER_MB * f.size / (1 << 20))
            except Exception:  # timed out: reported below as not stored
                pass
    for f in files:
        if cache.has_index(f.key):
            continue
        problem = ""
        if cache.cache_dir is not None:
            problem = _write_problem(Path(cache.cache_dir) / f"timeline-v{INDEX_VERSION}" / f.key.digest()[:2])
        else:
            problem = "the cache is off: an index is only kept in a cache folder"
        failed[_shown(f)] = f"{f.file_name}: timeline index not built: {problem or 'not stored in the cache'}"
    return failed
