# workflowd container image: a build stage with Debian's -dev packages, and a
# small runtime stage with only the shared libraries the binaries load.
#
#   docker build -t workflowd .
#   docker build -t workflowd:1.2.0 --build-arg VERSION=1.2.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker run --rm -p 50051:50051 -e WF_ENV=development workflowd
#
# VERSION is what the binaries report (workflowd --version, wfctl --version,
# the workflow_build_info metric; CMake's WF_VERSION) and the image's version
# label; its default is the project's version in CMakeLists.txt (.ci/run
# checks that they agree).
#
# Production needs DATABASE_URL and API keys, WF_API_KEYS or a file named by
# WF_API_KEYS_FILE (see README.md). The grpc
# version is Debian 12's (1.51, ABI libgrpc29): the C-core API changes between
# minor versions, so both stages stay on the same Debian release.

ARG VERSION=0.1.0

FROM debian:12-slim AS build
ARG VERSION
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        build-essential \
        cmake \
        grpc-proto \
        libgraphviz-dev \
        libgrpc-dev \
        libical-dev \
        libicu-dev \
        libjansson-dev \
        libjq-dev \
        libmicrohttpd-dev \
        libonig-dev \
        libpq-dev \
        libprotobuf-c-dev \
        libprotobuf-dev \
        libssl-dev \
        pkg-config \
        protobuf-c-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DWF_WERROR=OFF -DBUILD_TESTING=OFF \
        -DWF_VERSION="${VERSION}" \
    && cmake --build /build -j "$(nproc)" --target workflowd wfctl \
    && install -D -s -m 0755 /build/server/workflowd /out/workflowd \
    && install -D -s -m 0755 /build/client/wfctl /out/wfctl

FROM debian:12-slim AS runtime
ARG VERSION
ARG REVISION=unknown
LABEL org.opencontainers.image.title="workflowd" \
      org.opencontainers.image.description="Workflow service: workflow.v1.WorkflowService over gRPC (C, grpc core)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.base.name="docker.io/library/debian:12-slim"
# Runtime libraries only; checked against ldd of the built binaries by
# tools/runtime-deps.sh in CI. apt pulls their own dependencies (absl, c-ares,
# re2, OpenSSL, Kerberos/LDAP for libpq, GnuTLS for libmicrohttpd, cgraph
# and cdt for libgvc, ...). libgvc6 also holds the Graphviz plugins the
# server links (dot layout, core renderers); the server reads no Graphviz
# configuration file, so the image needs no `dot -c`.
# The /metrics endpoint is off unless WF_METRICS_ADDR is set (0.0.0.0:9090, as
# in k8s/base), and the web console unless WF_CONSOLE_ADDR is set
# (0.0.0.0:8080, docs/console.md); the image exposes both ports, publish the
# ones turned on.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates \
        libgrpc29 \
        libgvc6 \
        libical3 \
        libicu72 \
        libjansson4 \
        libjq1 \
        libmicrohttpd12 \
        libpq5 \
        libprotobuf-c1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 workflow \
    && useradd --uid 10001 --gid 10001 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin workflow
COPY --from=build /out/workflowd /out/wfctl /usr/local/bin/
USER 10001:10001
ENV WF_ADDR=0.0.0.0:50051
# The CA that signed Postgres's certificate, for DATABASE_URL's
# sslmode=verify-full (or verify-ca): libpq's default is
# ~/.postgresql/root.crt, and this user's home is /nonexistent. Mount the CA
# here (k8s/base mounts the Secret workflowd-postgres-ca), or name another
# file with sslrootcert= in DATABASE_URL, which wins; a provider whose CA is
# a public one: sslrootcert=/etc/ssl/certs/ca-certificates.crt. Without
# the file, sslmode=require still encrypts (unverified) and verify-full
# fails at startup naming this path.
ENV PGSSLROOTCERT=/etc/workflowd/postgres-ca/ca.crt
# gRPC, /metrics, the web console.
EXPOSE 50051 9090 8080
STOPSIGNAL SIGTERM
# Docker/compose only (Kubernetes uses its native gRPC probes instead). The
# probe reads WF_ADDR and WF_TLS_CERT from the container's environment, so
# it follows the server's port and TLS settings.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/workflowd", "--health-probe"]
ENTRYPOINT ["/usr/local/bin/workflowd"]
