/*
 * pg/pool.c: fixed-size libpq connection pool and deadline-bounded exec.
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
 * A DSN that lists several hosts (postgresql://h1:p1,h2:p2/db?
 * target_session_attrs=read-write, for a primary and its standbys) is
 * tried one host at a time, each bounded by the connect timeout: libpq's
 * non-blocking connect gives no host a timeout of its own, so a host that
 * hangs (down without refusing, or frozen) would use up the whole attempt
 * and the next host would never be tried. The first host tried is the one
 * that connected last, so that after a failover new connections go to the
 * new primary at once instead of waiting on the old one first.
 *
 * Flights (wf_store_pg__send .. wf_store_pg__flush) use libpq's pipeline mode, entered
 * for one flight and left once every result is in, so a connection
 * between flights is an ordinary one. Results are collected strictly in
 * order; a connection that fails, times out or answers out of step
 * mid-flight is marked broken and dropped at release, never reused.
 *
 * Owns: PGconn lifetimes, per-connection prepared-statement bits and
 * flight state, pool gauges. Must not: contain SQL (pg/store.c hands statements in), log the
 * connection string, or keep a connection lent across calls.
 */
#include "pg/pool.h"

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
#define MAX_HOSTS 16 /* hosts of a DSN tried one by one; more: libpq walks them itself */

/* Connection keywords. The host ones come after the DSN (expanded from
 * dbname), so that they override its host lists for one attempt; they
 * stay NULL (ignored) for a DSN of one host. The options come last:
 * ours, then the DSN's own (see SESSION_OPTIONS). */
enum {
    KW_CONNECT_TIMEOUT,
    KW_APP,
    KW_KA,
    KW_KA_IDLE,
    KW_KA_INTERVAL,
    KW_KA_COUNT,
    KW_DSN,
    KW_HOST,
    KW_HOSTADDR,
    KW_PORT,
    KW_OPTIONS,
    KW_N
};

/* Every session plans its prepared statements once, generically: the
 * statements are written and checked for one plan that serves every value
 * (tests/store/test_store_plans.c and test_store_buffers.c plan them so),
 * and Postgres's default (plan_cache_mode = auto) plans many of them
 * again at every execution, which was a fifth of the database's CPU on the
 * job path. A DSN's own options come after, so a plan_cache_mode given
 * there wins. */
#define SESSION_OPTIONS "-c plan_cache_mode=force_generic_plan"

struct wf_store_pg_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wf_store_pg_conn *conns;
    int size;
    int in_use;
    int waiting;
    int acquire_timeout_ms;
    int connect_timeout_ms;
    int dsn_connect_timeout_s; /* connect_timeout of the DSN; 0 = not given */
    int64_t down_until_ms;     /* no connect attempts before this (back-off) */
    int backoff_ms;
    /* Connection parameters for PQconnectStartParams. Ours come first so
     * that anything the DSN sets (expanded from dbname) wins. */
    const char *keys[KW_N + 1];
    const char *vals[KW_N + 1];
    char *dsn;
    char connect_timeout[16];
    wf_store_pg_counts counts; /* sent so far */
    /* The DSN's hosts when it lists several (else n_hosts is 0): entry i
     * of its host, hostaddr and port lists (NULL when the list is not
     * given; one port serves every host), split from hosts_buf. */
    int n_hosts;
    const char *host[MAX_HOSTS], *hostaddr[MAX_HOSTS], *port[MAX_HOSTS];
    char *hosts_buf;
    char *options; /* SESSION_OPTIONS, then the DSN's options */
    int preferred; /* the host that connected last (atomic, relaxed) */
};

/* Splits list (a copy in *buf, advanced past it) at commas into out[]:
 * the number of entries, 0 when it has more than MAX_HOSTS or an empty
 * one. */
static int
split_list(const char *list, char **buf, const char **out)
{
    size_t len = strlen(list);
    char *copy = *buf;
    memcpy(copy, list, len + 1);
    *buf += len + 1;
    int n = 0;
    for (char *start = copy;; n++) {
        char *comma = strchr(start, ',');
        if (comma != NULL)
            *comma = '\0';
        if (n == MAX_HOSTS || start[0] == '\0')
            return 0;
        out[n] = start;
        if (comma == NULL)
            return n + 1;
        start = comma + 1;
    }
}

/* Reads the host lists and the options of p->dsn (p->options: ours, then
 * the DSN's). A DSN of one host, one libpq cannot
 * parse (the connect reports it) or with lists that do not match leaves
 * n_hosts 0: libpq then connects as given. False when out of memory. */
static bool
parse_hosts(wf_store_pg_pool *p)
{
    PQconninfoOption *opts = PQconninfoParse(p->dsn, NULL);
    if (opts == NULL)
        return (p->options = strdup(SESSION_OPTIONS)) != NULL;
    const char *host = NULL, *hostaddr = NULL, *port = NULL, *dsn_options = NULL;
    size_t need = 0;
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val == NULL || o->val[0] == '\0')
            continue;
        if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "hostaddr") == 0)
            hostaddr = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "options") == 0)
            dsn_options = o->val;
        else {
            if (strcmp(o->keyword, "connect_timeout") == 0)
                p->dsn_connect_timeout_s = atoi(o->val);
            continue;
        }
        need += strlen(o->val) + 1;
    }
    size_t n_opts = sizeof SESSION_OPTIONS + (dsn_options != NULL ? strlen(dsn_options) + 1 : 0);
    bool ok = (p->options = malloc(n_opts)) != NULL;
    if (ok)
        snprintf(p->options, n_opts, "%s%s%s", SESSION_OPTIONS, dsn_options != NULL ? " " : "",
                 dsn_options != NULL ? dsn_options : "");
    if (ok && need > 0 && (p->hosts_buf = malloc(need)) == NULL)
        ok = false;
    char *buf = p->hosts_buf;
    int n = 0, n_addr = 0, n_port = 0;
    if (ok && host != NULL)
        n = split_list(host, &buf, p->host);
    if (ok && hostaddr != NULL) {
        n_addr = split_list(hostaddr, &buf, p->hostaddr);
        if (host == NULL)
            n = n_addr;
    }
    if (ok && port != NULL)
        n_port = split_list(port, &buf, p->port);
    bool fits =
        n >= 2 && (hostaddr == NULL || n_addr == n) && (port == NULL || n_port == 1 || n_port == n);
    if (ok && fits) {
        /* The lists not given stay NULL (the pool is calloc'ed). */
        p->n_hosts = n;
        for (int i = 1; n_port == 1 && i < n; i++)
            p->port[i] = p->port[0];
    }
    PQconninfoFree(opts);
    return ok;
}

/* False, with a message of ours, when libpq cannot parse dsn: its own
 * message quotes the part it could not read, which may be the password
 * (a "%" not followed by two hex digits), so it is neither logged nor
 * passed on. */
static bool
dsn_parses(const char *dsn, wf_error *err)
{
    char *msg = NULL;
    PQconninfoOption *opts = dsn != NULL ? PQconninfoParse(dsn, &msg) : NULL;
    if (opts != NULL) {
        PQconninfoFree(opts);
        return true;
    }
    if (msg != NULL) {
        volatile char *v = msg;
        for (size_t i = 0; msg[i] != '\0'; i++)
            v[i] = '\0';
        PQfreemem(msg);
    }
    if (dsn != NULL && msg == NULL)
        return true; /* out of memory: the caller finds out */
    wf_error_set(err, WF_E_INVALID_ARGUMENT,
                 "DATABASE_URL is not a connection URI or keyword/value string libpq can read "
                 "(libpq's message is not shown: it may quote the password; in a URI, a \"%%\" "
                 "of the user name or password must start a %%XX escape)");
    return false;
}

wf_store_pg_pool *
wf_store_pg__pool_new(const wf_store_pg_config *cfg, wf_error *err)
{
    wf_store_pg_pool *p = calloc(1, sizeof *p);
    if (p == NULL || cfg->dsn == NULL)
        goto fail;
    p->size = cfg->pool_size > 0 ? cfg->pool_size : 8;
    p->acquire_timeout_ms = cfg->acquire_timeout_ms > 0 ? cfg->acquire_timeout_ms : 1000;
    p->backoff_ms = BACKOFF_MIN_MS;
    p->conns = calloc((size_t)p->size, sizeof *p->conns);
    for (int i = 0; p->conns != NULL && i < p->size; i++) {
        p->conns[i].counts = &p->counts;
    }
    if (!dsn_parses(cfg->dsn, err)) {
        free(p->conns);
        free(p);
        return NULL;
    }
    p->dsn = strdup(cfg->dsn);
    if (p->conns == NULL || p->dsn == NULL || !parse_hosts(p))
        goto fail;
    /* The setting, else the URL's own connect_timeout, else 2 s. */
    int cts = cfg->connect_timeout_s > 0     ? cfg->connect_timeout_s
              : p->dsn_connect_timeout_s > 0 ? p->dsn_connect_timeout_s
                                             : 2;
    p->connect_timeout_ms = cts * 1000;
    snprintf(p->connect_timeout, sizeof p->connect_timeout, "%d", cts);
    const char *k[KW_N] = {"connect_timeout",
                           "application_name",
                           "keepalives",
                           "keepalives_idle",
                           "keepalives_interval",
                           "keepalives_count",
                           "dbname",
                           "host",
                           "hostaddr",
                           "port",
                           "options"};
    const char *v[KW_N] = {p->connect_timeout, "workflowd", "1", "10", "5", "3", p->dsn};
    v[KW_OPTIONS] = p->options;
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
        free(p->hosts_buf);
        free(p->options);
        free(p);
    }
    wf_error_set(err, WF_E_INTERNAL, "could not create the database pool");
    return NULL;
}

static void flight_reset(wf_store_pg_conn *c);
static void clear_results(wf_store_pg_conn *c);

static void
drop(wf_store_pg_conn *c)
{
    if (c->pg != NULL)
        PQfinish(c->pg);
    c->pg = NULL;
    memset(c->prepared, 0, sizeof c->prepared);
    c->broken = false;
    c->timeout_known = false;
    flight_reset(c);
    clear_results(c);
}

void
wf_store_pg__pool_free(wf_store_pg_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->size; i++) {
        drop(&p->conns[i]);
        wf_store_pg__conn_clear(&p->conns[i]);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->conns);
    free(p->dsn);
    free(p->hosts_buf);
    free(p->options);
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

/* One connect attempt with vals (to host i of a multi-host DSN, or as the
 * DSN says), never blocking past cutoff. NULL on failure, with what went
 * wrong in why. */
static PGconn *
connect_once(const wf_store_pg_pool *p, const char *const *vals, int64_t cutoff, char *why,
             size_t why_cap)
{
    PGconn *pg = PQconnectStartParams(p->keys, vals, 1);
    if (pg == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    const char *failure = NULL;
    while (PQstatus(pg) != CONNECTION_BAD && st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED)
            break;
        int r = wait_sock(pg, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, cutoff);
        if (r <= 0) {
            failure = r == 0 ? "timed out" : "poll failed";
            break;
        }
        st = PQconnectPoll(pg);
    }
    if (st != PGRES_POLLING_OK || PQstatus(pg) != CONNECTION_OK || PQsetnonblocking(pg, 1) != 0) {
        snprintf(why, why_cap, "%s", failure != NULL ? failure : PQerrorMessage(pg));
        PQfinish(pg);
        return NULL;
    }
    PQsetNoticeProcessor(pg, notice_to_log, NULL);
    return pg;
}

/* Connects without ever blocking past the deadline, each host of the DSN
 * (or the DSN as a whole) for at most the connect timeout; the host that
 * connected last first. quiet: do not log a failure (the caller logs once
 * per outage). */
static PGconn *
connect_bounded(wf_store_pg_pool *p, int64_t deadline_ms, bool quiet, char *why, size_t why_cap,
                wf_error *err)
{
    const char *vals[KW_N + 1];
    memcpy(vals, p->vals, sizeof vals);
    why[0] = '\0';
    int n = p->n_hosts > 0 ? p->n_hosts : 1;
    int first = p->n_hosts > 0 ? __atomic_load_n(&p->preferred, __ATOMIC_RELAXED) : 0;
    PGconn *pg = NULL;
    for (int k = 0; k < n && pg == NULL; k++) {
        int64_t now = wf_mono_ms();
        if (k > 0 && deadline_ms != 0 && now >= deadline_ms)
            break;
        int64_t cutoff = now + p->connect_timeout_ms;
        if (deadline_ms != 0 && deadline_ms < cutoff)
            cutoff = deadline_ms;
        int i = (first + k) % n;
        if (p->n_hosts > 0) {
            vals[KW_HOST] = p->host[i];
            vals[KW_HOSTADDR] = p->hostaddr[i];
            vals[KW_PORT] = p->port[i];
        }
        pg = connect_once(p, vals, cutoff, why, why_cap);
        if (pg != NULL && p->n_hosts > 0)
            __atomic_store_n(&p->preferred, i, __ATOMIC_RELAXED);
        else if (pg == NULL && p->n_hosts > 0)
            WF_LOG(WF_LOG_DEBUG, "db_connect_failed", "host=%d/%d detail=%s", i + 1, n, why);
    }
    if (pg == NULL) {
        if (!quiet)
            WF_LOG(WF_LOG_WARN, "db_connect_failed", "detail=%s", why);
        wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not connect to the database");
    }
    return pg;
}

/* libpq's message on one line: each run of line breaks, tabs and spaces
 * becomes one space, and none is left at the end. */
static void
one_line(char *s)
{
    char *out = s;
    for (const char *c = s; *c; c++) {
        bool blank = *c == '\n' || *c == '\r' || *c == '\t' || *c == ' ';
        if (!blank)
            *out++ = *c;
        else if (out > s && out[-1] != ' ')
            *out++ = ' ';
    }
    while (out > s && out[-1] == ' ')
        out--;
    *out = '\0';
}

PGconn *
wf_store_pg__pool_connect(wf_store_pg_pool *p, int64_t deadline_ms, bool quiet, wf_error *err)
{
    char why[512];
    PGconn *pg = connect_bounded(p, deadline_ms, quiet, why, sizeof why, err);
    if (pg == NULL && err != NULL) {
        one_line(why);
        wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not connect to the database: %s", why);
    }
    return pg;
}

/* A connection whose socket is readable while idle has been told
 * something by the server, usually that it is going away. */
static bool
stale(wf_store_pg_conn *c)
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
give_back(wf_store_pg_pool *p, wf_store_pg_conn *c)
{
    pthread_mutex_lock(&p->mu);
    c->busy = false;
    p->in_use--;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

wf_code
wf_store_pg__pool_acquire(wf_store_pg_pool *p, int64_t deadline_ms, wf_store_pg_conn **out,
                          wf_error *err)
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
    wf_store_pg_conn *c = NULL;
    p->waiting++;
    for (;;) {
        /* Prefer a slot that already holds a connection. */
        for (int i = 0; i < p->size; i++) {
            wf_store_pg_conn *s = &p->conns[i];
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
        char why[512];
        c->pg = connect_bounded(p, deadline_ms, false, why, sizeof why, err);
        c->in_tx = false;
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
wf_store_pg__pool_release(wf_store_pg_pool *p, wf_store_pg_conn *c)
{
    if (c == NULL)
        return;
    if (c->n_items > 0 || c->send_failed)
        c->broken = true; /* a flight was left uncollected */
    flight_reset(c);
    clear_results(c);
    if (c->pg != NULL && (c->broken || PQstatus(c->pg) != CONNECTION_OK ||
                          PQtransactionStatus(c->pg) != PQTRANS_IDLE))
        drop(c);
    give_back(p, c);
}

void
wf_store_pg__pool_stats(wf_store_pg_pool *p, wf_store_stats *out)
{
    pthread_mutex_lock(&p->mu);
    out->pool_size = p->size;
    out->in_use = p->in_use;
    out->waiting = p->waiting;
    pthread_mutex_unlock(&p->mu);
    out->flights = __atomic_load_n(&p->counts.flights, __ATOMIC_RELAXED);
    out->statements = __atomic_load_n(&p->counts.statements, __ATOMIC_RELAXED);
    out->transactions = __atomic_load_n(&p->counts.transactions, __ATOMIC_RELAXED);
}

/* ---- flights ----------------------------------------------------------------- */

/* What a flight holds, in the order the server answers. */
enum { ITEM_PREPARE, ITEM_EXEC, ITEM_SYNC };

struct wf_store_pg_item {
    short kind;
    short id; /* statement (PREPARE, EXEC) */
    int slot; /* EXEC: its slot; PREPARE: the slot of the EXEC it serves */
};

static bool
is_prepared(const wf_store_pg_conn *c, int id)
{
    return (c->prepared[id / 64] >> (id % 64)) & 1;
}

static void
set_prepared(wf_store_pg_conn *c, int id, bool on)
{
    uint64_t bit = (uint64_t)1 << (id % 64);
    if (on)
        c->prepared[id / 64] |= bit;
    else
        c->prepared[id / 64] &= ~bit;
}

static void
clear_results(wf_store_pg_conn *c)
{
    for (int i = 0; i < c->n_res; i++)
        PQclear(c->res[i]);
    c->n_res = 0;
}

/* Forgets the flight (after collecting it, or when the connection goes). */
static void
flight_reset(wf_store_pg_conn *c)
{
    c->n_items = 0;
    c->in_flight = false;
    c->send_failed = false;
    c->expired = false;
}

static bool
push_item(wf_store_pg_conn *c, short kind, short id, int slot)
{
    if (c->n_items == c->cap_items) {
        int cap = c->cap_items > 0 ? c->cap_items * 2 : 16;
        struct wf_store_pg_item *items = realloc(c->items, (size_t)cap * sizeof *items);
        if (items == NULL)
            return false;
        c->items = items;
        c->cap_items = cap;
    }
    c->items[c->n_items++] = (struct wf_store_pg_item){kind, id, slot};
    return true;
}

bool
wf_store_pg__idle(const wf_store_pg_conn *c)
{
    return !c->in_flight;
}

int
wf_store_pg__send(wf_store_pg_conn *c, const wf_store_pg_stmt *stmts, int id, int nparams,
                  const char *const *values, const int *lengths, const int *formats,
                  int64_t deadline_ms)
{
    if (!c->in_flight) {
        /* A new flight: the last one's results go. */
        clear_results(c);
        c->in_flight = true;
        if (deadline_ms != 0 && wf_mono_ms() >= deadline_ms)
            c->expired = true;
    }
    int slot = c->n_res++;
    if (c->n_res > c->cap_res) {
        int cap = c->cap_res > 0 ? c->cap_res * 2 : 16;
        PGresult **res = realloc(c->res, (size_t)cap * sizeof *res);
        if (res == NULL) {
            c->n_res--;
            c->send_failed = true;
            return -1;
        }
        c->res = res;
        c->cap_res = cap;
    }
    c->res[slot] = NULL;
    if (c->expired || c->send_failed || c->pg == NULL || c->broken)
        return slot; /* wf_store_pg__flush reports it */
    if (c->n_items == 0 && PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF &&
        !PQenterPipelineMode(c->pg)) {
        c->send_failed = true;
        return slot;
    }
    const wf_store_pg_stmt *st = &stmts[id];
    if (!is_prepared(c, id)) {
        /* Counted as prepared from here, so that a second use in this
         * flight does not prepare it again; undone if it fails. */
        if (!push_item(c, ITEM_PREPARE, (short)id, slot) ||
            !PQsendPrepare(c->pg, st->name, st->sql, 0, NULL)) {
            c->send_failed = true;
            return slot;
        }
        set_prepared(c, id, true);
    }
    if (!push_item(c, ITEM_EXEC, (short)id, slot) ||
        !PQsendQueryPrepared(c->pg, st->name, nparams, values, lengths, formats, 0))
        c->send_failed = true;
    return slot;
}

void
wf_store_pg__send_sync(wf_store_pg_conn *c)
{
    if (c->n_items == 0 || c->send_failed || c->expired)
        return;
    if (!push_item(c, ITEM_SYNC, 0, -1) || !PQpipelineSync(c->pg))
        c->send_failed = true;
}

void
wf_store_pg__conn_clear(wf_store_pg_conn *c)
{
    flight_reset(c);
    clear_results(c);
    free(c->items);
    free(c->res);
    c->items = NULL;
    c->res = NULL;
    c->cap_items = c->cap_res = 0;
}

PGresult *
wf_store_pg__take(wf_store_pg_conn *c, int slot)
{
    if (slot < 0 || slot >= c->n_res)
        return NULL;
    PGresult *r = c->res[slot];
    c->res[slot] = NULL;
    return r;
}

/* Pushes out what is buffered, reading meanwhile so that a server busy
 * answering never waits on us: 1 done, 0 timed out, -1 failed. */
static int
send_all(PGconn *pg, int64_t cutoff)
{
    for (;;) {
        int f = PQflush(pg);
        if (f == 0)
            return 1;
        if (f < 0)
            return -1;
        int r = wait_sock(pg, POLLIN | POLLOUT, cutoff);
        if (r <= 0)
            return r;
        if (!PQconsumeInput(pg))
            return -1;
    }
}

/* Waits until PQgetResult would not block: 1 ready, 0 timed out, -1
 * failed (PQgetResult then reports the failure). */
static int
await(PGconn *pg, int64_t cutoff)
{
    while (PQisBusy(pg)) {
        int r = wait_sock(pg, POLLIN, cutoff);
        if (r <= 0)
            return r;
        if (!PQconsumeInput(pg))
            return 1;
    }
    return 1;
}

static bool
ok_status(const PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
}

/* Collects the flight's results in order. Returns WF_OK or the first
 * failure; *failed as for wf_store_pg__flush. */
static wf_code
collect(wf_store_pg_conn *c, const wf_store_pg_stmt *stmts, int64_t cutoff, int *failed,
        wf_error *err)
{
    PGconn *pg = c->pg;
    wf_code rc = WF_OK;
    const char *waiting = c->n_items > 0 ? stmts[c->items[0].id].name : "sync";
    int r = send_all(pg, cutoff);
    for (int i = 0; r > 0 && i < c->n_items; i++) {
        const struct wf_store_pg_item *it = &c->items[i];
        const wf_store_pg_stmt *st = &stmts[it->id];
        waiting = it->kind == ITEM_SYNC ? "sync" : st->name;
        if ((r = await(pg, cutoff)) <= 0)
            break;
        PGresult *res = PQgetResult(pg);
        if (it->kind == ITEM_SYNC) {
            bool synced = res != NULL && PQresultStatus(res) == PGRES_PIPELINE_SYNC;
            if (!synced && rc == WF_OK) {
                bool broken = false;
                rc =
                    wf_store_pg__map_error(pg, res, "sync", "the database", c->quiet, &broken, err);
                *failed = -1;
            }
            PQclear(res);
            if (!synced) {
                c->broken = true; /* out of step with the server */
                r = -1;
            }
            continue;
        }
        /* One statement: its result, then NULL. */
        if (res == NULL || PQstatus(pg) != CONNECTION_OK) {
            if (rc == WF_OK) {
                bool broken = false;
                rc = wf_store_pg__map_error(pg, res, st->name, st->what, c->quiet, &broken, err);
                *failed = -1;
            }
            PQclear(res);
            c->broken = true;
            r = -1;
            break;
        }
        bool good = ok_status(res);
        if (!good && PQresultStatus(res) != PGRES_PIPELINE_ABORTED && rc == WF_OK) {
            bool broken = false;
            rc = wf_store_pg__map_error(pg, res, st->name, st->what, c->quiet, &broken, err);
            if (broken)
                c->broken = true;
            *failed = it->slot;
        }
        if (it->kind == ITEM_PREPARE) {
            if (!good)
                set_prepared(c, it->id, false);
            PQclear(res);
        } else if (good) {
            c->res[it->slot] = res;
        } else {
            PQclear(res);
        }
        if ((r = await(pg, cutoff)) <= 0)
            break;
        PGresult *extra;
        while ((extra = PQgetResult(pg)) != NULL) {
            /* Not expected for one statement: the connection is out of
             * step with the server. */
            PQclear(extra);
            c->broken = true;
        }
        if (c->broken) {
            if (rc == WF_OK) {
                rc = wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not reach the database");
                *failed = -1;
            }
            r = -1;
        }
    }
    if (r == 0) {
        /* The server did not answer in time: drop the connection rather
         * than wait (its transaction aborts when the socket closes). */
        c->broken = true;
        WF_LOG(c->quiet ? WF_LOG_DEBUG : WF_LOG_WARN, "db_timeout", "statement=%s", waiting);
        *failed = -1;
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                            "deadline exceeded while waiting for the store");
    }
    if (r < 0 && rc == WF_OK) {
        bool broken = false;
        rc = wf_store_pg__map_error(pg, NULL, waiting, "the database", c->quiet, &broken, err);
        *failed = -1;
    }
    if (r < 0)
        c->broken = true;
    else if (!PQexitPipelineMode(pg))
        c->broken = true; /* something is left over: not reusable */
    return rc;
}

/* Counts the flight being sent: its statements, and the transactions it
 * ends, following BEGIN, COMMIT and ROLLBACK in the order they were
 * queued (c->in_tx carries an open block from one flight to the next). */
static void
count_flight(wf_store_pg_conn *c, const wf_store_pg_stmt *stmts)
{
    int64_t k = 0, ended = 0;
    bool implicit = false;
    for (int i = 0; i < c->n_items; i++) {
        const struct wf_store_pg_item *it = &c->items[i];
        if (it->kind == ITEM_SYNC) {
            ended += implicit;
            implicit = false;
        } else if (it->kind == ITEM_EXEC) {
            const char *sql = stmts[it->id].sql;
            k++;
            if (strcmp(sql, "BEGIN") == 0) {
                c->in_tx = true;
            } else if (strcmp(sql, "COMMIT") == 0 || strcmp(sql, "ROLLBACK") == 0) {
                ended += sql[0] == 'C';
                c->in_tx = false;
            } else if (!c->in_tx && strncmp(sql, "SELECT set_config(", 18) != 0) {
                /* A session setting alone (the statement_timeout a
                 * borrower owes, sent only when it changes) is no
                 * transaction of the call's. */
                implicit = true;
            }
        }
    }
    if (c->counts != NULL) {
        __atomic_add_fetch(&c->counts->flights, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&c->counts->statements, k, __ATOMIC_RELAXED);
        __atomic_add_fetch(&c->counts->transactions, ended, __ATOMIC_RELAXED);
    }
}

wf_code
wf_store_pg__flush(wf_store_pg_conn *c, const wf_store_pg_stmt *stmts, int64_t deadline_ms,
                   int *failed, wf_error *err)
{
    int dummy;
    if (failed == NULL)
        failed = &dummy;
    *failed = -1;
    wf_code rc;
    if (!c->in_flight) {
        rc = WF_OK; /* nothing was queued */
    } else if (c->expired && c->n_items == 0) {
        rc = wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                          "deadline exceeded while waiting for the store");
    } else if (c->pg == NULL || c->broken) {
        rc = wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not reach the database");
    } else if (c->n_items == 0 && !c->send_failed) {
        rc = WF_OK;
    } else {
        if (!c->send_failed && (!push_item(c, ITEM_SYNC, 0, -1) || !PQpipelineSync(c->pg)))
            c->send_failed = true;
        if (c->send_failed) {
            /* libpq would not queue (out of memory, or the connection
             * went): what was sent cannot be matched up any more. */
            bool broken = false;
            rc =
                wf_store_pg__map_error(c->pg, NULL, "send", "the database", c->quiet, &broken, err);
            c->broken = true;
        } else {
            int64_t cutoff = deadline_ms != 0 ? deadline_ms + GRACE_MS : 0;
            count_flight(c, stmts);
            rc = collect(c, stmts, cutoff, failed, err);
        }
    }
    flight_reset(c);
    if (rc != WF_OK) {
        /* Results of a failed flight are not for reading. */
        clear_results(c);
    }
    return rc;
}
