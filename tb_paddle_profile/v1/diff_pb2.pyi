from tb_paddle_profile.v1 import display_pb2 as _display_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DiffSide(_message.Message):
    __slots__ = ("run", "worker", "span", "label", "ranks", "steps")
    RUN_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    run: str
    worker: str
    span: str
    label: str
    ranks: int
    steps: int
    def __init__(self, run: _Optional[str] = ..., worker: _Optional[str] = ..., span: _Optional[str] = ..., label: _Optional[str] = ..., ranks: _Optional[int] = ..., steps: _Optional[int] = ...) -> None: ...

class RunDiff(_message.Message):
    __slots__ = ("baseline", "candidate", "mode", "alignment", "display")
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    baseline: DiffSide
    candidate: DiffSide
    mode: str
    alignment: _containers.RepeatedScalarFieldContainer[str]
    display: _display_pb2.Display
    def __init__(self, baseline: _Optional[_Union[DiffSide, _Mapping]] = ..., candidate: _Optional[_Union[DiffSide, _Mapping]] = ..., mode: _Optional[str] = ..., alignment: _Optional[_Iterable[str]] = ..., display: _Optional[_Union[_display_pb2.Display, _Mapping]] = ...) -> None: ...
