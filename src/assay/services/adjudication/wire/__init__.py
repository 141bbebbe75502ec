"""Protobuf <-> the adjudication domain: ``values`` holds the field-level conversions
(timestamps, enums, digests), ``convert`` the messages. Nothing below this package sees
protobuf."""
