/*
 * scheduler: claims due timers and fires them through a callback (see
 * scheduler.h for the protocol and the failure rules).
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

#include "wf_arena.h"
#include "wf_log.h"
#include "wf_time.h"

#define BACKOFF_FIRST_MS 250

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

/* Fires one claimed timer and records the outcome. Returns fire's code;
 * *fired as fire reported it. */
static wf_code
fire_one(wf_scheduler *s, const wf_timer_row *t, bool *fired_out)
{
    bool fired = false;
    wf_error err;
    wf_error_clear(&err);
    wf_code rc = s->fire(s->arg, t, wf_mono_ms() + s->opt.call_timeout_ms, &fired, &err);
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
    *fired_out = rc == WF_OK && fired;
    return rc;
}

/*
 * One pass: claim up to opt.batch due timers of every tenant, fire each.
 * Returns the claim's code. *full: the batch was full, so more may be due.
 * *outage: fire reported the store unreachable; the pass stopped there
 * (the rest stay claimed and come back after claim_ms) and the caller
 * should back off rather than hammer a database that is down.
 */
static wf_code
run_pass(wf_scheduler *s, size_t *nfired, bool *full, bool *outage, wf_error *err)
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
        return wf_error_set(err, WF_E_INTERNAL, "out of memory");
    /* ctx.tenant is ignored by the claim: it sees every tenant, and each
     * row carries its own (fire uses it). */
    wf_store_ctx ctx = {NULL, wf_mono_ms() + s->opt.call_timeout_ms, arena};
    wf_timer_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_claim_due_timers(s->st, &ctx, wf_now_us(), s->opt.batch, s->opt.claim_ms,
                                           &rows, &n, err);
    note_claim(s, rc, err);
    if (rc != WF_OK) {
        wf_arena_free(arena);
        return rc;
    }
    *full = n == s->opt.batch;
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
        wf_code rc = run_pass(s, &nfired, &full, &outage, &err);
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
        wf_error_set(err, WF_E_INTERNAL, "out of memory");
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
               "timer scheduler started (batch %zu, claim %" PRId64 " ms, poll %" PRId64 " ms)",
               s->opt.batch, s->opt.claim_ms, s->opt.idle_ms);
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

wf_code
wf_scheduler_tick(wf_scheduler *s, size_t *fired, wf_error *err)
{
    size_t total = 0;
    for (;;) {
        size_t n = 0;
        bool full, outage;
        wf_code rc = run_pass(s, &n, &full, &outage, err);
        total += n;
        if (rc != WF_OK)
            return rc;
        if (!full || outage)
            break;
    }
    if (fired != NULL)
        *fired = total;
    return WF_OK;
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
               "timer scheduler stopped (%" PRIu64 " fired, max lateness %" PRId64 " ms)",
               s->stats.fired, s->stats.max_lateness_ms);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
