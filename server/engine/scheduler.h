/*
 * scheduler: the background timer scheduler (design.md section 1,
 * "background: scheduler"; section 5, TIME transitions).
 *
 * One thread per process finds due timers of every tenant and hands each to
 * a fire callback, following the firing protocol of
 * wf_store_claim_due_timers (store.h):
 *
 *     claim a bounded batch (claimed_until = now + claim_ms)
 *       → fire(timer) for each: one unit of work on its root, which fires
 *         only if the timer still exists and deletes it in the same
 *         transaction
 *       → a full batch: claim again at once; else sleep a bounded interval
 *
 * The scheduler knows nothing of what firing means: the composition root
 * passes a callback (in workflowd, an adapter to wf_net_fire_timer). That
 * keeps this file free of engine internals and lets the tests fire with a
 * fake.
 *
 * Why polling: the store has no "next due" query and a timer may be
 * created by any replica, so the thread wakes at least every idle_ms.
 * wf_scheduler_wake shortens the sleep when this process has just created
 * a timer.
 *
 * Failures never stop the thread:
 *   - claim fails (WF_E_STORE_UNAVAILABLE while Postgres is down, a
 *     deadline): one log line per outage, retry with back-off (250 ms
 *     doubling up to backoff_max_ms), one line when it recovers;
 *   - fire fails: logged; the timer stays claimed until claim_ms has
 *     passed and is then claimed again (by this or another replica). That
 *     is the protocol's recovery; nothing is undone here. A store outage
 *     reported by fire also ends the batch and enters the back-off.
 *
 * Several schedulers (replicas) may run on one database: claims only avoid
 * duplicate work; the delete under the root lock makes each timer fire at
 * most once.
 *
 * Threads: create the scheduler after SIGTERM/SIGINT are blocked (main
 * does so before any thread exists); its thread inherits the mask.
 */
#ifndef WF_SCHEDULER_H
#define WF_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "wf_error.h"

typedef struct wf_scheduler wf_scheduler;

/* Fires one claimed timer (row lives until the call returns). deadline_ms
 * is a monotonic deadline (wf_mono_ms) for the whole unit of work.
 * *fired = false with WF_OK when the timer was already gone (withdrawn, or
 * fired by another replica). Any other code leaves the timer in the store;
 * it is retried once its claim runs out. Called on the scheduler thread
 * (or the thread calling wf_scheduler_tick), one timer at a time. */
typedef wf_code (*wf_sched_fire_fn)(void *arg, const wf_timer_row *timer, int64_t deadline_ms,
                                    bool *fired, wf_error *err);

/* Zero fields take the defaults in brackets. */
typedef struct wf_scheduler_options {
    size_t batch;            /* timers claimed per store call [100] */
    int64_t claim_ms;        /* how long a claim keeps other replicas off [30000] */
    int64_t idle_ms;         /* longest sleep between passes [200] */
    int64_t call_timeout_ms; /* deadline of each store call and each fire [5000] */
    int64_t backoff_max_ms;  /* longest wait between retries after an error [5000] */
    bool manual;             /* no thread: only wf_scheduler_tick runs passes (tools, tests) */
} wf_scheduler_options;

/* Counters since start, for metrics. */
typedef struct wf_scheduler_stats {
    uint64_t passes;          /* claim calls made (successful or not) */
    uint64_t fired;           /* timers that fired (fire reported *fired) */
    uint64_t gone;            /* claimed timers that were already gone */
    uint64_t fire_errors;     /* fire calls that failed (the timer is retried later) */
    uint64_t claim_errors;    /* claim calls that failed */
    int64_t last_lateness_ms; /* of the last timer fired: fire time - due_at */
    int64_t max_lateness_ms;  /* largest lateness seen */
    bool store_down;          /* the last claim failed (an outage in progress) */
} wf_scheduler_stats;

/* Starts the scheduler on st (borrowed: it must outlive the scheduler) with
 * opt (NULL = defaults; copied). fire(arg, ...) fires one timer. NULL and
 * err (WF_E_INTERNAL) when the thread cannot start. */
wf_scheduler *wf_scheduler_start(wf_store *st, const wf_scheduler_options *opt,
                                 wf_sched_fire_fn fire, void *arg, wf_error *err);

/* A timer was just created in this process: run a pass now instead of
 * finishing the current sleep. Cheap, non-blocking, any thread; NULL-safe.
 * Ignored during an error back-off. */
void wf_scheduler_wake(wf_scheduler *s);

/* Runs passes now, on the calling thread, until a claim returns less than a
 * full batch (everything due is handled), and sets *fired (may be NULL) to
 * the number of timers fired. A claim error is returned (err set);
 * failures of single timers are not (they are logged and counted, and the
 * timers retried after their claim). May run concurrently with the thread:
 * the claims keep the two apart. */
wf_code wf_scheduler_tick(wf_scheduler *s, size_t *fired, wf_error *err);

/* Copies the counters (thread-safe). */
void wf_scheduler_get_stats(wf_scheduler *s, wf_scheduler_stats *out);

/* Stops the thread (it finishes the timer in hand; the rest of its batch
 * stays claimed and is retried after claim_ms, here or on another
 * replica), joins it and frees s. NULL-safe. Returns within one store
 * call's deadline. */
void wf_scheduler_stop(wf_scheduler *s);

#endif /* WF_SCHEDULER_H */
