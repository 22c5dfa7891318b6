"""A command's answer in its `--format`: proto3 JSON, the Display's tables as CSV (`--format csv` on stdout,
`--csv-dir` one file per table), or its text."""

from __future__ import annotations

import os
import sys
from typing import Callable, Optional

from tb_paddle_profile.core import terminal
from tb_paddle_profile.core.protojson import to_json_bytes, value_json_bytes


def json_text(message) -> str:
    """The proto3 JSON a command prints: DEL and C1 in names as ``\\u`` escapes (terminal.visible_json), so
    that the SafeStream it goes through has nothing to show and the text stays JSON."""
    return terminal.visible_json(to_json_bytes(message)).decode("utf-8")


def print_json(message=None, value=None) -> None:
    """json_text(message) (or the JSON of to_value's ``value``) on stdout as bytes, past the SafeStream: it
    holds no control character but its newlines (the encoder escapes C0 in strings, visible_json DEL and
    C1), and looking again, decoding and encoding cost passes over tens of MB at thousands of ranks."""
    data = terminal.visible_json(to_json_bytes(message) if value is None else value_json_bytes(value)) + b"\n"
    stream = terminal.raw(sys.stdout)
    if getattr(stream, "buffer", None) is None:
        stream.write(data.decode("utf-8"))
        return
    stream.flush()
    stream.buffer.write(data)
    stream.buffer.flush()


def emit_answer(args, message, source: str, text: Callable[[], str]) -> bool:
    """``message`` (a RunWhatIf, a RunDiff: one with a ``display``) as ``--format`` asks: its proto3 JSON,
    its Display's tables as CSV (emit_csv) or ``text()``. False when the CSV could not be given."""
    if args.format == "json":
        print_json(message)
    elif args.format == "csv":
        if not emit_csv(args, message.display, source):
            return False
    else:
        print(text(), end="")
    return True


def emit_csv(args, display, source: str) -> bool:
    """`--format csv` of a command: into ``--csv-dir`` (one file per table) or on stdout (print_csv)."""
    if getattr(args, "csv_dir", None):
        return write_csv_dir(display, args.csv_dir, source, table_key=args.table)
    return print_csv(display, args.table, source)


def print_csv(display, table_key, source: str) -> bool:
    """`--format csv`: `table_key` ("KEY" or "VIEW/KEY") prints that one table as plain CSV (a header
    line, then the rows: what ``pandas.read_csv`` reads as it is); without it every table of the
    Display's views (raw values, display/export.py), each under a line "# <view>/<table key>: <title>"
    and followed by a blank line (for reading; --csv-dir writes them as one plain file each). False (and
    a one-line error naming `source`) when no table has the key."""
    out = csv_text(display, table_key, source)
    if out is None:
        return False
    print(out, end="")
    return True


def _csv_tables(display, table_key, source: str, views=None):
    """[(view key, table)] of a Display (one with ``table_key``); None (and a one-line error naming
    ``source``) when no table has the key."""
    tables = [(v.key, t) for v in display.views for t in v.tables if not views or t.paddle_view in views]
    if table_key:
        chosen = [(v, t) for v, t in tables if table_key in (t.key, f"{v}/{t.key}")]
        if not chosen:
            keys = ", ".join(f"{v}/{t.key}" for v, t in tables)
            print(f"error: {source}: no table {table_key!r} (tables: {keys})", file=sys.stderr)
            return None
        tables = chosen[:1]
    return tables


def csv_text(display, table_key, source: str, views=None) -> Optional[str]:
    """The text of print_csv; ``views`` (Paddle's view names, `summary --views`) keeps only Paddle's tables
    of those views. None (and a one-line error naming ``source``) when no table has ``table_key``."""
    from tb_paddle_profile.present.display.export import to_csv

    tables = _csv_tables(display, table_key, source, views)
    if tables is None:
        return None
    if table_key:
        return to_csv(tables[0][1])
    return "".join(f"# {v}/{t.key}: {t.title}\n{to_csv(t)}\n" for v, t in tables)


def table_text(display, table_key: str, source: str, time_unit: str, views=None) -> Optional[str]:
    """`summary --format text --table KEY`: that one table of the display model laid out as text (the parallel
    view's plain layout, in parts when wider than the terminal's 120 columns); None (and a one-line error
    naming ``source``) when no table has ``table_key``."""
    from tb_paddle_profile.present.render.parallel_text import table_lines

    tables = _csv_tables(display, table_key, source, views)
    if tables is None:
        return None
    return "\n".join(table_lines(tables[0][1], time_unit))


def write_csv_dir(display, folder: str, source: str, views=None, table_key=None) -> bool:
    """`--csv-dir DIR`: every table (or the one of ``table_key``) as ``DIR/<view>.<table key>.csv``, plain
    CSV each; the files written are listed on stderr. False (and one line) when nothing could be written."""
    from tb_paddle_profile.present.display.export import to_csv

    tables = _csv_tables(display, table_key, source, views)
    if tables is None:
        return False
    try:
        os.makedirs(folder, exist_ok=True)
        for v, t in tables:
            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{v}.{t.key}") + ".csv"
            with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as out:
                out.write(to_csv(t))
    except OSError as exc:
        print(f"error: {folder}: cannot write the CSV files: {exc.strerror or exc}", file=sys.stderr)
        return False
    print(f"{len(tables)} table(s) of {source} written to {folder}", file=sys.stderr)
    return True
