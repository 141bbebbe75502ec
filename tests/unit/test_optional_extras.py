"""A server installed without its optional extras starts, serves everything else, and answers
a call that needs one with FAILED_PRECONDITION FEATURE_NOT_INSTALLED naming the extra. The
absence is real for the interpreter that runs the probe: a finder refuses pyarrow and SciPy
before any module loads, as an install without them would."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

_PROBE = """
import asyncio, json, sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyarrow", "scipy"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent())

import grpc
from assay.runtime.server import serving
from assay.runtime.status import decode_rpc_error
from assay.services.registry import SERVICES, ServeOptions
from assay.v1 import adjudication_service_pb2 as adj, adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import resolver_service_pb2 as res, resolver_service_pb2_grpc as res_grpc


async def refused(call):
    try:
        await call
    except grpc.aio.AioRpcError as error:
        found = decode_rpc_error(error)
        return [found.code.name, found.reason, found.metadata.get("extra", "")]
    return ["OK"]


async def main(db):
    specs = [
        await SERVICES["resolver"].builder()(ServeOptions(port=0)),
        await SERVICES["adjudication"].builder()(ServeOptions(port=0, db_path=db)),
    ]
    async with serving(specs) as running:
        resolver_at, adjudication_at = running[0].address, running[1].address
        async with grpc.aio.insecure_channel(resolver_at) as r, grpc.aio.insecure_channel(
            adjudication_at
        ) as a:
            resolver = res_grpc.ResolverServiceStub(r)
            adjudication = adj_grpc.AdjudicationServiceStub(a)
            policy = await resolver.GetResolverPolicy(res.GetResolverPolicyRequest(), timeout=10)
            columns = await refused(
                resolver.ResolveColumns(res.ResolveColumnsRequest(claims_arrow=b"x"), timeout=10)
            )
            agreement = await refused(
                adjudication.ComputeAgreement(adj.ComputeAgreementRequest(), timeout=10)
            )
            calibration = await refused(
                adjudication.CalibrateReliability(
                    adj.CalibrateReliabilityRequest(declared={"documentation": 0.6}), timeout=10
                )
            )
    loaded = sorted({m.split(".")[0] for m in sys.modules} & {"pyarrow", "scipy"})
    print(json.dumps([bool(policy.reliability_table), columns, agreement, calibration, loaded]))


asyncio.run(main(sys.argv[1]))
"""


def _probe(db: str) -> Any:
    found = subprocess.run(
        [sys.executable, "-c", _PROBE, db], capture_output=True, text=True, timeout=120, check=False
    )
    assert found.returncode == 0, found.stderr[-3000:]
    return json.loads(found.stdout.strip().splitlines()[-1])


class TestWithoutTheOptionalExtras:
    def test_the_servers_start_and_name_the_missing_extra(self, tmp_path: Any) -> None:
        served, columns, agreement, calibration, loaded = _probe(str(tmp_path / "a.db"))
        assert served
        refusal = ["FAILED_PRECONDITION", "ERROR_REASON_FEATURE_NOT_INSTALLED"]
        assert columns == [*refusal, "columnar"]
        assert agreement == [*refusal, "stats"]
        assert calibration == [*refusal, "stats"]
        assert loaded == []
