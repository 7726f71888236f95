/*
 * scheduler: claims due timers and fires them through a callback, expires
 * job leases and buffered signals, and sweeps old rows (see scheduler.h
 * for the protocol and the failure rules).
 *
 * Locking: mu guards the flags (stopping, woken) and the counters; the
 * store calls and the fire callback run without it, so wake, stop and
 * get_stats never wait for the database.
 */
#include "scheduler.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "net_runtime.h"
#include "wf_arena.h"
#include "wf_log.h"
#include "wf_time.h"

#define BACKOFF_FIRST_MS 250
#define HOUR_MS INT64_C(3600000)

struct wf_scheduler {
    wf_store *st;
    wf_scheduler_options opt;
    wf_sched_fire_fn fire;
    void *arg;

    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC; signalled by wake and stop */
    bool stopping;
    bool woken; /* a wake since the last pass began */
    wf_scheduler_stats stats;
    int64_t down_since_ms; /* monotonic start of the current outage */
    int64_t next_sweep_ms; /* monotonic time of the thread's next retention sweep */

    bool has_thread;
    pthread_t thread;
};

static bool
is_stopping(wf_scheduler *s)
{
    pthread_mutex_lock(&s->mu);
    bool stop = s->stopping;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* Counts a claim and logs the edges of an outage: one line when claims
 * start failing, one when they work again, nothing in between. */
static void
note_claim(wf_scheduler *s, wf_code rc, const wf_error *err)
{
    pthread_mutex_lock(&s->mu);
    bool was_down = s->stats.store_down;
    int64_t since = s->down_since_ms;
    s->stats.passes++;
    if (rc != WF_OK) {
        s->stats.claim_errors++;
        if (!was_down)
            s->down_since_ms = wf_mono_ms();
    }
    s->stats.store_down = rc != WF_OK;
    pthread_mutex_unlock(&s->mu);

    if (rc != WF_OK && !was_down)
        WF_LOG(WF_LOG_WARN, "scheduler",
               "cannot claim due timers: %s (%s); retrying with back-off until it works", err->msg,
               wf_code_reason(rc));
    else if (rc == WF_OK && was_down)
        WF_LOG(WF_LOG_INFO, "scheduler", "claiming due timers again after %" PRId64 " ms",
               wf_mono_ms() - since);
}

/* Records the outcome of one firing (rc, fired and err as the fire
 * callback reported them). */
static void
note_fire(wf_scheduler *s, const wf_timer_row *t, wf_code rc, bool fired, const wf_error *e)
{
    wf_error err = *e;
    /* Lateness is measured when the firing has committed: that is when
     * its effects (tasks, events, stream wake-ups) exist. */
    int64_t lateness_ms = (wf_now_us() - t->due_at) / 1000;

    pthread_mutex_lock(&s->mu);
    if (rc != WF_OK)
        s->stats.fire_errors++;
    else if (!fired)
        s->stats.gone++;
    else {
        s->stats.fired++;
        s->stats.last_lateness_ms = lateness_ms;
        if (lateness_ms > s->stats.max_lateness_ms)
            s->stats.max_lateness_ms = lateness_ms;
    }
    pthread_mutex_unlock(&s->mu);

    if (rc != WF_OK)
        /* The claim keeps it away from everyone until it runs out; then
         * it is claimed again (here or on another replica). */
        WF_LOG(WF_LOG_WARN, "scheduler",
               "timer %s (tenant %s, instance %s) did not fire: %s (%s); "
               "retried when its claim expires in %" PRId64 " ms",
               t->id, t->tenant, t->instance_id, err.msg, wf_code_reason(rc),
               (t->claimed_until - wf_now_us()) / 1000);
    else if (fired)
        WF_LOG(WF_LOG_DEBUG, "scheduler",
               "timer %s (tenant %s, instance %s, transition %s) fired %" PRId64 " ms late", t->id,
               t->tenant, t->instance_id, t->transition_id != NULL ? t->transition_id : "",
               lateness_ms);
}

/* Fires one claimed timer and records the outcome. Returns fire's code;
 * *fired as fire reported it. */
static wf_code
fire_one(wf_scheduler *s, const wf_timer_row *t, bool *fired_out)
{
    bool fired = false;
    wf_error err;
    wf_error_clear(&err);
    wf_code rc = s->fire(s->arg, t, wf_mono_ms() + s->opt.call_timeout_ms, &fired, &err);
    note_fire(s, t, rc, fired, &err);
    *fired_out = rc == WF_OK && fired;
    return rc;
}

/* Fires rows[0..n) with opt.fire_batch and records each outcome. *outage:
 * one of them found the store unreachable. */
static wf_code
fire_batch(wf_scheduler *s, const wf_timer_row *rows, size_t n, wf_arena *arena, size_t *nfired,
           bool *outage, wf_error *err)
{
    bool *fired = wf_arena_calloc(arena, n + 1, sizeof *fired);
    wf_code *codes = wf_arena_calloc(arena, n + 1, sizeof *codes);
    wf_error *errs = wf_arena_calloc(arena, n + 1, sizeof *errs);
    if (fired == NULL || codes == NULL || errs == NULL)
        return wf_error_nomem(err);
    s->opt.fire_batch(s->arg, rows, n, wf_mono_ms() + s->opt.call_timeout_ms, fired, codes, errs);
    for (size_t i = 0; i < n; i++) {
        note_fire(s, &rows[i], codes[i], fired[i], &errs[i]);
        if (codes[i] == WF_OK && fired[i])
            (*nfired)++;
        *outage |= codes[i] == WF_E_STORE_UNAVAILABLE;
    }
    return WF_OK;
}

/*
 * One pass: claim up to opt.batch due timers of every tenant, fire each.
 * Returns the claim's code. *full: the batch was full, so more may be due.
 * *outage: fire reported the store unreachable; the pass stopped there
 * (the rest stay claimed and come back after claim_ms) and the caller
 * should back off rather than hammer a database that is down.
 */
static wf_code
run_pass(wf_scheduler *s, const char *tenant, size_t *nfired, bool *full, bool *outage,
         wf_error *err)
{
    *nfired = 0;
    *full = false;
    *outage = false;
    pthread_mutex_lock(&s->mu);
    s->woken = false; /* a wake from now on asks for another pass */
    pthread_mutex_unlock(&s->mu);

    /* A scratch arena per pass: the claimed rows live until the batch is
     * done, then go at once. */
    wf_arena *arena = wf_arena_new();
    if (arena == NULL)
        return wf_error_nomem(err);
    /* Without a tenant the claim sees every tenant, and each row carries
     * its own (fire uses it). */
    wf_store_ctx ctx = {tenant, wf_mono_ms() + s->opt.call_timeout_ms, arena};
    wf_timer_row *rows = NULL;
    size_t n = 0;
    wf_code rc = tenant != NULL
                     ? wf_store_claim_tenant_timers(s->st, &ctx, wf_now_us(), s->opt.batch,
                                                    s->opt.claim_ms, &rows, &n, err)
                     : wf_store_claim_due_timers(s->st, &ctx, wf_now_us(), s->opt.batch,
                                                 s->opt.claim_ms, &rows, &n, err);
    note_claim(s, rc, err);
    if (rc != WF_OK) {
        wf_arena_free(arena);
        return rc;
    }
    *full = n == s->opt.batch;
    if (s->opt.fire_batch != NULL && n > 0) {
        rc = fire_batch(s, rows, n, arena, nfired, outage, err);
        if (*outage)
            *full = false;
        wf_arena_free(arena);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (is_stopping(s)) {
            /* Stop stays prompt; what is left is retried after its claim. */
            WF_LOG(WF_LOG_INFO, "scheduler", "stopping: %zu claimed timer(s) left for later",
                   n - i);
            *full = false;
            break;
        }
        bool fired = false;
        wf_code frc = fire_one(s, &rows[i], &fired);
        if (fired)
            (*nfired)++;
        if (frc == WF_E_STORE_UNAVAILABLE) {
            *outage = true;
            *full = false;
            break;
        }
    }
    wf_arena_free(arena);
    return WF_OK;
}

/* ---- lease expiry, signal TTL, retention ------------------------------------------------- */

/* Counts a failed lease, signal or sweep step and logs it, except while a
 * store outage is already being reported by the timer claims. */
static void
note_step_error(wf_scheduler *s, const char *what, wf_code rc, const wf_error *err)
{
    pthread_mutex_lock(&s->mu);
    s->stats.step_errors++;
    bool quiet = s->stats.store_down && rc == WF_E_STORE_UNAVAILABLE;
    pthread_mutex_unlock(&s->mu);
    if (!quiet)
        WF_LOG(WF_LOG_WARN, "scheduler", "cannot %s: %s (%s); retried at the next pass", what,
               err->msg, wf_code_reason(rc));
}

static void
count(wf_scheduler *s, uint64_t *counter, size_t n)
{
    pthread_mutex_lock(&s->mu);
    *counter += n;
    pthread_mutex_unlock(&s->mu);
}

/*
 * Ends the expired lease of job (a row found by wf_store_find_expired_leases)
 * in one unit of work on its root: only if the job is still ACTIVATED
 * under the same key with its lease run out (another replica, a
 * completion, an extension or a re-activation may have come first; then
 * *expired = false). The job becomes ACTIVATABLE at once without spending
 * an attempt, its key and worker are dropped (so the stale key gets
 * JOB_LEASE_LOST) and JOB_LEASE_EXPIRED is written.
 */
static wf_code
expire_lease(wf_scheduler *s, const wf_job_row *job, bool *expired, wf_error *err)
{
    *expired = false;
    wf_arena *arena = wf_arena_new();
    if (arena == NULL)
        return wf_error_nomem(err);
    int64_t now = wf_now_us();
    wf_store_ctx ctx = {job->tenant, wf_mono_ms() + s->opt.call_timeout_ms, arena};
    wf_tx *tx = NULL;
    wf_aggregate agg;
    wf_code rc = wf_store_begin(s->st, &ctx, &tx, err);
    if (rc == WF_OK)
        rc = wf_tx_lock_root_hint(tx, job->instance_id, job->root_id, &agg, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND) {
        rc = WF_OK; /* deleted with its instance: nothing to expire */
        agg.n_jobs = 0;
    }
    const wf_job_row *cur = NULL;
    for (size_t i = 0; rc == WF_OK && i < agg.n_jobs && cur == NULL; i++)
        if (strcmp(agg.jobs[i].id, job->id) == 0)
            cur = &agg.jobs[i];
    if (rc != WF_OK || cur == NULL || cur->state != WF_JOB_ACTIVATED || cur->key == NULL ||
        job->key == NULL || strcmp(cur->key, job->key) != 0 || cur->lease_expires_at > now) {
        wf_tx_rollback(tx);
        wf_arena_free(arena);
        return rc;
    }
    wf_job_row upd = *cur;
    upd.state = WF_JOB_ACTIVATABLE;
    upd.activatable_at = now;
    upd.lease_expires_at = 0;
    upd.key = NULL;
    upd.worker = NULL;
    json_t *data = json_pack("{s:s,s:s,s:s?,s:i}", "jobId", cur->id, "jobType", cur->job_type,
                             "worker", cur->worker, "attempt", (json_int_t)cur->attempt + 1);
    char *text = data != NULL ? json_dumps(data, JSON_COMPACT) : NULL;
    json_decref(data);
    wf_event_row ev = {0,    NULL, cur->root_id, cur->instance_id, "JOB_LEASE_EXPIRED",
                       NULL, text, now};
    wf_store_changes c = {.jobs = &upd, .n_jobs = 1, .events = &ev, .n_events = 1};
    rc = text != NULL ? wf_tx_apply(tx, &c, err) : wf_error_nomem(err);
    free(text);
    if (rc == WF_OK) {
        rc = wf_tx_commit(tx, err);
        tx = NULL;
    }
    wf_tx_rollback(tx);
    if (rc == WF_OK) {
        *expired = true;
        WF_LOG(WF_LOG_DEBUG, "scheduler", "lease of job %s (tenant %s, type %s) expired", cur->id,
               job->tenant, cur->job_type);
        if (s->opt.wake != NULL) {
            char topic[192];
            snprintf(topic, sizeof topic, "%s%s", WF_RUNTIME_TOPIC_JOBS_PREFIX, cur->job_type);
            s->opt.wake(s->arg, WF_RUNTIME_TOPIC_EVENTS);
            s->opt.wake(s->arg, topic);
        }
    }
    wf_arena_free(arena);
    return rc;
}

/* One batch of expired leases. *full: the batch was full (more may be
 * waiting). A failure of one job is logged and skipped (it is found again
 * next pass) unless the store is down, which ends the batch. */
static wf_code
lease_pass(wf_scheduler *s, const char *tenant, size_t *nexpired, bool *full, wf_error *err)
{
    *nexpired = 0;
    *full = false;
    wf_arena *arena = wf_arena_new();
    if (arena == NULL)
        return wf_error_nomem(err);
    wf_store_ctx ctx = {tenant, wf_mono_ms() + s->opt.call_timeout_ms, arena};
    wf_job_row *rows = NULL;
    size_t n = 0;
    wf_code rc =
        wf_store_find_expired_leases(s->st, &ctx, wf_now_us(), s->opt.batch, &rows, &n, err);
    if (rc == WF_OK)
        *full = n == s->opt.batch;
    for (size_t i = 0; rc == WF_OK && i < n && !is_stopping(s); i++) {
        bool expired = false;
        wf_error jerr;
        wf_error_clear(&jerr);
        wf_code jrc = expire_lease(s, &rows[i], &expired, &jerr);
        if (expired)
            (*nexpired)++;
        if (jrc == WF_E_STORE_UNAVAILABLE) {
            *err = jerr;
            rc = jrc;
        } else if (jrc != WF_OK) {
            note_step_error(s, "expire a job lease", jrc, &jerr);
        }
    }
    wf_arena_free(arena);
    count(s, &s->stats.leases_expired, *nexpired);
    /* Nothing expired out of a full batch (every row raced): do not spin. */
    if (*nexpired == 0)
        *full = false;
    return rc;
}

/* One batch of buffered signals past their TTL. */
static wf_code
signal_pass(wf_scheduler *s, const char *tenant, size_t *nexpired, bool *full, wf_error *err)
{
    *nexpired = 0;
    *full = false;
    wf_arena *arena = wf_arena_new();
    if (arena == NULL)
        return wf_error_nomem(err);
    wf_store_ctx ctx = {tenant, wf_mono_ms() + s->opt.call_timeout_ms, arena};
    wf_code rc =
        wf_store_expire_signals(s->st, &ctx, wf_now_us(), s->opt.sweep_batch, nexpired, err);
    wf_arena_free(arena);
    if (rc == WF_OK) {
        *full = *nexpired == s->opt.sweep_batch;
        count(s, &s->stats.signals_expired, *nexpired);
    }
    return rc;
}

/* Retention: each kind whose retention is set, batch after batch until a
 * batch is not full, the deadline passes or the scheduler stops. */
static wf_code
sweep_pass(wf_scheduler *s, const char *tenant, int64_t deadline_ms, size_t *nremoved,
           wf_error *err)
{
    static const wf_sweep_kind kinds[] = {WF_SWEEP_SIGNALS, WF_SWEEP_IDEMPOTENCY, WF_SWEEP_EVENTS,
                                          WF_SWEEP_DELIVERIES};
    const int64_t keep_ms[] = {s->opt.signal_retention_ms, s->opt.idempotency_retention_ms,
                               s->opt.event_retention_ms, s->opt.signal_retention_ms};
    *nremoved = 0;
    wf_code rc = WF_OK;
    for (size_t k = 0; rc == WF_OK && k < sizeof kinds / sizeof kinds[0]; k++) {
        if (keep_ms[k] <= 0)
            continue;
        int64_t before = wf_now_us() - keep_ms[k] * 1000;
        for (;;) {
            if (is_stopping(s) || (deadline_ms != 0 && wf_mono_ms() >= deadline_ms))
                break;
            wf_arena *arena = wf_arena_new();
            if (arena == NULL)
                return wf_error_nomem(err);
            wf_store_ctx ctx = {tenant, wf_mono_ms() + s->opt.call_timeout_ms, arena};
            size_t n = 0;
            rc = wf_store_sweep(s->st, &ctx, kinds[k], before, s->opt.sweep_batch, &n, err);
            wf_arena_free(arena);
            if (rc != WF_OK)
                break;
            *nremoved += n;
            count(s, &s->stats.rows_removed, n);
            if (n < s->opt.sweep_batch)
                break;
        }
    }
    return rc;
}

/* The thread's lease and signal steps: one batch each. *more: a batch was
 * full. *outage: the store is unreachable. */
static void
background_steps(wf_scheduler *s, bool *more, bool *outage)
{
    size_t n;
    bool full = false;
    wf_error err;
    wf_error_clear(&err);
    wf_code rc = lease_pass(s, NULL, &n, &full, &err);
    if (rc != WF_OK)
        note_step_error(s, "expire job leases", rc, &err);
    *more |= full;
    *outage |= rc == WF_E_STORE_UNAVAILABLE;
    if (rc == WF_E_STORE_UNAVAILABLE || is_stopping(s))
        return;
    wf_error_clear(&err);
    rc = signal_pass(s, NULL, &n, &full, &err);
    if (rc != WF_OK)
        note_step_error(s, "expire buffered signals", rc, &err);
    *more |= full;
    *outage |= rc == WF_E_STORE_UNAVAILABLE;
    if (rc == WF_E_STORE_UNAVAILABLE || is_stopping(s))
        return;
    if (s->opt.batches != NULL) {
        /* One chunk per running batch operation, then the timers again:
         * a long batch never holds them up by more than a chunk. */
        wf_error_clear(&err);
        n = 0;
        rc = s->opt.batches(s->arg, NULL, wf_mono_ms() + s->opt.call_timeout_ms, &n, &err);
        if (rc != WF_OK)
            note_step_error(s, "run batch operations", rc, &err);
        *more |= n > 0;
        *outage |= rc == WF_E_STORE_UNAVAILABLE;
    }
    if (rc != WF_E_STORE_UNAVAILABLE && !is_stopping(s) && s->opt.schedules != NULL) {
        wf_error_clear(&err);
        size_t claimed = 0, runs = 0;
        wf_code src = s->opt.schedules(s->arg, NULL, wf_mono_ms() + s->opt.call_timeout_ms,
                                       &claimed, &runs, &err);
        if (src != WF_OK)
            note_step_error(s, "run schedules", src, &err);
        *more |= runs > 0;
        *outage |= src == WF_E_STORE_UNAVAILABLE;
        if (rc == WF_OK)
            rc = src;
    }
    if (rc != WF_OK || is_stopping(s) || wf_mono_ms() < s->next_sweep_ms)
        return;
    /* The sweep runs at its own slow cadence and gives each run a bounded
     * time, so timers are never held up for long. */
    s->next_sweep_ms = wf_mono_ms() + s->opt.sweep_interval_ms;
    wf_error_clear(&err);
    rc = sweep_pass(s, NULL, wf_mono_ms() + s->opt.call_timeout_ms, &n, &err);
    if (rc != WF_OK)
        note_step_error(s, "remove rows past their retention", rc, &err);
    else if (n > 0)
        WF_LOG(WF_LOG_INFO, "scheduler", "retention removed %zu row(s)", n);
    *outage |= rc == WF_E_STORE_UNAVAILABLE;
}

/* Sleeps until ms (monotonic) or stop; a wake cuts it short when
 * wakeable (not during an error back-off: a burst of wakes must not turn
 * the back-off into a spin). */
static void
sleep_until(wf_scheduler *s, int64_t until_ms, bool wakeable)
{
    struct timespec ts = {(time_t)(until_ms / 1000), (long)(until_ms % 1000) * 1000000L};
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && !(wakeable && s->woken) && wf_mono_ms() < until_ms)
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    pthread_mutex_unlock(&s->mu);
}

static void *
sched_thread(void *p)
{
    wf_scheduler *s = p;
    int64_t backoff_ms = 0; /* 0: not backing off */
    while (!is_stopping(s)) {
        size_t nfired;
        bool full, outage;
        wf_error err;
        wf_error_clear(&err);
        wf_code rc = run_pass(s, NULL, &nfired, &full, &outage, &err);
        if (rc == WF_OK && !outage && !is_stopping(s))
            background_steps(s, &full, &outage);
        if (rc != WF_OK || outage) {
            backoff_ms = backoff_ms == 0 ? BACKOFF_FIRST_MS : backoff_ms * 2;
            if (backoff_ms > s->opt.backoff_max_ms)
                backoff_ms = s->opt.backoff_max_ms;
            sleep_until(s, wf_mono_ms() + backoff_ms, false);
            continue;
        }
        backoff_ms = 0;
        if (full)
            continue; /* a backlog: claim the next batch at once */
        /* No "next due" query exists, and other replicas create timers
         * too: poll at most idle_ms apart. */
        sleep_until(s, wf_mono_ms() + s->opt.idle_ms, true);
    }
    return NULL;
}

wf_scheduler *
wf_scheduler_start(wf_store *st, const wf_scheduler_options *opt, wf_sched_fire_fn fire, void *arg,
                   wf_error *err)
{
    if (st == NULL || fire == NULL) {
        wf_error_set(err, WF_E_INTERNAL, "scheduler needs a store and a fire callback");
        return NULL;
    }
    wf_scheduler *s = calloc(1, sizeof *s);
    if (s == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    s->st = st;
    s->fire = fire;
    s->arg = arg;
    if (opt != NULL)
        s->opt = *opt;
    if (s->opt.batch == 0)
        s->opt.batch = 100;
    if (s->opt.claim_ms <= 0)
        s->opt.claim_ms = 30000;
    if (s->opt.idle_ms <= 0)
        s->opt.idle_ms = 200;
    if (s->opt.call_timeout_ms <= 0)
        s->opt.call_timeout_ms = 5000;
    if (s->opt.backoff_max_ms <= 0)
        s->opt.backoff_max_ms = 5000;
    if (s->opt.sweep_batch == 0)
        s->opt.sweep_batch = 500;
    if (s->opt.sweep_interval_ms <= 0)
        s->opt.sweep_interval_ms = 60000;
    if (s->opt.idempotency_retention_ms <= 0)
        s->opt.idempotency_retention_ms = 24 * HOUR_MS;
    if (s->opt.signal_retention_ms <= 0)
        s->opt.signal_retention_ms = 7 * 24 * HOUR_MS;
    if (s->opt.event_retention_ms < 0)
        s->opt.event_retention_ms = 0;
    /* The first sweep waits one interval: a restart loop must not turn
     * into a sweep loop. */
    s->next_sweep_ms = wf_mono_ms() + s->opt.sweep_interval_ms;

    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);

    if (!s->opt.manual) {
        int rc = pthread_create(&s->thread, NULL, sched_thread, s);
        if (rc != 0) {
            wf_error_set(err, WF_E_INTERNAL, "cannot start the scheduler thread: %s", strerror(rc));
            pthread_cond_destroy(&s->cv);
            pthread_mutex_destroy(&s->mu);
            free(s);
            return NULL;
        }
        s->has_thread = true;
        WF_LOG(WF_LOG_INFO, "scheduler",
               "scheduler started (batch %zu, claim %" PRId64 " ms, poll %" PRId64
               " ms, sweep every %" PRId64 " s)",
               s->opt.batch, s->opt.claim_ms, s->opt.idle_ms, s->opt.sweep_interval_ms / 1000);
    }
    return s;
}

void
wf_scheduler_wake(wf_scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->woken = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static bool
past(int64_t deadline_ms)
{
    return deadline_ms != 0 && wf_mono_ms() >= deadline_ms;
}

wf_code
wf_scheduler_run(wf_scheduler *s, const char *tenant, bool sweep, int64_t deadline_ms,
                 wf_sched_counts *out, wf_error *err)
{
    wf_sched_counts c = {0};
    wf_code rc = WF_OK;
    bool full = true, outage = false;
    while (rc == WF_OK && full && !outage && !past(deadline_ms)) {
        size_t n = 0;
        rc = run_pass(s, tenant, &n, &full, &outage, err);
        c.timers_fired += n;
    }
    for (full = true; rc == WF_OK && !outage && full && !past(deadline_ms) && !is_stopping(s);) {
        size_t n = 0;
        rc = lease_pass(s, tenant, &n, &full, err);
        c.leases_expired += n;
    }
    for (full = true; rc == WF_OK && !outage && full && !past(deadline_ms) && !is_stopping(s);) {
        size_t n = 0;
        rc = signal_pass(s, tenant, &n, &full, err);
        c.signals_expired += n;
    }
    for (full = s->opt.batches != NULL;
         rc == WF_OK && !outage && full && !past(deadline_ms) && !is_stopping(s);) {
        size_t n = 0;
        int64_t until = wf_mono_ms() + s->opt.call_timeout_ms;
        rc = s->opt.batches(s->arg, tenant,
                            deadline_ms != 0 && deadline_ms < until ? deadline_ms : until, &n, err);
        c.batch_chunks += n;
        full = n > 0;
    }
    for (full = s->opt.schedules != NULL;
         rc == WF_OK && !outage && full && !past(deadline_ms) && !is_stopping(s);) {
        size_t claimed = 0, runs = 0;
        int64_t until = wf_mono_ms() + s->opt.call_timeout_ms;
        rc = s->opt.schedules(s->arg, tenant,
                              deadline_ms != 0 && deadline_ms < until ? deadline_ms : until,
                              &claimed, &runs, err);
        c.schedule_runs += runs;
        full = claimed > 0;
    }
    if (rc == WF_OK && !outage && sweep && !past(deadline_ms))
        rc = sweep_pass(s, tenant, deadline_ms, &c.rows_removed, err);
    if (out != NULL)
        *out = c;
    return rc;
}

wf_code
wf_scheduler_tick(wf_scheduler *s, size_t *fired, wf_error *err)
{
    wf_sched_counts c;
    wf_code rc = wf_scheduler_run(s, NULL, false, 0, &c, err);
    if (rc == WF_OK && fired != NULL)
        *fired = c.timers_fired;
    return rc;
}

void
wf_scheduler_get_stats(wf_scheduler *s, wf_scheduler_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    pthread_mutex_unlock(&s->mu);
}

void
wf_scheduler_stop(wf_scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->has_thread) {
        pthread_join(s->thread, NULL);
        WF_LOG(WF_LOG_INFO, "scheduler",
               "scheduler stopped (%" PRIu64 " timers fired, max lateness %" PRId64 " ms, %" PRIu64
               " leases expired)",
               s->stats.fired, s->stats.max_lateness_ms, s->stats.leases_expired);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
