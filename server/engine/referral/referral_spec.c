/*
 * referral_spec: the AssignTo specification: its validation (every
 * violation reported, with the request path of the field), the
 * evaluation of its ids_expression and its persisted encoding.
 *
 * The encoding is the engine's own JSON document, stored opaquely in
 * instance.on_all_completed and read back when the join fires, so the
 * stored form never depends on the wire protocol:
 *   {"v":1,"parent":"..","key":"..","title":"..","kind":1,"ids":[..],
 *    "expr":"..","vars":"{..}","join":1,"quorum":0,"by":"<actor>",
 *    "next":{...}}
 * where "by" is the actor of the AssignTo that carried the spec: it stays
 * the assigner of the tasks the join creates later. "expr" is present only
 * with an ids_expression, so documents written before it read the same.
 */
#include "referral.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vars.h"
#include "expr.h"

#define SPEC_VERSION 1
#define MAX_TITLE 512
#define MAX_ID 128
#define MAX_DEPTH 32 /* on_all_completed chains deeper than this are refused */

/* ---- validation ------------------------------------------------------------ */

typedef struct vstate {
    const wf_ref_ctx *ctx;
    wf_error *err;
    wf_code first; /* first failure; WF_OK while none */
} vstate;

static void violation(vstate *v, wf_code code, const char *prefix, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
violation(vstate *v, wf_code code, const char *prefix, const char *field, const char *fmt, ...)
{
    char path[256], msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s%s", prefix, field);
    if (v->ctx->violation != NULL)
        v->ctx->violation(v->ctx->violation_arg, path, wf_code_reason(code), msg);
    if (v->first == WF_OK)
        v->first = wf_error_set(v->err, code, "%s: %s", path, msg);
}

/* 1..max bytes, printable ASCII; no spaces when strict. */
static bool
printable(const char *s, size_t max, bool strict)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e || (strict && c == ' '))
            return false;
    }
    return true;
}

/* 1..max bytes of text for people (titles): any UTF-8 but control
 * characters. Protobuf strings are UTF-8 already; only the length and the
 * control bytes (which would break logs and terminals) are checked here. */
static bool
text(const char *s, size_t max)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

bool
wf_referral_assignee_id_ok(const char *id)
{
    return printable(id, MAX_ID, false);
}

static size_t
task_count(const wf_assign_spec *s)
{
    return s->kind == WF_REF_ASSIGNEE_USERS ? s->n_ids : 1;
}

static bool
has_expr(const wf_assign_spec *s)
{
    return s->ids_expression != NULL && s->ids_expression[0] != '\0';
}

/* With an expression the ids come later (wf_referral_spec_resolve); now
 * only that it compiles, and that no ids compete with it. */
static void
check_expr(vstate *v, const wf_assign_spec *s, const char *p)
{
    if (s->n_ids > 0)
        violation(v, WF_E_INVALID_ARGUMENT, p, "assignee.ids_expression",
                  "must be empty when ids are listed");
    wf_expr *e;
    wf_error cerr;
    wf_code rc = wf_expr_cached(s->ids_expression, &e, &cerr);
    if (rc == WF_E_INVALID_ARGUMENT) {
        violation(v, rc, p, "assignee.ids_expression", "does not compile: %s", cerr.msg);
        return;
    }
    if (rc != WF_OK) {
        /* Not the request's fault (a worker that could not start): no
         * violation, the code as it is. */
        if (v->first == WF_OK)
            v->first = wf_error_set(v->err, rc, "%s", cerr.msg);
        return;
    }
    wf_expr_free(e);
}

static void
check_assignee(vstate *v, const wf_assign_spec *s, const char *p)
{
    if (s->kind < WF_REF_ASSIGNEE_USER || s->kind > WF_REF_ASSIGNEE_USERS) {
        violation(v, WF_E_INVALID_ARGUMENT, p, "assignee.kind", "must be USER, GROUP or USERS");
        return;
    }
    if (has_expr(s)) {
        check_expr(v, s, p);
        return;
    }
    if (s->kind != WF_REF_ASSIGNEE_USERS && s->n_ids != 1)
        violation(v, WF_E_INVALID_ARGUMENT, p, "assignee.ids",
                  "must hold exactly one id for USER and GROUP");
    if (s->kind == WF_REF_ASSIGNEE_USERS && s->n_ids == 0)
        violation(v, WF_E_INVALID_ARGUMENT, p, "assignee.ids",
                  "must hold at least one id for USERS");
    for (size_t i = 0; i < s->n_ids; i++) {
        char f[64];
        snprintf(f, sizeof f, "assignee.ids[%zu]", i);
        if (!wf_referral_assignee_id_ok(s->ids[i]))
            violation(v, WF_E_INVALID_ARGUMENT, p, f, "must be 1 to 128 printable characters");
        for (size_t j = 0; j < i; j++)
            if (s->ids[i] != NULL && s->ids[j] != NULL && strcmp(s->ids[i], s->ids[j]) == 0)
                violation(v, WF_E_INVALID_ARGUMENT, p, f, "repeats \"%s\"", s->ids[i]);
    }
}

static void
check_join(vstate *v, const wf_assign_spec *s, const char *p)
{
    if (s->join_mode == WF_JOIN_QUORUM && has_expr(s)) {
        /* The upper bound waits for the ids (wf_referral_spec_resolve). */
        if (s->join_quorum < 1)
            violation(v, WF_E_INVALID_ARGUMENT, p, "join.quorum",
                      "must be between 1 and the number of tasks");
    } else if (s->join_mode == WF_JOIN_QUORUM) {
        size_t n = task_count(s);
        if (s->join_quorum < 1 || (size_t)s->join_quorum > n)
            violation(v, WF_E_INVALID_ARGUMENT, p, "join.quorum",
                      "must be between 1 and the number of tasks (%zu)", n);
    } else if (s->join_mode < WF_JOIN_NONE || s->join_mode > WF_JOIN_QUORUM) {
        violation(v, WF_E_INVALID_ARGUMENT, p, "join.mode", "must be ALL, ANY or QUORUM");
    } else if (s->join_quorum != 0) {
        violation(v, WF_E_INVALID_ARGUMENT, p, "join.quorum", "must be 0 unless mode is QUORUM");
    }
}

static void
check_one(vstate *v, const wf_assign_spec *s, bool nested, const char *p)
{
    if (!nested && (s->parent_id == NULL || s->parent_id[0] == '\0'))
        violation(v, WF_E_INVALID_ARGUMENT, p, "parent_instance_id", "is required");
    if (s->definition_key != NULL && s->definition_key[0] != '\0' &&
        !printable(s->definition_key, MAX_ID, true))
        violation(v, WF_E_INVALID_ARGUMENT, p, "definition_key",
                  "must be 1 to 128 printable characters without spaces");
    if (!text(s->title, MAX_TITLE))
        violation(v, WF_E_INVALID_ARGUMENT, p, "title",
                  "must be 1 to 512 bytes of text without control characters");
    check_assignee(v, s, p);
    check_join(v, s, p);
    if (s->has_priority && (s->priority < 0 || s->priority > WF_TASK_PRIORITY_MAX))
        violation(v, WF_E_INVALID_ARGUMENT, p, "priority", "must be 0 to 100");
    if (s->follow_up_at != 0 && s->due_at != 0 && s->follow_up_at > s->due_at)
        violation(v, WF_E_INVALID_ARGUMENT, p, "follow_up_at", "must not be after due_at");
    wf_error jerr;
    char f[300];
    snprintf(f, sizeof f, "%svariables_json", p);
    if (wf_vars_object(v->ctx->arena, s->variables_json, f, NULL, &jerr) != WF_OK)
        violation(v, jerr.code, p, "variables_json", "must be a JSON object");
}

wf_code
wf_referral_spec_validate(const wf_ref_ctx *ctx, const wf_assign_spec *spec, bool nested,
                          wf_error *err)
{
    vstate v = {ctx, err, WF_OK};
    char prefix[256] = "";
    int depth = 0;
    for (const wf_assign_spec *s = spec; s != NULL; s = s->next, depth++) {
        if (depth > MAX_DEPTH) {
            violation(&v, WF_E_INVALID_ARGUMENT, "", "on_all_completed",
                      "is nested more than %d levels deep", MAX_DEPTH);
            break;
        }
        /* Long chains keep their innermost path short rather than cut. */
        size_t len = strlen(prefix);
        if (depth > 0 && len + 17 < sizeof prefix)
            snprintf(prefix + len, sizeof prefix - len, "on_all_completed.");
        check_one(&v, s, nested || depth > 0, prefix);
    }
    return v.first;
}

/* ---- ids_expression ------------------------------------------------------------ */

wf_code
wf_referral_spec_resolve(const wf_ref_ctx *ctx, const wf_assign_spec *spec, const char *vars_json,
                         wf_assign_spec *out, wf_error *err)
{
    vstate v = {ctx, err, WF_OK};
    wf_expr *e;
    char **ids = NULL;
    size_t n = 0;
    wf_code rc = wf_expr_cached(spec->ids_expression, &e, err);
    if (rc == WF_OK) {
        rc = wf_expr_eval_strings(e, vars_json, ctx->arena, &ids, &n, err);
        wf_expr_free(e);
    }
    if (rc != WF_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        /* A runtime error or a result of the wrong type is the request's;
         * TOO_LARGE and EXPRESSION_LIMIT keep their own codes. */
        if (rc != WF_E_INVALID_ARGUMENT)
            return wf_error_set(err, rc, "assignee.ids_expression: %s", msg);
        violation(&v, rc, "", "assignee.ids_expression", "%s", msg);
        return v.first;
    }
    if (n == 0) {
        violation(&v, WF_E_INVALID_ARGUMENT, "", "assignee.ids_expression",
                  "gave no id; the referral would have no assignee");
        return v.first;
    }
    *out = *spec;
    out->ids = (const char *const *)ids;
    out->n_ids = n;
    out->ids_expression = NULL;
    if (out->kind != WF_REF_ASSIGNEE_USERS && n != 1)
        violation(&v, WF_E_INVALID_ARGUMENT, "", "assignee.ids_expression",
                  "gave %zu ids; USER and GROUP take exactly one", n);
    for (size_t i = 0; i < n; i++)
        if (!wf_referral_assignee_id_ok(ids[i])) {
            violation(&v, WF_E_INVALID_ARGUMENT, "", "assignee.ids_expression",
                      "gave \"%.64s\", which is not 1 to 128 printable characters", ids[i]);
            break;
        }
    check_join(&v, out, "");
    return v.first;
}

/* ---- encoding ---------------------------------------------------------------- */

static json_t *
encode_one(const wf_assign_spec *s, const char *by, int depth)
{
    if (s->assigned_by != NULL)
        by = s->assigned_by;
    json_t *ids = json_array();
    for (size_t i = 0; ids != NULL && i < s->n_ids; i++)
        json_array_append_new(ids, json_string(s->ids[i]));
    json_t *o =
        json_pack("{s:i,s:s,s:s,s:s,s:i,s:o,s:s,s:i,s:i,s:s}", "v", SPEC_VERSION, "parent",
                  s->parent_id != NULL ? s->parent_id : "", "key",
                  s->definition_key != NULL ? s->definition_key : "", "title",
                  s->title != NULL ? s->title : "", "kind", (int)s->kind, "ids", ids, "vars",
                  s->variables_json != NULL ? s->variables_json : "", "join", (int)s->join_mode,
                  "quorum", (int)s->join_quorum, "by", by != NULL ? by : "");
    if (o != NULL && has_expr(s) &&
        json_object_set_new(o, "expr", json_string(s->ids_expression)) != 0) {
        json_decref(o);
        return NULL;
    }
    /* The inbox fields, only when set (older encodings have none). */
    if (o != NULL &&
        ((s->has_priority && json_object_set_new(o, "priority", json_integer(s->priority)) != 0) ||
         (s->due_at != 0 && json_object_set_new(o, "due", json_integer(s->due_at)) != 0) ||
         (s->follow_up_at != 0 &&
          json_object_set_new(o, "followUp", json_integer(s->follow_up_at)) != 0))) {
        json_decref(o);
        return NULL;
    }
    if (o != NULL && s->next != NULL && depth < MAX_DEPTH) {
        json_t *next = encode_one(s->next, by, depth + 1);
        if (next == NULL || json_object_set_new(o, "next", next) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

wf_code
wf_referral_spec_encode(wf_arena *arena, const wf_assign_spec *spec, const char *by,
                        unsigned char **bytes, size_t *len, wf_error *err)
{
    json_t *o = encode_one(spec, by, 0);
    char *text = o != NULL ? wf_vars_dump(arena, o) : NULL;
    json_decref(o);
    if (text == NULL)
        return wf_error_nomem(err);
    *bytes = (unsigned char *)text;
    *len = strlen(text);
    return WF_OK;
}

static wf_code
decode_one(wf_arena *a, json_t *o, int depth, wf_assign_spec **out, wf_error *err)
{
    const char *parent, *key, *title, *vars, *by, *expr = NULL;
    int v, kind, join, quorum;
    json_t *ids, *next = NULL;
    if (depth > MAX_DEPTH ||
        json_unpack(o, "{s:i,s:s,s:s,s:s,s:i,s:o,s?s,s:s,s:i,s:i,s:s,s?o}", "v", &v, "parent",
                    &parent, "key", &key, "title", &title, "kind", &kind, "ids", &ids, "expr",
                    &expr, "vars", &vars, "join", &join, "quorum", &quorum, "by", &by, "next",
                    &next) != 0 ||
        v != SPEC_VERSION || !json_is_array(ids))
        return wf_error_set(err, WF_E_INTERNAL, "a stored referral specification is unreadable");
    wf_assign_spec *s = wf_arena_calloc(a, 1, sizeof *s);
    const char **idv = wf_arena_calloc(a, json_array_size(ids) + 1, sizeof *idv);
    if (s == NULL || idv == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        idv[i] = wf_arena_strdup(a, id != NULL ? id : "");
    }
    s->parent_id = wf_arena_strdup(a, parent);
    s->definition_key = wf_arena_strdup(a, key);
    s->title = wf_arena_strdup(a, title);
    s->kind = (wf_ref_assignee)kind;
    s->ids = idv;
    s->n_ids = json_array_size(ids);
    s->ids_expression = expr != NULL ? wf_arena_strdup(a, expr) : NULL;
    s->variables_json = wf_arena_strdup(a, vars);
    s->join_mode = (wf_join_mode)join;
    s->join_quorum = quorum;
    s->assigned_by = by[0] != '\0' ? wf_arena_strdup(a, by) : NULL;
    json_t *prio = json_object_get(o, "priority");
    s->has_priority = json_is_integer(prio);
    s->priority = s->has_priority ? (int32_t)json_integer_value(prio) : 0;
    s->due_at = json_integer_value(json_object_get(o, "due"));
    s->follow_up_at = json_integer_value(json_object_get(o, "followUp"));
    if (next != NULL) {
        wf_code rc = decode_one(a, next, depth + 1, &s->next, err);
        if (rc != WF_OK)
            return rc;
    }
    *out = s;
    return WF_OK;
}

wf_code
wf_referral_spec_decode(wf_arena *arena, const unsigned char *bytes, size_t len,
                        wf_assign_spec **out, wf_error *err)
{
    json_error_t je;
    json_t *o = json_loadb((const char *)bytes, len, 0, &je);
    if (o == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "a stored referral specification is unreadable");
    wf_code rc = decode_one(arena, o, 0, out, err);
    json_decref(o);
    return rc;
}
