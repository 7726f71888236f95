/*
 * mem/batch.c: the batch operations of the memory store (store.h, "batch
 * operations"). One table keyed by (tenant, id); every call runs under
 * the store's one mutex, so a claim and a versioned update are atomic
 * without more locking. Internal to server/store.
 */
#include "mem/mem_int.h"

#include <stdlib.h>

wf_code
wf_store_mem__put_batch(wf_tx *t, const wf_batch_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    if (wf_store_mem__mt_get(&m->batches, t->ctx.tenant, in->id, NULL) != NULL)
        return wf_error_set(err, WF_E_CONFLICT, "batch operation \"%s\" already exists", in->id);
    wf_batch_row copy = *in;
    copy.version = 1;
    return wf_store_mem__tx_put((mem_tx *)t, &m->batches, &copy, in->id, NULL, err);
}

wf_code
wf_store_mem__get_batch(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_batch_row *out,
                        bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return wf_store_mem__mt_get_copy(m, &m->batches, ctx, id, out, found, err);
}

wf_code
wf_store_mem__update_batch(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in,
                           bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    const wf_batch_row *cur = wf_store_mem__mt_get(&m->batches, ctx->tenant, in->id, NULL);
    *found = cur != NULL;
    if (cur != NULL && cur->version != in->version) {
        rc = wf_error_set(err, WF_E_CONFLICT, "batch operation \"%s\" was changed concurrently",
                          in->id);
    } else if (cur != NULL) {
        wf_batch_row copy = *in;
        copy.version = in->version + 1;
        rc = wf_store_mem__mt_replace(&m->batches, ctx->tenant, copy.id, &copy, err);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Newest first: (created_at, id) descending. */
static int
cmp_batch_desc(const void *a, const void *b)
{
    const wf_batch_row *x = *(const wf_batch_row *const *)a, *y = *(const wf_batch_row *const *)b;
    int c = wf_store_mem__i64_cmp(y->created_at, x->created_at);
    return c != 0 ? c : strcmp(y->id, x->id);
}

static bool
batch_before(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_batch_row *r = row;
    const keyset *k = arg;
    if (!k->has)
        return true;
    return r->created_at < k->num || (r->created_at == k->num && strcmp(r->id, k->str) < 0);
}

wf_code
wf_store_mem__list_batches(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                           int64_t c_num, const char *c_str, wf_batch_row **rows, size_t *n,
                           wf_error *err)
{
    mem_store *m = (mem_store *)st;
    keyset k = {has, c_num, c_str};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->batches, ctx->tenant, batch_before, &k, cmp_batch_desc,
                                   limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static CMP_NUM_ID(cmp_batch_lease, wf_batch_row, lease_until)

static bool
batch_claimable(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_batch_row *r = row;
    return r->state == WF_BATCH_RUNNING && r->lease_until <= *(const int64_t *)arg;
}

wf_code
wf_store_mem__claim_batches(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                            int64_t lease_ms, size_t limit, wf_batch_row **rows, size_t *n,
                            wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_batch_row *out = NULL;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__gather(m, &m->batches, ctx->tenant, batch_claimable, &now, cmp_batch_lease,
                              limit, &v, &k, err);
    if (rc == WF_OK)
        rc = wf_store_mem__copy_out(&wf_store__batch_desc, v, k, ctx->arena, (void **)&out, err);
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        out[i].lease_owner = wf_arena_strdup(ctx->arena, owner);
        out[i].lease_until = now + lease_ms * 1000;
        out[i].version++;
        rc = out[i].lease_owner != NULL
                 ? wf_store_mem__mt_replace(&m->batches, out[i].tenant, out[i].id, &out[i], err)
                 : wf_error_nomem(err);
    }
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK) {
        *rows = out;
        *n = k;
    }
    return rc;
}
