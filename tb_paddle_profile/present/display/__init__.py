"""The display model (proto/tb_paddle_profile/v1/display.proto): every table, note and sentence
that the CLI prints and the panels show, built once here.

* cells.py: the one Python formatter of cells and sentences (its twin: frontend/src/display/cells.ts);
* summary.py: ``summary_display(summary, ...)`` → Display of one rank (Paddle's views and ours), from
  overview.py, operators.py, kernels.py and memory.py (building blocks: summary_common.py);
* parallel.py: ``parallel_display(run_parallel)`` → Display of the hybrid-parallel analysis of a run, with
  parallel_tables.py, parallel_model_tables.py and straggler.py; distributed.py: the Distributed view
  (building blocks: parallel_common.py);
* export.py: tables as records, CSV and pandas DataFrames (the Python API's frames).
"""
