"""The ``trace`` route: a rank's raw trace file downloaded, opened under the path policy (403 for a file
it refuses), streamed in chunks, gzip-compressed on the way when the client accepts it."""

from __future__ import annotations

import os
from typing import Iterable, cast

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.core import paths
from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.pipeline.discovery import Discovery, TraceFile

from .analyses import AnalysisBase
from .http import JSON, HttpError, _accepts_gzip, _download_name, _FileStream, _handler


class TraceRoutes(AnalysisBase):
    """trace."""

    def _open(self, trace: TraceFile):
        """(handle, size) of a trace file, opened under the path policy; HttpError when it cannot be."""
        discovery = cast(Discovery, self.discovery)  # (a file was listed: there is a discovery)
        fs = discovery.fs
        try:
            # Checked again on the open file: a file swapped for a link since the scan is refused too.
            handle = paths.open_checked(fs, trace.path, trace.root or discovery.root, trace.file_name)
        except TraceError as err:
            raise HttpError(403, str(err)) from None
        except FileNotFoundError:
            raise HttpError(404, f"{trace.file_name}: the file no longer exists") from None
        except Exception as err:  # the store's own errors (permissions, network)
            raise HttpError(502, f"{trace.file_name}: cannot read: {' '.join(str(err).split())[:200]}") from None
        try:
            return handle, (os.fstat(handle.fileno()).st_size if paths.is_local(fs) else fs.size(trace.path))
        except Exception as err:
            handle.close()
            if isinstance(err, FileNotFoundError):
                raise HttpError(404, f"{trace.file_name}: the file no longer exists") from None
            raise HttpError(502, f"{trace.file_name}: cannot read: {' '.join(str(err).split())[:200]}") from None

    @_handler
    def trace(self, request: Request) -> Response:
        trace = self._file(request)  # 403 for a file the path policy refuses
        handle, size = self._open(trace)
        headers = [
            ("Content-Disposition", _download_name(trace.file_name)),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-cache, must-revalidate"),
        ]
        if trace.gzipped:
            ctype, compress = "application/gzip", False
        else:
            ctype, compress = JSON, _accepts_gzip(request)
            headers.append(("Vary", "Accept-Encoding"))
        if compress:
            headers.append(("Content-Encoding", "gzip"))
        else:
            headers.append(("Content-Length", str(size)))
        stream = _FileStream(handle, size, compress)
        body: Iterable[bytes] = stream
        if request.method == "HEAD":
            stream.close()
            body = []
        return Response(body, headers=headers, content_type=ctype, direct_passthrough=True)
