/*
 * pg/listen.c: the Postgres store's two threads: the notifier, which
 * sends the wake-ups commits owe (and keeps the statistics of growing backlog
 * tables current), and the listener, which receives them.
 */
#include "pg/pg_int.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_log.h"
#include "wf_time.h"

/* Listener: poll timeout (how fast wf_store_free stops it) and reconnect
 * back-off, as the pool's. */
#define LISTEN_POLL_MS 100
#define LISTEN_BACKOFF_MIN_MS 250
#define LISTEN_BACKOFF_MAX_MS 2000
#define LISTEN_STMT_MS 2000
#define LISTEN_HEALTHY_MS 10000 /* connected this long: the back-off starts over */

/* ---- notifier ------------------------------------------------------------------ */

/*
 * Wake-ups for the other replicas, sent after commit and outside every
 * writing transaction: a notifying transaction takes Postgres's one
 * database-wide notify lock at commit, so NOTIFY in the writers would
 * serialise every commit behind it. A committed unit of work only notes
 * what it owes (events written, job types made activatable); one thread
 * sends what was noted in one short transaction of its own, at once when
 * it has been idle, else at most once per NOTIFY_INTERVAL_MS, so a burst
 * of commits costs one NOTIFY per channel and payload. A failed send
 * (Postgres away) is retried after NOTIFY_RETRY_MS as a wake-everything
 * hint. Notifications stay hints: the waiters' periodic recheck is the
 * fallback, and in-process waiters are woken directly by the engine.
 */

/* Notes what a commit owes; cheap, never blocks on the database. */
static void
notifier_note(pg_store *s, const pg_tx *tx)
{
    if (!tx->wrote_events && !tx->any_type && tx->n_types == 0)
        return;
    pg_notifier *n = &s->notifier;
    pthread_mutex_lock(&n->mu);
    n->events |= tx->wrote_events;
    n->any_type |= tx->any_type;
    n->any_root |= tx->any_root;
    for (size_t i = 0; i < tx->n_types; i++)
        if (!wf_store__set_add(n->types, &n->n_types, NOTIFY_TYPES, tx->types[i], true))
            n->any_type = true;
    for (size_t i = 0; i < tx->n_roots; i++)
        if (!wf_store__set_add(n->roots, &n->n_roots, WF_STORE_EVENT_ROOTS, tx->roots[i], true))
            n->any_root = true;
    if (!n->pending) {
        n->pending = true;
        pthread_cond_signal(&n->cv);
    }
    pthread_mutex_unlock(&n->mu);
}

void
wf_store_pg__notes_of_tx(pg_tx *tx)
{
    notifier_note((pg_store *)tx->base.st, tx);
}

/* Remembers that tx made a job of type activatable. */
void
wf_store_pg__tx_note_type(pg_tx *tx, const char *type)
{
    if (type != NULL && !wf_store__set_add(tx->types, &tx->n_types, NOTIFY_TYPES, type, false))
        tx->any_type = true;
}

/* Remembers that tx wrote events of the root root_id. */
void
wf_store_pg__tx_note_root(pg_tx *tx, const char *root_id)
{
    if (!wf_store__set_add(tx->roots, &tx->n_roots, WF_STORE_EVENT_ROOTS, root_id, false))
        tx->any_root = true;
}

/* Runs statement id with p on a pooled connection within deadline,
 * as background work, not a call's: left out of the flight counts
 * (wf_store_stats), as the listener's connection is. *res (when non-NULL)
 * gets the result. */
static wf_code
background_run(pg_store *s, wf_arena *a, int64_t deadline, int id, const params *p, PGresult **res,
               wf_error *err)
{
    wf_store_ctx ctx = {NULL, deadline, a};
    wf_store_pg_conn *c = NULL;
    wf_code rc = p->oom ? wf_error_nomem(err) : wf_store_pg__conn_get(s, &ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    struct wf_store_pg_counts *counts = c->counts;
    c->counts = NULL;
    PGresult *r = NULL;
    rc = wf_store_pg__run(c, id, p, deadline, &r, err);
    c->counts = counts;
    wf_store_pg__conn_put(s, c);
    if (res != NULL && rc == WF_OK)
        *res = r;
    else
        PQclear(r);
    return rc;
}

/* What the notifier owes, taken from it in one piece (strings malloc'd). */
typedef struct notify_owed {
    bool events, any_type, any_root;
    const char *types[NOTIFY_TYPES];
    size_t n_types;
    const char *roots[WF_STORE_EVENT_ROOTS];
    size_t n_roots;
} notify_owed;

/* Takes what n owes (caller holds n->mu) and clears it. */
static void
notifier_take(pg_notifier *n, notify_owed *o)
{
    o->events = n->events;
    o->any_type = n->any_type;
    o->any_root = n->any_root;
    o->n_types = n->n_types;
    memcpy(o->types, n->types, n->n_types * sizeof o->types[0]);
    o->n_roots = n->n_roots;
    memcpy(o->roots, n->roots, n->n_roots * sizeof o->roots[0]);
    n->pending = n->events = n->any_type = n->any_root = false;
    n->n_types = n->n_roots = 0;
}

static void
owed_free(notify_owed *o)
{
    for (size_t i = 0; i < o->n_types; i++)
        free((char *)o->types[i]);
    for (size_t i = 0; i < o->n_roots; i++)
        free((char *)o->roots[i]);
}

/* One transaction of pg_notify calls: wf_events with the roots of the
 * events ("" for any) when events were written, then wf_jobs per type (""
 * for any). */
static wf_code
notifier_send(pg_store *s, const notify_owed *o, wf_error *err)
{
    size_t k = 0, m = o->any_type ? 1 : o->n_types;
    const char *chan[NOTIFY_TYPES + 1], *pay[NOTIFY_TYPES + 1];
    char *roots = NULL;
    if (o->events) {
        roots = wf_store__events_payload(o->roots, o->n_roots, o->any_root);
        chan[k] = "wf_events";
        pay[k++] = roots != NULL ? roots : "";
    }
    for (size_t i = 0; i < m; i++) {
        chan[k] = "wf_jobs";
        pay[k++] = o->any_type ? "" : o->types[i];
    }
    wf_arena *a = k > 0 ? wf_arena_new() : NULL;
    wf_code rc = WF_OK;
    if (k > 0 && a == NULL)
        rc = wf_error_nomem(err);
    if (a != NULL) {
        params p = {.a = a};
        wf_store_pg__p_text_array(&p, chan, k);
        wf_store_pg__p_text_array(&p, pay, k);
        rc = background_run(s, a, wf_mono_ms() + NOTIFY_SEND_MS, S_NOTIFY, &p, NULL, err);
        wf_arena_free(a);
    }
    free(roots);
    return rc;
}

/* The statistics of the backlog tables (migrations/0015), checked after
 * commits: a table analysed while small keeps plans made for a small
 * table (a sort of the whole queue, a scan of the whole tenant) until its
 * statistics change. */
static void
notifier_analyse(pg_store *s)
{
    pg_notifier *n = &s->notifier;
    if (wf_mono_ms() < n->next_analyse_ms)
        return;
    n->next_analyse_ms = wf_mono_ms() + ANALYZE_CHECK_MS;
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return;
    params p = {.a = a};
    wf_store_pg__p_i64(&p, ANALYZE_MIN_BYTES);
    wf_store_pg__p_i64(&p, ANALYZE_GROWTH);
    PGresult *res = NULL;
    wf_error err;
    wf_error_clear(&err);
    wf_code rc =
        background_run(s, a, wf_mono_ms() + ANALYZE_SEND_MS, S_ANALYZE_GROWN, &p, &res, &err);
    if (rc == WF_OK && PQntuples(res) == 1 && atoi(PQgetvalue(res, 0, 0)) > 0)
        WF_LOG(WF_LOG_DEBUG, "db_analyzed", "tables=%s", PQgetvalue(res, 0, 0));
    else if (rc != WF_OK)
        WF_LOG(WF_LOG_DEBUG, "db_analyze_failed", "detail=%s", err.msg);
    PQclear(res);
    wf_arena_free(a);
}

static void *
notifier_main(void *arg)
{
    pg_store *s = arg;
    pg_notifier *n = &s->notifier;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        if (!n->pending && n->stop)
            break;
        if (!n->pending) {
            pthread_cond_wait(&n->cv, &n->mu);
            continue;
        }
        int64_t now = wf_mono_ms();
        if (!n->stop && now < n->next_ms) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t ns = (int64_t)ts.tv_nsec + (n->next_ms - now) * 1000000;
            ts.tv_sec += (time_t)(ns / 1000000000);
            ts.tv_nsec = (long)(ns % 1000000000);
            pthread_cond_timedwait(&n->cv, &n->mu, &ts);
            continue;
        }
        bool stopping = n->stop;
        notify_owed owed;
        notifier_take(n, &owed);
        pthread_mutex_unlock(&n->mu);

        wf_error err;
        wf_error_clear(&err);
        wf_code rc = notifier_send(s, &owed, &err);
        owed_free(&owed);
        if (rc != WF_OK)
            WF_LOG(WF_LOG_DEBUG, "db_notify_failed", "detail=%s", err.msg);
        if (!stopping)
            notifier_analyse(s);

        pthread_mutex_lock(&n->mu);
        if (rc == WF_OK) {
            n->sent++;
        } else if (!stopping) {
            /* Lost: ask every waiter elsewhere to look again. */
            n->pending = n->events = n->any_type = n->any_root = true;
        }
        n->next_ms = wf_mono_ms() + (rc == WF_OK ? NOTIFY_INTERVAL_MS : NOTIFY_RETRY_MS);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

bool
wf_store_pg__notifier_start(pg_store *s)
{
    pg_notifier *n = &s->notifier;
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->cv, &ca);
    pthread_condattr_destroy(&ca);
    n->started = pthread_create(&n->thread, NULL, notifier_main, s) == 0;
    return n->started;
}

/* Sends what is still owed (once, within NOTIFY_SEND_MS), then joins. */
void
wf_store_pg__notifier_stop(pg_store *s)
{
    pg_notifier *n = &s->notifier;
    if (!n->started)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    notify_owed rest;
    pthread_mutex_lock(&n->mu);
    notifier_take(n, &rest);
    pthread_mutex_unlock(&n->mu);
    owed_free(&rest);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    n->started = false;
}

/* ---- listener ---------------------------------------------------------------- */

/*
 * One thread, one connection outside the pool: LISTEN on both channels,
 * poll() its socket with a short timeout (so a stop is noticed within
 * LISTEN_POLL_MS), hand every notification to the callback. When the
 * connection is lost it retries with back-off, logging once when the
 * outage starts and once when it ends (failed attempts in between are
 * quiet), and after reconnecting calls the callback once per channel with
 * payload "" (what was sent meanwhile is lost). Only this thread touches
 * conn after the start.
 */
struct pg_listener {
    wf_store_pg_pool *pool; /* for connection parameters only; outlives the thread */
    wf_store_listen_fn fn;
    void *arg;
    wf_store_pg_conn conn; /* conn.pg NULL while disconnected */
    atomic_bool stop;      /* set by wf_store_pg__listener_stop */
    pthread_t thread;
};

/* Connects and LISTENs; false (connection closed) on any failure. */
static bool
listener_open(pg_listener *l)
{
    l->conn = (wf_store_pg_conn){.quiet = true};
    l->conn.pg = wf_store_pg__pool_connect(l->pool, 0, true, NULL);
    if (l->conn.pg == NULL)
        return false;
    int64_t deadline = wf_mono_ms() + LISTEN_STMT_MS;
    if (wf_store_pg__run_cmd(&l->conn, S_LISTEN_EVENTS, NULL, deadline, NULL, NULL) == WF_OK &&
        wf_store_pg__run_cmd(&l->conn, S_LISTEN_JOBS, NULL, deadline, NULL, NULL) == WF_OK)
        return true;
    wf_store_pg__conn_clear(&l->conn);
    PQfinish(l->conn.pg);
    l->conn.pg = NULL;
    return false;
}

static void
listener_close(pg_listener *l, const char *why)
{
    WF_LOG(WF_LOG_WARN, "db_listener_lost", "detail=%s", why);
    wf_store_pg__conn_clear(&l->conn);
    PQfinish(l->conn.pg);
    l->conn.pg = NULL;
}

static void
sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Delivers what libpq has queued; false when the connection broke. */
static bool
listener_drain(pg_listener *l)
{
    PGnotify *nf;
    while ((nf = PQnotifies(l->conn.pg)) != NULL) {
        l->fn(l->arg, nf->relname, nf->extra != NULL ? nf->extra : "");
        PQfreemem(nf);
    }
    return PQstatus(l->conn.pg) == CONNECTION_OK;
}

/* The next back-off step after ms. */
static int64_t
backoff_next(int64_t ms)
{
    return ms * 2 < LISTEN_BACKOFF_MAX_MS ? ms * 2 : LISTEN_BACKOFF_MAX_MS;
}

static void *
listener_main(void *arg)
{
    pg_listener *l = arg;
    /* Every retry waits (a server that accepts and then drops connections
     * must not make this spin); the back-off only starts over once a
     * connection has stayed up for LISTEN_HEALTHY_MS. */
    int64_t backoff = LISTEN_BACKOFF_MIN_MS, retry_at = 0, up_since = wf_mono_ms();
    while (!atomic_load(&l->stop)) {
        int64_t now = wf_mono_ms();
        if (l->conn.pg == NULL) {
            if (now < retry_at) {
                sleep_ms(retry_at - now < LISTEN_POLL_MS ? retry_at - now : LISTEN_POLL_MS);
                continue;
            }
            if (!listener_open(l)) {
                retry_at = wf_mono_ms() + backoff;
                backoff = backoff_next(backoff);
                continue;
            }
            up_since = wf_mono_ms();
            WF_LOG(WF_LOG_INFO, "db_listener_restored", "channels=wf_events,wf_jobs");
            l->fn(l->arg, "wf_events", "");
            l->fn(l->arg, "wf_jobs", "");
            continue;
        }
        if (now - up_since >= LISTEN_HEALTHY_MS)
            backoff = LISTEN_BACKOFF_MIN_MS;
        struct pollfd pfd = {PQsocket(l->conn.pg), POLLIN, 0};
        int r = pfd.fd >= 0 ? poll(&pfd, 1, LISTEN_POLL_MS) : -1;
        if (r < 0 && pfd.fd >= 0 && errno == EINTR)
            continue;
        if (r < 0 || (r > 0 && !PQconsumeInput(l->conn.pg)) || !listener_drain(l)) {
            listener_close(l, PQerrorMessage(l->conn.pg));
            retry_at = wf_mono_ms() + backoff;
            backoff = backoff_next(backoff);
        }
    }
    wf_store_pg__conn_clear(&l->conn);
    if (l->conn.pg != NULL)
        PQfinish(l->conn.pg);
    return NULL;
}

void
wf_store_pg__listener_stop(pg_listener *l)
{
    if (l == NULL)
        return;
    atomic_store(&l->stop, true);
    pthread_join(l->thread, NULL);
    free(l);
}

wf_code
wf_store_pg__set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    if (s->listener != NULL)
        return wf_error_set(err, WF_E_INTERNAL, "the store already has a listener");
    pg_listener *l = calloc(1, sizeof *l);
    if (l == NULL)
        return wf_error_nomem(err);
    l->pool = s->pool;
    l->fn = fn;
    l->arg = arg;
    atomic_init(&l->stop, false);
    /* Listen before returning, so that no commit after this call goes
     * unheard; if Postgres is down the thread keeps trying. */
    if (!listener_open(l))
        WF_LOG(WF_LOG_WARN, "db_listener_lost", "detail=%s", "could not listen; retrying");
    if (pthread_create(&l->thread, NULL, listener_main, l) != 0) {
        wf_store_pg__conn_clear(&l->conn);
        if (l->conn.pg != NULL)
            PQfinish(l->conn.pg);
        free(l);
        return wf_error_set(err, WF_E_INTERNAL, "could not start the database listener");
    }
    s->listener = l;
    return WF_OK;
}
