"""Paddle Chrome-tracing JSON → columnar event tables.

The events array is read in chunks of a few MB, each by the native scanner
(_scan.c: JSON → fixed records) or, where it declines, by a typed msgspec decode,
and sorted into four tables (host, runtime, device, memory) of numpy columns with
interned names. The reader knows the format, nothing of the analyses.

Format facts (docs/trace-format.md): host times come from
``args.start_time`` (µs, relative, float32 printed with 3 decimals) and ``dur``;
device and runtime events the same; memory events only carry an absolute ``ts``
in µs and belong to the nearest preceding host event of their thread in file
order. Paddle writes names without JSON escaping, so a name holding ``"`` or
``\\`` makes the file invalid JSON; such lines are repaired.

Hostile input is refused with a one-line TraceError: a .gz is inflated in bounded steps, once
(a gzip inside a gzip in the same pass, a third layer refused), and refused past MAX_GZIP_RATIO x
its size (beyond 64 MB) or past $TB_PADDLE_PROFILE_MAX_INFLATE_GB; nesting beyond the decoder's
limit, a traceEvents that is not an array, a negative duration, a time beyond ±4.6e15 µs and
integers that do not fit their columns are refused too. A UTF-8 byte order mark is read as blanks.
Byte offsets in messages count the file's (decompressed) bytes. Anything else raised while reading
is a bug of ours and is not turned into a TraceError.

The package, one module per concern, in the order a read goes through them (every name below can be
imported from ``tb_paddle_profile.trace.reader``):

- ``read``: ``read_trace``, the one entry: the file prepared, its head decoded, the events read, the
  lines repaired once when they do not decode;
- ``inflate``: a .gz inflated in bounded steps and refused past its bounds (``json_bytes``: a file's
  JSON bytes, ``max_inflate_bytes``, ``inflated_size`` for memory planning, ``GZIP_MAGIC``...), a byte
  order mark blanked;
- ``schema``: the typed form of the document for msgspec (``Trace``, ``Event``, ``Args``, ``DeviceProp``);
- ``document``: the head's decode (the fast cut of Paddle's layout, else the whole document), ``decode``,
  ``peek_span``, msgspec's errors located in the file's bytes;
- ``repair``: names written without JSON escaping re-escaped, and offsets in the repaired copy told as
  the file's;
- ``chunks``: the events cut into chunks of about ``CHUNK_BYTES``, each read into one part of columns
  (threads run the native scanner over several at once);
- ``native``: the compiled scanner (``tb_paddle_profile.trace._scan``, switched off by
  TB_PADDLE_PROFILE_NATIVE=0: ``USE_NATIVE``) and its records → a chunk's raw columns;
- ``columns``: the column builder (raw columns → the reader's, names renumbered, times in ns, values
  checked) and the raw columns of msgspec's structs;
- ``parallel``: without the scanner, a large file's chunks read by forked processes (``parse_workers``,
  ``PARALLEL_MIN_BYTES``);
- ``assemble``: the parts joined and made into the tables;
- ``tables``: ``EventTables`` and its four tables (``HostTable``, ``RuntimeTable``, ``DeviceTable``,
  ``MemoryTable``).

A name is looked up in the module that uses it, so a test changes it there: the settings
``reader.chunks.CHUNK_BYTES``, ``reader.native.USE_NATIVE``, ``reader.parallel.PARALLEL_MIN_BYTES`` and
``reader.inflate.physical_memory`` (left out of this namespace, so that monkeypatching them here fails
instead of changing nothing); ``_repair`` in ``reader.read`` and ``reader.document``, ``_chunk_ranges``
in ``reader.read`` and ``reader.parallel``, ``_concat`` in ``reader.read``.
"""

from __future__ import annotations

from .assemble import _concat
from .chunks import _chunk_ranges, _event_bounds
from .columns import _Interner
from .document import NESTED_TOO_DEEP, decode, peek_span
from .inflate import (
    DEFAULT_MAX_INFLATE_GB,
    DEFLATE_MAX_RATIO,
    GZIP_MAGIC,
    MAX_GZIP_LAYERS,
    MAX_GZIP_RATIO,
    MAX_INFLATE_ENV,
    RATIO_FREE_BYTES,
    _inflate_bound,
    _layers,
    _TooBig,
    inflated_size,
    json_bytes,
    max_inflate_bytes,
)
from .native import _native_chunk_columns, native_scanner
from .parallel import MAX_PARSE_WORKERS, _parallel_tabulate, parse_workers
from .read import read_trace
from .schema import Args, DeviceProp, Event, Trace
from .tables import DeviceTable, EventTables, HostTable, MemoryTable, RuntimeTable

__all__ = [
    "read_trace",
    "DEFAULT_MAX_INFLATE_GB",
    "DEFLATE_MAX_RATIO",
    "GZIP_MAGIC",
    "MAX_GZIP_LAYERS",
    "MAX_GZIP_RATIO",
    "MAX_INFLATE_ENV",
    "RATIO_FREE_BYTES",
    "_inflate_bound",
    "_layers",
    "_TooBig",
    "inflated_size",
    "json_bytes",
    "max_inflate_bytes",
    "Args",
    "DeviceProp",
    "Event",
    "Trace",
    "NESTED_TOO_DEEP",
    "decode",
    "peek_span",
    "_chunk_ranges",
    "_event_bounds",
    "_native_chunk_columns",
    "native_scanner",
    "_Interner",
    "MAX_PARSE_WORKERS",
    "_parallel_tabulate",
    "parse_workers",
    "_concat",
    "DeviceTable",
    "EventTables",
    "HostTable",
    "MemoryTable",
    "RuntimeTable",
]
