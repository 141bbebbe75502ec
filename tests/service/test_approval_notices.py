"""The approval webhook: every change that commits is POSTed to a loopback receiver, with
ids, states and the actor but never the reason text, and a receiver that fails at first is
retried with backoff until it takes the notice."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import approval_service_pb2_grpc as pb_grpc
from tests.service.test_approvals import PRINCIPALS, World
from tests.support.approvals import candidate
from tests.support.eventually import eventually_async
from tests.support.loopback_http import QuietHandler, base_url, loopback_server, serving
from tests.support.secure import secure_stack


class Receiver:
    """A webhook receiver on 127.0.0.1: the JSON bodies it accepted, and how many POSTs it
    refused first (answering 500) to make the sender retry."""

    def __init__(self, refuse_first: int = 0) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.refused = 0
        self.refuse_first = refuse_first
        self.lock = threading.Lock()
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    if receiver.refused < receiver.refuse_first:
                        receiver.refused += 1
                        self.send_response(500)
                    else:
                        receiver.bodies.append(json.loads(body))
                        self.send_response(204)
                self.end_headers()

        self.server = loopback_server(Handler)

    @property
    def url(self) -> str:
        return f"{base_url(self.server)}/hook"

    def changes(self) -> list[str]:
        with self.lock:
            return [body["change"] for body in self.bodies]


@contextlib.contextmanager
def receiving(refuse_first: int = 0) -> Iterator[Receiver]:
    receiver = Receiver(refuse_first)
    with serving(receiver.server):
        yield receiver


async def test_each_change_is_posted_without_the_reason(tmp_path: Path) -> None:
    with receiving(refuse_first=1) as receiver:
        policy = f'[approvals]\nwebhook_url = "{receiver.url}"\n'
        async with (
            secure_stack(tmp_path, True, PRINCIPALS, approvals=policy) as stack,
            stack.channel("adjudication") as channel,
        ):
            stubs = (
                pb_grpc.ApprovalServiceStub(channel),
                adj_grpc.AdjudicationServiceStub(channel),
            )
            w = World(stack, *stubs, "")
            asked = await w.request(candidate())
            granted = await w.decide(asked.approval_id, "dave")
            await w.consume(granted)

            async def three() -> list[str] | None:
                seen = receiver.changes()
                return seen if len(seen) >= 3 else None

            changes = await eventually_async(three, message="three notices delivered")
        assert changes == ["REQUESTED", "APPROVED", "CONSUMED"]
        assert receiver.refused == 1  # the first POST was refused, then retried
        first, approved, used = receiver.bodies
        assert first["approval_id"] == asked.approval_id
        assert (first["state"], first["actor"]["subject"]) == ("PENDING", "operator")
        assert (approved["state"], approved["actor"]["subject"]) == ("GRANTED", "dave")
        assert used["state"] == "CONSUMED"
        assert used["candidate_digest"] == asked.candidate.candidate_digest
        for body in receiver.bodies:
            assert "reason" not in json.dumps(body)
            assert body["tenant"] == "acme"
            assert pb.ApprovalState.Value(f"APPROVAL_STATE_{body['state']}")
