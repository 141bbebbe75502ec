"""Rules of the contract that buf does not check: the error vocabulary matches the code,
every RPC is implemented and registered, and read-only RPCs say so."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor, MethodDescriptor, ServiceDescriptor

from assay import errors
from assay.services.registry import SERVICES, ServeOptions
from assay.v1 import errors_pb2

ROOT = Path(__file__).resolve().parents[2]
SERVICE_FILES = sorted((ROOT / "proto" / "assay" / "v1").glob("*_service.proto"))
READ_ONLY_PREFIXES = ("Get", "List", "Plan", "Compute", "Verify")
# The resolver's RPCs compute and return; nothing is stored. (Adjudication's ResolveCase, by
# contrast, records a decision: the verb alone does not make an RPC read-only.)
READ_ONLY_METHODS = {
    "assay.v1.ResolverService.ResolveSemantic",
    "assay.v1.ResolverService.ResolveEvidence",
    "assay.v1.ResolverService.ResolveHypotheses",
    "assay.v1.ResolverService.Reconcile",
}


def service_descriptors() -> list[ServiceDescriptor]:
    import importlib

    found: list[ServiceDescriptor] = []
    for path in SERVICE_FILES:
        module = importlib.import_module(f"assay.v1.{path.stem}_pb2")
        file: FileDescriptor = module.DESCRIPTOR
        found.extend(file.services_by_name.values())
    return found


class TestErrorVocabulary:
    def test_python_reasons_match_the_contract_enum(self) -> None:
        """`assay.errors.Reason` and the proto `ErrorReason` have exactly the same names."""
        proto_names = {
            value.name for value in errors_pb2.ErrorReason.DESCRIPTOR.values if value.number != 0
        }
        python_names = {reason.value for reason in errors.Reason}
        assert python_names == proto_names

    def test_every_reason_is_prefixed(self) -> None:
        """Reason strings are the full enum names, so clients can parse them into the enum."""
        for reason in errors.Reason:
            assert reason.value == f"ERROR_REASON_{reason.name}"
            assert errors_pb2.ErrorReason.Value(reason.value) > 0


class TestServicesImplemented:
    async def test_every_service_file_is_served_by_a_registered_service(
        self, tmp_path: Path
    ) -> None:
        """Each `*_service.proto` defines one service, and some service `assay serve` starts
        hosts it (ApprovalService is served by the adjudication process, beside its own)."""
        names = {d.full_name for d in service_descriptors()}
        assert len(names) == len(SERVICE_FILES)
        hosted: set[str] = set()
        for name, entry in SERVICES.items():
            spec = await entry.builder()(ServeOptions(port=0, db_path=str(tmp_path / f"{name}.db")))
            try:
                hosted |= {descriptor.full_name for descriptor, _ in spec.hosted}
            finally:
                if spec.close is not None:
                    await spec.close()
        assert hosted == names

    @pytest.mark.parametrize("name", sorted(SERVICES))
    async def test_every_rpc_has_an_async_implementation(self, name: str, tmp_path: Path) -> None:
        """The registered servicer implements every RPC of its service as a coroutine/generator."""
        spec = await SERVICES[name].builder()(
            ServeOptions(port=0, db_path=str(tmp_path / "contract.db"))
        )
        try:
            assert spec.descriptor.full_name in {d.full_name for d in service_descriptors()}
            for descriptor, servicer in spec.hosted:
                for method in descriptor.methods:
                    impl = getattr(servicer, method.name, None)
                    assert impl is not None, f"{name} does not implement {method.name}"
                    if method.server_streaming:
                        assert inspect.isasyncgenfunction(impl), method.name
                    else:
                        assert inspect.iscoroutinefunction(impl), method.name
        finally:
            if spec.close is not None:
                await spec.close()


class TestReadOnlyRpcs:
    @pytest.mark.parametrize(
        "method",
        [m for d in service_descriptors() for m in d.methods],
        ids=lambda m: m.full_name,
    )
    def test_read_only_rpcs_declare_no_side_effects(self, method: MethodDescriptor) -> None:
        """Read-only RPCs (Get/List/Resolve/Plan/...) carry idempotency_level NO_SIDE_EFFECTS."""
        options = descriptor_pb2.MethodOptions()
        options.ParseFromString(method.GetOptions().SerializeToString())
        if method.name.startswith(READ_ONLY_PREFIXES) or method.full_name in READ_ONLY_METHODS:
            level = options.idempotency_level
            assert level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS, method.name


class TestExportedApproval:
    def test_its_first_twelve_fields_are_approvals(self) -> None:
        """The export reads an approval's request fields from ``Approval``'s bytes
        (``wire.approval_export``): fields 1-12 must match in number, name and type."""
        from assay.v1 import adjudication_service_pb2, approval_service_pb2

        def shape(message: Any) -> list[tuple[int, str, int, str]]:
            return [
                (f.number, f.name, f.type, f.message_type.full_name if f.message_type else "")
                for f in message.DESCRIPTOR.fields
                if f.number <= 12
            ]

        exported = shape(adjudication_service_pb2.ExportedApproval)
        assert exported == shape(approval_service_pb2.Approval)
        assert len(exported) == 12
