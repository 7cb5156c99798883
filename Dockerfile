# syntax=docker/dockerfile:1
# toolhostd in a container: a cgo build stage, the example agents compiled
# with componentize-js, then a non-root runtime image with Node.js for the
# npm MCP servers. deploy/container/install-layout.sh lays the runtime image
# out; deploy/container's layout test runs the same script into a temporary
# root and runs this file's ENTRYPOINT, CMD, ENV, USER and HEALTHCHECK there.
#
#   docker build -t toolhostd .
# The example agents against the bundled MCP servers, JSON logs on stderr,
# and (from another shell) their state, which the HEALTHCHECK asks too:
#   docker run --rm --name toolhostd toolhostd
#   docker exec toolhostd toolhostd ps
# Your own config (paths as the container sees them, see README.md) and
# agents, the compile cache in a named volume (a first start compiles each
# agent for 5-15 s, later starts load it in milliseconds):
#   docker run --rm -v toolhostd-cache:/var/cache/toolhostd -v "$PWD/my.toml:/etc/toolhostd/toolhostd.toml:ro" -v "$PWD/build/agents:/srv/agents:ro" toolhostd
# The control API on TCP: /healthz and /readyz open, the rest behind the token:
#   TOKEN=$(openssl rand -hex 32)
#   docker run --rm -p 7070:7070 -e TOOLHOSTD_CONTROL_TOKEN="$TOKEN" toolhostd serve --control-listen 0.0.0.0:7070
#   curl -H "Authorization: Bearer $TOKEN" http://localhost:7070/v1/agents

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/toolhostd ./cmd/toolhostd

# The example agents, compiled to components with componentize-js.
FROM node:20-bookworm-slim AS agents
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY wit ./wit
COPY examples/agents ./examples/agents
RUN mkdir -p /out/agents && for f in examples/agents/*.js; do \
      node_modules/.bin/componentize-js "$f" --wit wit --world-name agent -d http fetch-event \
        -o "/out/agents/$(basename "$f" .js).wasm"; \
    done

FROM node:20-bookworm-slim
# The daemon's user; numeric in USER below so that Kubernetes'
# runAsNonRoot can check it.
RUN groupadd --system --gid 10001 toolhostd \
 && useradd --system --uid 10001 --gid toolhostd --home-dir /var/lib/toolhostd --no-create-home \
      --shell /usr/sbin/nologin toolhostd
# toolhostd, the agents, the MCP servers (npm ci --omit=dev), the config,
# and the writable directories owned by the daemon's user.
RUN --mount=type=bind,target=/src \
    --mount=type=bind,from=build,source=/out,target=/in/bin \
    --mount=type=bind,from=agents,source=/out/agents,target=/in/agents \
    bash /src/deploy/container/install-layout.sh --root / --src /src \
      --toolhostd /in/bin/toolhostd --agents /in/agents --owner 10001:10001

WORKDIR /opt/toolhostd
USER 10001:10001
ENV XDG_CACHE_HOME=/var/cache \
    STATE_DIRECTORY=/var/lib/toolhostd \
    RUNTIME_DIRECTORY=/run/toolhostd \
    TOOLHOSTD_CONFIG=/etc/toolhostd/toolhostd.toml
# OAuth tokens (toolhostd auth login) live in $STATE_DIRECTORY/oauth.
VOLUME ["/var/cache/toolhostd", "/var/lib/toolhostd"]
# The control API's TCP listener: serve --control-listen 0.0.0.0:7070, or
# [host] control_listen in a mounted config.
EXPOSE 7070
# ps answers as soon as the control socket listens (before the agents have
# compiled), so no start period is needed.
HEALTHCHECK --interval=30s --timeout=5s CMD ["toolhostd", "ps"]
ENTRYPOINT ["toolhostd"]
CMD ["serve"]
