# syntax=docker/dockerfile:1
# The driftwatch agent image: driftwatch-agent installed from its wheel on a slim Python,
# running as an unprivileged user. No image is published: build it, push it to a registry
# your cluster pulls from, and give the Helm chart (helm/driftwatch) its name in
# image.repository:
#
#   docker build -t "$REGISTRY/driftwatch-agent:0.2.0" \
#     --build-arg REVISION="$(git describe --always --dirty --abbrev=12)" .
#   docker push "$REGISTRY/driftwatch-agent:0.2.0"
#   docker run --rm -p 9108:9108 -v "$PWD/driftwatch.yaml:/etc/driftwatch/driftwatch.yaml:ro" \
#     "$REGISTRY/driftwatch-agent:0.2.0"
#
# Optional parts of the package come with --build-arg EXTRAS=otlp (the OpenTelemetry
# exporter, exporters.otlp; docs/exporters.md); none by default.
#
# The tag is the package version (pyproject.toml), which is the chart's appVersion. The
# Python is 3.11 by default, the one CI runs the whole suite on (the agent against real
# brokers included); --build-arg PYTHON_VERSION=3.12 or 3.13 builds on those, which CI tests
# without the integration tests (.ci/run).

ARG PYTHON_VERSION=3.11

# -- build: the package's wheel and the wheels of its dependencies ---------------------------
FROM python:${PYTHON_VERSION}-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY driftwatch ./driftwatch
# The source revision driftwatch_build_info reports (driftwatch/version.py); the build
# context holds no .git, so it comes as an argument ("unknown" when not given).
ARG REVISION=
ARG EXTRAS=
RUN if [ -n "$REVISION" ]; then printf '%s\n' "$REVISION" > driftwatch/REVISION; fi \
 && pip wheel --wheel-dir /wheels ".${EXTRAS:+[$EXTRAS]}"

# -- run ------------------------------------------------------------------------------------
FROM python:${PYTHON_VERSION}-slim
ARG VERSION=0.2.0
LABEL org.opencontainers.image.title="driftwatch-agent" \
      org.opencontainers.image.description="Watches deployed binary classifiers: prequential AUC, class-ratio-normalized measures, drift alarms to Prometheus." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    DRIFTWATCH_CONFIG=/etc/driftwatch/driftwatch.yaml

# A fixed numeric UID/GID (10001), so that Kubernetes' runAsNonRoot can verify it and the
# chart's runAsUser/fsGroup match. /var/lib/driftwatch is the checkpoint directory the chart
# mounts a volume on; /etc/driftwatch holds the settings file (the chart's ConfigMap).
RUN groupadd --system --gid 10001 driftwatch \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /var/lib/driftwatch --shell /usr/sbin/nologin driftwatch \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/driftwatch \
 && install -d -m 0755 /etc/driftwatch

# Only the wheels built above, no index: the image holds exactly what was built.
ARG EXTRAS=
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels "driftwatch-agent${EXTRAS:+[$EXTRAS]}"

USER 10001:10001
WORKDIR /var/lib/driftwatch
# /metrics, /healthz and /readyz (settings: metrics.port).
EXPOSE 9108
# For plain Docker only (Kubernetes ignores it and uses the chart's probes); assumes the
# default port and plain HTTP.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9108/healthz', timeout=4)"]

# The agent handles SIGTERM itself (finish the batch, checkpoint, commit, exit 0).
ENTRYPOINT ["driftwatch"]
CMD ["run"]
