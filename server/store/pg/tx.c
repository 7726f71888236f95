/*
 * pg/tx.c: the Postgres store's statement parameters, flights
 * (running statements, pg/pool.c), borrowed connections and the unit of
 * work (pg/store.c explains the design).
 */
#include "pg/pg_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wf_log.h"
#include "wf_time.h"

/* ---- parameters ---------------------------------------------------------- */

void
wf_store_pg__p_str(params *p, const char *s)
{
    p->v[p->n] = s;
    p->len[p->n] = 0;
    p->fmt[p->n] = 0;
    p->n++;
}

void
wf_store_pg__p_i64(params *p, int64_t x)
{
    char *s = wf_arena_printf(p->a, "%" PRId64, x);
    p->oom |= s == NULL;
    wf_store_pg__p_str(p, s);
}

void
wf_store_pg__p_bool(params *p, bool b)
{
    wf_store_pg__p_str(p, b ? "t" : "f");
}

static void
p_bytes(params *p, const void *b, size_t n)
{
    wf_store_pg__p_str(p, b);
    p->len[p->n - 1] = (int)n;
    p->fmt[p->n - 1] = b != NULL ? 1 : 0;
}

/* Appends every field of row but skip (-1: none), in descriptor order;
 * tenant replaces the tenant field. */
static void
p_row(params *p, const wf_row_desc *d, const void *row, const char *tenant, int skip)
{
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        const char *at = (const char *)row + f->off;
        if ((int)i == skip)
            continue;
        switch (f->type) {
        case WF_F_STR:
            wf_store_pg__p_str(p, f->off == d->tenant_off ? tenant : *(char *const *)at);
            break;
        case WF_F_BYTES:
            p_bytes(p, *(void *const *)at, *(const size_t *)((const char *)row + f->len_off));
            break;
        case WF_F_I64:
            wf_store_pg__p_i64(p, *(const int64_t *)at);
            break;
        case WF_F_I32:
            wf_store_pg__p_i64(p, *(const int32_t *)at);
            break;
        case WF_F_BOOL:
            wf_store_pg__p_bool(p, *(const bool *)at);
            break;
        case WF_F_F64: {
            char *s = wf_arena_printf(p->a, "%.17g", *(const double *)at);
            p->oom |= s == NULL;
            wf_store_pg__p_str(p, s);
            break;
        }
        }
    }
}

void
wf_store_pg__p_row(params *p, const wf_row_desc *d, const void *row, const char *tenant, int skip)
{
    p_row(p, d, row, tenant, skip);
}

/* The array literal of strs[0..n), every element quoted, a NULL element
 * written NULL; NULL when out of memory. */
static char *
text_array(wf_arena *a, const char *const *strs, size_t n)
{
    size_t cap = 3;
    for (size_t i = 0; i < n; i++)
        cap += strs[i] != NULL ? 2 * strlen(strs[i]) + 3 : 5;
    char *s = wf_arena_alloc(a, cap), *o = s;
    if (s == NULL)
        return NULL;
    *o++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            *o++ = ',';
        if (strs[i] == NULL) {
            memcpy(o, "NULL", 4);
            o += 4;
            continue;
        }
        *o++ = '"';
        for (const char *c = strs[i]; *c != '\0'; c++) {
            if (*c == '"' || *c == '\\')
                *o++ = '\\';
            *o++ = *c;
        }
        *o++ = '"';
    }
    *o++ = '}';
    *o = '\0';
    return s;
}

/* A Postgres text[] literal with every element quoted; an empty list is
 * passed as NULL, which the statements read as "no filter" (or, for the
 * inbox groups, "no group matches"). */
void
wf_store_pg__p_text_array(params *p, const char *const *strs, size_t n)
{
    if (n == 0) {
        wf_store_pg__p_str(p, NULL);
        return;
    }
    char *s = text_array(p->a, strs, n);
    p->oom |= s == NULL;
    wf_store_pg__p_str(p, s);
}

/* Appends one array per field of d but skip (-1: none), over rows[0..n)
 * (stride d->size), in descriptor order; tenant replaces the tenant field.
 * A statement inserts them all at once with unnest($1::text[], ...).
 * False for a field type arrays do not carry here (bytes). */
static bool
p_columns(params *p, const wf_row_desc *d, const void *rows, size_t n, const char *tenant, int skip)
{
    const char **vals = wf_arena_calloc(p->a, n > 0 ? n : 1, sizeof *vals);
    if (vals == NULL) {
        p->oom = true;
        return true;
    }
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        if ((int)i == skip)
            continue;
        for (size_t r = 0; r < n; r++) {
            const char *at = (const char *)rows + r * d->size + f->off;
            switch (f->type) {
            case WF_F_STR:
                vals[r] = f->off == d->tenant_off ? tenant : *(char *const *)at;
                break;
            case WF_F_I64:
                vals[r] = wf_arena_printf(p->a, "%" PRId64, *(const int64_t *)at);
                break;
            case WF_F_I32:
                vals[r] = wf_arena_printf(p->a, "%" PRId32, *(const int32_t *)at);
                break;
            case WF_F_BOOL:
                vals[r] = *(const bool *)at ? "t" : "f";
                break;
            case WF_F_F64:
                vals[r] = wf_arena_printf(p->a, "%.17g", *(const double *)at);
                break;
            case WF_F_BYTES:
                return false;
            }
            p->oom |= vals[r] == NULL && f->type != WF_F_STR;
        }
        char *s = p->oom ? NULL : text_array(p->a, vals, n);
        p->oom |= s == NULL;
        wf_store_pg__p_str(p, s);
    }
    return true;
}

void
wf_store_pg__p_int_array(params *p, const int *v, size_t n)
{
    if (n == 0) {
        wf_store_pg__p_str(p, NULL);
        return;
    }
    char *s = wf_arena_alloc(p->a, n * 12 + 3), *o = s;
    if (s != NULL) {
        *o++ = '{';
        for (size_t i = 0; i < n; i++)
            o += sprintf(o, "%s%d", i > 0 ? "," : "", v[i]);
        *o++ = '}';
        *o = '\0';
    }
    p->oom |= s == NULL;
    wf_store_pg__p_str(p, s);
}

/* The statement_timeout for what is left of a deadline (0: none), rounded
 * up to a step of at most 1/16 of it and 128 ms. Calls with like deadlines
 * then ask for the same value, which the session keeps, so it is sent only
 * when it changes; and the server still gives up before pg/pool.c's grace
 * (250 ms past the deadline) runs out. */
int64_t
wf_store_pg__timeout_for(int64_t deadline_ms)
{
    if (deadline_ms == 0)
        return 0;
    int64_t left = deadline_ms - wf_mono_ms();
    if (left < 1)
        left = 1;
    int64_t step = 1;
    while (step < 128 && step * 2 <= left / 16)
        step *= 2;
    return (left + step - 1) / step * step;
}

/* ---- running statements ---------------------------------------------------- */

/* Opens a flight on c with what its borrower owes: the statement_timeout
 * when the session holds another value (in a sync segment of its own, so
 * it holds whatever becomes of the transaction), then the deferred BEGIN
 * of a unit of work. Both ride with the first statement: no round trip
 * of their own. */
static void
flight_open(wf_store_pg_conn *c, int64_t deadline)
{
    if (c->owe_timeout) {
        c->owe_timeout = false;
        if (!c->timeout_known || c->timeout_ms != c->timeout_want) {
            char v[24];
            snprintf(v, sizeof v, "%" PRId64, c->timeout_want);
            const char *vals[1] = {v};
            c->timeout_known = false;
            c->timeout_in_flight = true;
            wf_store_pg__send(c, wf_store_pg_statements, S_TIMEOUT_SESSION, 1, vals, NULL, NULL,
                              deadline);
            wf_store_pg__send_sync(c);
        }
    }
    if (c->owe_begin) {
        c->owe_begin = false;
        wf_store_pg__send(c, wf_store_pg_statements, S_BEGIN, 0, NULL, NULL, NULL, deadline);
    }
}

/* Queues statement id with p on c's flight; returns its slot. */
static int
push(wf_store_pg_conn *c, int id, const params *p, int64_t deadline)
{
    if (wf_store_pg__idle(c))
        flight_open(c, deadline);
    return wf_store_pg__send(c, wf_store_pg_statements, id, p != NULL ? p->n : 0,
                             p != NULL ? p->v : NULL, p != NULL ? p->len : NULL,
                             p != NULL ? p->fmt : NULL, deadline);
}

static wf_code read_rows(PGresult *res, const wf_row_desc *d, wf_arena *a, void *out, size_t *n,
                         wf_error *err);

/* Sends c's flight and collects it (see wf_store_pg__flush). A request lookup
 * that rode on it and found a record fails the flight's caller. */
static wf_code
flush(wf_store_pg_conn *c, int64_t deadline, int *failed, wf_error *err)
{
    struct wf_store_pg_lookup *l = c->lookup;
    c->lookup = NULL;
    wf_code rc = wf_store_pg__flush(c, wf_store_pg_statements, deadline, failed, err);
    if (c->timeout_in_flight && rc == WF_OK) {
        c->timeout_known = true;
        c->timeout_ms = c->timeout_want;
    }
    c->timeout_in_flight = false;
    if (l != NULL && rc == WF_OK) {
        PGresult *res = wf_store_pg__take(c, l->slot);
        wf_idempotency_row *rows = NULL;
        size_t n = 0;
        rc = read_rows(res, &wf_store__idempotency_desc, l->arena, &rows, &n, err);
        PQclear(res);
        if (rc == WF_OK && n > 0) {
            *l->out = rows[0];
            *l->found = true;
            rc = wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                              l->request_id);
        }
    }
    return rc;
}

/* Runs one statement: a flight of its own (with what the borrower owes). */
wf_code
wf_store_pg__run(wf_store_pg_conn *c, int id, const params *p, int64_t deadline, PGresult **res,
                 wf_error *err)
{
    *res = NULL;
    if (p != NULL && p->oom)
        return wf_error_nomem(err);
    int slot = push(c, id, p, deadline);
    wf_code rc = flush(c, deadline, NULL, err);
    if (rc == WF_OK)
        *res = wf_store_pg__take(c, slot);
    return rc;
}

/* Runs a statement whose result is not needed; *affected gets the row
 * count when non-NULL. */
wf_code
wf_store_pg__run_cmd(wf_store_pg_conn *c, int id, const params *p, int64_t deadline, long *affected,
                     wf_error *err)
{
    PGresult *res;
    wf_code rc = wf_store_pg__run(c, id, p, deadline, &res, err);
    if (rc == WF_OK && affected != NULL)
        *affected = atol(PQcmdTuples(res));
    PQclear(res);
    return rc;
}

/* Converts every row of res into an arena array of d's row type. */
static wf_code
read_rows(PGresult *res, const wf_row_desc *d, wf_arena *a, void *out, size_t *n, wf_error *err)
{
    if (PQnfields(res) != (int)d->n_fields) {
        WF_LOG(WF_LOG_ERROR, "db_shape", "%s: %d columns, descriptor has %zu", d->name,
               PQnfields(res), d->n_fields);
        return wf_error_set(err, WF_E_INTERNAL, "could not read %s", d->name);
    }
    size_t k = (size_t)PQntuples(res);
    char *rows = wf_arena_calloc(a, k > 0 ? k : 1, d->size);
    if (rows == NULL)
        return wf_error_nomem(err);
    for (size_t r = 0; r < k; r++) {
        char *row = rows + r * d->size;
        for (size_t i = 0; i < d->n_fields; i++) {
            const wf_field *f = &d->fields[i];
            if (PQgetisnull(res, (int)r, (int)i))
                continue; /* calloc'd: NULL / 0 / false */
            const char *v = PQgetvalue(res, (int)r, (int)i);
            char *at = row + f->off;
            switch (f->type) {
            case WF_F_STR: {
                char *s = wf_arena_strndup(a, v, (size_t)PQgetlength(res, (int)r, (int)i));
                if (s == NULL)
                    return wf_error_nomem(err);
                *(char **)at = s;
                break;
            }
            case WF_F_BYTES: {
                size_t len = 0;
                unsigned char *raw = PQunescapeBytea((const unsigned char *)v, &len);
                void *copy = raw != NULL ? wf_arena_alloc(a, len) : NULL;
                if (copy != NULL)
                    memcpy(copy, raw, len);
                PQfreemem(raw);
                if (copy == NULL)
                    return wf_error_nomem(err);
                *(void **)at = copy;
                *(size_t *)(row + f->len_off) = len;
                break;
            }
            case WF_F_I64:
                *(int64_t *)at = strtoll(v, NULL, 10);
                break;
            case WF_F_I32:
                *(int32_t *)at = (int32_t)strtol(v, NULL, 10);
                break;
            case WF_F_BOOL:
                *(bool *)at = v[0] == 't';
                break;
            case WF_F_F64:
                *(double *)at = strtod(v, NULL);
                break;
            }
        }
    }
    *(void **)out = rows;
    *n = k;
    return WF_OK;
}

wf_code
wf_store_pg__run_rows(wf_store_pg_conn *c, int id, const params *p, int64_t deadline,
                      const wf_row_desc *d, wf_arena *a, void *rows, size_t *n, wf_error *err)
{
    PGresult *res;
    wf_code rc = wf_store_pg__run(c, id, p, deadline, &res, err);
    if (rc == WF_OK)
        rc = read_rows(res, d, a, rows, n, err);
    PQclear(res);
    return rc;
}

wf_code
wf_store_pg__run_then_rows(wf_store_pg_conn *c, int first, const params *pf, PGresult **first_res,
                           int id, const params *p, int64_t deadline, const wf_row_desc *d,
                           wf_arena *a, void *rows, size_t *n, wf_error *err)
{
    *first_res = NULL;
    if ((pf != NULL && pf->oom) || (p != NULL && p->oom))
        return wf_error_nomem(err);
    int s1 = push(c, first, pf, deadline);
    int s2 = push(c, id, p, deadline);
    wf_code rc = flush(c, deadline, NULL, err);
    if (rc != WF_OK)
        return rc;
    *first_res = wf_store_pg__take(c, s1);
    PGresult *res = wf_store_pg__take(c, s2);
    rc = read_rows(res, d, a, rows, n, err);
    PQclear(res);
    return rc;
}

/* ---- borrowing connections ------------------------------------------------ */

/* Returns c to the pool, rolling back whatever it still has open. */
void
wf_store_pg__conn_put(pg_store *s, wf_store_pg_conn *c)
{
    if (c == NULL)
        return;
    c->owe_timeout = c->owe_begin = false;
    c->lookup = NULL;
    if (c->pg != NULL && !c->broken && !wf_store_pg__idle(c)) {
        /* Deferred writes never sent (a unit of work rolled back before
         * its commit): they go out with a ROLLBACK that undoes them,
         * rather than leaving a flight that would cost the connection. */
        push(c, S_ROLLBACK, NULL, wf_mono_ms() + 1000);
        if (flush(c, wf_mono_ms() + 1000, NULL, NULL) == WF_E_STORE_UNAVAILABLE)
            c->broken = true;
    }
    if (c->pg != NULL && !c->broken) {
        PGTransactionStatusType ts = PQtransactionStatus(c->pg);
        if ((ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) &&
            wf_store_pg__run_cmd(c, S_ROLLBACK, NULL, wf_mono_ms() + 1000, NULL, NULL) != WF_OK)
            c->broken = true;
    }
    wf_store_pg__pool_release(s->pool, c);
}

/* Borrows a connection for single statements, with the call's deadline as
 * its session statement_timeout (sent with the first statement, and only
 * when the session holds another value). */
wf_code
wf_store_pg__conn_get(pg_store *s, const wf_store_ctx *ctx, wf_store_pg_conn **out, wf_error *err)
{
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__pool_acquire(s->pool, ctx->deadline_ms, &c, err);
    if (rc != WF_OK)
        return rc;
    c->owe_timeout = true;
    c->timeout_want = wf_store_pg__timeout_for(ctx->deadline_ms);
    *out = c;
    return WF_OK;
}

/* Borrows a connection for a transaction. BEGIN (and the timeout) are
 * deferred to the transaction's first statement, in the same flight; a
 * transaction that runs none sends nothing. */
static wf_code
tx_open(pg_store *s, const wf_store_ctx *ctx, wf_store_pg_conn **out, wf_error *err)
{
    wf_code rc = wf_store_pg__conn_get(s, ctx, out, err);
    if (rc == WF_OK)
        (*out)->owe_begin = true;
    return rc;
}

/* ---- unit of work ------------------------------------------------------------ */

wf_code
wf_store_pg__begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **out, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    pg_tx *tx = calloc(1, sizeof *tx);
    if (tx == NULL)
        return wf_error_nomem(err);
    wf_code rc = tx_open(s, ctx, &tx->c, err);
    if (rc != WF_OK) {
        free(tx);
        return rc;
    }
    tx->base.st = st;
    tx->base.ctx = *ctx;
    *out = &tx->base;
    return WF_OK;
}

wf_code
wf_store_pg__commit(wf_tx *t, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    /* Still owing BEGIN: nothing ran, nothing to commit. */
    wf_code rc = tx->c->owe_begin
                     ? WF_OK
                     : wf_store_pg__run_cmd(tx->c, S_COMMIT, NULL, t->ctx.deadline_ms, NULL, err);
    for (int i = 0; rc == WF_OK && i < tx->n_seen; i++)
        wf_store_pg__defs_put((pg_store *)t->st, tx->seen[i]);
    wf_store_pg__conn_put((pg_store *)t->st, tx->c);
    if (rc == WF_OK)
        wf_store_pg__notes_of_tx(tx);
    free(tx);
    return rc;
}

void
wf_store_pg__defer_writes(wf_tx *t)
{
    ((pg_tx *)t)->defer = true;
}

void
wf_store_pg__rollback(wf_tx *t)
{
    pg_tx *tx = (pg_tx *)t;
    wf_store_pg__conn_put((pg_store *)t->st, tx->c);
    free(tx);
}

/* Two-parameter (tenant, x) statement parameters. */
params
wf_store_pg__p_tenant(const wf_store_ctx *ctx, const char *x)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_str(&p, ctx->tenant);
    wf_store_pg__p_str(&p, x);
    return p;
}

/* The aggregate's tables, in the order they are read. */
static const struct agg_part {
    int id;
    const wf_row_desc *d;
    size_t rows, n; /* offsets in wf_aggregate */
} agg_parts[] = {
    {S_AGG_INSTANCES, &wf_store__instance_desc, offsetof(wf_aggregate, instances),
     offsetof(wf_aggregate, n_instances)},
    {S_AGG_TASKS, &wf_store__task_desc, offsetof(wf_aggregate, tasks),
     offsetof(wf_aggregate, n_tasks)},
    {S_AGG_TOKENS, &wf_store__token_desc, offsetof(wf_aggregate, tokens),
     offsetof(wf_aggregate, n_tokens)},
    {S_AGG_WORK_ITEMS, &wf_store__work_item_desc, offsetof(wf_aggregate, work_items),
     offsetof(wf_aggregate, n_work_items)},
    {S_AGG_JOBS, &wf_store__job_desc, offsetof(wf_aggregate, jobs), offsetof(wf_aggregate, n_jobs)},
    {S_AGG_TIMERS, &wf_store__timer_desc, offsetof(wf_aggregate, timers),
     offsetof(wf_aggregate, n_timers)},
    {S_AGG_SUBS, &wf_store__subscription_desc, offsetof(wf_aggregate, subscriptions),
     offsetof(wf_aggregate, n_subscriptions)},
};
#define N_AGG_PARTS (sizeof agg_parts / sizeof agg_parts[0])

/* The lock of root and every table of its aggregate in one flight. The
 * server runs them in order, so the reads start once the lock is granted
 * and see the tree as the previous holder left it. *locked: root is a
 * root (else nothing was locked and *g is empty). */
static wf_code
lock_flight(pg_tx *tx, const char *root, bool *locked, wf_aggregate *g, wf_error *err)
{
    const wf_store_ctx *ctx = &tx->base.ctx;
    int64_t dl = ctx->deadline_ms;
    params p = wf_store_pg__p_tenant(ctx, root);
    int lock = push(tx->c, S_LOCK_ROOT, &p, dl);
    int slots[N_AGG_PARTS];
    for (size_t i = 0; i < N_AGG_PARTS; i++)
        slots[i] = push(tx->c, agg_parts[i].id, &p, dl);
    wf_code rc = flush(tx->c, dl, NULL, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = wf_store_pg__take(tx->c, lock);
    *locked = PQntuples(res) > 0;
    PQclear(res);
    memset(g, 0, sizeof *g);
    for (size_t i = 0; rc == WF_OK && i < N_AGG_PARTS; i++) {
        const struct agg_part *ap = &agg_parts[i];
        res = wf_store_pg__take(tx->c, slots[i]);
        rc = read_rows(res, ap->d, ctx->arena, (char *)g + ap->rows, (size_t *)((char *)g + ap->n),
                       err);
        PQclear(res);
    }
    return rc;
}

static bool
has_instance(const wf_aggregate *g, const char *id)
{
    for (size_t i = 0; i < g->n_instances; i++)
        if (strcmp(g->instances[i].id, id) == 0)
            return true;
    return false;
}

/* The root is taken to be root_hint, else instance_id itself (most calls
 * name a root), so that the lock and the aggregate, addressed by root, go
 * out in one flight. When instance_id is not in what came back (a child
 * without a hint, or unknown), its root is read by id and the flight runs
 * again: what the caller gets is the same either way. */
wf_code
wf_store_pg__lock_root(wf_tx *t, const char *instance_id, const char *root_hint, wf_aggregate *out,
                       wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    const char *root = root_hint != NULL ? root_hint : instance_id;
    bool locked;
    wf_aggregate g;
    wf_code rc = lock_flight(tx, root, &locked, &g, err);
    if (rc == WF_OK && !(locked && has_instance(&g, instance_id))) {
        params p = wf_store_pg__p_tenant(&t->ctx, instance_id);
        PGresult *res;
        rc = wf_store_pg__run(tx->c, S_ROOT_OF, &p, t->ctx.deadline_ms, &res, err);
        if (rc == WF_OK && PQntuples(res) == 1) {
            root = wf_arena_strdup(t->ctx.arena, PQgetvalue(res, 0, 0));
            rc = root != NULL ? lock_flight(tx, root, &locked, &g, err) : wf_error_nomem(err);
        } else {
            locked = false;
        }
        PQclear(res);
    }
    if (rc != WF_OK)
        return rc;
    if (!(locked && has_instance(&g, instance_id)))
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                            instance_id);
    *out = g;
    return WF_OK;
}

/* A write of wf_store_pg__apply whose outcome needs more than success: an instance
 * (exactly one row, else a lost race) or a signal (a duplicate id). */
typedef struct write_check {
    int slot;
    bool instance;
    const char *id;
} write_check;

/* Queues one statement per row (stride d->size) on tx's flight; checks,
 * when non-NULL, gets one entry per row. False when out of memory. */
static bool
queue_rows(pg_tx *tx, int id, const wf_row_desc *d, const void *rows, size_t n, write_check *checks,
           size_t *n_checks)
{
    const wf_store_ctx *ctx = &tx->base.ctx;
    for (size_t i = 0; i < n; i++) {
        params p = {.a = ctx->arena};
        const void *row = (const char *)rows + i * d->size;
        p_row(&p, d, row, ctx->tenant, -1);
        if (p.oom)
            return false;
        int slot = push(tx->c, id, &p, ctx->deadline_ms);
        if (checks != NULL)
            checks[(*n_checks)++] = (write_check){slot, d == &wf_store__instance_desc,
                                                  d == &wf_store__instance_desc
                                                      ? ((const wf_instance_row *)row)->id
                                                      : ((const wf_signal_row *)row)->signal_id};
    }
    return true;
}

/* Deletions are of the root locked (store.c checks there is one). */
static void
queue_dels(pg_tx *tx, int id, const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        params p = wf_store_pg__p_tenant(&tx->base.ctx, ids[i]);
        wf_store_pg__p_str(&p, tx->base.root);
        push(tx->c, id, &p, tx->base.ctx.deadline_ms);
    }
}

/* Queues one insert of every event of a unit of work on c's flight (in
 * their order, which their ids keep); false when out of memory. */
static bool
queue_events(wf_store_pg_conn *c, const wf_store_ctx *ctx, const wf_event_row *e, size_t n)
{
    if (n == 0)
        return true;
    params p = {.a = ctx->arena};
    if (!p_columns(&p, &wf_store__event_desc, e, n, ctx->tenant,
                   0 /* sequence: assigned later */) ||
        p.oom)
        return false;
    push(c, S_INSERT_EVENTS, &p, ctx->deadline_ms);
    return true;
}

/* What the commit of c's events owes the notifier (wf_store_pg__notes_of_tx). */
static void
note_events(pg_tx *tx, const wf_store_changes *c)
{
    tx->wrote_events |= c->n_events > 0;
    for (size_t i = 0; i < c->n_events; i++)
        wf_store_pg__tx_note_root(tx, c->events[i].root_id);
}

/* Every write of one mutation in one flight. The server stops at the first
 * failure (the transaction is then aborted); the outcome is judged in the
 * order the writes ran, as one statement at a time would have. */
wf_code
wf_store_pg__apply(wf_tx *t, const wf_store_changes *c, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    const wf_store_ctx *ctx = &t->ctx;
    size_t n_checks = 0;
    write_check *checks =
        wf_arena_calloc(ctx->arena, c->n_instances + c->n_signals + 1, sizeof *checks);
    if (checks == NULL)
        return wf_error_nomem(err);
    bool ok = true;
    int update = tx->defer ? S_UPDATE_INSTANCE_CHECKED : S_UPDATE_INSTANCE;
    for (size_t i = 0; ok && i < c->n_instances; i++) {
        const wf_instance_row *in = &c->instances[i];
        ok = queue_rows(tx, in->version == 0 ? S_INSERT_INSTANCE : update, &wf_store__instance_desc,
                        in, 1, checks, &n_checks);
    }
    ok =
        ok && queue_rows(tx, S_UPSERT_TASK, &wf_store__task_desc, c->tasks, c->n_tasks, NULL, NULL);
    ok = ok &&
         queue_rows(tx, S_UPSERT_TOKEN, &wf_store__token_desc, c->tokens, c->n_tokens, NULL, NULL);
    ok = ok && queue_rows(tx, S_UPSERT_WORK_ITEM, &wf_store__work_item_desc, c->work_items,
                          c->n_work_items, NULL, NULL);
    /* Job upserts answer whether the job became activatable. */
    int *job_slots = wf_arena_calloc(ctx->arena, c->n_jobs + 1, sizeof *job_slots);
    ok = ok && job_slots != NULL;
    for (size_t i = 0; ok && i < c->n_jobs; i++) {
        job_slots[i] = -1;
        params p = {.a = ctx->arena};
        p_row(&p, &wf_store__job_desc, &c->jobs[i], ctx->tenant, -1);
        ok = !p.oom;
        if (ok)
            job_slots[i] = push(tx->c, S_UPSERT_JOB, &p, ctx->deadline_ms);
    }
    ok = ok &&
         queue_rows(tx, S_UPSERT_TIMER, &wf_store__timer_desc, c->timers, c->n_timers, NULL, NULL);
    ok = ok && queue_rows(tx, S_UPSERT_SUB, &wf_store__subscription_desc, c->subscriptions,
                          c->n_subscriptions, NULL, NULL);
    ok = ok && queue_rows(tx, S_UPSERT_SIGNAL, &wf_store__signal_desc, c->signals, c->n_signals,
                          checks, &n_checks);
    if (ok) {
        queue_dels(tx, S_DEL_TOKEN, c->del_tokens, c->n_del_tokens);
        queue_dels(tx, S_DEL_JOB, c->del_jobs, c->n_del_jobs);
        queue_dels(tx, S_DEL_TIMER, c->del_timers, c->n_del_timers);
        queue_dels(tx, S_DEL_SUB, c->del_subscriptions, c->n_del_subscriptions);
    }
    ok = ok && queue_events(tx->c, ctx, c->events, c->n_events);
    /* Deferred: the next flight carries them, and its caller reports
     * their failure (the checked update and the unique indexes raise).
     * Nobody reads the upserts' answers then, so the commit owes a wake-up
     * for every job type written ACTIVATABLE (a spare one costs a recheck). */
    if (tx->defer && ok) {
        for (size_t i = 0; i < c->n_jobs; i++)
            if (c->jobs[i].state == WF_JOB_ACTIVATABLE)
                wf_store_pg__tx_note_type(tx, c->jobs[i].job_type);
        note_events(tx, c);
        return WF_OK;
    }
    /* Out of memory half-way: what was queued still has to be collected. */
    int failed = -1;
    wf_code rc = flush(tx->c, ctx->deadline_ms, &failed, err);
    if (rc == WF_OK && !ok)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n_checks; i++) {
        const write_check *w = &checks[i];
        if (rc != WF_OK) {
            if (w->slot != failed || rc != WF_E_CONFLICT)
                continue;
            return w->instance ? wf_error_set(err, WF_E_CONFLICT,
                                              "instance \"%s\" was changed concurrently", w->id)
                               : wf_error_set(err, WF_E_CONFLICT,
                                              "signal \"%s\" was already received", w->id);
        }
        if (!w->instance)
            continue;
        PGresult *res = wf_store_pg__take(tx->c, w->slot);
        long n = res != NULL ? atol(PQcmdTuples(res)) : 0;
        PQclear(res);
        if (n != 1)
            return wf_error_set(err, WF_E_CONFLICT, "instance \"%s\" was changed concurrently",
                                w->id);
    }
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < c->n_jobs; i++) {
        PGresult *res = wf_store_pg__take(tx->c, job_slots[i]);
        if (res != NULL && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't')
            wf_store_pg__tx_note_type(tx, c->jobs[i].job_type);
        PQclear(res);
    }
    note_events(tx, c);
    return WF_OK;
}

wf_code
wf_store_pg__idem_get(wf_tx *t, const char *method, const char *request_id, wf_idempotency_row *out,
                      bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, method);
    wf_store_pg__p_str(&p, request_id);
    wf_idempotency_row *rows;
    size_t n;
    wf_code rc = wf_store_pg__run_rows(tx->c, S_IDEM_GET, &p, t->ctx.deadline_ms,
                                       &wf_store__idempotency_desc, t->ctx.arena, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

/* Queued on the flight being built, after BEGIN: it goes out with the
 * body's first statements (flush reads it). */
wf_code
wf_store_pg__idem_prefetch(wf_tx *t, const char *method, const char *request_id,
                           wf_idempotency_row *out, bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, method);
    wf_store_pg__p_str(&p, request_id);
    if (p.oom)
        return wf_error_nomem(err);
    tx->lookup = (struct wf_store_pg_lookup){push(tx->c, S_IDEM_GET, &p, t->ctx.deadline_ms),
                                             request_id, t->ctx.arena, out, found};
    tx->c->lookup = &tx->lookup;
    return WF_OK;
}

wf_code
wf_store_pg__idem_put(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__idempotency_desc, in, t->ctx.tenant, -1);
    wf_code rc = wf_store_pg__run_cmd(tx->c, S_IDEM_PUT, &p, t->ctx.deadline_ms, NULL, err);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                            in->request_id);
    return rc;
}

wf_code
wf_store_pg__idem_amend(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__idempotency_desc, in, t->ctx.tenant, -1);
    return wf_store_pg__run_cmd(tx->c, S_IDEM_AMEND, &p, t->ctx.deadline_ms, NULL, err);
}

/* The record and COMMIT in one flight (a failed record skips COMMIT). */
wf_code
wf_store_pg__commit_recorded(wf_tx *t, const wf_idempotency_row *in, bool amend, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    int64_t dl = t->ctx.deadline_ms;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__idempotency_desc, in, t->ctx.tenant, -1);
    wf_code rc;
    if (p.oom) {
        rc = wf_error_nomem(err);
    } else {
        int put = push(tx->c, amend ? S_IDEM_AMEND : S_IDEM_PUT, &p, dl);
        push(tx->c, S_COMMIT, NULL, dl);
        int failed = -1;
        rc = flush(tx->c, dl, &failed, err);
        if (rc == WF_E_CONFLICT && failed == put)
            rc = wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                              in->request_id);
    }
    for (int i = 0; rc == WF_OK && i < tx->n_seen; i++)
        wf_store_pg__defs_put((pg_store *)t->st, tx->seen[i]);
    wf_store_pg__conn_put((pg_store *)t->st, tx->c);
    if (rc == WF_OK)
        wf_store_pg__notes_of_tx(tx);
    free(tx);
    return rc;
}

wf_code
wf_store_pg__put_definition(wf_tx *t, const wf_definition_row *in, int32_t *version, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__definition_desc, in, t->ctx.tenant, 2 /* version: assigned */);
    PGresult *res;
    wf_code rc = wf_store_pg__run(tx->c, S_PUT_DEFINITION, &p, t->ctx.deadline_ms, &res, err);
    /* No row: the key holds a version of another kind. The version and
     * the kind check read one snapshot, so a concurrent put of the other
     * kind either is seen here or takes the same version number (the
     * primary key makes one of the two CONFLICT). */
    bool kind_conflict = rc == WF_OK && PQntuples(res) == 0;
    if (rc == WF_OK && !kind_conflict)
        *version = (int32_t)atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    if (kind_conflict)
        return wf_error_set(err, WF_E_DEFINITION_KIND_CONFLICT,
                            "definition \"%s\" has versions of another kind", in->key);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_CONFLICT, "definition \"%s\" was deployed concurrently",
                            in->key);
    return rc;
}

wf_code
wf_store_pg__read_definition(wf_store_pg_conn *c, const wf_store_ctx *ctx, const char *key,
                             int32_t version, wf_definition_row *out, bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, key);
    wf_store_pg__p_i64(&p, version);
    wf_definition_row *rows;
    size_t n;
    wf_code rc = wf_store_pg__run_rows(c, S_GET_DEFINITION, &p, ctx->deadline_ms,
                                       &wf_store__definition_desc, ctx->arena, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

wf_code
wf_store_pg__tx_get_definition(wf_tx *t, const char *key, int32_t version, wf_definition_row *out,
                               bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    int got =
        version > 0 ? wf_store_pg__defs_get((pg_store *)t->st, &t->ctx, key, version, out) : 0;
    if (got != 0) {
        *found = got > 0;
        return got > 0 ? WF_OK : wf_error_nomem(err);
    }
    wf_code rc = wf_store_pg__read_definition(tx->c, &t->ctx, key, version, out, found, err);
    if (rc == WF_OK && *found && tx->n_seen < DEFS_SEEN) {
        wf_definition_row *keep = wf_arena_alloc(t->ctx.arena, sizeof *keep);
        if (keep != NULL) {
            *keep = *out;
            tx->seen[tx->n_seen++] = keep;
        }
    }
    return rc;
}

wf_code
wf_store_pg__consume_signal(wf_tx *t, const char *name, const char *instance_id,
                            const char *agg_type, const char *agg_id, const char *consumer,
                            const char *transition_id, int64_t now, wf_signal_row *out, bool *found,
                            wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, name);
    wf_store_pg__p_str(&p, instance_id);
    wf_store_pg__p_str(&p, agg_type);
    wf_store_pg__p_str(&p, agg_id);
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_str(&p, consumer);
    wf_store_pg__p_str(&p, transition_id);
    wf_signal_row *rows;
    size_t n;
    int id = agg_type == NULL && agg_id == NULL ? S_CONSUME_SIGNAL_INSTANCE
             : instance_id == NULL              ? S_CONSUME_SIGNAL_AGGREGATE
                                                : S_CONSUME_SIGNAL;
    wf_code rc = wf_store_pg__run_rows(tx->c, id, &p, t->ctx.deadline_ms, &wf_store__signal_desc,
                                       t->ctx.arena, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

wf_code
wf_store_pg__lock_correlation(wf_tx *t, const char *name, const char *agg_type, const char *agg_id,
                              bool *awaited, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params lk = wf_store_pg__p_tenant(&t->ctx, agg_type);
    wf_store_pg__p_str(&lk, agg_id);
    wf_code rc =
        wf_store_pg__run_cmd(tx->c, S_LOCK_CORRELATION, &lk, t->ctx.deadline_ms, NULL, err);
    if (rc != WF_OK || awaited == NULL)
        return rc;
    /* A statement of its own, so its snapshot is taken after the lock is
     * granted and sees what the previous holder committed. */
    params p = wf_store_pg__p_tenant(&t->ctx, name);
    wf_store_pg__p_str(&p, agg_type);
    wf_store_pg__p_str(&p, agg_id);
    PGresult *res;
    rc = wf_store_pg__run(tx->c, S_SUB_AWAITED, &p, t->ctx.deadline_ms, &res, err);
    if (rc == WF_OK)
        *awaited = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return rc;
}

wf_code
wf_store_pg__aggregate_live(wf_tx *t, const char *agg_type, const char *agg_id, bool *live,
                            wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, agg_type);
    wf_store_pg__p_str(&p, agg_id);
    PGresult *res;
    wf_code rc = wf_store_pg__run(tx->c, S_AGGREGATE_LIVE, &p, t->ctx.deadline_ms, &res, err);
    if (rc == WF_OK)
        *live = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return rc;
}
