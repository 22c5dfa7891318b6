"""Fill the summary cache ahead of time: ``tb-paddle-profile preprocess LOGDIR``.

Runs the same discovery and worker processes as the TensorBoard plugin, once, and waits for them, so
that TensorBoard started afterwards on the same logdir (and cache) parses nothing.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from tb_paddle_profile.cache import ENV_SIDECAR, SummaryCache, env_flag, read_sidecar, write_sidecar
from tb_paddle_profile.plugin.discovery import Discovery
from tb_paddle_profile.plugin.loader import FAILED, GROWING, READY, Loader


def preprocess(logdir: str, cache_dir: Optional[str] = None, sidecar: bool = False,
               jobs: Optional[int] = None, timeline: bool = False) -> List[Tuple[str, bool, str]]:
    """Summarize every trace under ``logdir`` into the cache; one ``(path, ok, message)`` per trace.

    ``cache_dir`` defaults to ``TB_PADDLE_PROFILE_CACHE`` or ``~/.cache/tb_paddle_profile``; ``sidecar``
    (or ``TB_PADDLE_PROFILE_SIDECAR=1``) also writes each summary next to its trace; ``jobs`` is the number
    of worker processes (default: the cores, at most 8); ``timeline`` also builds each trace's timeline
    index into the cache, so that the Timeline view opens without waiting for it.
    """
    cache = SummaryCache.from_env(cache_dir=cache_dir, sidecar=bool(sidecar) or env_flag(ENV_SIDECAR))
    discovery = Discovery(logdir, interval=None)
    loader = Loader(discovery.fs, cache, workers=jobs)
    discovery.subscribe(loader.update)
    try:
        snapshot = discovery.scan()
        if snapshot.error:
            raise OSError(f"cannot list {logdir}: {snapshot.error}")
        loader.wait_idle()
        results = []
        for trace, state in zip(snapshot.files, loader.states(snapshot.files)):
            shown = trace.source[len("file://"):] if trace.source.startswith("file://") else trace.source
            if state.state in (READY, FAILED) and cache.sidecar:
                _ensure_sidecar(discovery.fs, trace, cache)
            if state.state == READY:
                results.append((shown, True, "cached" if state.cached else "parsed"))
            elif state.state == GROWING:
                results.append((shown, False, f"still being written, try again later ({state.error})"))
            else:
                results.append((shown, False, state.error or "not loaded"))
        if timeline and cache.cache_dir is not None:
            ready = [t for t, st in zip(snapshot.files, loader.states(snapshot.files)) if st.state == READY]
            _build_timelines(discovery.fs, cache.cache_dir, ready, jobs)
        return results
    finally:
        discovery.stop()
        loader.close()


def _ensure_sidecar(fs, trace, cache: SummaryCache) -> None:
    """A summary found in the local cache gets its sidecar too, when sidecars are asked for."""
    if read_sidecar(fs, trace.path, trace.key) is not None:
        return
    entry = cache.get(trace.key)
    if entry is not None:
        write_sidecar(fs, trace.path, trace.key, entry)


def _build_timelines(fs, cache_dir, files, jobs: Optional[int]) -> None:
    """Build the timeline index of every file (in worker processes) and wait for them."""
    import time

    from tb_paddle_profile.timeline import TimelineStore

    store = TimelineStore(fs, cache_dir, workers=jobs or 2)
    try:
        pending = list(files)
        while pending:
            pending = [f for f in pending if store.get(f)[1] == "building"]
            if pending:
                time.sleep(0.2)
    finally:
        store.close()
