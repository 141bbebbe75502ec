"""Request bytes to messages, the one way every service refuses bytes it cannot read."""

from __future__ import annotations

from google.protobuf import message as pb_message

from assay import errors


def parse_request(request_type: type[pb_message.Message], raw: bytes) -> pb_message.Message:
    """``raw`` as a ``request_type``; bytes that are not one are MALFORMED_REQUEST."""
    try:
        return request_type.FromString(raw)
    except pb_message.DecodeError:
        raise errors.InvalidArgument(
            errors.Reason.MALFORMED_REQUEST,
            f"request bytes are not a valid {request_type.DESCRIPTOR.full_name}",
            [errors.FieldViolation("", "request is not a parseable protobuf message")],
        ) from None
