"""Generated protobuf code of the tb_paddle_profile.v1 schema (proto/); its JSON form is core/protojson.py.

Regenerate with `python tools/gen_proto.py`; never edit the *_pb2 files by hand.
"""
