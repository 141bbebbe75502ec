"""The approver's page shows what a reliability table change would put in force: its
digest and every entry (as data, escaped), in place of the candidate rows."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape

from assay.candidate_digest import candidate_digest
from assay.console.pages.approver import view
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

DIGEST = "sha256:" + "ab" * 32


def details(approval: pb.Approval) -> str:
    templates = Environment(
        loader=PackageLoader("assay.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    macro = templates.from_string('{% from "_approval.html" import details %}{{ details(a) }}')
    return macro.render(a=view(approval))


def test_a_table_change_shows_its_digest_and_every_entry() -> None:
    change = adj.ReliabilityTableChange(
        table_digest=DIGEST, sources={"ci_status": 0.7, "<b>kind</b>": 0.5}, tree_size=42
    )
    html = details(pb.Approval(approval_id="approval_1", tenant="acme", table_change=change))
    assert DIGEST in html
    assert "ci_status</span> = 0.7" in html
    assert "&lt;b&gt;kind&lt;/b&gt;" in html
    assert "checkpoint 42" in html
    assert "Candidate" not in html


def test_a_candidate_still_shows_the_candidate() -> None:
    candidate = plan_pb2.AcquisitionCandidate(
        candidate_id="query_ci_status/process_result", probe=plan_pb2.PROBE_KIND_QUERY_CI_STATUS
    )
    candidate.candidate_digest = candidate_digest("svc", "p", candidate)
    html = details(pb.Approval(approval_id="approval_2", subject="svc", candidate=candidate))
    assert "Candidate digest" in html
    assert candidate.candidate_digest in html
    assert "Reliability table change" not in html
