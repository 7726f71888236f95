/*
 * Postgres and process helpers of the benchmark: plain SQL for setup that
 * bypasses the API (bulk inbox rows, making timers due), relation sizes,
 * the pgbench commit ceiling, and the server's RSS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "bench.h"

static void
quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int
pg_exec(const bench *b, const char *sql, char *out, size_t outlen, char *err, size_t errlen)
{
    if (b->dsn == NULL) {
        snprintf(err, errlen, "no --dsn given");
        return -1;
    }
    PGconn *c = PQconnectdb(b->dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    PQsetNoticeProcessor(c, quiet_notice, NULL);
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = 0;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        size_t l = strlen(err);
        while (l > 0 && (err[l - 1] == '\n' || err[l - 1] == ' '))
            err[--l] = '\0';
        rc = -1;
    } else if (out != NULL && outlen > 0) {
        out[0] = '\0';
        if (s == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0)
            snprintf(out, outlen, "%s", PQgetvalue(r, 0, 0));
        else if (s == PGRES_COMMAND_OK)
            snprintf(out, outlen, "%s", PQcmdTuples(r));
    }
    PQclear(r);
    PQfinish(c);
    return rc;
}

long long
pg_service_bytes(const bench *b, char *err, size_t errlen)
{
    char out[64];
    /* Every table of the service in the public schema, with its indexes and
     * TOAST; the benchmark's own table and the migration bookkeeping are
     * left out. */
    if (pg_exec(b,
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
                "AND c.relkind IN ('r', 'p') "
                "AND c.relname NOT IN ('bench_commit', 'schema_migrations')",
                out, sizeof out, err, errlen) != 0)
        return -1;
    return atoll(out);
}

int
pg_table_bytes(const bench *b, char *out, size_t outlen, char *err, size_t errlen)
{
    return pg_exec(b,
                   "SELECT string_agg(c.relname || '=' || pg_total_relation_size(c.oid), ',' "
                   "ORDER BY c.relname) FROM pg_class c "
                   "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
                   "AND c.relkind IN ('r', 'p') "
                   "AND c.relname NOT IN ('bench_commit', 'schema_migrations')",
                   out, outlen, err, errlen);
}

/* Appends s to buf as a single-quoted shell word. */
static void
shell_quote(char *buf, size_t len, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 < len)
        buf[n++] = '\'';
    for (; *s != '\0' && n + 5 < len; s++) {
        if (*s == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    if (n + 1 < len)
        buf[n++] = '\'';
    buf[n] = '\0';
}

double
pg_pgbench(const bench *b, double seconds, double *lat_ms, long long *ntx, char *err, size_t errlen)
{
    if (b->pgbench_script == NULL) {
        snprintf(err, errlen, "no --pgbench-script given");
        return -1;
    }
    if (pg_exec(b,
                "CREATE TABLE IF NOT EXISTS bench_commit (id bigserial PRIMARY KEY, "
                "payload text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
                NULL, 0, err, errlen) != 0)
        return -1;
    int secs = (int)(seconds + 0.5);
    if (secs < 1)
        secs = 1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "pgbench -n -M prepared -c %d -j 2 -T %d -f ", b->nthreads, secs);
    shell_quote(cmd, sizeof cmd, b->pgbench_script);
    strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
    shell_quote(cmd, sizeof cmd, b->dsn);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(err, errlen, "cannot run pgbench");
        return -1;
    }
    char line[512];
    double tps = -1;
    char last[512] = "";
    *lat_ms = 0;
    *ntx = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        double v;
        long long n;
        if (sscanf(line, "number of transactions actually processed: %lld", &n) == 1)
            *ntx = n;
        else if (sscanf(line, "tps = %lf", &v) == 1)
            tps = v;
        else if (sscanf(line, "latency average = %lf", &v) == 1)
            *lat_ms = v;
        if (line[0] != '\0')
            snprintf(last, sizeof last, "%s", line);
    }
    int rc = pclose(p);
    if (tps < 0 || rc != 0) {
        size_t l = strlen(last);
        while (l > 0 && last[l - 1] == '\n')
            last[--l] = '\0';
        snprintf(err, errlen, "pgbench failed (status %d): %s", rc, last);
        return -1;
    }
    return tps;
}

long
proc_rss_kb(int pid)
{
    if (pid <= 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}
