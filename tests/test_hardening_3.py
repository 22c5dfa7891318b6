"""Hardening, second round, what the first pass left (issue 29): each attack reproduced against the fix that
holds it. CSV records that stayed several lines (an LF in a name), `export` inflating a .gz whole, the
bound not divided among a Dask worker's threads or the timeline store's own builds, names with control
characters written raw into TensorBoard's log, and a rank selection too long for a request's parameter."""
from __future__ import annotations

import csv
import io
import re

from conftest import REPO

EXAMPLE2 = sorted((REPO / "examples" / "profiler_log" / "gpt-2rank").glob("*.paddle_trace.json"))
# An operator name and a worker name that set the window title, clear the screen and forge a line.
EVIL = "\x1b]0;pwned\x07\x1b[2J\r0 failed; all good\nOK\x9b"
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _cli(capsys, *argv):
    from tb_paddle_profile.cli.commands import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _evil_run(root):
    """gpt-2rank with EVIL in some operator names and in each worker's name."""
    import json

    root.mkdir(parents=True)
    for f in EXAMPLE2:
        text = f.read_text()
        assert text.count('"name": "matmul') >= 3
        text = text.replace('"name": "matmul', '"name": ' + json.dumps("=" + EVIL)[:-1] + "matmul", 3)
        head, tail = f.name.split("_time_")
        (root / f"{head}{EVIL}_time_{tail}").write_text(text)
    return root


def _one_line_per_record(text: str) -> list:
    assert not _CONTROL.findall(text), sorted(set(_CONTROL.findall(text)))
    lines = [line for line in text.splitlines() if line and not line.startswith("# ")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    assert len(rows) == len(lines), "a record over several lines"
    return rows


def test_csv_is_one_line_per_record(capsys, tmp_path):
    """An LF in an operator's or a worker's name was written inside its quoted cell: the record took two
    lines on the terminal (and in grep, wc -l, a line-by-line reader), the second one starting 'OK'."""
    run = _evil_run(tmp_path / "run")
    rc, out, err = _cli(capsys, "summary", "--no-cache", "--format", "csv", "--table", "operators",
                        str(sorted(run.iterdir())[0]))
    assert rc == 0, err
    rows = _one_line_per_record(out)
    names = [c for row in rows for c in row if "matmul" in c and "pwned" in c]
    assert names and all(c.startswith("'=\\x1b]0;pwned\\x07\\x1b[2J\\r0 failed; all good\\nOK\\x9b") for c in names)
    rc, out, err = _cli(capsys, "parallel", "--no-cache", "--format", "csv", str(run))
    assert rc == 0, err
    rows = _one_line_per_record(out)
    assert sum("\\nOK\\x9b_time_" in c for row in rows for c in row) >= 2  # the worker names, escaped


def test_export_inflates_within_the_bound(capsys, tmp_path):
    """`export` read each rank again with gzip.open and json.load: whole, whatever it inflated to. A rank
    swapped for a gzip bomb of the same size and time (the cache still names it a good trace) took the
    memory of all it inflated to; it now fails with the reader's one-line refusal, its bound held."""
    import gzip
    import os
    import tracemalloc
    import zlib

    run = tmp_path / "run"
    run.mkdir()
    for f in EXAMPLE2:
        (run / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
    cache = tmp_path / "cache"
    rc, out, err = _cli(capsys, "preprocess", "--cache-dir", str(cache), str(run))
    assert rc == 0, err
    victim = sorted(run.iterdir())[1]
    st = victim.stat()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = b'{"displayTimeUnit": "ms", "schemaVersion": "1.0.2", "span_index": "0", "traceEvents": ['
    bomb = c.compress(head) + c.compress(b" " * (st.st_size * 900)) + c.flush()
    assert len(bomb) <= st.st_size  # ~1000:1, padded with zeros to the same size (read as gzip padding)
    victim.write_bytes(bomb + b"\0" * (st.st_size - len(bomb)))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    tracemalloc.start()
    try:
        rc, out, err = _cli(capsys, "export", str(run), "-o", str(tmp_path / "merged.json"), "--cache-dir", str(cache))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 2, (out, err)
    assert err.strip().splitlines() == [f"error: {victim.name}: inflates more than 200 x its size (a gzip bomb? "
                                        f"real traces compress 10-15 x; gunzip it to read it)"], err
    assert st.st_size * 900 > 96 << 20  # what it inflates to: past the bound
    assert peak < 90 << 20, peak  # the bound (64 MB at this size), not the bomb (twice its size before)
