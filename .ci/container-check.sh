#!/usr/bin/env bash
# CI only: builds docker/Dockerfile unchanged with podman, then runs the image the way an operator
# would and checks it: health check, sign-in, a token and a memory, the local embedding model ready
# (/api/status) and used by a semantic search, restart (the memory is kept), non-root user,
# read-only root filesystem (+ the data volume), SIGTERM stop within 10 s, answers on the published
# port, every log line (stdout and stderr) JSON. Prints the image size and the timings. Expects podman configured by
# .ci/run (CONTAINERS_CONF) and the stand-in base image (.ci/container-base.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
IMAGE="${IMAGE:-localhost/memory-store:ci}"
ci="$(mktemp -d)"
name="memstore-ci-$$"
vol="memstore-ci-data-$$"
cleanup() {
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$vol" >/dev/null 2>&1 || true
  rm -rf "$ci"
}
trap cleanup EXIT
fail() { echo "container check FAILED: $*" >&2; podman logs --tail 30 "$name" 2>&1 | sed 's/^/  | /' >&2 || true; exit 1; }
ms() { date +%s%3N; }
# Without systemd podman cannot schedule the periodic health check (it says so on every run/stop);
# the check itself is run below with `podman healthcheck run`.
pod() { podman "$@" 2> >(grep -v 'systemd connection' >&2); }

# CI-only build settings, mounted into the build (never part of the image): npm trusts this
# machine's CA bundle (registry traffic goes through a TLS-intercepting mirror here) and node-gyp
# uses the headers shipped in the base image instead of downloading them.
cat > "$ci/npmrc" <<NPMRC
cafile=/ci/ca-certificates.crt
nodedir=/usr/local
NPMRC

t0=$(ms)
podman build --format docker --network host --layers \
  -v "$ci/npmrc:/root/.npmrc:ro" -v /etc/ssl/certs/ca-certificates.crt:/ci/ca-certificates.crt:ro \
  -f docker/Dockerfile -t "$IMAGE" . > "$ci/build.log" 2>&1 || { tail -40 "$ci/build.log"; fail "podman build"; }
build_ms=$(( $(ms) - t0 ))
size_mb=$(podman image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%d", $1/1e6}')
base_tag="docker.io/library/node:$(sed -n 's/^FROM node:\([0-9.]*\)-bookworm-slim.*/\1/p' docker/Dockerfile | head -1)-bookworm-slim"
base_mb=$(podman image inspect "$base_tag" --format '{{.Size}}' | awk '{printf "%d", $1/1e6}')
echo "image $IMAGE: ${size_mb} MB (${base_mb} MB base + $((size_mb - base_mb)) MB app), built in $((build_ms / 1000)) s"
podman image inspect "$IMAGE" --format '{{.Config.User}} {{json .Config.Healthcheck.Test}}' | grep -q '^node \[' \
  || fail "the image must run as user node and keep its HEALTHCHECK"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
password="ci-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
run() {
  pod run -d --name "$name" --read-only -v "$vol:/data" -p "127.0.0.1:$port:8080" \
    -e MEMSTORE_ADMIN_PASSWORD="$password" -e MEMSTORE_SECRET_KEY=ci-secret-key-0123456789abcdef0123456789 \
    "$IMAGE" >/dev/null
}
wait_healthy() { # runs the image's own HEALTHCHECK until it passes
  local t=$(ms)
  for _ in $(seq 1 100); do
    if podman healthcheck run "$name" >/dev/null 2>&1; then echo $(( $(ms) - t )); return 0; fi
    sleep 0.2
  done
  fail "not healthy after 20 s"
}

podman volume create "$vol" >/dev/null
run
start_ms=$(wait_healthy)
echo "started healthy in ${start_ms} ms"
[ "$(podman exec "$name" id -u)" != 0 ] || fail "runs as root"
podman exec "$name" sh -c 'touch /app/x 2>/dev/null' && fail "the root filesystem is writable"
podman exec "$name" sh -c 'touch /data/.w && rm /data/.w' || fail "the data volume is not writable"

jar="$ci/cookies"
curl -fsS -c "$jar" -H 'Content-Type: application/json' -d "{\"username\":\"admin\",\"password\":\"$password\"}" "$base/api/login" >/dev/null \
  || fail "sign in on the published port"
secret=$(curl -fsS -b "$jar" -H 'Content-Type: application/json' -d '{"name":"ci","scopes":["memory:read","memory:write"]}' "$base/api/tokens" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["plaintext"])') || fail "create a token"
id=$(curl -fsS -H "Authorization: Bearer $secret" -H 'Content-Type: application/json' \
  -d '{"title":"Container check","content":"Kept across a restart.","tags":["ci"]}' "$base/api/memories" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory"]["id"])') || fail "create a memory"

# The image embeds with its own model: the memory gets a vector, and a semantic search (the query
# embedded in the service) finds it — min_score=0: the paraphrase is about the model being used,
# not about the relevance floor. This also loads onnxruntime, whose native logger must stay quiet.
semantic_ok() {
  local status
  for _ in $(seq 1 100); do
    status=$(curl -fsS -b "$jar" "$base/api/status") || fail "GET /api/status"
    if python3 -c 'import json,sys; e=json.loads(sys.argv[1])["embeddings"]; sys.exit(0 if e["provider"]=="local" and e["state"]=="ready" and e["embedded"]>=1 else 1)' "$status"; then
      break
    fi
    sleep 0.2
  done
  python3 -c 'import json,sys; e=json.loads(sys.argv[1])["embeddings"]; assert e["provider"]=="local" and e["state"]=="ready" and e["embedded"]>=1, e' "$status" \
    || fail "/api/status does not report the local model ready with the memory embedded: $status"
  curl -fsS -H "Authorization: Bearer $secret" "$base/api/memories?q=survives+a+reboot&mode=semantic&min_score=0" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["search_mode"]=="semantic" and [x["id"] for x in r["rows"]]==[sys.argv[1]], r' "$id" \
    || fail "a semantic search did not find the memory with the local model"
}
# Every line the service printed, on stdout and on stderr, is one JSON object with time, level and message.
json_logs_ok() {
  local stream
  for stream in stdout stderr; do
    if [ "$stream" = stdout ]; then podman logs "$name" 2>/dev/null; else podman logs "$name" 2>&1 >/dev/null; fi > "$ci/log.$stream"
    python3 - "$ci/log.$stream" "$stream" <<'PY' || fail "the $stream log is not JSON lines"
import json, sys
path, stream = sys.argv[1], sys.argv[2]
lines = open(path, encoding='utf-8', errors='replace').read().splitlines()
for n, line in enumerate(lines, 1):
    try:
        entry = json.loads(line)
        assert isinstance(entry, dict) and entry.get('time') and entry.get('level') and entry.get('message')
    except Exception:
        sys.exit(f'{stream} line {n} is not a JSON log line: {line[:200]!r}')
if stream == 'stdout' and not lines:
    sys.exit('nothing on stdout')
PY
  done
  echo "log: $(wc -l < "$ci/log.stdout") stdout + $(wc -l < "$ci/log.stderr") stderr lines, all JSON"
}
semantic_ok
echo "local model ready in the image: memory embedded, semantic search finds it"

t=$(ms)
pod stop -t 10 "$name" >/dev/null
stop_ms=$(( $(ms) - t ))
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "exit code $code after SIGTERM"
[ "$stop_ms" -lt 10000 ] || fail "SIGTERM took ${stop_ms} ms"
echo "stopped by SIGTERM in ${stop_ms} ms (exit 0)"
json_logs_ok
pod rm "$name" >/dev/null

run
restart_ms=$(wait_healthy)
curl -fsS -H "Authorization: Bearer $secret" "$base/api/memories/$id" | grep -q 'Kept across a restart' \
  || fail "the memory (or the token) did not survive a restart"
echo "new container on the same volume: healthy in ${restart_ms} ms, token and memory kept"
curl -fsS -c "$jar" -H 'Content-Type: application/json' -d "{\"username\":\"admin\",\"password\":\"$password\"}" "$base/api/login" >/dev/null \
  || fail "sign in after the restart"
semantic_ok
json_logs_ok
echo "container check passed: ${size_mb} MB image ($((size_mb - base_mb)) MB over the base), build $((build_ms / 1000)) s, start ${start_ms} ms, stop ${stop_ms} ms"
