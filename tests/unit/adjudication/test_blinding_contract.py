"""The blinding guarantee, checked on the contract itself (the proto descriptors).

Every field of the proto ``Case`` must be classified SHOWN or HIDDEN in
``blinding.FIELD_VISIBILITY``; the reviewer-facing message ``BlindedCase`` must carry
exactly the SHOWN fields (plus the round); and every reviewer-facing RPC must
return ``BlindedCase``, never ``Case``. Adding a field anywhere fails here until
someone decides whether it leaks the system's judgment.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor

from assay.services.adjudication.domain import blinding
from assay.v1 import adjudication_service_pb2 as pb

VERDICT_WORDS = ("verdict", "review", "resolution", "label", "lineage", "decision")


def field_names(message: Descriptor) -> set[str]:
    return {f.name for f in message.fields}


def nested_names(message: Descriptor, seen: set[str] | None = None) -> set[str]:
    """Every field name reachable from a message type."""
    seen = seen if seen is not None else set()
    names: set[str] = set()
    if message.full_name in seen:
        return names
    seen.add(message.full_name)
    for field in message.fields:
        names.add(field.name)
        if field.message_type is not None and not field.message_type.full_name.startswith(
            "google.protobuf"
        ):
            names |= nested_names(field.message_type, seen)
    return names


class TestCaseFieldsAreClassified:
    def test_every_proto_case_field_is_shown_or_hidden(self) -> None:
        """A new Case field fails until it is classified."""
        assert field_names(pb.Case.DESCRIPTOR) == set(blinding.FIELD_VISIBILITY)

    def test_blinded_case_has_exactly_the_shown_fields(self) -> None:
        """BlindedCase = SHOWN fields + round + whether it is assigned to the viewer; nothing
        HIDDEN, no verdict-like field."""
        blinded = field_names(pb.BlindedCase.DESCRIPTOR)
        assert blinded == blinding.shown_fields() | {"round", "assigned"}
        assert not any(
            w in name for name in nested_names(pb.BlindedCase.DESCRIPTOR) for w in VERDICT_WORDS
        )


class TestReviewerFacingRpcs:
    def test_reviewer_views_use_blinded_case(self) -> None:
        """GetBlindedCase, ListQueue and export records carry BlindedCase, never Case."""
        blinded = pb.BlindedCase.DESCRIPTOR.full_name
        for message, name in (
            (pb.GetBlindedCaseResponse, "case"),
            (pb.ListQueueResponse, "cases"),
            (pb.CorpusRecord, "case"),
        ):
            field_type = message.DESCRIPTOR.fields_by_name[name].message_type
            assert field_type is not None
            assert field_type.full_name == blinded, message.__name__

    def test_reviewer_responses_reach_no_verdict(self) -> None:
        """Nothing reachable from the reviewer responses is named like a verdict or a review."""
        for response in (pb.GetBlindedCaseResponse, pb.ListQueueResponse):
            names = nested_names(response.DESCRIPTOR)
            assert "local_verdict" not in names
            assert not any(w in n for n in names for w in VERDICT_WORDS), response.__name__
