"""Read PaddlePaddle profiler traces; serve their summaries in TensorBoard and the terminal.

The Python API (README, "Python API"): ``tbp.load(trace)`` → a Profile (the Summary and Paddle's views as
pandas DataFrames), ``tbp.load_all(folder)``, ``tbp.load_run(folder)`` → a Run (the cross-rank frames).
They are imported on first use, so ``import tb_paddle_profile`` stays light for the plugin and the CLI.
"""

from tb_paddle_profile.core.version import __version__

_API = ("load", "load_all", "load_run", "Profile", "Run", "LoadError")
__all__ = ["__version__", *_API]


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tb_paddle_profile' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API))
