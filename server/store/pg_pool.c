/*
 * pg_pool.c: fixed-size libpq connection pool and deadline-bounded exec.
 *
 * DESIGN. Slots are fixed at creation (WF_DB_POOL_SIZE); a slot's
 * connection is opened lazily by whoever borrows it. Waiting for a slot
 * uses a condition variable on the monotonic clock, bounded by the acquire
 * timeout and the call's deadline. Every connect and every query is
 * non-blocking and polled against a cutoff, so no call can hang on a dead
 * or unreachable server. After a failed connect the pool refuses new
 * connects for a short back-off, so while Postgres is down callers get
 * STORE_UNAVAILABLE at once instead of each waiting on a connect.
 * Connections that went stale while idle (Postgres restarted) are noticed
 * at acquire by a zero-timeout poll and replaced before use.
 *
 * Owns: PGconn lifetimes, per-connection prepared-statement bits, pool
 * gauges. Must not: contain SQL (store_pg.c hands statements in), log the
 * connection string, or keep a connection lent across calls.
 */
#include "pg_pool.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_log.h"
#include "wf_time.h"

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 2000
#define GRACE_MS 250 /* after the deadline, for statement_timeout to answer */

enum { KW_CONNECT_TIMEOUT, KW_APP, KW_KA, KW_KA_IDLE, KW_KA_INTERVAL, KW_KA_COUNT, KW_DSN, KW_N };

struct wf_pg_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wf_pg_conn *conns;
    int size;
    int in_use;
    int waiting;
    int acquire_timeout_ms;
    int connect_timeout_ms;
    int64_t down_until_ms; /* no connect attempts before this (back-off) */
    int backoff_ms;
    /* Connection parameters for PQconnectStartParams. Ours come first so
     * that anything the DSN sets (expanded from dbname) wins. */
    const char *keys[KW_N + 1];
    const char *vals[KW_N + 1];
    char *dsn;
    char connect_timeout[16];
};

wf_pg_pool *
wf_pg_pool_new(const wf_store_pg_config *cfg, wf_error *err)
{
    wf_pg_pool *p = calloc(1, sizeof *p);
    if (p == NULL || cfg->dsn == NULL)
        goto fail;
    p->size = cfg->pool_size > 0 ? cfg->pool_size : 8;
    p->acquire_timeout_ms = cfg->acquire_timeout_ms > 0 ? cfg->acquire_timeout_ms : 1000;
    int cts = cfg->connect_timeout_s > 0 ? cfg->connect_timeout_s : 2;
    p->connect_timeout_ms = cts * 1000;
    p->backoff_ms = BACKOFF_MIN_MS;
    p->conns = calloc((size_t)p->size, sizeof *p->conns);
    p->dsn = strdup(cfg->dsn);
    if (p->conns == NULL || p->dsn == NULL)
        goto fail;
    snprintf(p->connect_timeout, sizeof p->connect_timeout, "%d", cts);
    const char *k[KW_N] = {"connect_timeout", "application_name",    "keepalives",
                           "keepalives_idle", "keepalives_interval", "keepalives_count",
                           "dbname"};
    const char *v[KW_N] = {p->connect_timeout, "workflowd", "1", "10", "5", "3", p->dsn};
    memcpy(p->keys, k, sizeof k);
    memcpy(p->vals, v, sizeof v);

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->mu, NULL);
    return p;
fail:
    if (p != NULL) {
        free(p->conns);
        free(p->dsn);
        free(p);
    }
    wf_error_set(err, WF_E_INTERNAL, "could not create the database pool");
    return NULL;
}

static void
drop(wf_pg_conn *c)
{
    if (c->pg != NULL)
        PQfinish(c->pg);
    c->pg = NULL;
    c->prepared = 0;
    c->broken = false;
}

void
wf_pg_pool_free(wf_pg_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->size; i++)
        drop(&p->conns[i]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->conns);
    free(p->dsn);
    free(p);
}

/* Waits for events on pg's socket until cutoff (0 = forever): 1 ready,
 * 0 timed out, -1 error. */
static int
wait_sock(PGconn *pg, short events, int64_t cutoff_ms)
{
    struct pollfd pfd = {PQsocket(pg), events, 0};
    if (pfd.fd < 0)
        return -1;
    for (;;) {
        int timeout = -1;
        if (cutoff_ms != 0) {
            int64_t left = cutoff_ms - wf_mono_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        int r = poll(&pfd, 1, timeout);
        if (r >= 0)
            return r > 0 ? 1 : 0;
        if (errno != EINTR)
            return -1;
    }
}

/* Server notices ("relation already exists, skipping") go to the debug
 * log instead of libpq's default, stderr. */
static void
notice_to_log(void *arg, const char *message)
{
    (void)arg;
    WF_LOG(WF_LOG_DEBUG, "db_notice", "%s", message);
}

/* Connects without ever blocking past min(connect timeout, deadline).
 * quiet: do not log a failure (the caller logs once per outage). */
static PGconn *
connect_bounded(wf_pg_pool *p, int64_t deadline_ms, bool quiet, wf_error *err)
{
    int64_t cutoff = wf_mono_ms() + p->connect_timeout_ms;
    if (deadline_ms != 0 && deadline_ms < cutoff)
        cutoff = deadline_ms;
    PGconn *pg = PQconnectStartParams(p->keys, p->vals, 1);
    if (pg == NULL) {
        wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not connect to the database");
        return NULL;
    }
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    const char *why = NULL;
    while (PQstatus(pg) != CONNECTION_BAD && st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED)
            break;
        int r = wait_sock(pg, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, cutoff);
        if (r <= 0) {
            why = r == 0 ? "timed out" : "poll failed";
            break;
        }
        st = PQconnectPoll(pg);
    }
    if (st != PGRES_POLLING_OK || PQstatus(pg) != CONNECTION_OK || PQsetnonblocking(pg, 1) != 0) {
        if (!quiet)
            WF_LOG(WF_LOG_WARN, "db_connect_failed", "detail=%s",
                   why != NULL ? why : PQerrorMessage(pg));
        PQfinish(pg);
        wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not connect to the database");
        return NULL;
    }
    PQsetNoticeProcessor(pg, notice_to_log, NULL);
    return pg;
}

PGconn *
wf_pg_pool_connect(wf_pg_pool *p, int64_t deadline_ms, bool quiet, wf_error *err)
{
    return connect_bounded(p, deadline_ms, quiet, err);
}

/* A connection whose socket is readable while idle has been told
 * something by the server, usually that it is going away. */
static bool
stale(wf_pg_conn *c)
{
    if (c->pg == NULL || PQstatus(c->pg) != CONNECTION_OK)
        return true;
    if (wait_sock(c->pg, POLLIN, -1 /* already past: zero timeout */) != 0) {
        if (!PQconsumeInput(c->pg))
            return true;
        PGnotify *n;
        while ((n = PQnotifies(c->pg)) != NULL)
            PQfreemem(n);
    }
    return PQstatus(c->pg) != CONNECTION_OK;
}

static void
give_back(wf_pg_pool *p, wf_pg_conn *c)
{
    pthread_mutex_lock(&p->mu);
    c->busy = false;
    p->in_use--;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

wf_code
wf_pg_pool_acquire(wf_pg_pool *p, int64_t deadline_ms, wf_pg_conn **out, wf_error *err)
{
    int64_t now = wf_mono_ms();
    if (deadline_ms != 0 && now >= deadline_ms)
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED, "deadline exceeded before the store call");
    int64_t until = now + p->acquire_timeout_ms;
    bool by_deadline = deadline_ms != 0 && deadline_ms < until;
    if (by_deadline)
        until = deadline_ms;
    struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};

    pthread_mutex_lock(&p->mu);
    wf_pg_conn *c = NULL;
    p->waiting++;
    for (;;) {
        /* Prefer a slot that already holds a connection. */
        for (int i = 0; i < p->size; i++) {
            wf_pg_conn *s = &p->conns[i];
            if (!s->busy && (c == NULL || (c->pg == NULL && s->pg != NULL)))
                c = s;
        }
        if (c != NULL)
            break;
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT && wf_mono_ms() >= until)
            break;
    }
    p->waiting--;
    if (c == NULL) {
        int size = p->size;
        pthread_mutex_unlock(&p->mu);
        WF_LOG(WF_LOG_WARN, "db_pool_exhausted", "size=%d", size);
        if (by_deadline)
            return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                                "deadline exceeded while waiting for a database connection");
        return wf_error_set(err, WF_E_STORE_UNAVAILABLE,
                            "could not get a database connection: all %d are busy", size);
    }
    c->busy = true;
    p->in_use++;
    int64_t down_until = p->down_until_ms;
    pthread_mutex_unlock(&p->mu);

    if (stale(c)) {
        drop(c);
        if (wf_mono_ms() < down_until) {
            give_back(p, c);
            return wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not reach the database");
        }
        c->pg = connect_bounded(p, deadline_ms, false, err);
        pthread_mutex_lock(&p->mu);
        if (c->pg == NULL) {
            p->down_until_ms = wf_mono_ms() + p->backoff_ms;
            p->backoff_ms = p->backoff_ms * 2 < BACKOFF_MAX_MS ? p->backoff_ms * 2 : BACKOFF_MAX_MS;
        } else {
            p->down_until_ms = 0;
            p->backoff_ms = BACKOFF_MIN_MS;
        }
        pthread_mutex_unlock(&p->mu);
        if (c->pg == NULL) {
            give_back(p, c);
            return err != NULL ? err->code : WF_E_STORE_UNAVAILABLE;
        }
    }
    *out = c;
    return WF_OK;
}

void
wf_pg_pool_release(wf_pg_pool *p, wf_pg_conn *c)
{
    if (c == NULL)
        return;
    if (c->pg != NULL && (c->broken || PQstatus(c->pg) != CONNECTION_OK ||
                          PQtransactionStatus(c->pg) != PQTRANS_IDLE))
        drop(c);
    give_back(p, c);
}

void
wf_pg_pool_stats(wf_pg_pool *p, wf_store_stats *out)
{
    pthread_mutex_lock(&p->mu);
    out->pool_size = p->size;
    out->in_use = p->in_use;
    out->waiting = p->waiting;
    pthread_mutex_unlock(&p->mu);
}

/* Flushes what was sent and collects the statement's result. NULL with
 * *timed_out when the cutoff passed; NULL alone when the connection died
 * without a result. */
static PGresult *
collect(PGconn *pg, int64_t cutoff, bool *timed_out)
{
    *timed_out = false;
    for (;;) {
        int f = PQflush(pg);
        if (f == 0)
            break;
        if (f < 0)
            return NULL;
        int r = wait_sock(pg, POLLIN | POLLOUT, cutoff);
        if (r <= 0) {
            *timed_out = r == 0;
            return NULL;
        }
        if (!PQconsumeInput(pg))
            return NULL;
    }
    PGresult *keep = NULL;
    for (;;) {
        while (PQisBusy(pg)) {
            int r = wait_sock(pg, POLLIN, cutoff);
            if (r <= 0) {
                PQclear(keep);
                *timed_out = r == 0;
                return NULL;
            }
            if (!PQconsumeInput(pg))
                break; /* PQgetResult now reports the failure */
        }
        PGresult *r = PQgetResult(pg);
        if (r == NULL)
            break;
        /* Keep the first result, unless a later one is an error. */
        ExecStatusType s = PQresultStatus(r);
        if (keep == NULL || (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)) {
            PQclear(keep);
            keep = r;
        } else {
            PQclear(r);
        }
        if (PQstatus(pg) != CONNECTION_OK)
            break;
    }
    return keep;
}

/* Sends (via send_fn) and waits; maps every failure. */
static wf_code
finish(wf_pg_conn *c, const wf_pg_stmt *st, int sent, int64_t cutoff, PGresult **res, wf_error *err)
{
    bool timed_out = false;
    PGresult *r = sent ? collect(c->pg, cutoff, &timed_out) : NULL;
    if (timed_out) {
        /* The server did not answer in time: drop the connection rather
         * than wait (its transaction aborts when the socket closes). */
        c->broken = true;
        WF_LOG(c->quiet ? WF_LOG_DEBUG : WF_LOG_WARN, "db_timeout", "statement=%s", st->name);
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                            "deadline exceeded while waiting for the store");
    }
    ExecStatusType s = r != NULL ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (r != NULL && (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)) {
        *res = r;
        return WF_OK;
    }
    bool broken = false;
    wf_code rc = wf_pg_map_error(c->pg, r, st->name, st->what, c->quiet, &broken, err);
    if (broken)
        c->broken = true;
    PQclear(r);
    return rc;
}

wf_code
wf_pg_exec(wf_pg_conn *c, const wf_pg_stmt *stmts, int id, int nparams, const char *const *values,
           const int *lengths, const int *formats, int64_t deadline_ms, PGresult **res,
           wf_error *err)
{
    const wf_pg_stmt *st = &stmts[id];
    if (c->pg == NULL || c->broken)
        return wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not reach the database");
    if (deadline_ms != 0 && wf_mono_ms() >= deadline_ms)
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                            "deadline exceeded while waiting for the store");
    int64_t cutoff = deadline_ms != 0 ? deadline_ms + GRACE_MS : 0;
    uint64_t bit = (uint64_t)1 << id;
    if ((c->prepared & bit) == 0) {
        PGresult *r = NULL;
        wf_code rc =
            finish(c, st, PQsendPrepare(c->pg, st->name, st->sql, 0, NULL), cutoff, &r, err);
        PQclear(r);
        if (rc != WF_OK)
            return rc;
        c->prepared |= bit;
    }
    return finish(c, st, PQsendQueryPrepared(c->pg, st->name, nparams, values, lengths, formats, 0),
                  cutoff, res, err);
}
