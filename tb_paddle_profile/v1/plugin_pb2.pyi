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
    __slots__ = ("span", "file_name", "file_size", "state", "error", "cached")
    SPAN_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    span: str
    file_name: str
    file_size: int
    state: LoadState
    error: str
    cached: bool
    def __init__(self, span: _Optional[str] = ..., file_name: _Optional[str] = ..., file_size: _Optional[int] = ..., state: _Optional[_Union[LoadState, str]] = ..., error: _Optional[str] = ..., cached: _Optional[bool] = ...) -> None: ...

class WorkerEntry(_message.Message):
    __slots__ = ("worker", "rank", "hostname", "pid", "spans")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    hostname: str
    pid: int
    spans: _containers.RepeatedCompositeFieldContainer[SpanEntry]
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., hostname: _Optional[str] = ..., pid: _Optional[int] = ..., spans: _Optional[_Iterable[_Union[SpanEntry, _Mapping]]] = ...) -> None: ...

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
    __slots__ = ("worker", "rank", "state", "error", "total_time_ns", "distributed", "steps")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    state: LoadState
    error: str
    total_time_ns: int
    distributed: _summary_pb2.DistributedView
    steps: _containers.RepeatedCompositeFieldContainer[_summary_pb2.ModelStep]
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., state: _Optional[_Union[LoadState, str]] = ..., error: _Optional[str] = ..., total_time_ns: _Optional[int] = ..., distributed: _Optional[_Union[_summary_pb2.DistributedView, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[_summary_pb2.ModelStep, _Mapping]]] = ...) -> None: ...

class RunDistributed(_message.Message):
    __slots__ = ("run", "span", "ranks")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    ranks: _containers.RepeatedCompositeFieldContainer[RankDistributed]
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., ranks: _Optional[_Iterable[_Union[RankDistributed, _Mapping]]] = ...) -> None: ...
