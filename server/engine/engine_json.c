/*
 * engine_json: JSON variables of the engine (validation, normalisation,
 * top-level merge) over jansson.
 *
 * Owns nothing long-lived: every jansson value is released before return
 * and results are copied into the caller's arena. Messages never quote
 * jansson's text beyond the position of the error, so no library wording
 * leaks into a gRPC status.
 */
#include "engine_json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

char *
wf_engine_json_dump(wf_arena *arena, const json_t *value)
{
    char *s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        return NULL;
    char *copy = wf_arena_strdup(arena, s);
    free(s);
    return copy;
}

/* Parses text into an object (NULL/"" = {}). The caller releases *out. */
static wf_code
parse_object(const char *text, const char *field, json_t **out, wf_error *err)
{
    if (text == NULL || text[0] == '\0') {
        *out = json_object();
        return *out != NULL ? WF_OK : wf_error_set(err, WF_E_INTERNAL, "out of memory");
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
    *out = v;
    return WF_OK;
}

wf_code
wf_engine_json_object(wf_arena *arena, const char *text, const char *field, const char **out,
                      wf_error *err)
{
    json_t *v;
    wf_code rc = parse_object(text, field, &v, err);
    if (rc != WF_OK)
        return rc;
    if (out != NULL) {
        *out = wf_engine_json_dump(arena, v);
        if (*out == NULL)
            rc = wf_error_set(err, WF_E_INTERNAL, "out of memory");
    }
    json_decref(v);
    return rc;
}

wf_code
wf_engine_json_merge(wf_arena *arena, const char *base, const char *patch, const char **out,
                     wf_error *err)
{
    json_t *b = NULL, *p = NULL;
    wf_code rc = parse_object(base, "the instance variables", &b, err);
    if (rc == WF_OK)
        rc = parse_object(patch, "variables_json", &p, err);
    /* json_object_update keeps a null value as a key with null: the
     * documented merge rule. */
    if (rc == WF_OK && json_object_update(b, p) != 0)
        rc = wf_error_set(err, WF_E_INTERNAL, "out of memory");
    if (rc == WF_OK) {
        *out = wf_engine_json_dump(arena, b);
        if (*out == NULL)
            rc = wf_error_set(err, WF_E_INTERNAL, "out of memory");
    }
    json_decref(b);
    json_decref(p);
    return rc;
}
