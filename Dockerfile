# syntax=docker/dockerfile:1.7
# The deployplane operator image (also runs the control-plane emulator for trials:
# `deployplane controlplane serve`, as the chart's emulator.enabled does).
#
#   docker build -t ghcr.io/deployplane/deployplane:0.1.0 .
#
# Two stages: the builder turns the source and every dependency into wheels (with a
# compiler at hand for any dependency published only as an sdist); the runtime stage
# installs those wheels offline into a slim Python and carries no build tools, no
# source tree and no pip. It runs as uid 10001, and is fine with a read-only root
# filesystem (the chart mounts an emptyDir at /tmp).

ARG PYTHON_VERSION=3.11
# The base of both stages. The official image by default; any base with `python` and
# `pip` on PATH, apt-get, groupadd and useradd will do: `make image` passes one made
# from Debian packages (tools/images/), as no registry is reachable where it runs.
ARG BASE_IMAGE=python:${PYTHON_VERSION}-slim

FROM ${BASE_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
# The project's wheel alone first (fails fast on a packaging error), then the wheels of
# its runtime dependencies.
RUN pip wheel --no-deps --wheel-dir /wheels . \
 && pip wheel --wheel-dir /wheels /wheels/deployplane-*.whl

FROM ${BASE_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 deployplane \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /tmp --shell /usr/sbin/nologin deployplane
# The wheels are bind-mounted, not copied: no layer of the final image holds them.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels deployplane \
 && pip uninstall -y pip setuptools wheel \
 && deployplane --help >/dev/null
LABEL org.opencontainers.image.title="deployplane" \
      org.opencontainers.image.description="Kubernetes operator for agent-server deployments" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 10001:10001
WORKDIR /tmp
# 8080: liveness (/healthz, Kopf's); 8081: readiness (/readyz); 9090: Prometheus /metrics
# (DEPLOYPLANE_METRICS_PORT).
EXPOSE 8080 8081 9090
ENTRYPOINT ["deployplane", "operator", "run"]
