/*
 * net: the definition model, its canonical JSON encoding and content hash.
 */
#include "net.h"
#include "wf_str.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* ---- model helpers -------------------------------------------------------- */

bool
wf_net_is_silent(const wf_transition *t)
{
    return t->trigger == WF_TRIGGER_AUTO && wf_str_empty(t->job_type);
}

int32_t
wf_net_arc_weight(const wf_arc *a)
{
    return a->weight == 0 ? 1 : a->weight;
}

wf_retry_policy
wf_net_retry_effective(const wf_transition *t)
{
    wf_retry_policy r = t->retry;
    if (r.max_attempts == 0)
        r.max_attempts = WF_NET_DEFAULT_MAX_ATTEMPTS;
    if (r.initial_backoff_ms == 0)
        r.initial_backoff_ms = WF_NET_DEFAULT_INITIAL_BACKOFF_MS;
    if (r.multiplier == 0)
        r.multiplier = WF_NET_DEFAULT_MULTIPLIER;
    if (r.max_backoff_ms == 0)
        r.max_backoff_ms = WF_NET_DEFAULT_MAX_BACKOFF_MS;
    return r;
}

int64_t
wf_net_lease_effective(const wf_transition *t)
{
    return t->lease_ms == 0 ? WF_NET_DEFAULT_LEASE_MS : t->lease_ms;
}

static bool
same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

const char *
wf_net_trigger_name(wf_trigger t)
{
    switch (t) {
    case WF_TRIGGER_USER:
        return "USER";
    case WF_TRIGGER_AUTO:
        return "AUTO";
    case WF_TRIGGER_TIME:
        return "TIME";
    case WF_TRIGGER_MSG:
        return "MSG";
    case WF_TRIGGER_CALL:
        return "CALL";
    }
    return "UNSPECIFIED";
}

int
wf_net_place_index(const wf_net *net, const char *id)
{
    if (wf_str_empty(id))
        return -1;
    for (size_t i = 0; i < net->n_places; i++)
        if (same(net->places[i].id, id))
            return (int)i;
    return -1;
}

int
wf_net_transition_index(const wf_net *net, const char *id)
{
    if (wf_str_empty(id))
        return -1;
    for (size_t i = 0; i < net->n_transitions; i++)
        if (same(net->transitions[i].id, id))
            return (int)i;
    return -1;
}

/* ---- enum names ------------------------------------------------------------ */

/* Index = enum value; NULL = no name (unset). */
static const char *const place_kinds[] = {NULL, "START", "NORMAL", "END"};
static const char *const terminations[] = {NULL, "EXPLICIT", "IMPLICIT"};
static const char *const triggers[] = {NULL, "USER", "AUTO", "TIME", "MSG", "CALL"};
static const char *const assignee_kinds[] = {NULL, "USER", "GROUP", "USERS"};
static const char *const completion_modes[] = {NULL, "ALL", "ANY", "QUORUM"};
static const char *const correlations[] = {NULL, "INSTANCE", "AGGREGATE"};
#define NAMES(t) t, (int)(sizeof t / sizeof t[0])

static const char *
enum_name(const char *const *names, int n, int v)
{
    return v > 0 && v < n ? names[v] : NULL;
}

/* -1 for an unknown name. */
static int
enum_value(const char *const *names, int n, const char *s)
{
    for (int i = 1; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* ---- encoding -------------------------------------------------------------- */

/* Each setter leaves unset values out; a failed allocation is noticed once
 * at the end (jansson returns -1 / NULL and the document stays partial). */
typedef struct enc {
    bool oom;
} enc;

static void
put(enc *e, json_t *obj, const char *key, json_t *v)
{
    if (v == NULL || json_object_set_new(obj, key, v) != 0)
        e->oom = true;
}

static void
put_str(enc *e, json_t *obj, const char *key, const char *s)
{
    if (!wf_str_empty(s))
        put(e, obj, key, json_string(s));
}

static void
put_int(enc *e, json_t *obj, const char *key, int64_t v)
{
    if (v != 0)
        put(e, obj, key, json_integer(v));
}

static void
put_enum(enc *e, json_t *obj, const char *key, const char *name)
{
    if (name != NULL)
        put(e, obj, key, json_string(name));
}

static void
put_strs(enc *e, json_t *obj, const char *key, const char **v, size_t n)
{
    if (n == 0)
        return;
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < n; i++)
        if (json_array_append_new(arr, json_string(v[i] ? v[i] : "")) != 0)
            e->oom = true;
    put(e, obj, key, arr);
}

static void
encode_user(enc *e, json_t *o, const wf_assignee *as, const wf_completion *cp, bool user)
{
    if (as->kind != 0 || as->n_ids > 0 || !wf_str_empty(as->ids_expression)) {
        json_t *a = json_object();
        put(e, o, "assignee", a);
        if (a != NULL) {
            put_enum(e, a, "kind", enum_name(NAMES(assignee_kinds), (int)as->kind));
            put_strs(e, a, "ids", as->ids, as->n_ids);
            put_str(e, a, "ids_expression", as->ids_expression);
        }
    }
    wf_join_mode mode = cp->mode;
    if (mode == WF_JOIN_NONE && user)
        mode = WF_JOIN_ALL;
    if (mode != WF_JOIN_NONE || cp->quorum != 0) {
        json_t *c = json_object();
        put(e, o, "completion", c);
        if (c != NULL) {
            put_enum(e, c, "mode", enum_name(NAMES(completion_modes), (int)mode));
            put_int(e, c, "quorum", cp->quorum);
        }
    }
}

static void
encode_retry(enc *e, json_t *o, wf_retry_policy r)
{
    if (r.max_attempts != 0 || r.initial_backoff_ms != 0 || r.multiplier != 0 ||
        r.max_backoff_ms != 0) {
        json_t *ro = json_object();
        put(e, o, "retry", ro);
        if (ro != NULL) {
            put_int(e, ro, "max_attempts", r.max_attempts);
            put_int(e, ro, "initial_backoff_ms", r.initial_backoff_ms);
            if (r.multiplier != 0)
                put(e, ro, "multiplier", json_real(r.multiplier));
            put_int(e, ro, "max_backoff_ms", r.max_backoff_ms);
        }
    }
}

/* The for-each fields, only when for_each is set. */
static void
encode_for_each(enc *e, json_t *o, const wf_transition *t)
{
    if (wf_str_empty(t->for_each))
        return;
    json_t *f = json_object();
    put(e, o, "for_each", f);
    if (f == NULL)
        return;
    put_str(e, f, "expression", t->for_each);
    put_str(e, f, "item", t->for_each_item);
    put_str(e, f, "output", t->for_each_output);
    if (t->for_each_sequential)
        put(e, f, "sequential", json_true());
    wf_join_mode mode =
        t->for_each_completion.mode == WF_JOIN_NONE ? WF_JOIN_ALL : t->for_each_completion.mode;
    put_enum(e, f, "mode", enum_name(NAMES(completion_modes), (int)mode));
    put_int(e, f, "quorum", t->for_each_completion.quorum);
}

/* The resources a transition or step needs, only when it names some. */
static void
encode_resources(enc *e, json_t *o, const wf_resource_use *v, size_t n)
{
    if (n == 0)
        return;
    json_t *arr = json_array();
    put(e, o, "resources", arr);
    for (size_t i = 0; arr != NULL && i < n; i++) {
        json_t *r = json_object();
        if (r == NULL || json_array_append_new(arr, r) != 0) {
            e->oom = true;
            return;
        }
        put_str(e, r, "name", v[i].name ? v[i].name : "");
        put_str(e, r, "key_expression", v[i].key_expression);
    }
}

static json_t *
encode_transition(enc *e, const wf_transition *t)
{
    json_t *o = json_object();
    if (o == NULL) {
        e->oom = true;
        return NULL;
    }
    put_str(e, o, "id", t->id);
    put_str(e, o, "name", t->name);
    put_enum(e, o, "trigger", enum_name(NAMES(triggers), (int)t->trigger));
    put_strs(e, o, "cancels", t->cancels, t->n_cancels);

    /* Fields are written whatever the trigger (an invalid net round-trips
     * too); defaults are made explicit only for the trigger they belong to,
     * so "unset" and "set to the default" encode the same. */
    encode_user(e, o, &t->assignee, &t->completion, t->trigger == WF_TRIGGER_USER);
    put_str(e, o, "priority_expression", t->priority_expression);
    put_str(e, o, "task_due_expression", t->task_due_expression);
    put_str(e, o, "task_follow_up_expression", t->task_follow_up_expression);
    put_str(e, o, "job_type", t->job_type);
    encode_retry(e, o, t->trigger == WF_TRIGGER_AUTO ? wf_net_retry_effective(t) : t->retry);
    put_int(e, o, "lease_ms",
            t->trigger == WF_TRIGGER_AUTO ? wf_net_lease_effective(t) : t->lease_ms);
    put_str(e, o, "compensation_job_type", t->compensation_job_type);
    put_str(e, o, "job_priority_expression", t->job_priority_expression);
    put_str(e, o, "job_fairness_key_expression", t->job_fairness_key_expression);
    encode_for_each(e, o, t);
    put_int(e, o, "delay_ms", t->delay_ms);
    put_str(e, o, "due_expression", t->due_expression);
    put_str(e, o, "signal_name", t->signal_name);
    wf_correlation corr = t->correlation;
    if (corr == WF_CORRELATION_UNSET && t->trigger == WF_TRIGGER_MSG)
        corr = WF_CORRELATION_INSTANCE;
    put_enum(e, o, "correlation", enum_name(NAMES(correlations), (int)corr));
    put_str(e, o, "call_definition_key", t->call_key);
    put_int(e, o, "call_version", t->call_version);
    put_str(e, o, "call_input_expression", t->call_input);
    put_str(e, o, "call_output_expression", t->call_output);
    if (t->call_strict)
        put(e, o, "call_require_deployed", json_true());
    encode_resources(e, o, t->resources, t->n_resources);
    put_str(e, o, "step_id", t->step_id);
    if (t->first_match)
        put(e, o, "first_match", json_true());
    if (t->fails)
        put(e, o, "fails", json_true());
    return o;
}

/* A step's for-each fields, as a transition's (only when for_each is
 * set: validation refuses the others alone). */
static void
encode_step_for_each(enc *e, json_t *o, const wf_step *st)
{
    wf_transition t = {
        .for_each = st->for_each,
        .for_each_item = st->for_each_item,
        .for_each_output = st->for_each_output,
        .for_each_sequential = st->for_each_sequential,
        .for_each_completion = st->for_each_completion,
    };
    encode_for_each(e, o, &t);
}

/* A step as it was given (the compiled net carries the defaults). */
static json_t *
encode_step(enc *e, const wf_step *st)
{
    json_t *o = json_object(), *k;
    if (o == NULL) {
        e->oom = true;
        return NULL;
    }
    put_str(e, o, "id", st->id);
    put_str(e, o, "name", st->name);
    if (st->has_job && (k = json_object()) != NULL) {
        put(e, o, "job", k);
        put_str(e, k, "job_type", st->job_type);
        put_int(e, k, "lease_ms", st->lease_ms);
        put_str(e, k, "priority_expression", st->job_priority_expression);
        put_str(e, k, "fairness_key_expression", st->job_fairness_key_expression);
    }
    if (st->has_user && (k = json_object()) != NULL) {
        put(e, o, "user", k);
        encode_user(e, k, &st->assignee, &st->completion, true);
        put_str(e, k, "priority_expression", st->priority_expression);
        put_str(e, k, "due_expression", st->task_due_expression);
        put_str(e, k, "follow_up_expression", st->task_follow_up_expression);
    }
    if (st->has_await && (k = json_object()) != NULL) {
        put(e, o, "await", k);
        put_str(e, k, "signal_name", st->signal_name);
        put_enum(e, k, "correlation",
                 enum_name(NAMES(correlations),
                           st->correlation ? (int)st->correlation : WF_CORRELATION_INSTANCE));
        put_int(e, k, "timeout_ms", st->timeout_ms);
        put_str(e, k, "on_timeout", st->on_timeout);
    }
    if (st->has_sleep && (k = json_object()) != NULL) {
        put(e, o, "sleep", k);
        put_int(e, k, "duration_ms", st->duration_ms);
        put_str(e, k, "due_expression", st->due_expression);
    }
    if (st->has_call && (k = json_object()) != NULL) {
        put(e, o, "call", k);
        put_str(e, k, "definition_key", st->call_key);
        put_int(e, k, "version", st->call_version);
        put_str(e, k, "input_expression", st->call_input);
        put_str(e, k, "output_expression", st->call_output);
        if (st->call_strict)
            put(e, k, "require_deployed", json_true());
    }
    encode_step_for_each(e, o, st);
    encode_retry(e, o, st->retry);
    put_str(e, o, "compensation_job_type", st->compensation_job_type);
    encode_resources(e, o, st->resources, st->n_resources);
    if (st->n_next > 0) {
        json_t *arr = json_array();
        put(e, o, "next", arr);
        for (size_t i = 0; arr != NULL && i < st->n_next; i++) {
            json_t *r = json_object();
            if (r == NULL || json_array_append_new(arr, r) != 0) {
                e->oom = true;
                break;
            }
            put_str(e, r, "guard", st->next[i].guard);
            put_str(e, r, "step", st->next[i].step);
        }
    }
    return o;
}

wf_code
wf_net_to_json(const wf_net *net, wf_arena *a, char **out, wf_error *err)
{
    enc e = {false};
    json_t *root = json_object();
    json_t *places = json_array(), *trans = json_array(), *arcs = json_array();
    if (root == NULL || places == NULL || trans == NULL || arcs == NULL)
        e.oom = true;

    if (!e.oom) {
        put_str(&e, root, "key", net->key);
        put_str(&e, root, "name", net->name);
        put_str(&e, root, "description", net->description);
        /* A step list has no termination rule (it ends after its last step). */
        wf_termination term = net->termination ? net->termination : WF_TERMINATION_EXPLICIT;
        if (net->n_steps == 0 || net->termination != WF_TERMINATION_UNSET)
            put_enum(&e, root, "termination", enum_name(NAMES(terminations), (int)term));
        put_int(&e, root, "valid_from", net->valid_from);
        put_int(&e, root, "valid_until", net->valid_until);
        for (size_t i = 0; i < net->n_places; i++) {
            const wf_place *p = &net->places[i];
            json_t *o = json_object();
            if (o == NULL || json_array_append_new(places, o) != 0) {
                e.oom = true;
                break;
            }
            put_str(&e, o, "id", p->id);
            put_str(&e, o, "name", p->name);
            put_enum(&e, o, "kind",
                     enum_name(NAMES(place_kinds), p->kind ? (int)p->kind : WF_PLACE_NORMAL));
        }
        for (size_t i = 0; i < net->n_transitions; i++) {
            json_t *o = encode_transition(&e, &net->transitions[i]);
            if (o == NULL || json_array_append_new(trans, o) != 0) {
                e.oom = true;
                break;
            }
        }
        for (size_t i = 0; i < net->n_arcs; i++) {
            const wf_arc *ar = &net->arcs[i];
            json_t *o = json_object();
            if (o == NULL || json_array_append_new(arcs, o) != 0) {
                e.oom = true;
                break;
            }
            put_str(&e, o, "source", ar->source);
            put_str(&e, o, "target", ar->target);
            put_int(&e, o, "weight", wf_net_arc_weight(ar));
            put_str(&e, o, "guard", ar->guard);
            if (ar->is_default)
                put(&e, o, "is_default", json_true());
        }
        if (net->n_steps > 0) {
            json_t *steps = json_array();
            put(&e, root, "steps", steps);
            for (size_t i = 0; steps != NULL && i < net->n_steps; i++) {
                json_t *o = encode_step(&e, &net->steps[i]);
                if (o == NULL || json_array_append_new(steps, o) != 0) {
                    e.oom = true;
                    break;
                }
            }
        }
        /* The arrays are always present, even empty: a stable shape. */
        put(&e, root, "places", json_incref(places));
        put(&e, root, "transitions", json_incref(trans));
        put(&e, root, "arcs", json_incref(arcs));
    }
    char *s = e.oom ? NULL : json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(places);
    json_decref(trans);
    json_decref(arcs);
    json_decref(root);
    if (s == NULL)
        return wf_error_nomem(err);
    char *copy = wf_arena_strdup(a, s);
    free(s);
    if (copy == NULL)
        return wf_error_nomem(err);
    *out = copy;
    return WF_OK;
}

/* ---- decoding -------------------------------------------------------------- */

typedef struct dec {
    wf_arena *a;
    wf_error *err;
    bool failed;
} dec;

static wf_code
dec_fail(dec *d, const char *what)
{
    if (!d->failed)
        wf_error_set(d->err, WF_E_INVALID_JSON, "definition content is malformed: %s", what);
    d->failed = true;
    return WF_E_INVALID_JSON;
}

static wf_code
dec_nomem(dec *d)
{
    if (!d->failed)
        wf_error_nomem(d->err);
    d->failed = true;
    return WF_E_NOMEM;
}

static const char *
get_str(dec *d, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        return "";
    if (!json_is_string(v)) {
        dec_fail(d, key);
        return "";
    }
    char *s = wf_arena_strdup(d->a, json_string_value(v));
    if (s == NULL)
        dec_nomem(d);
    return s ? s : "";
}

static int64_t
get_int(dec *d, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        return 0;
    if (!json_is_integer(v)) {
        dec_fail(d, key);
        return 0;
    }
    return json_integer_value(v);
}

static int
get_enum(dec *d, json_t *o, const char *key, const char *const *names, int n)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        return 0;
    int r = json_is_string(v) ? enum_value(names, n, json_string_value(v)) : -1;
    if (r < 0) {
        dec_fail(d, key);
        return 0;
    }
    return r;
}

/* A JSON array of objects or strings into arena storage; *n = 0 when
 * absent. */
static json_t *
get_array(dec *d, json_t *o, const char *key, size_t *n)
{
    json_t *v = json_object_get(o, key);
    *n = 0;
    if (v == NULL)
        return NULL;
    if (!json_is_array(v)) {
        dec_fail(d, key);
        return NULL;
    }
    *n = json_array_size(v);
    return v;
}

static const char **
get_strs(dec *d, json_t *o, const char *key, size_t *n)
{
    json_t *arr = get_array(d, o, key, n);
    if (*n == 0)
        return NULL;
    const char **v = wf_arena_calloc(d->a, *n, sizeof *v);
    if (v == NULL) {
        dec_nomem(d);
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < *n; i++) {
        json_t *s = json_array_get(arr, i);
        if (!json_is_string(s)) {
            dec_fail(d, key);
            v[i] = "";
            continue;
        }
        v[i] = wf_arena_strdup(d->a, json_string_value(s));
        if (v[i] == NULL) {
            dec_nomem(d);
            v[i] = "";
        }
    }
    return v;
}

static json_t *
get_obj(dec *d, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v != NULL && !json_is_object(v)) {
        dec_fail(d, key);
        return NULL;
    }
    return v;
}

static bool
get_bool(dec *d, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v != NULL && !json_is_boolean(v))
        dec_fail(d, key);
    return json_is_true(v);
}

static void
decode_user(dec *d, json_t *o, wf_assignee *as, wf_completion *cp)
{
    json_t *a = get_obj(d, o, "assignee");
    if (a != NULL) {
        as->kind = (wf_net_assignee_kind)get_enum(d, a, "kind", NAMES(assignee_kinds));
        as->ids = get_strs(d, a, "ids", &as->n_ids);
        as->ids_expression = get_str(d, a, "ids_expression");
    }
    json_t *c = get_obj(d, o, "completion");
    if (c != NULL) {
        cp->mode = (wf_join_mode)get_enum(d, c, "mode", NAMES(completion_modes));
        cp->quorum = (int32_t)get_int(d, c, "quorum");
    }
}

static void
decode_retry(dec *d, json_t *o, wf_retry_policy *rp)
{
    json_t *r = get_obj(d, o, "retry");
    if (r != NULL) {
        rp->max_attempts = (int32_t)get_int(d, r, "max_attempts");
        rp->initial_backoff_ms = get_int(d, r, "initial_backoff_ms");
        json_t *m = json_object_get(r, "multiplier");
        if (m != NULL && !json_is_number(m))
            dec_fail(d, "multiplier");
        rp->multiplier = m != NULL ? json_number_value(m) : 0;
        rp->max_backoff_ms = get_int(d, r, "max_backoff_ms");
    }
}

static const wf_resource_use *
decode_resources(dec *d, json_t *o, size_t *n)
{
    json_t *arr = get_array(d, o, "resources", n);
    if (*n == 0)
        return NULL;
    wf_resource_use *v = wf_arena_calloc(d->a, *n, sizeof *v);
    if (v == NULL) {
        dec_nomem(d);
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < *n; i++) {
        json_t *r = json_array_get(arr, i);
        if (!json_is_object(r)) {
            dec_fail(d, "resources");
            *n = i;
            break;
        }
        v[i].name = get_str(d, r, "name");
        v[i].key_expression = get_str(d, r, "key_expression");
    }
    return v;
}

static void
decode_step_for_each(dec *d, json_t *o, wf_step *st)
{
    json_t *f = get_obj(d, o, "for_each");
    if (f == NULL)
        return;
    st->for_each = get_str(d, f, "expression");
    st->for_each_item = get_str(d, f, "item");
    st->for_each_output = get_str(d, f, "output");
    st->for_each_sequential = get_bool(d, f, "sequential");
    st->for_each_completion.mode = (wf_join_mode)get_enum(d, f, "mode", NAMES(completion_modes));
    st->for_each_completion.quorum = (int32_t)get_int(d, f, "quorum");
}

static void
decode_step(dec *d, json_t *o, wf_step *st)
{
    json_t *k;
    st->id = get_str(d, o, "id");
    st->name = get_str(d, o, "name");
    if ((k = get_obj(d, o, "job")) != NULL) {
        st->has_job = true;
        st->job_type = get_str(d, k, "job_type");
        st->lease_ms = get_int(d, k, "lease_ms");
        st->job_priority_expression = get_str(d, k, "priority_expression");
        st->job_fairness_key_expression = get_str(d, k, "fairness_key_expression");
    }
    if ((k = get_obj(d, o, "user")) != NULL) {
        st->has_user = true;
        decode_user(d, k, &st->assignee, &st->completion);
        st->priority_expression = get_str(d, k, "priority_expression");
        st->task_due_expression = get_str(d, k, "due_expression");
        st->task_follow_up_expression = get_str(d, k, "follow_up_expression");
    }
    if ((k = get_obj(d, o, "await")) != NULL) {
        st->has_await = true;
        st->signal_name = get_str(d, k, "signal_name");
        st->correlation = (wf_correlation)get_enum(d, k, "correlation", NAMES(correlations));
        st->timeout_ms = get_int(d, k, "timeout_ms");
        st->on_timeout = get_str(d, k, "on_timeout");
    }
    if ((k = get_obj(d, o, "sleep")) != NULL) {
        st->has_sleep = true;
        st->duration_ms = get_int(d, k, "duration_ms");
        st->due_expression = get_str(d, k, "due_expression");
    }
    if ((k = get_obj(d, o, "call")) != NULL) {
        st->has_call = true;
        st->call_key = get_str(d, k, "definition_key");
        st->call_version = (int32_t)get_int(d, k, "version");
        st->call_input = get_str(d, k, "input_expression");
        st->call_output = get_str(d, k, "output_expression");
        st->call_strict = get_bool(d, k, "require_deployed");
    }
    decode_step_for_each(d, o, st);
    decode_retry(d, o, &st->retry);
    st->compensation_job_type = get_str(d, o, "compensation_job_type");
    st->resources = decode_resources(d, o, &st->n_resources);
    json_t *arr = get_array(d, o, "next", &st->n_next);
    st->next = wf_arena_calloc(d->a, st->n_next + 1, sizeof *st->next);
    if (st->next == NULL) {
        dec_nomem(d);
        st->n_next = 0;
    }
    for (size_t i = 0; i < st->n_next; i++) {
        json_t *r = json_array_get(arr, i);
        if (!json_is_object(r)) {
            dec_fail(d, "next");
            break;
        }
        st->next[i].guard = get_str(d, r, "guard");
        st->next[i].step = get_str(d, r, "step");
    }
}

static void
decode_for_each(dec *d, json_t *o, wf_transition *t)
{
    json_t *f = get_obj(d, o, "for_each");
    if (f == NULL)
        return;
    t->for_each = get_str(d, f, "expression");
    t->for_each_item = get_str(d, f, "item");
    t->for_each_output = get_str(d, f, "output");
    t->for_each_sequential = get_bool(d, f, "sequential");
    t->for_each_completion.mode = (wf_join_mode)get_enum(d, f, "mode", NAMES(completion_modes));
    t->for_each_completion.quorum = (int32_t)get_int(d, f, "quorum");
}

static void
decode_transition(dec *d, json_t *o, wf_transition *t)
{
    t->id = get_str(d, o, "id");
    t->name = get_str(d, o, "name");
    t->trigger = (wf_trigger)get_enum(d, o, "trigger", NAMES(triggers));
    t->cancels = get_strs(d, o, "cancels", &t->n_cancels);
    decode_user(d, o, &t->assignee, &t->completion);
    t->priority_expression = get_str(d, o, "priority_expression");
    t->task_due_expression = get_str(d, o, "task_due_expression");
    t->task_follow_up_expression = get_str(d, o, "task_follow_up_expression");
    t->job_type = get_str(d, o, "job_type");
    decode_retry(d, o, &t->retry);
    t->lease_ms = get_int(d, o, "lease_ms");
    t->compensation_job_type = get_str(d, o, "compensation_job_type");
    t->job_priority_expression = get_str(d, o, "job_priority_expression");
    t->job_fairness_key_expression = get_str(d, o, "job_fairness_key_expression");
    decode_for_each(d, o, t);
    t->delay_ms = get_int(d, o, "delay_ms");
    t->due_expression = get_str(d, o, "due_expression");
    t->signal_name = get_str(d, o, "signal_name");
    t->correlation = (wf_correlation)get_enum(d, o, "correlation", NAMES(correlations));
    t->call_key = get_str(d, o, "call_definition_key");
    t->call_version = (int32_t)get_int(d, o, "call_version");
    t->call_input = get_str(d, o, "call_input_expression");
    t->call_output = get_str(d, o, "call_output_expression");
    t->call_strict = get_bool(d, o, "call_require_deployed");
    t->resources = decode_resources(d, o, &t->n_resources);
    t->step_id = get_str(d, o, "step_id");
    t->first_match = get_bool(d, o, "first_match");
    t->fails = get_bool(d, o, "fails");
}

wf_code
wf_net_from_json(const char *json, wf_arena *a, wf_net **out, wf_error *err)
{
    json_error_t jerr;
    json_t *root = json ? json_loads(json, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (root == NULL || !json_is_object(root)) {
        json_decref(root);
        return wf_error_set(err, WF_E_INVALID_JSON, "definition content is not a JSON object");
    }
    dec d = {a, err, false};
    wf_net *net = wf_arena_calloc(a, 1, sizeof *net);
    if (net == NULL) {
        json_decref(root);
        return wf_error_nomem(err);
    }
    net->key = get_str(&d, root, "key");
    net->name = get_str(&d, root, "name");
    net->description = get_str(&d, root, "description");
    net->termination = (wf_termination)get_enum(&d, root, "termination", NAMES(terminations));
    net->valid_from = get_int(&d, root, "valid_from");
    net->valid_until = get_int(&d, root, "valid_until");

    json_t *arr = get_array(&d, root, "places", &net->n_places);
    net->places = wf_arena_calloc(a, net->n_places ? net->n_places : 1, sizeof *net->places);
    for (size_t i = 0; net->places != NULL && i < net->n_places; i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) {
            dec_fail(&d, "places");
            break;
        }
        net->places[i].id = get_str(&d, o, "id");
        net->places[i].name = get_str(&d, o, "name");
        net->places[i].kind = (wf_place_kind)get_enum(&d, o, "kind", NAMES(place_kinds));
    }
    arr = get_array(&d, root, "transitions", &net->n_transitions);
    net->transitions =
        wf_arena_calloc(a, net->n_transitions ? net->n_transitions : 1, sizeof *net->transitions);
    for (size_t i = 0; net->transitions != NULL && i < net->n_transitions; i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) {
            dec_fail(&d, "transitions");
            break;
        }
        decode_transition(&d, o, &net->transitions[i]);
    }
    arr = get_array(&d, root, "arcs", &net->n_arcs);
    net->arcs = wf_arena_calloc(a, net->n_arcs ? net->n_arcs : 1, sizeof *net->arcs);
    for (size_t i = 0; net->arcs != NULL && i < net->n_arcs; i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) {
            dec_fail(&d, "arcs");
            break;
        }
        wf_arc *ar = &net->arcs[i];
        ar->source = get_str(&d, o, "source");
        ar->target = get_str(&d, o, "target");
        int64_t w = get_int(&d, o, "weight");
        if (w < INT32_MIN || w > INT32_MAX)
            dec_fail(&d, "weight");
        ar->weight = (int32_t)w;
        ar->guard = get_str(&d, o, "guard");
        json_t *def = json_object_get(o, "is_default");
        if (def != NULL && !json_is_boolean(def))
            dec_fail(&d, "is_default");
        ar->is_default = json_is_true(def);
    }
    arr = get_array(&d, root, "steps", &net->n_steps);
    net->steps = wf_arena_calloc(a, net->n_steps + 1, sizeof *net->steps);
    for (size_t i = 0; net->steps != NULL && i < net->n_steps; i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) {
            dec_fail(&d, "steps");
            break;
        }
        decode_step(&d, o, &net->steps[i]);
    }
    json_decref(root);
    if (net->places == NULL || net->transitions == NULL || net->arcs == NULL || net->steps == NULL)
        return wf_error_nomem(err);
    if (d.failed)
        return err != NULL ? err->code : WF_E_INVALID_JSON;
    *out = net;
    return WF_OK;
}

/* ---- SHA-256 (FIPS 180-4), for the content hash ----------------------------- */

typedef struct sha256 {
    uint32_t h[8];
    uint8_t buf[64];
    size_t nbuf;
    uint64_t bits;
} sha256;

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void
sha256_block(sha256 *s, const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 =
            h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

static void
sha256_update(sha256 *s, const uint8_t *p, size_t n)
{
    s->bits += (uint64_t)n * 8;
    while (n > 0) {
        size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k;
        p += k;
        n -= k;
        if (s->nbuf == 64) {
            sha256_block(s, s->buf);
            s->nbuf = 0;
        }
    }
}

void
wf_sha256_hex(const void *data, size_t len, char out[65])
{
    sha256 s = {{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
                 0x5be0cd19},
                {0},
                0,
                0};
    sha256_update(&s, data, len);
    uint64_t bits = s.bits;
    uint8_t pad[72] = {0x80};
    size_t padlen = (s.nbuf < 56 ? 56 : 120) - s.nbuf;
    sha256_update(&s, pad, padlen);
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++)
        lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(&s, lenb, 8);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            uint8_t byte = (uint8_t)(s.h[i] >> (24 - 8 * j));
            out[8 * i + 2 * j] = hex[byte >> 4];
            out[8 * i + 2 * j + 1] = hex[byte & 15];
        }
    out[64] = '\0';
}

wf_code
wf_net_content_hash(const wf_net *net, wf_arena *a, char **out, wf_error *err)
{
    char *json;
    wf_code rc = wf_net_to_json(net, a, &json, err);
    if (rc != WF_OK)
        return rc;
    char *hex = wf_arena_alloc(a, 65);
    if (hex == NULL)
        return wf_error_nomem(err);
    wf_sha256_hex(json, strlen(json), hex);
    *out = hex;
    return WF_OK;
}
