# A real PostgreSQL for integration tests, on loopback TCP in a temporary directory (sourced, not
# run). Debian's server binaries are found under /usr/lib/postgresql/*/bin; as root the server runs
# as the postgres user. fsync is off: a process crash loses nothing, only an OS crash would.
#
#   source pg_lib.sh
#   pg_find || { echo "SKIP: postgresql not installed"; exit 77; }   # sets PGBIN
#   pg_prepare "$T/pg"                     # the cluster's directory; sets PG_DIR, RUNAS
#   pg_initdb                              # initdb (user postgres, trust auth)
#   pg_start PORT [postgres -c options]    # starts and waits until it accepts connections
#   pg_stop_now                            # immediate stop (a crash); safe when not running
#   free_port                              # a free loopback TCP port
#   wait_for LIMIT_S CMD...                # until CMD succeeds; the limit only bounds a hang

pg_find() {
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [[ -n $PGBIN && -x $PGBIN/initdb ]]
}

pg_prepare() {
  PG_DIR=$1
  mkdir -p "$PG_DIR"
  RUNAS=()
  if [[ $(id -u) == 0 ]]; then chown postgres "$PG_DIR"; RUNAS=(runuser -u postgres --); fi
}

pg_initdb() { "${RUNAS[@]}" "$PGBIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust >"$PG_DIR/initdb.log" 2>&1; }

pg_start() {
  local port=$1; shift
  local opts="-k $PG_DIR -c listen_addresses=127.0.0.1 -p $port -c fsync=off"
  local o
  for o in "$@"; do opts+=" -c $o"; done
  "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -t 60 -o "$opts" start >/dev/null
}

pg_stop_now() { [[ -n ${PG_DIR:-} ]] && "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1; }

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_for() { local limit=$1; shift; local end=$((SECONDS + limit)); until "$@"; do ((SECONDS < end)) || return 1; sleep 0.1; done; }

# An EXIT trap for a test that uses this file (`trap pg_test_cleanup EXIT`): kills the test's
# processes (array `pids`), stops PostgreSQL, on failure prints the last lines of the logs matching
# the globs in LOGS_ON_FAILURE and the server's log, removes $T, and keeps the exit status.
pg_test_cleanup() {
  local rc=$? p f
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pg_stop_now
  if [[ $rc -ne 0 ]]; then
    for f in ${LOGS_ON_FAILURE[@]:-}; do [[ -f $f ]] && { echo "--- $f (last lines)"; tail -n 20 "$f"; }; done
    echo "--- postgres log"; tail -n 10 "$PG_DIR/log" 2>/dev/null
  fi
  rm -rf "$T"
  exit $rc
}
