"""``tb-paddle-profile preprocess LOGDIR --dask ADDRESS``: the per-file job (:func:`jobs.run_job`) mapped
over the workers of a Dask distributed cluster, into a cache that several machines share.

``ADDRESS`` is a scheduler (``tcp://host:8786``) or ``local:N`` (a LocalCluster of N worker processes on
this machine, one thread each). ``LOGDIR`` is any fsspec URL or folder the workers can read; the cache is
``--cache-dir`` (an fsspec URL such as ``s3://bucket/prefix``, or a folder that is the same path on every
worker: a shared filesystem), else ``TB_PADDLE_PROFILE_CACHE``, else the default folder; with
``--sidecar`` each summary is also written next to its trace.

What runs where. The client (this process) lists the logdir once (discovery, as the plugin does),
reads which entries the cache already holds (one listing of the cache and a batched read of their
headers), and submits one task per missing file, largest first. A task, on a worker: looks again for the
entry (another machine may have written it meanwhile), takes the file's claim in the cache
(:mod:`cache_store`), parses the file once (``run_job``: Summary, RankDigest and, into a cache folder,
its timeline index), writes the digest and then the summary entry (at a URL: one PUT each; in a folder:
temporary file and rename), releases the claim, and returns a few hundred bytes of outcome. No summary
travels through the scheduler.

Faults. A worker process that dies (killed, out of memory) loses only the file it was parsing: the
scheduler gives that task to another worker; the claim, owned by this run, is taken over by the retry
at once (its attempt number counts the retries). After ``distributed.scheduler.allowed-failures`` deaths
of workers that ran it (3 by default; ALLOWED_FAILURES on a ``local:N`` cluster) the scheduler gives up
(KilledWorker) and the file is shown failed, not cached, like the plugin's workers. A file claimed by
another run still alive is not parsed here: it is looked at again every CLAIM_WAIT_S seconds until its
entry appears (counted as done elsewhere) or the claim lapses (then it is parsed here). A .gz is
inflated at most to the machine's memory bound divided among the cluster's task threads on one machine
(:func:`threads_per_host`), as the loader divides it among its workers.

Exit statuses as ``preprocess``: 0 all done, 2 a file was not a usable trace or could not be read or
stored, 3 our own code failed on a file. Progress goes to stderr every PROGRESS_S seconds.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, TextIO, Tuple, cast

from tb_paddle_profile.store.cache import (
    ENV_CACHE_DIR,
    ENV_SIDECAR,
    CacheKey,
    CachedResult,
    _DISABLED,
    default_cache_dir,
    env_flag,
    read_sidecar,
)
from tb_paddle_profile.store.trim import cache_limit_bytes, trim
from tb_paddle_profile.store.cache_store import CLAIM_TTL_S, CacheStore, is_url, new_owner
from tb_paddle_profile.pipeline.jobs import JobSpec
from tb_paddle_profile.core import terminal
from tb_paddle_profile.pipeline.dask_worker import FileTask, _one_line, process_file

logger = terminal.logger(__name__)

PROGRESS_S = 2.0  # a progress line at most this often (and one at the end)
CLAIM_WAIT_S = 2.0  # a file claimed by another run is looked at again this often
ALLOWED_FAILURES = 2  # on a local:N cluster: worker deaths while running one file before it is failed
LOCAL_PREFIX = "local:"


# ------------------------------------------------------------------ client side


@dataclass
class Report:
    """What a run did: one ``(shown path, ok, message)`` per trace, and counts."""

    results: List[Tuple[str, bool, str]] = field(default_factory=list)
    counts: Dict[str, int] = field(default_factory=dict)
    bugs: int = 0
    cache: str = ""
    workers: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return sum(1 for _, ok, _ in self.results if not ok)

    @property
    def status(self) -> int:
        return 3 if self.bugs else 2 if self.failed else 0


def _shown(trace) -> str:
    return trace.source[len("file://") :] if trace.source.startswith("file://") else trace.source


def cache_location(cache_dir: Optional[str]) -> Optional[str]:
    """The cache a run writes into: ``cache_dir``, else TB_PADDLE_PROFILE_CACHE, else the default folder;
    None when it is off."""
    location = (
        cache_dir if cache_dir is not None else (os.environ.get(ENV_CACHE_DIR, "").strip() or str(default_cache_dir()))
    )
    if str(location).strip().lower() in _DISABLED:
        return None
    return str(location).strip()


def connect(address: str):
    """(client, cluster or None) for a scheduler address or ``local:N``."""
    import dask
    from distributed import Client, LocalCluster

    if address.startswith(LOCAL_PREFIX):
        text = address[len(LOCAL_PREFIX) :].strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"--dask {address}: local:N needs a number of worker processes, e.g. local:4")
        with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
            cluster = LocalCluster(
                n_workers=int(text),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        return Client(cluster), cluster
    return Client(address, timeout=30), None


class _Progress:
    def __init__(self, out: Optional[TextIO], total: int):
        self.out = out
        self.total = total
        self.started = time.monotonic()
        self.last = -float("inf")
        self.shown: Optional[Tuple[int, tuple]] = None

    def show(self, counts: Dict[str, int], workers: int, final: bool = False) -> None:
        if self.out is None:
            return
        now = time.monotonic()
        done = sum(counts.get(k, 0) for k in ("parsed", "cached", "failed", "elsewhere"))
        state = (done, tuple(sorted(counts.items())))
        if not final and (now - self.last < PROGRESS_S or state == self.shown):
            return
        self.last, self.shown = now, state
        took = now - self.started
        rate = counts.get("parsed", 0) / took if took > 0 else 0.0
        parts = [
            f"{counts.get('parsed', 0)} parsed",
            f"{counts.get('cached', 0)} cached",
            f"{counts.get('failed', 0)} failed",
        ]
        if counts.get("elsewhere"):
            parts.append(f"{counts['elsewhere']} by another run")
        if counts.get("retried"):
            parts.append(f"{counts['retried']} retried after a worker died")
        if counts.get("waiting"):
            parts.append(f"{counts['waiting']} claimed by another run")
        left = ""
        if rate > 0 and done < self.total and not final:
            left = f", about {max(0.0, (self.total - done - counts.get('waiting', 0)) / rate):.0f} s left"
        print(
            f"preprocess: {done}/{self.total} traces ({', '.join(parts)}); {workers} workers, "
            f"{rate:.1f} parsed/s{left}",
            file=self.out,
            flush=True,
        )


def preprocess_dask(
    logdir: str,
    address: str,
    cache_dir: Optional[str] = None,
    sidecar: bool = False,
    timeline: bool = True,
    progress: Optional[TextIO] = sys.stderr,
    client=None,
    claim_ttl: float = CLAIM_TTL_S,
) -> Report:
    """Summarize every trace under ``logdir`` into the cache on the Dask cluster at ``address``.
    Raises OSError when the logdir cannot be listed, ValueError for a bad address or nothing to write
    into. ``client``: an existing distributed.Client (``address`` is then only shown)."""
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.pipeline.loader import growing_window_s

    started = time.monotonic()
    sidecar = bool(sidecar) or env_flag(ENV_SIDECAR)
    location = cache_location(cache_dir)
    if location is None and not sidecar:
        raise ValueError(
            "the cache is off (TB_PADDLE_PROFILE_CACHE) and no sidecars were asked for: nothing to write into"
        )
    at_url = location is not None and is_url(location)
    if location is not None and not at_url:  # the same folder on every worker: a shared filesystem
        location = os.path.abspath(os.path.expanduser(location))
    store = CacheStore(location) if location is not None else None
    need_index = bool(timeline) and store is not None and not at_url
    report = Report(cache=location or "sidecars")
    counts = report.counts
    for name in ("parsed", "cached", "failed", "elsewhere", "retried", "waiting"):
        counts[name] = 0

    discovery = Discovery(logdir, interval=None)
    try:
        snapshot = discovery.scan()
    finally:
        discovery.stop()
    if snapshot.error:
        raise OSError(f"cannot list {logdir}: {snapshot.error}")
    files = snapshot.files
    by_key = {f.key: f for f in files}
    final: Dict[CacheKey, Tuple[bool, str, str]] = {}  # key -> (ok, message, kind)

    def finish(key: CacheKey, ok: bool, message: str, kind: str) -> None:
        final[key] = (ok, message, kind)
        counts["failed" if not ok else "parsed" if kind in ("parsed", "sidecar") else kind] += 1
        if kind == "bug":
            report.bugs += 1

    todo = []
    for f in files:
        if f.refused:
            finish(f.key, False, f"{f.file_name}: {f.refused}", "refused")
        elif f.changed:
            finish(f.key, False, f"{f.file_name}: still being written, try again later", "growing")
        else:
            todo.append(f)
    # Check before submitting: entries already in the cache (or sidecars) are not sent to the cluster.
    present = _present(store, todo, discovery.fs, sidecar)
    for f in todo:
        hit = present.get(f.key)
        if hit is not None and not (need_index and store is not None and hit.ok and not store.has_index(f.key)):
            finish(f.key, hit.ok, "cached" if hit.ok else hit.error, "cached")
    todo = sorted((f for f in todo if f.key not in final), key=lambda f: -f.size)  # largest first

    owner = new_owner()
    window = growing_window_s()
    now = time.time()
    tasks = {
        f.key: FileTask(
            spec=JobSpec(
                path=f.path,
                file_name=f.file_name,
                key=f.key,
                fs=discovery.fs,
                cache_dir=None if (store is None or at_url) else location,
                sidecar=sidecar,
                root=f.root or discovery.root,
                index=need_index,
                recent=f.mtime is not None and now - f.mtime < window,
                parse_workers=1,
                return_data=at_url,
            ),
            store=store,
            write_entries=at_url,
            owner=owner,
            ttl=claim_ttl,
        )
        for f in todo
    }

    cluster = None
    bar = _Progress(progress, len(files))
    if todo:
        own_client = client is None
        if own_client:
            client, cluster = connect(address)
        try:
            info = client.scheduler_info(n_workers=-1).get("workers", {})
            report.workers = len(info)
            share = threads_per_host(info)
            tasks = {k: replace(t, spec=replace(t.spec, inflate_share=share)) for k, t in tasks.items()}
            _run_tasks(client, tasks, by_key, store, finish, counts, bar, report)
        finally:
            if own_client:
                client.close()
                if cluster is not None:
                    cluster.close()
    if store is not None and not at_url:  # a folder: kept within its bound, as the plugin keeps it
        try:
            trim(Path(cast(str, location)), cache_limit_bytes(), keep=[Path(store.entry_path(k)) for k in final])
        except OSError as err:
            logger.debug("tb_paddle_profile: cache trim skipped: %s", err)
    # Done means readable again: every entry this run reports is read back (header and length).
    parsed_keys = [k for k, (ok, _, kind) in final.items() if kind in ("parsed", "sidecar")]
    back = _present(store, [by_key[k] for k in parsed_keys], discovery.fs, sidecar)
    for k in parsed_keys:
        if k not in back:
            ok, message, kind = final[k]
            final[k] = (
                False,
                f"{by_key[k].file_name}: summarized, but its entry could not be read back from {report.cache}",
                "io",
            )
            counts["parsed"] -= 1
            counts["failed"] += 1
    bar.show(counts, report.workers, final=True)
    report.results = [(_shown(f), final[f.key][0], final[f.key][1]) for f in files]
    report.seconds = time.monotonic() - started
    return report


def threads_per_host(workers: dict) -> int:
    """The most task threads of the cluster on one machine (``workers``: scheduler_info's), at least 1:
    the parses that may run at once beside each other, among which a .gz's inflate bound divides the
    machine's memory (JobSpec.inflate_share), as the loader divides it among its workers."""
    hosts: Dict[str, int] = {}
    for address, w in workers.items():
        host = str(w.get("host") or address)
        hosts[host] = hosts.get(host, 0) + max(1, int(w.get("nthreads") or 1))
    return max(hosts.values(), default=1)


def _present(store: Optional[CacheStore], files, fs, sidecar: bool) -> Dict[CacheKey, CachedResult]:
    """The entries of ``files`` already stored: in the cache, else (sidecars only) next to the traces."""
    if not files:
        return {}
    if store is not None:
        try:
            return store.heads([f.key for f in files])
        except Exception as err:  # the cache unreachable now: every file goes to the cluster, which says why
            logger.warning("tb_paddle_profile: cannot list the cache %s: %s", store.url, _one_line(err))
            return {}
    if not sidecar:
        return {}
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda f: read_sidecar(fs, f.path, f.key, f.root or None), files))
    return {f.key: hit for f, hit in zip(files, found) if hit is not None}


def _run_tasks(client, tasks, by_key, store, finish, counts, bar, report) -> None:
    from distributed import wait
    from distributed.scheduler import KilledWorker

    futures = {}
    n = [0]

    def submit(key: CacheKey) -> None:
        n[0] += 1
        f = by_key[key]
        task = tasks[key]
        futures[
            client.submit(
                process_file,
                task,
                key=f"tbpp-{key.digest()[:16]}-{task.owner[-12:]}-{n[0]}",
                pure=False,
                retries=0,
                priority=f.size,
            )
        ] = key

    for key in tasks:
        submit(key)
    waiting: Dict[CacheKey, float] = {}  # claimed by another run: when to look for its entry again
    lapses: Dict[CacheKey, float] = {}  # ... and when its claim expires (epoch seconds), as last seen
    while futures or waiting:
        if futures:
            try:
                done, _ = wait(list(futures), timeout=min(PROGRESS_S, CLAIM_WAIT_S), return_when="FIRST_COMPLETED")
            except TimeoutError:  # nothing finished meanwhile (distributed's wait raises on its timeout)
                done = set()
        else:
            done = set()
            time.sleep(min(CLAIM_WAIT_S, max(0.05, min(waiting.values()) - time.monotonic())))
        for fut in done:
            key = futures.pop(fut)
            f = by_key[key]
            exc = fut.exception() if fut.status == "error" else None
            if exc is not None or fut.status == "cancelled":
                if isinstance(exc, KilledWorker):
                    message = (
                        f"{f.file_name}: the worker processes parsing it died ({_one_line(exc)}); "
                        "not retried further (out of memory?)"
                    )
                    kind = "crash"
                else:
                    message = f"{f.file_name}: the Dask task failed: {_one_line(exc) if exc else 'cancelled'}"
                    kind = "io"
                if store is not None:
                    store.release(key, tasks[key].owner)
                finish(key, False, message, kind)
                continue
            res = fut.result()
            kind = res["kind"]
            if res.get("attempt", 1) > 1:
                counts["retried"] += 1
            if kind == "claimed":
                if key not in waiting:
                    counts["waiting"] += 1
                waiting[key] = time.monotonic() + CLAIM_WAIT_S
                lapses[key] = float(res.get("expires") or 0)
                continue
            if kind == "bug":
                logger.error(
                    "tb_paddle_profile: %s\n%s", res["error"], terminal.Lines(res.get("traceback", "").rstrip())
                )
                finish(key, False, res["error"], "bug")
            elif kind in ("parsed", "sidecar", "cached"):
                if not res.get("stored"):
                    why = res.get("note") or "the cache entry could not be written"
                    finish(key, False, f"{f.file_name}: summarized, but not stored: {why}", "io")
                elif res["ok"]:
                    finish(key, True, kind, "cached" if kind == "cached" else kind)
                else:
                    finish(key, False, res["error"], "cached" if kind == "cached" else "parsed-failed")
            elif kind == "growing":
                finish(key, False, f"still being written, try again later ({res['error']})", kind)
            elif kind == "changed":
                finish(key, False, f"{f.file_name}: changed while it was read; try again later", kind)
            else:
                finish(key, False, res["error"] or f"{f.file_name}: not loaded ({kind})", kind)
        now = time.monotonic()
        for key in [k for k, t in waiting.items() if t <= now]:
            hit = store.head(key) if store is not None else None
            if hit is None and time.time() < lapses.get(key, 0):
                waiting[key] = now + CLAIM_WAIT_S  # still claimed, no entry yet: look again later
                continue
            del waiting[key]
            counts["waiting"] -= 1
            if hit is not None:
                finish(key, hit.ok, "summarized by another run" if hit.ok else hit.error, "elsewhere")
            else:
                submit(key)  # the claim lapsed (or was renewed: the task looks): parsed here if free
        bar.show(counts, report.workers)


def wants_dask(args) -> bool:
    """Whether ``preprocess`` goes through here: ``--dask`` given, or a cache at a URL (which only this
    runner fills; without ``--dask`` it says so)."""
    return bool(getattr(args, "dask", None)) or is_url(cache_location(args.cache_dir))


def cli_main(args) -> int:
    """``preprocess --dask``: run, print each failure and a summary line; the exit status."""
    if not getattr(args, "dask", None):
        print(
            f"error: the cache {cache_location(args.cache_dir)} is a URL: it is filled on a Dask cluster; add "
            "--dask local:N (N worker processes here) or --dask tcp://SCHEDULER:8786",
            file=sys.stderr,
        )
        return 2
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("error: --dask needs Dask distributed: pip install 'tb_paddle_profile[dask]'", file=sys.stderr)
        return 2
    try:
        report = preprocess_dask(
            args.logdir, args.dask, cache_dir=args.cache_dir, sidecar=args.sidecar, timeline=not args.no_timeline
        )
    except (OSError, ValueError) as exc:  # the logdir cannot be listed, a bad address, nothing to write into
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    for path, ok, message in report.results:
        if not ok:
            print(f"error: {message}", file=sys.stderr)
        elif args.verbose:
            print(f"{path}: {message}")
    c = report.counts
    extra = []
    if c.get("elsewhere"):
        extra.append(f"{c['elsewhere']} by another run")
    if c.get("retried"):
        extra.append(f"{c['retried']} retried after a worker died")
    parsed = (
        f"{c.get('parsed', 0)} parsed on {report.workers} Dask workers"
        if report.workers
        else "0 parsed (nothing sent to the cluster)"
    )
    print(
        f"{len(report.results) - report.failed} of {len(report.results)} traces summarized into "
        f"{report.cache} ({parsed}, {c.get('cached', 0)} already cached{''.join(', ' + e for e in extra)}) "
        f"in {report.seconds:.1f} s"
    )
    return report.status
