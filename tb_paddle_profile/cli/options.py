"""The command line's arguments shared by its commands: views, jobs, the cache, the output formats."""

from __future__ import annotations

import argparse

from tb_paddle_profile.present.render import text


VIEW_ALIASES = {
    "device": "DeviceView",
    "overview": "OverView",
    "model": "ModelView",
    "distributed": "DistributedView",
    "kernel": "KernelView",
    "operator": "OperatorView",
    "memory": "MemoryView",
    "memory_manipulation": "MemoryManipulationView",
    "udf": "UDFView",
}


def _view(name: str) -> str:
    if name in text.VIEWS:
        return name
    key = name.lower().replace("-", "_")
    for candidate in (key, key[:-4].rstrip("_") if key.endswith("view") else None):
        if candidate in VIEW_ALIASES:
            return VIEW_ALIASES[candidate]
    raise argparse.ArgumentTypeError(
        f"unknown view {name!r}; use one of {', '.join(text.VIEWS)} or {', '.join(VIEW_ALIASES)}"
    )


def _cache_args(p) -> None:
    p.add_argument(
        "--cache-dir",
        default=None,
        help="the cache the TensorBoard plugin reads (default: $TB_PADDLE_PROFILE_CACHE or "
        "~/.cache/tb_paddle_profile): summaries, digests and timeline indexes are read from it "
        "and stored into it",
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor fill the cache")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say how many traces were parsed and how many came from the cache (on stderr)",
    )


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: must be 1 or more (1: no worker processes)")
    return n


JOBS_HELP = (
    "worker processes that parse traces (default: the CPUs available, at most 8; a single large trace "
    "is read by that many threads of the native scanner instead; 1: serial)"
)


def _common() -> argparse.ArgumentParser:
    """Options of every command: --debug, --progress / --no-progress."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        help="print the traceback of an internal error (a bug of the tool) and the loader's log",
    )
    bar = common.add_mutually_exclusive_group()
    bar.add_argument(
        "--progress",
        dest="progress",
        action="store_const",
        const=True,
        default=None,
        help="draw the progress line on stderr even when it is not a terminal",
    )
    bar.add_argument(
        "--no-progress",
        dest="progress",
        action="store_const",
        const=False,
        help="no progress line (default: drawn when stderr is a terminal)",
    )
    return common


def _width_arg(p) -> None:
    p.add_argument(
        "--width",
        type=int,
        default=120,
        metavar="COLUMNS",
        help="text: a table wider than this is printed in parts that each fit, keeping its name "
        "column (default 120; 0: never split)",
    )


def _output_args(p, what: str, csv_heading: str, text_table: bool = False) -> None:
    p.add_argument(
        "--format",
        choices=("text", "json", "csv"),
        default=None,
        help=f"text (default): {what}; json: the protobuf as proto3 JSON; csv: every table with raw "
        f"values (ns, fractions, bytes), each under a line '{csv_heading}', or with --table one "
        "table as plain CSV (pandas.read_csv reads it as it is)",
    )
    p.add_argument(
        "--table",
        default=None,
        metavar="KEY",
        help="one table as plain CSV (implies --format csv; "
        + (
            "with --format text, that table laid out as text, the tab's own tables too; an error with --format json"
            if text_table
            else "an error with another --format"
        )
        + "); an unknown key lists the keys there are",
    )
    p.set_defaults(text_table=text_table)
    p.add_argument(
        "--csv-dir",
        default=None,
        metavar="DIR",
        help="write every table (or the --table one) as DIR/<view>.<table>.csv, plain CSV each (implies --format csv)",
    )
