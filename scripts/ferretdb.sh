#!/usr/bin/env bash
# FerretDB (MongoDB wire protocol, SQLite backend) on 127.0.0.1 for the test suite.
#
#   scripts/ferretdb.sh install   build ferretdb with `go install` into the cache (skipped if present)
#   scripts/ferretdb.sh start     (install if needed,) wipe runtime data, start, wait for a ping
#   scripts/ferretdb.sh resume    start again on the last start's data and ports (after a stop)
#   scripts/ferretdb.sh stop      stop it (no error if not running)
#   scripts/ferretdb.sh status    print whether it runs, and where
#
# Env: FERRETDB_PORT (default 27018), FERRETDB_DEBUG_PORT (default 18088),
#      FERRETDB_VERSION (default v1.24.2), FERRETDB_START_TIMEOUT (seconds, default 60),
#      FERRETDB_START_ATTEMPTS (default 3: a start that exits early is retried on fresh ports),
#      CHECKIN_SERVERS_RUNTIME_DIR (a second, private instance: its own runtime dir and ports),
#      XDG_CACHE_HOME / TMPDIR (cache and runtime locations).
# State: $RUNTIME/ferretdb.env with MONGO_URL=mongodb://127.0.0.1:<port>/
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

NAME=ferretdb
FERRETDB_VERSION="${FERRETDB_VERSION:-v1.24.2}"
# The build carries one fix (see fix_id_index); the suffix keeps an unfixed binary from an
# earlier build from being taken for it.
BIN_DIR="$SERVERS_CACHE_DIR/ferretdb-${FERRETDB_VERSION}-idfix/bin"
BIN="$BIN_DIR/ferretdb"
GO_CACHE_ROOT="$SERVERS_CACHE_DIR/go"
RUN_DIR="$SERVERS_RUNTIME_DIR/ferretdb"
DATA_DIR="$RUN_DIR/data"
STATE_DIR="$RUN_DIR/state"
LOG_FILE="$RUN_DIR/ferretdb.log"
PID_FILE="$RUN_DIR/ferretdb.pid"
ENV_FILE="$SERVERS_RUNTIME_DIR/ferretdb.env"
START_TIMEOUT="${FERRETDB_START_TIMEOUT:-60}"

# Why not `go install github.com/FerretDB/FerretDB/cmd/ferretdb@vX`:
#  1. `go install pkg@version` looks up the module's deprecation through the proxy's version list
#     (@v/list), which the module proxy reachable here refuses (403), so it fails before building;
#  2. a binary built straight from the module zip panics at start-up ("Invalid
#     build/version/version.txt file content"), because the zip lacks that generated file.
# So: `go mod download` the exact version, copy the source, write build/version/version.txt
# (what upstream's `task gen-version` would), fix the _id index (fix_id_index), and
# `go build ./cmd/ferretdb` inside it.
# Go's module and build caches live under the cache dir as well (self-contained); the build
# cache is dropped after a successful build.
# fix_id_index SRC: FerretDB 1.24's SQLite backend creates every collection's unique _id index on
# the expression `_ferretdb_sjson->"_id"` but filters by `_ferretdb_sjson->'$._id'`. SQLite matches
# an expression index only on the same expression, so no query ever uses the index: every find,
# update or delete by _id reads and parses the whole collection (updates by _id: 1,700/s on an
# empty collection, 93/s at 8,000 documents). The fix builds the _id index on the expression the
# queries use (metadata.IDColumn): the same values, so the same uniqueness. Upstream reports the
# same for its PostgreSQL backend (FerretDB issue #4646). Only _id changes: the SQLite backend
# pushes no other filter down, so other indexes could not be used anyway.
fix_id_index() {
  local file="$1/internal/backends/sqlite/metadata/registry.go"
  local from='			columns[i] = fmt.Sprintf("%s->%s", DefaultColumn, strings.Join(fields, "->"))'
  grep -qxF "$from" "$file" || die "$NAME" "fix_id_index: the line to change is not in $file (another FerretDB version?)"
  FROM="$from" perl -0pi -e 's/^\Q$ENV{FROM}\E$/$ENV{FROM}\n\t\t\tif key.Field == "_id" {\n\t\t\t\tcolumns[i] = IDColumn \/\/ checkin-service: the expression the queries use\n\t\t\t}/m' "$file"
  grep -qF 'columns[i] = IDColumn // checkin-service' "$file" || die "$NAME" "fix_id_index: the change did not apply to $file"
}

do_install() {
  if [[ -x "$BIN" ]]; then
    log "$NAME" "already installed: $BIN"
    return 0
  fi
  command -v go >/dev/null 2>&1 || die "$NAME" "go is not installed (needed to build FerretDB)"
  log "$NAME" "building github.com/FerretDB/FerretDB/cmd/ferretdb@${FERRETDB_VERSION} into $BIN_DIR (first time: a few minutes)"
  local t0 work json mod_dir commit src
  t0="$(now_s)"
  mkdir -p "$BIN_DIR" "$GO_CACHE_ROOT"
  export GOMODCACHE="$GO_CACHE_ROOT/mod" GOCACHE="$GO_CACHE_ROOT/build"
  export GOFLAGS="-buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  work="$(mktemp -d "$BIN_DIR/../.build.XXXXXX")"
  # shellcheck disable=SC2064  # expand now
  trap "chmod -R u+w '$work' 2>/dev/null; rm -rf '$work'" EXIT

  log "$NAME" "downloading the module source (go mod download)"
  json="$(cd "$work" && go mod download -json "github.com/FerretDB/FerretDB@${FERRETDB_VERSION}")" ||
    die "$NAME" "go mod download failed"
  mod_dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1)"
  commit="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",\{0,1\}$/\1/p' | head -n 1)"
  [[ -n "$mod_dir" && -d "$mod_dir" ]] || die "$NAME" "could not find the downloaded module source"

  src="$work/src"
  cp -R "$mod_dir" "$src"
  chmod -R u+w "$src"
  printf '%s\n' "$FERRETDB_VERSION" >"$src/build/version/version.txt"
  [[ -n "$commit" ]] && printf '%s\n' "$commit" >"$src/build/version/commit.txt"
  printf 'checkin-service\n' >"$src/build/version/package.txt"
  fix_id_index "$src"

  log "$NAME" "compiling (go build ./cmd/ferretdb)"
  (cd "$src" && go build -trimpath -o "$work/ferretdb" ./cmd/ferretdb) || die "$NAME" "go build failed"
  "$work/ferretdb" --version >/dev/null 2>&1 || die "$NAME" "the built binary does not run: $("$work/ferretdb" --version 2>&1 | head -n 3)"
  mv -f "$work/ferretdb" "$BIN"
  # The build cache (~350 MB) is not needed once the binary exists; the module cache is kept
  # so that a rebuild (another version) does not download everything again.
  go clean -cache >/dev/null 2>&1 || true
  log "$NAME" "installed $BIN in $(($(now_s) - t0))s"
}

cmd_install() { with_install_lock "$NAME" do_install; }

is_running() { pid_alive "$PID_FILE" "ferretdb"; }

# mongo_ping PORT -> 0 if a MongoDB `ping` command succeeds on 127.0.0.1:PORT.
# Uses the `mongodb` driver when the project has it, else a raw OP_MSG over node's net module,
# else (no node) only a TCP connect.
mongo_ping() {
  local port="$1"
  # shellcheck disable=SC2016  # JavaScript, not shell
  if node_can_require mongodb; then
    node -e '
      const { MongoClient } = require(require.resolve("mongodb", { paths: [process.argv[2]] }));
      const c = new MongoClient(`mongodb://127.0.0.1:${process.argv[1]}/`,
        { serverSelectionTimeoutMS: 2000, connectTimeoutMS: 2000, directConnection: true });
      c.connect()
        .then(() => c.db("admin").command({ ping: 1 }))
        .then((r) => c.close().then(() => process.exit(r && r.ok === 1 ? 0 : 1)))
        .catch(() => c.close().finally(() => process.exit(1)));
    ' "$port" "$SERVERS_REPO_ROOT" >/dev/null 2>&1
    return
  fi
  if command -v node >/dev/null 2>&1; then
    # OP_MSG { ping: 1, $db: "admin" }; the reply must be an OP_MSG whose body has ok: 1.0.
    # shellcheck disable=SC2016  # JavaScript, not shell
    node -e '
      const net = require("net");
      const cstr = (s) => Buffer.concat([Buffer.from(s, "utf8"), Buffer.from([0])]);
      const i32 = (n) => { const b = Buffer.alloc(4); b.writeInt32LE(n); return b; };
      const body = Buffer.concat([
        Buffer.from([0x10]), cstr("ping"), i32(1),
        Buffer.from([0x02]), cstr("$db"), i32(6), cstr("admin"), Buffer.from([0]),
      ]);
      const doc = Buffer.concat([i32(body.length + 4), body]);
      const payload = Buffer.concat([i32(0), Buffer.from([0]), doc]);
      const msg = Buffer.concat([i32(16 + payload.length), i32(1), i32(0), i32(2013), payload]);
      const s = net.connect(Number(process.argv[1]), "127.0.0.1");
      let buf = Buffer.alloc(0);
      const t = setTimeout(() => process.exit(1), 3000);
      s.on("connect", () => s.write(msg));
      s.on("error", () => process.exit(1));
      s.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length < 4 || buf.length < buf.readInt32LE(0)) return;
        clearTimeout(t); s.destroy();
        const op = buf.readInt32LE(12);
        const okKey = Buffer.concat([Buffer.from([0x01]), cstr("ok")]);
        const at = buf.indexOf(okKey);
        const ok = op === 2013 && at >= 0 && buf.readDoubleLE(at + okKey.length) === 1;
        process.exit(ok ? 0 : 1);
      });
    ' "$port" >/dev/null 2>&1
    return
  fi
  tcp_open "$port"
}

# launch_once PORT DEBUG_PORT -> 0 when FerretDB answers a ping on PORT; 1 when the process
# exited during startup (the caller retries); dies on a timeout.
launch_once() {
  local port="$1" debug_port="$2" t0
  log "$NAME" "starting on 127.0.0.1:$port (debug 127.0.0.1:$debug_port), data in $DATA_DIR, log $LOG_FILE"
  t0="$(now_s)"
  spawn_detached "$PID_FILE" "$LOG_FILE" "$BIN" \
    --handler=sqlite \
    "--sqlite-url=file:${DATA_DIR}/" \
    "--state-dir=${STATE_DIR}" \
    "--listen-addr=127.0.0.1:${port}" \
    "--debug-addr=127.0.0.1:${debug_port}" \
    --telemetry=disable \
    "--log-level=${FERRETDB_LOG_LEVEL:-warn}" ||
    { show_log_tail "$NAME" "$LOG_FILE"; return 1; }

  local deadline=$((t0 + START_TIMEOUT))
  while :; do
    if ! is_running; then
      show_log_tail "$NAME" "$LOG_FILE"
      log "$NAME" "process exited during startup (ports $port/$debug_port)"
      return 1
    fi
    if tcp_open "$port" && mongo_ping "$port"; then
      log "$NAME" "started on 127.0.0.1:$port in $(($(now_s) - t0))s (pid $(cat "$PID_FILE"))"
      return 0
    fi
    if (($(now_s) >= deadline)); then
      show_log_tail "$NAME" "$LOG_FILE"
      cmd_stop || true
      die "$NAME" "did not answer a ping on 127.0.0.1:$port within ${START_TIMEOUT}s"
    fi
    sleep 0.2
  done
}

cmd_start() {
  cmd_install
  if is_running; then
    log "$NAME" "already running (pid $(cat "$PID_FILE")); restarting with fresh data"
    cmd_stop
  fi
  rm -rf "$RUN_DIR"
  rm -f "$ENV_FILE"

  # A start can lose a race (a port taken between choosing and binding it, by a parallel test):
  # retry with fresh ports and fresh data, keeping each failed attempt's log next to the new one.
  local attempts="${FERRETDB_START_ATTEMPTS:-3}" attempt port debug_port
  for ((attempt = 1; attempt <= attempts; attempt++)); do
    rm -rf "$DATA_DIR" "$STATE_DIR"
    mkdir -p "$DATA_DIR" "$STATE_DIR"
    if ((attempt == 1)); then
      port="$(choose_port "$NAME" "${FERRETDB_PORT:-27018}")" || die "$NAME" "no free port"
      debug_port="$(choose_port "$NAME" "${FERRETDB_DEBUG_PORT:-18088}" "$port")" || die "$NAME" "no free debug port"
    else
      port="$(free_port)" || die "$NAME" "no free port"
      debug_port="$(choose_port "$NAME" "$(free_port)" "$port")" || die "$NAME" "no free debug port"
    fi
    if launch_once "$port" "$debug_port"; then
      printf '%s %s\n' "$port" "$debug_port" >"$RUN_DIR/ports"
      printf 'MONGO_URL=mongodb://127.0.0.1:%s/\n' "$port" >"$ENV_FILE"
      log "$NAME" "wrote $ENV_FILE"
      printf 'MONGO_URL=mongodb://127.0.0.1:%s/\n' "$port"
      return 0
    fi
    [[ -f "$LOG_FILE" ]] && mv -f "$LOG_FILE" "$LOG_FILE.attempt-$attempt"
    log "$NAME" "attempt $attempt of $attempts failed; its log is kept at $LOG_FILE.attempt-$attempt"
    rm -f "$PID_FILE"
  done
  die "$NAME" "could not start after $attempts attempts; logs: $RUN_DIR/ferretdb.log.attempt-*"
}

# cmd_resume: start again on the data and ports of the last start (a server stopped by a test
# comes back with its databases).
cmd_resume() {
  [[ -f "$RUN_DIR/ports" ]] || die "$NAME" "nothing to resume in $RUN_DIR: run start first"
  if is_running; then
    log "$NAME" "already running (pid $(cat "$PID_FILE"))"
    return 0
  fi
  local port debug_port
  read -r port debug_port <"$RUN_DIR/ports"
  launch_once "$port" "$debug_port" || die "$NAME" "could not resume on 127.0.0.1:$port; log $LOG_FILE"
  printf 'MONGO_URL=mongodb://127.0.0.1:%s/\n' "$port" >"$ENV_FILE"
  printf 'MONGO_URL=mongodb://127.0.0.1:%s/\n' "$port"
}

cmd_stop() {
  stop_pid "$NAME" "$PID_FILE" "ferretdb" 15
  rm -f "$ENV_FILE"
}

cmd_status() { server_status "$NAME" "$PID_FILE" "ferretdb" "$LOG_FILE" "$ENV_FILE"; }

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  resume) cmd_resume ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 install|start|resume|stop|status" >&2
    exit 2
    ;;
esac
