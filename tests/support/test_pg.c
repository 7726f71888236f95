/*
 * test_pg: the Postgres fixture of the C suites (see test_pg.h).
 */
#include "test_pg.h"

#include <check.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

const char *
wf_test_pg_dsn(void)
{
    const char *dsn = getenv("WF_TEST_PG_DSN");
    if (dsn == NULL || dsn[0] == '\0') {
        printf("skipped: WF_TEST_PG_DSN is not set\n");
        exit(77);
    }
    return dsn;
}

PGconn *
wf_test_pg_connect(const char *dsn)
{
    PGconn *pg = PQconnectdb(dsn);
    ck_assert_msg(PQstatus(pg) == CONNECTION_OK, "connect: %s", PQerrorMessage(pg));
    PQsetNoticeProcessor(pg, pg_quiet, NULL);
    return pg;
}

void
wf_test_pg_admin(const char *dsn, const char *fmt, const char *arg)
{
    char sql[256];
    snprintf(sql, sizeof sql, fmt, arg);
    PGconn *pg = wf_test_pg_connect(dsn);
    PGresult *res = PQexec(pg, sql);
    ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
}

char *
wf_test_pg_schema_dsn(const char *dsn, const char *schema)
{
    size_t n = strlen(dsn) + strlen(schema) + 64;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    if (strstr(dsn, "://") != NULL)
        snprintf(out, n, "%s%soptions=-csearch_path%%3D%s", dsn,
                 strchr(dsn, '?') != NULL ? "&" : "?", schema);
    else
        snprintf(out, n, "%s options='-csearch_path=%s'", dsn, schema);
    return out;
}

char *
wf_test_pg_fresh_schema(const char *dsn, const char *schema)
{
    wf_test_pg_drop_schema(dsn, schema);
    wf_test_pg_admin(dsn, "CREATE SCHEMA %s", schema);
    return wf_test_pg_schema_dsn(dsn, schema);
}

void
wf_test_pg_drop_schema(const char *dsn, const char *schema)
{
    wf_test_pg_admin(dsn, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
}
