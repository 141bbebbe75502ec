"""The deploy artifacts agree with the code: no container engine runs here, so the Dockerfile,
compose.yaml and deploy/k8s/ are checked statically against what ``assay`` really accepts.

Every container command is parsed by the real ``assay`` argument parser (an unknown flag
fails it), ports and probes are compared with the services' default ports and health names,
every ``ASSAY_*`` variable must be one a flag documents, and every file a flag names must
sit on a mounted volume. The health-check script the image ships is run against a real
server, and so is the console's health check in compose.yaml, against a real console.

The console is checked the same way: its command parses as ``assay serve console`` on its
port, reaching each service at that service's own address, with its health check on
``/healthz``.

Each Deployment's metrics port, scrape annotations, requests and limits, disruption budget
and network policy (its ports against its Services', the callers it admits) are checked
against the parsed flags; docs/deploy.md's PostgreSQL role and restore steps are run
against a real server.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import grpc
import pytest
import yaml

from assay.cli.main import build_parser
from assay.client.channel import channel_options
from assay.console.server import start as start_console
from assay.console.settings import DEFAULT_PORT as CONSOLE_PORT
from assay.console.settings import ConsoleSettings
from assay.runtime.auth.dev_credentials import write_dev_credentials
from assay.runtime.config import ServerConfig
from assay.runtime.server import ServiceSpec, serving
from assay.services.registry import SERVICES, ServeOptions
from assay.tlog.checkpoint import load_or_create_signing_key
from assay.transport import target_addresses
from assay.v1 import (
    adjudication_service_pb2,
    adjudication_service_pb2_grpc,
    gold_pb2,
    planner_service_pb2,
    resolver_service_pb2,
)
from tests.support.postgres import PostgresServer, unavailable
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
ASSAY_SERVICES = ("resolver", "planner", "adjudication")
CONSOLE = "console"
# The services' addresses in the cluster, as their Services name them.
K8S_TARGETS = {
    "adjudication": "dns:///assay-adjudication-headless.assay.svc.cluster.local:50053",
    "planner": "assay-planner.assay.svc.cluster.local:50052",
    "resolver": "dns:///assay-resolver-headless.assay.svc.cluster.local:50051",
}
# The name each service reports in grpc.health.v1 besides "" (the server as a whole).
HEALTH_NAMES = {
    "resolver": resolver_service_pb2.DESCRIPTOR.services_by_name["ResolverService"].full_name,
    "planner": planner_service_pb2.DESCRIPTOR.services_by_name["PlannerService"].full_name,
    "adjudication": adjudication_service_pb2.DESCRIPTOR.services_by_name[
        "AdjudicationService"
    ].full_name,
}


def serve_parser() -> argparse.ArgumentParser:
    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    serve: argparse.ArgumentParser = subparsers.choices["serve"]
    return serve


def serve_args(command: list[str]) -> argparse.Namespace:
    """``command`` as ``assay`` parses it (SystemExit, failing the test, on an unknown flag;
    every flag spelled out in full, as argparse would accept an abbreviation)."""
    words = [str(part) for part in command]
    flags = {option for action in serve_parser()._actions for option in action.option_strings}
    for word in words:
        if word.startswith("--"):
            assert word.split("=", 1)[0] in flags, f"{word} is not an `assay serve` flag"
    args = build_parser().parse_args(words)
    assert args.handler.__name__ == "_serve", command
    return args


def subcommand(name: str) -> argparse.ArgumentParser:
    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    found: argparse.ArgumentParser = subparsers.choices[name]
    return found


def port_of(args: argparse.Namespace) -> int:
    if args.service == CONSOLE:  # its default comes from ASSAY_CONSOLE_PORT: said outright
        assert args.port is not None, "the console's port is given with --port"
        console: int = args.port
        return console
    port: int = args.port if args.port is not None else SERVICES[args.service].default_port
    return port


def documented_env_names() -> set[str]:
    """Every ``ASSAY_*`` variable the ``serve`` flags name in their help, ``(env NAME …``."""
    names: set[str] = set()
    for action in serve_parser()._actions:
        names.update(re.findall(r"env (ASSAY_[A-Z_]+)", action.help or ""))
    return names


def files_named(args: argparse.Namespace) -> list[str]:
    """The absolute paths the parsed flags point at (certificates, policies, tokens, keys)."""
    return [v for v in vars(args).values() if isinstance(v, str) and v.startswith("/")]


# --- Dockerfile -------------------------------------------------------------------------


class TestDockerfile:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")

    def _final_stage(self) -> str:
        return self.text.rsplit("\nFROM ", 1)[1]

    def test_multi_stage(self) -> None:
        """A build stage and a runtime stage that copies only the built environment."""
        assert len(re.findall(r"^FROM ", self.text, re.MULTILINE)) >= 2
        assert "COPY --from=build" in self._final_stage()

    def test_runs_as_a_numeric_non_root_user(self) -> None:
        """The last USER is a numeric uid other than 0 (runAsNonRoot can verify it)."""
        users = re.findall(r"^USER (\S+)", self._final_stage(), re.MULTILINE)
        assert users, "no USER in the final stage"
        uid = users[-1].split(":")[0]
        assert uid.isdigit()
        assert int(uid) != 0

    def test_entry_point_is_assay(self) -> None:
        """``docker run IMAGE serve resolver`` runs ``assay serve resolver``."""
        assert re.search(r'^ENTRYPOINT \["assay"\]$', self.text, re.MULTILINE)

    def test_installs_the_project_as_ci_does(self) -> None:
        """pip installs the project from pyproject.toml's pins, not a list of its own."""
        assert "COPY pyproject.toml" in self.text
        assert re.search(r"pip install [^\n]*\.\s", self.text)

    def test_exposes_the_default_ports(self) -> None:
        exposed = re.search(r"^EXPOSE (.+)$", self.text, re.MULTILINE)
        assert exposed is not None
        assert {int(p) for p in exposed.group(1).split()} == {
            entry.default_port for entry in SERVICES.values()
        }

    def test_the_image_uid_is_the_one_kubernetes_runs_as(self) -> None:
        users = re.findall(r"^USER (\d+)", self.text, re.MULTILINE)
        for deployment in deployments().values():
            context = deployment["spec"]["template"]["spec"]["securityContext"]
            assert str(context["runAsUser"]) == users[-1]

    def test_dockerignore_lets_in_what_the_build_copies(self) -> None:
        """Each COPY source from the context is re-included by .dockerignore."""
        ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8")
        for line in re.findall(r"^COPY (?!--from)(.+)$", self.text, re.MULTILINE):
            for source in line.split()[:-1]:
                assert f"!{source.rstrip('/')}" in ignore.replace("/\n", "\n"), source


# --- compose.yaml -----------------------------------------------------------------------


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def unset_default(value: str) -> str:
    """``value`` with each ``${VAR:-default}`` replaced by its default (the variable unset)."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


class TestCompose:
    def test_the_three_services_and_postgres(self) -> None:
        assert {*ASSAY_SERVICES, "postgres"} <= set(compose()["services"])

    @pytest.mark.parametrize("name", ASSAY_SERVICES)
    def test_command_ports_and_health_check(self, name: str) -> None:
        """The command parses, serves this service on its default port, and the health
        check asks that port."""
        service = compose()["services"][name]
        args = serve_args(service["command"])
        assert args.service == name
        port = port_of(args)
        assert port == SERVICES[name].default_port
        published = [unset_default(str(p)).split(":")[-1] for p in service["ports"]]
        assert str(port) in published
        test = service["healthcheck"]["test"]
        assert test[:3] == ["CMD", "assay-healthcheck", f"127.0.0.1:{port}"]
        ca = test[test.index("--ca") + 1]
        mounts = [v.split(":")[1] for v in service["volumes"]]
        assert any(ca.startswith(m + "/") for m in mounts)
        for path in files_named(args):
            assert any(path == m or path.startswith(m + "/") for m in mounts), path

    def test_the_planner_balances_over_the_resolver_service(self) -> None:
        """``--resolver dns:///resolver:PORT``: every resolver replica, on its port."""
        planner = compose()["services"]["planner"]
        args = serve_args(planner["command"])
        assert args.resolver.startswith("dns:///")
        (address,) = target_addresses(args.resolver)
        assert address == f"resolver:{SERVICES['resolver'].default_port}"
        assert planner["depends_on"]["resolver"]["condition"] == "service_healthy"

    def test_adjudication_takes_its_postgresql_url_from_the_environment(self) -> None:
        adjudication = compose()["services"]["adjudication"]
        url = adjudication["environment"]["ASSAY_DB"]
        assert url.startswith("${ASSAY_DB:-postgresql://")
        assert "@postgres:5432/" in url
        assert "ASSAY_DB" in documented_env_names()
        assert adjudication["depends_on"]["postgres"]["condition"] == "service_healthy"

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_every_called_port_is_published_at_its_default(self, name: str) -> None:
        """A client on the host reaches each service, and the console, on its default port
        (``${VAR:-default}`` read as Compose reads it unset); PostgreSQL stays unpublished."""
        service = compose()["services"][name]
        port = CONSOLE_PORT if name == CONSOLE else SERVICES[name].default_port
        assert port_of(serve_args(service["command"])) == port
        published = [unset_default(str(p)) for p in service["ports"]]
        assert published == [f"{port}:{port}"]
        assert "ports" not in compose()["services"]["postgres"]

    def test_environment_names_are_real(self) -> None:
        known = documented_env_names()
        for name in ASSAY_SERVICES:
            for key in compose()["services"][name]["environment"]:
                assert key in known, f"{name}: {key} is not an ASSAY_* variable a flag reads"


# --- deploy/k8s -------------------------------------------------------------------------


def manifests() -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        documents.extend(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d)
    return documents


def deployments() -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"].removeprefix("assay-"): d
        for d in manifests()
        if d["kind"] == "Deployment"
    }


def of_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in manifests() if d["kind"] == kind}


def container(name: str) -> dict[str, Any]:
    (only,) = deployments()[name]["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = only
    return found


def pod_labels(name: str) -> dict[str, str]:
    labels: dict[str, str] = deployments()[name]["spec"]["template"]["metadata"]["labels"]
    return labels


def selecting(kind: str, name: str) -> list[dict[str, Any]]:
    """The objects of ``kind`` whose pod selector picks the pods of Deployment ``name``."""
    labels = pod_labels(name).items()
    found = []
    for item in of_kind(kind).values():
        spec = item["spec"]
        selector = spec.get("selector", spec.get("podSelector"))
        match = selector.get("matchLabels", selector) if kind != "Service" else selector
        if match and match.items() <= labels:
            found.append(item)
    return found


def headless_service(name: str) -> dict[str, Any]:
    """The one headless Service (``clusterIP: None``) selecting Deployment ``name``."""
    (service,) = [s for s in selecting("Service", name) if s["spec"].get("clusterIP") == "None"]
    return service


def container_port(name: str, port: int | str) -> int:
    """A Service's or a policy's ``port`` (a number, or a container port's name) as the
    number the container of Deployment ``name`` listens on."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container(name)["ports"] if p["name"] == port]
    found: int = number
    return found


def quantity(value: str | int) -> float:
    """A Kubernetes resource quantity (``250m``, ``2``, ``512Mi``, ``2Gi``) as a number."""
    text = str(value)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text.removesuffix(suffix)) * factor
    return float(text)


# The namespace Prometheus scrapes from, by the label Kubernetes sets on every namespace.
MONITORING = {"kubernetes.io/metadata.name": "monitoring"}
# The cluster DNS: every pod resolves names (the headless Services' above all).
CLUSTER_DNS = {"kubernetes.io/metadata.name": "kube-system"}


def network_policy(name: str) -> dict[str, Any]:
    (policy,) = selecting("NetworkPolicy", name)
    return policy


def rule_ports(rule: dict[str, Any], name: str) -> set[tuple[int, str]]:
    return {(container_port(name, p["port"]), p.get("protocol", "TCP")) for p in rule["ports"]}


def same_namespace_callers(policy: dict[str, Any]) -> dict[str, set[int]]:
    """The Assay pods of the policy's own namespace each ingress rule admits, by name
    (``assay-planner`` …), with the ports admitted: peers with a podSelector alone."""
    callers: dict[str, set[int]] = {}
    for rule in policy["spec"]["ingress"]:
        for peer in rule["from"]:
            if set(peer) == {"podSelector"}:
                caller = peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
                callers.setdefault(caller, set()).update(p["port"] for p in rule["ports"])
    return callers


def egress_to(policy: dict[str, Any], name: str) -> set[int]:
    """The ports the policy's pods may open to the pods of Deployment ``name``."""
    labels = pod_labels(name).items()
    ports: set[int] = set()
    for rule in policy["spec"]["egress"]:
        for peer in rule.get("to", []):
            match = peer.get("podSelector", {}).get("matchLabels", {})
            if set(peer) == {"podSelector"} and match and match.items() <= labels:
                ports.update(p["port"] for p in rule["ports"])
    return ports


class TestKubernetes:
    def test_a_deployment_per_service_and_the_console(self) -> None:
        assert set(deployments()) == {*ASSAY_SERVICES, CONSOLE}

    @pytest.mark.parametrize("name", ASSAY_SERVICES)
    def test_args_ports_and_grpc_probes(self, name: str) -> None:
        """Args parse; the container port and every probe are the service's default port;
        readiness asks the service's own health name, liveness the server's."""
        spec = container(name)
        args = serve_args(spec["args"])
        assert args.service == name
        port = port_of(args)
        assert port == SERVICES[name].default_port
        assert [p["containerPort"] for p in spec["ports"]] == [port, args.metrics_port]
        assert spec["readinessProbe"]["grpc"] == {"port": port, "service": HEALTH_NAMES[name]}
        assert spec["livenessProbe"]["grpc"] == {"port": port, "service": ""}
        if "startupProbe" in spec:
            assert spec["startupProbe"]["grpc"]["port"] == port

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_non_root_and_locked_down(self, name: str) -> None:
        pod = deployments()[name]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        own = container(name)["securityContext"]
        assert own["allowPrivilegeEscalation"] is False
        assert own["capabilities"]["drop"] == ["ALL"]

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_files_and_secrets_exist(self, name: str) -> None:
        """Each file a flag names is on a mounted volume; each Secret used is defined, with
        the keys used; every ASSAY_* variable is one a flag reads."""
        pod = deployments()[name]["spec"]["template"]["spec"]
        spec = container(name)
        mounts = {m["name"]: m["mountPath"] for m in spec["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        secrets = of_kind("Secret")
        for path in files_named(serve_args(spec["args"])):
            holder = [n for n, m in mounts.items() if path.startswith(m + "/")]
            assert holder, f"{name}: {path} is on no volume"
            volume = volumes[holder[0]]
            key = path.rsplit("/", 1)[1]
            if "secret" in volume:
                secret = secrets[volume["secret"]["secretName"]]
                assert key in secret["stringData"], f"{name}: {key} not in the Secret"
                items = volume["secret"].get("items")
                assert items is None or key in [i["path"] for i in items]
        known = documented_env_names()
        for variable in spec["env"]:
            assert variable["name"] in known, variable["name"]
            ref = variable.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["key"] in secrets[ref["name"]]["stringData"]

    def test_the_database_url_comes_from_a_secret(self) -> None:
        (db,) = [e for e in container("adjudication")["env"] if e["name"] == "ASSAY_DB"]
        ref = db["valueFrom"]["secretKeyRef"]
        url = of_kind("Secret")[ref["name"]]["stringData"][ref["key"]]
        assert url.startswith("postgresql://")

    def test_the_planner_sees_every_resolver_pod(self) -> None:
        """A headless Service selects the resolver pods, and the planner's ``--resolver`` is
        its DNS name, so round_robin balances over every pod."""
        service = headless_service("resolver")
        port = SERVICES["resolver"].default_port
        assert [p["port"] for p in service["spec"]["ports"]] == [port]
        meta = service["metadata"]
        args = serve_args(container("planner")["args"])
        assert args.resolver == (
            f"dns:///{meta['name']}.{meta['namespace']}.svc.cluster.local:{port}"
        )

    def test_services_point_at_the_named_container_port(self) -> None:
        """Each Service's target is a named port of the Deployment it selects: ``grpc`` for
        the services, ``http`` for the console."""
        for service in of_kind("Service").values():
            name = service["spec"]["selector"]["app.kubernetes.io/name"].removeprefix("assay-")
            named = {p["name"] for p in container(name)["ports"]}
            for port in service["spec"]["ports"]:
                assert port["targetPort"] == ("http" if name == CONSOLE else "grpc")
                assert port["targetPort"] in named

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_metrics_port_and_scrape_annotations(self, name: str) -> None:
        """``--metrics-port`` is given, a container port named ``metrics`` is that port, and
        the pod's Prometheus annotations point at it (``/metrics``)."""
        spec = container(name)
        args = serve_args(spec["args"])
        assert args.metrics_port is not None, f"{name}: no --metrics-port"
        assert args.metrics_port != port_of(args)
        assert container_port(name, "metrics") == args.metrics_port
        annotations = deployments()[name]["spec"]["template"]["metadata"]["annotations"]
        assert annotations == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(args.metrics_port),
            "prometheus.io/path": "/metrics",
        }

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_requests_and_limits(self, name: str) -> None:
        """CPU and memory are requested and limited, each limit at least its request."""
        resources = container(name)["resources"]
        for resource in ("cpu", "memory"):
            request = quantity(resources["requests"][resource])
            limit = quantity(resources["limits"][resource])
            assert 0 < request <= limit, (name, resource)

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_a_disruption_budget_that_never_blocks_a_drain(self, name: str) -> None:
        """One PodDisruptionBudget selects the pods; it lets one pod go at a time whatever
        the replica count (``maxUnavailable: 1``), so a drain proceeds."""
        (budget,) = selecting("PodDisruptionBudget", name)
        assert budget["spec"]["maxUnavailable"] == 1
        assert "minAvailable" not in budget["spec"]
        labels = deployments()[name]["spec"]["selector"]["matchLabels"]
        assert budget["spec"]["selector"]["matchLabels"] == labels

    @pytest.mark.parametrize("name", [*ASSAY_SERVICES, CONSOLE])
    def test_a_network_policy_admits_exactly_the_served_ports(self, name: str) -> None:
        """One NetworkPolicy selects the pods, in both directions. Its ingress ports, beside
        the scrape rule, are the ports its Services send to; the scrape rule admits the
        monitoring namespace to the metrics port alone; no rule admits everyone; DNS out."""
        policy = network_policy(name)
        assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        served = {
            (container_port(name, p["targetPort"]), p["protocol"])
            for service in selecting("Service", name)
            for p in service["spec"]["ports"]
        }
        metrics = {(serve_args(container(name)["args"]).metrics_port, "TCP")}
        admitted: set[tuple[int, str]] = set()
        for rule in policy["spec"]["ingress"]:
            assert rule.get("from"), f"{name}: an ingress rule admits every source"
            if rule["from"] == [{"namespaceSelector": {"matchLabels": MONITORING}}]:
                assert rule_ports(rule, name) == metrics
            else:
                admitted |= rule_ports(rule, name)
        assert admitted == served
        dns = [
            rule
            for rule in policy["spec"]["egress"]
            if any(
                peer.get("namespaceSelector", {}).get("matchLabels") == CLUSTER_DNS
                for peer in rule.get("to", [])
            )
        ]
        assert dns
        assert {(p["port"], p["protocol"]) for p in dns[0]["ports"]} == {(53, "UDP"), (53, "TCP")}

    def test_network_policies_admit_the_callers_each_service_has(self) -> None:
        """Within the namespace only the planner reaches the resolver and only the console
        reaches adjudication (besides labelled client pods); each caller may go out to it."""
        port = {name: SERVICES[name].default_port for name in ASSAY_SERVICES}
        callers = {name: same_namespace_callers(network_policy(name)) for name in deployments()}
        assert callers == {
            "resolver": {"assay-planner": {port["resolver"]}},
            "planner": {},
            "adjudication": {"assay-console": {port["adjudication"]}},
            CONSOLE: {},
        }
        assert egress_to(network_policy("planner"), "resolver") == {port["resolver"]}
        assert egress_to(network_policy(CONSOLE), "adjudication") == {port["adjudication"]}
        # Nothing else calls another Assay pod.
        assert egress_to(network_policy("resolver"), "planner") == set()
        assert egress_to(network_policy(CONSOLE), "planner") == set()
        assert egress_to(network_policy(CONSOLE), "resolver") == set()

    def test_the_client_labels_are_the_documented_ones(self) -> None:
        """Each service admits pods carrying ``assay/<service>-client: "true"`` from any
        namespace, the label docs/deploy.md tells executors and tool pods to carry."""
        text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
        for name in ASSAY_SERVICES:
            label = f"assay/{name}-client"
            peers = [
                peer
                for rule in network_policy(name)["spec"]["ingress"]
                for peer in rule["from"]
                if peer.get("podSelector", {}).get("matchLabels") == {label: "true"}
            ]
            assert peers == [
                {"namespaceSelector": {}, "podSelector": {"matchLabels": {label: "true"}}}
            ]
            assert f'`{label}: "true"`' in text

    def test_adjudication_may_reach_its_database(self) -> None:
        """Adjudication's policy lets it open the port of the database URL in its Secret."""
        (db,) = [e for e in container("adjudication")["env"] if e["name"] == "ASSAY_DB"]
        ref = db["valueFrom"]["secretKeyRef"]
        url = urlsplit(of_kind("Secret")[ref["name"]]["stringData"][ref["key"]])
        egress = network_policy("adjudication")["spec"]["egress"]
        assert any({"port": url.port, "protocol": "TCP"} in rule["ports"] for rule in egress)

    @pytest.mark.parametrize("name", ASSAY_SERVICES)
    def test_a_headless_service_where_clients_balance(self, name: str) -> None:
        """Each service has a headless Service on its gRPC port, and docs/deploy.md gives
        its ``dns:///`` target, which the Assay clients balance round_robin over."""
        service = headless_service(name)
        port = SERVICES[name].default_port
        assert [container_port(name, p["targetPort"]) for p in service["spec"]["ports"]] == [port]
        assert [p["port"] for p in service["spec"]["ports"]] == [port]
        meta = service["metadata"]
        target = f"dns:///{meta['name']}.{meta['namespace']}.svc.cluster.local:{port}"
        assert target in (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
        config = json.loads(dict(channel_options([]))["grpc.service_config"])
        assert config["loadBalancingConfig"] == [{"round_robin": {}}]


# --- the console --------------------------------------------------------------------------


class TestConsole:
    def test_compose_serves_it_on_its_port_with_a_health_check(self) -> None:
        """``assay serve console`` on 8080, published; the health check asks /healthz there
        over HTTPS trusting the mounted CA; every file a flag names is mounted."""
        service = compose()["services"][CONSOLE]
        args = serve_args(service["command"])
        assert args.service == CONSOLE
        assert port_of(args) == CONSOLE_PORT
        assert f"{CONSOLE_PORT}:{CONSOLE_PORT}" in service["ports"]
        check = " ".join(service["healthcheck"]["test"])
        assert f"https://127.0.0.1:{CONSOLE_PORT}/healthz" in check
        mounts = [v.split(":")[1] for v in service["volumes"]]
        cafile = re.search(r'cafile="([^"]+)"', check)
        assert cafile is not None
        assert any(cafile.group(1).startswith(m + "/") for m in mounts)
        for path in files_named(args):
            assert any(path == m or path.startswith(m + "/") for m in mounts), path

    def test_compose_reaches_each_service_at_its_own_address(self) -> None:
        """Each target is that Compose service on its port, verified under the name the
        development certificate carries; the console waits for them to be healthy."""
        service = compose()["services"][CONSOLE]
        args = serve_args(service["command"])
        for name in ASSAY_SERVICES:
            (address,) = target_addresses(getattr(args, name))
            assert address == f"{name}:{SERVICES[name].default_port}"
        assert args.services_server_name == "localhost"
        assert service["depends_on"]["adjudication"]["condition"] == "service_healthy"

    def test_compose_environment_names_are_real(self) -> None:
        known = documented_env_names()
        for key in compose()["services"][CONSOLE]["environment"]:
            assert key in known, f"console: {key} is not an ASSAY_* variable a flag reads"
        assert {"ASSAY_OIDC_ISSUER", "ASSAY_OIDC_CLIENT_ID", "ASSAY_CONSOLE_PORT"} <= known

    def test_kubernetes_serves_it_over_https_with_a_readiness_probe(self) -> None:
        """Its port, an HTTPS readiness probe on /healthz, a TCP liveness probe (an outage
        of a service never restarts it), its certificate and key given."""
        spec = container(CONSOLE)
        args = serve_args(spec["args"])
        assert args.service == CONSOLE
        port = port_of(args)
        assert port == CONSOLE_PORT
        assert [p["containerPort"] for p in spec["ports"]] == [port, args.metrics_port]
        assert spec["readinessProbe"]["httpGet"] == {
            "path": "/healthz",
            "port": port,
            "scheme": "HTTPS",
        }
        assert spec["livenessProbe"]["tcpSocket"] == {"port": port}
        assert args.tls_cert
        assert args.tls_key

    def test_kubernetes_reaches_each_service_through_its_service(self) -> None:
        """Each target is the cluster DNS name of that service's Service, on its port."""
        args = serve_args(container(CONSOLE)["args"])
        services = of_kind("Service")
        for name in ASSAY_SERVICES:
            target = getattr(args, name)
            assert target == K8S_TARGETS[name]
            host = target_addresses(target)[0].rsplit(":", 1)[0]
            assert host.split(".")[0] in services, target

    def test_the_settings_table_lists_every_console_flag_with_its_twin(self) -> None:
        """docs/deploy.md's console rows name each console flag of `serve` and `up` with
        the environment variable its help names."""
        parsers = [serve_parser(), subcommand("up")]
        helps = {o: a.help or "" for p in parsers for a in p._actions for o in a.option_strings}
        console_flags = {
            option
            for parser in parsers
            for group in parser._action_groups
            if group.title == CONSOLE
            for action in group._group_actions
            for option in action.option_strings
        }
        text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
        documented = set()
        for line in text.splitlines():
            cells = line.split("|")
            if not line.startswith("| ") or len(cells) < 5 or "console" not in cells[1]:
                continue
            flags = re.findall(r"`(--[a-z-]+)`", cells[2])
            envs = re.findall(r"`(ASSAY_[A-Z_]+)`", cells[3])
            assert len(flags) == len(envs), line
            for flag, env in zip(flags, envs, strict=True):
                assert f"env {env}" in helps[flag], (flag, env)
                documented.add(flag)
        assert console_flags <= documented

    async def test_the_compose_health_check_passes_against_a_real_console(
        self, tmp_path: Path
    ) -> None:
        """The compose health check, its paths and port pointed here: exit 0 against a
        console over HTTPS whose service answers; non-zero when nothing listens."""
        import asyncio

        from assay.services.resolver import service as resolver_service

        creds = write_dev_credentials(tmp_path / "creds")
        spec = ServiceSpec(
            name="resolver",
            descriptor=resolver_service.SERVICE_DESCRIPTOR,
            servicer=resolver_service.make_servicer(),
            port=0,
        )
        test = compose()["services"][CONSOLE]["healthcheck"]["test"]
        assert test[:3] == ["CMD", "python", "-c"]

        def run(port: int) -> int:
            code = test[3].replace("/var/lib/assay/creds", str(creds.root))
            code = code.replace(f":{CONSOLE_PORT}/", f":{port}/")
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, timeout=30, check=False
            )
            return done.returncode

        async with serving([spec], ServerConfig(grace_seconds=0)) as running:
            settings = ConsoleSettings(
                port=0,
                adjudication=running[0].address,
                tls_cert=creds.server_cert,
                tls_key=creds.server_key,
                dev_credentials=creds.root,
            )
            console = await start_console(settings, grace=0)
            try:
                port = int(console.address.rsplit(":", 1)[1])
                assert await asyncio.to_thread(run, port) == 0
            finally:
                await console.stop()
        assert await asyncio.to_thread(run, free_port()) != 0


# --- the image's health check -----------------------------------------------------------


class TestHealthCheckScript:
    async def test_serving_is_exit_zero_and_unreachable_is_one(self) -> None:
        """Against a real resolver: SERVING exits 0; a port nobody listens on exits 1."""
        import asyncio

        from assay.services.resolver import service as resolver_service

        spec = ServiceSpec(
            name="resolver",
            descriptor=resolver_service.SERVICE_DESCRIPTOR,
            servicer=resolver_service.make_servicer(),
            port=0,
        )
        script = str(ROOT / "deploy" / "healthcheck.py")

        def run(*argv: str) -> int:
            done = subprocess.run(
                [sys.executable, script, *argv], capture_output=True, timeout=30, check=False
            )
            return done.returncode

        async with serving([spec], ServerConfig(grace_seconds=0)) as running:
            address = running[0].address
            assert await asyncio.to_thread(run, address) == 0
            assert await asyncio.to_thread(run, address, "--service", HEALTH_NAMES["resolver"]) == 0
        assert await asyncio.to_thread(run, f"127.0.0.1:{free_port()}", "--timeout", "1") == 1


# --- docs/deploy.md's PostgreSQL runbook, run against a real server ----------------------


def doc_block(heading: str, language: str, holding: str) -> str:
    """The one fenced ``language`` block under ``heading`` in docs/deploy.md that holds
    ``holding``, its lines unindented."""
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(rf"```{language}\n(.*?)\n *```", section, re.DOTALL)
    (block,) = [b for b in blocks if holding in b]
    return "\n".join(line.strip() for line in block.splitlines())


def client_tool(server: PostgresServer, name: str) -> str:
    """``pg_dump``, ``pg_restore`` or ``psql`` of the server's version, else on PATH."""
    found = server.bin_dir / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        unavailable(f"no {name} beside the server or on PATH")
        raise AssertionError("unreachable")
    return on_path


def run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False, **options
    )


def assay_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``assay ARGV`` as a user runs it, from this environment's scripts."""
    return run([str(Path(sys.executable).parent / "assay"), *argv])


async def register_reviewers(target: str, count: int) -> None:
    """``count`` new fixture reviewers: one ledger event each."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = adjudication_service_pb2_grpc.AdjudicationServiceStub(channel)
        for _ in range(count):
            reviewer = adjudication_service_pb2.Reviewer(
                reviewer_id=f"r-{secrets.token_hex(4)}",
                kind=gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE,
            )
            request = adjudication_service_pb2.RegisterReviewerRequest(reviewer=reviewer)
            await stub.RegisterReviewer(request, timeout=10)


@pytest.mark.process
class TestPostgresRunbook:
    """The role and database docs/deploy.md creates are enough to migrate and serve and no
    more, and its restore steps give a database whose ledger extends the checkpoint saved
    before the backup; a checkpoint newer than the backup is refused by the documented check."""

    async def test_the_documented_role_serves_and_a_restore_extends_the_checkpoint(
        self, postgres_server: PostgresServer, tmp_path: Path
    ) -> None:
        import asyncio

        name = f"assay_{secrets.token_hex(4)}"  # the docs' role, database and schema
        restored = f"{name}_restored"
        password = secrets.token_urlsafe(16)

        def renamed(text: str) -> str:
            text = re.sub(r"\bassay(_restored)?\b", rf"{name}\1", text)
            return text.replace("CHANGE-ME", password)

        def dsn(database: str) -> str:
            return f"postgresql://{name}:{password}@127.0.0.1:{postgres_server.port}/{database}"

        key = tmp_path / "ledger-key.pem"
        load_or_create_signing_key(key)
        public_key = tmp_path / "ledger.pub.pem"
        public_key.write_text(assay_cli("audit", "public-key", "--key", str(key)).stdout)

        async def serve(database: str, reviewers: int, since: Path | None = None) -> str:
            """Adjudication on ``database`` as the role: ``reviewers`` more events, the chain
            verified, a checkpoint saved as ``database-reviewers.checkpoint``; then the
            outcome of ``assay audit verify --since`` (``since``, else that checkpoint)."""
            options = ServeOptions(
                port=0, db_path=dsn(database), ledger_signing_key=key, allow_fixture_reviewers=True
            )
            spec = await SERVICES["adjudication"].builder()(options)
            async with serving([spec], ServerConfig(grace_seconds=0)) as running:
                target = ["--target", running[0].address]
                await register_reviewers(running[0].address, reviewers)
                chain = await asyncio.to_thread(assay_cli, "audit", "verify", *target)
                assert chain.returncode == 0, chain.stderr
                saved = tmp_path / f"{database}-{reviewers}.checkpoint"
                out = ["--out", str(saved)]
                done = await asyncio.to_thread(assay_cli, "audit", "checkpoint", *target, *out)
                assert done.returncode == 0, done.stderr
                pinned = ["--since", str(since or saved), "--public-key", str(public_key)]
                checked = await asyncio.to_thread(assay_cli, "audit", "verify", *target, *pinned)
                return f"{checked.returncode} {checked.stdout}{checked.stderr}"

        sql = renamed(doc_block("## PostgreSQL: the role and the database", "sql", "CREATE ROLE"))
        on_server, in_database = re.split(r"^\\connect \S+$", sql, flags=re.MULTILINE)
        admin = await asyncpg.connect(postgres_server.dsn())
        try:
            for statement in filter(str.strip, on_server.split(";")):
                await admin.execute(statement)
            inside = await asyncpg.connect(postgres_server.dsn(name))
            try:
                await inside.execute(in_database)
            finally:
                await inside.close()

            # Enough to migrate and serve: three events, a checkpoint of them...
            assert (await serve(name, 3)).startswith("0 audit log consistent: 3 -> 3")
            # ...and no more.
            role = await asyncpg.connect(dsn(name))
            try:
                for refused in (
                    f"CREATE DATABASE {name}_x",
                    f"CREATE ROLE {name}_x",
                    "CREATE TABLE public.x (a int)",
                ):
                    with pytest.raises(asyncpg.InsufficientPrivilegeError):
                        await role.execute(refused)
            finally:
                await role.close()

            # A backup, then the runbook's restore as the administrator, into `restored`.
            dump = tmp_path / renamed("assay-2026-12-03.dump")
            backup = ["pg_dump", "--format=custom", "--dbname", dsn(name), "--file", str(dump)]
            backup[0] = client_tool(postgres_server, "pg_dump")
            done = await asyncio.to_thread(run, backup)
            assert done.returncode == 0, done.stderr
            restore = renamed(doc_block("## Backups and restores", "sh", "pg_restore"))
            admin_env = {
                **os.environ,
                "PGHOST": "127.0.0.1",
                "PGPORT": str(postgres_server.port),
                "PGUSER": urlsplit(postgres_server.dsn()).username or "",
                "PGPASSWORD": postgres_server.password,
                "PATH": f"{Path(client_tool(postgres_server, 'psql')).parent}:"
                + os.environ["PATH"],
            }
            script = ["bash", "-euo", "pipefail", "-c", restore]
            done = await asyncio.to_thread(run, script, cwd=tmp_path, env=admin_env)
            assert done.returncode == 0, done.stderr

            # The restored ledger extends the checkpoint saved before the backup...
            before = tmp_path / f"{name}-3.checkpoint"
            verdict = await serve(restored, 0, since=before)
            assert verdict.startswith("0 audit log consistent: 3 -> 3"), verdict
            # ...and a checkpoint saved after later writes finds the restored log shorter.
            await serve(name, 2)
            verdict = await serve(restored, 0, since=tmp_path / f"{name}-2.checkpoint")
            assert verdict.startswith("3 "), verdict
            assert "the log shrank: 5 event(s) saved, 3 now" in verdict
        finally:
            for database in (restored, name):
                await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            await admin.execute(f'DROP ROLE IF EXISTS "{name}"')
            await admin.close()
