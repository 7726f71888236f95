/*
 * pg/pool.h: the Postgres store's connection layer (internal to
 * server/store; only the Postgres store's files include it, through
 * pg/pg_int.h).
 *
 * A fixed-size pool of libpq connections behind a mutex and a condition
 * variable, with lazy (re)connection, and the flights that run prepared
 * statements on a borrowed connection within a deadline. It knows no SQL
 * of its own: statements are handed in (the table of pg/stmts.c).
 */
#ifndef WF_STORE_PG_POOL_H
#define WF_STORE_PG_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "wf_error.h"

typedef struct wf_store_pg_pool wf_store_pg_pool;

#define WF_STORE_PG_MAX_STMTS 192 /* statements a store may hand in */

struct wf_store_pg_item;

/* One pooled connection. Borrowed between acquire and release by one
 * thread at a time (libpq's rule); never kept across two store calls. */
typedef struct wf_store_pg_conn {
    PGconn *pg;                                    /* NULL until connected */
    uint64_t prepared[WF_STORE_PG_MAX_STMTS / 64]; /* bit i: statement i is prepared on pg */
    bool broken; /* drop it at release; the next user reconnects */
    bool busy;   /* owned by the pool: lent out */
    bool quiet;  /* log failures at debug level: the owner (the
                    listener) logs once per outage itself */
    /* The flight being built (see wf_store_pg__send): what was sent and is not
     * collected yet, and the results of the last one collected. */
    struct wf_store_pg_item *items;
    int n_items, cap_items;
    PGresult **res;
    int n_res, cap_res;
    bool in_flight;   /* a flight was started and not collected yet */
    bool send_failed; /* libpq refused to queue: the flight fails */
    bool expired;     /* the deadline had passed: nothing was sent */
    /* Session state kept by pg/store.c: the statement_timeout the server
     * holds for this session (when known), and what the borrower still
     * owes before its first statement (sent in the same flight). */
    bool timeout_known;
    int64_t timeout_ms;
    bool owe_timeout, owe_begin, timeout_in_flight;
    int64_t timeout_want;
    /* A request lookup queued on the flight being built, read by
     * pg/store.c when the flight is collected (NULL: none). */
    struct wf_store_pg_lookup *lookup;
    /* Whether the statements sent so far left a transaction block open
     * (BEGIN without COMMIT or ROLLBACK yet): the flight walk counts the
     * transactions a flight ends from it. */
    bool in_tx;
    /* Where what this connection sends is counted (pool connections: the
     * pool's totals, see wf_store_stats; NULL outside the pool, and while
     * background work borrows it). */
    struct wf_store_pg_counts *counts;
} wf_store_pg_conn;

/* What a pool's connections sent: flights, the statements in them, and
 * the transactions they ended (a COMMIT, or the implicit transaction of a
 * sync segment run outside a transaction block). Atomic, relaxed. */
typedef struct wf_store_pg_counts {
    int64_t flights, statements, transactions;
} wf_store_pg_counts;

/* A statement, prepared lazily per connection under its name. */
typedef struct wf_store_pg_stmt {
    const char *name;
    const char *sql;
    const char *what; /* object it touches, for messages ("task") */
} wf_store_pg_stmt;

typedef struct wf_store_pg_migration {
    int version;
    const char *sql;
} wf_store_pg_migration;

/* Embedded migrations/NNNN_*.sql, ascending (generated at build time). */
extern const wf_store_pg_migration wf_store_pg_migrations[];
extern const int wf_store_pg_n_migrations;

/* Every statement pg/store.c prepares, indexed by its own ids (the plan
 * guard of tests/store EXPLAINs each one). */
extern const wf_store_pg_stmt *const wf_store_pg_statements;
extern const int wf_store_pg_n_statements;

/* Makes a pool of cfg->pool_size connections; none is opened yet. */
wf_store_pg_pool *wf_store_pg__pool_new(const wf_store_pg_config *cfg, wf_error *err);

/* Closes every connection. No connection may be lent out. NULL-safe. */
void wf_store_pg__pool_free(wf_store_pg_pool *p);

/* Borrows a connection, (re)connecting it when needed. Waits for a free
 * one at most min(acquire timeout, deadline): WF_E_STORE_UNAVAILABLE when
 * the pool stays exhausted, WF_E_DEADLINE_EXCEEDED when the deadline is
 * what ran out. While Postgres is down it fails fast with
 * WF_E_STORE_UNAVAILABLE (connect attempts are bounded and backed off). */
wf_code wf_store_pg__pool_acquire(wf_store_pg_pool *p, int64_t deadline_ms, wf_store_pg_conn **out,
                                  wf_error *err);

/* Returns c to the pool. A connection that is broken or not idle (in or
 * after a failed transaction) is closed instead of being reused. */
void wf_store_pg__pool_release(wf_store_pg_pool *p, wf_store_pg_conn *c);

/* Opens a connection outside the pool (startup migrations, the listener),
 * bounded like the pool's, in non-blocking mode (blocking libpq calls such
 * as PQexec still work on it). quiet: leave logging a failure to the
 * caller. Close with PQfinish. NULL and err on failure. Safe to call from
 * any thread. */
PGconn *wf_store_pg__pool_connect(wf_store_pg_pool *p, int64_t deadline_ms, bool quiet,
                                  wf_error *err);

void wf_store_pg__pool_stats(wf_store_pg_pool *p, wf_store_stats *out);

/*
 * Flights: statements sent back to back in libpq pipeline mode and
 * collected together, so that they cost one network round trip. The
 * server runs them in order; after a failure it skips the rest up to the
 * next sync point (wf_store_pg__send_sync, and the one wf_store_pg__flush adds). Inside
 * an explicit transaction the failure aborts the transaction, as it would
 * one statement at a time.
 */

/* Queues statement id (preparing it first when needed) on c's flight and
 * returns its slot: 0 for the flight's first statement, then 1, 2, ...
 * Parameters are copied. A failure to queue is reported by wf_store_pg__flush. */
int wf_store_pg__send(wf_store_pg_conn *c, const wf_store_pg_stmt *stmts, int id, int nparams,
                      const char *const *values, const int *lengths, const int *formats,
                      int64_t deadline_ms);

/* A sync point: what was queued before it commits (or fails) as its own
 * implicit transaction, whatever follows. */
void wf_store_pg__send_sync(wf_store_pg_conn *c);

/* True when nothing is queued on c (the next wf_store_pg__send starts a flight). */
bool wf_store_pg__idle(const wf_store_pg_conn *c);

/* Sends the flight and collects every result in order, waiting at most
 * until the deadline (plus a short grace for the server-side
 * statement_timeout to answer); past that the connection is dropped,
 * never left hanging. WF_OK when every statement succeeded: wf_store_pg__take
 * then hands over each one's result until the next flight starts. Otherwise
 * the first failure, mapped (pg/errors.c), with *failed set to the slot
 * of the statement that failed, or -1 when the connection, the deadline
 * or memory failed rather than a statement. A connection lost or left
 * mid-flight is marked broken (dropped at release). failed may be NULL. */
wf_code wf_store_pg__flush(wf_store_pg_conn *c, const wf_store_pg_stmt *stmts, int64_t deadline_ms,
                           int *failed, wf_error *err);

/* Hands over the result of slot in the flight last collected (PQclear
 * it), or NULL. Results not taken are freed with the next flight. */
PGresult *wf_store_pg__take(wf_store_pg_conn *c, int slot);

/* Frees the flight buffers and results of a connection kept outside the
 * pool (the PGconn itself stays: PQfinish it). */
void wf_store_pg__conn_clear(wf_store_pg_conn *c);

/* pg/errors.c: maps a failed result (or a connection failure when res is
 * NULL) to a wf_code and a client-safe message naming what; logs the
 * SQLSTATE and server text (at debug level when quiet). Sets *broken when
 * the connection is unusable. The one place SQLSTATEs are interpreted. */
wf_code wf_store_pg__map_error(PGconn *pg, const PGresult *res, const char *stmt, const char *what,
                               bool quiet, bool *broken, wf_error *err);

#endif /* WF_STORE_PG_POOL_H */
