#!/usr/bin/env bash
# Property-based conformance run of the API against its own OpenAPI document (schemathesis, PyPI).
#
#   scripts/schemathesis.sh                 start a private service (embedded adapters), test it, stop it
#   SCHEMATHESIS_URL=http://127.0.0.1:8080 ADMIN_API_KEY=... scripts/schemathesis.sh
#                                           test a service that is already running (needs its admin key)
#
# Needs python3 (>= 3.9) with venv. Schemathesis is installed once into
# ${CHECKIN_CACHE:-~/.cache/checkin-service}/venv and reused. Settings (checks, phases, seed,
# budget) are in schemathesis.toml; extra arguments are passed to `schemathesis run`.
# Exit status: schemathesis's (non-zero on a server error, a response that does not match the
# document, a valid request refused, or a failed method check). Reports: $ST_REPORT_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SCHEMATHESIS_VERSION="4.32.5"
CACHE="${CHECKIN_CACHE:-$HOME/.cache/checkin-service}"
VENV="$CACHE/venv"
ST_REPORT_DIR="${ST_REPORT_DIR:-$ROOT/schemathesis-report}"

log() { echo "schemathesis.sh: $*" >&2; }

install_schemathesis() {
  if [[ -x "$VENV/bin/schemathesis" ]] && [[ "$("$VENV/bin/schemathesis" --version 2>/dev/null)" == *" $SCHEMATHESIS_VERSION" ]]; then
    return
  fi
  log "installing schemathesis $SCHEMATHESIS_VERSION into $VENV (once)"
  mkdir -p "$CACHE"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

SERVICE_PID=""
DATA_DIR=""
cleanup() {
  if [[ -n "$SERVICE_PID" ]]; then
    kill "$SERVICE_PID" 2>/dev/null || true
    wait "$SERVICE_PID" 2>/dev/null || true
  fi
  if [[ -n "$DATA_DIR" ]]; then rm -rf "$DATA_DIR"; fi
}
trap cleanup EXIT

start_service() {
  DATA_DIR="$(mktemp -d "${TMPDIR:-/tmp}/checkin-schemathesis-XXXXXX")"
  local port
  port="$(free_port)"
  ADMIN_API_KEY="schemathesis-admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
  SCHEMATHESIS_URL="http://127.0.0.1:$port"
  log "starting the service on $SCHEMATHESIS_URL (embedded adapters, data in $DATA_DIR)"
  # Rate limits off: the run sends thousands of requests from one address on purpose.
  # Kafka/Mongo variables are cleared so the run never touches shared servers.
  env -u MONGO_URL -u KAFKA_BROKERS -u EVENTSTORE_URL -u OIDC_ISSUER \
    PORT="$port" HOST=127.0.0.1 DATA_DIR="$DATA_DIR" ADMIN_API_KEY="$ADMIN_API_KEY" \
    RATE_LIMIT_PER_MINUTE=0 SEND_RATE_LIMIT_PER_MINUTE=0 SQLITE_SYNCHRONOUS=NORMAL \
    LOG_LEVEL="${ST_SERVICE_LOG_LEVEL:-warn}" \
    node --import tsx src/main.ts >"$DATA_DIR/service.log" 2>&1 &
  SERVICE_PID=$!
  for _ in $(seq 1 120); do
    if curl -fsS "$SCHEMATHESIS_URL/healthz" >/dev/null 2>&1; then return; fi
    if ! kill -0 "$SERVICE_PID" 2>/dev/null; then
      log "ERROR: the service exited during start; its log:"; cat "$DATA_DIR/service.log" >&2; exit 1
    fi
    sleep 0.5
  done
  log "ERROR: the service did not answer /healthz within 60 s; its log:"; cat "$DATA_DIR/service.log" >&2
  exit 1
}

json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$1"; }

# An account with comms access and sender trust, so every comms route is reachable; its
# client-credentials token and subscription key are the two headers of the secured routes.
create_account() {
  local email="schemathesis-$(date +%s)-$RANDOM@example.com" account
  account="$(curl -fsS -X POST "$SCHEMATHESIS_URL/admin/v1/accounts" \
    -H "Authorization: Bearer $ADMIN_API_KEY" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"schemathesis passphrase 1\",\"commsApiEnabled\":true,\"senderTrusted\":true}")"
  local id secret
  id="$(json_field id <<<"$account")"
  secret="$(json_field clientSecret <<<"$account")"
  ST_SUBSCRIPTION_KEY="$(json_field subscriptionKey <<<"$account")"
  ST_ACCOUNT_ID="$id"
  ST_ACCESS_TOKEN="$(curl -fsS -X POST "$SCHEMATHESIS_URL/core/connect/token" \
    -d grant_type=client_credentials --data-urlencode "client_id=$id" --data-urlencode "client_secret=$secret" | json_field access_token)"
}

install_schemathesis
if [[ -z "${SCHEMATHESIS_URL:-}" ]]; then
  start_service
elif [[ -z "${ADMIN_API_KEY:-}" ]]; then
  log "ERROR: SCHEMATHESIS_URL is set but ADMIN_API_KEY is not: the run opens its own account through the admin API"
  exit 2
fi
create_account
export ADMIN_API_KEY ST_ACCESS_TOKEN ST_SUBSCRIPTION_KEY ST_ACCOUNT_ID
log "account $ST_ACCOUNT_ID; running schemathesis $SCHEMATHESIS_VERSION (settings: schemathesis.toml)"
# An example its schema refuses would be skipped by schemathesis without a word: refuse it here.
mkdir -p "$ST_REPORT_DIR"
curl -fsS "$SCHEMATHESIS_URL/openapi.json" -o "$ST_REPORT_DIR/openapi.json"
"$VENV/bin/python3" "$ROOT/scripts/check-openapi-examples.py" "$ST_REPORT_DIR/openapi.json"
# Schemathesis frames its sections pytest-style and closes on a line such as
# `==== 2 warnings in 117.79s ====`, which a CI that reads pytest's closing line takes for a run
# of no tests. Its console output is kept whole in $ST_REPORT_DIR/console.txt and printed with
# those frames as `--- ... ---`; the counts live in the JUnit report (scripts/ci-summary.mjs).
status=0
"$VENV/bin/schemathesis" --config-file "$ROOT/schemathesis.toml" run "$SCHEMATHESIS_URL/openapi.json" \
  --report junit,ndjson --report-dir "$ST_REPORT_DIR" "$@" 2>&1 | tee "$ST_REPORT_DIR/console.txt" \
  | sed -u -E 's/^=+ (.*[^= ]) =+$/--- \1 ---/; s/^=+$/---/' || status=$?
if [[ $status -ne 0 && -n "$DATA_DIR" ]]; then
  log "the service's warnings and errors during the run:"; grep -E '"level":(40|50|60)' "$DATA_DIR/service.log" | tail -n 20 >&2 || true
fi
log "schemathesis exited with $status"
exit "$status"
