/*
 * net_steps: step-list definitions (DEFINITION_KIND_STEPS), compiled at
 * deploy into the net that the one net engine runs (net.h describes the
 * compiled shape).
 *
 * Validation reports every finding at once. The step list's own checks
 * come first, with these codes (listed on ValidationError.code):
 *   STEPS_EMPTY         the list has no step
 *   STEP_KIND_MISSING   a step has none of job, user, await_signal, sleep,
 *                       call
 *   STEP_KIND_CONFLICT  a step has several of them
 *   UNKNOWN_STEP        next[].step or await_signal.on_timeout names no step
 *   STEP_FIELD_CONFLICT retry or compensation_job_type on a step that is
 *                       not a job, on_timeout without a timeout, for_each
 *                       (or a for_each_* field) or resources on an await or
 *                       sleep step
 *   NET_FIELD_CONFLICT  places, transitions, arcs or termination given on
 *                       a STEPS definition (the server compiles them)
 *   DUPLICATE_ID, REQUIRED, INVALID_VALUE, TRIGGER_FIELD_MISSING,
 *   TOO_MANY_ELEMENTS   as for nets
 * Then the compiled net goes through wf_net_validate, and its findings on
 * the fields a step carries (assignee, retry, lease, delay, due_expression,
 * signal_name, correlation, the call's, for_each's, resources, guards) are reported at
 * the step's path: "transitions[3].assignee.ids" becomes
 * "steps[2].user.assignee.ids", "transitions[3].call_definition_key"
 * "steps[2].call.definition_key", "arcs[7].guard" "steps[2].next[0].guard".
 * A call step's for_each is passed on to the CALL transition, so the net's
 * validation decides whether a CALL transition takes it.
 */
#include "net.h"
#include "wf_str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define STEP_ID_MAX 100 /* leaves room for the ":ready" / ":timeout" suffixes */
/* Limits that keep the compiled net within the net's own (net.h): at most
 * 2 transitions per step plus ":begin", 4 arcs per step plus the rules. */
#define STEPS_MAX ((WF_NET_MAX_NODES - 2) / 2)
#define RULES_MAX (WF_NET_MAX_ARCS / 2)

static void err_at(wf_findings *f, const char *code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
err_at(wf_findings *f, const char *code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wf_net__vfinding(f, WF_SEVERITY_ERROR, code, path, fmt, ap);
    va_end(ap);
}

char *
wf_steps_place_id(wf_arena *a, const char *step_id)
{
    return wf_arena_printf(a, "%s:ready", step_id != NULL ? step_id : "");
}

int
wf_steps_index(const wf_net *net, const char *step_id)
{
    for (size_t i = 0; step_id != NULL && i < net->n_steps; i++)
        if (net->steps[i].id != NULL && strcmp(net->steps[i].id, step_id) == 0)
            return (int)i;
    return -1;
}

/* Step ids: 1-100 of [A-Za-z0-9_.-], so that the compiled ids (which add
 * ':') can never collide. */
static bool
step_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > STEP_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

/* Any for-each field of a step. */
static bool
for_each_set(const wf_step *st)
{
    return !wf_str_empty(st->for_each) || !wf_str_empty(st->for_each_item) ||
           !wf_str_empty(st->for_each_output) || st->for_each_sequential ||
           st->for_each_completion.mode != WF_JOIN_NONE || st->for_each_completion.quorum != 0;
}

static bool
retry_set(const wf_retry_policy *r)
{
    return r->max_attempts != 0 || r->initial_backoff_ms != 0 || r->multiplier != 0 ||
           r->max_backoff_ms != 0;
}

/* Bounds that keep validation and the compiled net small (the checks
 * below and the net's are quadratic). */
static bool
too_many(const wf_net *net)
{
    size_t rules = 0;
    for (size_t i = 0; i < net->n_steps; i++)
        rules += net->steps[i].n_next;
    return net->n_steps > STEPS_MAX || rules > RULES_MAX;
}

/* The step list's own checks (see the file comment). */
static void
check_steps(wf_findings *f, const wf_net *net)
{
    char path[160];
    if (net->n_places > 0)
        err_at(f, "NET_FIELD_CONFLICT", "places",
               "a STEPS definition has no places; they are compiled from its steps");
    if (net->n_transitions > 0)
        err_at(f, "NET_FIELD_CONFLICT", "transitions",
               "a STEPS definition has no transitions; they are compiled from its steps");
    if (net->n_arcs > 0)
        err_at(f, "NET_FIELD_CONFLICT", "arcs",
               "a STEPS definition has no arcs; they are compiled from its steps");
    if (net->termination != WF_TERMINATION_UNSET)
        err_at(f, "NET_FIELD_CONFLICT", "termination",
               "a STEPS definition ends after its last step; it has no termination rule");
    if (net->n_steps == 0) {
        err_at(f, "STEPS_EMPTY", "steps", "a STEPS definition needs at least one step");
        return;
    }
    if (too_many(net)) {
        err_at(f, "TOO_MANY_ELEMENTS", "steps",
               "a STEPS definition holds at most %d steps and %d next rules in all", STEPS_MAX,
               RULES_MAX);
        return;
    }
    for (size_t i = 0; i < net->n_steps; i++) {
        const wf_step *st = &net->steps[i];
        snprintf(path, sizeof path, "steps[%zu].id", i);
        if (wf_str_empty(st->id))
            err_at(f, "REQUIRED", path, "step %zu needs an id", i);
        else if (!step_id_ok(st->id))
            err_at(f, "INVALID_VALUE", path,
                   "step id \"%.64s\" must be 1-%d letters, digits, '_', '-' or '.'", st->id,
                   STEP_ID_MAX);
        else
            for (size_t j = 0; j < i; j++)
                if (net->steps[j].id != NULL && strcmp(net->steps[j].id, st->id) == 0) {
                    err_at(f, "DUPLICATE_ID", path, "step id \"%s\" is used by step %zu too",
                           st->id, j);
                    break;
                }
        const char *sid = wf_str_empty(st->id) ? "" : st->id;
        int kinds = st->has_job + st->has_user + st->has_await + st->has_sleep + st->has_call;
        snprintf(path, sizeof path, "steps[%zu]", i);
        if (kinds == 0)
            err_at(f, "STEP_KIND_MISSING", path,
                   "step \"%s\" needs one of job, user, await_signal, sleep or call", sid);
        else if (kinds > 1)
            err_at(f, "STEP_KIND_CONFLICT", path,
                   "step \"%s\" has %d of job, user, await_signal, sleep and call; it takes "
                   "exactly one",
                   sid, kinds);
        if ((st->has_await || st->has_sleep) && for_each_set(st)) {
            snprintf(path, sizeof path, "steps[%zu].for_each", i);
            err_at(f, "STEP_FIELD_CONFLICT", path,
                   "step \"%s\": for_each applies only to job, user and call steps", sid);
        }
        if (st->has_job && wf_str_empty(st->job_type)) {
            snprintf(path, sizeof path, "steps[%zu].job.job_type", i);
            err_at(f, "TRIGGER_FIELD_MISSING", path, "job step \"%s\" needs a job_type", sid);
        }
        if (!st->has_job && retry_set(&st->retry)) {
            snprintf(path, sizeof path, "steps[%zu].retry", i);
            err_at(f, "STEP_FIELD_CONFLICT", path, "step \"%s\": retry applies only to job steps",
                   sid);
        }
        if (!st->has_job && !st->has_user && st->n_resources > 0) {
            snprintf(path, sizeof path, "steps[%zu].resources", i);
            err_at(f, "STEP_FIELD_CONFLICT", path,
                   "step \"%s\": resources apply only to job and user steps", sid);
        }
        if (!st->has_job && !wf_str_empty(st->compensation_job_type)) {
            snprintf(path, sizeof path, "steps[%zu].compensation_job_type", i);
            err_at(f, "STEP_FIELD_CONFLICT", path,
                   "step \"%s\": compensation_job_type applies only to job steps", sid);
        }
        if (st->has_await) {
            snprintf(path, sizeof path, "steps[%zu].await_signal.timeout", i);
            if (st->timeout_ms < 0)
                err_at(f, "INVALID_VALUE", path, "step \"%s\": timeout must be positive", sid);
            snprintf(path, sizeof path, "steps[%zu].await_signal.on_timeout", i);
            if (!wf_str_empty(st->on_timeout) && st->timeout_ms == 0)
                err_at(f, "STEP_FIELD_CONFLICT", path, "step \"%s\": on_timeout needs a timeout",
                       sid);
            else if (!wf_str_empty(st->on_timeout) && wf_steps_index(net, st->on_timeout) < 0)
                err_at(f, "UNKNOWN_STEP", path, "step \"%s\": on_timeout names no step \"%.64s\"",
                       sid, st->on_timeout);
        }
        for (size_t r = 0; r < st->n_next; r++) {
            snprintf(path, sizeof path, "steps[%zu].next[%zu].step", i, r);
            if (wf_str_empty(st->next[r].step))
                err_at(f, "REQUIRED", path, "rule %zu of step \"%s\" needs a step to go to", r,
                       sid);
            else if (wf_steps_index(net, st->next[r].step) < 0)
                err_at(f, "UNKNOWN_STEP", path, "rule %zu of step \"%s\" names no step \"%.64s\"",
                       r, sid, st->next[r].step);
        }
    }
}

/* ---- compiling --------------------------------------------------------------------- */

/* Where a compiled element comes from, to report findings at the step. */
typedef struct origin {
    int step;        /* -1: the frame (start, begin, end) */
    int rule;        /* arcs: the next rule, -1 = none */
    const char *sub; /* transitions: "job", "user", "await_signal", "sleep", "call" */
    bool timeout;    /* the timeout transition of an await */
} origin;

typedef struct comp {
    wf_arena *a;
    wf_net *net;
    origin *ot, *oa; /* per transition, per arc */
    bool oom;
} comp;

static void
add_arc(comp *c, const char *source, const char *target, const char *guard, bool dflt, int step,
        int rule)
{
    size_t k = c->net->n_arcs++;
    c->net->arcs[k] =
        (wf_arc){.source = source, .target = target, .guard = guard, .is_default = dflt};
    c->oa[k] = (origin){.step = step, .rule = rule};
}

static wf_transition *
add_transition(comp *c, const char *id, const char *name, wf_trigger trigger, int step,
               const char *sub, bool timeout)
{
    size_t k = c->net->n_transitions++;
    wf_transition *t = &c->net->transitions[k];
    memset(t, 0, sizeof *t);
    t->id = id;
    t->name = name;
    t->trigger = trigger;
    c->ot[k] = (origin){.step = step, .rule = -1, .sub = sub, .timeout = timeout};
    return t;
}

static const char *
place_of(comp *c, const char *step_id)
{
    char *p = wf_steps_place_id(c->a, step_id);
    if (p == NULL)
        c->oom = true;
    return p != NULL ? p : "";
}

static void
copy_for_each(wf_transition *t, const wf_step *st)
{
    t->for_each = st->for_each;
    t->for_each_item = st->for_each_item;
    t->for_each_output = st->for_each_output;
    t->for_each_sequential = st->for_each_sequential;
    t->for_each_completion = st->for_each_completion;
}

static void
compile(comp *c, const wf_net *in)
{
    wf_net *net = c->net;
    size_t ns = in->n_steps;
    const char **places = wf_arena_calloc(c->a, ns + 1, sizeof *places);
    if (places == NULL) {
        c->oom = true;
        return;
    }
    net->places[net->n_places++] = (wf_place){WF_STEPS_START_PLACE, "start", WF_PLACE_START};
    for (size_t i = 0; i < ns; i++) {
        const wf_step *st = &in->steps[i];
        places[i] = place_of(c, st->id);
        net->places[net->n_places++] =
            (wf_place){places[i], wf_str_empty(st->name) ? st->id : st->name, WF_PLACE_NORMAL};
    }
    net->places[net->n_places++] = (wf_place){WF_STEPS_END_PLACE, "end", WF_PLACE_END};
    places[ns] = WF_STEPS_END_PLACE;

    add_transition(c, ":begin", "begin", WF_TRIGGER_AUTO, -1, NULL, false);
    add_arc(c, WF_STEPS_START_PLACE, ":begin", NULL, false, -1, -1);
    add_arc(c, ":begin", places[0], NULL, false, -1, -1);

    for (size_t i = 0; i < ns; i++) {
        const wf_step *st = &in->steps[i];
        const char *name = wf_str_empty(st->name) ? st->id : st->name;
        wf_trigger trig = st->has_user    ? WF_TRIGGER_USER
                          : st->has_await ? WF_TRIGGER_MSG
                          : st->has_sleep ? WF_TRIGGER_TIME
                          : st->has_call  ? WF_TRIGGER_CALL
                                          : WF_TRIGGER_AUTO;
        const char *sub = st->has_user    ? "user"
                          : st->has_await ? "await_signal"
                          : st->has_sleep ? "sleep"
                          : st->has_call  ? "call"
                                          : "job";
        wf_transition *t = add_transition(c, st->id, name, trig, (int)i, sub, false);
        t->step_id = st->id;
        t->first_match = true;
        switch (trig) {
        case WF_TRIGGER_USER:
            t->assignee = st->assignee;
            t->completion = st->completion;
            t->priority_expression = st->priority_expression;
            t->task_due_expression = st->task_due_expression;
            t->task_follow_up_expression = st->task_follow_up_expression;
            t->resources = st->resources;
            t->n_resources = st->n_resources;
            break;
        case WF_TRIGGER_MSG:
            t->signal_name = st->signal_name;
            t->correlation = st->correlation;
            break;
        case WF_TRIGGER_TIME:
            t->delay_ms = st->duration_ms;
            t->due_expression = st->due_expression;
            break;
        case WF_TRIGGER_CALL:
            t->call_key = st->call_key;
            t->call_version = st->call_version;
            t->call_input = st->call_input;
            t->call_output = st->call_output;
            t->call_strict = st->call_strict;
            break;
        default:
            t->job_type = st->job_type;
            t->retry = st->retry;
            t->lease_ms = st->lease_ms;
            t->compensation_job_type = st->compensation_job_type;
            t->job_priority_expression = st->job_priority_expression;
            t->job_fairness_key_expression = st->job_fairness_key_expression;
            t->resources = st->resources;
            t->n_resources = st->n_resources;
            break;
        }
        if (trig != WF_TRIGGER_MSG && trig != WF_TRIGGER_TIME)
            copy_for_each(t, st);
        add_arc(c, places[i], st->id, NULL, false, (int)i, -1);
        for (size_t r = 0; r < st->n_next; r++)
            add_arc(c, st->id, place_of(c, st->next[r].step),
                    wf_str_empty(st->next[r].guard) ? NULL : st->next[r].guard, false, (int)i,
                    (int)r);
        add_arc(c, st->id, places[i + 1], NULL, st->n_next > 0, (int)i, -1);

        if (st->has_await && st->timeout_ms > 0) {
            char *tid = wf_arena_printf(c->a, "%s:timeout", st->id);
            char *tname = wf_arena_printf(c->a, "%s: timeout", name);
            if (tid == NULL || tname == NULL) {
                c->oom = true;
                return;
            }
            wf_transition *to = add_transition(c, tid, tname, WF_TRIGGER_TIME, (int)i, sub, true);
            to->delay_ms = st->timeout_ms;
            to->step_id = st->id;
            to->fails = wf_str_empty(st->on_timeout);
            add_arc(c, places[i], tid, NULL, false, (int)i, -1);
            /* A failing timeout never produces; its arc to the end only
             * keeps the net's shape valid. */
            add_arc(c, tid, to->fails ? WF_STEPS_END_PLACE : place_of(c, st->on_timeout), NULL,
                    false, (int)i, -1);
        }
    }
}

/* A message of the net's validation about a compiled transition, in the
 * words of steps ("USER transition \"a\"" -> "user step \"a\""). */
static const char *
reword(wf_arena *a, const char *msg)
{
    static const struct {
        const char *from, *to;
    } words[] = {
        {"USER transition ", "user step "},
        {"AUTO transition ", "job step "},
        {"MSG transition ", "await step "},
        {"CALL transition ", "call step "},
        {"applies only to AUTO and USER transitions", "applies only to job and user steps"},
        {"TIME transition ", "step "},
        {"a delay or a due_expression", "a duration or a due_expression"},
        {"task_due_expression", "due_expression"},
        {"task_follow_up_expression", "follow_up_expression"},
    };
    const char *out = msg;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        const char *at = strstr(out, words[i].from);
        if (at == NULL)
            continue;
        const char *m = wf_arena_printf(a, "%.*s%s%s", (int)(at - out), out, words[i].to,
                                        at + strlen(words[i].from));
        if (m != NULL)
            out = m;
    }
    return out;
}

/* The step path of a finding on the compiled net, or NULL to drop it
 * (a finding on the frame, which only a finding of the step list itself
 * can cause). */
static const char *
remap(comp *c, const char *path, const char **msg)
{
    size_t k;
    int used = 0;
    if (sscanf(path, "transitions[%zu]%n", &k, &used) == 1 && used > 0 &&
        k < c->net->n_transitions) {
        const origin *o = &c->ot[k];
        if (o->step < 0)
            return NULL;
        const char *rest = path + used;
        if (strcmp(rest, ".id") == 0)
            return NULL; /* step ids are checked by the list */
        static const struct {
            const char *from, *to;
        } fields[] = {
            {".assignee", ".assignee"},
            {".completion", ".completion"},
            {".job_type", ".job_type"},
            {".lease", ".lease"},
            {".signal_name", ".signal_name"},
            {".correlation", ".correlation"},
            {".due_expression", ".due_expression"},
            {".priority_expression", ".priority_expression"},
            {".job_priority_expression", ".priority_expression"},
            {".job_fairness_key_expression", ".fairness_key_expression"},
            {".task_due_expression", ".due_expression"},
            {".task_follow_up_expression", ".follow_up_expression"},
            {".call_definition_key", ".definition_key"},
            {".call_version", ".version"},
            {".call_input_expression", ".input_expression"},
            {".call_output_expression", ".output_expression"},
        };
        *msg = reword(c->a, *msg);
        if (strncmp(rest, ".retry", 6) == 0 || strcmp(rest, ".compensation_job_type") == 0 ||
            strncmp(rest, ".for_each", 9) == 0 || strncmp(rest, ".resources", 10) == 0)
            return wf_arena_printf(c->a, "steps[%d]%s", o->step, rest);
        if (strcmp(rest, ".delay") == 0)
            return wf_arena_printf(c->a, "steps[%d].%s.%s", o->step, o->sub,
                                   o->timeout ? "timeout" : "duration");
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            size_t n = strlen(fields[i].from);
            if (strncmp(rest, fields[i].from, n) == 0 && (rest[n] == '\0' || rest[n] == '.'))
                return wf_arena_printf(c->a, "steps[%d].%s%s%s", o->step, o->sub, fields[i].to,
                                       rest + n);
        }
        return wf_arena_printf(c->a, "steps[%d]", o->step);
    }
    if (sscanf(path, "arcs[%zu]%n", &k, &used) == 1 && used > 0 && k < c->net->n_arcs) {
        const origin *o = &c->oa[k];
        if (o->step < 0)
            return NULL;
        if (o->rule >= 0) {
            /* "guard of arc 7 does not compile: ..." names the rule instead. */
            const char *why = strstr(*msg, "does not compile");
            if (why != NULL) {
                const char *m = wf_arena_printf(c->a, "guard of rule %d of step \"%s\" %s", o->rule,
                                                c->net->steps[o->step].id, why);
                if (m != NULL)
                    *msg = m;
            }
            return wf_arena_printf(c->a, "steps[%d].next[%d]%s", o->step, o->rule, path + used);
        }
        return wf_arena_printf(c->a, "steps[%d]", o->step);
    }
    return NULL;
}

/* Codes of the net's shape: with an error in the list itself (a bad id or
 * reference) they only echo it. */
static bool
structural(const char *code)
{
    static const char *const codes[] = {
        "DUPLICATE_ID",          "UNKNOWN_REFERENCE",        "NOT_ON_PATH",
        "DUPLICATE_ARC",         "TRANSITION_WITHOUT_INPUT", "TRANSITION_WITHOUT_OUTPUT",
        "MULTIPLE_DEFAULT_ARCS", "ARC_INVALID_ENDPOINTS"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i]) == 0)
            return true;
    return false;
}

wf_code
wf_steps_compile(const wf_net *in, wf_arena *a, wf_net **out, wf_validation_error **errors,
                 size_t *n_errors, wf_error *err)
{
    wf_findings f = {.a = a};
    *out = NULL;
    check_steps(&f, in);
    bool own_errors = wf_net_has_errors(f.v, f.n);
    bool shapeless = in->n_steps == 0 || too_many(in);
    wf_net *net = NULL;
    if (!shapeless && !f.oom) {
        size_t ns = in->n_steps;
        net = wf_arena_alloc(a, sizeof *net);
        comp c = {.a = a, .net = net};
        if (net != NULL) {
            *net = *in;
            net->places = wf_arena_calloc(a, ns + 3, sizeof *net->places);
            net->transitions = wf_arena_calloc(a, 2 * ns + 2, sizeof *net->transitions);
            size_t arcs = 3;
            for (size_t i = 0; i < ns; i++)
                arcs += 4 + in->steps[i].n_next;
            net->arcs = wf_arena_calloc(a, arcs, sizeof *net->arcs);
            c.ot = wf_arena_calloc(a, 2 * ns + 2, sizeof *c.ot);
            c.oa = wf_arena_calloc(a, arcs, sizeof *c.oa);
            net->n_places = net->n_transitions = net->n_arcs = 0;
            net->termination = WF_TERMINATION_UNSET;
        }
        if (net == NULL || net->places == NULL || net->transitions == NULL || net->arcs == NULL ||
            c.ot == NULL || c.oa == NULL)
            return wf_error_nomem(err);
        compile(&c, in);
        if (c.oom)
            return wf_error_nomem(err);
        wf_validation_error *v = NULL;
        size_t n = 0;
        wf_code rc = wf_net_validate(net, a, &v, &n, err);
        if (rc != WF_OK)
            return rc;
        for (size_t i = 0; i < n; i++) {
            /* The header (key, validity window) is checked there once. */
            const char *path = v[i].path, *msg = v[i].message;
            bool header = strncmp(path, "transitions[", 12) != 0 &&
                          strncmp(path, "arcs[", 5) != 0 && strncmp(path, "places", 6) != 0;
            if (!header) {
                path = remap(&c, v[i].path, &msg);
                /* Findings on the frame or the net's shape follow from
                 * findings of the list itself. */
                if (path == NULL || (own_errors && structural(v[i].code)))
                    continue;
            }
            err_at(&f, v[i].code, path, "%s", msg);
            if (!f.oom && f.n > 0)
                f.v[f.n - 1].severity = v[i].severity;
        }
    } else if (!f.oom) {
        /* No net to validate: the header at least. */
        static const wf_net empty_shape = {0};
        wf_net hdr = empty_shape;
        hdr.key = in->key;
        hdr.valid_from = in->valid_from;
        hdr.valid_until = in->valid_until;
        wf_validation_error *v = NULL;
        size_t n = 0;
        wf_code rc = wf_net_validate(&hdr, a, &v, &n, err);
        if (rc != WF_OK)
            return rc;
        for (size_t i = 0; i < n; i++)
            if (strncmp(v[i].path, "places", 6) != 0)
                err_at(&f, v[i].code, v[i].path, "%s", v[i].message);
    }
    if (f.oom)
        return wf_error_nomem(err);
    *errors = f.v;
    *n_errors = f.n;
    if (!wf_net_has_errors(f.v, f.n))
        *out = net;
    return WF_OK;
}
