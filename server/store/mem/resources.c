/*
 * mem/resources.c: the resources of each tenant in the memory store
 * (store.h, "resources"), keyed by (tenant, name). Every call runs under
 * the store's one mutex, so a versioned save is atomic without more
 * locking. Internal to server/store.
 */
#include "mem/mem_int.h"

#include <stdlib.h>
#include <string.h>

wf_code
wf_store_mem__get_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                           wf_resource_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return wf_store_mem__mt_get_copy(m, &m->resources, ctx, name, out, found, err);
}

/* The save under the lock: an insert (version 0) or a versioned update. */
static wf_code
resource_save(mem_store *m, const char *tenant, const wf_resource_row *in, bool *found,
              wf_error *err)
{
    const wf_resource_row *cur = wf_store_mem__mt_get(&m->resources, tenant, in->name, NULL);
    *found = cur != NULL || in->version == 0;
    if (in->version == 0 && cur != NULL)
        return wf_error_set(err, WF_E_CONFLICT, "resource \"%.128s\" was declared concurrently",
                            in->name);
    if (in->version != 0 && cur == NULL)
        return WF_OK;
    if (cur != NULL && cur->version != in->version)
        return wf_error_set(err, WF_E_CONFLICT, "resource \"%.128s\" was changed concurrently",
                            in->name);
    wf_resource_row copy = *in;
    copy.version = in->version + 1;
    return wf_store_mem__mt_replace(&m->resources, tenant, copy.name, &copy, err);
}

wf_code
wf_store_mem__save_resource(wf_store *st, const wf_store_ctx *ctx, const wf_resource_row *in,
                            bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = resource_save(m, ctx->tenant, in, found, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

wf_code
wf_store_mem__delete_resource(wf_store *st, const wf_store_ctx *ctx, const char *name, bool *found,
                              wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    char *key = wf_store_mem__make_key(ctx->tenant, name, NULL);
    void *row = key != NULL ? wf_store_mem__mt_take(&m->resources, key) : NULL;
    rc = key != NULL ? WF_OK : wf_error_nomem(err);
    free(key);
    *found = row != NULL;
    if (row != NULL)
        wf_store_mem__row_free(&wf_store__resource_desc, row);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Newest first: (created_at, name) descending. */
static int
resource_cmp_desc(const void *a, const void *b)
{
    const wf_resource_row *x = *(const wf_resource_row *const *)a,
                          *y = *(const wf_resource_row *const *)b;
    int c = wf_store_mem__i64_cmp(y->created_at, x->created_at);
    return c != 0 ? c : strcmp(y->name, x->name);
}

static bool
resource_before(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_resource_row *r = row;
    const keyset *k = arg;
    if (!k->has)
        return true;
    return r->created_at < k->num || (r->created_at == k->num && strcmp(r->name, k->str) < 0);
}

wf_code
wf_store_mem__list_resources(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                             int64_t c_num, const char *c_str, wf_resource_row **rows, size_t *n,
                             wf_error *err)
{
    mem_store *m = (mem_store *)st;
    keyset k = {has, c_num, c_str};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->resources, ctx->tenant, resource_before, &k,
                                   resource_cmp_desc, limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
