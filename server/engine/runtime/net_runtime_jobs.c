/*
 * net_runtime_jobs: the jobs of AUTO transitions (workflow.proto,
 * ActivateJobs): activation, completion, failure with retries and backoff, and
 * lease extension.
 *
 * Activation is a cross-instance query (wf_tx_activate_jobs: FOR UPDATE
 * SKIP LOCKED, a fresh key per activation, no more jobs than the answer
 * can carry), in a transaction with the JOB_ACTIVATED events written
 * here. Everything else is one unit of work on the job's root,
 * which also locks the aggregate's jobs, so an activation never races a
 * completion. A job is addressed by its current key only. A key is
 * "<instance id>.<uuid>", so that CompleteJob, FailJob and ExtendJobLease
 * lock the job's tree at once, without reading the job by key first
 * (keys made before were a bare UUID; they are still looked up by key):
 *   - a key of neither form can never have been one: JOB_NOT_FOUND;
 *   - any other key that is not the current activation of a job still
 *     ACTIVATED in a running instance: JOB_LEASE_LOST (re-activated after
 *     its lease expired, withdrawn by a competing firing, failed, or the
 *     instance ended). Keys are not kept after they are replaced, so "never
 *     existed" and "replaced" cannot be told apart; the retry-safe answer
 *     for a worker is the same.
 *   - a key whose lease expired but that no activation has replaced yet is
 *     still accepted (workflow.proto, CompleteJob).
 *
 * Attempts: a job row is created with attempt 0 (the wire's attempt 1).
 * FailJob spends one; while attempts remain and the failure is retryable
 * the job returns to ACTIVATABLE after
 *     min(max_backoff, initial_backoff * multiplier^(n-1)) * U(0.8, 1.2)
 * for failed attempt n (or backoff_override, without jitter); else the
 * job FAILS: the instance starts compensating when it has completed
 * transitions with a compensation_job_type (net_runtime_saga.c), else it
 * becomes FAILED with last_error (an incident, see RetryInstance). A
 * compensation job that fails for good is recorded and compensation
 * continues. An expired lease spends nothing.
 *
 * A completion the net cannot route (no output arc matches, a guard or
 * expression fails) succeeds as a call and is an incident (unroutable):
 * the job FAILED, the instance FAILED, RetryInstance re-arms the job.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "defcache.h"
#include "vars.h"
#include "ids.h"
#include "wf_id.h"
#include "wf_time.h"
#include "wf_str.h"

#define ERROR_MESSAGE_MAX 4096

static bool
printable(const char *s, size_t min, size_t max, bool spaces)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n < min || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e || (!spaces && c == ' '))
            return false;
    }
    return true;
}

/* ---- activation ------------------------------------------------------------------------ */

wf_code
wf_runtime_activation_check(const wf_runtime_ctx *ctx, const wf_runtime_activation *a,
                            wf_error *err)
{
    if (!printable(a->job_type, 1, 128, false))
        return wf_work_invalid(&ctx->ref, "job_type",
                               "must be 1 to 128 printable characters without spaces", err);
    if (!printable(a->worker, 0, 128, true))
        return wf_work_invalid(&ctx->ref, "worker", "must be at most 128 printable characters",
                               err);
    if (a->max_jobs < 0)
        return wf_work_invalid(&ctx->ref, "max_jobs", "must not be negative", err);
    if (a->lease_ms < 0 || a->lease_ms > WF_RUNTIME_MAX_LEASE_MS)
        return wf_work_invalid(&ctx->ref, "lease", "must be positive and at most 24 hours", err);
    return WF_OK;
}

/* The lease of transition_id in the definition of instance_id; 0 when it
 * cannot be told (the default lease then stays). */
static int64_t
transition_lease(const wf_runtime_ctx *ctx, const wf_job_row *job)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_instance_row in;
    wf_definition_row def;
    const wf_net *net;
    wf_error e;
    if (wf_store_get_instance(ctx->ref.store, &sc, job->instance_id, &in, &e) != WF_OK ||
        wf_store_get_definition(ctx->ref.store, &sc, in.definition_key, in.definition_version, &def,
                                &e) != WF_OK ||
        !WF_DEF_RUNS_NET(def.kind) || wf_defcache_net(&def, ctx->ref.arena, &net, &e) != WF_OK)
        return 0;
    int t = wf_net_transition_index(net, job->transition_id);
    return t >= 0 ? wf_net_lease_effective(&net->transitions[t]) : 0;
}

typedef struct lease_op {
    const wf_runtime_ctx *ctx;
    const wf_job_row *job;
    int64_t expires_at;
    bool done;
} lease_op;

/* Sets the lease of an activation the store made with the default lease,
 * if that activation is still current. */
static wf_code
relet_body(wf_tx *tx, void *arg, wf_error *err)
{
    lease_op *op = arg;
    net_work w;
    op->done = false;
    wf_code rc =
        wf_runtime__open(&w, &op->ctx->ref, tx, op->job->instance_id, op->job->root_id, err);
    if (rc != WF_OK)
        return rc;
    size_t ji = wf_runtime__find(&w, &w.jobs, sizeof(wf_job_row), op->job->id);
    if (ji == WF_WORK_NONE)
        return WF_OK;
    wf_job_row *j = NW_ROW(&w, jobs, wf_job_row, ji);
    if (j->state != WF_JOB_ACTIVATED || !wf_str_eq(j->key, op->job->key))
        return WF_OK;
    j->lease_expires_at = op->expires_at;
    wf_runtime__dirty(&w.jobs, ji);
    op->done = true;
    return wf_runtime__write(&w, err);
}

/* No lease asked: each job gets its transition's lease. The store leased
 * with the default; the few transitions with another one are re-let (best
 * effort: the default lease stands on failure). */
static void
relet_all(const wf_runtime_ctx *ctx, wf_job_row *rows, size_t n, int64_t lease, int64_t now)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    for (size_t i = 0; i < n; i++) {
        wf_job_row *j = &rows[i];
        int64_t want = transition_lease(ctx, j);
        if (want <= 0 || want == lease)
            continue;
        lease_op op = {ctx, j, now + want * 1000, false};
        wf_error e;
        if (wf_uow_run(ctx->ref.store, &sc, NULL, relet_body, &op, NULL, &e) == WF_OK && op.done)
            j->lease_expires_at = op.expires_at;
    }
}

static size_t
activation_max(const wf_runtime_activation *a)
{
    return a->max_jobs <= 0                             ? 1
           : a->max_jobs > WF_RUNTIME_MAX_JOBS_PER_CALL ? WF_RUNTIME_MAX_JOBS_PER_CALL
                                                        : (size_t)a->max_jobs;
}

typedef struct activate_op {
    const wf_runtime_ctx *ctx;
    const wf_runtime_activation *a;
    int64_t lease, now;
    bool last;
    wf_uow_idem *idem; /* NULL: no request record */
    wf_runtime_activated *out;
    wf_job_row *rows;
} activate_op;

/* The JOB_ACTIVATED event of one lease. lowerCamelCase like every event;
 * the key is there so that an audit of the event log can tell which
 * activation a completion used; attempt counts failed attempts from 0,
 * as the row does. */
static wf_code
activated_event(wf_arena *a, const wf_job_row *j, int64_t now, wf_event_row *ev, wf_error *err)
{
    json_t *data = json_pack("{s:s,s:s,s:s,s:i}", "jobId", j->id, "jobKey", j->key, "worker",
                             j->worker != NULL ? j->worker : "", "attempt", (json_int_t)j->attempt);
    char *text = data != NULL ? wf_vars_dump(a, data) : NULL;
    json_decref(data);
    if (text == NULL)
        return wf_error_nomem(err);
    *ev = (wf_event_row){.root_id = j->root_id,
                         .instance_id = j->instance_id,
                         .type = "JOB_ACTIVATED",
                         .data_json = text,
                         .time = now};
    return WF_OK;
}

/* Leases, and writes one JOB_ACTIVATED event per lease in the same
 * transaction (with the writes deferred, the events ride with the
 * commit). */
static wf_code
activate_body(wf_tx *tx, void *arg, wf_error *err)
{
    activate_op *op = arg;
    size_t n = 0;
    op->rows = NULL;
    op->out->rows = NULL;
    op->out->n = 0;
    wf_code rc = wf_tx_activate_jobs(
        tx, op->a->job_type, op->a->worker != NULL ? op->a->worker : "", activation_max(op->a),
        op->ctx->ref.answer_bytes, op->lease, op->now, &op->rows, &n, err);
    if (rc != WF_OK)
        return rc;
    op->out->rows = op->rows;
    op->out->n = n;
    if (n == 0) {
        if (!op->last)
            wf_uow_idem_skip_record(op->idem);
        return WF_OK;
    }
    wf_arena *a = op->ctx->ref.arena;
    wf_event_row *evs = wf_arena_calloc(a, n, sizeof *evs);
    if (evs == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; rc == WF_OK && i < n; i++)
        rc = activated_event(a, &op->rows[i], op->now, &evs[i], err);
    if (rc != WF_OK)
        return rc;
    wf_store_changes c = {.events = evs, .n_events = n};
    return wf_tx_apply(tx, &c, err);
}

wf_code
wf_runtime_activate_jobs(const wf_runtime_ctx *ctx, const wf_runtime_activation *a,
                         wf_job_row **rows, size_t *n, wf_error *err)
{
    wf_runtime_activated out = {NULL, 0};
    activate_op op = {ctx,         a,    a->lease_ms > 0 ? a->lease_ms : WF_NET_DEFAULT_LEASE_MS,
                      wf_now_us(), true, NULL,
                      &out,        NULL};
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_code rc = wf_uow_run(ctx->ref.store, &sc, NULL, activate_body, &op, NULL, err);
    if (rc != WF_OK)
        return rc;
    *rows = op.rows;
    *n = out.n;
    if (a->lease_ms <= 0)
        relet_all(ctx, *rows, *n, op.lease, op.now);
    return WF_OK;
}

wf_code
wf_runtime_activate_recorded(const wf_runtime_ctx *ctx, const wf_runtime_activation *a,
                             wf_uow_idem *idem, bool last, wf_runtime_activated *out, wf_error *err)
{
    out->rows = NULL;
    out->n = 0;
    if (!wf_uow_idem_active(idem)) {
        wf_job_row *rows = NULL;
        size_t n = 0;
        wf_code rc = wf_runtime_activate_jobs(ctx, a, &rows, &n, err);
        if (rc == WF_OK) {
            out->rows = rows;
            out->n = n;
        }
        return rc;
    }
    activate_op op = {ctx,         a,    a->lease_ms > 0 ? a->lease_ms : WF_NET_DEFAULT_LEASE_MS,
                      wf_now_us(), last, idem,
                      out,         NULL};
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_code rc = wf_uow_run(ctx->ref.store, &sc, idem, activate_body, &op, out, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem)) {
        out->rows = NULL;
        out->n = 0;
        return rc;
    }
    /* The record holds the default lease of jobs whose transition asks for
     * another one: a replay reports that lease, the re-let one stands. */
    if (a->lease_ms <= 0)
        relet_all(ctx, op.rows, out->n, op.lease, op.now);
    return WF_OK;
}

wf_code
wf_runtime_job_lease_held(const wf_runtime_ctx *ctx, const char *key, int64_t now, bool *held,
                          int64_t *expires_at, wf_error *err)
{
    *held = false;
    *expires_at = 0;
    if (key == NULL || key[0] == '\0')
        return WF_OK;
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_job_row job;
    wf_code rc = wf_store_get_job_by_key(ctx->ref.store, &sc, key, &job, err);
    if (rc == WF_E_JOB_NOT_FOUND) {
        wf_error_clear(err);
        return WF_OK;
    }
    if (rc != WF_OK)
        return rc;
    if (job.state == WF_JOB_ACTIVATED && wf_str_eq(job.key, key) && job.lease_expires_at > now) {
        *held = true;
        *expires_at = job.lease_expires_at;
    }
    return WF_OK;
}

/* ---- completion, failure, lease ------------------------------------------------------------ */

typedef enum job_kind { JOB_COMPLETE, JOB_FAIL, JOB_EXTEND } job_kind;

typedef struct job_op {
    const wf_runtime_ctx *ctx;
    job_kind kind;
    const char *key;
    const char *instance_id; /* of the job, read before the unit of work */
    const char *root_id;     /* of the job, likewise */
    const char *patch;       /* CompleteJob */
    const char *next_step;   /* CompleteJob: the step to go to, NULL = the rules */
    const wf_runtime_job_failure *fail;
    const char *message; /* FailJob, cut */
    int64_t lease_ms;    /* ExtendJobLease */
    int64_t expires_at;  /* out */
    const char **wake;
    size_t n_wake;
} job_op;

static wf_code
lease_lost(const char *key, const char *why, wf_error *err)
{
    return wf_error_set(err, WF_E_JOB_LEASE_LOST, "job key \"%.128s\" %s", key, why);
}

static wf_code
locate_job(job_op *op, wf_error *err)
{
    const char *key = op->key;
    wf_code rc = wf_ids_check(&op->ctx->ref, WF_ID_JOB_KEY, "job_key", key, err);
    if (rc != WF_OK)
        return rc;
    /* "<instance id>.<uuid>" (the store makes them so): the unit of work
     * locks the instance's tree at once and finds the job by its key
     * there, with no read by key first. */
    size_t instance_len;
    if (wf_id_job_key_split(key, &instance_len)) {
        op->instance_id = wf_arena_strndup(op->ctx->ref.arena, key, instance_len);
        op->root_id = NULL;
        return op->instance_id != NULL ? WF_OK : wf_error_nomem(err);
    }
    /* A bare UUID, as keys were made before they named the instance. */
    wf_store_ctx sc = wf_work_store_ctx(&op->ctx->ref);
    wf_job_row job;
    rc = wf_store_get_job_by_key(op->ctx->ref.store, &sc, key, &job, err);
    if (rc == WF_E_JOB_NOT_FOUND)
        return lease_lost(key, "is not the current activation of any job", err);
    if (rc == WF_OK) {
        op->instance_id = job.instance_id;
        op->root_id = job.root_id;
    }
    return rc;
}

/* Locks the job's root and checks that op->key is still its current
 * activation. *ji is the job's index in the working set. */
static wf_code
open_job(job_op *op, wf_tx *tx, net_work *w, size_t *ji, wf_error *err)
{
    wf_code rc = wf_runtime__open(w, &op->ctx->ref, tx, op->instance_id, op->root_id, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND) /* no job ever had a key naming no instance */
        return wf_error_set(err, WF_E_JOB_NOT_FOUND, "no job has key \"%.128s\"", op->key);
    if (rc != WF_OK)
        return rc;
    *ji = WF_WORK_NONE;
    for (size_t i = 0; i < w->jobs.n && *ji == WF_WORK_NONE; i++)
        if (!(w->jobs.flags[i] & NW_GONE) &&
            wf_str_eq(NW_ROW(w, jobs, wf_job_row, i)->key, op->key))
            *ji = i;
    if (*ji == WF_WORK_NONE)
        return lease_lost(op->key,
                          "is no longer the job's activation (re-activated after its "
                          "lease expired, withdrawn, or finished)",
                          err);
    const wf_job_row *j = NW_ROW(w, jobs, wf_job_row, *ji);
    if (j->state != WF_JOB_ACTIVATED)
        return lease_lost(op->key, "is not an active lease", err);
    /* A lease taken before SuspendInstance is honoured: its completion or
     * failure is applied, and what it enables waits for the resume. */
    wf_instance_status st = w->rw.insts[w->inst].status;
    bool live = j->compensation ? st == WF_INSTANCE_COMPENSATING
                                : st == WF_INSTANCE_RUNNING || st == WF_INSTANCE_SUSPENDED;
    if (!live)
        return lease_lost(op->key, "belongs to an instance that is not running", err);
    return WF_OK;
}

/* The place of CompleteJob's next_step: a step of the instance's pinned
 * definition, for a forward job of a STEPS definition. */
static wf_code
goto_place_of(job_op *op, const net_work *w, const wf_job_row *j, const char **place, wf_error *err)
{
    const wf_net *net = w->net;
    char msg[300];
    wf_code code = WF_E_INVALID_ARGUMENT;
    if (net->n_steps == 0)
        snprintf(msg, sizeof msg,
                 "applies only to jobs of STEPS definitions; definition \"%.128s\" is a net",
                 net->key != NULL ? net->key : "");
    else if (j->compensation)
        snprintf(msg, sizeof msg, "does not apply to a compensation job");
    else if (wf_steps_index(net, op->next_step) < 0) {
        code = WF_E_UNKNOWN_STEP;
        snprintf(msg, sizeof msg, "names no step of definition \"%.128s\" version %d: \"%.64s\"",
                 net->key != NULL ? net->key : "", (int)w->rw.insts[w->inst].definition_version,
                 op->next_step);
    } else {
        *place = wf_steps_place_id(w->rw.arena, op->next_step);
        return *place != NULL ? WF_OK : wf_error_nomem(err);
    }
    if (op->ctx->ref.violation != NULL)
        op->ctx->ref.violation(op->ctx->ref.violation_arg, "next_step", NULL, msg);
    return wf_error_set(err, code, "next_step %s", msg);
}

/* The completion of job job_id was refused by the net (no output arc
 * matched, a guard or expression failed): as a Zeebe incident, the
 * call succeeds and the instance becomes FAILED, nothing of the
 * completion is kept (its output is not merged), and the job is FAILED
 * (never leased again) until RetryInstance re-arms it with the
 * variables as they are then. No saga starts: the step did not fail,
 * its routing did, and SetVariables can fix that. */
static wf_code
unroutable(net_work *w, const job_op *op, const char *job_id, wf_error *err)
{
    char why[512];
    snprintf(why, sizeof why, "%s", err->msg);
    wf_code code = err->code;
    wf_error_clear(err);
    wf_code rc = wf_runtime__reset(w, err);
    if (rc != WF_OK)
        return rc;
    size_t ji = wf_runtime__find(w, &w->jobs, sizeof(wf_job_row), job_id);
    if (ji == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INTERNAL, "job \"%s\" is gone", job_id);
    wf_job_row *j = NW_ROW(w, jobs, wf_job_row, ji);
    const char *trans = j->transition_id != NULL ? j->transition_id : "";
    char msg[ERROR_MESSAGE_MAX + 1024];
    snprintf(msg, sizeof msg,
             "completion of job \"%s\" of transition \"%s\" could not be routed: %s; "
             "output: %.*s",
             j->id, trans, why, ERROR_MESSAGE_MAX, op->patch != NULL ? op->patch : "{}");
    j->state = WF_JOB_FAILED;
    j->key = NULL;
    j->worker = NULL;
    j->lease_expires_at = 0;
    j->last_error = wf_work_strdup(&w->rw, msg);
    if (j->last_error == NULL)
        return wf_error_nomem(err);
    wf_runtime__dirty(&w->jobs, ji);
    return wf_runtime__fail_instance_data(
        w, wf_code_reason(code), trans, j->attempt + 1, msg,
        json_pack("{s:s,s:s,s:s,s:s}", "jobId", j->id, "transitionId", trans, "workItemId",
                  j->work_item_id != NULL ? j->work_item_id : "", "reason", wf_code_reason(code)),
        err);
}

static wf_code
complete_body(wf_tx *tx, void *arg, wf_error *err)
{
    job_op *op = arg;
    net_work w;
    size_t ji;
    op->n_wake = 0;
    wf_code rc = open_job(op, tx, &w, &ji, err);
    if (rc != WF_OK)
        return rc;
    const wf_job_row *j = NW_ROW(&w, jobs, wf_job_row, ji);
    const char *goto_place = NULL;
    if (op->next_step != NULL && op->next_step[0] != '\0') {
        rc = goto_place_of(op, &w, j, &goto_place, err);
        if (rc != WF_OK)
            return rc;
    }
    if (j->compensation) {
        /* A saga step: the next one, or the end (net_runtime_saga.c). */
        rc = wf_runtime__saga_job_done(&w, ji, op->patch, err);
        if (rc == WF_OK)
            rc = wf_runtime__write(&w, err);
        if (rc == WF_OK)
            wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
        return rc;
    }
    const char *item_id = j->work_item_id;
    size_t ii = wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row), item_id);
    if (ii == WF_WORK_NONE ||
        NW_ROW(&w, items, wf_work_item_row, ii)->state != WF_WORK_ITEM_ENABLED)
        return lease_lost(op->key, "belongs to a work item that is no longer enabled", err);
    const char *job_id = j->id;
    rc = wf_runtime__event(&w, "JOB_COMPLETED",
                           json_pack("{s:s,s:s,s:s,s:i}", "jobId", j->id, "transitionId",
                                     j->transition_id != NULL ? j->transition_id : "", "workItemId",
                                     item_id, "attempt", (int)j->attempt + 1),
                           err);
    wf_runtime__gone(&w.jobs, ji);
    const wf_transition *tr =
        wf_runtime__transition_of(&w, NW_ROW(&w, items, wf_work_item_row, ii)->transition_id);
    if (rc == WF_OK && wf_runtime__is_foreach(tr))
        /* One item of a for-each: the join fires when it is met. */
        rc = wf_runtime__foreach_job_done(&w, ji, ii, tr, op->patch, err);
    else if (rc == WF_OK)
        rc = wf_runtime__fire_goto(&w, item_id, op->patch, goto_place, err);
    if (wf_runtime__incident_code(rc))
        rc = unroutable(&w, op, job_id, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK)
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return rc;
}

/* A uniform double in [0, 1) (splitmix64 over a shared counter). */
static double
uniform01(void)
{
    static uint64_t state;
    uint64_t z =
        __atomic_add_fetch(&state, 0x9E3779B97F4A7C15ULL, __ATOMIC_RELAXED) ^ (uint64_t)wf_now_us();
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* Delay before the attempt after failed attempt n = attempt + 1. */
static int64_t
backoff_ms(const wf_job_row *j)
{
    double initial = (double)(j->initial_backoff_ms > 0 ? j->initial_backoff_ms
                                                        : WF_NET_DEFAULT_INITIAL_BACKOFF_MS);
    double mult = j->backoff_multiplier >= 1.0 ? j->backoff_multiplier : WF_NET_DEFAULT_MULTIPLIER;
    double cap =
        (double)(j->max_backoff_ms > 0 ? j->max_backoff_ms : WF_NET_DEFAULT_MAX_BACKOFF_MS);
    /* initial * mult^attempt, by multiplication (no libm), stopping at the
     * cap so large attempt numbers cannot overflow. */
    double d = initial;
    for (int32_t k = 0; k < j->attempt && d < cap; k++)
        d *= mult;
    if (!(d < cap))
        d = cap;
    d *= 0.8 + 0.4 * uniform01();
    return (int64_t)(d + 0.5);
}

static wf_code
fail_body(wf_tx *tx, void *arg, wf_error *err)
{
    job_op *op = arg;
    net_work w;
    size_t ji;
    op->n_wake = 0;
    wf_code rc = open_job(op, tx, &w, &ji, err);
    if (rc != WF_OK)
        return rc;
    wf_job_row *j = NW_ROW(&w, jobs, wf_job_row, ji);
    int32_t spent = j->attempt + 1; /* the wire's number of the failed attempt */
    bool retry = op->fail->retryable && spent < j->max_attempts;
    rc = wf_runtime__event(&w, "JOB_FAILED",
                           json_pack("{s:s,s:i,s:s,s:b,s:s}", "jobId", j->id, "attempt", (int)spent,
                                     "errorMessage", op->message, "retryable", op->fail->retryable,
                                     "transitionId",
                                     j->transition_id != NULL ? j->transition_id : ""),
                           err);
    if (rc != WF_OK)
        return rc;
    j = NW_ROW(&w, jobs, wf_job_row, ji);
    j->last_error = (char *)op->message;
    j->key = NULL;
    j->worker = NULL;
    j->lease_expires_at = 0;
    wf_runtime__dirty(&w.jobs, ji);
    if (retry) {
        int64_t delay = op->fail->has_backoff ? op->fail->backoff_ms : backoff_ms(j);
        j->attempt = spent;
        j->state = WF_JOB_ACTIVATABLE;
        j->activatable_at = w.rw.now + delay * 1000;
        char *when = wf_runtime__time_text(w.rw.arena, j->activatable_at);
        if (when == NULL)
            return wf_error_nomem(err);
        rc = wf_runtime__event(&w, "JOB_RETRY_SCHEDULED",
                               json_pack("{s:s,s:i,s:s,s:I}", "jobId", j->id, "attempt",
                                         (int)spent + 1, "activatableAt", when, "backoffMs",
                                         (json_int_t)delay),
                               err);
        if (rc == WF_OK)
            rc = wf_runtime__add_wake(&w, j->job_type, err);
    } else if (j->compensation) {
        /* A saga step failed for good: recorded, compensation continues. */
        j->attempt = spent;
        rc = wf_runtime__saga_job_failed(&w, ji, op->message, err);
    } else {
        j->attempt = spent;
        j->state = WF_JOB_FAILED;
        char msg[ERROR_MESSAGE_MAX + 256];
        snprintf(msg, sizeof msg, "job \"%s\" of transition \"%s\" failed after %d attempt%s: %s",
                 j->id, j->transition_id != NULL ? j->transition_id : "", (int)spent,
                 spent == 1 ? "" : "s", op->message);
        /* Completed compensable steps: the saga; else an incident. */
        bool started = false;
        rc = wf_runtime__saga_begin(&w, msg, &started, err);
        if (rc == WF_OK && !started)
            rc = wf_runtime__fail_instance(&w, "JOB_FAILED", j->transition_id, (int32_t)spent, msg,
                                           err);
    }
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK)
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return rc;
}

static wf_code
extend_body(wf_tx *tx, void *arg, wf_error *err)
{
    job_op *op = arg;
    net_work w;
    size_t ji;
    op->n_wake = 0;
    wf_code rc = open_job(op, tx, &w, &ji, err);
    if (rc != WF_OK)
        return rc;
    wf_job_row *j = NW_ROW(&w, jobs, wf_job_row, ji);
    j->lease_expires_at = w.rw.now + op->lease_ms * 1000;
    wf_runtime__dirty(&w.jobs, ji);
    op->expires_at = j->lease_expires_at;
    return wf_runtime__write(&w, err);
}

static wf_code
run_job_op(job_op *op, wf_uow_body_fn body, wf_uow_idem *idem, const void *result, wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&op->ctx->ref);
    wf_code rc = locate_job(op, err);
    /* A retry of a call that succeeded: the key is spent, and the first
     * answer is due, not the error. */
    if (rc == WF_E_JOB_LEASE_LOST)
        rc = wf_uow_answer_again(op->ctx->ref.store, &sc, idem, rc, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    rc = wf_uow_run(op->ctx->ref.store, &sc, idem, body, op, result, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(op->ctx, op->wake, op->n_wake);
    return rc;
}

wf_code
wf_runtime_complete_job(const wf_runtime_ctx *ctx, const char *key, const char *variables_json,
                        wf_uow_idem *idem, wf_error *err)
{
    return wf_runtime_complete_job_to(ctx, key, variables_json, NULL, idem, err);
}

wf_code
wf_runtime_complete_job_to(const wf_runtime_ctx *ctx, const char *key, const char *variables_json,
                           const char *next_step, wf_uow_idem *idem, wf_error *err)
{
    job_op op = {.ctx = ctx, .kind = JOB_COMPLETE, .key = key, .next_step = next_step};
    wf_code rc = wf_vars_object(ctx->ref.arena, variables_json, "variables_json", &op.patch, err);
    if (rc != WF_OK)
        return rc;
    return run_job_op(&op, complete_body, idem, &op, err);
}

/* error_message cut to ERROR_MESSAGE_MAX bytes on a UTF-8 boundary. */
static const char *
cut_message(wf_arena *a, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n <= ERROR_MESSAGE_MAX)
        return s != NULL ? s : "";
    n = ERROR_MESSAGE_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return wf_arena_strndup(a, s, n);
}

wf_code
wf_runtime_fail_job(const wf_runtime_ctx *ctx, const wf_runtime_job_failure *f, wf_uow_idem *idem,
                    wf_error *err)
{
    job_op op = {.ctx = ctx, .kind = JOB_FAIL, .key = f->key, .fail = f};
    if (f->has_backoff && f->backoff_ms < 0)
        return wf_work_invalid(&ctx->ref, "backoff_override", "must not be negative", err);
    op.message = cut_message(ctx->ref.arena, f->error_message);
    if (op.message == NULL)
        return wf_error_nomem(err);
    return run_job_op(&op, fail_body, idem, &op, err);
}

wf_code
wf_runtime_extend_job_lease(const wf_runtime_ctx *ctx, const char *key, int64_t lease_ms,
                            wf_uow_idem *idem, int64_t *expires_at, wf_error *err)
{
    job_op op = {.ctx = ctx, .kind = JOB_EXTEND, .key = key, .lease_ms = lease_ms};
    if (lease_ms <= 0 || lease_ms > WF_RUNTIME_MAX_LEASE_MS)
        return wf_work_invalid(&ctx->ref, "lease", "is required: positive and at most 24 hours",
                               err);
    wf_code rc = run_job_op(&op, extend_body, idem, &op.expires_at, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        *expires_at = op.expires_at;
    return rc;
}

/* ---- priority ---------------------------------------------------------------------------- */

typedef struct update_op {
    const wf_runtime_ctx *ctx;
    const char *instance_id;
    const char *job_id;
    int32_t priority;
    wf_job_row *out;
} update_op;

static wf_code
update_body(wf_tx *tx, void *arg, wf_error *err)
{
    update_op *op = arg;
    net_work w;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, NULL, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND)
        return wf_error_set(err, WF_E_JOB_NOT_FOUND, "no job \"%.64s\" in instance \"%.64s\"",
                            op->job_id, op->instance_id);
    if (rc != WF_OK)
        return rc;
    size_t ji = wf_runtime__find(&w, &w.jobs, sizeof(wf_job_row), op->job_id);
    wf_job_row *j = ji != WF_WORK_NONE ? NW_ROW(&w, jobs, wf_job_row, ji) : NULL;
    if (j == NULL || !wf_str_eq(j->instance_id, op->instance_id))
        return wf_error_set(err, WF_E_JOB_NOT_FOUND, "no job \"%.64s\" in instance \"%.64s\"",
                            op->job_id, op->instance_id);
    int32_t before = j->priority;
    if (before != op->priority) {
        j->priority = op->priority;
        wf_runtime__dirty(&w.jobs, ji);
        rc = wf_runtime__event(&w, "JOB_UPDATED",
                               json_pack("{s:s,s:i,s:i}", "jobId", j->id, "priority",
                                         (int)op->priority, "previousPriority", (int)before),
                               err);
        if (rc == WF_OK)
            rc = wf_runtime__write(&w, err);
    }
    if (rc == WF_OK)
        *op->out = *NW_ROW(&w, jobs, wf_job_row, ji);
    return rc;
}

wf_code
wf_runtime_update_job(const wf_runtime_ctx *ctx, const char *instance_id, const char *job_id,
                      int32_t priority, wf_uow_idem *idem, wf_job_row *out, wf_error *err)
{
    wf_code rc = wf_ids_check(&ctx->ref, WF_ID_JOB, "instance_id", instance_id, err);
    if (rc == WF_OK)
        rc = wf_ids_check(&ctx->ref, WF_ID_JOB, "job_id", job_id, err);
    if (rc != WF_OK)
        return rc;
    if (priority < 0 || priority > WF_JOB_PRIORITY_MAX)
        return wf_work_invalid(&ctx->ref, "priority.value", "must be 0 to 100", err);
    update_op op = {ctx, instance_id, job_id, priority, out};
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    return wf_uow_run(ctx->ref.store, &sc, idem, update_body, &op, out, err);
}
