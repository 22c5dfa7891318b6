"""An independent simulator of GPT hybrid-parallel Paddle jobs (DP x PP x MP), writing Paddle 3.3.1
traces and the truth beside them (docs/sim2.md). Not part of the wheel."""

from .config import Anomaly, SimConfig  # noqa: F401
