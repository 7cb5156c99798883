# toolhostd in a container: a cgo build stage, the example agents built
# with componentize-qjs (their smallest build), the npm MCP servers, then a
# non-root runtime image on Node.js 22 with the system's CA bundle and the
# agents precompiled into the compile cache. deploy/container/install-layout.sh
# lays the runtime image out; deploy/container's layout test runs the same
# script into a temporary root and runs this file's ENTRYPOINT, CMD, ENV,
# USER and HEALTHCHECK there.
#
# BuildKit (RUN --mount) is needed: Docker 23+ uses it by default, 20.10
# when DOCKER_BUILDKIT=1 is set. Behind a TLS-intercepting proxy, give the
# downloading steps its CA as the secret ca (it never lands in a layer):
#   DOCKER_BUILDKIT=1 docker build -t toolhostd .
#   DOCKER_BUILDKIT=1 docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt -t toolhostd .
# The example agents against the bundled MCP servers, JSON logs on stderr,
# and (from another shell) their state, which the HEALTHCHECK asks too:
#   docker run --rm --name toolhostd toolhostd
#   docker exec toolhostd toolhostd ps
# Your own config (paths as the container sees them, see
# docs/deploying.md) and agents, the compile cache in a named volume (a
# first start compiles each agent for 5-15 s, later starts load it in
# milliseconds):
#   docker run --rm -v toolhostd-cache:/var/cache/toolhostd -v "$PWD/my.toml:/etc/toolhostd/toolhostd.toml:ro" -v "$PWD/build/agents:/srv/agents:ro" toolhostd
# The control API on TCP: /healthz and /readyz open, the rest behind the token:
#   TOKEN=$(openssl rand -hex 32)
#   docker run --rm -p 7070:7070 -e TOOLHOSTD_CONTROL_TOKEN="$TOKEN" toolhostd serve --control-listen 0.0.0.0:7070
#   curl -H "Authorization: Bearer $TOKEN" http://localhost:7070/v1/agents

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export SSL_CERT_FILE=/run/secrets/ca; fi; \
    go mod download
COPY cmd ./cmd
COPY internal ./internal
# toolhostd build embeds the WIT (wit/) and componentize-go.mjs (scripts/),
# toolhostd new the JS helper (sdk/js).
COPY wit ./wit
COPY scripts ./scripts
COPY sdk/js ./sdk/js
ARG VERSION=dev
# -tags grpcnotrace: see GOTAGS in the Makefile (9 MB less).
RUN CGO_ENABLED=1 go build -tags grpcnotrace -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolhostd ./cmd/toolhostd

# The example agents, built with componentize-qjs (1.6 MB each, where
# componentize-js makes 12 MB). No install script is needed: the only one,
# the pinned `node` devDependency's, would download a Node.js nobody runs.
FROM node:22-bookworm-slim AS agents
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi; \
    npm ci --ignore-scripts --no-audit --no-fund
COPY wit ./wit
COPY sdk/js ./sdk/js
COPY examples/agents ./examples/agents
RUN mkdir -p /out/agents && for f in examples/agents/*.js; do \
      node_modules/.bin/componentize-qjs --wit wit --js "$f" -n agent --sync \
        -o "/out/agents/$(basename "$f" .js).wasm" >/dev/null || exit 1; \
    done

# The npm MCP servers: the runtime dependencies only.
FROM node:22-bookworm-slim AS modules
WORKDIR /opt/toolhostd
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi; \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# The system's CA bundle, for https:// toolings and OAuth servers (the node
# image has none; the package would bring openssl along, unused here).
FROM node:22-bookworm-slim AS certs
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*

FROM node:22-bookworm-slim
# The daemon's user; numeric in USER below so that Kubernetes'
# runAsNonRoot can check it.
RUN groupadd --system --gid 10001 toolhostd \
 && useradd --system --uid 10001 --gid toolhostd --home-dir /var/lib/toolhostd --no-create-home \
      --shell /usr/sbin/nologin toolhostd
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# toolhostd, the agents (precompiled into the compile cache), the MCP
# servers, the config, and the writable directories owned by the daemon's
# user. Only what the layout needs is mounted: editing README.md or docs/
# reruns nothing.
RUN --mount=type=bind,source=deploy/container,target=/src/deploy/container \
    --mount=type=bind,source=examples/files,target=/src/examples/files \
    --mount=type=bind,source=package.json,target=/src/package.json \
    --mount=type=bind,source=package-lock.json,target=/src/package-lock.json \
    --mount=type=bind,from=build,source=/out,target=/in/bin \
    --mount=type=bind,from=agents,source=/out/agents,target=/in/agents \
    --mount=type=bind,from=modules,source=/opt/toolhostd,target=/in/modules \
    bash /src/deploy/container/install-layout.sh --root / --src /src \
      --toolhostd /in/bin/toolhostd --agents /in/agents \
      --node-modules /in/modules/node_modules --owner 10001:10001

WORKDIR /opt/toolhostd
USER 10001:10001
ENV XDG_CACHE_HOME=/var/cache \
    STATE_DIRECTORY=/var/lib/toolhostd \
    RUNTIME_DIRECTORY=/run/toolhostd \
    TOOLHOSTD_CONFIG=/etc/toolhostd/toolhostd.toml
# OAuth tokens (toolhostd auth login) live in $STATE_DIRECTORY/oauth. A new
# volume on the cache starts with the image's precompiled agents.
VOLUME ["/var/cache/toolhostd", "/var/lib/toolhostd"]
# The control API's TCP listener: serve --control-listen 0.0.0.0:7070, or
# [host] control_listen in a mounted config.
EXPOSE 7070
# Healthy means the daemon is alive and answers on its control socket
# (docs/deploying.md, "The container"): ps answers as soon as the socket
# listens, so no start period is needed. Agents and toolings that fail are
# the daemon's to restart; ps and /readyz tell their state.
HEALTHCHECK --interval=30s --timeout=5s CMD ["toolhostd", "ps"]
ENTRYPOINT ["toolhostd"]
CMD ["serve"]
