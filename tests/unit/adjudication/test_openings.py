"""The openings an export carries hash to exactly the digests the ledger holds, recomputed
here with nothing but ``rfc8785`` and ``hashlib``, for every version a record may be in."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import rfc8785

from assay.services.adjudication.domain import blinding, gold, openings, records, reviews
from assay.services.adjudication.domain.model import Basis, Outcome, Provenance
from tests.unit.adjudication.factories import NOW, make_case, review


def sha256(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return "sha256:" + hashlib.sha256(data).hexdigest()


class TestShownContent:
    def test_the_shown_fields_are_blindings(self) -> None:
        """The fields the shown digest covers are exactly those the blinded view shows."""
        assert set(openings.SHOWN_FIELDS) == blinding.shown_fields()

    def test_enqueued_events_commit_to_the_shown_fields_alone(self) -> None:
        """``shown`` is the JCS digest of the field digests with its version; changing the
        hidden local verdict leaves it, changing a shown field does not."""
        case = make_case(candidate_values=("key", 1.5, {"b": [1, None]}))
        fields = {
            name: sha256(rfc8785.dumps(value))
            for name, value in openings.shown_values(case).items()
        }
        expected = sha256(rfc8785.dumps({"v": "assay.case.shown.v1", **fields}))
        assert records.enqueued_payload(case)["shown"] == expected
        assert openings.shown_field_digests(case) == fields
        hidden = dataclasses.replace(case, local_verdict="something else")
        assert records.enqueued_payload(hidden)["shown"] == expected
        shown = dataclasses.replace(case, subject="api:other")
        assert records.enqueued_payload(shown)["shown"] != expected

    def test_shown_is_a_later_field(self) -> None:
        """An event written before ``shown`` existed still matches its case."""
        case = make_case()
        older = {k: v for k, v in records.enqueued_payload(case).items() if k != "shown"}
        assert records.disagreement(records.case_commitment(case), older) == ""


class TestGoldDigested:
    @pytest.mark.parametrize("version", [gold.DIGEST_V1, gold.DIGEST_V2])
    @pytest.mark.parametrize("label_key", ['"key"', "1e-07", ""])
    def test_the_text_hashes_to_the_digest(self, version: str, label_key: str) -> None:
        """In both digest versions, SHA-256 of the digested text is the revision's digest,
        and the text parses to the documented fields."""
        basis = Basis.UNANIMOUS_AGREEMENT if label_key else Basis.UNRESOLVED
        fields = gold.canonical_fields(
            case_id="case-1",
            revision=1,
            previous_revision=0,
            round_=1,
            tenant="tenant-a",
            basis=basis,
            label_key=label_key,
            contributing_review_ids=("rev-a", "rev-b"),
            contributing_reviewer_ids=("ann", "bob"),
            adjudicator_reviewer_id="",
            provenance=Provenance.SYNTHETIC_MECHANISM_TEST,
            freeze_time=NOW,
            version=version,
        )
        revision = gold.checked_revision(fields, gold.versioned_digest(fields))
        text = openings.gold_digested(revision)
        assert sha256(text) == revision.digest
        assert json.loads(text) == fields
        if version == gold.DIGEST_V2:
            assert text.encode() == rfc8785.dumps(json.loads(text))


class TestAnswerOpening:
    @pytest.mark.parametrize("salt", ["00ff" * 8, ""])
    @pytest.mark.parametrize("outcome", [Outcome.LABEL, Outcome.UNRESOLVED])
    def test_the_opening_hashes_to_the_commitment(self, salt: str, outcome: Outcome) -> None:
        """Salted or not (a review stored before salting), the opening is the JSON array the
        ledger's ``answer`` is the SHA-256 of."""
        found = dataclasses.replace(review("ann", outcome=outcome), salt=salt)
        opening = reviews.answer_opening(found)
        assert sha256(opening) == reviews.answer_commitment(found)
        answer = [outcome.value, found.label_key, found.reason]
        assert json.loads(opening) == ([salt, *answer] if salt else answer)
