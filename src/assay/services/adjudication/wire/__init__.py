"""Protobuf <-> the adjudication domain: ``scalars`` holds the field-level conversions
(timestamps, enums, digests), ``convert`` the messages. Nothing below this package sees
protobuf."""
