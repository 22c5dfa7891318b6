"""The one error type for input that is not a usable Paddle trace."""


class TraceError(Exception):
    """A trace file could not be read. ``str(err)`` is one line naming the file and the reason."""

    def __init__(self, file_name: str, reason: str):
        self.file_name = file_name
        self.reason = " ".join(str(reason).split())
        super().__init__(f"{file_name}: {self.reason}")
