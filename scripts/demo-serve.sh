#!/usr/bin/env bash
# make demo's last step: toolhostd serve runs configs/demo.toml in the
# background; once its control socket answers, `toolhostd send` speaks to
# its echo agent; then serve is stopped (SIGTERM) and waited for. Any step
# that fails fails the demo.
set -euo pipefail
bin=${1:-bin/toolhostd}
cfg=configs/demo.toml
mkdir -p build/demo
"$bin" --config "$cfg" serve 2> build/demo/serve.log &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do # up to 60 s: the first start compiles the agent
	if "$bin" --config "$cfg" ps >/dev/null 2>&1; then
		break
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "toolhostd serve exited; its log:" >&2
		cat build/demo/serve.log >&2
		exit 1
	fi
	sleep 0.5
done
echo "\$ toolhostd --config $cfg send echo \"hi from make demo\""
"$bin" --config "$cfg" send echo "hi from make demo" --session demo
kill -TERM "$pid"
wait "$pid"
trap - EXIT
echo "toolhostd serve stopped (its log: build/demo/serve.log)"
