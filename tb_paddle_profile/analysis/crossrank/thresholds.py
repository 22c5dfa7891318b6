"""Every threshold of the cross-rank analysis, in one place (docs/distributed.md explains each)."""

# ---- matching
# A position of a line-up is cut where neighbouring end times (after clock correction) differ by
# more than END_GAP_FACTOR × the typical distance of a member to its nearest other end, and at
# least END_GAP_MIN_NS (and at least CLOCK_SPREAD_FACTOR × the clock estimate's spread).
END_GAP_FACTOR = 10
END_GAP_MIN_NS = 100
CLOCK_SPREAD_FACTOR = 4
# Send/recv (the residual pass, for instances no line-up explains): ends agree within this much,
# or this share of the shorter duration.
END_TOLERANCE_NS = 5_000
END_TOLERANCE_FRACTION = 0.01
# Pipelines (topology.py): two ranks are pipeline neighbours when their matched send/recv pairs are at
# least this share of either rank's largest partner count.
P2P_PARTNER_SHARE = 0.25

# ---- clocks
# Coarse estimate: end differences of the same line-up position on two hosts, voted in bins of
# CLOCK_BIN_NS; at most CLOCK_MAX_CHANNELS channels per host and position take part. The first
# matching after it cuts at no more than CLOCK_LOOSE_MAX_NS.
CLOCK_BIN_NS = 100
CLOCK_LOOSE_MAX_NS = 2_000
CLOCK_MAX_CHANNELS = 4
# Offsets whose magnitude is below this are reported but not applied (no skew).
CLOCK_MIN_OFFSET_NS = 0

# ---- verdict
# The straggler's share of the top waiter's caused wait (findings.py), the wait fraction the tests name,
# and the compute excess over the role peers' median that makes compute the cause (verdict.py).
STRAGGLER_MIN_WAIT_FRACTION = 0.05
STRAGGLER_SHARE_OF_TOP = 0.5
COMPUTE_EXCESS_THRESHOLD = 0.10
# A rank is an anomaly when one of its per-step figures exceeds its role peers' median by at least
# ANOMALY_MIN_EXCESS_FRACTION of the median step time (and, for compute, by COMPUTE_EXCESS_THRESHOLD
# of the peers' compute).
ANOMALY_MIN_EXCESS_FRACTION = 0.02
# ... and the excess is at least this much in ns per step (timer noise).
ANOMALY_MIN_EXCESS_NS = 200_000
# A candidate (cost.py) is named a straggler when replaying it at its role peers' speed shortens the job's
# step by at least this much (and this share of the median step).
STRAGGLER_MIN_COST_NS = 100_000
STRAGGLER_MIN_COST_FRACTION = 0.005
# An anomaly is "absorbed" when its cost to the job is below this share of its excess.
ABSORBED_SHARE = 0.5
# The verdict is uncertain when a rank's matched coverage is below this.
MIN_COVERAGE = 0.9
# The replay keeps collective nodes no matched group joins at their traced times: the verdict is uncertain
# when more than this share of the collective nodes are such (fewer are named in a finding, and the
# costs stand: a few send/recv left over under end noise do not change a replay of thousands).
REPLAY_UNMATCHED_MAX_SHARE = 0.01

# ---- structure
STAGE_IMBALANCE_FRACTION = 0.10
STRUCTURAL_WAIT_FRACTION = 0.05

# ---- advice (fractions of the step time unless said otherwise)
EXPOSED_ALL_REDUCE_FRACTION = 0.10
EXPOSED_OTHER_COLLECTIVES_FRACTION = 0.10
LAUNCH_BOUND_RUNTIME_FRACTION = 0.50
MEMCPY_FRACTION = 0.10
GPU_IDLE_FRACTION = 0.20
PIPELINE_BUBBLE_FRACTION = 0.20

# ---- communicators (comms.py)
# Members of one instance end within this much of each other (corrected clocks); two channels are one
# communicator when their end increments agree within it at every position.
MATCH_TOL_NS = 1_000
# ... and an instance of a communicator whose members' corrected ends spread wider than this is none.
MATCH_VERIFY_NS = 5_000
# Without host names, ranks whose clock offsets are within this much of their neighbours' share a host
# (under end noise, within HOST_GAP_NOISE_FACTOR x sigma: a rank's first offset comes from a few once-a-step
# collectives and drifts by several sigma; hosts' clocks are milliseconds apart).
CLOCK_HOST_GAP_NS = 2_000
HOST_GAP_NOISE_FACTOR = 10.0
# In a run whose members end together to the nanosecond the ranks' offsets are that precise (tens of ns
# apart on one host): hosts are cut where neighbours are more than this, or HOST_GAP_SPREAD_FACTOR x the
# offsets' median spread, apart (two of 16 hosts' clocks 1.4 us apart were one host at 2 us: each rank
# 0.7 us off, its send/recv unmatched at the exact tolerance).
EXACT_HOST_GAP_NS = 200
HOST_GAP_SPREAD_FACTOR = 10.0
# End-time noise (members of one collective do not end at the same nanosecond: real NCCL kernels end
# microseconds apart). A first pass finds communicators by shape at SHAPE_WIDE_TOL_NS; the run's end
# noise (sigma, per member) is measured on them; then the tolerances scale with it: shapes at
# SHAPE_NOISE_FACTOR x sigma, an instance's corrected ends within VERIFY_NOISE_FACTOR x sigma, a send
# and its receive within P2P_NOISE_FACTOR x sigma (never below MATCH_TOL_NS / MATCH_VERIFY_NS, never
# above SHAPE_WIDE_TOL_NS for shapes).
SHAPE_WIDE_TOL_NS = 16_000
# A run whose collectives' members end together to the nanosecond (end noise within comms.EXACT_END_NS):
# its shapes agree, and its short line-ups are cut, within this (timestamp rounding, not noise).
EXACT_TOL_NS = 200
SHAPE_NOISE_FACTOR = 4.0
VERIFY_NOISE_FACTOR = 8.0
P2P_NOISE_FACTOR = 6.0

# A run whose rank numbers leave gaps (a trace missing, or unreadable) is a world of the highest rank + 1
# (load._lane_ranks numbers default-named ranks by host and GPU; topology.world_size) only when at least
# this share of that world has traces; else the ranks at hand are the world.
WORLD_MIN_PRESENT = 0.75
