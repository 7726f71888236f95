/*
 * test_pg: the one Postgres fixture of the C suites — administrative
 * statements on the test cluster, and a fresh schema per case with a DSN
 * whose search_path is that schema (the store migrates it on open).
 * Each of them fails the running Check test when Postgres refuses.
 */
#ifndef WF_TEST_PG_H
#define WF_TEST_PG_H

#include <libpq-fe.h>

/* WF_TEST_PG_DSN; when it is unset or empty, prints that the suite is
 * skipped and exits 77 (CTest SKIP_RETURN_CODE): for a suite's main. */
const char *wf_test_pg_dsn(void);

/* A connection to dsn with notices silenced (PQfinish it). */
PGconn *wf_test_pg_connect(const char *dsn);

/* Runs one administrative statement (fmt with one %s) on dsn. */
void wf_test_pg_admin(const char *dsn, const char *fmt, const char *arg);

/* dsn with its search_path set to schema (malloc'd; the caller frees it). */
char *wf_test_pg_schema_dsn(const char *dsn, const char *schema);

/* Drops and creates schema on dsn; returns wf_test_pg_schema_dsn. */
char *wf_test_pg_fresh_schema(const char *dsn, const char *schema);

/* Drops schema and everything in it. */
void wf_test_pg_drop_schema(const char *dsn, const char *schema);

#endif /* WF_TEST_PG_H */
