from tb_paddle_profile.v1 import display_pb2 as _display_pb2
from tb_paddle_profile.v1 import summary_pb2 as _summary_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LoadState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOAD_STATE_UNSPECIFIED: _ClassVar[LoadState]
    QUEUED: _ClassVar[LoadState]
    LOADING: _ClassVar[LoadState]
    READY: _ClassVar[LoadState]
    FAILED: _ClassVar[LoadState]
    GROWING: _ClassVar[LoadState]
LOAD_STATE_UNSPECIFIED: LoadState
QUEUED: LoadState
LOADING: LoadState
READY: LoadState
FAILED: LoadState
GROWING: LoadState

class SpanEntry(_message.Message):
    __slots__ = ("span", "file_name", "file_size", "state", "error", "cached", "loading_since_unix_s")
    SPAN_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    LOADING_SINCE_UNIX_S_FIELD_NUMBER: _ClassVar[int]
    span: str
    file_name: str
    file_size: int
    state: LoadState
    error: str
    cached: bool
    loading_since_unix_s: float
    def __init__(self, span: _Optional[str] = ..., file_name: _Optional[str] = ..., file_size: _Optional[int] = ..., state: _Optional[_Union[LoadState, str]] = ..., error: _Optional[str] = ..., cached: _Optional[bool] = ..., loading_since_unix_s: _Optional[float] = ...) -> None: ...

class WorkerEntry(_message.Message):
    __slots__ = ("worker", "rank", "hostname", "pid", "spans", "label", "group")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    hostname: str
    pid: int
    spans: _containers.RepeatedCompositeFieldContainer[SpanEntry]
    label: str
    group: str
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., hostname: _Optional[str] = ..., pid: _Optional[int] = ..., spans: _Optional[_Iterable[_Union[SpanEntry, _Mapping]]] = ..., label: _Optional[str] = ..., group: _Optional[str] = ...) -> None: ...

class RunEntry(_message.Message):
    __slots__ = ("run", "workers")
    RUN_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    run: str
    workers: _containers.RepeatedCompositeFieldContainer[WorkerEntry]
    def __init__(self, run: _Optional[str] = ..., workers: _Optional[_Iterable[_Union[WorkerEntry, _Mapping]]] = ...) -> None: ...

class RunList(_message.Message):
    __slots__ = ("logdir", "runs", "scanned_at")
    LOGDIR_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    SCANNED_AT_FIELD_NUMBER: _ClassVar[int]
    logdir: str
    runs: _containers.RepeatedCompositeFieldContainer[RunEntry]
    scanned_at: float
    def __init__(self, logdir: _Optional[str] = ..., runs: _Optional[_Iterable[_Union[RunEntry, _Mapping]]] = ..., scanned_at: _Optional[float] = ...) -> None: ...

class RankDistributed(_message.Message):
    __slots__ = ("worker", "rank", "state", "error", "total_time_ns", "distributed", "steps", "file_version")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    FILE_VERSION_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    state: LoadState
    error: str
    total_time_ns: int
    distributed: _summary_pb2.DistributedView
    steps: _containers.RepeatedCompositeFieldContainer[_summary_pb2.ModelStep]
    file_version: str
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., state: _Optional[_Union[LoadState, str]] = ..., error: _Optional[str] = ..., total_time_ns: _Optional[int] = ..., distributed: _Optional[_Union[_summary_pb2.DistributedView, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[_summary_pb2.ModelStep, _Mapping]]] = ..., file_version: _Optional[str] = ...) -> None: ...

class RunDistributed(_message.Message):
    __slots__ = ("run", "span", "ranks", "display")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    ranks: _containers.RepeatedCompositeFieldContainer[RankDistributed]
    display: _display_pb2.Display
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., ranks: _Optional[_Iterable[_Union[RankDistributed, _Mapping]]] = ..., display: _Optional[_Union[_display_pb2.Display, _Mapping]] = ...) -> None: ...

class RunParallel(_message.Message):
    __slots__ = ("run", "span", "ranks", "steps", "step_time", "exposed_communication", "kinds", "matched", "matching", "straggler", "pipeline", "advice", "notes", "topology", "clocks", "findings", "analysis_key", "matched_total", "display", "memory", "sequences", "comm", "layers")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_COMMUNICATION_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    STRAGGLER_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    ADVICE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    CLOCKS_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_KEY_FIELD_NUMBER: _ClassVar[int]
    MATCHED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    COMM_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    ranks: _containers.RepeatedCompositeFieldContainer[RankParallel]
    steps: _containers.RepeatedScalarFieldContainer[int]
    step_time: RankStepMatrix
    exposed_communication: RankStepMatrix
    kinds: _containers.RepeatedCompositeFieldContainer[KindAcrossRanks]
    matched: _containers.RepeatedCompositeFieldContainer[MatchedCollective]
    matching: MatchingInfo
    straggler: StragglerVerdict
    pipeline: PipelineView
    advice: _containers.RepeatedCompositeFieldContainer[Advice]
    notes: _containers.RepeatedScalarFieldContainer[str]
    topology: TopologyView
    clocks: _containers.RepeatedCompositeFieldContainer[HostClock]
    findings: _containers.RepeatedCompositeFieldContainer[Finding]
    analysis_key: str
    matched_total: int
    display: _display_pb2.Display
    memory: MemoryStages
    sequences: SequenceBalance
    comm: CommAcrossRanks
    layers: StageLayers
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., ranks: _Optional[_Iterable[_Union[RankParallel, _Mapping]]] = ..., steps: _Optional[_Iterable[int]] = ..., step_time: _Optional[_Union[RankStepMatrix, _Mapping]] = ..., exposed_communication: _Optional[_Union[RankStepMatrix, _Mapping]] = ..., kinds: _Optional[_Iterable[_Union[KindAcrossRanks, _Mapping]]] = ..., matched: _Optional[_Iterable[_Union[MatchedCollective, _Mapping]]] = ..., matching: _Optional[_Union[MatchingInfo, _Mapping]] = ..., straggler: _Optional[_Union[StragglerVerdict, _Mapping]] = ..., pipeline: _Optional[_Union[PipelineView, _Mapping]] = ..., advice: _Optional[_Iterable[_Union[Advice, _Mapping]]] = ..., notes: _Optional[_Iterable[str]] = ..., topology: _Optional[_Union[TopologyView, _Mapping]] = ..., clocks: _Optional[_Iterable[_Union[HostClock, _Mapping]]] = ..., findings: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ..., analysis_key: _Optional[str] = ..., matched_total: _Optional[int] = ..., display: _Optional[_Union[_display_pb2.Display, _Mapping]] = ..., memory: _Optional[_Union[MemoryStages, _Mapping]] = ..., sequences: _Optional[_Union[SequenceBalance, _Mapping]] = ..., comm: _Optional[_Union[CommAcrossRanks, _Mapping]] = ..., layers: _Optional[_Union[StageLayers, _Mapping]] = ...) -> None: ...

class StageLayer(_message.Message):
    __slots__ = ("stage", "name", "ordinal", "ranks", "flops", "median_kernel_ns", "min_kernel_ns", "slowest_rank", "slowest_kernel_ns", "median_comm_kernel_ns", "achieved_flops", "slowest_achieved_flops", "mfu")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    MIN_KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    SLOWEST_RANK_FIELD_NUMBER: _ClassVar[int]
    SLOWEST_KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_COMM_KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    ACHIEVED_FLOPS_FIELD_NUMBER: _ClassVar[int]
    SLOWEST_ACHIEVED_FLOPS_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    stage: int
    name: str
    ordinal: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    flops: float
    median_kernel_ns: int
    min_kernel_ns: int
    slowest_rank: int
    slowest_kernel_ns: int
    median_comm_kernel_ns: int
    achieved_flops: float
    slowest_achieved_flops: float
    mfu: float
    def __init__(self, stage: _Optional[int] = ..., name: _Optional[str] = ..., ordinal: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ..., flops: _Optional[float] = ..., median_kernel_ns: _Optional[int] = ..., min_kernel_ns: _Optional[int] = ..., slowest_rank: _Optional[int] = ..., slowest_kernel_ns: _Optional[int] = ..., median_comm_kernel_ns: _Optional[int] = ..., achieved_flops: _Optional[float] = ..., slowest_achieved_flops: _Optional[float] = ..., mfu: _Optional[float] = ...) -> None: ...

class StageLayers(_message.Message):
    __slots__ = ("present", "why_not", "layers")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    WHY_NOT_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    present: bool
    why_not: str
    layers: _containers.RepeatedCompositeFieldContainer[StageLayer]
    def __init__(self, present: _Optional[bool] = ..., why_not: _Optional[str] = ..., layers: _Optional[_Iterable[_Union[StageLayer, _Mapping]]] = ...) -> None: ...

class CommAxisAcross(_message.Message):
    __slots__ = ("axis", "phase", "ranks", "time_ns", "hidden_ns", "exposed_ns", "max_exposed_ns", "max_exposed_rank", "algbw", "busbw")
    AXIS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_EXPOSED_RANK_FIELD_NUMBER: _ClassVar[int]
    ALGBW_FIELD_NUMBER: _ClassVar[int]
    BUSBW_FIELD_NUMBER: _ClassVar[int]
    axis: _summary_pb2.CommAxis
    phase: int
    ranks: int
    time_ns: int
    hidden_ns: int
    exposed_ns: int
    max_exposed_ns: int
    max_exposed_rank: int
    algbw: float
    busbw: float
    def __init__(self, axis: _Optional[_Union[_summary_pb2.CommAxis, str]] = ..., phase: _Optional[int] = ..., ranks: _Optional[int] = ..., time_ns: _Optional[int] = ..., hidden_ns: _Optional[int] = ..., exposed_ns: _Optional[int] = ..., max_exposed_ns: _Optional[int] = ..., max_exposed_rank: _Optional[int] = ..., algbw: _Optional[float] = ..., busbw: _Optional[float] = ...) -> None: ...

class CommAcrossRanks(_message.Message):
    __slots__ = ("ranks", "axes")
    RANKS_FIELD_NUMBER: _ClassVar[int]
    AXES_FIELD_NUMBER: _ClassVar[int]
    ranks: _containers.RepeatedCompositeFieldContainer[_summary_pb2.CommRank]
    axes: _containers.RepeatedCompositeFieldContainer[CommAxisAcross]
    def __init__(self, ranks: _Optional[_Iterable[_Union[_summary_pb2.CommRank, _Mapping]]] = ..., axes: _Optional[_Iterable[_Union[CommAxisAcross, _Mapping]]] = ...) -> None: ...

class SequenceReplica(_message.Message):
    __slots__ = ("dp", "ranks", "tokens_per_step", "tokens_per_micro_batch", "min_micro_batch_tokens", "max_micro_batch_tokens", "micro_batches", "compute_ns")
    DP_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    MIN_MICRO_BATCH_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_MICRO_BATCH_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    dp: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    tokens_per_step: float
    tokens_per_micro_batch: float
    min_micro_batch_tokens: int
    max_micro_batch_tokens: int
    micro_batches: int
    compute_ns: int
    def __init__(self, dp: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ..., tokens_per_step: _Optional[float] = ..., tokens_per_micro_batch: _Optional[float] = ..., min_micro_batch_tokens: _Optional[int] = ..., max_micro_batch_tokens: _Optional[int] = ..., micro_batches: _Optional[int] = ..., compute_ns: _Optional[int] = ...) -> None: ...

class SequenceBalance(_message.Message):
    __slots__ = ("present", "why_not", "replicas", "mean_tokens_per_step", "spread", "cv", "step_ns", "balanced_step_ns", "cost_ns", "method", "assumption")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    WHY_NOT_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MEAN_TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    SPREAD_FIELD_NUMBER: _ClassVar[int]
    CV_FIELD_NUMBER: _ClassVar[int]
    STEP_NS_FIELD_NUMBER: _ClassVar[int]
    BALANCED_STEP_NS_FIELD_NUMBER: _ClassVar[int]
    COST_NS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    ASSUMPTION_FIELD_NUMBER: _ClassVar[int]
    present: bool
    why_not: str
    replicas: _containers.RepeatedCompositeFieldContainer[SequenceReplica]
    mean_tokens_per_step: float
    spread: float
    cv: float
    step_ns: int
    balanced_step_ns: int
    cost_ns: int
    method: str
    assumption: str
    def __init__(self, present: _Optional[bool] = ..., why_not: _Optional[str] = ..., replicas: _Optional[_Iterable[_Union[SequenceReplica, _Mapping]]] = ..., mean_tokens_per_step: _Optional[float] = ..., spread: _Optional[float] = ..., cv: _Optional[float] = ..., step_ns: _Optional[int] = ..., balanced_step_ns: _Optional[int] = ..., cost_ns: _Optional[int] = ..., method: _Optional[str] = ..., assumption: _Optional[str] = ...) -> None: ...

class MemoryStageRow(_message.Message):
    __slots__ = ("stage", "ranks", "max_peak_allocated", "max_allocated_rank", "min_peak_allocated", "mean_peak_allocated", "max_peak_reserved", "max_reserved_rank")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    MAX_PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    MAX_ALLOCATED_RANK_FIELD_NUMBER: _ClassVar[int]
    MIN_PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    MEAN_PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    MAX_PEAK_RESERVED_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVED_RANK_FIELD_NUMBER: _ClassVar[int]
    stage: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    max_peak_allocated: int
    max_allocated_rank: int
    min_peak_allocated: int
    mean_peak_allocated: int
    max_peak_reserved: int
    max_reserved_rank: int
    def __init__(self, stage: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ..., max_peak_allocated: _Optional[int] = ..., max_allocated_rank: _Optional[int] = ..., min_peak_allocated: _Optional[int] = ..., mean_peak_allocated: _Optional[int] = ..., max_peak_reserved: _Optional[int] = ..., max_reserved_rank: _Optional[int] = ...) -> None: ...

class MemoryRankRow(_message.Message):
    __slots__ = ("rank", "stage", "place", "peak_allocated", "peak_reserved")
    RANK_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    PLACE_FIELD_NUMBER: _ClassVar[int]
    PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    PEAK_RESERVED_FIELD_NUMBER: _ClassVar[int]
    rank: int
    stage: int
    place: str
    peak_allocated: int
    peak_reserved: int
    def __init__(self, rank: _Optional[int] = ..., stage: _Optional[int] = ..., place: _Optional[str] = ..., peak_allocated: _Optional[int] = ..., peak_reserved: _Optional[int] = ...) -> None: ...

class MemoryStages(_message.Message):
    __slots__ = ("stages", "ranks")
    STAGES_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    stages: _containers.RepeatedCompositeFieldContainer[MemoryStageRow]
    ranks: _containers.RepeatedCompositeFieldContainer[MemoryRankRow]
    def __init__(self, stages: _Optional[_Iterable[_Union[MemoryStageRow, _Mapping]]] = ..., ranks: _Optional[_Iterable[_Union[MemoryRankRow, _Mapping]]] = ...) -> None: ...

class MatchedPage(_message.Message):
    __slots__ = ("run", "span", "analysis_key", "total", "offset", "matched")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_KEY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    analysis_key: str
    total: int
    offset: int
    matched: _containers.RepeatedCompositeFieldContainer[MatchedCollective]
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., analysis_key: _Optional[str] = ..., total: _Optional[int] = ..., offset: _Optional[int] = ..., matched: _Optional[_Iterable[_Union[MatchedCollective, _Mapping]]] = ...) -> None: ...

class ProcessGroup(_message.Message):
    __slots__ = ("axis", "ranks", "instances", "kinds")
    AXIS_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    axis: str
    ranks: _containers.RepeatedScalarFieldContainer[int]
    instances: int
    kinds: _containers.RepeatedScalarFieldContainer[_summary_pb2.CollectiveKind]
    def __init__(self, axis: _Optional[str] = ..., ranks: _Optional[_Iterable[int]] = ..., instances: _Optional[int] = ..., kinds: _Optional[_Iterable[_Union[_summary_pb2.CollectiveKind, str]]] = ...) -> None: ...

class TopologyView(_message.Message):
    __slots__ = ("dp", "pp", "mp", "sharding", "groups", "method", "complete", "matches_fleet_order", "notes")
    DP_FIELD_NUMBER: _ClassVar[int]
    PP_FIELD_NUMBER: _ClassVar[int]
    MP_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FLEET_ORDER_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    dp: int
    pp: int
    mp: int
    sharding: int
    groups: _containers.RepeatedCompositeFieldContainer[ProcessGroup]
    method: str
    complete: bool
    matches_fleet_order: bool
    notes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, dp: _Optional[int] = ..., pp: _Optional[int] = ..., mp: _Optional[int] = ..., sharding: _Optional[int] = ..., groups: _Optional[_Iterable[_Union[ProcessGroup, _Mapping]]] = ..., method: _Optional[str] = ..., complete: _Optional[bool] = ..., matches_fleet_order: _Optional[bool] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class HostClock(_message.Message):
    __slots__ = ("hostname", "ranks", "offset_ns", "spread_ns", "samples", "reference")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_NS_FIELD_NUMBER: _ClassVar[int]
    SPREAD_NS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    hostname: str
    ranks: _containers.RepeatedScalarFieldContainer[int]
    offset_ns: int
    spread_ns: int
    samples: int
    reference: bool
    def __init__(self, hostname: _Optional[str] = ..., ranks: _Optional[_Iterable[int]] = ..., offset_ns: _Optional[int] = ..., spread_ns: _Optional[int] = ..., samples: _Optional[int] = ..., reference: _Optional[bool] = ...) -> None: ...

class Finding(_message.Message):
    __slots__ = ("rule", "category", "cause", "ranks", "stage", "cost_ns", "excess_ns", "absorbed", "text", "triggers")
    RULE_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    COST_NS_FIELD_NUMBER: _ClassVar[int]
    EXCESS_NS_FIELD_NUMBER: _ClassVar[int]
    ABSORBED_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    rule: str
    category: str
    cause: str
    ranks: _containers.RepeatedScalarFieldContainer[int]
    stage: int
    cost_ns: int
    excess_ns: int
    absorbed: bool
    text: str
    triggers: _containers.RepeatedCompositeFieldContainer[AdviceTrigger]
    def __init__(self, rule: _Optional[str] = ..., category: _Optional[str] = ..., cause: _Optional[str] = ..., ranks: _Optional[_Iterable[int]] = ..., stage: _Optional[int] = ..., cost_ns: _Optional[int] = ..., excess_ns: _Optional[int] = ..., absorbed: _Optional[bool] = ..., text: _Optional[str] = ..., triggers: _Optional[_Iterable[_Union[AdviceTrigger, _Mapping]]] = ...) -> None: ...

class RankStepMatrix(_message.Message):
    __slots__ = ("values_ns",)
    VALUES_NS_FIELD_NUMBER: _ClassVar[int]
    values_ns: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values_ns: _Optional[_Iterable[int]] = ...) -> None: ...

class RankKind(_message.Message):
    __slots__ = ("kind", "calls", "device_ns", "host_ns", "exposed_ns", "bytes", "wait_ns", "transfer_ns", "matched")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NS_FIELD_NUMBER: _ClassVar[int]
    HOST_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_NS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    kind: _summary_pb2.CollectiveKind
    calls: int
    device_ns: int
    host_ns: int
    exposed_ns: int
    bytes: int
    wait_ns: int
    transfer_ns: int
    matched: int
    def __init__(self, kind: _Optional[_Union[_summary_pb2.CollectiveKind, str]] = ..., calls: _Optional[int] = ..., device_ns: _Optional[int] = ..., host_ns: _Optional[int] = ..., exposed_ns: _Optional[int] = ..., bytes: _Optional[int] = ..., wait_ns: _Optional[int] = ..., transfer_ns: _Optional[int] = ..., matched: _Optional[int] = ...) -> None: ...

class RankParallel(_message.Message):
    __slots__ = ("worker", "rank", "rank_inferred", "file_name", "timeline", "steps", "step_time_ns", "compute_ns", "communication_ns", "hidden_communication_ns", "exposed_communication_ns", "memory_ns", "exposed_memory_ns", "idle_ns", "runtime_ns", "sync_ns", "kernel_ns", "launches", "kinds", "wait_ns", "caused_wait_ns", "last_arrivals", "matched", "peers", "peer_compute_ns", "pipeline_stage", "bubble_ns", "bubble_ratio", "step_breakdown", "label", "hostname", "pid", "device_id", "dp", "mp", "sharding", "clock_offset_ns", "coverage", "dataloader_ns", "first_device_ns", "deviation", "tokens_per_step", "flops_per_step", "stall_ns")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    RANK_INFERRED_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_MEMORY_NS_FIELD_NUMBER: _ClassVar[int]
    IDLE_NS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_NS_FIELD_NUMBER: _ClassVar[int]
    SYNC_NS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    LAUNCHES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    CAUSED_WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    LAST_ARRIVALS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    PEERS_FIELD_NUMBER: _ClassVar[int]
    PEER_COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_STAGE_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_NS_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_RATIO_FIELD_NUMBER: _ClassVar[int]
    STEP_BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    DP_FIELD_NUMBER: _ClassVar[int]
    MP_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    CLOCK_OFFSET_NS_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    DATALOADER_NS_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEVICE_NS_FIELD_NUMBER: _ClassVar[int]
    DEVIATION_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    STALL_NS_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    rank_inferred: bool
    file_name: str
    timeline: _summary_pb2.Timeline
    steps: int
    step_time_ns: int
    compute_ns: int
    communication_ns: int
    hidden_communication_ns: int
    exposed_communication_ns: int
    memory_ns: int
    exposed_memory_ns: int
    idle_ns: int
    runtime_ns: int
    sync_ns: int
    kernel_ns: int
    launches: int
    kinds: _containers.RepeatedCompositeFieldContainer[RankKind]
    wait_ns: int
    caused_wait_ns: int
    last_arrivals: int
    matched: int
    peers: _containers.RepeatedScalarFieldContainer[int]
    peer_compute_ns: int
    pipeline_stage: int
    bubble_ns: int
    bubble_ratio: float
    step_breakdown: _containers.RepeatedCompositeFieldContainer[_summary_pb2.ParallelStep]
    label: str
    hostname: str
    pid: int
    device_id: int
    dp: int
    mp: int
    sharding: int
    clock_offset_ns: int
    coverage: float
    dataloader_ns: int
    first_device_ns: int
    deviation: float
    tokens_per_step: float
    flops_per_step: float
    stall_ns: int
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., rank_inferred: _Optional[bool] = ..., file_name: _Optional[str] = ..., timeline: _Optional[_Union[_summary_pb2.Timeline, str]] = ..., steps: _Optional[int] = ..., step_time_ns: _Optional[int] = ..., compute_ns: _Optional[int] = ..., communication_ns: _Optional[int] = ..., hidden_communication_ns: _Optional[int] = ..., exposed_communication_ns: _Optional[int] = ..., memory_ns: _Optional[int] = ..., exposed_memory_ns: _Optional[int] = ..., idle_ns: _Optional[int] = ..., runtime_ns: _Optional[int] = ..., sync_ns: _Optional[int] = ..., kernel_ns: _Optional[int] = ..., launches: _Optional[int] = ..., kinds: _Optional[_Iterable[_Union[RankKind, _Mapping]]] = ..., wait_ns: _Optional[int] = ..., caused_wait_ns: _Optional[int] = ..., last_arrivals: _Optional[int] = ..., matched: _Optional[int] = ..., peers: _Optional[_Iterable[int]] = ..., peer_compute_ns: _Optional[int] = ..., pipeline_stage: _Optional[int] = ..., bubble_ns: _Optional[int] = ..., bubble_ratio: _Optional[float] = ..., step_breakdown: _Optional[_Iterable[_Union[_summary_pb2.ParallelStep, _Mapping]]] = ..., label: _Optional[str] = ..., hostname: _Optional[str] = ..., pid: _Optional[int] = ..., device_id: _Optional[int] = ..., dp: _Optional[int] = ..., mp: _Optional[int] = ..., sharding: _Optional[int] = ..., clock_offset_ns: _Optional[int] = ..., coverage: _Optional[float] = ..., dataloader_ns: _Optional[int] = ..., first_device_ns: _Optional[int] = ..., deviation: _Optional[float] = ..., tokens_per_step: _Optional[float] = ..., flops_per_step: _Optional[float] = ..., stall_ns: _Optional[int] = ...) -> None: ...

class KindAcrossRanks(_message.Message):
    __slots__ = ("kind", "calls", "device_ns", "host_ns", "exposed_ns", "bytes", "matched", "wait_ns", "transfer_ns", "ranks")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NS_FIELD_NUMBER: _ClassVar[int]
    HOST_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_NS_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    kind: _summary_pb2.CollectiveKind
    calls: int
    device_ns: int
    host_ns: int
    exposed_ns: int
    bytes: int
    matched: int
    wait_ns: int
    transfer_ns: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, kind: _Optional[_Union[_summary_pb2.CollectiveKind, str]] = ..., calls: _Optional[int] = ..., device_ns: _Optional[int] = ..., host_ns: _Optional[int] = ..., exposed_ns: _Optional[int] = ..., bytes: _Optional[int] = ..., matched: _Optional[int] = ..., wait_ns: _Optional[int] = ..., transfer_ns: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ...) -> None: ...

class CollectiveMember(_message.Message):
    __slots__ = ("rank", "ordinal", "duration_ns", "wait_ns", "start_unix_ns", "direction")
    RANK_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    rank: int
    ordinal: int
    duration_ns: int
    wait_ns: int
    start_unix_ns: int
    direction: _summary_pb2.P2PDirection
    def __init__(self, rank: _Optional[int] = ..., ordinal: _Optional[int] = ..., duration_ns: _Optional[int] = ..., wait_ns: _Optional[int] = ..., start_unix_ns: _Optional[int] = ..., direction: _Optional[_Union[_summary_pb2.P2PDirection, str]] = ...) -> None: ...

class MatchedCollective(_message.Message):
    __slots__ = ("step", "kind", "name", "transfer_ns", "last_rank", "members")
    STEP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_NS_FIELD_NUMBER: _ClassVar[int]
    LAST_RANK_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    step: int
    kind: _summary_pb2.CollectiveKind
    name: str
    transfer_ns: int
    last_rank: int
    members: _containers.RepeatedCompositeFieldContainer[CollectiveMember]
    def __init__(self, step: _Optional[int] = ..., kind: _Optional[_Union[_summary_pb2.CollectiveKind, str]] = ..., name: _Optional[str] = ..., transfer_ns: _Optional[int] = ..., last_rank: _Optional[int] = ..., members: _Optional[_Iterable[_Union[CollectiveMember, _Mapping]]] = ...) -> None: ...

class MatchingInfo(_message.Message):
    __slots__ = ("instances", "matched_instances", "method", "end_tolerance_ns", "coverage")
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MATCHED_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    END_TOLERANCE_NS_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    instances: int
    matched_instances: int
    method: str
    end_tolerance_ns: int
    coverage: _containers.RepeatedCompositeFieldContainer[KindCoverage]
    def __init__(self, instances: _Optional[int] = ..., matched_instances: _Optional[int] = ..., method: _Optional[str] = ..., end_tolerance_ns: _Optional[int] = ..., coverage: _Optional[_Iterable[_Union[KindCoverage, _Mapping]]] = ...) -> None: ...

class KindCoverage(_message.Message):
    __slots__ = ("kind", "instances", "matched")
    KIND_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    kind: _summary_pb2.CollectiveKind
    instances: int
    matched: int
    def __init__(self, kind: _Optional[_Union[_summary_pb2.CollectiveKind, str]] = ..., instances: _Optional[int] = ..., matched: _Optional[int] = ...) -> None: ...

class Straggler(_message.Message):
    __slots__ = ("rank", "worker", "net_caused_wait_ns", "caused_wait_ns", "own_wait_ns", "last_arrivals", "matched", "compute_ns", "peer_compute_ns", "compute_excess", "longer_compute", "reason", "pipeline_wait_excess_ns", "cause", "job_cost_ns", "absorbed", "label")
    RANK_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    NET_CAUSED_WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    CAUSED_WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    OWN_WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    LAST_ARRIVALS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    PEER_COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_EXCESS_FIELD_NUMBER: _ClassVar[int]
    LONGER_COMPUTE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_WAIT_EXCESS_NS_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    JOB_COST_NS_FIELD_NUMBER: _ClassVar[int]
    ABSORBED_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    rank: int
    worker: str
    net_caused_wait_ns: int
    caused_wait_ns: int
    own_wait_ns: int
    last_arrivals: int
    matched: int
    compute_ns: int
    peer_compute_ns: int
    compute_excess: float
    longer_compute: bool
    reason: str
    pipeline_wait_excess_ns: int
    cause: str
    job_cost_ns: int
    absorbed: bool
    label: str
    def __init__(self, rank: _Optional[int] = ..., worker: _Optional[str] = ..., net_caused_wait_ns: _Optional[int] = ..., caused_wait_ns: _Optional[int] = ..., own_wait_ns: _Optional[int] = ..., last_arrivals: _Optional[int] = ..., matched: _Optional[int] = ..., compute_ns: _Optional[int] = ..., peer_compute_ns: _Optional[int] = ..., compute_excess: _Optional[float] = ..., longer_compute: _Optional[bool] = ..., reason: _Optional[str] = ..., pipeline_wait_excess_ns: _Optional[int] = ..., cause: _Optional[str] = ..., job_cost_ns: _Optional[int] = ..., absorbed: _Optional[bool] = ..., label: _Optional[str] = ...) -> None: ...

class StragglerVerdict(_message.Message):
    __slots__ = ("found", "stragglers", "summary", "min_wait_fraction", "min_share_of_top", "compute_excess_threshold", "uncertain", "coverage", "min_rank_coverage", "rule")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    STRAGGLERS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MIN_WAIT_FRACTION_FIELD_NUMBER: _ClassVar[int]
    MIN_SHARE_OF_TOP_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_EXCESS_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    UNCERTAIN_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    MIN_RANK_COVERAGE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    found: bool
    stragglers: _containers.RepeatedCompositeFieldContainer[Straggler]
    summary: str
    min_wait_fraction: float
    min_share_of_top: float
    compute_excess_threshold: float
    uncertain: bool
    coverage: float
    min_rank_coverage: float
    rule: str
    def __init__(self, found: _Optional[bool] = ..., stragglers: _Optional[_Iterable[_Union[Straggler, _Mapping]]] = ..., summary: _Optional[str] = ..., min_wait_fraction: _Optional[float] = ..., min_share_of_top: _Optional[float] = ..., compute_excess_threshold: _Optional[float] = ..., uncertain: _Optional[bool] = ..., coverage: _Optional[float] = ..., min_rank_coverage: _Optional[float] = ..., rule: _Optional[str] = ...) -> None: ...

class PipelineStage(_message.Message):
    __slots__ = ("stage", "ranks", "step_time_ns", "compute_ns", "bubble_ns", "bubble_ratio", "flops_per_step")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_NS_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_RATIO_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    stage: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    step_time_ns: int
    compute_ns: int
    bubble_ns: int
    bubble_ratio: float
    flops_per_step: float
    def __init__(self, stage: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ..., step_time_ns: _Optional[int] = ..., compute_ns: _Optional[int] = ..., bubble_ns: _Optional[int] = ..., bubble_ratio: _Optional[float] = ..., flops_per_step: _Optional[float] = ...) -> None: ...

class PipelineView(_message.Message):
    __slots__ = ("present", "pipelines", "stages", "definition")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    PIPELINES_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    present: bool
    pipelines: int
    stages: _containers.RepeatedCompositeFieldContainer[PipelineStage]
    definition: str
    def __init__(self, present: _Optional[bool] = ..., pipelines: _Optional[int] = ..., stages: _Optional[_Iterable[_Union[PipelineStage, _Mapping]]] = ..., definition: _Optional[str] = ...) -> None: ...

class AdviceTrigger(_message.Message):
    __slots__ = ("metric", "value", "threshold", "unit", "rank")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    metric: str
    value: float
    threshold: float
    unit: str
    rank: int
    def __init__(self, metric: _Optional[str] = ..., value: _Optional[float] = ..., threshold: _Optional[float] = ..., unit: _Optional[str] = ..., rank: _Optional[int] = ...) -> None: ...

class Advice(_message.Message):
    __slots__ = ("rule", "title", "text", "triggers", "ranks")
    RULE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    rule: str
    title: str
    text: str
    triggers: _containers.RepeatedCompositeFieldContainer[AdviceTrigger]
    ranks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, rule: _Optional[str] = ..., title: _Optional[str] = ..., text: _Optional[str] = ..., triggers: _Optional[_Iterable[_Union[AdviceTrigger, _Mapping]]] = ..., ranks: _Optional[_Iterable[int]] = ...) -> None: ...
