#!/bin/sh
# Runs a suite on a database of its own in the test cluster, so that suites
# can run at the same time (ctest -j) without seeing each other's rows.
#
#   pg_db.sh NAME COMMAND [ARGS...]
#
# With WF_TEST_PG_DSN set (a postgresql:// URL of a superuser, as pg.sh
# prints), drops and creates the database wf_NAME (NAME lowercased, every
# character other than a-z, 0-9 and _ made _), then runs COMMAND with
# WF_TEST_PG_DSN naming that database; the database is dropped again when
# COMMAND ends (the cluster is thrown away anyway). Without WF_TEST_PG_DSN
# it just runs COMMAND, which then reports itself skipped. Exit status:
# COMMAND's.
set -eu

[ $# -ge 2 ] || { echo "usage: pg_db.sh NAME COMMAND [ARGS...]" >&2; exit 2; }
name=$1
shift
[ -n "${WF_TEST_PG_DSN:-}" ] || exec "$@"

PSQL=${PG_BIN:-/usr/lib/postgresql/15/bin}/psql
[ -x "$PSQL" ] || PSQL=psql
db=wf_$(printf '%s' "$name" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_' '_' | cut -c1-60)
case $WF_TEST_PG_DSN in
postgres://* | postgresql://*) ;;
*) echo "pg_db.sh: WF_TEST_PG_DSN must be a postgresql:// URL" >&2; exit 2 ;;
esac
# postgresql://user@host:port/db?query: keep everything but the database.
rest=${WF_TEST_PG_DSN#*://}
scheme=${WF_TEST_PG_DSN%%://*}
query=
case $rest in *\?*) query=?${rest#*\?}; rest=${rest%%\?*} ;; esac
authority=${rest%%/*}
admin=$WF_TEST_PG_DSN

sql() { PGOPTIONS='-c client_min_messages=warning' "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$admin" -c "$1" >/dev/null; }
sql "DROP DATABASE IF EXISTS $db WITH (FORCE)"
sql "CREATE DATABASE $db"

export WF_TEST_PG_DSN="$scheme://$authority/$db$query"
rc=0
"$@" || rc=$?
# A suite that restarted or stopped the cluster leaves nothing to drop.
sql "DROP DATABASE IF EXISTS $db WITH (FORCE)" 2>/dev/null || true
exit "$rc"
