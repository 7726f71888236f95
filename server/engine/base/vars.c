/*
 * vars: JSON variables of the engine (validation, normalisation,
 * top-level merge) over jansson.
 *
 * Owns nothing long-lived: every jansson value is released before return
 * and results are copied into the caller's arena. Messages never quote
 * jansson's text beyond the position of the error, so no library wording
 * leaks into a gRPC status.
 */
#include "vars.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

char *
wf_vars_dump(wf_arena *arena, const json_t *value)
{
    char *s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        return NULL;
    char *copy = wf_arena_strdup(arena, s);
    free(s);
    return copy;
}

char *
wf_vars_quote(wf_arena *arena, const char *s)
{
    json_t *v = json_string(s);
    char *out = v != NULL ? wf_vars_dump(arena, v) : NULL;
    json_decref(v);
    return out;
}

/* Deepest nesting accepted in variables: below the 256 levels libjq's parser
 * takes, so every expression can read what was accepted. */
#define MAX_DEPTH 128

/* Nesting depth of v, counting containers; stops counting past limit. */
static int
depth(json_t *v, int limit)
{
    if (limit < 0 || !(json_is_object(v) || json_is_array(v)))
        return 0;
    int deepest = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            int d = depth(x, limit - 1);
            if (d > deepest)
                deepest = d;
        }
    } else {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            int d = depth(x, limit - 1);
            if (d > deepest)
                deepest = d;
        }
    }
    return deepest + 1;
}

wf_code
wf_vars_load_object(const char *text, const char *field, json_t **out, wf_error *err)
{
    if (text == NULL || text[0] == '\0') {
        *out = json_object();
        return *out != NULL ? WF_OK : wf_error_nomem(err);
    }
    json_error_t je;
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (v == NULL)
        return wf_error_set(err, WF_E_INVALID_JSON,
                            "%s is not valid JSON (error at line %d, column %d)", field, je.line,
                            je.column);
    if (!json_is_object(v)) {
        json_decref(v);
        return wf_error_set(err, WF_E_INVALID_JSON, "%s must be a JSON object", field);
    }
    if (depth(v, MAX_DEPTH) > MAX_DEPTH) {
        json_decref(v);
        return wf_error_set(err, WF_E_INVALID_JSON, "%s nests deeper than %d levels", field,
                            MAX_DEPTH);
    }
    *out = v;
    return WF_OK;
}

wf_code
wf_vars_object(wf_arena *arena, const char *text, const char *field, const char **out,
               wf_error *err)
{
    json_t *v;
    wf_code rc = wf_vars_load_object(text, field, &v, err);
    if (rc != WF_OK)
        return rc;
    if (out != NULL) {
        *out = wf_vars_dump(arena, v);
        if (*out == NULL)
            rc = wf_error_nomem(err);
    }
    json_decref(v);
    return rc;
}

wf_code
wf_vars_merge(wf_arena *arena, const char *base, const char *patch, const char **out, wf_error *err)
{
    json_t *b = NULL, *p = NULL;
    wf_code rc = wf_vars_load_object(base, "the instance variables", &b, err);
    if (rc == WF_OK)
        rc = wf_vars_load_object(patch, "variables_json", &p, err);
    /* json_object_update keeps a null value as a key with null: the
     * documented merge rule. */
    if (rc == WF_OK && json_object_update(b, p) != 0)
        rc = wf_error_nomem(err);
    if (rc == WF_OK) {
        *out = wf_vars_dump(arena, b);
        if (*out == NULL)
            rc = wf_error_nomem(err);
    }
    json_decref(b);
    json_decref(p);
    return rc;
}

wf_code
wf_vars_pick(wf_arena *arena, const char *text, const char *const *names, size_t n,
             const char **out, wf_error *err)
{
    json_t *v = NULL;
    wf_code rc = wf_vars_load_object(text, "the instance variables", &v, err);
    if (rc != WF_OK)
        return rc;
    json_t *picked = json_object();
    for (size_t i = 0; i < n && picked != NULL; i++) {
        json_t *x = json_object_get(v, names[i]);
        if (x != NULL && json_object_set(picked, names[i], x) != 0) {
            json_decref(picked);
            picked = NULL;
        }
    }
    *out = picked != NULL ? wf_vars_dump(arena, picked) : NULL;
    if (*out == NULL)
        rc = wf_error_nomem(err);
    json_decref(picked);
    json_decref(v);
    return rc;
}
