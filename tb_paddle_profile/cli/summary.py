"""`tb-paddle-profile summary`: Paddle's summary tables of each trace, as text, JSON or CSV."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Optional

from tb_paddle_profile.cli.output import csv_text, json_text, table_text, write_csv_dir
from tb_paddle_profile.cli.loading import _options
from tb_paddle_profile.core import terminal
from tb_paddle_profile.core.errors import our_bug
from tb_paddle_profile.pipeline.batch import LoadFailure, load_summaries
from tb_paddle_profile.present.render import text
from tb_paddle_profile.v1.summary_pb2 import Summary


# the CLI's log under --debug, named as the command line's entry point
_LOG = terminal.logger("tb_paddle_profile.cli.commands")


def _cmd_summary(args) -> int:
    try:
        loaded = load_summaries(args.trace, _options(args))
    except LoadFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = internal = 0
    for i, (f, data, error, bug) in enumerate(loaded):
        # Exit status: 0 all summarized, 2 some files were not usable traces (or could not be read),
        # 3 an internal error (ours).
        if data is None:
            print(f"error: {error}", file=sys.stderr)
            internal += bug
            failed += not bug
            continue
        try:
            summary = Summary.FromString(data)
            out: Optional[str]
            if args.format == "json":
                out = json_text(summary)
            elif args.format == "csv" or args.table:  # the display model's tables (display/summary.py)
                from tb_paddle_profile.present.display.summary import summary_display

                display = summary_display(
                    summary,
                    sorted_by=args.sorted_by,
                    op_detail=not args.no_op_detail,
                    thread_sep=args.thread_sep,
                    time_unit=args.time_unit,
                )
                if args.csv_dir:
                    sub = args.csv_dir if len(loaded) == 1 else os.path.join(args.csv_dir, _stem(f.file_name))
                    if not write_csv_dir(display, sub, f.file_name, views=args.views, table_key=args.table):
                        failed += 1
                    continue
                out = (
                    csv_text(display, args.table, f.file_name, views=args.views)
                    if args.format == "csv"
                    else table_text(display, args.table, f.file_name, args.time_unit, views=args.views)
                )
                if out is None:
                    failed += 1
                    continue
            else:
                out = text.render(
                    summary,
                    sorted_by=args.sorted_by,
                    time_unit=args.time_unit,
                    op_detail=not args.no_op_detail,
                    thread_sep=args.thread_sep,
                    views=args.views,
                )
        except Exception as exc:  # a bug of ours: said as such, with the traceback under --debug
            print(f"error: {our_bug(f.file_name, exc)}", file=sys.stderr)
            _LOG.debug("internal error on %s", f.path, exc_info=True)
            if args.debug:
                traceback.print_exc(file=terminal.raw(sys.stderr))
            internal += 1
            continue
        if len(loaded) > 1:
            print(f"{'' if i == 0 else chr(10)}==> {terminal.visible(f.path)} <==")
        print(out, end="" if args.format == "csv" else "\n")
    return 3 if internal else 2 if failed else 0


def _stem(file_name: str) -> str:
    for end in (".paddle_trace.json.gz", ".paddle_trace.json"):
        if file_name.endswith(end):
            return file_name[: -len(end)]
    return file_name
