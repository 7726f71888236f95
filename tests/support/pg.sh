#!/bin/sh
# Throwaway PostgreSQL 15 cluster for tests, on 127.0.0.1 only.
#
#   pg.sh start DIR PORT   create (once) and start a cluster in DIR/data;
#                          prints the DSN, e.g.
#                          postgresql://postgres@127.0.0.1:55432/postgres
#   pg.sh stop DIR         stop it (fast)
#   pg.sh ctl DIR ARGS...  run pg_ctl on it, e.g. "pg.sh ctl DIR restart";
#                          tests use WF_TEST_PG_CTL="pg.sh ctl DIR"
#
# Works as root (initdb/pg_ctl run as the postgres OS user) and as a normal
# user. Trust auth, fsync off: for tests only, never for data you keep.
# Never use port 5432 (a real server) or 50051 (the service).
set -eu

BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: pg.sh start DIR PORT | pg.sh stop DIR | pg.sh ctl DIR PG_CTL_ARGS..." >&2
    exit 2
}

as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2

case $cmd in
start)
    [ $# -eq 1 ] || usage
    port=$1
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -s "$dir/data/PG_VERSION" ]; then
        as_pg "$BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
            { cat "$dir/initdb.log" >&2; exit 1; }
        cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
CONF
    fi
    as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
        { tail -n 20 "$dir/server.log" >&2; exit 1; }
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
stop)
    as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
ctl)
    dir=$(cd "$dir" && pwd)
    as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" "$@"
    ;;
*)
    usage
    ;;
esac
