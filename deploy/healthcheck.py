#!/opt/assay/bin/python
"""A gRPC health check for Docker and Compose: exit 0 when the server at TARGET says SERVING.

Kubernetes has the kubelet's own ``grpc:`` probe; Docker and Compose only run a command in
the container, and the image holds no grpcurl or grpc_health_probe, so this asks the
standard ``grpc.health.v1.Health/Check`` with the grpcio the image already has. A server
draining on SIGTERM answers NOT_SERVING, so it leaves the pool before it stops.

    assay-healthcheck 127.0.0.1:50051
    assay-healthcheck 127.0.0.1:50051 --ca /creds/ca.pem --server-name localhost
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay-healthcheck", description=__doc__)
    parser.add_argument("target", help="host:port of the server (in the container: loopback)")
    parser.add_argument("--service", default="", help="service name to check (default: the server)")
    parser.add_argument("--ca", type=Path, help="CA to verify a TLS server with (TLS when given)")
    parser.add_argument("--server-name", help="name the server's certificate carries")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")
    args = parser.parse_args(argv)
    options = [("grpc.default_authority", args.server_name)] if args.server_name else []
    if args.ca is None:
        channel = grpc.insecure_channel(args.target, options=options)
    else:
        credentials = grpc.ssl_channel_credentials(args.ca.read_bytes())
        channel = grpc.secure_channel(args.target, credentials, options=options)
    with channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout
            )
        except grpc.RpcError as error:
            print(f"{args.target}: {error.code().name}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{args.target}: {status}")
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


if __name__ == "__main__":
    sys.exit(main())
