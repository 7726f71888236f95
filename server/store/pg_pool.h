/*
 * pg_pool.h: the Postgres store's connection layer (internal to
 * server/store; only store_pg.c includes it).
 *
 * A fixed-size pool of libpq connections behind a mutex and a condition
 * variable, with lazy (re)connection, and the one function that runs a
 * prepared statement on a borrowed connection within a deadline. It knows
 * no SQL of its own: statements are handed in by store_pg.c.
 */
#ifndef WF_PG_POOL_H
#define WF_PG_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "wf_error.h"

typedef struct wf_pg_pool wf_pg_pool;

/* One pooled connection. Borrowed between acquire and release by one
 * thread at a time (libpq's rule); never kept across two store calls. */
typedef struct wf_pg_conn {
    PGconn *pg;        /* NULL until connected */
    uint64_t prepared; /* bit i: statement i is prepared on pg */
    bool broken;       /* drop it at release; the next user reconnects */
    bool busy;         /* owned by the pool: lent out */
    bool quiet;        /* log failures at debug level: the owner (the
                          listener) logs once per outage itself */
} wf_pg_conn;

/* A statement, prepared lazily per connection under its name. */
typedef struct wf_pg_stmt {
    const char *name;
    const char *sql;
    const char *what; /* object it touches, for messages ("task") */
} wf_pg_stmt;

typedef struct wf_pg_migration {
    int version;
    const char *sql;
} wf_pg_migration;

/* Embedded migrations/NNNN_*.sql, ascending (generated at build time). */
extern const wf_pg_migration wf_pg_migrations[];
extern const int wf_pg_n_migrations;

/* Makes a pool of cfg->pool_size connections; none is opened yet. */
wf_pg_pool *wf_pg_pool_new(const wf_store_pg_config *cfg, wf_error *err);

/* Closes every connection. No connection may be lent out. NULL-safe. */
void wf_pg_pool_free(wf_pg_pool *p);

/* Borrows a connection, (re)connecting it when needed. Waits for a free
 * one at most min(acquire timeout, deadline): WF_E_STORE_UNAVAILABLE when
 * the pool stays exhausted, WF_E_DEADLINE_EXCEEDED when the deadline is
 * what ran out. While Postgres is down it fails fast with
 * WF_E_STORE_UNAVAILABLE (connect attempts are bounded and backed off). */
wf_code wf_pg_pool_acquire(wf_pg_pool *p, int64_t deadline_ms, wf_pg_conn **out, wf_error *err);

/* Returns c to the pool. A connection that is broken or not idle (in or
 * after a failed transaction) is closed instead of being reused. */
void wf_pg_pool_release(wf_pg_pool *p, wf_pg_conn *c);

/* Opens a connection outside the pool (startup migrations, the listener),
 * bounded like the pool's, in non-blocking mode (blocking libpq calls such
 * as PQexec still work on it). quiet: leave logging a failure to the
 * caller. Close with PQfinish. NULL and err on failure. Safe to call from
 * any thread. */
PGconn *wf_pg_pool_connect(wf_pg_pool *p, int64_t deadline_ms, bool quiet, wf_error *err);

void wf_pg_pool_stats(wf_pg_pool *p, wf_store_stats *out);

/* Runs statement id (stmts[id]) with text/binary params, preparing it
 * first on this connection if needed. Waits at most until the deadline
 * (plus a short grace for the server-side statement_timeout to answer);
 * past that the connection is dropped, never left hanging. On WF_OK *res
 * holds a TUPLES_OK or COMMAND_OK result (PQclear it). */
wf_code wf_pg_exec(wf_pg_conn *c, const wf_pg_stmt *stmts, int id, int nparams,
                   const char *const *values, const int *lengths, const int *formats,
                   int64_t deadline_ms, PGresult **res, wf_error *err);

/* pg_errors.c: maps a failed result (or a connection failure when res is
 * NULL) to a wf_code and a client-safe message naming what; logs the
 * SQLSTATE and server text (at debug level when quiet). Sets *broken when
 * the connection is unusable. The one place SQLSTATEs are interpreted. */
wf_code wf_pg_map_error(PGconn *pg, const PGresult *res, const char *stmt, const char *what,
                        bool quiet, bool *broken, wf_error *err);

#endif /* WF_PG_POOL_H */
