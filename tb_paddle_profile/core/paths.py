"""Which files under a logdir may be read: the one policy for discovery, loading, the CLI and every route.

A logdir is often shared, and TensorBoard serves what it reads to anyone who can reach it, so a file is
read only when it is really inside the logdir and is a plain file:

- a symbolic link is followed only when its target (every link resolved) lies inside the logdir's own
  real location; a link that leaves it, or leads nowhere, is refused;
- only regular files are read: a FIFO, a device, a socket or a folder named like a trace is refused
  (a FIFO would block the reader forever, ``/dev/zero`` never ends);
- the check is made again on the open file itself (``fstat`` of the descriptor and, on Linux, the
  descriptor's own path), so a file swapped for a link between the listing and the read is caught.

Stores without links (S3, GCS, HDFS through fsspec) have nothing to resolve: their objects are read as
listed, and only names under the logdir's prefix are ever listed.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from typing import BinaryIO, Optional

from tb_paddle_profile.core.errors import TraceError

OUTSIDE = "a symbolic link that leads outside the logdir (links are followed only within it)"
DANGLING = "a symbolic link that leads to nothing"
LOOP = "a symbolic link that leads round in a loop"


def is_local(fs) -> bool:
    """True for fsspec's local filesystem, and for None (a caller without fsspec: the CLI)."""
    protocol = getattr(fs, "protocol", "file")
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return "file" in protocols or "local" in protocols


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def real_root(root: str) -> str:
    """The logdir's own real location (its links resolved), against which files are checked."""
    return os.path.realpath(root)


def refusal(fs, path: str, root: str) -> Optional[str]:
    """Why `path` (listed under the logdir `root`) must not be read, or None when it may be.

    `root` is the logdir as the store names it; for local stores its real location is compared."""
    if not is_local(fs):
        return None
    try:
        st = os.stat(path)  # follows links
    except FileNotFoundError:
        return DANGLING if os.path.islink(path) else None  # a file gone since the listing: the reader says so
    except OSError as err:
        if err.errno == errno.ELOOP:
            return LOOP
        return f"cannot be inspected: {err.strerror or err}"
    if not stat.S_ISREG(st.st_mode):
        return f"{_kind(st.st_mode)}, not a regular file: refused"
    if not _inside(os.path.realpath(path), real_root(root)):
        return OUTSIDE
    return None


def open_checked(fs, path: str, root: Optional[str], file_name: Optional[str] = None) -> BinaryIO:
    """Open `path` for reading under the policy above; TraceError (one line) when it is refused.

    `root` None means the path itself was named by the user (a CLI argument): links are followed,
    but a non-regular file is still refused. FileNotFoundError passes through unchanged."""
    name = file_name or posixpath.basename(path)
    if not is_local(fs):
        return fs.open(path, "rb")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO without a writer must not block
    except FileNotFoundError:
        if os.path.islink(path):
            raise TraceError(name, DANGLING) from None
        raise
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise TraceError(name, LOOP) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(name, f"{_kind(st.st_mode)}, not a regular file: refused")
        if root is not None:
            proc = f"/proc/self/fd/{fd}"
            real = os.readlink(proc) if os.path.islink(proc) else os.path.realpath(path)
            if not _inside(real, real_root(root)):
                raise TraceError(name, OUTSIDE)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_checked(fs, path: str, root: Optional[str], file_name: Optional[str] = None) -> bytes:
    """The whole content of `path`, opened by :func:`open_checked`."""
    if not is_local(fs):
        return fs.cat_file(path)
    with open_checked(fs, path, root, file_name) as handle:
        return handle.read()
