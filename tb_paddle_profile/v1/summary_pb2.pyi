from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CollectiveKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLLECTIVE_KIND_UNSPECIFIED: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_ALL_REDUCE: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_ALL_GATHER: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_REDUCE_SCATTER: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_BROADCAST: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_SEND_RECV: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_ALL_TO_ALL: _ClassVar[CollectiveKind]
    COLLECTIVE_KIND_OTHER: _ClassVar[CollectiveKind]

class P2PDirection(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    P2P_DIRECTION_UNSPECIFIED: _ClassVar[P2PDirection]
    P2P_DIRECTION_SEND: _ClassVar[P2PDirection]
    P2P_DIRECTION_RECV: _ClassVar[P2PDirection]

class Timeline(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIMELINE_UNSPECIFIED: _ClassVar[Timeline]
    TIMELINE_DEVICE: _ClassVar[Timeline]
    TIMELINE_HOST: _ClassVar[Timeline]

class CommAxis(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMM_AXIS_UNSPECIFIED: _ClassVar[CommAxis]
    COMM_AXIS_MP: _ClassVar[CommAxis]
    COMM_AXIS_DP: _ClassVar[CommAxis]
    COMM_AXIS_PP: _ClassVar[CommAxis]
    COMM_AXIS_PP_GROUP: _ClassVar[CommAxis]
    COMM_AXIS_SHARDING: _ClassVar[CommAxis]
    COMM_AXIS_EP: _ClassVar[CommAxis]
    COMM_AXIS_OTHER: _ClassVar[CommAxis]
COLLECTIVE_KIND_UNSPECIFIED: CollectiveKind
COLLECTIVE_KIND_ALL_REDUCE: CollectiveKind
COLLECTIVE_KIND_ALL_GATHER: CollectiveKind
COLLECTIVE_KIND_REDUCE_SCATTER: CollectiveKind
COLLECTIVE_KIND_BROADCAST: CollectiveKind
COLLECTIVE_KIND_SEND_RECV: CollectiveKind
COLLECTIVE_KIND_ALL_TO_ALL: CollectiveKind
COLLECTIVE_KIND_OTHER: CollectiveKind
P2P_DIRECTION_UNSPECIFIED: P2PDirection
P2P_DIRECTION_SEND: P2PDirection
P2P_DIRECTION_RECV: P2PDirection
TIMELINE_UNSPECIFIED: Timeline
TIMELINE_DEVICE: Timeline
TIMELINE_HOST: Timeline
COMM_AXIS_UNSPECIFIED: CommAxis
COMM_AXIS_MP: CommAxis
COMM_AXIS_DP: CommAxis
COMM_AXIS_PP: CommAxis
COMM_AXIS_PP_GROUP: CommAxis
COMM_AXIS_SHARDING: CommAxis
COMM_AXIS_EP: CommAxis
COMM_AXIS_OTHER: CommAxis

class Summary(_message.Message):
    __slots__ = ("meta", "device", "overview", "model", "distributed", "operators", "kernels", "memory", "memory_manipulation", "user_defined", "parallel", "comm", "flops", "sequences")
    META_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    OVERVIEW_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTED_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MANIPULATION_FIELD_NUMBER: _ClassVar[int]
    USER_DEFINED_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_FIELD_NUMBER: _ClassVar[int]
    COMM_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    meta: TraceMeta
    device: DeviceView
    overview: OverviewView
    model: ModelView
    distributed: DistributedView
    operators: OperatorView
    kernels: KernelView
    memory: MemoryView
    memory_manipulation: _containers.RepeatedCompositeFieldContainer[EventStats]
    user_defined: UserDefinedView
    parallel: ParallelView
    comm: CommView
    flops: FlopsView
    sequences: SequenceView
    def __init__(self, meta: _Optional[_Union[TraceMeta, _Mapping]] = ..., device: _Optional[_Union[DeviceView, _Mapping]] = ..., overview: _Optional[_Union[OverviewView, _Mapping]] = ..., model: _Optional[_Union[ModelView, _Mapping]] = ..., distributed: _Optional[_Union[DistributedView, _Mapping]] = ..., operators: _Optional[_Union[OperatorView, _Mapping]] = ..., kernels: _Optional[_Union[KernelView, _Mapping]] = ..., memory: _Optional[_Union[MemoryView, _Mapping]] = ..., memory_manipulation: _Optional[_Iterable[_Union[EventStats, _Mapping]]] = ..., user_defined: _Optional[_Union[UserDefinedView, _Mapping]] = ..., parallel: _Optional[_Union[ParallelView, _Mapping]] = ..., comm: _Optional[_Union[CommView, _Mapping]] = ..., flops: _Optional[_Union[FlopsView, _Mapping]] = ..., sequences: _Optional[_Union[SequenceView, _Mapping]] = ...) -> None: ...

class TraceMeta(_message.Message):
    __slots__ = ("summary_schema", "tool_version", "file_name", "file_size", "worker", "export_time", "rank", "hostname", "pid", "span", "schema_version", "origin_unix_ns", "start_ns", "end_ns", "counts", "threads", "devices", "total_time_ns", "repaired_lines")
    SUMMARY_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    TOOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    EXPORT_TIME_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_UNIX_NS_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    REPAIRED_LINES_FIELD_NUMBER: _ClassVar[int]
    summary_schema: int
    tool_version: str
    file_name: str
    file_size: int
    worker: str
    export_time: str
    rank: int
    hostname: str
    pid: int
    span: str
    schema_version: str
    origin_unix_ns: int
    start_ns: int
    end_ns: int
    counts: EventCounts
    threads: _containers.RepeatedCompositeFieldContainer[ThreadInfo]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceProperties]
    total_time_ns: int
    repaired_lines: int
    def __init__(self, summary_schema: _Optional[int] = ..., tool_version: _Optional[str] = ..., file_name: _Optional[str] = ..., file_size: _Optional[int] = ..., worker: _Optional[str] = ..., export_time: _Optional[str] = ..., rank: _Optional[int] = ..., hostname: _Optional[str] = ..., pid: _Optional[int] = ..., span: _Optional[str] = ..., schema_version: _Optional[str] = ..., origin_unix_ns: _Optional[int] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., counts: _Optional[_Union[EventCounts, _Mapping]] = ..., threads: _Optional[_Iterable[_Union[ThreadInfo, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[DeviceProperties, _Mapping]]] = ..., total_time_ns: _Optional[int] = ..., repaired_lines: _Optional[int] = ...) -> None: ...

class EventCounts(_message.Message):
    __slots__ = ("host", "runtime", "device", "memory", "kernels", "memcpy", "memset")
    HOST_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    MEMCPY_FIELD_NUMBER: _ClassVar[int]
    MEMSET_FIELD_NUMBER: _ClassVar[int]
    host: int
    runtime: int
    device: int
    memory: int
    kernels: int
    memcpy: int
    memset: int
    def __init__(self, host: _Optional[int] = ..., runtime: _Optional[int] = ..., device: _Optional[int] = ..., memory: _Optional[int] = ..., kernels: _Optional[int] = ..., memcpy: _Optional[int] = ..., memset: _Optional[int] = ...) -> None: ...

class ThreadInfo(_message.Message):
    __slots__ = ("tid", "name", "host_events", "runtime_events", "memory_events")
    TID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_EVENTS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_EVENTS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_EVENTS_FIELD_NUMBER: _ClassVar[int]
    tid: int
    name: str
    host_events: int
    runtime_events: int
    memory_events: int
    def __init__(self, tid: _Optional[int] = ..., name: _Optional[str] = ..., host_events: _Optional[int] = ..., runtime_events: _Optional[int] = ..., memory_events: _Optional[int] = ...) -> None: ...

class DeviceProperties(_message.Message):
    __slots__ = ("id", "name", "total_global_mem", "compute_major", "compute_minor", "max_threads_per_block", "max_threads_per_multiprocessor", "regs_per_block", "regs_per_multiprocessor", "warp_size", "shared_mem_per_block", "shared_mem_per_multiprocessor", "sm_count", "shared_mem_per_block_optin")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_GLOBAL_MEM_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_MAJOR_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_MINOR_FIELD_NUMBER: _ClassVar[int]
    MAX_THREADS_PER_BLOCK_FIELD_NUMBER: _ClassVar[int]
    MAX_THREADS_PER_MULTIPROCESSOR_FIELD_NUMBER: _ClassVar[int]
    REGS_PER_BLOCK_FIELD_NUMBER: _ClassVar[int]
    REGS_PER_MULTIPROCESSOR_FIELD_NUMBER: _ClassVar[int]
    WARP_SIZE_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEM_PER_BLOCK_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEM_PER_MULTIPROCESSOR_FIELD_NUMBER: _ClassVar[int]
    SM_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEM_PER_BLOCK_OPTIN_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    total_global_mem: int
    compute_major: int
    compute_minor: int
    max_threads_per_block: int
    max_threads_per_multiprocessor: int
    regs_per_block: int
    regs_per_multiprocessor: int
    warp_size: int
    shared_mem_per_block: int
    shared_mem_per_multiprocessor: int
    sm_count: int
    shared_mem_per_block_optin: int
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., total_global_mem: _Optional[int] = ..., compute_major: _Optional[int] = ..., compute_minor: _Optional[int] = ..., max_threads_per_block: _Optional[int] = ..., max_threads_per_multiprocessor: _Optional[int] = ..., regs_per_block: _Optional[int] = ..., regs_per_multiprocessor: _Optional[int] = ..., warp_size: _Optional[int] = ..., shared_mem_per_block: _Optional[int] = ..., shared_mem_per_multiprocessor: _Optional[int] = ..., sm_count: _Optional[int] = ..., shared_mem_per_block_optin: _Optional[int] = ...) -> None: ...

class TimeStats(_message.Message):
    __slots__ = ("total_ns", "max_ns", "min_ns")
    TOTAL_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_NS_FIELD_NUMBER: _ClassVar[int]
    MIN_NS_FIELD_NUMBER: _ClassVar[int]
    total_ns: int
    max_ns: int
    min_ns: int
    def __init__(self, total_ns: _Optional[int] = ..., max_ns: _Optional[int] = ..., min_ns: _Optional[int] = ...) -> None: ...

class EventStats(_message.Message):
    __slots__ = ("name", "calls", "cpu", "gpu", "general_gpu", "flops")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    GENERAL_GPU_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    calls: int
    cpu: TimeStats
    gpu: TimeStats
    general_gpu: TimeStats
    flops: int
    def __init__(self, name: _Optional[str] = ..., calls: _Optional[int] = ..., cpu: _Optional[_Union[TimeStats, _Mapping]] = ..., gpu: _Optional[_Union[TimeStats, _Mapping]] = ..., general_gpu: _Optional[_Union[TimeStats, _Mapping]] = ..., flops: _Optional[int] = ...) -> None: ...

class TimeRange(_message.Message):
    __slots__ = ("start_ns", "end_ns")
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    start_ns: int
    end_ns: int
    def __init__(self, start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ...) -> None: ...

class DeviceView(_message.Message):
    __slots__ = ("cpu_process_utilization", "cpu_system_utilization", "gpus")
    CPU_PROCESS_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    CPU_SYSTEM_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    cpu_process_utilization: float
    cpu_system_utilization: float
    gpus: _containers.RepeatedCompositeFieldContainer[DeviceBusy]
    def __init__(self, cpu_process_utilization: _Optional[float] = ..., cpu_system_utilization: _Optional[float] = ..., gpus: _Optional[_Iterable[_Union[DeviceBusy, _Mapping]]] = ...) -> None: ...

class DeviceBusy(_message.Message):
    __slots__ = ("device_id", "kernel_time_ns")
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    KERNEL_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    device_id: int
    kernel_time_ns: int
    def __init__(self, device_id: _Optional[int] = ..., kernel_time_ns: _Optional[int] = ...) -> None: ...

class OverviewRow(_message.Message):
    __slots__ = ("event_type", "calls", "time_ns")
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    event_type: str
    calls: int
    time_ns: int
    def __init__(self, event_type: _Optional[str] = ..., calls: _Optional[int] = ..., time_ns: _Optional[int] = ...) -> None: ...

class OverviewView(_message.Message):
    __slots__ = ("cpu", "gpu")
    CPU_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    cpu: _containers.RepeatedCompositeFieldContainer[OverviewRow]
    gpu: _containers.RepeatedCompositeFieldContainer[OverviewRow]
    def __init__(self, cpu: _Optional[_Iterable[_Union[OverviewRow, _Mapping]]] = ..., gpu: _Optional[_Iterable[_Union[OverviewRow, _Mapping]]] = ...) -> None: ...

class ModelStep(_message.Message):
    __slots__ = ("step", "range", "dataloader_cpu_ns", "forward_cpu_ns", "backward_cpu_ns", "optimization_cpu_ns", "dataloader_gpu_ns", "forward_gpu_ns", "backward_gpu_ns", "optimization_gpu_ns", "gpu_ns")
    STEP_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    DATALOADER_CPU_NS_FIELD_NUMBER: _ClassVar[int]
    FORWARD_CPU_NS_FIELD_NUMBER: _ClassVar[int]
    BACKWARD_CPU_NS_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZATION_CPU_NS_FIELD_NUMBER: _ClassVar[int]
    DATALOADER_GPU_NS_FIELD_NUMBER: _ClassVar[int]
    FORWARD_GPU_NS_FIELD_NUMBER: _ClassVar[int]
    BACKWARD_GPU_NS_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZATION_GPU_NS_FIELD_NUMBER: _ClassVar[int]
    GPU_NS_FIELD_NUMBER: _ClassVar[int]
    step: int
    range: TimeRange
    dataloader_cpu_ns: int
    forward_cpu_ns: int
    backward_cpu_ns: int
    optimization_cpu_ns: int
    dataloader_gpu_ns: int
    forward_gpu_ns: int
    backward_gpu_ns: int
    optimization_gpu_ns: int
    gpu_ns: int
    def __init__(self, step: _Optional[int] = ..., range: _Optional[_Union[TimeRange, _Mapping]] = ..., dataloader_cpu_ns: _Optional[int] = ..., forward_cpu_ns: _Optional[int] = ..., backward_cpu_ns: _Optional[int] = ..., optimization_cpu_ns: _Optional[int] = ..., dataloader_gpu_ns: _Optional[int] = ..., forward_gpu_ns: _Optional[int] = ..., backward_gpu_ns: _Optional[int] = ..., optimization_gpu_ns: _Optional[int] = ..., gpu_ns: _Optional[int] = ...) -> None: ...

class ModelView(_message.Message):
    __slots__ = ("items", "steps")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[EventStats]
    steps: _containers.RepeatedCompositeFieldContainer[ModelStep]
    def __init__(self, items: _Optional[_Iterable[_Union[EventStats, _Mapping]]] = ..., steps: _Optional[_Iterable[_Union[ModelStep, _Mapping]]] = ...) -> None: ...

class DistributedStep(_message.Message):
    __slots__ = ("step", "range", "communication_ns", "computation_ns", "overlap_ns")
    STEP_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTATION_NS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_NS_FIELD_NUMBER: _ClassVar[int]
    step: int
    range: TimeRange
    communication_ns: int
    computation_ns: int
    overlap_ns: int
    def __init__(self, step: _Optional[int] = ..., range: _Optional[_Union[TimeRange, _Mapping]] = ..., communication_ns: _Optional[int] = ..., computation_ns: _Optional[int] = ..., overlap_ns: _Optional[int] = ...) -> None: ...

class DistributedView(_message.Message):
    __slots__ = ("present", "communication_ns", "computation_ns", "overlap_ns", "cpu_calls", "gpu_calls", "cpu_communication_ns", "gpu_communication_ns", "steps")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    COMPUTATION_NS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_NS_FIELD_NUMBER: _ClassVar[int]
    CPU_CALLS_FIELD_NUMBER: _ClassVar[int]
    GPU_CALLS_FIELD_NUMBER: _ClassVar[int]
    CPU_COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    GPU_COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    present: bool
    communication_ns: int
    computation_ns: int
    overlap_ns: int
    cpu_calls: int
    gpu_calls: int
    cpu_communication_ns: int
    gpu_communication_ns: int
    steps: _containers.RepeatedCompositeFieldContainer[DistributedStep]
    def __init__(self, present: _Optional[bool] = ..., communication_ns: _Optional[int] = ..., computation_ns: _Optional[int] = ..., overlap_ns: _Optional[int] = ..., cpu_calls: _Optional[int] = ..., gpu_calls: _Optional[int] = ..., cpu_communication_ns: _Optional[int] = ..., gpu_communication_ns: _Optional[int] = ..., steps: _Optional[_Iterable[_Union[DistributedStep, _Mapping]]] = ...) -> None: ...

class DeviceStats(_message.Message):
    __slots__ = ("name", "event_type", "calls", "gpu")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    name: str
    event_type: str
    calls: int
    gpu: TimeStats
    def __init__(self, name: _Optional[str] = ..., event_type: _Optional[str] = ..., calls: _Optional[int] = ..., gpu: _Optional[_Union[TimeStats, _Mapping]] = ...) -> None: ...

class ShapeGroup(_message.Message):
    __slots__ = ("input_shapes", "input_dtypes", "stats")
    INPUT_SHAPES_FIELD_NUMBER: _ClassVar[int]
    INPUT_DTYPES_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    input_shapes: str
    input_dtypes: str
    stats: EventStats
    def __init__(self, input_shapes: _Optional[str] = ..., input_dtypes: _Optional[str] = ..., stats: _Optional[_Union[EventStats, _Mapping]] = ...) -> None: ...

class OperatorNode(_message.Message):
    __slots__ = ("stats", "inners", "devices", "shapes")
    STATS_FIELD_NUMBER: _ClassVar[int]
    INNERS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    SHAPES_FIELD_NUMBER: _ClassVar[int]
    stats: EventStats
    inners: _containers.RepeatedCompositeFieldContainer[OperatorNode]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceStats]
    shapes: _containers.RepeatedCompositeFieldContainer[ShapeGroup]
    def __init__(self, stats: _Optional[_Union[EventStats, _Mapping]] = ..., inners: _Optional[_Iterable[_Union[OperatorNode, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[DeviceStats, _Mapping]]] = ..., shapes: _Optional[_Iterable[_Union[ShapeGroup, _Mapping]]] = ...) -> None: ...

class ThreadOperators(_message.Message):
    __slots__ = ("thread_id", "operators")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    thread_id: int
    operators: _containers.RepeatedCompositeFieldContainer[OperatorNode]
    def __init__(self, thread_id: _Optional[int] = ..., operators: _Optional[_Iterable[_Union[OperatorNode, _Mapping]]] = ...) -> None: ...

class OperatorView(_message.Message):
    __slots__ = ("operators", "threads")
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    operators: _containers.RepeatedCompositeFieldContainer[OperatorNode]
    threads: _containers.RepeatedCompositeFieldContainer[ThreadOperators]
    def __init__(self, operators: _Optional[_Iterable[_Union[OperatorNode, _Mapping]]] = ..., threads: _Optional[_Iterable[_Union[ThreadOperators, _Mapping]]] = ...) -> None: ...

class LaunchConfig(_message.Message):
    __slots__ = ("grid", "block", "registers_per_thread", "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy_pct", "calls", "total_ns")
    GRID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    REGISTERS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    SHARED_MEMORY_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_PER_SM_FIELD_NUMBER: _ClassVar[int]
    WARPS_PER_SM_FIELD_NUMBER: _ClassVar[int]
    OCCUPANCY_PCT_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NS_FIELD_NUMBER: _ClassVar[int]
    grid: _containers.RepeatedScalarFieldContainer[int]
    block: _containers.RepeatedScalarFieldContainer[int]
    registers_per_thread: int
    shared_memory: int
    blocks_per_sm: float
    warps_per_sm: float
    occupancy_pct: float
    calls: int
    total_ns: int
    def __init__(self, grid: _Optional[_Iterable[int]] = ..., block: _Optional[_Iterable[int]] = ..., registers_per_thread: _Optional[int] = ..., shared_memory: _Optional[int] = ..., blocks_per_sm: _Optional[float] = ..., warps_per_sm: _Optional[float] = ..., occupancy_pct: _Optional[float] = ..., calls: _Optional[int] = ..., total_ns: _Optional[int] = ...) -> None: ...

class KernelByOperator(_message.Message):
    __slots__ = ("operator", "calls", "gpu")
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    operator: str
    calls: int
    gpu: TimeStats
    def __init__(self, operator: _Optional[str] = ..., calls: _Optional[int] = ..., gpu: _Optional[_Union[TimeStats, _Mapping]] = ...) -> None: ...

class KernelStats(_message.Message):
    __slots__ = ("name", "calls", "gpu", "configs", "operators", "efficiency")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    name: str
    calls: int
    gpu: TimeStats
    configs: _containers.RepeatedCompositeFieldContainer[LaunchConfig]
    operators: _containers.RepeatedCompositeFieldContainer[KernelByOperator]
    efficiency: KernelEfficiency
    def __init__(self, name: _Optional[str] = ..., calls: _Optional[int] = ..., gpu: _Optional[_Union[TimeStats, _Mapping]] = ..., configs: _Optional[_Iterable[_Union[LaunchConfig, _Mapping]]] = ..., operators: _Optional[_Iterable[_Union[KernelByOperator, _Mapping]]] = ..., efficiency: _Optional[_Union[KernelEfficiency, _Mapping]] = ...) -> None: ...

class KernelEfficiency(_message.Message):
    __slots__ = ("tensor_core_ns", "launch_ns", "sm_known_ns", "sm_efficiency_ns", "occupancy_ns", "total_ns")
    TENSOR_CORE_NS_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_NS_FIELD_NUMBER: _ClassVar[int]
    SM_KNOWN_NS_FIELD_NUMBER: _ClassVar[int]
    SM_EFFICIENCY_NS_FIELD_NUMBER: _ClassVar[int]
    OCCUPANCY_NS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NS_FIELD_NUMBER: _ClassVar[int]
    tensor_core_ns: int
    launch_ns: int
    sm_known_ns: int
    sm_efficiency_ns: float
    occupancy_ns: float
    total_ns: int
    def __init__(self, tensor_core_ns: _Optional[int] = ..., launch_ns: _Optional[int] = ..., sm_known_ns: _Optional[int] = ..., sm_efficiency_ns: _Optional[float] = ..., occupancy_ns: _Optional[float] = ..., total_ns: _Optional[int] = ...) -> None: ...

class KernelView(_message.Message):
    __slots__ = ("kernels", "efficiency")
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    kernels: _containers.RepeatedCompositeFieldContainer[KernelStats]
    efficiency: KernelEfficiency
    def __init__(self, kernels: _Optional[_Iterable[_Union[KernelStats, _Mapping]]] = ..., efficiency: _Optional[_Union[KernelEfficiency, _Mapping]] = ...) -> None: ...

class MemoryItem(_message.Message):
    __slots__ = ("name", "allocation_count", "free_count", "allocation_size", "free_size")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    FREE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_SIZE_FIELD_NUMBER: _ClassVar[int]
    FREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    allocation_count: int
    free_count: int
    allocation_size: int
    free_size: int
    def __init__(self, name: _Optional[str] = ..., allocation_count: _Optional[int] = ..., free_count: _Optional[int] = ..., allocation_size: _Optional[int] = ..., free_size: _Optional[int] = ...) -> None: ...

class MemoryCurve(_message.Message):
    __slots__ = ("time_ns", "allocated", "reserved", "decimated", "events")
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FIELD_NUMBER: _ClassVar[int]
    DECIMATED_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    time_ns: _containers.RepeatedScalarFieldContainer[int]
    allocated: _containers.RepeatedScalarFieldContainer[int]
    reserved: _containers.RepeatedScalarFieldContainer[int]
    decimated: bool
    events: int
    def __init__(self, time_ns: _Optional[_Iterable[int]] = ..., allocated: _Optional[_Iterable[int]] = ..., reserved: _Optional[_Iterable[int]] = ..., decimated: _Optional[bool] = ..., events: _Optional[int] = ...) -> None: ...

class MemoryPlace(_message.Message):
    __slots__ = ("place", "peak_allocated", "peak_reserved", "allocated", "reserved", "curve", "growth", "fragmentation", "alive_at_peak")
    PLACE_FIELD_NUMBER: _ClassVar[int]
    PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    PEAK_RESERVED_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FIELD_NUMBER: _ClassVar[int]
    CURVE_FIELD_NUMBER: _ClassVar[int]
    GROWTH_FIELD_NUMBER: _ClassVar[int]
    FRAGMENTATION_FIELD_NUMBER: _ClassVar[int]
    ALIVE_AT_PEAK_FIELD_NUMBER: _ClassVar[int]
    place: str
    peak_allocated: int
    peak_reserved: int
    allocated: _containers.RepeatedCompositeFieldContainer[MemoryItem]
    reserved: _containers.RepeatedCompositeFieldContainer[MemoryItem]
    curve: MemoryCurve
    growth: MemoryGrowth
    fragmentation: MemoryFragmentation
    alive_at_peak: MemoryAlive
    def __init__(self, place: _Optional[str] = ..., peak_allocated: _Optional[int] = ..., peak_reserved: _Optional[int] = ..., allocated: _Optional[_Iterable[_Union[MemoryItem, _Mapping]]] = ..., reserved: _Optional[_Iterable[_Union[MemoryItem, _Mapping]]] = ..., curve: _Optional[_Union[MemoryCurve, _Mapping]] = ..., growth: _Optional[_Union[MemoryGrowth, _Mapping]] = ..., fragmentation: _Optional[_Union[MemoryFragmentation, _Mapping]] = ..., alive_at_peak: _Optional[_Union[MemoryAlive, _Mapping]] = ...) -> None: ...

class MemoryStepPoint(_message.Message):
    __slots__ = ("step", "range", "allocated_end", "reserved_end", "allocated_peak", "allocated_floor", "reserved_peak", "events")
    STEP_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_END_FIELD_NUMBER: _ClassVar[int]
    RESERVED_END_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_PEAK_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FLOOR_FIELD_NUMBER: _ClassVar[int]
    RESERVED_PEAK_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    step: int
    range: TimeRange
    allocated_end: int
    reserved_end: int
    allocated_peak: int
    allocated_floor: int
    reserved_peak: int
    events: int
    def __init__(self, step: _Optional[int] = ..., range: _Optional[_Union[TimeRange, _Mapping]] = ..., allocated_end: _Optional[int] = ..., reserved_end: _Optional[int] = ..., allocated_peak: _Optional[int] = ..., allocated_floor: _Optional[int] = ..., reserved_peak: _Optional[int] = ..., events: _Optional[int] = ...) -> None: ...

class MemoryGrowth(_message.Message):
    __slots__ = ("steps", "allocated_slope", "reserved_slope", "floor_slope", "floor_growth_min", "leak_min_steps", "leak_threshold_bytes", "leak_suspected")
    STEPS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_SLOPE_FIELD_NUMBER: _ClassVar[int]
    RESERVED_SLOPE_FIELD_NUMBER: _ClassVar[int]
    FLOOR_SLOPE_FIELD_NUMBER: _ClassVar[int]
    FLOOR_GROWTH_MIN_FIELD_NUMBER: _ClassVar[int]
    LEAK_MIN_STEPS_FIELD_NUMBER: _ClassVar[int]
    LEAK_THRESHOLD_BYTES_FIELD_NUMBER: _ClassVar[int]
    LEAK_SUSPECTED_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[MemoryStepPoint]
    allocated_slope: float
    reserved_slope: float
    floor_slope: float
    floor_growth_min: int
    leak_min_steps: int
    leak_threshold_bytes: int
    leak_suspected: bool
    def __init__(self, steps: _Optional[_Iterable[_Union[MemoryStepPoint, _Mapping]]] = ..., allocated_slope: _Optional[float] = ..., reserved_slope: _Optional[float] = ..., floor_slope: _Optional[float] = ..., floor_growth_min: _Optional[int] = ..., leak_min_steps: _Optional[int] = ..., leak_threshold_bytes: _Optional[int] = ..., leak_suspected: _Optional[bool] = ...) -> None: ...

class MemoryFragmentation(_message.Message):
    __slots__ = ("peak_time_ns", "peak_allocated", "peak_reserved", "at_peak_bytes", "max_bytes", "max_time_ns")
    PEAK_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    PEAK_RESERVED_FIELD_NUMBER: _ClassVar[int]
    AT_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    peak_time_ns: int
    peak_allocated: int
    peak_reserved: int
    at_peak_bytes: int
    max_bytes: int
    max_time_ns: int
    def __init__(self, peak_time_ns: _Optional[int] = ..., peak_allocated: _Optional[int] = ..., peak_reserved: _Optional[int] = ..., at_peak_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_time_ns: _Optional[int] = ...) -> None: ...

class MemoryAliveGroup(_message.Message):
    __slots__ = ("operator", "layer", "bytes", "count")
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    LAYER_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    operator: str
    layer: str
    bytes: int
    count: int
    def __init__(self, operator: _Optional[str] = ..., layer: _Optional[str] = ..., bytes: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class MemoryAlive(_message.Message):
    __slots__ = ("time_ns", "allocated", "groups", "others_bytes", "others_count", "before_trace", "unaddressed")
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    OTHERS_BYTES_FIELD_NUMBER: _ClassVar[int]
    OTHERS_COUNT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_TRACE_FIELD_NUMBER: _ClassVar[int]
    UNADDRESSED_FIELD_NUMBER: _ClassVar[int]
    time_ns: int
    allocated: int
    groups: _containers.RepeatedCompositeFieldContainer[MemoryAliveGroup]
    others_bytes: int
    others_count: int
    before_trace: int
    unaddressed: int
    def __init__(self, time_ns: _Optional[int] = ..., allocated: _Optional[int] = ..., groups: _Optional[_Iterable[_Union[MemoryAliveGroup, _Mapping]]] = ..., others_bytes: _Optional[int] = ..., others_count: _Optional[int] = ..., before_trace: _Optional[int] = ..., unaddressed: _Optional[int] = ...) -> None: ...

class MemoryView(_message.Message):
    __slots__ = ("places",)
    PLACES_FIELD_NUMBER: _ClassVar[int]
    places: _containers.RepeatedCompositeFieldContainer[MemoryPlace]
    def __init__(self, places: _Optional[_Iterable[_Union[MemoryPlace, _Mapping]]] = ...) -> None: ...

class ThreadUserDefined(_message.Message):
    __slots__ = ("thread_id", "items")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    thread_id: int
    items: _containers.RepeatedCompositeFieldContainer[EventStats]
    def __init__(self, thread_id: _Optional[int] = ..., items: _Optional[_Iterable[_Union[EventStats, _Mapping]]] = ...) -> None: ...

class UserDefinedView(_message.Message):
    __slots__ = ("items", "threads")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[EventStats]
    threads: _containers.RepeatedCompositeFieldContainer[ThreadUserDefined]
    def __init__(self, items: _Optional[_Iterable[_Union[EventStats, _Mapping]]] = ..., threads: _Optional[_Iterable[_Union[ThreadUserDefined, _Mapping]]] = ...) -> None: ...

class KindStep(_message.Message):
    __slots__ = ("kind", "calls", "device_ns", "host_ns", "exposed_ns", "bytes")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NS_FIELD_NUMBER: _ClassVar[int]
    HOST_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    kind: CollectiveKind
    calls: int
    device_ns: int
    host_ns: int
    exposed_ns: int
    bytes: int
    def __init__(self, kind: _Optional[_Union[CollectiveKind, str]] = ..., calls: _Optional[int] = ..., device_ns: _Optional[int] = ..., host_ns: _Optional[int] = ..., exposed_ns: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class ParallelStep(_message.Message):
    __slots__ = ("step", "range", "compute_ns", "communication_ns", "hidden_communication_ns", "exposed_communication_ns", "memory_ns", "exposed_memory_ns", "idle_ns", "kinds", "runtime_ns", "runtime_calls", "launches", "sync_ns", "sync_calls", "kernels", "kernel_ns", "dataloader_ns", "first_device_ns", "stall_ns")
    STEP_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_NS_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_COMMUNICATION_NS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_MEMORY_NS_FIELD_NUMBER: _ClassVar[int]
    IDLE_NS_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_NS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_CALLS_FIELD_NUMBER: _ClassVar[int]
    LAUNCHES_FIELD_NUMBER: _ClassVar[int]
    SYNC_NS_FIELD_NUMBER: _ClassVar[int]
    SYNC_CALLS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    DATALOADER_NS_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEVICE_NS_FIELD_NUMBER: _ClassVar[int]
    STALL_NS_FIELD_NUMBER: _ClassVar[int]
    step: int
    range: TimeRange
    compute_ns: int
    communication_ns: int
    hidden_communication_ns: int
    exposed_communication_ns: int
    memory_ns: int
    exposed_memory_ns: int
    idle_ns: int
    kinds: _containers.RepeatedCompositeFieldContainer[KindStep]
    runtime_ns: int
    runtime_calls: int
    launches: int
    sync_ns: int
    sync_calls: int
    kernels: int
    kernel_ns: int
    dataloader_ns: int
    first_device_ns: int
    stall_ns: int
    def __init__(self, step: _Optional[int] = ..., range: _Optional[_Union[TimeRange, _Mapping]] = ..., compute_ns: _Optional[int] = ..., communication_ns: _Optional[int] = ..., hidden_communication_ns: _Optional[int] = ..., exposed_communication_ns: _Optional[int] = ..., memory_ns: _Optional[int] = ..., exposed_memory_ns: _Optional[int] = ..., idle_ns: _Optional[int] = ..., kinds: _Optional[_Iterable[_Union[KindStep, _Mapping]]] = ..., runtime_ns: _Optional[int] = ..., runtime_calls: _Optional[int] = ..., launches: _Optional[int] = ..., sync_ns: _Optional[int] = ..., sync_calls: _Optional[int] = ..., kernels: _Optional[int] = ..., kernel_ns: _Optional[int] = ..., dataloader_ns: _Optional[int] = ..., first_device_ns: _Optional[int] = ..., stall_ns: _Optional[int] = ...) -> None: ...

class CollectiveInstances(_message.Message):
    __slots__ = ("kind", "name", "op", "step", "ordinal", "start_ns", "duration_ns", "device_id", "stream", "bytes", "direction")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    kind: _containers.RepeatedScalarFieldContainer[CollectiveKind]
    name: _containers.RepeatedScalarFieldContainer[int]
    op: _containers.RepeatedScalarFieldContainer[int]
    step: _containers.RepeatedScalarFieldContainer[int]
    ordinal: _containers.RepeatedScalarFieldContainer[int]
    start_ns: _containers.RepeatedScalarFieldContainer[int]
    duration_ns: _containers.RepeatedScalarFieldContainer[int]
    device_id: _containers.RepeatedScalarFieldContainer[int]
    stream: _containers.RepeatedScalarFieldContainer[int]
    bytes: _containers.RepeatedScalarFieldContainer[int]
    direction: _containers.RepeatedScalarFieldContainer[P2PDirection]
    def __init__(self, kind: _Optional[_Iterable[_Union[CollectiveKind, str]]] = ..., name: _Optional[_Iterable[int]] = ..., op: _Optional[_Iterable[int]] = ..., step: _Optional[_Iterable[int]] = ..., ordinal: _Optional[_Iterable[int]] = ..., start_ns: _Optional[_Iterable[int]] = ..., duration_ns: _Optional[_Iterable[int]] = ..., device_id: _Optional[_Iterable[int]] = ..., stream: _Optional[_Iterable[int]] = ..., bytes: _Optional[_Iterable[int]] = ..., direction: _Optional[_Iterable[_Union[P2PDirection, str]]] = ...) -> None: ...

class ParallelView(_message.Message):
    __slots__ = ("timeline", "steps", "collectives", "names", "phases", "program", "memory")
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVES_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    PHASES_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    timeline: Timeline
    steps: _containers.RepeatedCompositeFieldContainer[ParallelStep]
    collectives: CollectiveInstances
    names: _containers.RepeatedScalarFieldContainer[str]
    phases: PhaseSpans
    program: ParallelProgram
    memory: RankMemory
    def __init__(self, timeline: _Optional[_Union[Timeline, str]] = ..., steps: _Optional[_Iterable[_Union[ParallelStep, _Mapping]]] = ..., collectives: _Optional[_Union[CollectiveInstances, _Mapping]] = ..., names: _Optional[_Iterable[str]] = ..., phases: _Optional[_Union[PhaseSpans, _Mapping]] = ..., program: _Optional[_Union[ParallelProgram, _Mapping]] = ..., memory: _Optional[_Union[RankMemory, _Mapping]] = ...) -> None: ...

class RankMemoryPlace(_message.Message):
    __slots__ = ("place", "peak_allocated", "peak_reserved")
    PLACE_FIELD_NUMBER: _ClassVar[int]
    PEAK_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    PEAK_RESERVED_FIELD_NUMBER: _ClassVar[int]
    place: str
    peak_allocated: int
    peak_reserved: int
    def __init__(self, place: _Optional[str] = ..., peak_allocated: _Optional[int] = ..., peak_reserved: _Optional[int] = ...) -> None: ...

class RankMemory(_message.Message):
    __slots__ = ("places",)
    PLACES_FIELD_NUMBER: _ClassVar[int]
    places: _containers.RepeatedCompositeFieldContainer[RankMemoryPlace]
    def __init__(self, places: _Optional[_Iterable[_Union[RankMemoryPlace, _Mapping]]] = ...) -> None: ...

class ParallelProgram(_message.Message):
    __slots__ = ("kind", "step", "stream", "start_ns", "duration_ns", "busy_ns", "events", "stream_pred", "stream_lag_ns", "launch_pred", "launch_lag_ns", "cross_pred", "cross_lag_ns", "tail_lag_ns", "tail_ns", "collective", "name", "phase", "wait_pred", "wait_lag_ns")
    KIND_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    BUSY_NS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    STREAM_PRED_FIELD_NUMBER: _ClassVar[int]
    STREAM_LAG_NS_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_PRED_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_LAG_NS_FIELD_NUMBER: _ClassVar[int]
    CROSS_PRED_FIELD_NUMBER: _ClassVar[int]
    CROSS_LAG_NS_FIELD_NUMBER: _ClassVar[int]
    TAIL_LAG_NS_FIELD_NUMBER: _ClassVar[int]
    TAIL_NS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    WAIT_PRED_FIELD_NUMBER: _ClassVar[int]
    WAIT_LAG_NS_FIELD_NUMBER: _ClassVar[int]
    kind: _containers.RepeatedScalarFieldContainer[int]
    step: _containers.RepeatedScalarFieldContainer[int]
    stream: _containers.RepeatedScalarFieldContainer[int]
    start_ns: _containers.RepeatedScalarFieldContainer[int]
    duration_ns: _containers.RepeatedScalarFieldContainer[int]
    busy_ns: _containers.RepeatedScalarFieldContainer[int]
    events: _containers.RepeatedScalarFieldContainer[int]
    stream_pred: _containers.RepeatedScalarFieldContainer[int]
    stream_lag_ns: _containers.RepeatedScalarFieldContainer[int]
    launch_pred: _containers.RepeatedScalarFieldContainer[int]
    launch_lag_ns: _containers.RepeatedScalarFieldContainer[int]
    cross_pred: _containers.RepeatedScalarFieldContainer[int]
    cross_lag_ns: _containers.RepeatedScalarFieldContainer[int]
    tail_lag_ns: _containers.RepeatedScalarFieldContainer[int]
    tail_ns: _containers.RepeatedScalarFieldContainer[int]
    collective: _containers.RepeatedScalarFieldContainer[int]
    name: _containers.RepeatedScalarFieldContainer[int]
    phase: _containers.RepeatedScalarFieldContainer[int]
    wait_pred: _containers.RepeatedScalarFieldContainer[int]
    wait_lag_ns: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, kind: _Optional[_Iterable[int]] = ..., step: _Optional[_Iterable[int]] = ..., stream: _Optional[_Iterable[int]] = ..., start_ns: _Optional[_Iterable[int]] = ..., duration_ns: _Optional[_Iterable[int]] = ..., busy_ns: _Optional[_Iterable[int]] = ..., events: _Optional[_Iterable[int]] = ..., stream_pred: _Optional[_Iterable[int]] = ..., stream_lag_ns: _Optional[_Iterable[int]] = ..., launch_pred: _Optional[_Iterable[int]] = ..., launch_lag_ns: _Optional[_Iterable[int]] = ..., cross_pred: _Optional[_Iterable[int]] = ..., cross_lag_ns: _Optional[_Iterable[int]] = ..., tail_lag_ns: _Optional[_Iterable[int]] = ..., tail_ns: _Optional[_Iterable[int]] = ..., collective: _Optional[_Iterable[int]] = ..., name: _Optional[_Iterable[int]] = ..., phase: _Optional[_Iterable[int]] = ..., wait_pred: _Optional[_Iterable[int]] = ..., wait_lag_ns: _Optional[_Iterable[int]] = ...) -> None: ...

class PhaseSpans(_message.Message):
    __slots__ = ("phase", "step", "host_start_ns", "host_end_ns", "device_start_ns", "device_end_ns", "kernel_ns", "kernels", "p2p_ptr", "p2p", "name")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    HOST_START_NS_FIELD_NUMBER: _ClassVar[int]
    HOST_END_NS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_START_NS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_END_NS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    P2P_PTR_FIELD_NUMBER: _ClassVar[int]
    P2P_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    phase: _containers.RepeatedScalarFieldContainer[int]
    step: _containers.RepeatedScalarFieldContainer[int]
    host_start_ns: _containers.RepeatedScalarFieldContainer[int]
    host_end_ns: _containers.RepeatedScalarFieldContainer[int]
    device_start_ns: _containers.RepeatedScalarFieldContainer[int]
    device_end_ns: _containers.RepeatedScalarFieldContainer[int]
    kernel_ns: _containers.RepeatedScalarFieldContainer[int]
    kernels: _containers.RepeatedScalarFieldContainer[int]
    p2p_ptr: _containers.RepeatedScalarFieldContainer[int]
    p2p: _containers.RepeatedScalarFieldContainer[int]
    name: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, phase: _Optional[_Iterable[int]] = ..., step: _Optional[_Iterable[int]] = ..., host_start_ns: _Optional[_Iterable[int]] = ..., host_end_ns: _Optional[_Iterable[int]] = ..., device_start_ns: _Optional[_Iterable[int]] = ..., device_end_ns: _Optional[_Iterable[int]] = ..., kernel_ns: _Optional[_Iterable[int]] = ..., kernels: _Optional[_Iterable[int]] = ..., p2p_ptr: _Optional[_Iterable[int]] = ..., p2p: _Optional[_Iterable[int]] = ..., name: _Optional[_Iterable[int]] = ...) -> None: ...

class RankDigest(_message.Message):
    __slots__ = ("digest_schema", "meta", "parallel", "distributed", "steps", "device_id", "flops", "sequences", "comm")
    DIGEST_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    COMM_FIELD_NUMBER: _ClassVar[int]
    digest_schema: int
    meta: TraceMeta
    parallel: ParallelView
    distributed: DistributedView
    steps: _containers.RepeatedCompositeFieldContainer[ModelStep]
    device_id: int
    flops: FlopsView
    sequences: SequenceView
    comm: CommView
    def __init__(self, digest_schema: _Optional[int] = ..., meta: _Optional[_Union[TraceMeta, _Mapping]] = ..., parallel: _Optional[_Union[ParallelView, _Mapping]] = ..., distributed: _Optional[_Union[DistributedView, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[ModelStep, _Mapping]]] = ..., device_id: _Optional[int] = ..., flops: _Optional[_Union[FlopsView, _Mapping]] = ..., sequences: _Optional[_Union[SequenceView, _Mapping]] = ..., comm: _Optional[_Union[CommView, _Mapping]] = ...) -> None: ...

class CommInstances(_message.Message):
    __slots__ = ("axis", "phase")
    AXIS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    axis: _containers.RepeatedScalarFieldContainer[CommAxis]
    phase: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, axis: _Optional[_Iterable[_Union[CommAxis, str]]] = ..., phase: _Optional[_Iterable[int]] = ...) -> None: ...

class CommBandwidth(_message.Message):
    __slots__ = ("axis", "kind", "calls", "calls_with_bytes", "bytes", "duration_ns", "max_algbw")
    AXIS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CALLS_WITH_BYTES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_ALGBW_FIELD_NUMBER: _ClassVar[int]
    axis: CommAxis
    kind: CollectiveKind
    calls: int
    calls_with_bytes: int
    bytes: int
    duration_ns: int
    max_algbw: float
    def __init__(self, axis: _Optional[_Union[CommAxis, str]] = ..., kind: _Optional[_Union[CollectiveKind, str]] = ..., calls: _Optional[int] = ..., calls_with_bytes: _Optional[int] = ..., bytes: _Optional[int] = ..., duration_ns: _Optional[int] = ..., max_algbw: _Optional[float] = ...) -> None: ...

class CommOverlap(_message.Message):
    __slots__ = ("stream", "axis", "phase", "calls", "time_ns", "hidden_ns", "exposed_ns")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    stream: int
    axis: CommAxis
    phase: int
    calls: int
    time_ns: int
    hidden_ns: int
    exposed_ns: int
    def __init__(self, stream: _Optional[int] = ..., axis: _Optional[_Union[CommAxis, str]] = ..., phase: _Optional[int] = ..., calls: _Optional[int] = ..., time_ns: _Optional[int] = ..., hidden_ns: _Optional[int] = ..., exposed_ns: _Optional[int] = ...) -> None: ...

class CommAxes(_message.Message):
    __slots__ = ("axis", "phase", "calls", "time_ns", "hidden_ns", "exposed_ns")
    AXIS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    axis: _containers.RepeatedScalarFieldContainer[CommAxis]
    phase: _containers.RepeatedScalarFieldContainer[int]
    calls: _containers.RepeatedScalarFieldContainer[int]
    time_ns: _containers.RepeatedScalarFieldContainer[int]
    hidden_ns: _containers.RepeatedScalarFieldContainer[int]
    exposed_ns: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, axis: _Optional[_Iterable[_Union[CommAxis, str]]] = ..., phase: _Optional[_Iterable[int]] = ..., calls: _Optional[_Iterable[int]] = ..., time_ns: _Optional[_Iterable[int]] = ..., hidden_ns: _Optional[_Iterable[int]] = ..., exposed_ns: _Optional[_Iterable[int]] = ...) -> None: ...

class LaunchStream(_message.Message):
    __slots__ = ("device_id", "stream", "launched", "p50_ns", "p90_ns", "max_ns", "max_queue", "mean_queue", "starved_ns", "starved_gaps", "span_ns", "queue_time_ns", "queue_depth")
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    LAUNCHED_FIELD_NUMBER: _ClassVar[int]
    P50_NS_FIELD_NUMBER: _ClassVar[int]
    P90_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_FIELD_NUMBER: _ClassVar[int]
    MEAN_QUEUE_FIELD_NUMBER: _ClassVar[int]
    STARVED_NS_FIELD_NUMBER: _ClassVar[int]
    STARVED_GAPS_FIELD_NUMBER: _ClassVar[int]
    SPAN_NS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    device_id: int
    stream: int
    launched: int
    p50_ns: int
    p90_ns: int
    max_ns: int
    max_queue: int
    mean_queue: float
    starved_ns: int
    starved_gaps: int
    span_ns: int
    queue_time_ns: _containers.RepeatedScalarFieldContainer[int]
    queue_depth: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, device_id: _Optional[int] = ..., stream: _Optional[int] = ..., launched: _Optional[int] = ..., p50_ns: _Optional[int] = ..., p90_ns: _Optional[int] = ..., max_ns: _Optional[int] = ..., max_queue: _Optional[int] = ..., mean_queue: _Optional[float] = ..., starved_ns: _Optional[int] = ..., starved_gaps: _Optional[int] = ..., span_ns: _Optional[int] = ..., queue_time_ns: _Optional[_Iterable[int]] = ..., queue_depth: _Optional[_Iterable[int]] = ...) -> None: ...

class HostStall(_message.Message):
    __slots__ = ("step", "start_ns", "duration_ns", "before", "after", "within")
    STEP_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    WITHIN_FIELD_NUMBER: _ClassVar[int]
    step: int
    start_ns: int
    duration_ns: int
    before: int
    after: int
    within: int
    def __init__(self, step: _Optional[int] = ..., start_ns: _Optional[int] = ..., duration_ns: _Optional[int] = ..., before: _Optional[int] = ..., after: _Optional[int] = ..., within: _Optional[int] = ...) -> None: ...

class HostStalls(_message.Message):
    __slots__ = ("threshold_ns", "main_tid", "steps", "steps_with_stall", "stalled_ns", "stalls", "names")
    THRESHOLD_NS_FIELD_NUMBER: _ClassVar[int]
    MAIN_TID_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STEPS_WITH_STALL_FIELD_NUMBER: _ClassVar[int]
    STALLED_NS_FIELD_NUMBER: _ClassVar[int]
    STALLS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    threshold_ns: int
    main_tid: int
    steps: int
    steps_with_stall: int
    stalled_ns: int
    stalls: _containers.RepeatedCompositeFieldContainer[HostStall]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, threshold_ns: _Optional[int] = ..., main_tid: _Optional[int] = ..., steps: _Optional[int] = ..., steps_with_stall: _Optional[int] = ..., stalled_ns: _Optional[int] = ..., stalls: _Optional[_Iterable[_Union[HostStall, _Mapping]]] = ..., names: _Optional[_Iterable[str]] = ...) -> None: ...

class CommAxisStep(_message.Message):
    __slots__ = ("axis", "phase", "calls", "time_ns", "hidden_ns", "exposed_ns")
    AXIS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TIME_NS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_NS_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_NS_FIELD_NUMBER: _ClassVar[int]
    axis: CommAxis
    phase: int
    calls: float
    time_ns: int
    hidden_ns: int
    exposed_ns: int
    def __init__(self, axis: _Optional[_Union[CommAxis, str]] = ..., phase: _Optional[int] = ..., calls: _Optional[float] = ..., time_ns: _Optional[int] = ..., hidden_ns: _Optional[int] = ..., exposed_ns: _Optional[int] = ...) -> None: ...

class CommRank(_message.Message):
    __slots__ = ("rank", "axes", "starved_stream", "starved_share", "launch_p50_ns", "max_queue", "stall_steps", "steps", "stalled_ns_per_step")
    RANK_FIELD_NUMBER: _ClassVar[int]
    AXES_FIELD_NUMBER: _ClassVar[int]
    STARVED_STREAM_FIELD_NUMBER: _ClassVar[int]
    STARVED_SHARE_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_P50_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_FIELD_NUMBER: _ClassVar[int]
    STALL_STEPS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STALLED_NS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    rank: int
    axes: _containers.RepeatedCompositeFieldContainer[CommAxisStep]
    starved_stream: int
    starved_share: float
    launch_p50_ns: int
    max_queue: int
    stall_steps: int
    steps: int
    stalled_ns_per_step: int
    def __init__(self, rank: _Optional[int] = ..., axes: _Optional[_Iterable[_Union[CommAxisStep, _Mapping]]] = ..., starved_stream: _Optional[int] = ..., starved_share: _Optional[float] = ..., launch_p50_ns: _Optional[int] = ..., max_queue: _Optional[int] = ..., stall_steps: _Optional[int] = ..., steps: _Optional[int] = ..., stalled_ns_per_step: _Optional[int] = ...) -> None: ...

class CommView(_message.Message):
    __slots__ = ("instances", "bandwidth", "overlap", "launch", "host_stalls", "axes", "rank")
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    HOST_STALLS_FIELD_NUMBER: _ClassVar[int]
    AXES_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    instances: CommInstances
    bandwidth: _containers.RepeatedCompositeFieldContainer[CommBandwidth]
    overlap: _containers.RepeatedCompositeFieldContainer[CommOverlap]
    launch: _containers.RepeatedCompositeFieldContainer[LaunchStream]
    host_stalls: HostStalls
    axes: CommAxes
    rank: CommRank
    def __init__(self, instances: _Optional[_Union[CommInstances, _Mapping]] = ..., bandwidth: _Optional[_Iterable[_Union[CommBandwidth, _Mapping]]] = ..., overlap: _Optional[_Iterable[_Union[CommOverlap, _Mapping]]] = ..., launch: _Optional[_Iterable[_Union[LaunchStream, _Mapping]]] = ..., host_stalls: _Optional[_Union[HostStalls, _Mapping]] = ..., axes: _Optional[_Union[CommAxes, _Mapping]] = ..., rank: _Optional[_Union[CommRank, _Mapping]] = ...) -> None: ...

class FlopsOperator(_message.Message):
    __slots__ = ("name", "formula", "calls", "unresolved", "flops")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORMULA_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    UNRESOLVED_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    formula: str
    calls: int
    unresolved: int
    flops: float
    def __init__(self, name: _Optional[str] = ..., formula: _Optional[str] = ..., calls: _Optional[int] = ..., unresolved: _Optional[int] = ..., flops: _Optional[float] = ...) -> None: ...

class FlopsLayer(_message.Message):
    __slots__ = ("name", "ordinal", "calls", "flops", "kernels", "kernel_ns", "comm_kernel_ns", "achieved_flops", "mfu")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    COMM_KERNEL_NS_FIELD_NUMBER: _ClassVar[int]
    ACHIEVED_FLOPS_FIELD_NUMBER: _ClassVar[int]
    MFU_FIELD_NUMBER: _ClassVar[int]
    name: str
    ordinal: int
    calls: int
    flops: float
    kernels: int
    kernel_ns: int
    comm_kernel_ns: int
    achieved_flops: float
    mfu: float
    def __init__(self, name: _Optional[str] = ..., ordinal: _Optional[int] = ..., calls: _Optional[int] = ..., flops: _Optional[float] = ..., kernels: _Optional[int] = ..., kernel_ns: _Optional[int] = ..., comm_kernel_ns: _Optional[int] = ..., achieved_flops: _Optional[float] = ..., mfu: _Optional[float] = ...) -> None: ...

class FlopsView(_message.Message):
    __slots__ = ("shaped_operators", "operators", "layers", "steps", "forward_flops_per_step", "model_flops_per_step", "peak_flops", "device_name")
    SHAPED_OPERATORS_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    FORWARD_FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    MODEL_FLOPS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    PEAK_FLOPS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    shaped_operators: int
    operators: _containers.RepeatedCompositeFieldContainer[FlopsOperator]
    layers: _containers.RepeatedCompositeFieldContainer[FlopsLayer]
    steps: int
    forward_flops_per_step: float
    model_flops_per_step: float
    peak_flops: float
    device_name: str
    def __init__(self, shaped_operators: _Optional[int] = ..., operators: _Optional[_Iterable[_Union[FlopsOperator, _Mapping]]] = ..., layers: _Optional[_Iterable[_Union[FlopsLayer, _Mapping]]] = ..., steps: _Optional[int] = ..., forward_flops_per_step: _Optional[float] = ..., model_flops_per_step: _Optional[float] = ..., peak_flops: _Optional[float] = ..., device_name: _Optional[str] = ...) -> None: ...

class SequenceView(_message.Message):
    __slots__ = ("step", "micro_batch", "tokens", "source", "names", "tokens_per_step", "step_micro_batches")
    STEP_FIELD_NUMBER: _ClassVar[int]
    MICRO_BATCH_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    STEP_MICRO_BATCHES_FIELD_NUMBER: _ClassVar[int]
    step: _containers.RepeatedScalarFieldContainer[int]
    micro_batch: _containers.RepeatedScalarFieldContainer[int]
    tokens: _containers.RepeatedScalarFieldContainer[int]
    source: _containers.RepeatedScalarFieldContainer[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    tokens_per_step: float
    step_micro_batches: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, step: _Optional[_Iterable[int]] = ..., micro_batch: _Optional[_Iterable[int]] = ..., tokens: _Optional[_Iterable[int]] = ..., source: _Optional[_Iterable[int]] = ..., names: _Optional[_Iterable[str]] = ..., tokens_per_step: _Optional[float] = ..., step_micro_batches: _Optional[_Iterable[int]] = ...) -> None: ...
