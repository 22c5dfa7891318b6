"""The cache's files on local disk: atomic writes a team can share, damaged entries deleted, and the
warnings about them logged once per process."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Optional

from tb_paddle_profile.core import settings
from tb_paddle_profile.core import terminal


# The cache's one logger, whichever of its modules writes.
logger = terminal.logger("tb_paddle_profile.store.cache")


def atomic_write(path: Path, data) -> None:
    """Write ``data`` (bytes, or an iterable of bytes-like chunks) to ``path`` so that readers see the old
    file or the new one, never a part: a temporary file in the same folder, then a rename. With
    TB_PADDLE_PROFILE_CACHE_FSYNC=1 the file and its folder are fsynced too (so that a power loss right
    after leaves the whole new file or the old one). Without it (the default) such a loss may leave an
    empty or cut file, which its length and checksum show as damaged: a miss, computed again. The
    fsyncs were 6 per trace and a third of the time of a small trace's job."""
    durable = settings.flag(settings.CACHE_FSYNC)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=path.parent)
    try:
        share_mode(fd)
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                for chunk in data:
                    f.write(chunk)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        _fsync_folder(path.parent)


def _umask() -> int:
    """This process's umask (from /proc where it is shown, else set and put back)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def share_mode(fd: int) -> None:
    """Give a file made by mkstemp (mode 0600) the mode a plain open would: 0666 less the umask, so a
    team sharing a cache folder (umask 002, a group folder) reads each other's entries."""
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    except (OSError, AttributeError):  # Windows, or a file system without modes
        pass


def _fsync_folder(folder: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows: folders cannot be opened; the rename is as durable as it gets
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_LOGGED: "set[str]" = set()
_LOGGED_LOCK = threading.Lock()


def log_once(key: str, level: int, message: str, *args) -> None:
    """Log ``message`` the first time ``key`` is seen in this process (bounded: 10,000 keys)."""
    with _LOGGED_LOCK:
        if key in _LOGGED:
            return
        if len(_LOGGED) > 10_000:
            _LOGGED.clear()
        _LOGGED.add(key)
    logger.log(level, message, *args)


def discard(path: Path, inode: Optional[int], reason: str, what: str = "cache entry") -> None:
    """Delete a damaged entry file of ours (only if it is still the file that was read), logged once."""
    try:
        st = os.stat(path)
        if inode is None or st.st_ino == inode:
            path.unlink()
            removed = "deleted; it will be built again"
        else:
            removed = "already replaced"
    except FileNotFoundError:
        removed = "already gone"
    except OSError as err:
        removed = f"could not be deleted ({err.strerror or err}); it is ignored"
    log_once(
        f"damaged:{path}:{inode}",
        logging.WARNING,
        "tb_paddle_profile: %s %s is damaged (%s): %s",
        what,
        path,
        reason,
        removed,
    )


def touch(path: Path) -> None:
    """Mark an entry as just used (its modification time is the LRU clock; atime is often off)."""
    try:
        os.utime(path)
    except OSError:
        pass
