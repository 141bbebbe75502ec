# syntax=docker/dockerfile:1
# Assay's three services in one image; the command picks one:
#   docker run assay serve resolver --host 0.0.0.0 ...
# Stage 1 builds a virtualenv as CI installs it (pip, a hash-checked lock file, then the
# project with --no-deps): requirements-server.txt, the server extra with its optional
# columnar and stats extras at the versions CI tests, without the test tools; stage 2 copies only that virtualenv onto a slim Python, without
# compilers or pip caches, and runs it as an unprivileged user.

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/assay
# The locked dependencies first, so their layer is reused while only code changes.
COPY requirements-server.txt ./
RUN /opt/assay/bin/pip install --no-compile -r requirements-server.txt
COPY pyproject.toml README.md ./
COPY src ./src
RUN /opt/assay/bin/pip install --no-compile --no-deps . \
 && /opt/assay/bin/python -m compileall -q /opt/assay/lib

FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime
# A fixed uid/gid, so volumes and Kubernetes' runAsUser / fsGroup can name it.
RUN groupadd --system --gid 10001 assay \
 && useradd --system --uid 10001 --gid assay --home-dir /var/lib/assay --create-home \
    --shell /usr/sbin/nologin assay \
 && install -d -o assay -g assay -m 0700 /var/lib/assay/creds /var/lib/assay/ledger
COPY --from=build /opt/assay /opt/assay
COPY deploy/healthcheck.py /opt/assay/bin/assay-healthcheck
ENV PATH=/opt/assay/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ASSAY_HOST=0.0.0.0
WORKDIR /var/lib/assay
VOLUME ["/var/lib/assay"]
EXPOSE 50051 50052 50053
USER 10001:10001
# Docker's own health check needs a port, which depends on the service: compose.yaml and
# the Kubernetes probes say it per service (assay-healthcheck, or the kubelet's grpc probe).
ENTRYPOINT ["assay"]
CMD ["--help"]
