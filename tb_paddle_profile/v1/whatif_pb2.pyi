from tb_paddle_profile.v1 import display_pb2 as _display_pb2
from tb_paddle_profile.v1 import schedule_pb2 as _schedule_pb2
from tb_paddle_profile.v1 import summary_pb2 as _summary_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PathKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PATH_KIND_UNSPECIFIED: _ClassVar[PathKind]
    PATH_COMPUTE: _ClassVar[PathKind]
    PATH_COMMUNICATION: _ClassVar[PathKind]
    PATH_MEMCPY: _ClassVar[PathKind]
    PATH_HOST: _ClassVar[PathKind]
    PATH_WAITING: _ClassVar[PathKind]

class WhatIfKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WHAT_IF_KIND_UNSPECIFIED: _ClassVar[WhatIfKind]
    WHAT_IF_DP_OVERLAP: _ClassVar[WhatIfKind]
    WHAT_IF_STRAGGLER: _ClassVar[WhatIfKind]
    WHAT_IF_BALANCED_STAGES: _ClassVar[WhatIfKind]
    WHAT_IF_DOUBLE_MICRO_BATCHES: _ClassVar[WhatIfKind]
    WHAT_IF_NO_LAUNCH_OVERHEAD: _ClassVar[WhatIfKind]
    WHAT_IF_BALANCED_SEQUENCES: _ClassVar[WhatIfKind]
PATH_KIND_UNSPECIFIED: PathKind
PATH_COMPUTE: PathKind
PATH_COMMUNICATION: PathKind
PATH_MEMCPY: PathKind
PATH_HOST: PathKind
PATH_WAITING: PathKind
WHAT_IF_KIND_UNSPECIFIED: WhatIfKind
WHAT_IF_DP_OVERLAP: WhatIfKind
WHAT_IF_STRAGGLER: WhatIfKind
WHAT_IF_BALANCED_STAGES: WhatIfKind
WHAT_IF_DOUBLE_MICRO_BATCHES: WhatIfKind
WHAT_IF_NO_LAUNCH_OVERHEAD: WhatIfKind
WHAT_IF_BALANCED_SEQUENCES: WhatIfKind

class CriticalSegment(_message.Message):
    __slots__ = ("rank", "step", "start_unix_ns", "end_unix_ns", "kind", "collective_kind", "name", "stream", "merged", "worker")
    RANK_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    END_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    MERGED_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    rank: int
    step: int
    start_unix_ns: int
    end_unix_ns: int
    kind: PathKind
    collective_kind: _summary_pb2.CollectiveKind
    name: str
    stream: int
    merged: int
    worker: str
    def __init__(self, rank: _Optional[int] = ..., step: _Optional[int] = ..., start_unix_ns: _Optional[int] = ..., end_unix_ns: _Optional[int] = ..., kind: _Optional[_Union[PathKind, str]] = ..., collective_kind: _Optional[_Union[_summary_pb2.CollectiveKind, str]] = ..., name: _Optional[str] = ..., stream: _Optional[int] = ..., merged: _Optional[int] = ..., worker: _Optional[str] = ...) -> None: ...

class PathPart(_message.Message):
    __slots__ = ("key", "rank", "kind", "collective_kind", "ns", "fraction")
    KEY_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_KIND_FIELD_NUMBER: _ClassVar[int]
    NS_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    key: str
    rank: int
    kind: PathKind
    collective_kind: _summary_pb2.CollectiveKind
    ns: int
    fraction: float
    def __init__(self, key: _Optional[str] = ..., rank: _Optional[int] = ..., kind: _Optional[_Union[PathKind, str]] = ..., collective_kind: _Optional[_Union[_summary_pb2.CollectiveKind, str]] = ..., ns: _Optional[int] = ..., fraction: _Optional[float] = ...) -> None: ...

class PathBreakdown(_message.Message):
    __slots__ = ("length_ns", "by_kind", "by_rank", "by_operator")
    LENGTH_NS_FIELD_NUMBER: _ClassVar[int]
    BY_KIND_FIELD_NUMBER: _ClassVar[int]
    BY_RANK_FIELD_NUMBER: _ClassVar[int]
    BY_OPERATOR_FIELD_NUMBER: _ClassVar[int]
    length_ns: int
    by_kind: _containers.RepeatedCompositeFieldContainer[PathPart]
    by_rank: _containers.RepeatedCompositeFieldContainer[PathPart]
    by_operator: _containers.RepeatedCompositeFieldContainer[PathPart]
    def __init__(self, length_ns: _Optional[int] = ..., by_kind: _Optional[_Iterable[_Union[PathPart, _Mapping]]] = ..., by_rank: _Optional[_Iterable[_Union[PathPart, _Mapping]]] = ..., by_operator: _Optional[_Iterable[_Union[PathPart, _Mapping]]] = ...) -> None: ...

class StepPath(_message.Message):
    __slots__ = ("step", "end_rank", "observed_ns", "replayed_ns", "breakdown")
    STEP_FIELD_NUMBER: _ClassVar[int]
    END_RANK_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_NS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_NS_FIELD_NUMBER: _ClassVar[int]
    BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    step: int
    end_rank: int
    observed_ns: int
    replayed_ns: int
    breakdown: PathBreakdown
    def __init__(self, step: _Optional[int] = ..., end_rank: _Optional[int] = ..., observed_ns: _Optional[int] = ..., replayed_ns: _Optional[int] = ..., breakdown: _Optional[_Union[PathBreakdown, _Mapping]] = ...) -> None: ...

class CriticalPath(_message.Message):
    __slots__ = ("steps", "total", "segments", "segments_capped", "observed_step_ns", "replayed_step_ns", "replay_error", "nodes")
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_CAPPED_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_STEP_NS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_STEP_NS_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ERROR_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[StepPath]
    total: PathBreakdown
    segments: _containers.RepeatedCompositeFieldContainer[CriticalSegment]
    segments_capped: bool
    observed_step_ns: int
    replayed_step_ns: int
    replay_error: float
    nodes: int
    def __init__(self, steps: _Optional[_Iterable[_Union[StepPath, _Mapping]]] = ..., total: _Optional[_Union[PathBreakdown, _Mapping]] = ..., segments: _Optional[_Iterable[_Union[CriticalSegment, _Mapping]]] = ..., segments_capped: _Optional[bool] = ..., observed_step_ns: _Optional[int] = ..., replayed_step_ns: _Optional[int] = ..., replay_error: _Optional[float] = ..., nodes: _Optional[int] = ...) -> None: ...

class WhatIf(_message.Message):
    __slots__ = ("kind", "title", "applicable", "reason", "step_ns", "new_step_ns", "saving_ns", "saving_fraction", "assumption", "per_sample", "rank")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    APPLICABLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STEP_NS_FIELD_NUMBER: _ClassVar[int]
    NEW_STEP_NS_FIELD_NUMBER: _ClassVar[int]
    SAVING_NS_FIELD_NUMBER: _ClassVar[int]
    SAVING_FRACTION_FIELD_NUMBER: _ClassVar[int]
    ASSUMPTION_FIELD_NUMBER: _ClassVar[int]
    PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    kind: WhatIfKind
    title: str
    applicable: bool
    reason: str
    step_ns: int
    new_step_ns: int
    saving_ns: int
    saving_fraction: float
    assumption: str
    per_sample: bool
    rank: int
    def __init__(self, kind: _Optional[_Union[WhatIfKind, str]] = ..., title: _Optional[str] = ..., applicable: _Optional[bool] = ..., reason: _Optional[str] = ..., step_ns: _Optional[int] = ..., new_step_ns: _Optional[int] = ..., saving_ns: _Optional[int] = ..., saving_fraction: _Optional[float] = ..., assumption: _Optional[str] = ..., per_sample: _Optional[bool] = ..., rank: _Optional[int] = ...) -> None: ...

class RunWhatIf(_message.Message):
    __slots__ = ("run", "span", "critical_path", "what_ifs", "schedule", "mfu", "display", "notes", "ranks")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    CRITICAL_PATH_FIELD_NUMBER: _ClassVar[int]
    WHAT_IFS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    critical_path: CriticalPath
    what_ifs: _containers.RepeatedCompositeFieldContainer[WhatIf]
    schedule: _schedule_pb2.PipelineSchedule
    mfu: _schedule_pb2.Mfu
    display: _display_pb2.Display
    notes: _containers.RepeatedScalarFieldContainer[str]
    ranks: int
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., critical_path: _Optional[_Union[CriticalPath, _Mapping]] = ..., what_ifs: _Optional[_Iterable[_Union[WhatIf, _Mapping]]] = ..., schedule: _Optional[_Union[_schedule_pb2.PipelineSchedule, _Mapping]] = ..., mfu: _Optional[_Union[_schedule_pb2.Mfu, _Mapping]] = ..., display: _Optional[_Union[_display_pb2.Display, _Mapping]] = ..., notes: _Optional[_Iterable[str]] = ..., ranks: _Optional[int] = ...) -> None: ...
