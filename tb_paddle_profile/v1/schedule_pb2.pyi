from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SchedulePhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_PHASE_UNSPECIFIED: _ClassVar[SchedulePhase]
    SCHEDULE_PHASE_FORWARD: _ClassVar[SchedulePhase]
    SCHEDULE_PHASE_BACKWARD: _ClassVar[SchedulePhase]

class ScheduleKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_KIND_UNSPECIFIED: _ClassVar[ScheduleKind]
    SCHEDULE_KIND_NOT_PIPELINED: _ClassVar[ScheduleKind]
    SCHEDULE_KIND_UNKNOWN: _ClassVar[ScheduleKind]
    SCHEDULE_KIND_GPIPE: _ClassVar[ScheduleKind]
    SCHEDULE_KIND_1F1B: _ClassVar[ScheduleKind]
    SCHEDULE_KIND_INTERLEAVED: _ClassVar[ScheduleKind]

class BubbleKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUBBLE_KIND_UNSPECIFIED: _ClassVar[BubbleKind]
    BUBBLE_KIND_FILL_DRAIN: _ClassVar[BubbleKind]
    BUBBLE_KIND_WAIT: _ClassVar[BubbleKind]
SCHEDULE_PHASE_UNSPECIFIED: SchedulePhase
SCHEDULE_PHASE_FORWARD: SchedulePhase
SCHEDULE_PHASE_BACKWARD: SchedulePhase
SCHEDULE_KIND_UNSPECIFIED: ScheduleKind
SCHEDULE_KIND_NOT_PIPELINED: ScheduleKind
SCHEDULE_KIND_UNKNOWN: ScheduleKind
SCHEDULE_KIND_GPIPE: ScheduleKind
SCHEDULE_KIND_1F1B: ScheduleKind
SCHEDULE_KIND_INTERLEAVED: ScheduleKind
BUBBLE_KIND_UNSPECIFIED: BubbleKind
BUBBLE_KIND_FILL_DRAIN: BubbleKind
BUBBLE_KIND_WAIT: BubbleKind

class ScheduleSlot(_message.Message):
    __slots__ = ("phase", "micro_batch", "chunk", "start_unix_ns", "end_unix_ns", "busy_ns")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    END_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    BUSY_NS_FIELD_NUMBER: _ClassVar[int]
    phase: SchedulePhase
    micro_batch: int
    chunk: int
    start_unix_ns: int
    end_unix_ns: int
    busy_ns: int
    def __init__(self, phase: _Optional[_Union[SchedulePhase, str]] = ..., micro_batch: _Optional[int] = ..., chunk: _Optional[int] = ..., start_unix_ns: _Optional[int] = ..., end_unix_ns: _Optional[int] = ..., busy_ns: _Optional[int] = ...) -> None: ...

class ScheduleBubble(_message.Message):
    __slots__ = ("kind", "start_unix_ns", "end_unix_ns", "duration_ns")
    KIND_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    END_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    kind: BubbleKind
    start_unix_ns: int
    end_unix_ns: int
    duration_ns: int
    def __init__(self, kind: _Optional[_Union[BubbleKind, str]] = ..., start_unix_ns: _Optional[int] = ..., end_unix_ns: _Optional[int] = ..., duration_ns: _Optional[int] = ...) -> None: ...

class StageStep(_message.Message):
    __slots__ = ("stage", "step", "rank", "worker", "start_unix_ns", "end_unix_ns", "slots", "bubbles", "span_ns", "slots_ns", "fill_drain_ns", "wait_ns", "ideal_idle_ns")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    END_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    BUBBLES_FIELD_NUMBER: _ClassVar[int]
    SPAN_NS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_NS_FIELD_NUMBER: _ClassVar[int]
    FILL_DRAIN_NS_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    IDEAL_IDLE_NS_FIELD_NUMBER: _ClassVar[int]
    stage: int
    step: int
    rank: int
    worker: str
    start_unix_ns: int
    end_unix_ns: int
    slots: _containers.RepeatedCompositeFieldContainer[ScheduleSlot]
    bubbles: _containers.RepeatedCompositeFieldContainer[ScheduleBubble]
    span_ns: int
    slots_ns: int
    fill_drain_ns: int
    wait_ns: int
    ideal_idle_ns: int
    def __init__(self, stage: _Optional[int] = ..., step: _Optional[int] = ..., rank: _Optional[int] = ..., worker: _Optional[str] = ..., start_unix_ns: _Optional[int] = ..., end_unix_ns: _Optional[int] = ..., slots: _Optional[_Iterable[_Union[ScheduleSlot, _Mapping]]] = ..., bubbles: _Optional[_Iterable[_Union[ScheduleBubble, _Mapping]]] = ..., span_ns: _Optional[int] = ..., slots_ns: _Optional[int] = ..., fill_drain_ns: _Optional[int] = ..., wait_ns: _Optional[int] = ..., ideal_idle_ns: _Optional[int] = ...) -> None: ...

class SchedulePipeline(_message.Message):
    __slots__ = ("index", "ranks", "dp", "mp", "stage_steps", "wait_ns", "matches_schedule")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    DP_FIELD_NUMBER: _ClassVar[int]
    MP_FIELD_NUMBER: _ClassVar[int]
    STAGE_STEPS_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    MATCHES_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    index: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    dp: int
    mp: int
    stage_steps: _containers.RepeatedCompositeFieldContainer[StageStep]
    wait_ns: int
    matches_schedule: bool
    def __init__(self, index: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ..., dp: _Optional[int] = ..., mp: _Optional[int] = ..., stage_steps: _Optional[_Iterable[_Union[StageStep, _Mapping]]] = ..., wait_ns: _Optional[int] = ..., matches_schedule: _Optional[bool] = ...) -> None: ...

class StageTotals(_message.Message):
    __slots__ = ("stage", "span_ns", "slots_ns", "fill_drain_ns", "wait_ns", "bubble_ratio", "forward_ns", "backward_ns", "worst_pipeline", "worst_rank", "worst_wait_ns", "worst_fill_drain_ns")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    SPAN_NS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_NS_FIELD_NUMBER: _ClassVar[int]
    FILL_DRAIN_NS_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_RATIO_FIELD_NUMBER: _ClassVar[int]
    FORWARD_NS_FIELD_NUMBER: _ClassVar[int]
    BACKWARD_NS_FIELD_NUMBER: _ClassVar[int]
    WORST_PIPELINE_FIELD_NUMBER: _ClassVar[int]
    WORST_RANK_FIELD_NUMBER: _ClassVar[int]
    WORST_WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    WORST_FILL_DRAIN_NS_FIELD_NUMBER: _ClassVar[int]
    stage: int
    span_ns: int
    slots_ns: int
    fill_drain_ns: int
    wait_ns: int
    bubble_ratio: float
    forward_ns: int
    backward_ns: int
    worst_pipeline: int
    worst_rank: int
    worst_wait_ns: int
    worst_fill_drain_ns: int
    def __init__(self, stage: _Optional[int] = ..., span_ns: _Optional[int] = ..., slots_ns: _Optional[int] = ..., fill_drain_ns: _Optional[int] = ..., wait_ns: _Optional[int] = ..., bubble_ratio: _Optional[float] = ..., forward_ns: _Optional[int] = ..., backward_ns: _Optional[int] = ..., worst_pipeline: _Optional[int] = ..., worst_rank: _Optional[int] = ..., worst_wait_ns: _Optional[int] = ..., worst_fill_drain_ns: _Optional[int] = ...) -> None: ...

class PipelineSchedule(_message.Message):
    __slots__ = ("kind", "name", "why", "stages", "micro_batches", "chunks", "steps", "pipelines", "pipelines_total", "stage_totals", "theory_fill_drain_ns", "identity", "bubble_definition", "notes", "drawn_pipeline", "drawn_step")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    PIPELINES_FIELD_NUMBER: _ClassVar[int]
    PIPELINES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    STAGE_TOTALS_FIELD_NUMBER: _ClassVar[int]
    THEORY_FILL_DRAIN_NS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    BUBBLE_DEFINITION_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    DRAWN_PIPELINE_FIELD_NUMBER: _ClassVar[int]
    DRAWN_STEP_FIELD_NUMBER: _ClassVar[int]
    kind: ScheduleKind
    name: str
    why: str
    stages: int
    micro_batches: int
    chunks: int
    steps: _containers.RepeatedScalarFieldContainer[int]
    pipelines: _containers.RepeatedCompositeFieldContainer[SchedulePipeline]
    pipelines_total: int
    stage_totals: _containers.RepeatedCompositeFieldContainer[StageTotals]
    theory_fill_drain_ns: int
    identity: str
    bubble_definition: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    drawn_pipeline: int
    drawn_step: int
    def __init__(self, kind: _Optional[_Union[ScheduleKind, str]] = ..., name: _Optional[str] = ..., why: _Optional[str] = ..., stages: _Optional[int] = ..., micro_batches: _Optional[int] = ..., chunks: _Optional[int] = ..., steps: _Optional[_Iterable[int]] = ..., pipelines: _Optional[_Iterable[_Union[SchedulePipeline, _Mapping]]] = ..., pipelines_total: _Optional[int] = ..., stage_totals: _Optional[_Iterable[_Union[StageTotals, _Mapping]]] = ..., theory_fill_drain_ns: _Optional[int] = ..., identity: _Optional[str] = ..., bubble_definition: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ..., drawn_pipeline: _Optional[int] = ..., drawn_step: _Optional[int] = ...) -> None: ...

class RankMfu(_message.Message):
    __slots__ = ("rank", "device_name", "peak_flops", "step_time_ns", "flops_per_step", "mfu")
    RANK_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    PEAK_FLOPS_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    rank: int
    device_name: str
    peak_flops: float
    step_time_ns: int
    flops_per_step: float
    mfu: float
    def __init__(self, rank: _Optional[int] = ..., device_name: _Optional[str] = ..., peak_flops: _Optional[float] = ..., step_time_ns: _Optional[int] = ..., flops_per_step: _Optional[float] = ..., mfu: _Optional[float] = ...) -> None: ...

class Mfu(_message.Message):
    __slots__ = ("applicable", "why_not", "params", "tokens_per_step", "params_source", "tokens_source", "formulas", "assumptions", "device_name", "peak_flops_per_device", "peak_source", "devices", "step_time_ns", "model_flops_per_step", "achieved_flops", "mfu", "ranks", "stages")
    APPLICABLE_FIELD_NUMBER: _ClassVar[int]
    WHY_NOT_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    PARAMS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    FORMULAS_FIELD_NUMBER: _ClassVar[int]
    ASSUMPTIONS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    PEAK_FLOPS_PER_DEVICE_FIELD_NUMBER: _ClassVar[int]
    PEAK_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    ACHIEVED_FLOPS_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    applicable: bool
    why_not: str
    params: float
    tokens_per_step: float
    params_source: str
    tokens_source: str
    formulas: _containers.RepeatedScalarFieldContainer[str]
    assumptions: _containers.RepeatedScalarFieldContainer[str]
    device_name: str
    peak_flops_per_device: float
    peak_source: str
    devices: int
    step_time_ns: int
    model_flops_per_step: float
    achieved_flops: float
    mfu: float
    ranks: _containers.RepeatedCompositeFieldContainer[RankMfu]
    stages: _containers.RepeatedCompositeFieldContainer[StageMfu]
    def __init__(self, applicable: _Optional[bool] = ..., why_not: _Optional[str] = ..., params: _Optional[float] = ..., tokens_per_step: _Optional[float] = ..., params_source: _Optional[str] = ..., tokens_source: _Optional[str] = ..., formulas: _Optional[_Iterable[str]] = ..., assumptions: _Optional[_Iterable[str]] = ..., device_name: _Optional[str] = ..., peak_flops_per_device: _Optional[float] = ..., peak_source: _Optional[str] = ..., devices: _Optional[int] = ..., step_time_ns: _Optional[int] = ..., model_flops_per_step: _Optional[float] = ..., achieved_flops: _Optional[float] = ..., mfu: _Optional[float] = ..., ranks: _Optional[_Iterable[_Union[RankMfu, _Mapping]]] = ..., stages: _Optional[_Iterable[_Union[StageMfu, _Mapping]]] = ...) -> None: ...

class StageMfu(_message.Message):
    __slots__ = ("stage", "ranks", "flops_per_step", "step_time_ns", "peak_flops", "mfu")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PEAK_FLOPS_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    stage: int
    ranks: _containers.RepeatedScalarFieldContainer[int]
    flops_per_step: float
    step_time_ns: int
    peak_flops: float
    mfu: float
    def __init__(self, stage: _Optional[int] = ..., ranks: _Optional[_Iterable[int]] = ..., flops_per_step: _Optional[float] = ..., step_time_ns: _Optional[int] = ..., peak_flops: _Optional[float] = ..., mfu: _Optional[float] = ...) -> None: ...
