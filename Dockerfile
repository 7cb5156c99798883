# syntax=docker/dockerfile:1
# toolhostd in a container: a cgo build stage, then a non-root runtime image
# with Node.js for the npm MCP servers of package.json and the example
# agents in /opt/toolhostd/agents.
#   docker build -t toolhostd .
#   docker run -v $PWD/configs/example.toml:/etc/toolhostd/toolhostd.toml:ro toolhostd

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
RUN groupadd --system --gid 10001 toolhostd \
 && useradd --system --uid 10001 --gid toolhostd --home-dir /var/lib/toolhostd --create-home toolhostd \
 && install -d -o toolhostd -g toolhostd -m 0700 /var/cache/toolhostd \
 && install -d -o toolhostd -g toolhostd -m 0750 /run/toolhostd /etc/toolhostd
# The MCP servers the example config names (runtime dependencies only).
WORKDIR /opt/toolhostd
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY configs ./configs
COPY examples/files ./examples/files
COPY --from=agents /out/agents ./agents
COPY --from=build /out/toolhostd /usr/local/bin/toolhostd

USER toolhostd
ENV XDG_CACHE_HOME=/var/cache \
    STATE_DIRECTORY=/var/lib/toolhostd \
    RUNTIME_DIRECTORY=/run/toolhostd \
    TOOLHOSTD_CONFIG=/etc/toolhostd/toolhostd.toml
# OAuth tokens (toolhostd auth login) live in $STATE_DIRECTORY/oauth.
VOLUME ["/var/cache/toolhostd", "/var/lib/toolhostd"]
# The control API's TCP listener, when [host] control_listen is set.
EXPOSE 7070
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s CMD ["toolhostd", "ps"]
ENTRYPOINT ["toolhostd"]
CMD ["serve"]
