"""`tb-paddle-profile preprocess`: every trace of a logdir summarized (and indexed) into the cache ahead."""

from __future__ import annotations

import os
import sys

from tb_paddle_profile.core import terminal


def _cmd_preprocess(args) -> int:
    from tb_paddle_profile.pipeline.preprocess import preprocess

    # imported when preprocess runs: the other commands do not load the Dask runner
    from tb_paddle_profile.pipeline.dask import cli_main, wants_dask

    if wants_dask(args):  # a cache at a URL, or a Dask cluster: the per-file job on its workers
        return cli_main(args)
    if "://" not in args.logdir and not os.path.isdir(args.logdir):
        print(
            f"error: {args.logdir}: {'not a folder' if os.path.lexists(args.logdir) else 'no such folder'}",
            file=sys.stderr,
        )
        return 2
    try:
        results = preprocess(
            args.logdir,
            cache_dir=args.cache_dir,
            sidecar=args.sidecar,
            jobs=args.jobs,
            timeline=not args.no_timeline,
            progress=args.progress_line,
        )
    except OSError as exc:  # the logdir cannot be listed
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    finally:
        args.progress_line.finish()
    if not results:
        print(f"error: {args.logdir}: no *.paddle_trace.json files found", file=sys.stderr)
        return 2
    failed = 0
    for path, ok, message in results:
        if not ok:
            failed += 1
            print(f"error: {message}", file=sys.stderr)
        elif args.verbose:
            print(terminal.visible(f"{path}: {message}"))
    done = "summarized" if args.no_timeline else "summarized and indexed"
    print(f"{len(results) - failed} of {len(results)} traces {done} into the cache")
    return 2 if failed else 0
