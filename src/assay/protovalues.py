"""``google.protobuf.Value`` <-> plain Python JSON, shared by every service's ``convert`` layer.

Written by hand rather than with ``json_format`` because the resolver reads
a value for every claim on its hot path, where ``json_format`` costs several times more.
An empty object or list stays an object or list: the oneof is set before it is filled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from google.protobuf import struct_pb2

JsonValue: TypeAlias = "bool | float | str | Mapping[str, JsonValue] | Sequence[JsonValue] | None"


def value_to_json(value: struct_pb2.Value) -> JsonValue:
    """A ``Value`` as a plain JSON value (None for null or an unset kind)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return {k: value_to_json(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [value_to_json(v) for v in value.list_value.values]
    return None


def json_to_value(data: JsonValue, out: struct_pb2.Value | None = None) -> struct_pb2.Value:
    """Fill ``out`` (or a new ``Value``) from a plain JSON value; returns it."""
    value = out if out is not None else struct_pb2.Value()
    if data is None:
        value.null_value = struct_pb2.NULL_VALUE
    elif isinstance(data, bool):
        value.bool_value = data
    elif isinstance(data, int | float):
        value.number_value = float(data)
    elif isinstance(data, str):
        value.string_value = data
    elif isinstance(data, Mapping):
        value.struct_value.SetInParent()  # an empty object is still an object
        fields = value.struct_value.fields
        for name, item in data.items():
            json_to_value(item, fields[name])
    else:
        items = value.list_value
        items.SetInParent()  # an empty list is still a list
        for item in data:
            json_to_value(item, items.values.add())
    return value
