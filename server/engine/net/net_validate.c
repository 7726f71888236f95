/*
 * net_validate: every check a definition must pass before it can start
 * cases (Radicore's is_valid / workflow_errors).
 *
 * Codes (stable; the first group is listed on ValidationError.code in
 * workflow.proto):
 *   START_PLACE_COUNT, END_PLACE_COUNT, END_PLACE_HAS_OUTPUT,
 *   TRANSITION_WITHOUT_INPUT, TRANSITION_WITHOUT_OUTPUT,
 *   ARC_INVALID_ENDPOINTS, UNKNOWN_REFERENCE, DUPLICATE_ID, NOT_ON_PATH,
 *   GUARD_INVALID, GUARD_ON_INPUT_ARC, EXPRESSION_INVALID,
 *   TRIGGER_FIELD_MISSING, TRIGGER_FIELD_CONFLICT, REQUIRED, INVALID_VALUE,
 *   MISSING_DEFAULT_ARC (warning)
 * and added here:
 *   DUPLICATE_ARC          two arcs with the same source and target
 *   MULTIPLE_DEFAULT_ARCS  more than one is_default arc out of a transition
 *   DEFAULT_ON_INPUT_ARC   is_default on a place -> transition arc
 *   TOO_MANY_ELEMENTS      more than WF_NET_MAX_NODES / WF_NET_MAX_ARCS
 *   RESOURCE_DUPLICATE     a transition names a resource twice
 *
 * Fields of another trigger are an ERROR (TRIGGER_FIELD_CONFLICT), as the
 * proto says: a stray delay on a USER transition is almost always a
 * modelling mistake, and refusing it keeps the stored content meaningful.
 */
#include "net.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "wf_str.h"

/* An expression to compile, and where its finding goes. */
typedef struct pending_expr {
    const char *src, *code, *path, *what; /* path and what in the arena */
    size_t at;                            /* findings before it */
    struct pending_expr *next;
} pending_expr;

typedef struct vctx {
    const wf_net *net;
    wf_findings f;
    pending_expr *exprs, **tail; /* in the order met, compiled together at the end */
    size_t nexprs;
} vctx;

static void add(vctx *c, wf_severity sev, const char *code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

void
wf_net__vfinding(wf_findings *f, wf_severity sev, const char *code, const char *path,
                 const char *fmt, va_list ap)
{
    if (f->oom)
        return;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        wf_validation_error *v = wf_arena_alloc(f->a, cap * sizeof *v);
        if (v == NULL) {
            f->oom = true;
            return;
        }
        if (f->n > 0)
            memcpy(v, f->v, f->n * sizeof *v);
        f->v = v;
        f->cap = cap;
    }
    char msg[300];
    vsnprintf(msg, sizeof msg, fmt, ap);
    wf_validation_error *e = &f->v[f->n];
    e->code = code; /* static strings */
    e->path = wf_arena_strdup(f->a, path);
    e->message = wf_arena_strdup(f->a, msg);
    e->severity = sev;
    if (e->path == NULL || e->message == NULL)
        f->oom = true;
    else
        f->n++;
}

void
wf_findings_add(wf_findings *f, wf_severity sev, const char *code, const char *path,
                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wf_net__vfinding(f, sev, code, path, fmt, ap);
    va_end(ap);
}

static void
add(vctx *c, wf_severity sev, const char *code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wf_net__vfinding(&c->f, sev, code, path, fmt, ap);
    va_end(ap);
}

#define ERR(c, code, path, ...) add(c, WF_SEVERITY_ERROR, code, path, __VA_ARGS__)

static const char *
str(const char *s)
{
    return s ? s : "";
}

/* Ids: 1-128 printable bytes without whitespace (as in workflow.proto). */
static bool
id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > WF_NET_MAX_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static void
check_id(vctx *c, const char *id, const char *path, const char *what)
{
    if (wf_str_empty(id))
        ERR(c, "REQUIRED", path, "%s id is required", what);
    else if (!id_ok(id))
        ERR(c, "INVALID_VALUE", path, "%s id \"%.64s\" must be 1-%d printable bytes without spaces",
            what, id, WF_NET_MAX_ID_LEN);
}

/* Notes src for the compile at the end (compile_exprs): a definition's
 * expressions are compiled together, in one round trip to a worker. */
static void
check_expr(vctx *c, const char *src, const char *code, const char *path, const char *what)
{
    pending_expr *p = wf_arena_calloc(c->f.a, 1, sizeof *p);
    if (p == NULL || (p->path = wf_arena_strdup(c->f.a, path)) == NULL ||
        (p->what = wf_arena_strdup(c->f.a, what)) == NULL) {
        c->f.oom = true;
        return;
    }
    p->src = src;
    p->code = code;
    p->at = c->f.n;
    *c->tail = p;
    c->tail = &p->next;
    c->nexprs++;
}

/* Findings f, with each failed expression's finding at its place among
 * them (before the finding that came after it was met). */
static void
merge_expr_findings(vctx *c, const wf_error *errs)
{
    wf_findings all = {.a = c->f.a};
    size_t i = 0, k = 0;
    for (pending_expr *p = c->exprs; p != NULL; p = p->next, k++) {
        for (; i < p->at && i < c->f.n; i++)
            wf_findings_add(&all, c->f.v[i].severity, c->f.v[i].code, c->f.v[i].path, "%s",
                            c->f.v[i].message);
        if (errs[k].code != WF_OK)
            wf_findings_add(&all, WF_SEVERITY_ERROR, p->code, p->path, "%s does not compile: %s",
                            p->what, errs[k].msg);
    }
    for (; i < c->f.n; i++)
        wf_findings_add(&all, c->f.v[i].severity, c->f.v[i].code, c->f.v[i].path, "%s",
                        c->f.v[i].message);
    all.oom = all.oom || c->f.oom;
    c->f = all;
}

/* Compiles every expression check_expr noted, together; their findings
 * join the others. Fails only when the compile could not run (the compile
 * bulkhead is full, a worker's limit, memory). */
static wf_code
compile_exprs(vctx *c, wf_error *err)
{
    if (c->nexprs == 0 || c->f.oom)
        return WF_OK;
    const char **srcs = wf_arena_calloc(c->f.a, c->nexprs, sizeof *srcs);
    wf_error *errs = malloc(c->nexprs * sizeof *errs);
    if (srcs == NULL || errs == NULL) {
        free(errs);
        return wf_error_nomem(err);
    }
    size_t k = 0;
    for (pending_expr *p = c->exprs; p != NULL; p = p->next)
        srcs[k++] = p->src;
    wf_code rc = wf_expr_check_all(srcs, c->nexprs, errs, err);
    if (rc == WF_OK)
        merge_expr_findings(c, errs);
    free(errs);
    return rc;
}

/* ---- structure ------------------------------------------------------------ */

static void
check_header(vctx *c)
{
    const wf_net *net = c->net;
    if (wf_str_empty(net->key))
        ERR(c, "REQUIRED", "key", "definition key is required");
    else if (!id_ok(net->key))
        ERR(c, "INVALID_VALUE", "key", "definition key must be 1-%d printable bytes without spaces",
            WF_NET_MAX_ID_LEN);
    if (net->termination != WF_TERMINATION_UNSET && net->termination != WF_TERMINATION_EXPLICIT &&
        net->termination != WF_TERMINATION_IMPLICIT)
        ERR(c, "INVALID_VALUE", "termination", "termination %d is not known", net->termination);
    if (net->valid_from != 0 && net->valid_until != 0 && net->valid_until <= net->valid_from)
        ERR(c, "INVALID_VALUE", "valid_until", "valid_until must be after valid_from");
}

static void
check_nodes(vctx *c)
{
    const wf_net *net = c->net;
    char path[64];
    size_t starts = 0, ends = 0;

    for (size_t i = 0; i < net->n_places; i++) {
        const wf_place *p = &net->places[i];
        snprintf(path, sizeof path, "places[%zu].id", i);
        check_id(c, p->id, path, "place");
        if (p->kind == WF_PLACE_START)
            starts++;
        else if (p->kind == WF_PLACE_END)
            ends++;
        else if (p->kind != WF_PLACE_UNSET && p->kind != WF_PLACE_NORMAL) {
            snprintf(path, sizeof path, "places[%zu].kind", i);
            ERR(c, "INVALID_VALUE", path, "place \"%s\" has unknown kind %d", str(p->id), p->kind);
        }
    }
    for (size_t i = 0; i < net->n_transitions; i++) {
        snprintf(path, sizeof path, "transitions[%zu].id", i);
        check_id(c, net->transitions[i].id, path, "transition");
    }
    /* Ids are unique across places and transitions: arcs name either. */
    size_t total = net->n_places + net->n_transitions;
    for (size_t i = 0; i < total; i++) {
        const char *id =
            i < net->n_places ? net->places[i].id : net->transitions[i - net->n_places].id;
        if (wf_str_empty(id))
            continue;
        for (size_t j = 0; j < i; j++) {
            const char *other =
                j < net->n_places ? net->places[j].id : net->transitions[j - net->n_places].id;
            if (!wf_str_empty(other) && strcmp(id, other) == 0) {
                if (i < net->n_places)
                    snprintf(path, sizeof path, "places[%zu].id", i);
                else
                    snprintf(path, sizeof path, "transitions[%zu].id", i - net->n_places);
                ERR(c, "DUPLICATE_ID", path, "id \"%s\" is used more than once", id);
                break;
            }
        }
    }
    if (starts != 1)
        ERR(c, "START_PLACE_COUNT", "places", "a net needs exactly one START place, found %zu",
            starts);
    if (ends != 1)
        ERR(c, "END_PLACE_COUNT", "places", "a net needs exactly one END place, found %zu", ends);
}

/* Endpoint kinds of an arc: 'p' place, 't' transition, 0 unknown. */
static char
node_kind(const wf_net *net, const char *id)
{
    if (wf_net_place_index(net, id) >= 0)
        return 'p';
    if (wf_net_transition_index(net, id) >= 0)
        return 't';
    return 0;
}

static void
check_arcs(vctx *c)
{
    const wf_net *net = c->net;
    char path[64];
    for (size_t i = 0; i < net->n_arcs; i++) {
        const wf_arc *ar = &net->arcs[i];
        char sk = 0, tk = 0;
        snprintf(path, sizeof path, "arcs[%zu].source", i);
        if (wf_str_empty(ar->source))
            ERR(c, "REQUIRED", path, "arc %zu has no source", i);
        else if ((sk = node_kind(net, ar->source)) == 0)
            ERR(c, "UNKNOWN_REFERENCE", path, "arc %zu starts at \"%s\", which does not exist", i,
                ar->source);
        snprintf(path, sizeof path, "arcs[%zu].target", i);
        if (wf_str_empty(ar->target))
            ERR(c, "REQUIRED", path, "arc %zu has no target", i);
        else if ((tk = node_kind(net, ar->target)) == 0)
            ERR(c, "UNKNOWN_REFERENCE", path, "arc %zu ends at \"%s\", which does not exist", i,
                ar->target);
        snprintf(path, sizeof path, "arcs[%zu]", i);
        if (sk != 0 && sk == tk)
            ERR(c, "ARC_INVALID_ENDPOINTS", path,
                "arc %zu joins two %s; arcs join a place and a transition", i,
                sk == 'p' ? "places" : "transitions");
        if (sk == 'p' && tk == 't') {
            const wf_place *p = &net->places[wf_net_place_index(net, ar->source)];
            if (p->kind == WF_PLACE_END)
                ERR(c, "END_PLACE_HAS_OUTPUT", path, "arc %zu leaves end place \"%s\"", i, p->id);
        }
        /* An arc from a transition into START is allowed: it restarts the
         * case (Radicore's restart arc). Only END has no way out. Out of a
         * first_match transition (a compiled step), two arcs to one place
         * are two ordered rules, not a repeat. */
        int st = sk == 't' ? wf_net_transition_index(net, ar->source) : -1;
        bool ordered = st >= 0 && net->transitions[st].first_match;
        for (size_t j = 0; j < i && !ordered; j++)
            if (!wf_str_empty(ar->source) && !wf_str_empty(ar->target) &&
                strcmp(ar->source, str(net->arcs[j].source)) == 0 &&
                strcmp(ar->target, str(net->arcs[j].target)) == 0) {
                ERR(c, "DUPLICATE_ARC", path,
                    "arc %zu repeats arc %zu from \"%s\" to \"%s\"; use a weight instead", i, j,
                    ar->source, ar->target);
                break;
            }
        snprintf(path, sizeof path, "arcs[%zu].weight", i);
        if (ar->weight < 0 || ar->weight > WF_NET_MAX_WEIGHT)
            ERR(c, "INVALID_VALUE", path, "arc %zu has weight %d; it must be 1 to %d", i,
                ar->weight, WF_NET_MAX_WEIGHT);

        bool input = sk == 'p' && tk == 't';
        snprintf(path, sizeof path, "arcs[%zu].guard", i);
        if (!wf_str_empty(ar->guard)) {
            if (input)
                ERR(c, "GUARD_ON_INPUT_ARC", path,
                    "arc %zu enters a transition; only output arcs have guards", i);
            else if (ar->is_default)
                ERR(c, "INVALID_VALUE", path, "default arc %zu cannot have a guard", i);
            else {
                char what[48];
                snprintf(what, sizeof what, "guard of arc %zu", i);
                check_expr(c, ar->guard, "GUARD_INVALID", path, what);
            }
        }
        if (ar->is_default && input) {
            snprintf(path, sizeof path, "arcs[%zu].is_default", i);
            ERR(c, "DEFAULT_ON_INPUT_ARC", path,
                "arc %zu enters a transition; only output arcs can be the default", i);
        }
    }
}

/* Inputs, outputs, default arcs, per transition. */
static void
check_transition_arcs(vctx *c)
{
    const wf_net *net = c->net;
    char path[64];
    for (size_t ti = 0; ti < net->n_transitions; ti++) {
        const wf_transition *t = &net->transitions[ti];
        if (wf_str_empty(t->id))
            continue;
        size_t in = 0, out = 0, guarded = 0, plain = 0, defaults = 0;
        for (size_t i = 0; i < net->n_arcs; i++) {
            const wf_arc *ar = &net->arcs[i];
            if (strcmp(str(ar->target), t->id) == 0 && node_kind(net, ar->source) == 'p')
                in++;
            if (strcmp(str(ar->source), t->id) != 0 || node_kind(net, ar->target) != 'p')
                continue;
            out++;
            if (ar->is_default) {
                if (++defaults == 2) {
                    snprintf(path, sizeof path, "arcs[%zu].is_default", i);
                    ERR(c, "MULTIPLE_DEFAULT_ARCS", path,
                        "transition \"%s\" has more than one default arc", t->id);
                }
            } else if (!wf_str_empty(ar->guard)) {
                guarded++;
            } else {
                plain++;
            }
        }
        snprintf(path, sizeof path, "transitions[%zu]", ti);
        if (in == 0)
            ERR(c, "TRANSITION_WITHOUT_INPUT", path, "transition \"%s\" has no input arc", t->id);
        if (out == 0)
            ERR(c, "TRANSITION_WITHOUT_OUTPUT", path, "transition \"%s\" has no output arc", t->id);
        /* All-guarded outputs without an else-branch can refuse to fire
         * (NO_ARC_MATCHED); so can several guards meant as alternatives. */
        if (defaults == 0 && (guarded >= 2 || (guarded >= 1 && plain == 0)))
            add(c, WF_SEVERITY_WARNING, "MISSING_DEFAULT_ARC", path,
                "transition \"%s\" has guarded output arcs but no default arc; firing fails "
                "when no guard is true",
                t->id);
    }
}

/* Every node lies on a path START -> END: reachable forward from START and
 * backward from END. Only meaningful with exactly one of each. */
static void
check_paths(vctx *c)
{
    const wf_net *net = c->net;
    int start = -1, end = -1;
    for (size_t i = 0; i < net->n_places; i++) {
        if (net->places[i].kind == WF_PLACE_START)
            start = start == -1 ? (int)i : -2;
        if (net->places[i].kind == WF_PLACE_END)
            end = end == -1 ? (int)i : -2;
    }
    if (start < 0 || end < 0)
        return;
    size_t np = net->n_places, n = np + net->n_transitions;
    /* Node k: place k, or transition k - np. Arc endpoints resolved once. */
    int *src = wf_arena_alloc(c->f.a, (net->n_arcs + 1) * sizeof *src);
    int *dst = wf_arena_alloc(c->f.a, (net->n_arcs + 1) * sizeof *dst);
    unsigned char *fw = wf_arena_calloc(c->f.a, n + 1, 1);
    unsigned char *bw = wf_arena_calloc(c->f.a, n + 1, 1);
    int *stack = wf_arena_alloc(c->f.a, (n + 1) * sizeof *stack);
    if (src == NULL || dst == NULL || fw == NULL || bw == NULL || stack == NULL) {
        c->f.oom = true;
        return;
    }
    for (size_t i = 0; i < net->n_arcs; i++) {
        int p = wf_net_place_index(net, net->arcs[i].source);
        int t = wf_net_transition_index(net, net->arcs[i].source);
        src[i] = p >= 0 ? p : t >= 0 ? (int)np + t : -1;
        p = wf_net_place_index(net, net->arcs[i].target);
        t = wf_net_transition_index(net, net->arcs[i].target);
        dst[i] = p >= 0 ? p : t >= 0 ? (int)np + t : -1;
    }
    for (int dir = 0; dir < 2; dir++) {
        unsigned char *seen = dir == 0 ? fw : bw;
        int sp = 0;
        stack[sp++] = dir == 0 ? start : end;
        seen[stack[0]] = 1;
        while (sp > 0) {
            int k = stack[--sp];
            for (size_t i = 0; i < net->n_arcs; i++) {
                int from = dir == 0 ? src[i] : dst[i], to = dir == 0 ? dst[i] : src[i];
                if (from == k && to >= 0 && !seen[to]) {
                    seen[to] = 1;
                    stack[sp++] = to;
                }
            }
        }
    }
    char path[64];
    for (size_t k = 0; k < n; k++) {
        if (fw[k] && bw[k])
            continue;
        const char *id = k < np ? net->places[k].id : net->transitions[k - np].id;
        if (k < np)
            snprintf(path, sizeof path, "places[%zu]", k);
        else
            snprintf(path, sizeof path, "transitions[%zu]", k - np);
        ERR(c, "NOT_ON_PATH", path, "%s \"%s\" is not on a path from the start to the end place%s",
            k < np ? "place" : "transition", str(id),
            !fw[k] ? " (not reachable from the start)" : " (cannot reach the end)");
    }
}

/* ---- triggers --------------------------------------------------------------- */

/* Reports a field set on a transition whose trigger does not use it. */
static void
conflict(vctx *c, size_t ti, const char *field, const wf_transition *t, const char *owner)
{
    char path[96];
    snprintf(path, sizeof path, "transitions[%zu].%s", ti, field);
    ERR(c, "TRIGGER_FIELD_CONFLICT", path, "transition \"%s\": %s applies only to %s transitions",
        str(t->id), field, owner);
}

static void
check_user(vctx *c, size_t ti, const wf_transition *t)
{
    char path[96];
    const wf_assignee *as = &t->assignee;
    bool has_expr = !wf_str_empty(as->ids_expression);
    snprintf(path, sizeof path, "transitions[%zu].assignee", ti);
    if (as->kind == WF_NET_ASSIGNEE_UNSET) {
        ERR(c, "TRIGGER_FIELD_MISSING", path, "USER transition \"%s\" needs an assignee kind",
            str(t->id));
    } else if (as->kind != WF_NET_ASSIGNEE_USER && as->kind != WF_NET_ASSIGNEE_GROUP &&
               as->kind != WF_NET_ASSIGNEE_USERS) {
        snprintf(path, sizeof path, "transitions[%zu].assignee.kind", ti);
        ERR(c, "INVALID_VALUE", path, "assignee kind %d is not known", as->kind);
    }
    snprintf(path, sizeof path, "transitions[%zu].assignee.ids", ti);
    if (as->n_ids == 0 && !has_expr)
        ERR(c, "TRIGGER_FIELD_MISSING", path,
            "USER transition \"%s\" needs assignee ids or an ids_expression", str(t->id));
    if (as->n_ids > 0 && has_expr) {
        snprintf(path, sizeof path, "transitions[%zu].assignee.ids_expression", ti);
        ERR(c, "TRIGGER_FIELD_CONFLICT", path,
            "transition \"%s\" sets both assignee ids and ids_expression", str(t->id));
    }
    if (as->n_ids > 1 && (as->kind == WF_NET_ASSIGNEE_USER || as->kind == WF_NET_ASSIGNEE_GROUP))
        ERR(c, "INVALID_VALUE", path, "a %s assignee takes exactly one id, got %zu",
            as->kind == WF_NET_ASSIGNEE_USER ? "USER" : "GROUP", as->n_ids);
    for (size_t j = 0; j < as->n_ids; j++) {
        snprintf(path, sizeof path, "transitions[%zu].assignee.ids[%zu]", ti, j);
        if (wf_str_empty(as->ids[j]) || !id_ok(as->ids[j])) {
            ERR(c, wf_str_empty(as->ids[j]) ? "REQUIRED" : "INVALID_VALUE", path,
                "assignee id %zu must be 1-%d printable bytes without spaces", j,
                WF_NET_MAX_ID_LEN);
            continue;
        }
        for (size_t k = 0; k < j; k++)
            if (!wf_str_empty(as->ids[k]) && strcmp(as->ids[j], as->ids[k]) == 0) {
                ERR(c, "INVALID_VALUE", path, "assignee id \"%s\" is listed twice", as->ids[j]);
                break;
            }
    }
    if (has_expr) {
        snprintf(path, sizeof path, "transitions[%zu].assignee.ids_expression", ti);
        check_expr(c, as->ids_expression, "EXPRESSION_INVALID", path, "ids_expression");
    }
    /* The expressions of the tasks' priority, due and follow-up times. */
    const struct {
        const char *field, *src;
    } task_exprs[] = {
        {"priority_expression", t->priority_expression},
        {"task_due_expression", t->task_due_expression},
        {"task_follow_up_expression", t->task_follow_up_expression},
    };
    for (size_t i = 0; i < sizeof task_exprs / sizeof task_exprs[0]; i++) {
        if (wf_str_empty(task_exprs[i].src))
            continue;
        snprintf(path, sizeof path, "transitions[%zu].%s", ti, task_exprs[i].field);
        check_expr(c, task_exprs[i].src, "EXPRESSION_INVALID", path, task_exprs[i].field);
    }

    const wf_completion *cp = &t->completion;
    snprintf(path, sizeof path, "transitions[%zu].completion.mode", ti);
    if (cp->mode != WF_JOIN_NONE && cp->mode != WF_JOIN_ALL && cp->mode != WF_JOIN_ANY &&
        cp->mode != WF_JOIN_QUORUM)
        ERR(c, "INVALID_VALUE", path, "completion mode %d is not known", cp->mode);
    else if ((cp->mode == WF_JOIN_ANY || cp->mode == WF_JOIN_QUORUM) &&
             (as->kind == WF_NET_ASSIGNEE_USER || as->kind == WF_NET_ASSIGNEE_GROUP))
        ERR(c, "INVALID_VALUE", path,
            "completion mode applies to USERS assignees; transition \"%s\" has one task",
            str(t->id));
    snprintf(path, sizeof path, "transitions[%zu].completion.quorum", ti);
    if (cp->mode == WF_JOIN_QUORUM) {
        if (cp->quorum < 1)
            ERR(c, "INVALID_VALUE", path, "QUORUM needs a quorum of at least 1");
        else if (as->n_ids > 0 && (size_t)cp->quorum > as->n_ids)
            ERR(c, "INVALID_VALUE", path, "quorum %d exceeds the %zu assignees", cp->quorum,
                as->n_ids);
    } else if (cp->quorum != 0) {
        ERR(c, "INVALID_VALUE", path, "quorum must be 0 unless the mode is QUORUM");
    }
}

/* A jq identifier of 1-64 characters (a for-each item or output name). */
static bool
var_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || isdigit((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

static void
check_for_each_name(vctx *c, size_t ti, const char *field, const char *v)
{
    char path[96];
    snprintf(path, sizeof path, "transitions[%zu].%s", ti, field);
    if (!wf_str_empty(v) && !var_name_ok(v))
        ERR(c, "INVALID_VALUE", path, "%s must be 1 to 64 letters, digits and _, not first a digit",
            field);
}

/* for_each of AUTO, USER or CALL transition t: a compiling expression, names,
 * the join. */
static void
check_for_each(vctx *c, size_t ti, const wf_transition *t)
{
    char path[96];
    const wf_completion *cp = &t->for_each_completion;
    snprintf(path, sizeof path, "transitions[%zu].for_each", ti);
    if (t->trigger == WF_TRIGGER_AUTO && wf_str_empty(t->job_type))
        ERR(c, "INVALID_VALUE", path,
            "for_each needs a job_type: a silent transition has no items");
    if (t->trigger == WF_TRIGGER_USER && t->assignee.kind == WF_NET_ASSIGNEE_USERS)
        ERR(c, "INVALID_VALUE", path,
            "for_each gives each item one task: the assignee must be USER or GROUP (an "
            "ids_expression may read the item), not USERS");
    check_expr(c, t->for_each, "EXPRESSION_INVALID", path, "for_each");
    check_for_each_name(c, ti, "for_each_item", t->for_each_item);
    check_for_each_name(c, ti, "for_each_output", t->for_each_output);
    snprintf(path, sizeof path, "transitions[%zu].for_each_completion.mode", ti);
    if (cp->mode != WF_JOIN_NONE && cp->mode != WF_JOIN_ALL && cp->mode != WF_JOIN_ANY &&
        cp->mode != WF_JOIN_QUORUM)
        ERR(c, "INVALID_VALUE", path, "completion mode %d is not known", cp->mode);
    snprintf(path, sizeof path, "transitions[%zu].for_each_completion.quorum", ti);
    if (cp->mode == WF_JOIN_QUORUM && cp->quorum < 1)
        ERR(c, "INVALID_VALUE", path, "QUORUM needs a quorum of at least 1");
    else if (cp->mode != WF_JOIN_QUORUM && cp->quorum != 0)
        ERR(c, "INVALID_VALUE", path, "quorum must be 0 unless the mode is QUORUM");
}

/* for_each's other fields without for_each. */
static void
check_no_for_each(vctx *c, size_t ti, const wf_transition *t)
{
    char path[96];
    snprintf(path, sizeof path, "transitions[%zu].for_each", ti);
    if (!wf_str_empty(t->for_each_item) || !wf_str_empty(t->for_each_output) ||
        t->for_each_sequential || t->for_each_completion.mode != WF_JOIN_NONE ||
        t->for_each_completion.quorum != 0)
        ERR(c, "INVALID_VALUE", path,
            "for_each_item, for_each_output, for_each_sequential and for_each_completion need "
            "for_each on transition \"%s\"",
            str(t->id));
}

/* A CALL transition names a definition key, a version that is not
 * negative, and mappings that compile. */
static void
check_call(vctx *c, size_t ti, const wf_transition *t)
{
    char path[96];
    snprintf(path, sizeof path, "transitions[%zu].call_definition_key", ti);
    if (wf_str_empty(t->call_key))
        ERR(c, "CALL_KEY_MISSING", path, "CALL transition \"%s\" needs a call_definition_key",
            str(t->id));
    else if (strlen(t->call_key) > WF_NET_MAX_ID_LEN || strchr(t->call_key, ' ') != NULL)
        ERR(c, "CALL_KEY_INVALID", path, "call_definition_key must be 1-%d bytes without spaces",
            WF_NET_MAX_ID_LEN);
    snprintf(path, sizeof path, "transitions[%zu].call_version", ti);
    if (t->call_version < 0)
        ERR(c, "CALL_VERSION_INVALID", path, "call_version must be 0 (the newest) or a version");
    if (!wf_str_empty(t->call_input)) {
        snprintf(path, sizeof path, "transitions[%zu].call_input_expression", ti);
        check_expr(c, t->call_input, "EXPRESSION_INVALID", path, "call_input_expression");
    }
    if (!wf_str_empty(t->call_output)) {
        snprintf(path, sizeof path, "transitions[%zu].call_output_expression", ti);
        check_expr(c, t->call_output, "EXPRESSION_INVALID", path, "call_output_expression");
    }
}

static void
check_not_call(vctx *c, size_t ti, const wf_transition *t)
{
    if (!wf_str_empty(t->call_key))
        conflict(c, ti, "call_definition_key", t, "CALL");
    if (t->call_version != 0)
        conflict(c, ti, "call_version", t, "CALL");
    if (!wf_str_empty(t->call_input))
        conflict(c, ti, "call_input_expression", t, "CALL");
    if (!wf_str_empty(t->call_output))
        conflict(c, ti, "call_output_expression", t, "CALL");
    if (t->call_strict)
        conflict(c, ti, "call_require_deployed", t, "CALL");
}

static void
check_auto(vctx *c, size_t ti, const wf_transition *t)
{
    char path[96];
    const wf_retry_policy *r = &t->retry;
    snprintf(path, sizeof path, "transitions[%zu].retry.max_attempts", ti);
    if (r->max_attempts < 0 || r->max_attempts > 1000)
        ERR(c, "INVALID_VALUE", path, "max_attempts must be 0 (default 3) to 1000");
    snprintf(path, sizeof path, "transitions[%zu].retry.initial_backoff", ti);
    if (r->initial_backoff_ms < 0)
        ERR(c, "INVALID_VALUE", path, "initial_backoff must not be negative");
    snprintf(path, sizeof path, "transitions[%zu].retry.multiplier", ti);
    if (!isfinite(r->multiplier) || (r->multiplier != 0 && r->multiplier < 1) ||
        r->multiplier > 1000)
        ERR(c, "INVALID_VALUE", path, "multiplier must be 0 (default 2) or between 1 and 1000");
    snprintf(path, sizeof path, "transitions[%zu].retry.max_backoff", ti);
    wf_retry_policy eff = wf_net_retry_effective(t);
    if (r->max_backoff_ms < 0)
        ERR(c, "INVALID_VALUE", path, "max_backoff must not be negative");
    else if (r->initial_backoff_ms >= 0 && eff.max_backoff_ms < eff.initial_backoff_ms)
        ERR(c, "INVALID_VALUE", path, "max_backoff must not be below initial_backoff");
    snprintf(path, sizeof path, "transitions[%zu].lease", ti);
    if (t->lease_ms < 0)
        ERR(c, "INVALID_VALUE", path, "lease must not be negative");
    if (!wf_str_empty(t->job_priority_expression)) {
        snprintf(path, sizeof path, "transitions[%zu].job_priority_expression", ti);
        check_expr(c, t->job_priority_expression, "EXPRESSION_INVALID", path,
                   "job_priority_expression");
    }
    if (!wf_str_empty(t->job_fairness_key_expression)) {
        snprintf(path, sizeof path, "transitions[%zu].job_fairness_key_expression", ti);
        check_expr(c, t->job_fairness_key_expression, "EXPRESSION_INVALID", path,
                   "job_fairness_key_expression");
    }
    if (!wf_str_empty(t->for_each))
        check_for_each(c, ti, t);
}

/* A resource name as DeclareResource takes it: 1-128 bytes of letters,
 * digits, '.', '_' and '-'. */
static bool
resource_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > WF_NET_MAX_RESOURCE_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static void
check_resource_use(vctx *c, size_t ti, size_t j, const wf_transition *t)
{
    char path[96];
    const wf_resource_use *u = &t->resources[j];
    snprintf(path, sizeof path, "transitions[%zu].resources[%zu].name", ti, j);
    if (wf_str_empty(u->name)) {
        ERR(c, "REQUIRED", path, "a resource of transition \"%s\" needs a name", str(t->id));
    } else if (!resource_name_ok(u->name)) {
        ERR(c, "INVALID_VALUE", path,
            "resource name \"%.64s\" must be 1-%d letters, digits, '.', '_' or '-'", u->name,
            WF_NET_MAX_RESOURCE_NAME);
    } else {
        for (size_t k = 0; k < j; k++)
            if (wf_str_eq(t->resources[k].name, u->name)) {
                ERR(c, "RESOURCE_DUPLICATE", path, "transition \"%s\" names resource \"%s\" twice",
                    str(t->id), u->name);
                break;
            }
    }
    if (!wf_str_empty(u->key_expression)) {
        snprintf(path, sizeof path, "transitions[%zu].resources[%zu].key_expression", ti, j);
        check_expr(c, u->key_expression, "EXPRESSION_INVALID", path, "key_expression");
    }
}

/* The resources of transition t: USER, AUTO with a job_type and CALL
 * transitions only, at most WF_NET_MAX_RESOURCE_USES. */
static void
check_resources(vctx *c, size_t ti, const wf_transition *t, wf_trigger tr)
{
    char path[96];
    if (t->n_resources == 0)
        return;
    snprintf(path, sizeof path, "transitions[%zu].resources", ti);
    if (tr != WF_TRIGGER_USER && tr != WF_TRIGGER_AUTO && tr != WF_TRIGGER_CALL) {
        conflict(c, ti, "resources", t, "USER, AUTO and CALL");
        return;
    }
    if (tr == WF_TRIGGER_AUTO && wf_str_empty(t->job_type))
        ERR(c, "INVALID_VALUE", path,
            "resources need a job_type: a silent transition holds nothing");
    if (t->n_resources > WF_NET_MAX_RESOURCE_USES) {
        ERR(c, "INVALID_VALUE", path, "a transition names at most %d resources",
            WF_NET_MAX_RESOURCE_USES);
        return;
    }
    for (size_t j = 0; j < t->n_resources; j++)
        check_resource_use(c, ti, j, t);
}

static void
check_triggers(vctx *c)
{
    const wf_net *net = c->net;
    char path[96];
    for (size_t ti = 0; ti < net->n_transitions; ti++) {
        const wf_transition *t = &net->transitions[ti];
        wf_trigger tr = t->trigger;
        snprintf(path, sizeof path, "transitions[%zu].trigger", ti);
        if (tr == 0) {
            ERR(c, "REQUIRED", path, "transition \"%s\" needs a trigger", str(t->id));
        } else if (tr != WF_TRIGGER_USER && tr != WF_TRIGGER_AUTO && tr != WF_TRIGGER_TIME &&
                   tr != WF_TRIGGER_MSG && tr != WF_TRIGGER_CALL) {
            ERR(c, "INVALID_VALUE", path, "trigger %d is not known", tr);
            tr = 0;
        }
        for (size_t j = 0; j < t->n_cancels; j++) {
            snprintf(path, sizeof path, "transitions[%zu].cancels[%zu]", ti, j);
            if (wf_str_empty(t->cancels[j]))
                ERR(c, "REQUIRED", path, "cancelled place id is empty");
            else if (wf_net_place_index(net, t->cancels[j]) < 0)
                ERR(c, "UNKNOWN_REFERENCE", path,
                    "transition \"%s\" cancels \"%s\", which is "
                    "not a place",
                    str(t->id), t->cancels[j]);
        }
        if (tr == 0)
            continue; /* no trigger: which fields conflict is unknowable */

        /* Each trigger's own fields ... */
        if (tr == WF_TRIGGER_USER) {
            check_user(c, ti, t);
            if (!wf_str_empty(t->for_each))
                check_for_each(c, ti, t);
        }
        if (tr == WF_TRIGGER_AUTO)
            check_auto(c, ti, t);
        if (tr == WF_TRIGGER_TIME) {
            bool has_due = !wf_str_empty(t->due_expression);
            snprintf(path, sizeof path, "transitions[%zu].delay", ti);
            if (t->delay_ms == 0 && !has_due)
                ERR(c, "TRIGGER_FIELD_MISSING", path,
                    "TIME transition \"%s\" needs a delay or a due_expression", str(t->id));
            else if (t->delay_ms != 0 && has_due)
                ERR(c, "TRIGGER_FIELD_CONFLICT", path,
                    "TIME transition \"%s\" sets both delay and due_expression", str(t->id));
            else if (t->delay_ms < 0)
                ERR(c, "INVALID_VALUE", path, "delay must be positive");
            if (has_due) {
                snprintf(path, sizeof path, "transitions[%zu].due_expression", ti);
                check_expr(c, t->due_expression, "EXPRESSION_INVALID", path, "due_expression");
            }
        }
        if (tr == WF_TRIGGER_MSG) {
            snprintf(path, sizeof path, "transitions[%zu].signal_name", ti);
            if (wf_str_empty(t->signal_name))
                ERR(c, "TRIGGER_FIELD_MISSING", path, "MSG transition \"%s\" needs a signal_name",
                    str(t->id));
            snprintf(path, sizeof path, "transitions[%zu].correlation", ti);
            if (t->correlation != WF_CORRELATION_UNSET &&
                t->correlation != WF_CORRELATION_INSTANCE &&
                t->correlation != WF_CORRELATION_AGGREGATE)
                ERR(c, "INVALID_VALUE", path, "correlation %d is not known", t->correlation);
        }
        if (tr == WF_TRIGGER_CALL) {
            check_call(c, ti, t);
            if (!wf_str_empty(t->for_each))
                check_for_each(c, ti, t);
        }
        check_resources(c, ti, t, tr);
        /* ... and nobody else's. */
        if (tr != WF_TRIGGER_CALL)
            check_not_call(c, ti, t);
        if (tr != WF_TRIGGER_USER) {
            if (t->assignee.kind != 0 || t->assignee.n_ids > 0 ||
                !wf_str_empty(t->assignee.ids_expression))
                conflict(c, ti, "assignee", t, "USER");
            if (t->completion.mode != WF_JOIN_NONE || t->completion.quorum != 0)
                conflict(c, ti, "completion", t, "USER");
            if (!wf_str_empty(t->priority_expression))
                conflict(c, ti, "priority_expression", t, "USER");
            if (!wf_str_empty(t->task_due_expression))
                conflict(c, ti, "task_due_expression", t, "USER");
            if (!wf_str_empty(t->task_follow_up_expression))
                conflict(c, ti, "task_follow_up_expression", t, "USER");
        }
        if (tr != WF_TRIGGER_AUTO) {
            if (!wf_str_empty(t->job_type))
                conflict(c, ti, "job_type", t, "AUTO");
            if (t->retry.max_attempts != 0 || t->retry.initial_backoff_ms != 0 ||
                t->retry.multiplier != 0 || t->retry.max_backoff_ms != 0)
                conflict(c, ti, "retry", t, "AUTO");
            if (t->lease_ms != 0)
                conflict(c, ti, "lease", t, "AUTO");
            if (!wf_str_empty(t->compensation_job_type))
                conflict(c, ti, "compensation_job_type", t, "AUTO");
            if (!wf_str_empty(t->job_priority_expression))
                conflict(c, ti, "job_priority_expression", t, "AUTO");
            if (!wf_str_empty(t->job_fairness_key_expression))
                conflict(c, ti, "job_fairness_key_expression", t, "AUTO");
        }
        if (tr != WF_TRIGGER_AUTO && tr != WF_TRIGGER_USER && tr != WF_TRIGGER_CALL &&
            !wf_str_empty(t->for_each))
            conflict(c, ti, "for_each", t, "AUTO, USER and CALL");
        if (wf_str_empty(t->for_each))
            check_no_for_each(c, ti, t);
        if (tr != WF_TRIGGER_TIME) {
            if (t->delay_ms != 0)
                conflict(c, ti, "delay", t, "TIME");
            if (!wf_str_empty(t->due_expression))
                conflict(c, ti, "due_expression", t, "TIME");
        }
        if (tr != WF_TRIGGER_MSG) {
            if (!wf_str_empty(t->signal_name))
                conflict(c, ti, "signal_name", t, "MSG");
            if (t->correlation != WF_CORRELATION_UNSET)
                conflict(c, ti, "correlation", t, "MSG");
        }
    }
}

wf_code
wf_net_validate(const wf_net *net, wf_arena *a, wf_validation_error **errors, size_t *n_errors,
                wf_error *err)
{
    vctx c = {.net = net, .f = {.a = a}};
    c.tail = &c.exprs;
    check_header(&c);
    if (net->n_places > WF_NET_MAX_NODES || net->n_transitions > WF_NET_MAX_NODES ||
        net->n_arcs > WF_NET_MAX_ARCS) {
        /* The checks below are quadratic; refuse before running them. */
        ERR(&c, "TOO_MANY_ELEMENTS", "",
            "a net holds at most %d places, %d transitions and %d arcs", WF_NET_MAX_NODES,
            WF_NET_MAX_NODES, WF_NET_MAX_ARCS);
    } else {
        check_nodes(&c);
        check_arcs(&c);
        check_transition_arcs(&c);
        check_paths(&c);
        check_triggers(&c);
    }
    wf_code rc = compile_exprs(&c, err);
    if (rc != WF_OK)
        return rc;
    if (c.f.oom)
        return wf_error_nomem(err);
    *errors = c.f.v;
    *n_errors = c.f.n;
    return WF_OK;
}

static bool
unseen(const char *src)
{
    return !wf_str_empty(src) && !wf_expr_seen(src);
}

bool
wf_net_has_unseen_expressions(const wf_net *net)
{
    for (size_t i = 0; i < net->n_arcs; i++)
        if (unseen(net->arcs[i].guard))
            return true;
    for (size_t i = 0; i < net->n_transitions; i++) {
        const wf_transition *t = &net->transitions[i];
        if (unseen(t->assignee.ids_expression) || unseen(t->priority_expression) ||
            unseen(t->task_due_expression) || unseen(t->task_follow_up_expression) ||
            unseen(t->due_expression) || unseen(t->job_priority_expression) ||
            unseen(t->job_fairness_key_expression) || unseen(t->for_each) ||
            unseen(t->call_input) || unseen(t->call_output))
            return true;
        for (size_t k = 0; k < t->n_resources; k++)
            if (unseen(t->resources[k].key_expression))
                return true;
    }
    for (size_t i = 0; i < net->n_steps; i++) {
        const wf_step *s = &net->steps[i];
        if (unseen(s->assignee.ids_expression) || unseen(s->priority_expression) ||
            unseen(s->task_due_expression) || unseen(s->task_follow_up_expression) ||
            unseen(s->due_expression) || unseen(s->job_priority_expression) ||
            unseen(s->for_each) || unseen(s->call_input) || unseen(s->call_output) ||
            unseen(s->job_fairness_key_expression))
            return true;
        for (size_t k = 0; k < s->n_next; k++)
            if (unseen(s->next[k].guard))
                return true;
        for (size_t k = 0; k < s->n_resources; k++)
            if (unseen(s->resources[k].key_expression))
                return true;
    }
    return false;
}

bool
wf_net_has_errors(const wf_validation_error *errors, size_t n_errors)
{
    for (size_t i = 0; i < n_errors; i++)
        if (errors[i].severity == WF_SEVERITY_ERROR)
            return true;
    return false;
}
