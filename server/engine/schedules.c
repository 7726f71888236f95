/*
 * schedules.c: schedules and their fire times (schedules.h). The spec is
 * stored as JSON (spec_json) in the form a caller wrote it and parsed
 * again at each use; the policy lives in columns of its own.
 */
#include "schedules.h"

#include <string.h>

#include <jansson.h>

#include "ids.h"
#include "instances.h"
#include "vars.h"
#include "wf_id.h"
#include "wf_log.h"
#include "wf_time.h"

#define UPDATE_TRIES 3
#define FIRE_TRIES 3

static wf_store_ctx
store_ctx(const wf_ref_ctx *ctx)
{
    return (wf_store_ctx){ctx->tenant, ctx->deadline_ms, ctx->arena};
}

static bool
empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* ---- the spec as JSON ------------------------------------------------------ */

static char *
spec_dump(wf_arena *a, const wf_schedule_spec_in *in)
{
    json_t *o = json_object(), *dates = json_array(), *rules = json_array();
    for (size_t i = 0; dates != NULL && i < in->n_exclude_dates; i++)
        json_array_append_new(dates, json_string(in->exclude_dates[i]));
    for (size_t i = 0; rules != NULL && i < in->n_rrules; i++)
        json_array_append_new(rules, json_string(in->rrules[i]));
    if (o == NULL || dates == NULL || rules == NULL) {
        json_decref(o);
        json_decref(dates);
        json_decref(rules);
        return NULL;
    }
    if (in->n_rrules > 0)
        json_object_set_new(o, "rrules", rules);
    else
        json_decref(rules);
    if (!empty(in->rrule_start))
        json_object_set_new(o, "rruleStart", json_string(in->rrule_start));
    if (!empty(in->cron))
        json_object_set_new(o, "cron", json_string(in->cron));
    if (!empty(in->interval))
        json_object_set_new(o, "interval", json_string(in->interval));
    json_object_set_new(o, "timeZone", json_string(empty(in->time_zone) ? "UTC" : in->time_zone));
    json_object_set_new(o, "startAt", json_integer(in->start_at));
    json_object_set_new(o, "endAt", json_integer(in->end_at));
    json_object_set_new(o, "jitterUs", json_integer(in->jitter_us));
    json_object_set_new(o, "excludeDates", dates);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    char *out = text != NULL ? wf_arena_strdup(a, text) : NULL;
    free(text);
    return out;
}

static const char *
json_str(wf_arena *a, json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? wf_arena_strdup(a, s) : NULL;
}

/* The strings of a JSON array (none when it is absent) into *out, in a. */
static bool
json_strings(wf_arena *a, json_t *arr, const char *const **out, size_t *n)
{
    size_t len = json_array_size(arr);
    const char **v = wf_arena_calloc(a, len + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < len; i++) {
        const char *text = json_string_value(json_array_get(arr, i));
        v[i] = wf_arena_strdup(a, text != NULL ? text : "");
    }
    *out = v;
    *n = len;
    return v != NULL;
}

static wf_code
spec_load(wf_arena *a, const char *text, wf_schedule_spec_in *in, wf_error *err)
{
    memset(in, 0, sizeof *in);
    json_t *o = json_loads(text != NULL ? text : "", 0, NULL);
    if (o == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "a stored schedule spec does not parse");
    in->cron = json_str(a, o, "cron");
    in->interval = json_str(a, o, "interval");
    in->time_zone = json_str(a, o, "timeZone");
    in->start_at = json_integer_value(json_object_get(o, "startAt"));
    in->end_at = json_integer_value(json_object_get(o, "endAt"));
    in->jitter_us = json_integer_value(json_object_get(o, "jitterUs"));
    in->rrule_start = json_str(a, o, "rruleStart");
    bool ok = json_strings(a, json_object_get(o, "excludeDates"), &in->exclude_dates,
                           &in->n_exclude_dates) &&
              json_strings(a, json_object_get(o, "rrules"), &in->rrules, &in->n_rrules);
    json_decref(o);
    return ok ? WF_OK : wf_error_nomem(err);
}

/* The stored spec of row, checked. */
static wf_code
row_spec(wf_arena *a, const wf_schedule_row *row, wf_schedule_spec_in *in, wf_schedule_spec *s,
         wf_error *err)
{
    wf_code rc = spec_load(a, row->spec_json, in, err);
    return rc == WF_OK ? wf_schedule_spec_parse(a, in, s, err) : rc;
}

/* ---- views ----------------------------------------------------------------- */

static wf_code
view_of(wf_arena *a, const wf_schedule_row *row, int64_t now, wf_schedule_view *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    out->row = *row;
    wf_schedule_spec s;
    wf_code rc = row_spec(a, row, &out->spec, &s, err);
    if (rc == WF_OK)
        rc = wf_schedule_spec_upcoming(&s, now, WF_SCHEDULE_UPCOMING, out->upcoming,
                                       &out->n_upcoming, err);
    for (size_t i = 0; rc == WF_OK && i < out->n_upcoming; i++)
        if ((out->upcoming_local[i] = wf_schedule_spec_local_text(&s, a, out->upcoming[i])) == NULL)
            rc = wf_error_nomem(err);
    return rc;
}

/* ---- checks -------------------------------------------------------------- */

static wf_code
check_id(const wf_ref_ctx *ctx, const char *id, wf_error *err)
{
    if (empty(id))
        return wf_work_invalid(ctx, "id", "is required", err);
    if (strlen(id) > WF_SCHEDULE_ID_MAX)
        return wf_work_invalid(ctx, "id", "is longer than 128 bytes", err);
    return WF_OK;
}

static wf_code
check_policy(const wf_schedule_in *in, wf_error *err)
{
    int o = in->overlap == 0 ? WF_OVERLAP_SKIP : in->overlap;
    if (o < WF_OVERLAP_SKIP || o > WF_OVERLAP_CANCEL_OTHER)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE, "policy.overlap: unknown policy %d", o);
    if (in->catchup_window_ms < 0)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                            "policy.catchup_window: must not be negative");
    if (in->pause_after_failures < 0)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                            "policy.pause_after_failures: must not be negative");
    return WF_OK;
}

/* The first fire time after now (0: none) and when it is due. */
static wf_code
first_fire(const wf_schedule_spec *s, const char *id, int64_t now, int64_t *next, int64_t *due,
           wf_error *err)
{
    bool none = false;
    wf_code rc = wf_schedule_spec_next(s, now, next, &none, err);
    if (rc == WF_OK && none)
        *next = 0;
    *due = rc == WF_OK && *next != 0 ? *next + wf_schedule_spec_jitter(s, id, *next) : 0;
    return rc;
}

/* Checks in and fills the fields of row it sets (the rest untouched). */
static wf_code
row_from(const wf_ref_ctx *ctx, const wf_schedule_in *in, int64_t now, wf_schedule_row *row,
         wf_error *err)
{
    wf_code rc = check_id(ctx, in->id, err);
    if (rc == WF_OK && empty(in->definition_key))
        rc = wf_work_invalid(ctx, "definition_key", "is required", err);
    if (rc == WF_OK && (empty(in->aggregate_type) != empty(in->aggregate_id)))
        rc = wf_work_invalid(ctx, "aggregate", "needs both type and id, or neither", err);
    if (rc == WF_OK && in->note != NULL && strlen(in->note) > WF_SCHEDULE_TEXT_MAX)
        rc = wf_work_invalid(ctx, "note", "is longer than 1024 bytes", err);
    const char *vars = NULL;
    if (rc == WF_OK)
        rc = wf_vars_object(ctx->arena, in->variables_json, "variables_json", &vars, err);
    wf_schedule_spec s;
    if (rc == WF_OK)
        rc = wf_schedule_spec_parse(ctx->arena, &in->spec, &s, err);
    if (rc == WF_OK)
        rc = wf_schedule_spec_check_rrules(&s, err);
    if (rc == WF_OK)
        rc = check_policy(in, err);
    wf_store_ctx sc = store_ctx(ctx);
    wf_definition_row def;
    if (rc == WF_OK)
        rc = wf_store_get_definition(ctx->store, &sc, in->definition_key, in->version, &def, err);
    if (rc != WF_OK)
        return rc;
    row->id = (char *)in->id;
    row->definition_key = (char *)in->definition_key;
    row->def_version = in->version;
    row->variables_json = (char *)vars;
    row->aggregate_type = empty(in->aggregate_type) ? NULL : (char *)in->aggregate_type;
    row->aggregate_id = empty(in->aggregate_id) ? NULL : (char *)in->aggregate_id;
    row->spec_json = spec_dump(ctx->arena, &in->spec);
    row->overlap = in->overlap == 0 ? WF_OVERLAP_SKIP : in->overlap;
    row->catchup_window_ms =
        in->catchup_window_ms == 0 ? WF_SCHEDULE_CATCHUP_DEFAULT_MS : in->catchup_window_ms;
    row->pause_after_failures = in->pause_after_failures;
    row->note = empty(in->note) ? NULL : (char *)in->note;
    row->updated_at = now;
    if (row->spec_json == NULL)
        return wf_error_nomem(err);
    return first_fire(&s, in->id, now, &row->next_fire_at, &row->due_at, err);
}

/* ---- CreateSchedule, GetSchedule, ListSchedules ---------------------------- */

static wf_code
create_body(wf_tx *tx, void *arg, wf_error *err)
{
    return wf_tx_put_schedule(tx, arg, err);
}

wf_code
wf_schedules_create(const wf_ref_ctx *ctx, const wf_schedule_in *in, int64_t now, wf_uow_idem *idem,
                    wf_schedule_view *out, wf_error *err)
{
    wf_schedule_row row = {0};
    wf_code rc = row_from(ctx, in, now, &row, err);
    if (rc != WF_OK)
        return rc;
    row.state = in->paused ? WF_SCHEDULE_PAUSED : WF_SCHEDULE_ACTIVE;
    row.created_by = (char *)ctx->actor;
    row.created_at = now;
    wf_schedule_view view;
    rc = view_of(ctx->arena, &row, now, &view, err);
    if (rc != WF_OK)
        return rc;
    view.row.version = 1;
    view.row.tenant = (char *)ctx->tenant;
    wf_store_ctx sc = store_ctx(ctx);
    rc = wf_uow_run(ctx->store, &sc, idem, create_body, &row, &view, err);
    if (rc == WF_OK)
        *out = view;
    return rc;
}

wf_code
wf_schedules_get(const wf_ref_ctx *ctx, const char *id, int64_t now, wf_schedule_view *out,
                 wf_error *err)
{
    wf_code rc = check_id(ctx, id, err);
    wf_store_ctx sc = store_ctx(ctx);
    wf_schedule_row row;
    if (rc == WF_OK)
        rc = wf_store_get_schedule(ctx->store, &sc, id, &row, err);
    return rc != WF_OK ? rc : view_of(ctx->arena, &row, now, out, err);
}

static size_t
page_of(int32_t page_size)
{
    return page_size == 0 ? 50 : page_size > 500 ? 500 : (size_t)page_size;
}

wf_code
wf_schedules_list(const wf_ref_ctx *ctx, int32_t page_size, const char *cursor, int64_t now,
                  wf_schedule_view **rows, size_t *n, char **next_cursor, wf_error *err)
{
    if (page_size < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "page_size must not be negative");
    wf_store_ctx sc = store_ctx(ctx);
    wf_schedule_row *r = NULL;
    size_t k = 0;
    wf_code rc = wf_store_list_schedules(ctx->store, &sc, page_of(page_size),
                                         empty(cursor) ? NULL : cursor, &r, &k, next_cursor, err);
    wf_schedule_view *v = rc == WF_OK ? wf_arena_calloc(ctx->arena, k + 1, sizeof *v) : NULL;
    if (rc == WF_OK && v == NULL)
        rc = wf_error_nomem(err);
    for (size_t i = 0; rc == WF_OK && i < k; i++)
        rc = view_of(ctx->arena, &r[i], now, &v[i], err);
    if (rc == WF_OK) {
        *rows = v;
        *n = k;
    }
    return rc;
}

/* ---- UpdateSchedule, DeleteSchedule, Pause / Unpause ----------------------- */

/* What a change does to the stored row (re-read on each try). */
typedef wf_code (*change_fn)(const wf_ref_ctx *ctx, wf_schedule_row *row, const void *arg,
                             int64_t now, wf_error *err);

/* Reads, changes and writes the row against its version (again when a
 * pass wrote meanwhile), with the request id looked up before and
 * recorded after (the answer is the view). */
static wf_code
change(const wf_ref_ctx *ctx, const char *id, change_fn fn, const void *arg, int64_t now,
       wf_uow_idem *idem, wf_schedule_view *out, wf_error *err)
{
    wf_code rc = check_id(ctx, id, err);
    wf_store_ctx sc = store_ctx(ctx);
    if (rc == WF_OK)
        rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    wf_schedule_row row;
    for (int attempt = 0;; attempt++) {
        rc = wf_store_get_schedule(ctx->store, &sc, id, &row, err);
        if (rc == WF_OK)
            rc = fn(ctx, &row, arg, now, err);
        /* A fire kept waiting is looked at by the next pass. */
        if (rc == WF_OK && row.buffered_at != 0)
            row.due_at = now;
        if (rc == WF_OK)
            rc = wf_store_update_schedule(ctx->store, &sc, &row, err);
        if (rc != WF_E_CONFLICT || attempt + 1 == UPDATE_TRIES)
            break;
        wf_error_clear(err);
    }
    if (rc != WF_OK)
        return rc;
    row.version++;
    wf_schedule_view view;
    rc = view_of(ctx->arena, &row, now, &view, err);
    if (rc == WF_OK)
        rc = wf_uow_idem_record(ctx->store, &sc, idem, &view, err);
    if (rc == WF_OK && out != NULL)
        *out = view;
    return rc;
}

static wf_code
apply_update(const wf_ref_ctx *ctx, wf_schedule_row *row, const void *arg, int64_t now,
             wf_error *err)
{
    const wf_schedule_in *in = arg;
    wf_code rc = row_from(ctx, in, now, row, err);
    if (rc == WF_OK)
        row->state = in->paused ? WF_SCHEDULE_PAUSED : WF_SCHEDULE_ACTIVE;
    return rc;
}

wf_code
wf_schedules_update(const wf_ref_ctx *ctx, const wf_schedule_in *in, int64_t now, wf_uow_idem *idem,
                    wf_schedule_view *out, wf_error *err)
{
    return change(ctx, in->id, apply_update, in, now, idem, out, err);
}

typedef struct pause_arg {
    bool pause;
    const char *reason;
} pause_arg;

static wf_code
apply_pause(const wf_ref_ctx *ctx, wf_schedule_row *row, const void *arg, int64_t now,
            wf_error *err)
{
    const pause_arg *p = arg;
    if (p->reason != NULL && strlen(p->reason) > WF_SCHEDULE_TEXT_MAX)
        return wf_work_invalid(ctx, "reason", "is longer than 1024 bytes", err);
    row->state = p->pause ? WF_SCHEDULE_PAUSED : WF_SCHEDULE_ACTIVE;
    row->pause_reason = p->pause && !empty(p->reason) ? (char *)p->reason : NULL;
    row->updated_at = now;
    if (p->pause)
        return WF_OK;
    row->failures = 0;
    wf_schedule_spec_in in;
    wf_schedule_spec s;
    wf_code rc = row_spec(ctx->arena, row, &in, &s, err);
    return rc == WF_OK ? first_fire(&s, row->id, now, &row->next_fire_at, &row->due_at, err) : rc;
}

wf_code
wf_schedules_pause(const wf_ref_ctx *ctx, const char *id, bool pause, const char *reason,
                   int64_t now, wf_uow_idem *idem, wf_schedule_view *out, wf_error *err)
{
    pause_arg p = {pause, reason};
    return change(ctx, id, apply_pause, &p, now, idem, out, err);
}

wf_code
wf_schedules_delete(const wf_ref_ctx *ctx, const char *id, wf_uow_idem *idem, wf_error *err)
{
    wf_code rc = check_id(ctx, id, err);
    wf_store_ctx sc = store_ctx(ctx);
    if (rc == WF_OK)
        rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    rc = wf_store_delete_schedule(ctx->store, &sc, id, err);
    wf_schedule_view none = {0};
    return rc == WF_OK ? wf_uow_idem_record(ctx->store, &sc, idem, &none, err) : rc;
}

/* ---- firing ----------------------------------------------------------------- */

typedef struct fire_op {
    const wf_ref_ctx *ctx;
    wf_schedule_run_row *run;
    const wf_start_spec *spec; /* NULL: record the run only */
    const char *vars;
    bool settle; /* the run is BUFFERED: settle it rather than insert it */
} fire_op;

/* The run first (a fire time handled before fails here, before anything
 * starts), then the instance it names. */
static wf_code
fire_body(wf_tx *tx, void *arg, wf_error *err)
{
    fire_op *op = arg;
    wf_code rc = op->settle ? wf_tx_settle_schedule_run(tx, op->run, err)
                            : wf_tx_put_schedule_run(tx, op->run, err);
    wf_instance_row inst;
    if (rc == WF_OK && op->spec != NULL)
        rc = wf_runtime_start_in(op->ctx, tx, op->spec, op->vars, &inst, err);
    return rc;
}

/* The schedule's variables with "schedule": {id, nominalTime}. */
static wf_code
fire_vars(wf_arena *a, const wf_schedule_row *s, int64_t nominal, const char **out, wf_error *err)
{
    json_t *o = json_loads(empty(s->variables_json) ? "{}" : s->variables_json, 0, NULL);
    char *when = wf_time_rfc3339(a, nominal);
    if (o == NULL || !json_is_object(o) || when == NULL) {
        json_decref(o);
        return wf_error_set(err, WF_E_INTERNAL, "schedule \"%s\" has unreadable variables", s->id);
    }
    json_object_set_new(o, "schedule", json_pack("{s:s,s:s}", "id", s->id, "nominalTime", when));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    *out = text != NULL ? wf_arena_strdup(a, text) : NULL;
    free(text);
    return *out != NULL ? WF_OK : wf_error_nomem(err);
}

/* Failures that say nothing about the start itself: the fire time is
 * tried again later. */
static bool
transient(wf_code rc)
{
    return rc == WF_E_STORE_UNAVAILABLE || rc == WF_E_CONFLICT || rc == WF_E_DEADLINE_EXCEEDED ||
           rc == WF_E_NOMEM || rc == WF_E_CANCELLED || rc == WF_E_OVERLOADED;
}

/* The run of (schedule, nominal), when there is one (*found). */
static wf_code
run_find(const wf_ref_ctx *ctx, const char *schedule_id, int64_t nominal, wf_schedule_run_row *out,
         bool *found, wf_error *err)
{
    wf_store_ctx sc = store_ctx(ctx);
    char *cursor = wf_arena_printf(ctx->arena, "%lld,%s", (long long)nominal + 1, schedule_id);
    wf_schedule_run_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_code rc = cursor != NULL ? wf_store_list_schedule_runs(ctx->store, &sc, schedule_id, 1,
                                                              cursor, &rows, &n, &next, err)
                                : wf_error_nomem(err);
    *found = rc == WF_OK && n == 1 && rows[0].nominal_at == nominal;
    if (*found)
        *out = rows[0];
    return rc;
}

/* Whether the fire time of op->run was handled before (by another
 * replica, or an earlier try): its run exists and, for a settle, is no
 * longer BUFFERED. Then *op->run becomes that run. */
static wf_code
was_handled(const fire_op *op, bool *out, wf_error *err)
{
    wf_schedule_run_row found;
    bool exists = false;
    wf_code rc = run_find(op->ctx, op->run->schedule_id, op->run->nominal_at, &found, &exists, err);
    *out = rc == WF_OK && exists && (!op->settle || found.outcome != WF_RUN_BUFFERED);
    if (*out)
        *op->run = found;
    return rc;
}

/* What one fire time records. */
typedef struct fire_in {
    int64_t nominal;
    int outcome; /* a wf_schedule_outcome; STARTED starts an instance */
    bool manual;
    bool backfill;         /* BackfillSchedule */
    int64_t buffered_at;   /* not 0: settles the BUFFERED run of nominal, buffered then */
    const char *cancelled; /* CANCEL_OTHER: the instance cancelled for it */
    const char *detail;    /* FAILED */
} fire_in;

/* Records the run of in (STARTED: and starts its instance) in one unit
 * of work. *already: the fire time had been handled (nothing done; *run
 * is the run found). A refused start is recorded FAILED instead. */
static wf_code
fire(const wf_ref_ctx *ctx, const wf_schedule_row *s, const fire_in *in, int64_t now,
     wf_uow_idem *idem, wf_schedule_run_row *run, bool *already, wf_error *err)
{
    *already = false;
    *run = (wf_schedule_run_row){
        .schedule_id = s->id,
        .tenant = (char *)ctx->tenant,
        .nominal_at = in->nominal,
        .actual_at = now,
        .outcome = in->outcome,
        .manual = in->manual ? 1 : 0,
        .backfill = in->backfill ? 1 : 0,
        .detail = (char *)in->detail,
        .buffered_at = in->outcome == WF_RUN_BUFFERED ? now : in->buffered_at,
        .cancelled_instance_id = (char *)in->cancelled,
    };
    wf_start_spec spec = {.definition_key = s->definition_key,
                          .version = s->def_version,
                          .aggregate_type = s->aggregate_type,
                          .aggregate_id = s->aggregate_id};
    fire_op op = {.ctx = ctx, .run = run, .settle = in->buffered_at != 0};
    wf_code rc = WF_OK;
    if (in->outcome == WF_RUN_STARTED) {
        run->instance_id = (char *)wf_id_new(ctx->arena);
        spec.instance_id = run->instance_id;
        rc = run->instance_id != NULL
                 ? fire_vars(ctx->arena, s, in->nominal, &spec.variables_json, err)
                 : wf_error_nomem(err);
        if (rc == WF_OK)
            rc = wf_referral_check_start(ctx, &spec, &op.vars, err);
        op.spec = &spec;
    }
    wf_store_ctx sc = store_ctx(ctx);
    for (int attempt = 0; rc == WF_OK || attempt == 0; attempt++) {
        if (rc == WF_OK)
            rc = wf_uow_run_once(ctx->store, &sc, idem, fire_body, &op, run, err);
        if (rc != WF_E_CONFLICT || attempt + 1 == FIRE_TRIES)
            break;
        wf_error clean;
        wf_error_clear(&clean);
        wf_code erc = was_handled(&op, already, &clean);
        if (erc != WF_OK || *already) {
            if (erc != WF_OK)
                *err = clean;
            return erc;
        }
        wf_error_clear(err);
        rc = WF_OK;
    }
    if (rc == WF_OK || transient(rc) || op.spec == NULL)
        return rc;
    /* The start was refused: the fire time is spent, as FAILED. */
    char *detail = wf_arena_printf(ctx->arena, "%s: %s", wf_code_reason(rc), err->msg);
    wf_error_clear(err);
    run->outcome = WF_RUN_FAILED;
    run->instance_id = NULL;
    run->detail = detail;
    op.spec = NULL;
    rc = wf_uow_run_once(ctx->store, &sc, idem, fire_body, &op, run, err);
    if (rc == WF_E_CONFLICT) {
        wf_error_clear(err);
        rc = was_handled(&op, already, err);
    }
    return rc;
}

wf_code
wf_schedules_trigger(const wf_ref_ctx *ctx, const char *id, int64_t now, wf_uow_idem *idem,
                     wf_schedule_run_row *out, wf_error *err)
{
    wf_code rc = check_id(ctx, id, err);
    wf_store_ctx sc = store_ctx(ctx);
    wf_schedule_row row;
    /* A repeat is answered before its run could collide with the first
     * call's (the same instant on a test clock). */
    if (rc == WF_OK)
        rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    rc = wf_store_get_schedule(ctx->store, &sc, id, &row, err);
    bool already = false;
    fire_in in = {.nominal = now, .outcome = WF_RUN_STARTED, .manual = true};
    if (rc == WF_OK)
        rc = fire(ctx, &row, &in, now, idem, out, &already, err);
    if (rc == WF_OK && already)
        rc = wf_error_set(err, WF_E_CONFLICT, "schedule \"%s\" was triggered at the same instant",
                          id);
    return rc;
}

wf_code
wf_schedules_runs(const wf_ref_ctx *ctx, const char *id, int32_t page_size, const char *cursor,
                  wf_schedule_run_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    if (page_size < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "page_size must not be negative");
    wf_code rc = check_id(ctx, id, err);
    wf_store_ctx sc = store_ctx(ctx);
    wf_schedule_row row;
    if (rc == WF_OK)
        rc = wf_store_get_schedule(ctx->store, &sc, id, &row, err);
    if (rc == WF_OK)
        rc = wf_store_list_schedule_runs(ctx->store, &sc, id, page_of(page_size),
                                         empty(cursor) ? NULL : cursor, rows, n, next_cursor, err);
    return rc;
}

/* ---- the scheduler's passes ------------------------------------------------- */

/* Whether the instance id (the schedule's last) still runs. */
static wf_code
still_runs(const wf_ref_ctx *ctx, const char *id, bool *out, wf_error *err)
{
    *out = false;
    if (empty(id))
        return WF_OK;
    wf_store_ctx sc = store_ctx(ctx);
    wf_instance_row inst;
    wf_code rc = wf_store_get_instance(ctx->store, &sc, id, &inst, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND) {
        wf_error_clear(err);
        return WF_OK;
    }
    *out = rc == WF_OK &&
           (inst.status == WF_INSTANCE_RUNNING || inst.status == WF_INSTANCE_SUSPENDED ||
            inst.status == WF_INSTANCE_COMPENSATING);
    return rc;
}

/* What the fire time nominal of s becomes at now: its outcome, and under
 * CANCEL_OTHER the running instance to cancel first (*cancel). */
static wf_code
decide(const wf_ref_ctx *ctx, const wf_schedule_row *s, int64_t nominal, int64_t now, int *outcome,
       const char **cancel, wf_error *err)
{
    *cancel = NULL;
    if (now - nominal > s->catchup_window_ms * 1000) {
        *outcome = WF_RUN_MISSED;
        return WF_OK;
    }
    *outcome = WF_RUN_STARTED;
    if (s->overlap == WF_OVERLAP_ALLOW_ALL)
        return WF_OK;
    bool runs = false;
    wf_code rc = still_runs(ctx, s->last_instance_id, &runs, err);
    if (rc != WF_OK || !runs)
        return rc;
    if (s->overlap == WF_OVERLAP_BUFFER_ONE)
        *outcome = s->buffered_at != 0 ? WF_RUN_SKIPPED : WF_RUN_BUFFERED;
    else if (s->overlap == WF_OVERLAP_CANCEL_OTHER)
        *cancel = s->last_instance_id;
    else
        *outcome = WF_RUN_SKIPPED;
    return WF_OK;
}

/* CANCEL_OTHER: cancels instance_id (the schedule's last, still running)
 * before the fire time nominal starts its own, as CancelInstance would
 * under a request id of that fire time, so that a retry cancels nothing
 * twice. A fire time handled before cancels nothing; an instance that
 * ended meanwhile is left as it is (*cancelled stays NULL). */
static wf_code
cancel_other(const wf_runtime_ctx *rt, const wf_schedule_row *s, int64_t nominal,
             const char *instance_id, const char **cancelled, wf_error *err)
{
    const wf_ref_ctx *ctx = &rt->ref;
    *cancelled = NULL;
    wf_schedule_run_row found;
    bool exists = false;
    wf_code rc = run_find(ctx, s->id, nominal, &found, &exists, err);
    if (rc != WF_OK || exists)
        return rc;
    char *when = wf_time_rfc3339(ctx->arena, nominal);
    char *reason = wf_arena_printf(
        ctx->arena, "schedule \"%s\": the fire time %s cancels it (overlap CANCEL_OTHER)", s->id,
        when != NULL ? when : "");
    wf_uow_idem idem = wf_uow_idem_internal(
        "CancelInstance",
        wf_arena_printf(ctx->arena, "schedule:%s:%lld", s->id, (long long)nominal),
        wf_arena_printf(ctx->arena, "schedule:%s", s->id));
    if (reason == NULL || idem.request_id == NULL || idem.request_hash == NULL)
        return wf_error_nomem(err);
    wf_instance_row out;
    rc = wf_instances_cancel(rt, instance_id, reason, false, &idem, &out, err);
    if (rc == WF_E_INSTANCE_NOT_RUNNING || rc == WF_E_INSTANCE_NOT_FOUND) {
        wf_error_clear(err);
        return WF_OK;
    }
    if (rc == WF_OK)
        *cancelled = instance_id;
    return rc;
}

static void
count_run(wf_schedule_pass_counts *c, const wf_schedule_run_row *run, bool already)
{
    if (already) {
        c->already++;
        return;
    }
    switch (run->outcome) {
    case WF_RUN_STARTED:
        c->started++;
        if (run->actual_at - run->nominal_at > c->max_lag_us)
            c->max_lag_us = run->actual_at - run->nominal_at;
        break;
    case WF_RUN_SKIPPED:
        c->skipped++;
        break;
    case WF_RUN_MISSED:
        c->missed++;
        break;
    case WF_RUN_BUFFERED:
        c->buffered++;
        break;
    default:
        c->failed++;
        break;
    }
}

/* The progress of one claimed schedule. */
typedef struct progress {
    int64_t next, due;
    const char *last_instance;
    int32_t failures;
    int64_t buffered; /* the nominal time of the fire kept waiting; 0 = none */
    bool pause;
} progress;

/* Books one handled fire time (run; already: handled before) into the
 * pass's counts, the schedule as the pass sees it (cur) and its
 * progress. */
static void
book(wf_schedule_row *cur, progress *p, wf_schedule_pass_counts *c, const wf_schedule_run_row *run,
     bool already)
{
    count_run(c, run, already);
    if (run->outcome == WF_RUN_STARTED) {
        cur->last_instance_id = run->instance_id;
        p->last_instance = run->instance_id;
        if (!already)
            p->failures = 0;
    } else if (run->outcome == WF_RUN_BUFFERED) {
        cur->buffered_at = run->nominal_at;
        p->buffered = run->nominal_at;
    } else if (!already && run->outcome == WF_RUN_FAILED) {
        p->failures++;
        WF_LOG(WF_LOG_WARN, "schedules", "schedule %s (tenant %s) could not start: %s", cur->id,
               cur->tenant, run->detail != NULL ? run->detail : "");
    }
}

/* BUFFER_ONE: once the schedule's last instance has ended, starts the
 * fire kept waiting. Its BUFFERED run is settled (STARTED, or FAILED) in
 * the unit of work of the start by an update that requires it still
 * BUFFERED, so it starts once whichever replica sees the end. */
static wf_code
settle_buffered(const wf_ref_ctx *ctx, wf_schedule_row *cur, progress *p, int64_t now,
                wf_schedule_pass_counts *c, wf_error *err)
{
    bool runs = false, exists = false, already = false;
    wf_code rc = cur->buffered_at != 0 ? still_runs(ctx, cur->last_instance_id, &runs, err) : WF_OK;
    if (rc != WF_OK || runs || cur->buffered_at == 0)
        return rc;
    wf_schedule_run_row run;
    rc = run_find(ctx, cur->id, cur->buffered_at, &run, &exists, err);
    if (rc == WF_OK && exists && run.outcome == WF_RUN_BUFFERED) {
        fire_in in = {.nominal = cur->buffered_at,
                      .outcome = WF_RUN_STARTED,
                      .buffered_at = run.buffered_at != 0 ? run.buffered_at : run.actual_at};
        rc = fire(ctx, cur, &in, now, NULL, &run, &already, err);
    } else {
        already = exists; /* settled before: taken as it is */
    }
    if (rc == WF_OK && exists)
        book(cur, p, c, &run, already);
    if (rc == WF_OK)
        cur->buffered_at = p->buffered = 0;
    return rc;
}

/* CANCEL_OTHER: cancels victim before the fire time in->nominal of cur
 * starts. A refused cancel spends the fire time, as FAILED (in->outcome
 * and in->detail); only a transient failure is returned. */
static wf_code
cancel_first(const wf_runtime_ctx *rt, const wf_schedule_row *cur, const char *victim, fire_in *in,
             wf_error *err)
{
    wf_code rc = cancel_other(rt, cur, in->nominal, victim, &in->cancelled, err);
    if (rc == WF_OK || transient(rc))
        return rc;
    in->outcome = WF_RUN_FAILED;
    in->detail = wf_arena_printf(rt->ref.arena, "%s: cancelling %s: %s", wf_code_reason(rc), victim,
                                 err->msg);
    wf_error_clear(err);
    return WF_OK;
}

/* Decides and handles the fire time p->next of cur at now. */
static wf_code
fire_next(const wf_runtime_ctx *rt, wf_schedule_row *cur, progress *p, int64_t now,
          wf_schedule_pass_counts *c, wf_error *err)
{
    const wf_ref_ctx *ctx = &rt->ref;
    fire_in in = {.nominal = p->next};
    const char *victim = NULL;
    wf_code rc = decide(ctx, cur, p->next, now, &in.outcome, &victim, err);
    if (rc == WF_OK && victim != NULL)
        rc = cancel_first(rt, cur, victim, &in, err);
    wf_schedule_run_row run;
    bool already = false;
    if (rc == WF_OK)
        rc = fire(ctx, cur, &in, now, NULL, &run, &already, err);
    if (rc == WF_OK)
        book(cur, p, c, &run, already);
    return rc;
}

/* While a fire waits (BUFFER_ONE) the schedule is due again within
 * WF_SCHEDULE_BUFFER_RECHECK_MS, to see whether its last instance has
 * ended; due is when its next fire time is due (0: never). */
static int64_t
due_with_buffer(int64_t due, int64_t buffered, int64_t now)
{
    int64_t recheck = now + (int64_t)WF_SCHEDULE_BUFFER_RECHECK_MS * 1000;
    return buffered == 0 || (due != 0 && due < recheck) ? due : recheck;
}

/* Writes p onto the claimed row (its version), lease let go. When
 * another write came first (UpdateSchedule, PauseSchedule), the row is
 * read again: its own next fire time stands unless it is one already
 * handled here. */
static wf_code
keep_progress(const wf_ref_ctx *ctx, const wf_schedule_row *claimed, const progress *p, int64_t now,
              wf_error *err)
{
    wf_store_ctx sc = store_ctx(ctx);
    wf_schedule_row row = *claimed;
    wf_code rc = WF_OK;
    for (int attempt = 0; attempt < UPDATE_TRIES; attempt++) {
        if (attempt > 0) {
            wf_error_clear(err);
            rc = wf_store_get_schedule(ctx->store, &sc, claimed->id, &row, err);
            if (rc != WF_OK)
                return rc == WF_E_SCHEDULE_NOT_FOUND ? WF_OK : rc; /* deleted meanwhile */
        }
        if (attempt == 0 || row.next_fire_at < p->next || p->next == 0) {
            row.next_fire_at = p->next;
            row.due_at = p->due;
        }
        row.buffered_at = p->buffered;
        row.due_at = due_with_buffer(row.due_at, p->buffered, now);
        if (p->last_instance != NULL)
            row.last_instance_id = (char *)p->last_instance;
        row.failures = p->failures;
        if (p->pause && row.state == WF_SCHEDULE_ACTIVE) {
            row.state = WF_SCHEDULE_PAUSED;
            row.pause_reason =
                wf_arena_printf(ctx->arena, "%d failed starts in a row", p->failures);
        }
        row.lease_owner = NULL;
        row.lease_until = 0;
        row.updated_at = now;
        rc = wf_store_update_schedule(ctx->store, &sc, &row, err);
        if (rc != WF_E_CONFLICT)
            break;
    }
    return rc;
}

/* Handles the due fire times of one claimed schedule at now: first the
 * fire kept waiting, when its instance before has ended, then the
 * calendar's. The due time is computed again from the next fire time
 * (the stored one may be a recheck of a waiting fire). */
static wf_code
run_schedule(const wf_runtime_ctx *rt, const wf_schedule_row *s, int64_t now,
             wf_schedule_pass_counts *c, wf_error *err)
{
    const wf_ref_ctx *ctx = &rt->ref;
    wf_schedule_spec_in in;
    wf_schedule_spec spec;
    wf_code rc = row_spec(ctx->arena, s, &in, &spec, err);
    progress p = {.next = s->next_fire_at, .failures = s->failures, .buffered = s->buffered_at};
    p.due = rc == WF_OK && p.next != 0 ? p.next + wf_schedule_spec_jitter(&spec, s->id, p.next) : 0;
    wf_schedule_row cur = *s;
    if (rc == WF_OK)
        rc = settle_buffered(ctx, &cur, &p, now, c, err);
    for (int i = 0; rc == WF_OK && i < WF_SCHEDULE_FIRES_PER_PASS && p.next != 0 && p.due <= now;
         i++) {
        rc = fire_next(rt, &cur, &p, now, c, err);
        if (rc == WF_OK)
            rc = first_fire(&spec, s->id, p.next, &p.next, &p.due, err);
        if (s->pause_after_failures > 0 && p.failures >= s->pause_after_failures) {
            p.pause = true;
            break;
        }
    }
    /* A failure leaves the lease to run out: the fire time is tried again
     * then, here or on another replica. */
    return rc == WF_OK ? keep_progress(ctx, s, &p, now, err) : rc;
}

wf_code
wf_schedules_pass(const wf_schedule_host *h, const char *tenant, const char *owner, int64_t now,
                  size_t limit, int64_t deadline_ms, wf_schedule_pass_counts *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_error_nomem(err);
    int64_t lease_ms = h->lease_ms > 0 ? h->lease_ms : WF_SCHEDULE_LEASE_MS_DEFAULT;
    wf_store_ctx sc = {tenant, deadline_ms, a};
    wf_schedule_row *rows = NULL;
    size_t n = 0;
    wf_code rc =
        wf_store_claim_schedules(h->store, &sc, owner, now, lease_ms, limit, &rows, &n, err);
    out->schedules = rc == WF_OK ? n : 0;
    for (size_t i = 0; rc == WF_OK && i < n; i++) {
        wf_arena *ra = wf_arena_new();
        if (ra == NULL) {
            rc = wf_error_nomem(err);
            break;
        }
        wf_runtime_ctx rt = {.ref = {.store = h->store,
                                     .dir = h->dir,
                                     .tenant = rows[i].tenant,
                                     .actor = rows[i].created_by,
                                     .deadline_ms = deadline_ms,
                                     .arena = ra,
                                     .max_variables_bytes = h->max_variables_bytes,
                                     .no_auto_create = true},
                             .wake = h->wake,
                             .wake_arg = h->wake_arg};
        wf_error e;
        wf_error_clear(&e);
        wf_code src = run_schedule(&rt, &rows[i], now, out, &e);
        if (src == WF_E_STORE_UNAVAILABLE) {
            *err = e;
            rc = src;
        } else if (src != WF_OK) {
            WF_LOG(WF_LOG_WARN, "schedules",
                   "schedule %s (tenant %s) not handled: %s (%s); retried after its lease",
                   rows[i].id, rows[i].tenant, e.msg, wf_code_reason(src));
        }
        wf_arena_free(ra);
    }
    if (out->started > 0 && h->wake != NULL)
        h->wake(h->wake_arg, WF_RUNTIME_TOPIC_EVENTS);
    wf_arena_free(a);
    return rc;
}

/* ---- BackfillSchedule -------------------------------------------------------- */

static wf_code
backfill_check(const wf_ref_ctx *ctx, const wf_schedule_backfill_in *in, int64_t now, wf_error *err)
{
    wf_code rc = check_id(ctx, in->id, err);
    if (rc == WF_OK && (in->from == 0 || in->to == 0))
        rc = wf_work_invalid(ctx, in->from == 0 ? "from_time" : "to_time", "is required", err);
    if (rc == WF_OK && in->to <= in->from)
        rc = wf_work_invalid(ctx, "to_time", "is not after from_time", err);
    if (rc == WF_OK && in->to > now)
        rc = wf_work_invalid(ctx, "to_time", "is after now (later fire times are the calendar's)",
                             err);
    if (rc == WF_OK && (in->overlap < 0 || in->overlap > WF_OVERLAP_CANCEL_OTHER))
        rc = wf_work_invalid(ctx, "overlap", "is not one of the policies", err);
    return rc;
}

/* The fire times of s in [in->from, in->to), oldest first, into *out
 * (*n of them); more than max: BACKFILL_TOO_LARGE. */
static wf_code
backfill_times(const wf_ref_ctx *ctx, const wf_schedule_spec *s, const wf_schedule_backfill_in *in,
               size_t max, int64_t **out, size_t *n, wf_error *err)
{
    *n = 0;
    *out = wf_arena_calloc(ctx->arena, max + 1, sizeof **out);
    wf_code rc = *out != NULL ? WF_OK : wf_error_nomem(err);
    int64_t after = in->from - 1;
    while (rc == WF_OK && *n <= max) {
        bool none = false;
        rc = wf_schedule_spec_next(s, after, &after, &none, err);
        if (rc != WF_OK || none || after >= in->to)
            break;
        (*out)[(*n)++] = after;
    }
    if (rc != WF_OK || *n <= max)
        return rc;
    const char *msg = wf_arena_printf(
        ctx->arena, "holds more than %zu fire times of schedule \"%s\" (WF_SCHEDULE_BACKFILL_MAX)",
        max, in->id);
    return msg != NULL ? wf_work_violation(ctx, WF_E_BACKFILL_TOO_LARGE, "to_time", msg, err)
                       : wf_error_nomem(err);
}

/* What a backfill's fire time becomes under overlap: STARTED, unless the
 * instance started last (cur's) still runs; then SKIPPED (SKIP, and
 * BUFFER_ONE: a backfill keeps nothing waiting), or STARTED after
 * cancelling it (CANCEL_OTHER, *cancel). */
static wf_code
backfill_decide(const wf_ref_ctx *ctx, const wf_schedule_row *cur, int overlap, int *outcome,
                const char **cancel, wf_error *err)
{
    *cancel = NULL;
    *outcome = WF_RUN_STARTED;
    if (overlap == WF_OVERLAP_ALLOW_ALL)
        return WF_OK;
    bool runs = false;
    wf_code rc = still_runs(ctx, cur->last_instance_id, &runs, err);
    if (rc != WF_OK || !runs)
        return rc;
    if (overlap == WF_OVERLAP_CANCEL_OTHER)
        *cancel = cur->last_instance_id;
    else
        *outcome = WF_RUN_SKIPPED;
    return WF_OK;
}

/* Handles the fire time nominal of cur for a backfill: its run into out,
 * or out->already when it had one. */
static wf_code
backfill_one(const wf_runtime_ctx *rt, wf_schedule_row *cur, int overlap, int64_t nominal,
             int64_t now, wf_schedule_backfill_out *out, wf_error *err)
{
    fire_in in = {.nominal = nominal, .backfill = true};
    const char *victim = NULL;
    wf_code rc = backfill_decide(&rt->ref, cur, overlap, &in.outcome, &victim, err);
    if (rc == WF_OK && victim != NULL)
        rc = cancel_first(rt, cur, victim, &in, err);
    wf_schedule_run_row run;
    bool already = false;
    if (rc == WF_OK)
        rc = fire(&rt->ref, cur, &in, now, NULL, &run, &already, err);
    if (rc != WF_OK)
        return rc;
    if (!already && run.outcome == WF_RUN_STARTED)
        cur->last_instance_id = run.instance_id;
    if (already)
        out->already++;
    else
        out->runs[out->n_runs++] = run;
    return WF_OK;
}

/* The instance a backfill started last becomes the schedule's last (for
 * the overlap of the fire times after it), written against the row's
 * version, again when a pass or a change wrote meanwhile. */
static wf_code
backfill_keep_last(const wf_ref_ctx *ctx, const char *id, const char *instance_id, wf_error *err)
{
    wf_store_ctx sc = store_ctx(ctx);
    wf_code rc = WF_OK;
    for (int attempt = 0; attempt < UPDATE_TRIES; attempt++) {
        wf_schedule_row row;
        wf_error_clear(err);
        rc = wf_store_get_schedule(ctx->store, &sc, id, &row, err);
        if (rc != WF_OK)
            return rc == WF_E_SCHEDULE_NOT_FOUND ? WF_OK : rc; /* deleted meanwhile */
        row.last_instance_id = (char *)instance_id;
        rc = wf_store_update_schedule(ctx->store, &sc, &row, err);
        if (rc != WF_E_CONFLICT)
            break;
    }
    return rc;
}

wf_code
wf_schedules_backfill(const wf_runtime_ctx *rt, const wf_schedule_backfill_in *in, int64_t now,
                      wf_uow_idem *idem, wf_schedule_backfill_out *out, wf_error *err)
{
    const wf_ref_ctx *ctx = &rt->ref;
    memset(out, 0, sizeof *out);
    wf_store_ctx sc = store_ctx(ctx);
    wf_code rc = backfill_check(ctx, in, now, err);
    if (rc == WF_OK)
        rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    wf_schedule_row row;
    wf_schedule_spec_in spec_in;
    wf_schedule_spec spec;
    int64_t *times = NULL;
    size_t n = 0;
    rc = wf_store_get_schedule(ctx->store, &sc, in->id, &row, err);
    if (rc == WF_OK)
        rc = row_spec(ctx->arena, &row, &spec_in, &spec, err);
    if (rc == WF_OK)
        rc =
            backfill_times(ctx, &spec, in, in->max > 0 ? in->max : WF_SCHEDULE_BACKFILL_MAX_DEFAULT,
                           &times, &n, err);
    if (rc == WF_OK && (out->runs = wf_arena_calloc(ctx->arena, n + 1, sizeof *out->runs)) == NULL)
        rc = wf_error_nomem(err);
    int overlap = in->overlap != 0 ? in->overlap : row.overlap;
    const char *last = row.last_instance_id;
    for (size_t i = 0; rc == WF_OK && i < n; i++)
        rc = backfill_one(rt, &row, overlap, times[i], now, out, err);
    if (rc == WF_OK && row.last_instance_id != last)
        rc = backfill_keep_last(ctx, in->id, row.last_instance_id, err);
    return rc == WF_OK ? wf_uow_idem_record(ctx->store, &sc, idem, out, err) : rc;
}
