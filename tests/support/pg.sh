#!/bin/sh
# Throwaway PostgreSQL 15 cluster for tests, on 127.0.0.1 only.
#
#   pg.sh start DIR PORT [--durable]
#                          create (once) and start a cluster in DIR/data;
#                          prints the DSN, e.g.
#                          postgresql://postgres@127.0.0.1:55432/postgres
#                          --durable: a cluster created with fsync,
#                          synchronous_commit and full_page_writes on (as in
#                          production), for the crash tests; the default is
#                          fast and loses commits when Postgres crashes
#   pg.sh standby DIR PORT PRIMARY_PORT NAME
#                          a streaming standby of the cluster on
#                          127.0.0.1:PRIMARY_PORT (pg_basebackup -R), named
#                          NAME (its application_name, which the primary's
#                          synchronous_standby_names can list), started on
#                          PORT; prints its DSN
#   pg.sh stop DIR         stop it (fast)
#   pg.sh ctl DIR ARGS...  run pg_ctl on it, e.g. "pg.sh ctl DIR restart",
#                          "pg.sh ctl DIR promote -w";
#                          tests use WF_TEST_PG_CTL="pg.sh ctl DIR"
#
# Works as root (initdb/pg_ctl run as the postgres OS user) and as a normal
# user. Trust auth (replication too, from 127.0.0.1); fsync off unless
# --durable: for tests only, never for data you keep.
# Never use port 5432 (a real server) or 50051 (the service).
set -eu

BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: pg.sh start DIR PORT [--durable] | pg.sh standby DIR PORT PRIMARY_PORT NAME |" \
        "pg.sh stop DIR | pg.sh ctl DIR PG_CTL_ARGS..." >&2
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
    [ $# -eq 1 ] || [ $# -eq 2 ] || usage
    port=$1
    durable=0
    if [ $# -eq 2 ]; then
        [ "$2" = --durable ] || usage
        durable=1
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -s "$dir/data/PG_VERSION" ]; then
        # initdb --no-sync: its files need not reach the disk, since the
        # tests crash processes, not the machine (a crashed Postgres
        # loses nothing the kernel has; what a commit must have written
        # before it is acknowledged is what the settings below decide).
        if [ "$durable" = 1 ]; then
            speed="fsync = on
synchronous_commit = on
full_page_writes = on"
        else
            speed="fsync = off
synchronous_commit = off
full_page_writes = off"
        fi
        as_pg "$BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
            { cat "$dir/initdb.log" >&2; exit 1; }
        cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
$speed
max_connections = 300
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.max = 10000
CONF
    fi
    as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
        { tail -n 20 "$dir/server.log" >&2; exit 1; }
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
standby)
    [ $# -eq 3 ] || usage
    port=$1
    primary_port=$2
    name=$3
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    [ ! -e "$dir/data" ] || { echo "pg.sh: $dir/data exists already" >&2; exit 1; }
    # -R writes standby.signal and primary_conninfo (with this
    # application_name); -X stream copies the WAL of the backup with it.
    # --no-sync: as initdb's in start.
    as_pg "$BIN/pg_basebackup" -D "$dir/data" -R -X stream -c fast --no-sync \
        -d "host=127.0.0.1 port=$primary_port user=postgres application_name=$name" \
        >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
    # The copied postgresql.conf is the primary's: the later lines win.
    cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
CONF
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
