"""The TensorBoard plugin: a "Paddle Profile" tab over the Paddle profiler traces under the logdir.

Thin wiring only (:mod:`.tb_plugin`): :mod:`.discovery` finds runs, workers and spans, :mod:`.loader`
computes summaries in worker processes through the :mod:`tb_paddle_profile.store.cache`, :mod:`.routes` serves
them. This package module imports none of them, nor TensorBoard: the loader's worker processes and the
CLI import only what they use.

Settings (environment; TensorBoard needs no extra flag):
- ``TB_PADDLE_PROFILE_CACHE``: cache folder (default ``~/.cache/tb_paddle_profile``; ``off`` disables it);
- ``TB_PADDLE_PROFILE_SIDECAR=1``: also keep each summary next to its trace (writes into the logdir);
- ``TB_PADDLE_PROFILE_RESCAN_S``: seconds between scans of the logdir (default: TensorBoard's
  ``--reload_interval``, at least 10 s; ``--reload_interval 0`` scans once);
- ``TB_PADDLE_PROFILE_WORKERS``: parsing processes (default: the cores, at most 8);
- ``TB_PADDLE_PROFILE_GROWING_S``: how long a truncated trace counts as still being written (300 s).
"""


def __getattr__(name: str):
    if name == "PaddleProfilePlugin":
        from tb_paddle_profile.plugin.tb_plugin import PaddleProfilePlugin

        return PaddleProfilePlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
