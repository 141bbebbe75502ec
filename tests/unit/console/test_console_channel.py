"""The console's channel to adjudication takes the client library's options: calls are
spread round_robin over every address its target resolves to (several replicas behind a
headless Service), and the retry-safe methods are retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.console import backends
from assay.console.settings import ConsoleSettings


def opened_with(monkeypatch: pytest.MonkeyPatch, settings: ConsoleSettings) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def insecure(target: str, options: Any = None) -> str:
        seen.update(target=target, options=dict(options or []))
        return "channel"

    def secure(target: str, credentials: Any, options: Any = None) -> str:
        seen.update(target=target, options=dict(options or []), secure=True)
        return "channel"

    monkeypatch.setattr(grpc.aio, "insecure_channel", insecure)
    monkeypatch.setattr(grpc.aio, "secure_channel", secure)
    backends._channel(settings.adjudication, settings)
    return seen


def settings_for(target: str, **extra: Any) -> ConsoleSettings:
    return ConsoleSettings(adjudication=target, **extra)


class TestConsoleChannel:
    def test_plaintext_balances_and_retries(self, monkeypatch: pytest.MonkeyPatch) -> None:
        seen = opened_with(monkeypatch, settings_for("dns:///adjudication-headless:50053"))
        config = json.loads(seen["options"]["grpc.service_config"])
        assert config["loadBalancingConfig"] == [{"round_robin": {}}]
        retried = {n["service"] for c in config["methodConfig"] for n in c["name"]}
        assert retried == {"assay.v1.AdjudicationService", "assay.v1.ApprovalService"}

    def test_tls_keeps_the_server_name_override(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        ca = tmp_path / "ca.pem"
        ca.write_bytes(b"")
        settings = settings_for(
            "dns:///adjudication-headless:50053", ca=ca, services_server_name="assay-services"
        )
        monkeypatch.setattr(grpc, "ssl_channel_credentials", lambda root: "credentials")
        seen = opened_with(monkeypatch, settings)
        assert seen["secure"]
        assert seen["options"]["grpc.ssl_target_name_override"] == "assay-services"
        assert "grpc.service_config" in seen["options"]
