"""GPU-shaped Paddle profiler traces of simulated GPT hybrid-parallel training.

``generate(SynthConfig(dp=2, mp=2, pp=2), out_dir)`` writes one Chrome-tracing file per rank in
the layout of Paddle 3.3.1's writer (or the 2.x layout VisualDL reads), a ground-truth manifest,
the cross-rank truth (``load_truth(out_dir)``, :mod:`.truth`) and optionally the tables
Paddle's own summary code prints for each rank (:mod:`.oracle`).
Command line: ``python -m tbp_synth --help``.
"""

from .generator import MANIFEST_NAME, SynthConfig, SynthResult, Topology, build_rank, generate, pipeline_order
from .model import NodeTrees, RankTrace, build_node_trees
from .truth import StepTime, Truth, load_truth, simulate_step_time
from .writer import trace_file_name, write_trace

__all__ = [
    "MANIFEST_NAME",
    "NodeTrees",
    "RankTrace",
    "StepTime",
    "SynthConfig",
    "SynthResult",
    "Topology",
    "Truth",
    "build_node_trees",
    "build_rank",
    "generate",
    "load_truth",
    "pipeline_order",
    "simulate_step_time",
    "trace_file_name",
    "write_trace",
]
