#!/usr/bin/env bash
# A moonhub cluster on this machine: redis-server, three hub instances sharing it, and nginx
# round-robin in front of them, all from Debian's packages (apt-get install redis-server nginx),
# in a temporary folder that is removed on exit. Prints the URL and a session token that works
# on every instance; Ctrl-C stops everything.
#
#   scripts/cluster-demo.sh [PORT]          # nginx on PORT (default 8848)
#   PLUGINS=dir INSTANCES=3 AUTH=token|none scripts/cluster-demo.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
PORT="${1:-8848}"
INSTANCES="${INSTANCES:-3}"
AUTH="${AUTH:-token}"
PLUGINS="${PLUGINS:-$ROOT/examples/plugins}"

for bin in redis-server nginx; do
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$bin" ]; then
    echo "error: $bin is not installed (apt-get install redis-server nginx)" >&2
    exit 1
  fi
done
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[ -f dist/src/cli/main.js ] || npm run build

WORK="$(mktemp -d -t moonhub-cluster-XXXXXX)"
PIDS=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "stopping..."
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup INT TERM EXIT

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

REDIS_PORT="$(free_port)"
REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
  >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
until grep -q "Ready to accept connections" "$WORK/redis.log"; do sleep 0.1; done
echo "redis-server   $REDIS_URL"

cat >"$WORK/moonhub.yaml" <<YAML
hub_id: demo
public_url: http://127.0.0.1:$PORT/mcp
auth: { mode: $AUTH }
cluster: { redis: "$REDIS_URL" }
YAML

UPSTREAMS=""
for i in $(seq 1 "$INSTANCES"); do
  port="$(free_port)"
  # Separate data folders, as on separate machines: Redis is what they share.
  node bin/moonhub.js serve --config "$WORK/moonhub.yaml" --plugins "$PLUGINS" \
    --data "$WORK/data-$i" --port "$port" --log-level warn 2>"$WORK/hub-$i.log" &
  PIDS+=($!)
  UPSTREAMS="$UPSTREAMS server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"
done
for i in $(seq 1 "$INSTANCES"); do
  until grep -q "serving MCP at" "$WORK/hub-$i.log"; do sleep 0.2; done
  echo "hub $i         $(grep -o 'http://[^ ]*' "$WORK/hub-$i.log" | head -1) ($(grep -o 'instance [0-9a-f]*' "$WORK/hub-$i.log"))"
done

mkdir -p "$WORK/nginx"
cat >"$WORK/nginx/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  upstream moonhub { $UPSTREAMS keepalive 16; }
  server {
    listen 127.0.0.1:$PORT;
    client_max_body_size 4m;
    location / {
      proxy_pass http://moonhub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout;
    }
  }
}
NGINX
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" &
PIDS+=($!)
sleep 0.5

echo
echo "moonhub cluster: http://127.0.0.1:$PORT/mcp ($INSTANCES instances, round-robin, shared Redis)"
if [ "$AUTH" = "token" ]; then
  node bin/moonhub.js session create --agent demo --config "$WORK/moonhub.yaml" \
    --data "$WORK/data-1" >"$WORK/session.json"
  echo "session token (works on every instance): $(node -p "require('$WORK/session.json').token")"
  echo "revoke it (refused everywhere at once):  node bin/moonhub.js session revoke $(node -p "require('$WORK/session.json').session_uuid") --config $WORK/moonhub.yaml --data $WORK/data-1"
fi
echo "each answer names its instance in the X-Moonhub-Instance header; Ctrl-C stops everything"
wait
