"""How the plugin starts its worker processes (summaries, timeline indexes).

TensorBoard is multi-threaded, so its workers must not be plain forks of it. Where the platform
has it, a "forkserver" starts them: one single-threaded interpreter, started once, that imports
the engine (numpy, msgspec, protobuf, the analyses: about 0.2 s) and forks each worker from
itself with the engine already loaded. "spawn" (Windows, or when asked for) starts a fresh
interpreter per worker that imports it again. Either way a worker also imports the parent's main
module again (multiprocessing's rule; TensorBoard's costs about half a second per worker):
Python 3.11's forkserver ignores "__main__" in its preload list.

:class:`WorkerPool` runs one job at a time in each of its own processes, so that the parent always
knows which job is on which process: a process that dies (kill -9, the kernel's OOM killer) fails
only the job it was running; a job can be cancelled by ending its process; and shutting the pool
down ends every process at once, work in progress included, instead of waiting for it.
(``concurrent.futures.ProcessPoolExecutor`` can do none of these: one dead process breaks every
future of the pool, and a running job cannot be stopped.) Its processes talk to the parent over
one pipe each; there are no queues, locks or semaphores to leak.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import os
import signal
import threading
import time
import traceback
import weakref
from typing import Callable, List, Optional, Union

from tb_paddle_profile.core import settings
from tb_paddle_profile.core.worker_path import drop_current_folder

# worker_path first: the current folder leaves sys.path before anything imports the standard library's modules.
PRELOAD = ["tb_paddle_profile.core.worker_path", "tb_paddle_profile.analysis.summarize"]
# "spawn" forces fresh interpreters (should a platform's forkserver misbehave).
ENV_START_METHOD = settings.START_METHOD


def process_context() -> Union[multiprocessing.context.ForkServerContext, multiprocessing.context.SpawnContext]:
    """The multiprocessing context for the plugin's process pools."""
    wanted = os.environ.get(ENV_START_METHOD, "forkserver").strip() or "forkserver"
    if wanted == "forkserver" and "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)  # no effect once the server runs (it has them already)
        return ctx
    return multiprocessing.get_context("spawn")


def _start_worker(environ: dict, init: Optional[Callable[[], None]]) -> None:
    # A forkserver's children inherit the environment the server started with; a worker must see
    # the parent's as it is now (credentials of a remote logdir set after the server started...),
    # as a spawned one would.
    os.environ.clear()
    os.environ.update(environ)
    drop_current_folder()
    if init is not None:
        init()


def lower_priority() -> None:
    """A worker process's init: yield the CPU to TensorBoard's request threads (nice 5, as the loader's)."""
    try:
        os.nice(5)
    except (AttributeError, OSError):
        pass


def process_pool(max_workers: int, init: Optional[Callable[[], None]] = None):
    """A process pool for the plugin: process_context()'s workers, each given this process's
    environment of now, then running init."""
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=max_workers,
        mp_context=process_context(),
        initializer=_start_worker,
        initargs=(dict(os.environ), init),
    )


# ------------------------------------------------------------------ a pool that knows its processes


class WorkerStartError(Exception):
    """A worker process could not be started (no memory, process limit, broken forkserver...)."""


class WorkerLost(Exception):
    """The process given a job ended before it started it: not the job's fault."""


class WorkerDied(Exception):
    """The process running a job ended before answering (killed by a signal, the OOM killer...)."""

    def __init__(self, pid: int, exitcode: Optional[int]):
        self.pid = pid
        self.exitcode = exitcode
        super().__init__(f"worker process {pid} {describe_exit(exitcode)}")


class JobCancelled(Exception):
    """The job was cancelled, or its pool shut down, before it answered."""


class JobError(Exception):
    """The job raised: the exception's type name, its message and the worker's formatted traceback."""

    def __init__(self, type_name: str, message: str, traceback_text: str):
        self.type_name = type_name
        self.message = message
        self.traceback_text = traceback_text
        super().__init__(f"{type_name}: {message}" if message else type_name)


def describe_exit(exitcode: Optional[int]) -> str:
    """How a process ended, in words ("was killed by SIGKILL", "exited with status 1")."""
    if exitcode is None:
        return "ended"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with status {exitcode}"


def _serve(conn, environ: dict, init: Optional[Callable[[], None]]) -> None:
    """A worker process: run the jobs sent on ``conn``, one at a time, until it is closed."""
    _start_worker(environ, init)
    pid = os.getpid()
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        except Exception as err:  # a job that cannot be unpickled here: report it as the job's error
            conn.send(("started", pid))
            conn.send(("error", type(err).__name__, " ".join(str(err).split()), traceback.format_exc()))
            continue
        if message is None:
            return
        fn, args = message
        conn.send(("started", pid))
        reply: tuple
        try:
            reply = ("ok", fn(*args))
        except Exception as err:
            reply = ("error", type(err).__name__, " ".join(str(err).split()), traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as err:  # a result that cannot be pickled
            conn.send(
                ("error", type(err).__name__, f"the job's result could not be sent back: {err}", traceback.format_exc())
            )


class Job:
    """One submitted call: ``future`` gets its result or one of this module's exceptions; ``pid`` is the
    process running it once that process has started it."""

    def __init__(self):
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self.pid: Optional[int] = None
        self.started = threading.Event()
        self._worker: Optional["_Worker"] = None
        self._cancelled = False


class _Worker:
    __slots__ = ("process", "conn", "pid", "job", "idle_since")

    def __init__(self, process, conn):
        self.process = process
        self.conn = conn
        self.pid = process.pid
        self.job: Optional[Job] = None
        self.idle_since = time.monotonic()


_POOLS: "weakref.WeakSet[WorkerPool]" = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    # A pool left open must not keep the interpreter from exiting (multiprocessing joins its
    # non-daemonic children at exit; ours may be in the middle of a long parse).
    for pool in list(_POOLS):
        pool.shutdown()


class WorkerPool:
    """Up to ``max_workers`` processes (process_context()'s, each given this process's environment of
    when it starts, then running ``init``), each running one job at a time; see the module's docstring.

    The processes are not daemonic (a job may start processes of its own), and are ended by
    :meth:`shutdown` or at interpreter exit."""

    def __init__(self, max_workers: int, init: Optional[Callable[[], None]] = None):
        self.max_workers = max(1, int(max_workers))
        self._init = init
        self._ctx: Optional[Union[multiprocessing.context.ForkServerContext, multiprocessing.context.SpawnContext]] = (
            None
        )
        self._lock = threading.Lock()
        self._workers: List[_Worker] = []
        self._closed = False
        _POOLS.add(self)

    # ---------------------------------------------------------------- public
    def pids(self) -> List[int]:
        """The process ids of the pool's processes (busy or idle)."""
        with self._lock:
            return [w.pid for w in self._workers]

    def submit(self, fn: Callable, *args) -> Job:
        """Run ``fn(*args)`` (both picklable) in an idle process, starting one if none is idle.

        Raises WorkerStartError when no process could be started, RuntimeError when the pool is shut
        down or all its processes are busy."""
        job = Job()
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            for attempt in range(2):
                idle = self._idle_worker()
                if idle is None and len(self._workers) >= self.max_workers:
                    raise RuntimeError(f"all {self.max_workers} worker processes are busy")
                worker = idle if idle is not None else self._start()
                worker.job, job._worker = job, worker
                try:
                    worker.conn.send((fn, args))
                    break
                except OSError:  # it died while idle: another one takes the job
                    self._drop(worker)
                    if attempt:
                        raise WorkerStartError("a worker process ended as soon as it was given a job") from None
                except BaseException:  # the job could not be pickled: the process stays idle
                    worker.job, job._worker = None, None
                    raise
            try:
                threading.Thread(
                    target=self._watch, args=(worker, job), daemon=True, name=f"tb-paddle-profile-job-{worker.pid}"
                ).start()
            except RuntimeError as err:
                self._drop(worker)
                raise WorkerStartError(f"cannot start a thread to watch the worker: {err}") from None
        return job

    def cancel(self, job: Job) -> bool:
        """End the process running ``job`` now (its future gets JobCancelled). False if it was done."""
        with self._lock:
            worker = job._worker
            if worker is None or worker.job is not job or job.future.done():
                return False
            job._cancelled = True
            _kill(worker.process)
            return True

    def shutdown(self) -> None:
        """End every process now, jobs in progress included (their futures get JobCancelled), and reap them."""
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, []
            for w in workers:
                if w.job is not None:
                    w.job._cancelled = True
                _kill(w.process)
        for w in workers:
            _end(w, close=w.job is None)  # a busy worker's pipe is closed by its watcher

    # -------------------------------------------------------------- internal
    def _idle_worker(self) -> Optional[_Worker]:
        for w in self._workers:
            if w.job is None:
                if w.process.is_alive():
                    return w
                self._drop(w)
                return self._idle_worker()
        return None

    def _drop(self, worker: _Worker) -> None:
        if worker in self._workers:
            self._workers.remove(worker)
        _end(worker)

    def _start(self) -> _Worker:
        try:
            if self._ctx is None:
                self._ctx = process_context()
            parent, child = self._ctx.Pipe(duplex=True)
        except Exception as err:
            raise WorkerStartError(f"cannot start a worker process: {_one_line(err)}") from None
        try:
            process = self._ctx.Process(
                target=_serve, args=(child, dict(os.environ), self._init), name="tb-paddle-profile-worker", daemon=False
            )
            process.start()
        except Exception as err:
            parent.close()
            raise WorkerStartError(f"cannot start a worker process: {_one_line(err)}") from None
        finally:
            child.close()
        worker = _Worker(process, parent)
        self._workers.append(worker)
        return worker

    def _watch(self, worker: _Worker, job: Job) -> None:
        reply = None
        try:
            while reply is None:
                ready = multiprocessing.connection.wait([worker.conn, worker.process.sentinel])
                if worker.conn not in ready and not worker.conn.poll(0):
                    break  # the process ended without a word more
                try:
                    message = worker.conn.recv()
                except (EOFError, OSError):
                    break
                if message[0] == "started":
                    job.pid = message[1]
                    job.started.set()
                else:
                    reply = message
        except Exception:  # the pipe closed under us (shutdown): the process is gone
            reply = None
        with self._lock:
            alive = reply is not None and not job._cancelled and worker in self._workers
            if alive:
                worker.job = None
                worker.idle_since = time.monotonic()
            elif worker in self._workers:
                self._workers.remove(worker)
        if not alive:
            _end(worker)
        fut = job.future
        if job._cancelled:
            fut.set_exception(JobCancelled("cancelled"))
        elif reply is not None and reply[0] == "ok":
            fut.set_result(reply[1])
        elif reply is not None:
            fut.set_exception(JobError(reply[1], reply[2], reply[3]))
        elif not job.started.is_set():
            fut.set_exception(
                WorkerLost(
                    f"worker process {worker.pid} {describe_exit(worker.process.exitcode)} before starting its job"
                )
            )
        else:
            fut.set_exception(WorkerDied(worker.pid, worker.process.exitcode))


def _kill(process) -> None:
    try:
        if process.exitcode is None:
            process.kill()
    except (OSError, ValueError, AttributeError):
        pass


def _end(worker: _Worker, close: bool = True) -> None:
    """Kill (if still running), reap and close one worker; idempotent."""
    _kill(worker.process)
    try:
        worker.process.join(10)
    except (OSError, ValueError, AssertionError):
        pass
    if close:
        try:
            worker.conn.close()
        except OSError:
            pass


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__
