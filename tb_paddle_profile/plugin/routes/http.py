"""The HTTP plumbing of the plugin's routes: responses (gzip, nosniff, no-cache), the error answers of
``_handler`` (400/404 and the like from HttpError, 422 a file that is not a usable trace, 503 worth asking
again, 500 a bug of ours, logged with its traceback), and the request's parameters, each checked (one
value, bounded length, integers within their range) before any route uses it."""

from __future__ import annotations

import functools
import gzip
import re
import zlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import quote

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.core.errors import TraceError, TransientError, our_bug
from tb_paddle_profile.core.protojson import to_json_bytes
from tb_paddle_profile.core import terminal

logger = terminal.logger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_CTYPES = {"pb": PROTOBUF, "json": JSON}

_MAX_PARAM = 1024
# A list of workers (comma-separated names, each looked up among the run's): 16 ranks of ~80-character
# Kubernetes host names already pass 1,024; this cap holds some 700 such names (the request line's own
# limit, 64 KB in werkzeug's server, comes first beyond). The tab sends at most 32 (the timeline's
# MAX_RANKS): 32 names as long as a file name may be (255 bytes), percent-encoded, are under 25,000.
_MAX_LIST_PARAM = 60_000
_GZIP_MIN = 256
_CHUNK = 1 << 20
_COMPRESSIBLE = ("text/", "application/json", "application/javascript", PROTOBUF, "image/svg+xml", "application/wasm")


class HttpError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _shown(value: str) -> str:
    """A client value as it may appear in a message: quoted, escaped, short."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _accepts_gzip(request: Request) -> bool:
    return request.accept_encodings["gzip"] > 0


def _compressible(content_type: str) -> bool:
    return content_type.startswith(_COMPRESSIBLE)


def respond(
    request: Request,
    body: bytes,
    content_type: str,
    status: int = 200,
    headers: Optional[List[Tuple[str, str]]] = None,
    gzipped: Optional[bytes] = None,
) -> Response:
    """A response, gzip-encoded when the client accepts it (``gzipped``: the body already compressed)."""
    headers = list(headers or [])
    headers += [("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache, must-revalidate")]
    if _compressible(content_type):
        headers.append(("Vary", "Accept-Encoding"))
        if gzipped is not None or (_accepts_gzip(request) and len(body) >= _GZIP_MIN):
            body = gzipped if gzipped is not None else gzip.compress(body, compresslevel=3, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    return Response(body, status=status, headers=headers, content_type=content_type)


def respond_pieces(request: Request, pieces: Sequence[bytes], content_type: str, gzipped: bool = False) -> Response:
    """A response whose body is ``pieces`` sent one after another, never joined (the run list: one piece
    per run, shared by the answers); ``gzipped``: they are one gzip member already (gzparts)."""
    headers = [("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache, must-revalidate")]
    if _compressible(content_type):
        headers.append(("Vary", "Accept-Encoding"))
    if gzipped:
        headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(sum(map(len, pieces)))))
    return Response(list(pieces), headers=headers, content_type=content_type)


def _etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (weak or strong, or "*")."""
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def _text(request: Request, message: str, code: int, headers: Optional[List[Tuple[str, str]]] = None) -> Response:
    return respond(request, (message + "\n").encode("utf-8"), "text/plain; charset=utf-8", code, headers)


def internal_error(route: str, exc: BaseException) -> str:
    """The one line that answers a request which our own code failed (errors.our_bug's wording)."""
    return our_bug(route, exc, "your files", " with TensorBoard's log")


def _handler(fn: Callable[[Any, Request], Response]):
    """A route method as a WSGI app: GET and HEAD only; the errors answered as their kind says."""

    @functools.wraps(fn)
    def app(self, environ, start_response):
        request = Request(environ)
        try:
            if request.method not in ("GET", "HEAD"):
                raise HttpError(405, f"method {request.method} not allowed: use GET")
            response = fn(self, request)
        except HttpError as err:
            response = _text(request, err.message, err.code)
        except TraceError as err:  # a file that is not a usable trace
            response = _text(request, str(err), 422)
        except TransientError as err:  # worth asking again
            response = _text(request, str(err), 503, [("Retry-After", "5")])
        except Exception as exc:  # a bug of ours: said so, with its traceback in the log
            logger.exception("tb_paddle_profile: internal error answering %s", _shown(request.full_path))
            response = _text(request, internal_error(fn.__name__, exc), 500)
        return response(environ, start_response)

    return app


def _param(request: Request, name: str, required: bool = True, most: int = _MAX_PARAM, nul: bool = False) -> str:
    """The one value of a query parameter, at most `most` characters; a NUL refused unless `nul` (a
    search text: names may hold one)."""
    values = request.args.getlist(name)
    if not values:
        if required:
            raise HttpError(400, f"missing parameter '{name}'")
        return ""
    if len(values) > 1:
        raise HttpError(400, f"parameter '{name}' given more than once")
    value = values[0]
    if len(value) > most or ("\x00" in value and not nul):
        raise HttpError(400, f"invalid value for parameter '{name}'")
    return value


def _format(request: Request) -> str:
    value = _param(request, "format", required=False).lower()
    if value in ("", "pb", "proto", "protobuf", "binary"):
        return "pb"
    if value == "json":
        return "json"
    raise HttpError(400, f"unknown format {_shown(value)}: use 'json' or leave it out for protobuf")


_CSV = "text/csv; charset=utf-8"


def _sorted_by(request: Request) -> str:
    from tb_paddle_profile.present.display.summary_common import SORTED_KEYS

    value = _param(request, "sorted_by", required=False) or "CPUTotal"
    if value not in SORTED_KEYS:
        raise HttpError(400, f"unknown sorted_by {_shown(value)}: use one of {', '.join(SORTED_KEYS)}")
    return value


def _encode(message, fmt: str) -> bytes:
    """Serialized protobuf, or proto3 JSON (lowerCamelCase names, enums by name, 64-bit ints as strings,
    fields with default values included so that rank 0 or a 0 ns time is explicit, as in the CLI's JSON)."""
    if fmt == "json":
        return to_json_bytes(message, indent=None)
    return message.SerializeToString()


class _FileStream:
    """Iterates a store's file in chunks, optionally gzip-compressing; closed by the WSGI server."""

    def __init__(self, handle, length: int, compress: bool):
        self._handle = handle
        self._left = length
        self._deflate = zlib.compressobj(3, zlib.DEFLATED, 31) if compress else None

    def __iter__(self) -> Iterator[bytes]:
        while self._left > 0:
            chunk = self._handle.read(min(_CHUNK, self._left))
            if not chunk:
                break
            self._left -= len(chunk)
            if self._deflate is not None:
                chunk = self._deflate.compress(chunk)
            if chunk:
                yield chunk
        if self._deflate is not None:
            yield self._deflate.flush()
        self.close()

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()


def _download_name(file_name: str) -> str:
    safe = "".join(c if (c.isascii() and (c.isalnum() or c in "._-")) else "_" for c in file_name)
    return f"attachment; filename=\"{safe}\"; filename*=UTF-8''{quote(file_name, safe='')}"


_INT64 = (-(1 << 63), (1 << 63) - 1)
_TIME = (-(1 << 62), 1 << 62)  # ns (about 146 years either way): sums and differences of two stay in int64
_INT_RANGES = {
    "start_ns": _TIME,
    "end_ns": _TIME,
    "base_unix_ns": _TIME,
    "px": (1, 100_000),  # the width drawn, in pixels
    "id": (0, _INT64[1]),  # an event's index
    "limit": (1, 1_000_000),  # matches asked for (the route caps them further)
    "rank": (-1, 1 << 31),
    "step": (-(1 << 62), 1 << 62),
    "offset": (0, 1 << 40),
    "rank_offset": (0, 1 << 31),
    "rank_limit": (1, 1 << 31),
    "bins": (1, 100_000),
}
_DECIMAL = re.compile(r"-?[0-9]{1,20}")


def _int(request: Request, name: str) -> Optional[int]:
    """An optional integer parameter (None when absent): ASCII decimal digits, within the parameter's
    range (_INT_RANGES, else int64); 400 otherwise, so that no route meets an integer it cannot hold."""
    value = _param(request, name, required=False)
    if value == "":
        return None
    low, high = _INT_RANGES.get(name, _INT64)
    number = int(value) if _DECIMAL.fullmatch(value) else None
    if number is None or not low <= number <= high:
        raise HttpError(400, f"parameter '{name}' must be an integer from {low} to {high}, not {_shown(value)}")
    return number
