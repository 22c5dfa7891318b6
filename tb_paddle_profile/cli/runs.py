"""The commands on one run's ranks: `parallel`, `whatif`, `export` (one Chrome trace) and `report` (HTML)."""

from __future__ import annotations

import sys

from tb_paddle_profile.cli.output import emit_answer, emit_csv, print_json
from tb_paddle_profile.cli.loading import _options, _reported_run
from tb_paddle_profile.pipeline.batch import load_summaries
from tb_paddle_profile.v1.summary_pb2 import Summary


def _cmd_parallel(args) -> int:
    from tb_paddle_profile.present.render import parallel_text

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    result = run.result
    result.run = args.run_dir
    if args.format == "json":  # with every matched instance
        print_json(value=run.json_value())
    elif args.format == "csv":
        from tb_paddle_profile.present.display.parallel import parallel_display

        if not emit_csv(args, parallel_display(result, args.time_unit), args.run_dir):
            return 2
    else:
        print(parallel_text.render(result, time_unit=args.time_unit, width=args.width), end="")
    return 3 if internal else 2 if failed else 0


def _cmd_whatif(args) -> int:
    from tb_paddle_profile.present.display.whatif import whatif_answer
    from tb_paddle_profile.present.render import whatif_text

    run, internal, failed = _reported_run(args, analyze=False)
    if run is None:
        return 3 if internal else 2
    try:
        result = whatif_answer(
            run.digests,
            args.run_dir,
            run.span,
            args.time_unit,
            params=args.params,
            tokens_per_step=args.tokens_per_step,
            model_config=args.model_config,
            peak_tflops=args.peak_tflops,
        )
    except ValueError as exc:  # a bad model config: one line naming the file
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result.notes.extend(run.result.notes)
    if not emit_answer(args, result, args.run_dir, lambda: whatif_text.render_display(result.display)):
        return 2
    return 3 if internal else 2 if failed else 0


def _cmd_export(args) -> int:
    """`export RUN_DIR -o merged.json[.gz]`: every rank of a span in one Chrome trace, on the corrected clock."""
    from tb_paddle_profile.present.merged_trace import write_merged_trace

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    try:
        stats = write_merged_trace(run.result, run.used, args.output, ranks=args.ranks, matched=run.matched_table())
    except ValueError as exc:  # a --ranks that names no rank of the run, a trace that cannot be read
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(
        f"{args.output}: {stats['ranks']} rank(s), {stats['events']} events, {stats['flows']} launch→kernel "
        f"flows, {stats['collectives']} collective instances as arrows (open it in https://ui.perfetto.dev or chrome://tracing)",
        file=sys.stderr,
    )
    return 3 if internal else 2 if failed else 0


def _cmd_report(args) -> int:
    """`report RUN_DIR -o report.html`: one self-contained HTML page of the run's display model."""
    from tb_paddle_profile.present.display.parallel import parallel_display
    from tb_paddle_profile.present.html_report import render_report

    run, internal, failed = _reported_run(args)
    if run is None:
        return 3 if internal else 2
    displays = [
        (
            "Across ranks",
            run.result.display if run.result.HasField("display") else parallel_display(run.result, args.time_unit),
        )
    ]
    try:
        from tb_paddle_profile.present.display.whatif import whatif_answer

        args.progress_line.phase("what-if estimates")
        answer = whatif_answer(run.digests, args.run_dir, run.span, args.time_unit)
        displays.append(("What-if", answer.display))
        slowest = _slowest_rank_display(args, run)
        if slowest is not None:
            displays.append(slowest)
    finally:
        args.progress_line.finish()
    html = render_report(
        f"{args.run_dir} · span {run.result.span}", displays, time_unit=args.time_unit, notes=list(run.result.notes)
    )
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(html)
    except OSError as exc:
        print(f"error: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{args.output}: {len(html) / 1e6:.2f} MB, {len(run.result.ranks)} rank(s)", file=sys.stderr)
    return 3 if internal else 2 if failed else 0


def _slowest_rank_display(args, run):
    """("Slowest rank", a Display of its top operators and kernels) for the report, from its Summary
    (in the cache the run was just loaded through); None when it cannot be read."""
    from tb_paddle_profile.present.display.summary import summary_display
    from tb_paddle_profile.present.html_report import top_rows

    ranks = [r for r in run.result.ranks if r.file_name]
    by_name = {f.file_name: f for f in run.used}
    ranks = [r for r in ranks if r.file_name in by_name]
    if not ranks:
        return None
    slow = max(ranks, key=lambda r: r.step_time_ns)
    ((_, data, _, _),) = load_summaries(by_name[slow.file_name].path, _options(args))
    if data is None:
        return None
    display = summary_display(Summary.FromString(data), time_unit=args.time_unit)
    title = f"top operators and kernels of {slow.label or slow.worker}, the rank with the longest step"
    return "Slowest rank", top_rows(display, ["operators", "kernels"], 25, title)
