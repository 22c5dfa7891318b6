"""Imported first in every worker process (pool.PRELOAD): the current folder leaves its import path.

A forkserver is started as ``python -c ...``, which puts the current folder ("") first on
``sys.path``; a file there named like a standard module (``inspect.py``, ``random.py``) would then be
imported by numpy and the engine instead of the real one, and break every worker. The workers run
only the installed package's code, so they never need the current folder. A spawned worker gets the
parent's path (which a console script or TensorBoard does not start with the current folder).
"""

import sys


def drop_current_folder() -> None:
    """Remove "" (the current folder, as ``-c`` and ``-m`` add it) from ``sys.path``."""
    sys.path[:] = [p for p in sys.path if p != ""]


drop_current_folder()
