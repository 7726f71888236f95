/*
 * mem/fleet.c: the live totals of one definition (wf_store_fleet_counts)
 * and its instances at one place or transition (wf_store_fleet_instances),
 * read under the store's lock as the Postgres store's statements read
 * them.
 */
#include "mem/mem_int.h"

#include <stdlib.h>

typedef struct fleet_q {
    const char *tenant, *key;
    int32_t version;
} fleet_q;

/* A growing list of counts by element id (malloc'd; ids borrowed from the
 * rows while the lock is held). */
typedef struct tally {
    wf_element_count *v;
    size_t n, cap;
} tally;

/* Whether instance in is of q's definition and has not ended. */
static bool
row_live(const fleet_q *q, const wf_instance_row *in)
{
    if (in == NULL || strcmp(in->definition_key, q->key) != 0)
        return false;
    if (q->version != 0 && in->definition_version != q->version)
        return false;
    return WF_FLEET_LIVE(in->status);
}

static bool
fleet_live(mem_store *m, const fleet_q *q, const char *instance_id)
{
    return row_live(q, wf_store_mem__mt_get(&m->insts, q->tenant, instance_id, NULL));
}

static bool
tally_add(tally *t, const char *id)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].element_id, id) == 0) {
            t->v[i].count++;
            return true;
        }
    if (t->n == t->cap) {
        size_t cap = t->cap != 0 ? 2 * t->cap : 16;
        wf_element_count *g = realloc(t->v, cap * sizeof *g);
        if (g == NULL)
            return false;
        t->v = g;
        t->cap = cap;
    }
    t->v[t->n++] = (wf_element_count){(char *)id, 1};
    return true;
}

static int
by_element(const void *a, const void *b)
{
    return strcmp(((const wf_element_count *)a)->element_id,
                  ((const wf_element_count *)b)->element_id);
}

/* Sorts t and copies it into the arena; frees t. */
static bool
tally_out(tally *t, wf_arena *a, wf_element_count **v, size_t *n)
{
    bool ok = true;
    if (t->n > 0)
        qsort(t->v, t->n, sizeof *t->v, by_element);
    *v = wf_arena_calloc(a, t->n + 1, sizeof **v);
    ok = *v != NULL;
    for (size_t i = 0; ok && i < t->n; i++) {
        (*v)[i].element_id = wf_arena_strdup(a, t->v[i].element_id);
        (*v)[i].count = t->v[i].count;
        ok = (*v)[i].element_id != NULL;
    }
    *n = ok ? t->n : 0;
    free(t->v);
    return ok;
}

static bool
fleet_instances(mem_store *m, const fleet_q *q, int64_t *live, tally *incidents)
{
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->insts, q->tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_instance_row *in = m->insts.v[i].row;
        if (!row_live(q, in))
            continue;
        (*live)++;
        if (in->status == WF_INSTANCE_FAILED &&
            !tally_add(incidents,
                       in->incident_transition_id != NULL ? in->incident_transition_id : ""))
            return false;
    }
    return true;
}

static bool
fleet_tokens(mem_store *m, const fleet_q *q, tally *t)
{
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->tokens, q->tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_token_row *k = m->tokens.v[i].row;
        if (fleet_live(m, q, k->instance_id) && !tally_add(t, k->place_id))
            return false;
    }
    return true;
}

static bool
fleet_enabled(mem_store *m, const fleet_q *q, tally *t)
{
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->work_items, q->tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_work_item_row *w = m->work_items.v[i].row;
        if (w->state == WF_WORK_ITEM_ENABLED && fleet_live(m, q, w->instance_id) &&
            !tally_add(t, w->transition_id))
            return false;
    }
    return true;
}

wf_code
wf_store_mem__fleet_counts(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                           int32_t version, wf_fleet_counts *out, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    fleet_q q = {ctx->tenant, definition_key, version};
    tally tok = {0}, en = {0}, inc = {0};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    bool ok = fleet_instances(m, &q, &out->live, &inc) && fleet_tokens(m, &q, &tok) &&
              fleet_enabled(m, &q, &en);
    ok = tally_out(&tok, ctx->arena, &out->tokens, &out->n_tokens) && ok;
    ok = tally_out(&en, ctx->arena, &out->enabled, &out->n_enabled) && ok;
    ok = tally_out(&inc, ctx->arena, &out->incidents, &out->n_incidents) && ok;
    pthread_mutex_unlock(&m->mu);
    return ok ? WF_OK : wf_error_nomem(err);
}

/* ---- the instances at one element ---------------------------------------------------------- */

static int
by_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The ids of the instances with a token in place (kind TOKENS) or an
 * ENABLED work item of the transition (ENABLED), sorted, malloc'd (the
 * strings borrowed from the rows); NULL with *n 0 when none. */
static const char **
holders(mem_store *m, const char *tenant, wf_fleet_kind kind, const char *element, size_t *n,
        bool *oom)
{
    const mtable *t = kind == WF_FLEET_TOKENS ? &m->tokens : &m->work_items;
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(t, tenant, &lo, &hi);
    const char **v = malloc((hi - lo + 1) * sizeof *v);
    *n = 0;
    *oom = v == NULL;
    for (size_t i = lo; v != NULL && i < hi; i++) {
        if (kind == WF_FLEET_TOKENS) {
            const wf_token_row *k = t->v[i].row;
            if (strcmp(k->place_id, element) == 0)
                v[(*n)++] = k->instance_id;
        } else {
            const wf_work_item_row *w = t->v[i].row;
            if (w->state == WF_WORK_ITEM_ENABLED && strcmp(w->transition_id, element) == 0)
                v[(*n)++] = w->instance_id;
        }
    }
    if (*n > 1)
        qsort(v, *n, sizeof *v, by_id);
    return v;
}

/* Whether instance in is at the element: among the holders, or for
 * INCIDENTS FAILED at it. */
static bool
at_element(const wf_instance_row *in, wf_fleet_kind kind, const char *element, const char **held,
           size_t n_held)
{
    if (kind == WF_FLEET_INCIDENTS)
        return in->status == WF_INSTANCE_FAILED &&
               strcmp(in->incident_transition_id != NULL ? in->incident_transition_id : "",
                      element) == 0;
    return n_held > 0 && bsearch(&in->id, held, n_held, sizeof *held, by_id) != NULL;
}

wf_code
wf_store_mem__fleet_instances(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                              int32_t version, wf_fleet_kind kind, const char *element,
                              const char *after, size_t limit, char ***ids, size_t *n,
                              wf_error *err)
{
    mem_store *m = (mem_store *)st;
    fleet_q q = {ctx->tenant, definition_key, version};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    size_t n_held = 0, lo, hi, k = 0;
    bool oom = false;
    const char **held =
        kind != WF_FLEET_INCIDENTS ? holders(m, ctx->tenant, kind, element, &n_held, &oom) : NULL;
    char **v = oom ? NULL : wf_arena_calloc(ctx->arena, limit + 1, sizeof *v);
    /* The instances of the tenant are kept in id order. */
    wf_store_mem__mt_tenant_range(&m->insts, ctx->tenant, &lo, &hi);
    for (size_t i = lo; v != NULL && i < hi && k < limit; i++) {
        const wf_instance_row *in = m->insts.v[i].row;
        if ((after != NULL && strcmp(in->id, after) <= 0) || !row_live(&q, in) ||
            !at_element(in, kind, element, held, n_held))
            continue;
        if ((v[k++] = wf_arena_strdup(ctx->arena, in->id)) == NULL)
            v = NULL;
    }
    pthread_mutex_unlock(&m->mu);
    free(held);
    if (v == NULL)
        return wf_error_nomem(err);
    *ids = v;
    *n = k;
    return WF_OK;
}
