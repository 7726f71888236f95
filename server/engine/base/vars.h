/*
 * vars: the engine's handling of JSON variables (docs/behaviour.md,
 * "Request limits").
 *
 * Variables travel as JSON object text. The engine validates every input
 * (INVALID_JSON for anything but an object; "" and NULL mean {}), stores a
 * compact normalised text, and merges outputs into an instance at the top
 * level: each key replaces the key of the same name, other keys stay, and
 * a key set to null stays with the value null. All results live in the
 * caller's arena. Thread-safe (jansson is, for unshared values).
 */
#ifndef WF_VARS_H
#define WF_VARS_H

#include <stddef.h>

#include <jansson.h>

#include "wf_arena.h"
#include "wf_error.h"

/* Checks that text (NULL or "" = {}) is a JSON object. field names the
 * request field in the message ("variables_json"). On WF_OK *out (when
 * out is non-NULL) is the compact text of the object, in arena. Fails
 * with WF_E_INVALID_JSON. */
wf_code wf_vars_object(wf_arena *arena, const char *text, const char *field, const char **out,
                       wf_error *err);

/* Parses text into a jansson object (NULL/"" = {}), refusing non-objects
 * and nesting deeper than jq can read (WF_E_INVALID_JSON). On WF_OK the
 * caller releases *out with json_decref. The one parser of variables. */
wf_code wf_vars_load_object(const char *text, const char *field, json_t **out, wf_error *err);

/* Top-level merge of patch into base (both JSON object text, NULL/"" =
 * {}); *out is the compact result in arena. WF_E_INVALID_JSON when either
 * is not an object. */
wf_code wf_vars_merge(wf_arena *arena, const char *base, const char *patch, const char **out,
                      wf_error *err);

/* The top-level keys names[0..n) of the object text (NULL/"" = {}), as
 * compact object text in arena; names the object lacks are left out.
 * WF_E_INVALID_JSON when text is not an object. */
wf_code wf_vars_pick(wf_arena *arena, const char *text, const char *const *names, size_t n,
                     const char **out, wf_error *err);

/* Compact text of a jansson value built by the caller, copied into arena;
 * NULL when out of memory. Does not steal the reference. */
struct json_t;
char *wf_vars_dump(wf_arena *arena, const struct json_t *value);

/* The JSON text of the string s ("a\"b" for a"b), in arena; NULL when s
 * is not UTF-8 or out of memory. */
char *wf_vars_quote(wf_arena *arena, const char *s);

#endif /* WF_VARS_H */
