"""How the plugin starts its worker processes (summaries, timeline indexes).

TensorBoard is multi-threaded, so its workers must not be plain forks of it. Where the platform
has it, a "forkserver" starts them: one single-threaded interpreter, started once, that imports
the engine (numpy, msgspec, protobuf, the analyses: about 0.2 s) and forks each worker from
itself with the engine already loaded. "spawn" (Windows, or when asked for) starts a fresh
interpreter per worker that imports it again. Either way a worker also imports the parent's main
module again (multiprocessing's rule; TensorBoard's costs about half a second per worker):
Python 3.11's forkserver ignores "__main__" in its preload list.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from typing import Callable, Optional

PRELOAD = ["tb_paddle_profile.engine"]
# "spawn" forces fresh interpreters (should a platform's forkserver misbehave).
ENV_START_METHOD = "TB_PADDLE_PROFILE_START_METHOD"


def process_context():
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
    if init is not None:
        init()


def process_pool(max_workers: int, init: Optional[Callable[[], None]] = None):
    """A process pool for the plugin: process_context()'s workers, each given this process's
    environment of now, then running init."""
    return concurrent.futures.ProcessPoolExecutor(max_workers=max_workers, mp_context=process_context(),
                                                  initializer=_start_worker, initargs=(dict(os.environ), init))
