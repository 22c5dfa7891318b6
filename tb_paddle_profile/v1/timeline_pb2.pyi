from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TrackKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACK_KIND_UNSPECIFIED: _ClassVar[TrackKind]
    HOST_THREAD: _ClassVar[TrackKind]
    GPU_STREAM: _ClassVar[TrackKind]
TRACK_KIND_UNSPECIFIED: TrackKind
HOST_THREAD: TrackKind
GPU_STREAM: TrackKind

class TimelineTrack(_message.Message):
    __slots__ = ("id", "kind", "label", "depth", "tid", "device", "stream", "events")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    TID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    id: int
    kind: TrackKind
    label: str
    depth: int
    tid: int
    device: int
    stream: int
    events: int
    def __init__(self, id: _Optional[int] = ..., kind: _Optional[_Union[TrackKind, str]] = ..., label: _Optional[str] = ..., depth: _Optional[int] = ..., tid: _Optional[int] = ..., device: _Optional[int] = ..., stream: _Optional[int] = ..., events: _Optional[int] = ...) -> None: ...

class TimelineLane(_message.Message):
    __slots__ = ("track", "depth", "start_deltas", "durations", "names", "counts", "id_deltas", "types", "matches", "dropped")
    TRACK_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    START_DELTAS_FIELD_NUMBER: _ClassVar[int]
    DURATIONS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    ID_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    track: int
    depth: int
    start_deltas: _containers.RepeatedScalarFieldContainer[int]
    durations: _containers.RepeatedScalarFieldContainer[int]
    names: _containers.RepeatedScalarFieldContainer[int]
    counts: _containers.RepeatedScalarFieldContainer[int]
    id_deltas: _containers.RepeatedScalarFieldContainer[int]
    types: _containers.RepeatedScalarFieldContainer[int]
    matches: _containers.RepeatedScalarFieldContainer[int]
    dropped: int
    def __init__(self, track: _Optional[int] = ..., depth: _Optional[int] = ..., start_deltas: _Optional[_Iterable[int]] = ..., durations: _Optional[_Iterable[int]] = ..., names: _Optional[_Iterable[int]] = ..., counts: _Optional[_Iterable[int]] = ..., id_deltas: _Optional[_Iterable[int]] = ..., types: _Optional[_Iterable[int]] = ..., matches: _Optional[_Iterable[int]] = ..., dropped: _Optional[int] = ...) -> None: ...

class TimelineFlow(_message.Message):
    __slots__ = ("rank", "src_track", "src_depth", "src_start_ns", "src_id", "dst_track", "dst_depth", "dst_start_ns", "dst_id")
    RANK_FIELD_NUMBER: _ClassVar[int]
    SRC_TRACK_FIELD_NUMBER: _ClassVar[int]
    SRC_DEPTH_FIELD_NUMBER: _ClassVar[int]
    SRC_START_NS_FIELD_NUMBER: _ClassVar[int]
    SRC_ID_FIELD_NUMBER: _ClassVar[int]
    DST_TRACK_FIELD_NUMBER: _ClassVar[int]
    DST_DEPTH_FIELD_NUMBER: _ClassVar[int]
    DST_START_NS_FIELD_NUMBER: _ClassVar[int]
    DST_ID_FIELD_NUMBER: _ClassVar[int]
    rank: int
    src_track: int
    src_depth: int
    src_start_ns: int
    src_id: int
    dst_track: int
    dst_depth: int
    dst_start_ns: int
    dst_id: int
    def __init__(self, rank: _Optional[int] = ..., src_track: _Optional[int] = ..., src_depth: _Optional[int] = ..., src_start_ns: _Optional[int] = ..., src_id: _Optional[int] = ..., dst_track: _Optional[int] = ..., dst_depth: _Optional[int] = ..., dst_start_ns: _Optional[int] = ..., dst_id: _Optional[int] = ...) -> None: ...

class TimelineCounter(_message.Message):
    __slots__ = ("kind", "label", "unit", "device", "values", "max_value", "min_value")
    KIND_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    MAX_VALUE_FIELD_NUMBER: _ClassVar[int]
    MIN_VALUE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    label: str
    unit: str
    device: int
    values: _containers.RepeatedScalarFieldContainer[float]
    max_value: float
    min_value: float
    def __init__(self, kind: _Optional[str] = ..., label: _Optional[str] = ..., unit: _Optional[str] = ..., device: _Optional[int] = ..., values: _Optional[_Iterable[float]] = ..., max_value: _Optional[float] = ..., min_value: _Optional[float] = ...) -> None: ...

class TimelineRank(_message.Message):
    __slots__ = ("worker", "rank", "offset_ns", "start_ns", "end_ns", "tracks", "lanes", "state", "events_in_window", "file_name", "clock_offset_ns", "counters")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    OFFSET_NS_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    TRACKS_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_IN_WINDOW_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    CLOCK_OFFSET_NS_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    offset_ns: int
    start_ns: int
    end_ns: int
    tracks: _containers.RepeatedCompositeFieldContainer[TimelineTrack]
    lanes: _containers.RepeatedCompositeFieldContainer[TimelineLane]
    state: str
    events_in_window: int
    file_name: str
    clock_offset_ns: int
    counters: _containers.RepeatedCompositeFieldContainer[TimelineCounter]
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., offset_ns: _Optional[int] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., tracks: _Optional[_Iterable[_Union[TimelineTrack, _Mapping]]] = ..., lanes: _Optional[_Iterable[_Union[TimelineLane, _Mapping]]] = ..., state: _Optional[str] = ..., events_in_window: _Optional[int] = ..., file_name: _Optional[str] = ..., clock_offset_ns: _Optional[int] = ..., counters: _Optional[_Iterable[_Union[TimelineCounter, _Mapping]]] = ...) -> None: ...

class TimelineWindow(_message.Message):
    __slots__ = ("run", "span", "base_unix_ns", "window_start_ns", "window_end_ns", "px", "resolution_ns", "names", "types", "ranks", "range_start_ns", "range_end_ns", "flows", "flows_dropped", "query", "ranks_total", "rank_offset")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    BASE_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_START_NS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_END_NS_FIELD_NUMBER: _ClassVar[int]
    PX_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_NS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    RANGE_START_NS_FIELD_NUMBER: _ClassVar[int]
    RANGE_END_NS_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    FLOWS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RANKS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RANK_OFFSET_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    base_unix_ns: int
    window_start_ns: int
    window_end_ns: int
    px: int
    resolution_ns: float
    names: _containers.RepeatedScalarFieldContainer[str]
    types: _containers.RepeatedScalarFieldContainer[str]
    ranks: _containers.RepeatedCompositeFieldContainer[TimelineRank]
    range_start_ns: int
    range_end_ns: int
    flows: _containers.RepeatedCompositeFieldContainer[TimelineFlow]
    flows_dropped: int
    query: str
    ranks_total: int
    rank_offset: int
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., base_unix_ns: _Optional[int] = ..., window_start_ns: _Optional[int] = ..., window_end_ns: _Optional[int] = ..., px: _Optional[int] = ..., resolution_ns: _Optional[float] = ..., names: _Optional[_Iterable[str]] = ..., types: _Optional[_Iterable[str]] = ..., ranks: _Optional[_Iterable[_Union[TimelineRank, _Mapping]]] = ..., range_start_ns: _Optional[int] = ..., range_end_ns: _Optional[int] = ..., flows: _Optional[_Iterable[_Union[TimelineFlow, _Mapping]]] = ..., flows_dropped: _Optional[int] = ..., query: _Optional[str] = ..., ranks_total: _Optional[int] = ..., rank_offset: _Optional[int] = ...) -> None: ...

class TimelineArg(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class TimelineRef(_message.Message):
    __slots__ = ("worker", "id", "name", "type", "start_ns", "end_ns", "track", "depth", "relation")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    TRACK_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    worker: str
    id: int
    name: str
    type: str
    start_ns: int
    end_ns: int
    track: int
    depth: int
    relation: str
    def __init__(self, worker: _Optional[str] = ..., id: _Optional[int] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., track: _Optional[int] = ..., depth: _Optional[int] = ..., relation: _Optional[str] = ...) -> None: ...

class TimelineEvent(_message.Message):
    __slots__ = ("worker", "id", "name", "type", "start_ns", "end_ns", "track", "depth", "track_label", "correlation_id", "args", "operator", "related", "base_unix_ns")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    TRACK_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    TRACK_LABEL_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    RELATED_FIELD_NUMBER: _ClassVar[int]
    BASE_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    worker: str
    id: int
    name: str
    type: str
    start_ns: int
    end_ns: int
    track: int
    depth: int
    track_label: str
    correlation_id: int
    args: _containers.RepeatedCompositeFieldContainer[TimelineArg]
    operator: str
    related: _containers.RepeatedCompositeFieldContainer[TimelineRef]
    base_unix_ns: int
    def __init__(self, worker: _Optional[str] = ..., id: _Optional[int] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., track: _Optional[int] = ..., depth: _Optional[int] = ..., track_label: _Optional[str] = ..., correlation_id: _Optional[int] = ..., args: _Optional[_Iterable[_Union[TimelineArg, _Mapping]]] = ..., operator: _Optional[str] = ..., related: _Optional[_Iterable[_Union[TimelineRef, _Mapping]]] = ..., base_unix_ns: _Optional[int] = ...) -> None: ...

class TimelineMatch(_message.Message):
    __slots__ = ("worker", "id", "name", "start_ns", "end_ns", "track", "depth")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    TRACK_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    worker: str
    id: int
    name: str
    start_ns: int
    end_ns: int
    track: int
    depth: int
    def __init__(self, worker: _Optional[str] = ..., id: _Optional[int] = ..., name: _Optional[str] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., track: _Optional[int] = ..., depth: _Optional[int] = ...) -> None: ...

class TimelineSearch(_message.Message):
    __slots__ = ("query", "total", "matches", "base_unix_ns", "first_start_ns", "last_end_ns")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    BASE_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    FIRST_START_NS_FIELD_NUMBER: _ClassVar[int]
    LAST_END_NS_FIELD_NUMBER: _ClassVar[int]
    query: str
    total: int
    matches: _containers.RepeatedCompositeFieldContainer[TimelineMatch]
    base_unix_ns: int
    first_start_ns: int
    last_end_ns: int
    def __init__(self, query: _Optional[str] = ..., total: _Optional[int] = ..., matches: _Optional[_Iterable[_Union[TimelineMatch, _Mapping]]] = ..., base_unix_ns: _Optional[int] = ..., first_start_ns: _Optional[int] = ..., last_end_ns: _Optional[int] = ...) -> None: ...

class TimelineRangeRow(_message.Message):
    __slots__ = ("name", "type", "count", "total_ns", "overlap_ns")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_NS_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    count: int
    total_ns: int
    overlap_ns: int
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., count: _Optional[int] = ..., total_ns: _Optional[int] = ..., overlap_ns: _Optional[int] = ...) -> None: ...

class TimelineRange(_message.Message):
    __slots__ = ("start_ns", "end_ns", "events", "rows")
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    start_ns: int
    end_ns: int
    events: int
    rows: _containers.RepeatedCompositeFieldContainer[TimelineRangeRow]
    def __init__(self, start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., events: _Optional[int] = ..., rows: _Optional[_Iterable[_Union[TimelineRangeRow, _Mapping]]] = ...) -> None: ...

class TimelineInstanceMember(_message.Message):
    __slots__ = ("rank", "worker", "ordinal", "duration_ns", "wait_ns", "start_ns", "end_ns", "start_unix_ns", "direction", "last", "found", "id", "track", "depth", "arrival_ns")
    RANK_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    WAIT_NS_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TRACK_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_NS_FIELD_NUMBER: _ClassVar[int]
    rank: int
    worker: str
    ordinal: int
    duration_ns: int
    wait_ns: int
    start_ns: int
    end_ns: int
    start_unix_ns: int
    direction: str
    last: bool
    found: bool
    id: int
    track: int
    depth: int
    arrival_ns: int
    def __init__(self, rank: _Optional[int] = ..., worker: _Optional[str] = ..., ordinal: _Optional[int] = ..., duration_ns: _Optional[int] = ..., wait_ns: _Optional[int] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., start_unix_ns: _Optional[int] = ..., direction: _Optional[str] = ..., last: _Optional[bool] = ..., found: _Optional[bool] = ..., id: _Optional[int] = ..., track: _Optional[int] = ..., depth: _Optional[int] = ..., arrival_ns: _Optional[int] = ...) -> None: ...

class TimelineInstance(_message.Message):
    __slots__ = ("run", "span", "analysis_key", "base_unix_ns", "matched", "note", "index", "step", "kind", "name", "transfer_ns", "last_rank", "members")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_KEY_FIELD_NUMBER: _ClassVar[int]
    BASE_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_NS_FIELD_NUMBER: _ClassVar[int]
    LAST_RANK_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    analysis_key: str
    base_unix_ns: int
    matched: bool
    note: str
    index: int
    step: int
    kind: str
    name: str
    transfer_ns: int
    last_rank: int
    members: _containers.RepeatedCompositeFieldContainer[TimelineInstanceMember]
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., analysis_key: _Optional[str] = ..., base_unix_ns: _Optional[int] = ..., matched: _Optional[bool] = ..., note: _Optional[str] = ..., index: _Optional[int] = ..., step: _Optional[int] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., transfer_ns: _Optional[int] = ..., last_rank: _Optional[int] = ..., members: _Optional[_Iterable[_Union[TimelineInstanceMember, _Mapping]]] = ...) -> None: ...

class CompactRow(_message.Message):
    __slots__ = ("worker", "rank", "state", "zero_unix_ns", "step_start_ns", "step_end_ns", "compute", "communication", "compute_share", "communication_share", "origin_offset_ns", "on_collective", "host_side")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ZERO_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    STEP_START_NS_FIELD_NUMBER: _ClassVar[int]
    STEP_END_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_SHARE_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_SHARE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_OFFSET_NS_FIELD_NUMBER: _ClassVar[int]
    ON_COLLECTIVE_FIELD_NUMBER: _ClassVar[int]
    HOST_SIDE_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    state: str
    zero_unix_ns: int
    step_start_ns: int
    step_end_ns: int
    compute: _containers.RepeatedScalarFieldContainer[float]
    communication: _containers.RepeatedScalarFieldContainer[float]
    compute_share: float
    communication_share: float
    origin_offset_ns: int
    on_collective: bool
    host_side: bool
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., state: _Optional[str] = ..., zero_unix_ns: _Optional[int] = ..., step_start_ns: _Optional[int] = ..., step_end_ns: _Optional[int] = ..., compute: _Optional[_Iterable[float]] = ..., communication: _Optional[_Iterable[float]] = ..., compute_share: _Optional[float] = ..., communication_share: _Optional[float] = ..., origin_offset_ns: _Optional[int] = ..., on_collective: _Optional[bool] = ..., host_side: _Optional[bool] = ...) -> None: ...

class CompactRank(_message.Message):
    __slots__ = ("worker", "rank", "label", "role")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    worker: str
    rank: int
    label: str
    role: str
    def __init__(self, worker: _Optional[str] = ..., rank: _Optional[int] = ..., label: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class CompactSegment(_message.Message):
    __slots__ = ("worker", "start_ns", "end_ns", "kind", "name")
    WORKER_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    worker: str
    start_ns: int
    end_ns: int
    kind: str
    name: str
    def __init__(self, worker: _Optional[str] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class TimelineCompact(_message.Message):
    __slots__ = ("run", "span", "analysis_key", "step", "steps", "align", "window_start_ns", "window_end_ns", "bins", "order", "rank_offset", "rows", "why", "critical", "critical_known", "note", "align_kind", "align_kinds", "host_note")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_KEY_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    ALIGN_FIELD_NUMBER: _ClassVar[int]
    WINDOW_START_NS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_END_NS_FIELD_NUMBER: _ClassVar[int]
    BINS_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    RANK_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    CRITICAL_FIELD_NUMBER: _ClassVar[int]
    CRITICAL_KNOWN_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    ALIGN_KIND_FIELD_NUMBER: _ClassVar[int]
    ALIGN_KINDS_FIELD_NUMBER: _ClassVar[int]
    HOST_NOTE_FIELD_NUMBER: _ClassVar[int]
    run: str
    span: str
    analysis_key: str
    step: int
    steps: _containers.RepeatedScalarFieldContainer[int]
    align: str
    window_start_ns: int
    window_end_ns: int
    bins: int
    order: _containers.RepeatedCompositeFieldContainer[CompactRank]
    rank_offset: int
    rows: _containers.RepeatedCompositeFieldContainer[CompactRow]
    why: str
    critical: _containers.RepeatedCompositeFieldContainer[CompactSegment]
    critical_known: bool
    note: str
    align_kind: str
    align_kinds: _containers.RepeatedScalarFieldContainer[str]
    host_note: str
    def __init__(self, run: _Optional[str] = ..., span: _Optional[str] = ..., analysis_key: _Optional[str] = ..., step: _Optional[int] = ..., steps: _Optional[_Iterable[int]] = ..., align: _Optional[str] = ..., window_start_ns: _Optional[int] = ..., window_end_ns: _Optional[int] = ..., bins: _Optional[int] = ..., order: _Optional[_Iterable[_Union[CompactRank, _Mapping]]] = ..., rank_offset: _Optional[int] = ..., rows: _Optional[_Iterable[_Union[CompactRow, _Mapping]]] = ..., why: _Optional[str] = ..., critical: _Optional[_Iterable[_Union[CompactSegment, _Mapping]]] = ..., critical_known: _Optional[bool] = ..., note: _Optional[str] = ..., align_kind: _Optional[str] = ..., align_kinds: _Optional[_Iterable[str]] = ..., host_note: _Optional[str] = ...) -> None: ...
