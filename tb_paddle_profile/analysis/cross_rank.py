"""All ranks of one run and span side by side: the cross-rank analysis now lives in
``analysis/crossrank/`` (one module per question, over RankDigests only); this module keeps the old
import path for the CLI, the routes and older callers. ``analyze_run`` takes RankDigests or
Summaries. Definitions: docs/distributed.md."""
from __future__ import annotations

from .crossrank import analyze_run  # noqa: F401
from .crossrank.advice import TIME_TOKEN  # noqa: F401
from .crossrank.pipeline import BUBBLE_DEFINITION  # noqa: F401
from .crossrank.thresholds import (  # noqa: F401
    ABSORBED_SHARE, ANOMALY_MIN_EXCESS_FRACTION, ANOMALY_MIN_EXCESS_NS, COMPUTE_EXCESS_THRESHOLD, END_GAP_FACTOR,
    END_GAP_MIN_NS, END_TOLERANCE_FRACTION, END_TOLERANCE_NS, EXPOSED_ALL_REDUCE_FRACTION,
    EXPOSED_OTHER_COLLECTIVES_FRACTION, GPU_IDLE_FRACTION, LAUNCH_BOUND_RUNTIME_FRACTION, MEMCPY_FRACTION,
    MIN_COVERAGE, P2P_PARTNER_SHARE, PIPELINE_BUBBLE_FRACTION, STAGE_IMBALANCE_FRACTION, STRAGGLER_MIN_WAIT_FRACTION, STRAGGLER_SHARE_OF_TOP)
