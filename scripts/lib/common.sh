# shellcheck shell=bash
# Shared helpers for scripts/kafka.sh, scripts/ferretdb.sh and scripts/test-servers.sh.
# Sourced, not executed.

# Repository root (scripts/lib/ -> repo root).
SERVERS_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export SERVERS_REPO_ROOT

# Downloads and builds: reused across runs.
SERVERS_CACHE_DIR="${CHECKIN_SERVERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/checkin-service}"
# Runtime data (logs, pid files, data dirs, env files): wiped on start.
SERVERS_RUNTIME_DIR="${CHECKIN_SERVERS_RUNTIME_DIR:-${TMPDIR:-/tmp}/checkin-service-servers}"
SERVERS_RUNTIME_DIR="${SERVERS_RUNTIME_DIR%/}"
export SERVERS_CACHE_DIR SERVERS_RUNTIME_DIR

# log NAME MESSAGE...  -> "name: message" on stderr
log() {
  local name="$1"
  shift
  printf '%s: %s\n' "$name" "$*" >&2
}

die() {
  local name="$1"
  shift
  printf '%s: ERROR: %s\n' "$name" "$*" >&2
  exit 1
}

now_s() { date +%s; }

# port_in_use PORT -> 0 if something listens on 127.0.0.1:PORT (or any address) for TCP.
port_in_use() {
  local port="$1"
  if command -v ss >/dev/null 2>&1; then
    if ss -Hltn "sport = :${port}" 2>/dev/null | grep -q .; then
      return 0
    fi
  fi
  # Fallback / double check: try to connect.
  if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
    return 0
  fi
  return 1
}

# tcp_open PORT -> 0 if a TCP connect to 127.0.0.1:PORT succeeds.
tcp_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port -> prints an ephemeral port that is free right now on 127.0.0.1.
free_port() {
  local p
  if p="$(node -e '
    const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
  ' 2>/dev/null)" && [[ -n "$p" ]]; then
    printf '%s\n' "$p"
    return 0
  fi
  # No node: scan a range.
  for ((p = 20000 + RANDOM % 20000; p < 65000; p++)); do
    if ! port_in_use "$p"; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}

# choose_port NAME DEFAULT [EXCLUDE...] -> prints DEFAULT if free, else a free port.
choose_port() {
  local name="$1" want="$2"
  shift 2
  local p ex clash
  if ! port_in_use "$want"; then
    printf '%s\n' "$want"
    return 0
  fi
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    p="$(free_port)" || break
    clash=0
    for ex in "$@"; do
      [[ "$p" == "$ex" ]] && clash=1
    done
    if [[ "$clash" == 0 ]]; then
      log "$name" "port $want is busy, using $p instead"
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}

# pid_alive PIDFILE PATTERN -> 0 if the pid in PIDFILE is alive and its command line matches PATTERN.
pid_alive() {
  local pidfile="$1" pattern="$2" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$pattern" || return 1
  fi
  return 0
}

# stop_pid NAME PIDFILE PATTERN [GRACE_SECONDS]
# TERM, wait up to GRACE seconds, then KILL. Idempotent.
stop_pid() {
  local name="$1" pidfile="$2" pattern="$3" grace="${4:-30}" pid i
  if ! pid_alive "$pidfile" "$pattern"; then
    rm -f "$pidfile"
    log "$name" "not running"
    return 0
  fi
  pid="$(cat "$pidfile")"
  log "$name" "stopping (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name" "still alive after ${grace}s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$pidfile"
  log "$name" "stopped"
}

# spawn_detached PIDFILE LOGFILE CMD... -> runs CMD in its own session, in the background,
# stdout+stderr to LOGFILE; the pid of CMD itself is written to PIDFILE.
spawn_detached() {
  local pidfile="$1" logfile="$2"
  shift 2
  rm -f "$pidfile"
  local launcher
  # shellcheck disable=SC2016  # expanded by the inner bash
  launcher='echo $$ >"$0"; exec "$@"'
  if command -v setsid >/dev/null 2>&1; then
    setsid -f bash -c "$launcher" "$pidfile" "$@" >>"$logfile" 2>&1 </dev/null
  else
    nohup bash -c "$launcher" "$pidfile" "$@" >>"$logfile" 2>&1 </dev/null &
    disown || true
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s "$pidfile" ]] && return 0
    sleep 0.05
  done
  return 1
}

# show_log_tail NAME LOGFILE [N]
show_log_tail() {
  local name="$1" logfile="$2" n="${3:-40}"
  if [[ -f "$logfile" ]]; then
    log "$name" "last $n lines of $logfile:"
    tail -n "$n" "$logfile" | sed "s/^/  | /" >&2
  else
    log "$name" "no log file at $logfile"
  fi
}

# node_can_require MODULE -> 0 if node can resolve MODULE from the repo root.
node_can_require() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'require.resolve(process.argv[1], { paths: [process.argv[2]] })' "$1" "$SERVERS_REPO_ROOT" >/dev/null 2>&1
}

# read_env_var FILE NAME -> prints the value of NAME=... in FILE.
read_env_var() {
  local file="$1" name="$2"
  [[ -f "$file" ]] || return 1
  sed -n "s/^${name}=//p" "$file" | tail -n 1
}

# with_install_lock NAME FUNCTION... -> run FUNCTION while holding an exclusive lock on the
# cache, so two concurrent installs (two terminals, two CI steps) do not step on each other.
with_install_lock() {
  local name="$1"
  shift
  mkdir -p "$SERVERS_CACHE_DIR"
  if command -v flock >/dev/null 2>&1; then
    local lock_fd
    exec {lock_fd}>"$SERVERS_CACHE_DIR/.install-$name.lock"
    if ! flock -n "$lock_fd"; then
      log "$name" "another install is running; waiting for it"
      flock "$lock_fd"
    fi
    "$@"
    local rc=$?
    exec {lock_fd}>&-
    return "$rc"
  fi
  "$@"
}

# server_status NAME PID_FILE PROCESS_PATTERN LOG_FILE ENV_FILE -> 0 and the env when running, else 3.
server_status() {
  local name="$1" pid_file="$2" pattern="$3" log_file="$4" env_file="$5"
  if pid_alive "$pid_file" "$pattern"; then
    log "$name" "running (pid $(cat "$pid_file")), log $log_file"
    [[ -f "$env_file" ]] && cat "$env_file"
    return 0
  fi
  log "$name" "not running"
  return 3
}
