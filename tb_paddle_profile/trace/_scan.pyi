"""The types of the reader's C extension (trace/_scan.c, built by setup.py when a C compiler is there;
optional: the importers fall back to numpy and msgspec without it). For the type checker only."""

from typing import Any, Dict, Optional, Tuple

RECORD_SIZE: int  # sizeof(struct record): the native records' layout (reader/native.py checks it)

def scan(buffer: Any, start: int, stop: int) -> Optional[Tuple[int, Any, Any]]:
    """(count, strings, records) of the events in buffer[start:stop], or None: see reader._native_chunk_columns."""

def packed(buffer: Any, lens: Any, known: Any, zigzag: Any) -> Optional[Dict[int, Tuple[Any, Any]]]:
    """{field: (values, counts)} of the packed varint fields, or None: see crossrank.load.packed_columns."""
