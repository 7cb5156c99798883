package config

// defaultConfig is the example printed by `toolhostd config default`. A test
// parses it and checks that the values it shows for defaulted keys are the
// defaults Parse fills in, so the two cannot drift apart.
const defaultConfig = `# toolhostd.toml: toolhostd's configuration (TOML, https://toml.io).
#
# toolhostd looks for it at --config, then $TOOLHOSTD_CONFIG, then
# ./toolhostd.toml, then /etc/toolhostd/toolhostd.toml. Unknown keys are
# errors; "toolhostd config validate" lists every problem with file:line:col.
# Relative paths (cwd, component, cache_dir) are relative to this file's
# directory. Durations are Go durations: "250ms", "10s", "1m30s".
#
# Secrets: in a tooling's command, args, env, url, headers and oauth
# client_id and client_secret, in a provider's api_key, base_url and headers,
# in [host] control_token and in an agent's env, "${env:NAME}" is replaced by the environment variable NAME and
# "${file:/abs/path}" by the file's content (one trailing newline dropped)
# when the value is used: never at load, never in logs. Write "$${" for a
# literal "${".

version = 1                     # required; the only version is 1

[host]
log_level = "info"              # debug | info | warn | error
log_format = "console"          # console | json
# cache_dir = "/var/cache/toolhostd"   # default: $XDG_CACHE_HOME/toolhostd, else ~/.cache/toolhostd
# The control API (toolhostd ps, agent, toolings, reload; /metrics, /healthz, /readyz):
# control_socket = "/run/toolhostd/toolhostd.sock"   # mode 0660, owner and root only;
#                                 # default: $RUNTIME_DIRECTORY/toolhostd.sock, else this path
# control_listen = "127.0.0.1:7070"           # also on TCP, only with a bearer token:
# control_token = "${env:TOOLHOSTD_TOKEN}"    # clients send "Authorization: Bearer <token>"
# state_dir = "/var/lib/toolhostd"   # OAuth tokens (oauth/NAME.json, mode 0600), provider budgets (budgets/); default:
#                                 # $STATE_DIRECTORY, else $XDG_STATE_HOME/toolhostd, else ~/.local/state/toolhostd
# max_threads = 10000             # OS threads: each agent waiting in recv holds one, so at most
#                                 # max_threads - 256 agents; raise it with ulimit -u and TasksMax
# message_retention = "10m"       # a reply is kept this long after it ended (GET by id, resuming, idempotency keys)
# store = { backend = "bbolt" }   # the key-value store: bbolt (state_dir/kv.db) | etcd (the default with [cluster])
# OpenTelemetry traces (docs/observability.md); the OTEL_EXPORTER_OTLP_* environment turns them on too:
# traces = { endpoint = "http://localhost:4318/v1/traces", headers = { "x-api-key" = "${env:OTLP_KEY}" },
#            sampler_ratio = 1.0, capture_content = false, keep = 256 }   # keep: traces in memory (GET /v1/traces)

# One [tooling.<name>] per MCP server; <name> is letters, digits, - and _.
# An "mcpServers" entry ports key for key: command, args, env, or url, headers.
[tooling.everything]
kind = "mcp"                    # the only kind
transport = "stdio"             # stdio | http | sse; default stdio when command is set, http when url is
command = "node"                # stdio: the program (looked up in $PATH)
args = ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
env = { LOG_LEVEL = "info" }    # stdio: added to toolhostd's environment
cwd = "."                       # stdio: working directory; default: toolhostd's own
connect_timeout = "10s"         # start (or connect) and MCP initialize
call_timeout = "60s"            # one tools/call, resources/read, ...
max_concurrent_calls = 16       # in-flight calls on the session; more wait in a queue
max_message_bytes = "64MiB"     # the largest JSON-RPC message taken from the server; a bigger
                                # answer fails its own call only (integer bytes or "16MiB", "1GB")
ping_interval = "1s"            # liveness: a ping this often, which must be answered within
ping_timeout = "3s"             # ping_timeout, else the server is replaced (killed and restarted)
restart = { initial_backoff = "250ms", max_backoff = "30s", healthy_after = "60s" }
                                # reconnect with exponential backoff (with jitter) from initial to
                                # max; a session up for healthy_after resets the backoff
# What the client offers the server:
# roots = ["data", "file:///srv/shared"]   # roots/list answers; paths (relative ones like cwd) become
#                                 # file:// URIs; none: the roots capability is not advertised
elicitation = "decline"         # decline | accept-defaults (accept, each field at its schema default)
# sampling = { provider = "gpt", model = "gpt-4o-mini", models = ["gpt-4o*"], max_tokens = 512, requests_per_minute = 6 }
#                                 # offer MCP sampling, answered by a [provider]: hints matching models pick
#                                 # the model; maxTokens capped; includeContext other than none declined
# log_level = "info"              # logging/setLevel on connect (debug, info, notice, warning, error,
#                                 # critical, alert, emergency); server log messages go to toolhostd's log

# An MCP server over streamable HTTP (or transport = "sse" for the older
# HTTP+SSE protocol): url instead of command; headers instead of args/env/cwd.
# [tooling.remote]
# url = "https://mcp.example.com/mcp"        # http:// or https://
# headers = { Authorization = "Bearer ${env:REMOTE_TOKEN}" }

# An OAuth 2.1-protected server: run "toolhostd auth login saas" once; serve and the
# other commands then use the stored tokens and refresh them. Every oauth key is optional.
# [tooling.saas]
# url = "https://mcp.example.com/mcp"
# oauth = { client_id = "toolhostd", client_secret = "${env:SAAS_SECRET}", scopes = ["read"] }
#                                 # client_id (+ client_secret): a pre-registered client; without one,
#                                 # client_metadata_url = "https://..." (a client ID metadata document)
#                                 # or dynamic registration. scopes replace those the server asks for.
#                                 # redirect_port: the login's http://127.0.0.1:PORT/callback (default any).
#                                 # grant_type = "client_credentials" (needs client_id and client_secret):
#                                 # no login, for servers that let a client authenticate itself.

# One [provider.<name>] per model endpoint an agent may chat with (the host holds
# the key; agents never see it). Provider and tooling names share one namespace.
# [provider.gpt]
# kind = "openai"                 # openai (Chat Completions: OpenAI and any compatible server,
#                                 # e.g. vLLM, llama.cpp, Ollama, LM Studio, OpenRouter) | anthropic (Messages API)
# base_url = "http://127.0.0.1:11434/v1"   # default: the API's public endpoint
# api_key = "${env:OPENAI_API_KEY}"        # a ${env:...} or ${file:...} reference, resolved at use
#                                 # (again after a second, or after a 401): never a literal key.
#                                 # Leave it out for a server without keys
# model = "gpt-4o-mini"           # required: the model of a request that names none
# headers = { "OpenAI-Organization" = "org-123" }   # added to every request
# timeout = "10m"                 # one attempt, a whole stream included
# max_retries = 2                 # the SDK's retries of 408, 409, 429 (after Retry-After), 5xx and
#                                 # connection errors, with exponential backoff
# max_tokens = 4096               # a request's default max_tokens, and its cap
#
# [provider.claude]
# kind = "anthropic"
# api_key = "${file:/run/secrets/anthropic}"
# model = "claude-sonnet-4-5"

# One [agent.<name>] per agent run by "toolhostd serve".
[agent.watcher]
component = "agents/watch.wasm" # the WebAssembly component (required)
toolings = ["everything"]       # grants: the toolings the agent may get; each names a [tooling.X]
input = "demo://resource/static/document/features.md"   # passed to the agent's run; optional
env = { MODE = "prod" }         # the agent's environment (WASI)
restart = "on-failure"          # never | on-failure | always
restart_backoff = { initial = "1s", max = "1m" }
inbox_capacity = 1024           # envelopes queued for the agent before producers wait
limits = { memory = "256MiB", fuel = 0, run_timeout = "0s", log_rate = 1000, log_burst = 10000 }
                                # 0 = unlimited; memory is an integer (bytes) or "512KiB",
                                # "256MiB", "1GB", ...; log_rate: guest log lines (log.write,
                                # stdout, stderr) per second, log_burst at once; more are dropped
stop_grace = "10s"              # on stop, time to return before the agent is interrupted
# providers = ["gpt"]             # the providers the agent may get (none when left out)
# Messages (toolhostd send, POST /v1/agents/<name>/messages); every key is optional.
# instances = "single"            # single | per-session: an instance per session (conversation)
# start = "serve"                 # serve | on-message: a single agent started by its first message
# idle_timeout = "5m"             # a per-session or on-message instance idle this long is stopped
# max_instances = 100             # per-session: past it the longest-idle instance is stopped, or 429
# accepts = ["api"]               # senders it takes: "api", "mcp", "a2a", "agent:NAME" (globs)
# sends_to = []                   # globs of the agents it may send to (none when left out)
# max_message_bytes = "1MiB"      # a message's content at most (413 past it)
# audit_arguments = false         # the audit log may carry its messages' text
# description = "what it does"    # for people and for the protocols that list it
# durable = false                # record every host call's result (oplog.db in state_dir; with [cluster]
                                # in etcd, under the prefix + "-oplog") and, after a crash, restart or
                                # move, replay them into a fresh instance (docs/durable.md)
# max_oplog = { entries = 100000, bytes = "64MiB" }   # durable: past it the instance is stopped cleanly
# stores = ["*"]                 # globs of the key-value buckets it may open ("session": its session's)
# store = { max_keys = 10000, max_bytes = "64MiB" }   # what it may keep (none: unbounded)
# An agent's limits on a provider: [agent.<name>.grants.<provider>]; every key is optional.
# [agent.watcher.grants.gpt]
# models = ["gpt-4o*"]            # globs of the models it may ask for (the default model too)
# max_concurrent_calls = 4        # requests running at once; more fail with busy
# requests_per_minute = 30        # more fail with busy
# tokens_per_hour = 200000        # input + output tokens over the last hour; over it a request
# tokens_per_day = 2000000        # fails at once with busy, naming the budget (kept in state_dir)
# max_tokens = 1024               # caps each request's max_tokens
# audit_arguments = false         # the audit log may carry the message text
`

// Default returns the commented example config printed by
// `toolhostd config default`. It parses without error.
func Default() string { return defaultConfig }
