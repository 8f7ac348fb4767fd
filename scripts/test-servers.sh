#!/usr/bin/env bash
# Real servers for the test suite, on 127.0.0.1: Apache Kafka (KRaft) and FerretDB (MongoDB wire).
#
#   scripts/test-servers.sh install   install both into the cache (no-op when cached)
#   scripts/test-servers.sh start     install if needed, start both with fresh data, write the env file
#   scripts/test-servers.sh stop      stop both (idempotent)
#   scripts/test-servers.sh status    show both
#   scripts/test-servers.sh env       print the path of the env file
#
# The env file ($RUNTIME/servers.env, RUNTIME = ${TMPDIR:-/tmp}/checkin-service-servers) holds
#   KAFKA_BROKERS=127.0.0.1:<port>
#   MONGO_URL=mongodb://127.0.0.1:<port>/
# Use it with:  set -a; . "$(scripts/test-servers.sh env)"; set +a
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=test-servers
ENV_FILE="$SERVERS_RUNTIME_DIR/servers.env"

cmd_start() {
  local t0
  t0="$(now_s)"
  rm -f "$ENV_FILE"
  if ! "$HERE/kafka.sh" start >/dev/null; then
    log "$NAME" "Kafka failed to start (see above); stopping everything"
    cmd_stop >/dev/null 2>&1 || true
    exit 1
  fi
  if ! "$HERE/ferretdb.sh" start >/dev/null; then
    log "$NAME" "FerretDB failed to start (see above); stopping everything"
    cmd_stop >/dev/null 2>&1 || true
    exit 1
  fi
  {
    cat "$SERVERS_RUNTIME_DIR/kafka.env"
    cat "$SERVERS_RUNTIME_DIR/ferretdb.env"
  } >"$ENV_FILE.tmp"
  mv -f "$ENV_FILE.tmp" "$ENV_FILE"
  log "$NAME" "both servers up in $(($(now_s) - t0))s; env file $ENV_FILE:"
  cat "$ENV_FILE"
}

cmd_stop() {
  local rc=0
  "$HERE/kafka.sh" stop || rc=1
  "$HERE/ferretdb.sh" stop || rc=1
  rm -f "$ENV_FILE"
  return "$rc"
}

cmd_install() {
  "$HERE/kafka.sh" install
  "$HERE/ferretdb.sh" install
}

cmd_status() {
  local rc=0
  "$HERE/kafka.sh" status || rc=$?
  "$HERE/ferretdb.sh" status || rc=$?
  return "$rc"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) printf '%s\n' "$ENV_FILE" ;;
  *)
    echo "usage: $0 install|start|stop|status|env" >&2
    exit 2
    ;;
esac
