/*
 * net_runtime_defs: DeployDefinition, GetDefinition and ListDefinitions
 * (docs/architecture.md, "Where an RPC lives").
 *
 * A definition version is immutable. Its stored content is the canonical
 * JSON of its model (net.h: sorted keys, defaults explicit, the version
 * left out) and content_hash its SHA-256, so "identical content" is a
 * string comparison: a deploy whose kind and hash equal the latest
 * version's returns that version (created = false); anything else stores
 * version N+1 (the store numbers it; a concurrent deploy of the same key
 * gets WF_E_CONFLICT and the retried unit of work then compares with the
 * winner). AD_HOC definitions are versioned the same way; their content
 * is the canonical JSON of a net without elements.
 *
 * Listing pages are addressed by cursors of this file's own grammar (the
 * store's listing is every version by (key, version)):
 *   "k<key>"     all keys: the page starts after key <key>
 *   "v<n>"       one key, newest first: the page starts at version n
 * They are turned into store cursors ("<version>,<key>", store.c).
 */
#include "net_runtime_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defcache.h"
#include "wf_bulkhead.h"
#include "wf_time.h"
#include "wf_str.h"

#define PAGE_DEFAULT 50
#define PAGE_MAX 500
#define SCAN_PAGE 1000

/* ---- findings of what net_validate.c does not check --------------------------------------- */

/* Appends findings made elsewhere (net_validate.c, net_steps.c). */
static void
append(wf_findings *f, const wf_validation_error *v, size_t n)
{
    for (size_t i = 0; i < n && !f->oom; i++)
        wf_findings_add(f, v[i].severity, v[i].code, v[i].path, "%s", v[i].message);
}

static void
check_key(wf_findings *f, const char *key)
{
    size_t n = key != NULL ? strlen(key) : 0;
    if (n == 0) {
        wf_findings_add(f, WF_SEVERITY_ERROR, "REQUIRED", "key", "definition key is required");
        return;
    }
    bool ok = n <= WF_NET_MAX_ID_LEN;
    for (size_t i = 0; ok && i < n; i++)
        ok = (unsigned char)key[i] > 0x20 && (unsigned char)key[i] < 0x7f;
    if (!ok)
        wf_findings_add(f, WF_SEVERITY_ERROR, "INVALID_VALUE", "key",
                        "definition key must be 1-%d printable bytes without spaces",
                        WF_NET_MAX_ID_LEN);
}

/* An AD_HOC definition: a key, optional name, description and validity
 * window, and no net. */
static void
check_adhoc(wf_findings *f, const wf_net *net)
{
    check_key(f, net->key);
    if (net->n_places > 0)
        wf_findings_add(f, WF_SEVERITY_ERROR, "INVALID_VALUE", "places",
                        "an AD_HOC definition has no places");
    if (net->n_transitions > 0)
        wf_findings_add(f, WF_SEVERITY_ERROR, "INVALID_VALUE", "transitions",
                        "an AD_HOC definition has no transitions");
    if (net->n_arcs > 0)
        wf_findings_add(f, WF_SEVERITY_ERROR, "INVALID_VALUE", "arcs",
                        "an AD_HOC definition has no arcs");
    if (net->termination != WF_TERMINATION_UNSET)
        wf_findings_add(f, WF_SEVERITY_ERROR, "INVALID_VALUE", "termination",
                        "an AD_HOC definition has no termination rule");
    if (net->valid_from != 0 && net->valid_until != 0 && net->valid_until <= net->valid_from)
        wf_findings_add(f, WF_SEVERITY_ERROR, "INVALID_VALUE", "valid_until",
                        "valid_until must be after valid_from");
}

/* Where a finding on CALL transition i belongs: its call step's key in a
 * step list, else the transition's. */
static void
call_key_path(const wf_net *net, size_t i, char *path, size_t size)
{
    int k = net->n_steps > 0 ? wf_steps_index(net, net->transitions[i].step_id) : -1;
    if (k >= 0)
        snprintf(path, size, "steps[%d].call.definition_key", k);
    else
        snprintf(path, size, "transitions[%zu].call_definition_key", i);
}

/* CALL transitions that ask for it (call_require_deployed): their key has
 * a definition now, at their version when pinned (a net calling its own
 * key passes). */
static wf_code
check_calls(const wf_runtime_ctx *ctx, const wf_net *net, wf_findings *f, wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    for (size_t i = 0; i < net->n_transitions; i++) {
        const wf_transition *t = &net->transitions[i];
        if (t->trigger != WF_TRIGGER_CALL || !t->call_strict || wf_str_empty(t->call_key) ||
            t->call_version < 0 || wf_str_eq(t->call_key, net->key))
            continue;
        wf_definition_row def;
        wf_code rc =
            wf_store_get_definition(ctx->ref.store, &sc, t->call_key, t->call_version, &def, err);
        if (rc == WF_E_DEFINITION_NOT_FOUND || (rc == WF_OK && !WF_DEF_RUNS_NET(def.kind))) {
            char path[96];
            call_key_path(net, i, path, sizeof path);
            wf_findings_add(f, WF_SEVERITY_ERROR, "CALL_DEFINITION_NOT_FOUND", path,
                            "%s \"%s\" calls \"%s\", which has no definition running a net%s",
                            net->n_steps > 0 ? "step" : "transition", t->id, t->call_key,
                            t->call_version > 0 ? " at that version" : "");
        } else if (rc != WF_OK) {
            return rc;
        }
    }
    return WF_OK;
}

/* Validates in; a STEPS definition is compiled too (*compiled, NULL when
 * it has errors or is of another kind). */
static wf_code
validate(const wf_runtime_ctx *ctx, const wf_runtime_deploy_in *in, wf_validation_error **out,
         size_t *n, wf_net **compiled, wf_error *err)
{
    wf_findings f = {.a = ctx->ref.arena};
    static const wf_net none = {0};
    const wf_net *net = in->net != NULL ? in->net : &none;
    *compiled = NULL;
    /* Compiling expressions no cache has seen is the compile bulkhead's
     * work: the whole validation then runs beside the shared threads, or
     * is refused before it starts when the bulkhead is full. */
    if (wf_net_has_unseen_expressions(net)) {
        wf_code rc = wf_bulkhead_enter(WF_BULKHEAD_COMPILE, err);
        if (rc != WF_OK)
            return rc;
    }
    if (in->kind != WF_DEF_STEPS && net->n_steps > 0) {
        /* Only a step list has steps; the rest is checked as usual. */
        wf_findings_add(&f, WF_SEVERITY_ERROR, "INVALID_VALUE", "steps",
                        "only a STEPS definition has steps");
        if (f.oom)
            return wf_error_nomem(err);
    }
    switch (in->kind) {
    case WF_DEF_NET: {
        wf_validation_error *v;
        size_t nv;
        wf_code rc = wf_net_validate(net, ctx->ref.arena, &v, &nv, err);
        if (rc == WF_OK)
            rc = check_calls(ctx, net, &f, err);
        if (rc != WF_OK)
            return rc;
        append(&f, v, nv);
        break;
    }
    case WF_DEF_STEPS: {
        wf_validation_error *v;
        size_t nv;
        wf_code rc = wf_steps_compile(net, ctx->ref.arena, compiled, &v, &nv, err);
        if (rc == WF_OK && *compiled != NULL)
            rc = check_calls(ctx, *compiled, &f, err);
        if (rc != WF_OK)
            return rc;
        append(&f, v, nv);
        break;
    }
    case WF_DEF_AD_HOC:
        check_adhoc(&f, net);
        break;
    default:
        if ((int)in->kind == 0)
            wf_findings_add(&f, WF_SEVERITY_ERROR, "REQUIRED", "kind",
                            "definition kind is required (AD_HOC, NET or STEPS)");
        else
            wf_findings_add(&f, WF_SEVERITY_ERROR, "INVALID_VALUE", "kind",
                            "definition kind %d is not known", (int)in->kind);
        check_key(&f, net->key);
        break;
    }
    if (f.oom)
        return wf_error_nomem(err);
    *out = f.v;
    *n = f.n;
    return WF_OK;
}

/* ---- DeployDefinition ------------------------------------------------------------------------ */

/* The kind of a definition, for messages. */
static const char *
kind_text(wf_def_kind k)
{
    switch (k) {
    case WF_DEF_AD_HOC:
        return "an AD_HOC definition";
    case WF_DEF_NET:
        return "a NET definition";
    case WF_DEF_STEPS:
        return "a STEPS definition";
    }
    return "a definition of another kind";
}

typedef struct deploy_op {
    const wf_runtime_ctx *ctx;
    const wf_runtime_deploy_in *in;
    const char *json;
    char hash[65];
    wf_runtime_deployed *out;
} deploy_op;

static wf_code
deploy_body(wf_tx *tx, void *arg, wf_error *err)
{
    deploy_op *op = arg;
    const wf_net *net = op->in->net;
    wf_runtime_deployed *out = op->out;
    wf_definition_row latest;
    bool found = false;
    wf_code rc = wf_tx_get_definition(tx, net->key, 0, &latest, &found, err);
    if (rc != WF_OK)
        return rc;
    /* A key never changes kind (the store enforces it against a racing
     * put of the other kind too). */
    if (found && latest.kind != op->in->kind)
        return wf_error_set(err, WF_E_DEFINITION_KIND_CONFLICT,
                            "definition \"%.128s\" is %s; %s cannot be deployed onto its "
                            "key",
                            net->key, kind_text(latest.kind), kind_text(op->in->kind));
    if (found && wf_str_eq(latest.content_hash, op->hash)) {
        out->row = latest;
        out->created = false;
    } else {
        wf_definition_row row = {
            .key = (char *)net->key,
            .kind = op->in->kind,
            .name = (char *)(wf_str_empty(net->name) ? NULL : net->name),
            .content = (unsigned char *)op->json,
            .content_len = strlen(op->json),
            .content_hash = wf_arena_strdup(op->ctx->ref.arena, op->hash),
            .valid_from = net->valid_from,
            .valid_until = net->valid_until,
            .created_at = wf_now_us(),
            .created_by = (char *)op->ctx->ref.actor,
        };
        if (row.content_hash == NULL)
            return wf_error_nomem(err);
        rc = wf_tx_put_definition(tx, &row, &row.version, err);
        if (rc != WF_OK)
            return rc;
        out->row = row;
        out->created = true;
    }
    return wf_defcache_net(&out->row, op->ctx->ref.arena, &out->net, err);
}

/* This answer, GetDefinition and ListDefinitions send the stored form (a
 * step list with its compiled net, so its texts twice): a definition that
 * could not be read back is refused before it is stored. Its JSON text is
 * larger than its protobuf, so it stands for the answer's rows. */
static wf_code
check_readable(const wf_runtime_ctx *ctx, const wf_net *net, const char *json, wf_error *err)
{
    size_t n = strlen(json), most = ctx->ref.answer_bytes;
    if (most == 0 || n <= most)
        return WF_OK;
    return wf_error_set(err, WF_E_TOO_LARGE,
                        "definition \"%.128s\" takes %zu bytes as stored%s, more than an answer "
                        "holds (%zu)",
                        net->key != NULL ? net->key : "", n,
                        net->n_steps > 0 ? " (its steps with their compiled net)" : "", most);
}

wf_code
wf_runtime_deploy(const wf_runtime_ctx *ctx, const wf_runtime_deploy_in *in, wf_uow_idem *idem,
                  wf_runtime_deployed *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_validation_error *all = NULL;
    size_t n = 0;
    wf_net *compiled = NULL;
    wf_code rc = validate(ctx, in, &all, &n, &compiled, err);
    if (rc != WF_OK)
        return rc;
    if (in->validate_only) {
        out->errors = all;
        out->n_errors = n;
        return WF_OK;
    }
    if (wf_net_has_errors(all, n)) {
        size_t errors = 0;
        const wf_validation_error *first = NULL;
        for (size_t i = 0; i < n; i++) {
            if (all[i].severity != WF_SEVERITY_ERROR)
                continue;
            errors++;
            if (first == NULL)
                first = &all[i];
            if (ctx->ref.violation != NULL) {
                /* The request path: the element's path inside the
                 * request's `definition` field. */
                char *f = wf_arena_printf(ctx->ref.arena, "definition%s%s",
                                          all[i].path[0] ? "." : "", all[i].path);
                ctx->ref.violation(ctx->ref.violation_arg, f != NULL ? f : "definition",
                                   all[i].code, all[i].message);
            }
        }
        out->errors = all;
        out->n_errors = n;
        return wf_error_set(err, WF_E_DEFINITION_INVALID,
                            "definition \"%.128s\" is invalid: %zu error%s, the first at %s: %s",
                            in->net != NULL && in->net->key != NULL ? in->net->key : "", errors,
                            errors == 1 ? "" : "s", first->path[0] ? first->path : "(definition)",
                            first->message);
    }
    /* Only warnings remain: they are returned with the deployed version. */
    out->errors = all;
    out->n_errors = n;
    if (ctx->ref.actor == NULL || ctx->ref.actor[0] == '\0')
        return wf_error_set(err, WF_E_ACTOR_MISSING,
                            "x-actor-id is required: this call acts for a person");
    /* A step list is stored with its compiled net, so that its instances
     * keep running the net they started with. */
    wf_runtime_deploy_in stored = *in;
    if (compiled != NULL)
        stored.net = compiled;
    deploy_op op = {.ctx = ctx, .in = &stored, .out = out};
    char *json;
    rc = wf_net_to_json(stored.net, ctx->ref.arena, &json, err);
    if (rc != WF_OK)
        return rc;
    rc = check_readable(ctx, stored.net, json, err);
    if (rc != WF_OK)
        return rc;
    op.json = json;
    wf_sha256_hex(json, strlen(json), op.hash);
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    return wf_uow_run(ctx->ref.store, &sc, idem, deploy_body, &op, out, err);
}

/* ---- GetDefinition ----------------------------------------------------------------------------
 */

wf_code
wf_runtime_get_definition(const wf_runtime_ctx *ctx, const char *key, int32_t version,
                          wf_definition_row *row, const wf_net **net, wf_error *err)
{
    if (wf_str_empty(key))
        return wf_work_invalid(&ctx->ref, "key", "is required", err);
    if (version < 0)
        return wf_work_invalid(&ctx->ref, "version", "must not be negative", err);
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_code rc = wf_store_get_definition(ctx->ref.store, &sc, key, version, row, err);
    if (rc == WF_E_DEFINITION_NOT_FOUND)
        return version == 0 ? wf_error_set(err, rc, "definition \"%.128s\" does not exist", key)
                            : wf_error_set(err, rc, "definition \"%.128s\" has no version %d", key,
                                           (int)version);
    if (rc != WF_OK)
        return rc;
    return wf_defcache_net(row, ctx->ref.arena, net, err);
}

/* The checks of GetDefinitionStatistics: a key, a version >= 0 that
 * exists (0: the key exists). */
static wf_code
statistics_check(const wf_runtime_ctx *ctx, const char *key, int32_t version, wf_error *err)
{
    if (wf_str_empty(key))
        return wf_work_invalid(&ctx->ref, "definition_key", "is required", err);
    if (version < 0)
        return wf_work_invalid(&ctx->ref, "version", "must not be negative", err);
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_definition_row row;
    wf_code rc = wf_store_get_definition(ctx->ref.store, &sc, key, version, &row, err);
    if (rc == WF_E_DEFINITION_NOT_FOUND)
        return version == 0 ? wf_error_set(err, rc, "definition \"%.128s\" does not exist", key)
                            : wf_error_set(err, rc, "definition \"%.128s\" has no version %d", key,
                                           (int)version);
    return rc;
}

wf_code
wf_runtime_definition_statistics(const wf_runtime_ctx *ctx, const char *key, int32_t version,
                                 wf_fleet_counts *out, wf_error *err)
{
    wf_code rc = statistics_check(ctx, key, version, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    return wf_store_fleet_counts(ctx->ref.store, &sc, key, version, out, err);
}

wf_code
wf_runtime_definition_instances(const wf_runtime_ctx *ctx, const wf_runtime_fleet_page_in *in,
                                char ***ids, size_t *n, char **next_cursor, wf_error *err)
{
    *next_cursor = NULL;
    if (in->kind < WF_FLEET_TOKENS || in->kind > WF_FLEET_INCIDENTS)
        return wf_work_invalid(&ctx->ref, "at", "must be TOKENS, ENABLED_WORK_ITEMS or INCIDENTS",
                               err);
    if (wf_str_empty(in->element))
        return wf_work_invalid(&ctx->ref, "element_id", "is required with at", err);
    if (in->page_size < 0)
        return wf_work_invalid(&ctx->ref, "page_size", "must not be negative", err);
    wf_code rc = statistics_check(ctx, in->key, in->version, err);
    if (rc != WF_OK)
        return rc;
    size_t size = in->page_size == 0         ? PAGE_DEFAULT
                  : in->page_size > PAGE_MAX ? PAGE_MAX
                                             : (size_t)in->page_size;
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    rc = wf_store_fleet_instances(
        ctx->ref.store, &sc, in->key, in->version, (wf_fleet_kind)in->kind, in->element,
        wf_str_empty(in->cursor) ? NULL : in->cursor, size + 1, ids, n, err);
    if (rc == WF_OK && *n > size) {
        *n = size;
        *next_cursor = (*ids)[size - 1];
    }
    return rc;
}

/* ---- ListDefinitions ----------------------------------------------------------------------------
 */

typedef struct page {
    wf_definition_row *rows;
    const wf_net **nets;
    size_t n, cap;
} page;

static wf_code
emit(const wf_runtime_ctx *ctx, page *p, const wf_definition_row *row, wf_error *err)
{
    if (p->n == p->cap)
        return wf_error_set(err, WF_E_INTERNAL, "definition page overflow");
    p->rows[p->n] = *row;
    wf_code rc = wf_defcache_net(row, ctx->ref.arena, &p->nets[p->n], err);
    if (rc == WF_OK)
        p->n++;
    return rc;
}

/* Every version of key, newest first, from version top down. */
static wf_code
list_versions(const wf_runtime_ctx *ctx, const char *key, size_t size, const char *cursor, page *p,
              char **next, wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    long top;
    if (cursor != NULL) {
        char *end;
        top = strtol(cursor + 1, &end, 10);
        if (cursor[0] != 'v' || *end != '\0' || top < 1 || top > INT_MAX)
            return wf_work_invalid(&ctx->ref, "page_token", "is malformed", err);
    } else {
        wf_definition_row latest;
        wf_code rc = wf_store_get_definition(ctx->ref.store, &sc, key, 0, &latest, err);
        if (rc == WF_E_DEFINITION_NOT_FOUND) {
            wf_error_clear(err);
            return WF_OK;
        }
        if (rc != WF_OK)
            return rc;
        top = latest.version;
    }
    long low = top - (long)size + 1;
    if (low < 1)
        low = 1;
    char *sc_cursor = wf_arena_printf(ctx->ref.arena, "%ld,%s", low - 1, key);
    wf_definition_row *rows = NULL;
    size_t n = 0;
    char *ignored = NULL;
    if (sc_cursor == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_store_list_definitions(ctx->ref.store, &sc, (size_t)(top - low + 1), sc_cursor,
                                           &rows, &n, &ignored, err);
    for (size_t i = n; rc == WF_OK && i-- > 0;)
        if (wf_str_eq(rows[i].key, key) && rows[i].version <= top)
            rc = emit(ctx, p, &rows[i], err);
    if (rc == WF_OK && low > 1 &&
        (*next = wf_arena_printf(ctx->ref.arena, "v%ld", low - 1)) == NULL)
        return wf_error_nomem(err);
    return rc;
}

/* The latest version of every key after the cursor's key, by key. */
static wf_code
list_latest(const wf_runtime_ctx *ctx, size_t size, const char *cursor, page *p, char **next,
            wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    const char *sc_cursor = NULL;
    if (cursor != NULL) {
        if (cursor[0] != 'k' || cursor[1] == '\0')
            return wf_work_invalid(&ctx->ref, "page_token", "is malformed", err);
        /* Past every version of that key. */
        sc_cursor = wf_arena_printf(ctx->ref.arena, "%d,%s", INT_MAX, cursor + 1);
        if (sc_cursor == NULL)
            return wf_error_nomem(err);
    }
    const wf_definition_row *pending = NULL; /* newest row seen of the current key */
    bool more = false;
    for (;;) {
        wf_definition_row *rows = NULL;
        size_t n = 0;
        char *nc = NULL;
        wf_code rc = wf_store_list_definitions(ctx->ref.store, &sc, SCAN_PAGE, sc_cursor, &rows, &n,
                                               &nc, err);
        if (rc != WF_OK)
            return rc;
        for (size_t i = 0; i < n; i++) {
            if (pending != NULL && !wf_str_eq(pending->key, rows[i].key)) {
                if (p->n == size) {
                    more = true;
                    break;
                }
                if ((rc = emit(ctx, p, pending, err)) != WF_OK)
                    return rc;
            }
            pending = &rows[i];
        }
        if (more || nc == NULL)
            break;
        sc_cursor = nc;
    }
    if (!more && pending != NULL) {
        if (p->n == size) {
            more = true;
        } else {
            wf_code rc = emit(ctx, p, pending, err);
            if (rc != WF_OK)
                return rc;
        }
    }
    if (more && p->n > 0 &&
        (*next = wf_arena_printf(ctx->ref.arena, "k%s", p->rows[p->n - 1].key)) == NULL)
        return wf_error_nomem(err);
    return WF_OK;
}

wf_code
wf_runtime_list_definitions(const wf_runtime_ctx *ctx, const char *key, int32_t page_size,
                            const char *cursor, wf_definition_row **rows, const wf_net ***nets,
                            size_t *n, char **next_cursor, wf_error *err)
{
    if (page_size < 0)
        return wf_work_invalid(&ctx->ref, "page_size", "must not be negative", err);
    size_t size = page_size == 0         ? PAGE_DEFAULT
                  : page_size > PAGE_MAX ? PAGE_MAX
                                         : (size_t)page_size;
    page p = {.cap = size};
    p.rows = wf_arena_calloc(ctx->ref.arena, size + 1, sizeof *p.rows);
    p.nets = wf_arena_calloc(ctx->ref.arena, size + 1, sizeof *p.nets);
    if (p.rows == NULL || p.nets == NULL)
        return wf_error_nomem(err);
    char *next = NULL;
    if (wf_str_empty(cursor))
        cursor = NULL;
    wf_code rc = wf_str_empty(key) ? list_latest(ctx, size, cursor, &p, &next, err)
                                   : list_versions(ctx, key, size, cursor, &p, &next, err);
    if (rc != WF_OK)
        return rc;
    *rows = p.rows;
    *nets = p.nets;
    *n = p.n;
    *next_cursor = next;
    return WF_OK;
}
