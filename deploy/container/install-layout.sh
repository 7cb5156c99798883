#!/usr/bin/env bash
# install-layout.sh makes toolhostd's runtime layout under a root directory:
# the container image's filesystem (the Dockerfile runs it with --root /) and
# the temporary root of deploy/container's layout test. The image config
# (deploy/container/toolhostd.toml) and deploy/k8s/configmap.yaml name these
# paths:
#
#   /usr/local/bin/toolhostd
#   /etc/toolhostd/toolhostd.toml               the image's config
#   /opt/toolhostd/agents/*.wasm                the built example agents
#   /opt/toolhostd/node_modules/                the npm MCP servers (runtime dependencies only)
#   /opt/toolhostd/package.json, package-lock.json
#   /opt/toolhostd/examples/files/              what the filesystem server may read
#   /var/cache/toolhostd/                       the compile cache (0700), owned by --owner,
#                                               with the agents precompiled (toolhostd compile)
#   /run/toolhostd/                             the control socket's directory (0750), owned by --owner
#   /var/lib/toolhostd/                         the daemon user's home (0750), owned by --owner
#
# Usage:
#   install-layout.sh --root DIR --toolhostd BIN --agents DIR
#                     [--node-modules DIR] [--owner UID:GID] [--src DIR]
#
#   --toolhostd BIN     the built toolhostd (make build: bin/toolhostd)
#   --agents DIR        the built agents (make agents: build/agents)
#   --node-modules DIR  copy the runtime packages from this installed tree
#                       (a node_modules of the same package.json, e.g. the
#                       repository's, dev packages included: only those
#                       `npm ls --omit=dev` lists are copied); without it
#                       the script runs `npm ci --omit=dev` (needs the registry).
#                       What node never loads is left out: source maps, type
#                       declarations, TypeScript sources, Markdown (licenses stay).
#   --owner UID:GID     owner of the writable directories (numeric: the
#                       user need not exist where the script runs)
#   --src DIR           the repository (default: two levels above this script)
set -euo pipefail

die() { echo "install-layout.sh: $*" >&2; exit 64; }
# npm with a cache of its own, removed on exit, no debug log files, no
# compile cache (node 22's, in /tmp) and no update check: nothing of it is
# left in ~/.npm (the image's /root) or /tmp.
npm_cache="$(mktemp -d)"
trap 'rm -rf "$npm_cache"' EXIT
quiet_npm() { NODE_DISABLE_COMPILE_CACHE=1 npm_config_cache="$npm_cache" npm_config_logs_max=0 npm_config_update_notifier=false npm "$@"; }

root="" bin="" agents="" node_modules="" owner=""
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="${2:?--root needs a directory}"; shift 2 ;;
    --toolhostd) bin="${2:?--toolhostd needs a file}"; shift 2 ;;
    --agents) agents="${2:?--agents needs a directory}"; shift 2 ;;
    --node-modules) node_modules="${2:?--node-modules needs a directory}"; shift 2 ;;
    --owner) owner="${2:?--owner needs UID:GID}"; shift 2 ;;
    --src) src="${2:?--src needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$root" ] || die "--root is required"
[ -x "$bin" ] || die "--toolhostd: $bin is not an executable file"
[ -d "$agents" ] || die "--agents: $agents is not a directory"
case "$owner" in ""|[0-9]*:[0-9]*) ;; *) die "--owner wants numeric UID:GID, got $owner" ;; esac
shopt -s nullglob
wasm=("$agents"/*.wasm)
[ ${#wasm[@]} -gt 0 ] || die "--agents: no .wasm files in $agents (run make agents)"

opt="$root/opt/toolhostd"
install -d -m 0755 "$root/usr/local/bin" "$root/etc/toolhostd" "$opt" "$opt/agents" "$opt/examples"
install -m 0755 "$bin" "$root/usr/local/bin/toolhostd"
install -m 0644 "${wasm[@]}" "$opt/agents/"
install -m 0644 "$src/deploy/container/toolhostd.toml" "$root/etc/toolhostd/toolhostd.toml"
install -m 0644 "$src/package.json" "$src/package-lock.json" "$opt/"
rm -rf "$opt/examples/files"
cp -R "$src/examples/files" "$opt/examples/files"

rm -rf "$opt/node_modules"
if [ -n "$node_modules" ]; then
  from="$(cd -P "$node_modules/.." && pwd)"  # -P: a symlinked node_modules (a git worktree) lists its own tree
  cmp -s "$from/package.json" "$src/package.json" || die "--node-modules: $from/package.json differs from $src/package.json"
  # Every installed package of the runtime tree, parents before children
  # (a parent's copy already holds its nested node_modules).
  mkdir -p "$opt/node_modules"
  quiet_npm ls --prefix "$from" --omit=dev --all --parseable | LC_ALL=C sort | while IFS= read -r dir; do
    rel="${dir#"$from"/}"
    case "$rel" in node_modules/*) ;; *) continue ;; esac
    [ -e "$opt/$rel" ] && continue
    mkdir -p "$(dirname "$opt/$rel")"
    cp -R "$dir" "$opt/$rel"
  done
else
  (cd "$opt" && quiet_npm ci --omit=dev --ignore-scripts --no-audit --no-fund)
fi
# server-everything serves its dist/docs (Markdown) as resources: the
# shipped watcher agent reads one of them.
find "$opt/node_modules" -type f \( -name '*.map' -o -name '*.ts' -o -name '*.d.cts' -o -name '*.d.mts' \
  -o -name '*.md' -o -name '*.markdown' \) ! -iname 'licen[cs]e*' ! -iname 'notice*' \
  ! -path '*/server-everything/dist/docs/*' -delete
for pkg in server-everything server-filesystem; do
  [ -f "$opt/node_modules/@modelcontextprotocol/$pkg/dist/index.js" ] || die "@modelcontextprotocol/$pkg is not in $opt/node_modules"
done
chmod -R u+rwX,go+rX,go-w "$opt"

install -d -m 0700 "$root/var/cache/toolhostd"
install -d -m 0750 "$root/run/toolhostd" "$root/var/lib/toolhostd"
# The agents precompiled, keyed as the image's serve looks them up (its
# config, the compile cache of XDG_CACHE_HOME=/var/cache): a first start
# loads them in milliseconds. wasmtime compiles for this machine's CPU; on
# one that lacks its features the daemon compiles them again.
XDG_CACHE_HOME="$root/var/cache" "$root/usr/local/bin/toolhostd" \
  --config "$root/etc/toolhostd/toolhostd.toml" compile "$opt"/agents/*.wasm >/dev/null
if [ -n "$owner" ]; then
  chown -R "$owner" "$root/var/cache/toolhostd"
  chown "$owner" "$root/run/toolhostd" "$root/var/lib/toolhostd"
fi
echo "install-layout.sh: toolhostd, ${#wasm[@]} agents (precompiled), the MCP servers and the config installed under $root"
