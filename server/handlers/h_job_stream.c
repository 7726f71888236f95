/*
 * h_job_stream: StreamActivatedJobs (jobs pushed to a worker as they
 * become activatable, within a credit) and CompleteJobs (a batch of
 * completions with one outcome each).
 *
 * StreamActivatedJobs runs on the pull-based stream machinery
 * (wf_stream_ops): each step either hands out the next job of a batch the
 * stream has already leased, or, while the stream holds fewer jobs than
 * its credit, runs one activation pass through the engine
 * (wf_runtime_activate_jobs: the very statement ActivateJobs uses, oldest
 * jobs first, SKIP LOCKED) for at most the free credit, or parks. A
 * parked stream listens to "jobs:<type>", like the ActivateJobs long
 * poll, and also asks to run again within RECHECK_MS (a backoff running
 * out notifies nobody) or when the earliest lease it holds runs out.
 *
 * Credit. Every stream of this process is on one registry (reg_mu) with
 * the keys of the activations it holds. A key leaves it, and the stream
 * is woken, when:
 *   - CompleteJob, FailJob or an item of CompleteJobs on this process
 *     answers OK, JOB_LEASE_LOST or JOB_NOT_FOUND for it
 *     (wf_h_job_stream_release);
 *   - its lease runs out: checked with the store when the known end
 *     passes, since ExtendJobLease through another replica moves it (on
 *     this process, wf_h_job_stream_extended moves it at once);
 *   - the stream has no credit left and a recheck (every VERIFY_MS, for
 *     keys held at least that long) finds the key no longer live: a
 *     completion made through another replica.
 * Jobs leased but not yet sent count too. When the stream ends (cancel,
 * deadline, shutdown) the jobs it holds stay leased until completed or
 * until their lease runs out.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vars.h"
#include "h_common.h"
#include "handlers.h"
#include "wf_time.h"

#define MAX_CREDIT 1000
#define MAX_FETCH 64
#define MAX_COMPLETIONS 500
/* Longest pause between two passes of a parked stream. */
#define RECHECK_MS 1000
/* A stream without credit checks with the store, every VERIFY_MS, up to
 * VERIFY_MAX of the keys it has held that long (a completion through
 * another replica). */
#define VERIFY_MS 5000
#define VERIFY_MAX 64
/* Each step's store statements get their own deadline (a stream outlives
 * any one statement). */
#define STEP_DEADLINE_MS 5000

typedef struct held_job {
    char *key;          /* malloc'd */
    int64_t expires_us; /* lease end as last known (wall clock) */
    int64_t since_ms;   /* monotonic: leased, or last confirmed live */
} held_job;

typedef struct jstream {
    wf_app *app;
    const char *tenant; /* a key of another tenant never gives credit back */
    char *topic;        /* "jobs:<type>" */
    wf_runtime_ctx ctx;
    wf_runtime_activation a;
    size_t credit;
    const char *const *fetch;
    size_t nfetch;
    /* Under reg_mu: the keys held, and the registry links. */
    held_job *held; /* credit entries */
    size_t nheld;
    struct jstream *next, *prev;
    /* The stream's worker only: leased jobs not yet sent. */
    wf_arena *batch;
    wf_job_row *rows;
    size_t nrows, nextrow;
    int64_t next_verify_ms;
} jstream;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static jstream *reg_head;

static wf_code
invalid(wf_call *call, const char *field, const char *msg, wf_error *err)
{
    wf_h_violation(call, field, msg);
    return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s %s", field, msg);
}

/* ---- the registry -------------------------------------------------------------------------- */

/* Index of key in js->held, or js->nheld. Caller holds reg_mu. */
static size_t
held_find(const jstream *js, const char *key)
{
    for (size_t i = 0; i < js->nheld; i++)
        if (strcmp(js->held[i].key, key) == 0)
            return i;
    return js->nheld;
}

/* Caller holds reg_mu. */
static void
held_remove(jstream *js, size_t i)
{
    free(js->held[i].key);
    js->held[i] = js->held[--js->nheld];
}

void
wf_h_job_stream_release(wf_app *app, const char *tenant, const char *key)
{
    if (key == NULL || key[0] == '\0')
        return;
    char topic[160];
    topic[0] = '\0';
    pthread_mutex_lock(&reg_mu);
    for (jstream *js = reg_head; js != NULL; js = js->next) {
        if (js->app != app || strcmp(js->tenant, tenant) != 0)
            continue;
        size_t i = held_find(js, key);
        if (i < js->nheld) {
            held_remove(js, i);
            snprintf(topic, sizeof topic, "%s", js->topic);
            break;
        }
    }
    pthread_mutex_unlock(&reg_mu);
    if (topic[0] != '\0')
        wf_app_wake_streams(app, topic);
}

void
wf_h_job_stream_extended(wf_app *app, const char *tenant, const char *key, int64_t expires_at)
{
    if (key == NULL || key[0] == '\0')
        return;
    pthread_mutex_lock(&reg_mu);
    for (jstream *js = reg_head; js != NULL; js = js->next) {
        if (js->app != app || strcmp(js->tenant, tenant) != 0)
            continue;
        size_t i = held_find(js, key);
        if (i < js->nheld) {
            js->held[i].expires_us = expires_at;
            break;
        }
    }
    pthread_mutex_unlock(&reg_mu);
}

/* ---- StreamActivatedJobs ------------------------------------------------------------------- */

static wf_code
stream_open(wf_call *call, const ProtobufCMessage *msg, void **state, wf_error *err)
{
    const Workflow__V1__StreamActivatedJobsRequest *req = (const void *)msg;
    jstream *js = wf_arena_calloc(call->arena, 1, sizeof *js);
    if (js == NULL)
        return wf_error_nomem(err);
    js->app = call->app;
    js->tenant = call->tenant;
    wf_h_net_ctx(call, &js->ctx);
    js->ctx.ref.actor = NULL; /* workers are not people */
    js->a = (wf_runtime_activation){.job_type = req->job_type,
                                    .worker = req->worker,
                                    .max_jobs = 1,
                                    .lease_ms = wf_h_duration_ms(req->lease)};
    if (req->lease != NULL && js->a.lease_ms <= 0)
        return invalid(call, "lease", "must be positive and at most 24 hours", err);
    wf_code rc = wf_runtime_activation_check(&js->ctx, &js->a, err);
    if (rc != WF_OK)
        return rc;
    if (req->credit < 1 || req->credit > MAX_CREDIT)
        return invalid(call, "credit", "must be 1 to 1000", err);
    if (req->n_fetch_variables > MAX_FETCH)
        return invalid(call, "fetch_variables", "must hold at most 64 names", err);
    for (size_t i = 0; i < req->n_fetch_variables; i++)
        if (req->fetch_variables[i][0] == '\0')
            return invalid(call, "fetch_variables", "must not hold an empty name", err);
    js->credit = (size_t)req->credit;
    js->fetch = (const char *const *)req->fetch_variables;
    js->nfetch = req->n_fetch_variables;
    js->held = wf_arena_calloc(call->arena, js->credit, sizeof *js->held);
    js->topic = wf_arena_printf(call->arena, "%s%s", WF_TOPIC_JOBS_PREFIX, req->job_type);
    if (js->held == NULL || js->topic == NULL)
        return wf_error_nomem(err);
    call->wake_topic = js->topic;

    pthread_mutex_lock(&reg_mu);
    js->next = reg_head;
    if (reg_head != NULL)
        reg_head->prev = js;
    reg_head = js;
    pthread_mutex_unlock(&reg_mu);
    *state = js;
    return WF_OK;
}

/* The context of one step: the stream's, with this step's arena and a
 * deadline of its own (never past the call's). */
static wf_runtime_ctx
step_ctx(const wf_call *call, const jstream *js, wf_arena *arena)
{
    wf_runtime_ctx ctx = js->ctx;
    int64_t d = wf_mono_ms() + STEP_DEADLINE_MS;
    if (call->deadline_ms > 0 && call->deadline_ms < d)
        d = call->deadline_ms;
    ctx.ref.deadline_ms = d;
    ctx.ref.arena = arena;
    return ctx;
}

/* Checks with the store the held keys that must be: those whose known
 * lease end has passed (an extension elsewhere may have moved it) and,
 * when all is true, up to VERIFY_MAX keys held at least VERIFY_MS (a
 * completion elsewhere). Keys no longer live are given back. */
static wf_code
verify_held(const wf_call *call, jstream *js, wf_arena *scratch, bool all, wf_error *err)
{
    int64_t now_us = wf_now_us(), now_ms = wf_mono_ms();
    char **keys = wf_arena_calloc(scratch, js->credit, sizeof *keys);
    if (keys == NULL)
        return wf_error_nomem(err);
    size_t n = 0, nolder = 0;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < js->nheld; i++) {
        held_job *h = &js->held[i];
        bool due = h->expires_us <= now_us;
        bool old = all && nolder < VERIFY_MAX && h->since_ms + VERIFY_MS <= now_ms;
        if (due || old) {
            keys[n] = wf_arena_strdup(scratch, h->key);
            if (keys[n] == NULL)
                break;
            n++;
            nolder += !due;
        }
    }
    pthread_mutex_unlock(&reg_mu);
    wf_runtime_ctx ctx = step_ctx(call, js, scratch);
    for (size_t k = 0; k < n; k++) {
        bool live = false;
        int64_t expires = 0;
        wf_code rc = wf_runtime_job_lease_held(&ctx, keys[k], now_us, &live, &expires, err);
        if (rc != WF_OK)
            return rc;
        pthread_mutex_lock(&reg_mu);
        size_t i = held_find(js, keys[k]);
        if (i < js->nheld) {
            if (!live) {
                held_remove(js, i);
            } else {
                js->held[i].expires_us = expires;
                js->held[i].since_ms = now_ms;
            }
        }
        pthread_mutex_unlock(&reg_mu);
    }
    return WF_OK;
}

/* Free credit, and the earliest lease end among the held keys (0: none). */
static size_t
free_credit(jstream *js, int64_t *earliest_us)
{
    pthread_mutex_lock(&reg_mu);
    size_t held = js->nheld;
    int64_t e = 0;
    for (size_t i = 0; i < js->nheld; i++)
        if (e == 0 || js->held[i].expires_us < e)
            e = js->held[i].expires_us;
    pthread_mutex_unlock(&reg_mu);
    *earliest_us = e;
    return held < js->credit ? js->credit - held : 0;
}

static wf_stream_step
push_next(jstream *js, wf_arena *scratch, ProtobufCMessage **msg, wf_error *err)
{
    const wf_job_row *r = &js->rows[js->nextrow++];
    Workflow__V1__StreamActivatedJobsResponse *m = wf_arena_alloc(scratch, sizeof *m);
    if (m == NULL) {
        wf_error_nomem(err);
        return WF_STREAM_END;
    }
    workflow__v1__stream_activated_jobs_response__init(m);
    m->job = wf_h_job(scratch, r);
    if (m->job == NULL) {
        wf_error_nomem(err);
        return WF_STREAM_END;
    }
    if (js->nfetch > 0) {
        const char *picked = NULL;
        if (wf_vars_pick(scratch, r->variables_json, js->fetch, js->nfetch, &picked, err) != WF_OK)
            return WF_STREAM_END;
        m->job->variables_json = (char *)picked;
    }
    *msg = &m->base;
    return WF_STREAM_MESSAGE;
}

static wf_stream_step
stream_next(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg, wf_error *err)
{
    jstream *js = state;
    if (js->nextrow < js->nrows)
        return push_next(js, scratch, msg, err);

    int64_t earliest = 0;
    size_t avail = free_credit(js, &earliest);
    int64_t now_ms = wf_mono_ms();
    bool recheck = avail == 0 && now_ms >= js->next_verify_ms;
    if ((earliest != 0 && earliest <= wf_now_us()) || recheck) {
        if (verify_held(call, js, scratch, recheck, err) != WF_OK)
            return WF_STREAM_END; /* the store is gone: the worker reopens */
        if (recheck)
            js->next_verify_ms = now_ms + VERIFY_MS;
        avail = free_credit(js, &earliest);
    }

    if (avail > 0) {
        wf_arena_free(js->batch);
        js->batch = wf_arena_new();
        js->rows = NULL;
        js->nrows = js->nextrow = 0;
        if (js->batch == NULL) {
            wf_error_nomem(err);
            return WF_STREAM_END;
        }
        wf_runtime_activation a = js->a;
        a.max_jobs =
            avail > WF_RUNTIME_MAX_JOBS_PER_CALL ? WF_RUNTIME_MAX_JOBS_PER_CALL : (int32_t)avail;
        wf_runtime_ctx ctx = step_ctx(call, js, js->batch);
        if (wf_runtime_activate_jobs(&ctx, &a, &js->rows, &js->nrows, err) != WF_OK)
            return WF_STREAM_END;
        if (js->nrows > 0) {
            int64_t leased_ms = wf_mono_ms();
            pthread_mutex_lock(&reg_mu);
            for (size_t i = 0; i < js->nrows && js->nheld < js->credit; i++) {
                char *key = strdup(js->rows[i].key != NULL ? js->rows[i].key : "");
                if (key == NULL)
                    break;
                js->held[js->nheld++] = (held_job){key, js->rows[i].lease_expires_at, leased_ms};
            }
            pthread_mutex_unlock(&reg_mu);
            wf_app_wake_streams(call->app, WF_TOPIC_EVENTS); /* JOB_ACTIVATED events */
            return push_next(js, scratch, msg, err);
        }
    }

    /* Nothing to send: park until a wake-up, the next recheck, or the
     * earliest lease end. */
    int64_t wake = now_ms + RECHECK_MS;
    if (avail == 0 && js->next_verify_ms > now_ms && js->next_verify_ms < wake)
        wake = js->next_verify_ms;
    if (earliest != 0) {
        int64_t left_ms = (earliest - wf_now_us()) / 1000 + 1;
        if (now_ms + left_ms < wake)
            wake = now_ms + (left_ms > 0 ? left_ms : 1);
    }
    call->wake_at_ms = wake;
    return WF_STREAM_WAIT;
}

static void
stream_close(void *state)
{
    jstream *js = state;
    pthread_mutex_lock(&reg_mu);
    if (js->prev != NULL)
        js->prev->next = js->next;
    else
        reg_head = js->next;
    if (js->next != NULL)
        js->next->prev = js->prev;
    while (js->nheld > 0)
        held_remove(js, js->nheld - 1);
    pthread_mutex_unlock(&reg_mu);
    wf_arena_free(js->batch);
}

const wf_stream_ops h_stream_activated_jobs = {stream_open, stream_next, stream_close, false};

/* ---- CompleteJobs ---------------------------------------------------------------------------- */

wf_code
h_complete_jobs(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__CompleteJobsRequest *req = (const void *)msg;
    if (req->n_completions == 0 || req->n_completions > MAX_COMPLETIONS)
        return invalid(call, "completions", "must hold 1 to 500 completions", err);
    Workflow__V1__CompleteJobsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    Workflow__V1__CompleteJobResult *res =
        wf_arena_calloc(call->arena, req->n_completions, sizeof *res);
    Workflow__V1__CompleteJobResult **ptrs =
        wf_arena_calloc(call->arena, req->n_completions, sizeof *ptrs);
    if (m == NULL || res == NULL || ptrs == NULL)
        return wf_error_nomem(err);
    workflow__v1__complete_jobs_response__init(m);

    /* Each item is a CompleteJob: same idempotency scope and record. */
    const char *method = call->method;
    call->method = "CompleteJob";
    for (size_t i = 0; i < req->n_completions; i++) {
        const Workflow__V1__CompleteJobRequest *item = req->completions[i];
        Workflow__V1__CompleteJobResult *r = &res[i];
        workflow__v1__complete_job_result__init(r);
        ptrs[i] = r;
        r->job_key = item->job_key;
        wf_runtime_ctx ctx;
        wf_h_net_ctx(call, &ctx);
        ctx.ref.actor = NULL; /* workers are not people */
        wf_uow_idem idem;
        wf_error e;
        wf_error_clear(&e);
        wf_code rc = wf_ids_check(&ctx.ref, WF_ID_JOB_KEY, "job_key", item->job_key, &e);
        if (rc == WF_OK)
            rc = wf_h_idem(call, &item->base, item->request_id, &wf_h_complete_job_builder, &idem,
                           &e);
        if (rc == WF_OK)
            rc = wf_runtime_complete_job_to(&ctx, item->job_key, item->variables_json,
                                            item->next_step, &idem, &e);
        /* An item's violations are in its message, not in the call's
         * (OK) status. */
        call->violations = NULL;
        call->nviolations = 0;
        if (rc == WF_OK || rc == WF_E_JOB_LEASE_LOST || rc == WF_E_JOB_NOT_FOUND)
            wf_h_job_stream_release(call->app, call->tenant, item->job_key);
        if (rc == WF_OK)
            continue;
        if (e.code != rc)
            wf_error_set(&e, rc, "%s", e.msg[0] ? e.msg : wf_code_reason(rc));
        r->code = call->status_code != NULL ? call->status_code(rc) : 2 /* UNKNOWN */;
        r->reason = (char *)wf_code_reason(rc);
        r->message = wf_arena_strdup(call->arena, e.msg);
        if (r->message == NULL) {
            call->method = method;
            return wf_error_nomem(err);
        }
    }
    call->method = method;
    m->results = ptrs;
    m->n_results = req->n_completions;
    wf_app_wake_streams(call->app, WF_TOPIC_EVENTS);
    *resp = &m->base;
    return WF_OK;
}
