"""Proto3 JSON of our messages, fast: what ``json_format.MessageToJson(m, indent=2,
always_print_fields_with_no_presence=True)`` gives, as the same JSON values (tests/unit/test_protojson.py
checks every message kind against protobuf's own encoder), built as plain Python values from each
message's descriptor and encoded by msgspec (C), then indented by msgspec.

Proto3's JSON mapping, as used here: field names in lowerCamelCase (the descriptor's json_name); 64-bit
integers as decimal strings; enums by name (an unknown number as the number); bytes in base64; NaN and
the infinities as the strings "NaN", "Infinity", "-Infinity"; repeated fields as arrays, maps as
objects with string keys. Fields without presence (plain scalars, repeated, maps) are always written,
defaults included; a message or optional field only when set. Keys are in declaration order (protobuf's
encoder writes the set fields first): the JSON values are the same.

Why not MessageToJson: it walks every field in Python and then runs the json module, which took 80-90 %
of `parallel --format json` at 1,024 ranks; bench/bench_protojson.py measures both.
"""

from __future__ import annotations

import base64
import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import msgspec
from google.protobuf.descriptor import FieldDescriptor as FD

_INT64 = {FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_SINT64, FD.TYPE_FIXED64, FD.TYPE_SFIXED64}
_FLOAT = {FD.TYPE_DOUBLE, FD.TYPE_FLOAT}
_encoder = msgspec.json.Encoder()


def _num(v: float):
    if math.isfinite(v):
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


def _scalar(field) -> Optional[Callable]:
    """The converter of one value of a scalar, enum or message field (None: the value as it is)."""
    t = field.type
    if t == FD.TYPE_MESSAGE:
        return _value_of
    if t in _INT64:
        return str
    if t in _FLOAT:
        return _num
    if t == FD.TYPE_BYTES:
        return lambda b: base64.b64encode(b).decode("ascii")
    if t == FD.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return lambda n: names.get(n, n)
    return None  # bool, string, 32-bit integers: as they are


_Plan = List[Tuple[str, str, int, Optional[Callable], bool]]
_plans: Dict[object, _Plan] = {}


def _plan(descriptor) -> _Plan:
    """(attribute name, JSON name, kind, converter, has presence) per field, in declaration order.
    kind: 0 singular, 1 repeated, 2 map."""
    plan = _plans.get(descriptor)
    if plan is None:
        plan = []
        for f in descriptor.fields:
            is_map = f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry
            repeated = f.is_repeated
            if is_map:
                value_field = f.message_type.fields_by_name["value"]
                conv = _scalar(value_field)
                kind = 2
            else:
                conv = _scalar(f)
                kind = 1 if repeated else 0
            presence = (not repeated) and f.has_presence
            plan.append((f.name, f.json_name, kind, conv, presence))
        _plans[descriptor] = plan
    return plan


def _value_of(message) -> dict:
    out = {}
    for name, json_name, kind, conv, presence in _plan(message.DESCRIPTOR):
        if presence and not message.HasField(name):
            continue
        value = getattr(message, name)
        if kind == 0:
            out[json_name] = conv(value) if conv is not None else value
        elif kind == 1:
            out[json_name] = list(map(conv, value)) if conv is not None else list(value)
        else:
            out[json_name] = {str(k): (conv(v) if conv is not None else v) for k, v in value.items()}
    return out


def to_value(message) -> dict:
    """The message as JSON-ready Python values (dicts, lists, strings, numbers)."""
    return _value_of(message)


def columns_value(descriptor, columns: Dict[str, Sequence]) -> List[dict]:
    """The JSON objects of messages of ``descriptor`` given as columns: field name -> a value per message,
    every field of the message given. A singular field's values are converted as to_value converts them
    (scalars and enums; no field with presence); a repeated field's are taken as JSON values already (lists
    of objects made by this function, say). Tens of thousands of matched instances without a protobuf
    message each (what --format json spent most of its time on)."""
    plan = _plan(descriptor)
    cols = []
    for name, json_name, kind, conv, presence in plan:
        if presence or kind == 2 or (kind == 0 and conv is _value_of):
            raise ValueError(f"{descriptor.name}.{name}: not a column of scalars or of JSON values")
        values = columns[name]
        cols.append(list(map(conv, values)) if kind == 0 and conv is not None else values)
    names = [json_name for _, json_name, _, _, _ in plan]
    return [dict(zip(names, row)) for row in zip(*cols)]


def to_json_bytes(message, indent: Optional[int] = 2) -> bytes:
    """The proto3 JSON of the message, UTF-8; ``indent`` 0 or None: on one line."""
    return value_json_bytes(_value_of(message), indent)


def value_json_bytes(value, indent: Optional[int] = 2) -> bytes:
    """JSON values (to_value's) as UTF-8 JSON; ``indent`` 0 or None: on one line."""
    data = _encoder.encode(value)
    return msgspec.json.format(data, indent=indent) if indent else data


def to_json(message, indent: int = 2) -> str:
    return to_json_bytes(message, indent).decode("utf-8")
