"""Read PaddlePaddle profiler traces; serve their summaries in TensorBoard and the terminal."""

__version__ = "0.1.0"
