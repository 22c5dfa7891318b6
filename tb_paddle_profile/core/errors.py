"""The error types, by whose fault a failure is.

- :class:`TraceError`: the input is not a usable Paddle trace (truncated, corrupt, foreign, hostile).
  One line naming the file and the reason; a loader may cache it as the file's permanent result.
- :class:`TransientError`: the file could not be reached right now (a store briefly unreachable, a
  cache folder not writable, a worker process that died). Worth retrying with a limit; never cached.
- Any other exception escaping the engine is a bug of ours. :func:`our_bug` words it as such: it is
  logged with its traceback and never cached or shown as the file's fault.
"""

from __future__ import annotations

from tb_paddle_profile.core.version import __version__


class TraceError(Exception):
    """A trace file could not be read. ``str(err)`` is one line naming the file and the reason."""

    def __init__(self, file_name: str, reason: str):
        self.file_name = file_name
        self.reason = " ".join(str(reason).split())
        super().__init__(f"{file_name}: {self.reason}")


class TransientError(Exception):
    """A failure that may go away by itself (I/O to a store, resources); one line, like TraceError."""

    def __init__(self, file_name: str, reason: str):
        self.file_name = file_name
        self.reason = " ".join(str(reason).split())
        super().__init__(f"{file_name}: {self.reason}")


def our_bug(file_name: str, exc: BaseException, not_fault_of: str = "this file", report: str = "") -> str:
    """The one line that reports an exception of our own code while handling `file_name` (or a route)."""
    what = " ".join(str(exc).split())[:300]
    detail = f"{type(exc).__name__}: {what}" if what else type(exc).__name__
    return (
        f"{file_name}: internal error in tb_paddle_profile {__version__} (a bug in the tool, not a "
        f"fault of {not_fault_of}; please report it{report}): {detail}"
    )
