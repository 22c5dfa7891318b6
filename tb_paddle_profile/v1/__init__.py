"""Generated protobuf code of the tb_paddle_profile.v1 schema (proto/), and its JSON form.

Regenerate with `python tools/gen_proto.py`; never edit the *_pb2 files by hand.
"""
from google.protobuf import json_format


def to_json(message, indent: int = 2) -> str:
    """Proto3 JSON with every field present, so that 0 and empty values are explicit (rank 0, ...)."""
    return json_format.MessageToJson(message, indent=indent, always_print_fields_with_no_presence=True)
