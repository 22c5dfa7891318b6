from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CellKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CELL_TEXT: _ClassVar[CellKind]
    CELL_DURATION: _ClassVar[CellKind]
    CELL_RATIO: _ClassVar[CellKind]
    CELL_PERCENT: _ClassVar[CellKind]
    CELL_COUNT: _ClassVar[CellKind]
    CELL_BYTES: _ClassVar[CellKind]
    CELL_NUMBER: _ClassVar[CellKind]

class RowRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROW_DATA: _ClassVar[RowRole]
    ROW_SECTION: _ClassVar[RowRole]
    ROW_HEADER: _ClassVar[RowRole]
    ROW_TOTAL: _ClassVar[RowRole]
CELL_TEXT: CellKind
CELL_DURATION: CellKind
CELL_RATIO: CellKind
CELL_PERCENT: CellKind
CELL_COUNT: CellKind
CELL_BYTES: CellKind
CELL_NUMBER: CellKind
ROW_DATA: RowRole
ROW_SECTION: RowRole
ROW_HEADER: RowRole
ROW_TOTAL: RowRole

class Format(_message.Message):
    __slots__ = ("kind", "unit", "digits", "style")
    KIND_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    DIGITS_FIELD_NUMBER: _ClassVar[int]
    STYLE_FIELD_NUMBER: _ClassVar[int]
    kind: CellKind
    unit: str
    digits: int
    style: str
    def __init__(self, kind: _Optional[_Union[CellKind, str]] = ..., unit: _Optional[str] = ..., digits: _Optional[int] = ..., style: _Optional[str] = ...) -> None: ...

class Cell(_message.Message):
    __slots__ = ("number", "text", "missing", "title")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    number: float
    text: str
    missing: bool
    title: str
    def __init__(self, number: _Optional[float] = ..., text: _Optional[str] = ..., missing: _Optional[bool] = ..., title: _Optional[str] = ...) -> None: ...

class Column(_message.Message):
    __slots__ = ("key", "header", "format", "group", "description", "text_hidden", "panel_hidden", "text_width", "text_min_width", "text_truncate", "text_truncate_depth", "panel_format")
    KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TEXT_HIDDEN_FIELD_NUMBER: _ClassVar[int]
    PANEL_HIDDEN_FIELD_NUMBER: _ClassVar[int]
    TEXT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    TEXT_MIN_WIDTH_FIELD_NUMBER: _ClassVar[int]
    TEXT_TRUNCATE_FIELD_NUMBER: _ClassVar[int]
    TEXT_TRUNCATE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    PANEL_FORMAT_FIELD_NUMBER: _ClassVar[int]
    key: str
    header: str
    format: Format
    group: str
    description: str
    text_hidden: bool
    panel_hidden: bool
    text_width: int
    text_min_width: int
    text_truncate: bool
    text_truncate_depth: int
    panel_format: Format
    def __init__(self, key: _Optional[str] = ..., header: _Optional[str] = ..., format: _Optional[_Union[Format, _Mapping]] = ..., group: _Optional[str] = ..., description: _Optional[str] = ..., text_hidden: _Optional[bool] = ..., panel_hidden: _Optional[bool] = ..., text_width: _Optional[int] = ..., text_min_width: _Optional[int] = ..., text_truncate: _Optional[bool] = ..., text_truncate_depth: _Optional[int] = ..., panel_format: _Optional[_Union[Format, _Mapping]] = ...) -> None: ...

class ColumnGroup(_message.Message):
    __slots__ = ("key", "header", "text_min_width", "panel_header")
    KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TEXT_MIN_WIDTH_FIELD_NUMBER: _ClassVar[int]
    PANEL_HEADER_FIELD_NUMBER: _ClassVar[int]
    key: str
    header: str
    text_min_width: int
    panel_header: str
    def __init__(self, key: _Optional[str] = ..., header: _Optional[str] = ..., text_min_width: _Optional[int] = ..., panel_header: _Optional[str] = ...) -> None: ...

class Row(_message.Message):
    __slots__ = ("cells", "depth", "role", "id", "link", "text_hidden")
    CELLS_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    TEXT_HIDDEN_FIELD_NUMBER: _ClassVar[int]
    cells: _containers.RepeatedCompositeFieldContainer[Cell]
    depth: int
    role: RowRole
    id: str
    link: str
    text_hidden: bool
    def __init__(self, cells: _Optional[_Iterable[_Union[Cell, _Mapping]]] = ..., depth: _Optional[int] = ..., role: _Optional[_Union[RowRole, str]] = ..., id: _Optional[str] = ..., link: _Optional[str] = ..., text_hidden: _Optional[bool] = ...) -> None: ...

class TextLayout(_message.Message):
    __slots__ = ("style", "time_unit_line", "closing_separator", "closing_rule", "blank_lines_after", "head_lines", "no_header")
    STYLE_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIT_LINE_FIELD_NUMBER: _ClassVar[int]
    CLOSING_SEPARATOR_FIELD_NUMBER: _ClassVar[int]
    CLOSING_RULE_FIELD_NUMBER: _ClassVar[int]
    BLANK_LINES_AFTER_FIELD_NUMBER: _ClassVar[int]
    HEAD_LINES_FIELD_NUMBER: _ClassVar[int]
    NO_HEADER_FIELD_NUMBER: _ClassVar[int]
    style: str
    time_unit_line: bool
    closing_separator: bool
    closing_rule: bool
    blank_lines_after: int
    head_lines: _containers.RepeatedScalarFieldContainer[str]
    no_header: bool
    def __init__(self, style: _Optional[str] = ..., time_unit_line: _Optional[bool] = ..., closing_separator: _Optional[bool] = ..., closing_rule: _Optional[bool] = ..., blank_lines_after: _Optional[int] = ..., head_lines: _Optional[_Iterable[str]] = ..., no_header: _Optional[bool] = ...) -> None: ...

class Table(_message.Message):
    __slots__ = ("key", "title", "columns", "groups", "rows", "note", "notes", "text", "tree", "empty", "paddle_view", "text_hidden", "scale", "section", "part")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TREE_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    PADDLE_VIEW_FIELD_NUMBER: _ClassVar[int]
    TEXT_HIDDEN_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    key: str
    title: str
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    groups: _containers.RepeatedCompositeFieldContainer[ColumnGroup]
    rows: _containers.RepeatedCompositeFieldContainer[Row]
    note: str
    notes: _containers.RepeatedCompositeFieldContainer[Sentence]
    text: TextLayout
    tree: bool
    empty: str
    paddle_view: str
    text_hidden: bool
    scale: ChartScale
    section: str
    part: str
    def __init__(self, key: _Optional[str] = ..., title: _Optional[str] = ..., columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ..., groups: _Optional[_Iterable[_Union[ColumnGroup, _Mapping]]] = ..., rows: _Optional[_Iterable[_Union[Row, _Mapping]]] = ..., note: _Optional[str] = ..., notes: _Optional[_Iterable[_Union[Sentence, _Mapping]]] = ..., text: _Optional[_Union[TextLayout, _Mapping]] = ..., tree: _Optional[bool] = ..., empty: _Optional[str] = ..., paddle_view: _Optional[str] = ..., text_hidden: _Optional[bool] = ..., scale: _Optional[_Union[ChartScale, _Mapping]] = ..., section: _Optional[str] = ..., part: _Optional[str] = ...) -> None: ...

class ChartScale(_message.Message):
    __slots__ = ("min", "max")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    min: float
    max: float
    def __init__(self, min: _Optional[float] = ..., max: _Optional[float] = ...) -> None: ...

class Span(_message.Message):
    __slots__ = ("text", "is_value", "format", "value", "is_rank", "rank", "link")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IS_VALUE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    IS_RANK_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    text: str
    is_value: bool
    format: Format
    value: Cell
    is_rank: bool
    rank: int
    link: str
    def __init__(self, text: _Optional[str] = ..., is_value: _Optional[bool] = ..., format: _Optional[_Union[Format, _Mapping]] = ..., value: _Optional[_Union[Cell, _Mapping]] = ..., is_rank: _Optional[bool] = ..., rank: _Optional[int] = ..., link: _Optional[str] = ...) -> None: ...

class Sentence(_message.Message):
    __slots__ = ("key", "level", "spans", "title", "section", "part", "rule")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    key: str
    level: str
    spans: _containers.RepeatedCompositeFieldContainer[Span]
    title: str
    section: str
    part: str
    rule: str
    def __init__(self, key: _Optional[str] = ..., level: _Optional[str] = ..., spans: _Optional[_Iterable[_Union[Span, _Mapping]]] = ..., title: _Optional[str] = ..., section: _Optional[str] = ..., part: _Optional[str] = ..., rule: _Optional[str] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ("key", "title", "sentences", "tables")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SENTENCES_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    key: str
    title: str
    sentences: _containers.RepeatedCompositeFieldContainer[Sentence]
    tables: _containers.RepeatedCompositeFieldContainer[Table]
    def __init__(self, key: _Optional[str] = ..., title: _Optional[str] = ..., sentences: _Optional[_Iterable[_Union[Sentence, _Mapping]]] = ..., tables: _Optional[_Iterable[_Union[Table, _Mapping]]] = ...) -> None: ...

class Display(_message.Message):
    __slots__ = ("views", "time_unit")
    VIEWS_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIT_FIELD_NUMBER: _ClassVar[int]
    views: _containers.RepeatedCompositeFieldContainer[View]
    time_unit: str
    def __init__(self, views: _Optional[_Iterable[_Union[View, _Mapping]]] = ..., time_unit: _Optional[str] = ...) -> None: ...
