/*
 * scheduler: the background scheduler (timers of TIME transitions, lease
 * expiry of jobs, signal TTL, retention; docs/behaviour.md, "The background
 * scheduler").
 *
 * One thread per process runs passes over every tenant:
 *
 *   timers   claim a bounded batch of due timers (claimed_until = now +
 *            claim_ms) → fire(timer) for each: one unit of work on its
 *            root, which fires only if the timer still exists and deletes
 *            it in the same transaction (wf_store_claim_due_timers); or,
 *            with opt.fire_batch (workflowd), the whole claimed batch at
 *            once: batch units of work over many roots, locked in root-id
 *            order, one commit each (wf_runtime_fire_timers);
 *   leases   a bounded batch of ACTIVATED jobs whose lease ran out → for
 *            each, one unit of work on its root that re-checks the job
 *            (still ACTIVATED, same key, lease still run out), makes it
 *            ACTIVATABLE without spending an attempt, drops its key (the
 *            stale worker then gets JOB_LEASE_LOST) and writes
 *            JOB_LEASE_EXPIRED; then wakes ActivateJobs long polls of its
 *            type (opt.wake; the store's NOTIFY reaches other replicas);
 *   signals  buffered signals past expires_at leave the buffer, marked
 *            discarded in the delivery log (wf_store_expire_signals);
 *   batches  with opt.batches (workflowd), batch operations: a claim of
 *            the RUNNING ones whose lease ran out, one bounded chunk of
 *            each (engine/batch.h), through the callback;
 *   schedules with opt.schedules (workflowd), schedules: a claim of the
 *            due ones (a lease, SKIP LOCKED), their due fire times each
 *            started at most once (engine/schedules.h), through the
 *            callback;
 *   sweep    every sweep_interval_ms, retention: expired signals, request
 *            records and (when event_retention_ms is set) events of ended
 *            trees, deleted in batches of sweep_batch rows.
 * A full batch makes the thread go again at once; else it sleeps idle_ms.
 *
 * The scheduler knows nothing of what firing a timer means: the
 * composition root passes a callback (in workflowd, an adapter to
 * wf_runtime_fire_timer). That keeps this file free of net internals and lets
 * the tests fire with a fake. Lease expiry and the rest are plain row
 * changes, done here.
 *
 * Why polling: the store has no "next due" query and timers and leases
 * are created by any replica, so the thread wakes at least every idle_ms.
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
 *     reported by fire also ends the batch and enters the back-off;
 *   - a lease, signal or sweep step fails: logged; the rows are still
 *     there for the next pass.
 *
 * Several schedulers (replicas) may run on one database: claims and SKIP
 * LOCKED only avoid duplicate work; the re-checks under the root lock make
 * each timer fire, and each lease expire, at most once.
 *
 * On demand, wf_scheduler_run runs the same passes on the caller's thread
 * for one tenant (RunSchedulerPass, wfctl tick) or for all.
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

/* Fires a batch of claimed timers (rows live until the call returns), as
 * wf_runtime_fire_timers: per timer i, fired[i], codes[i] and errs[i] with the
 * meaning of wf_sched_fire_fn's *fired, code and err. */
typedef void (*wf_sched_batch_fn)(void *arg, const wf_timer_row *rows, size_t n,
                                  int64_t deadline_ms, bool *fired, wf_code *codes, wf_error *errs);

/* Wakes waiters after a lease expiry committed: topic "events", then
 * "jobs:<type>" (net_runtime.h's topics). Cheap, non-blocking; called with
 * the fire callback's arg. */
typedef void (*wf_sched_wake_fn)(void *arg, const char *topic);

/* Runs one pass of batch operations for tenant (NULL: every tenant): a
 * claim, then one chunk of each operation claimed (wf_batch_pass);
 * *chunks: how many ran. Called with the fire callback's arg. */
typedef wf_code (*wf_sched_batches_fn)(void *arg, const char *tenant, int64_t deadline_ms,
                                       size_t *chunks, wf_error *err);

/* Runs one pass of schedules for tenant (NULL: every tenant): a claim of
 * the due ones, then their due fire times (wf_schedules_pass); *claimed:
 * schedules claimed, *runs: fire times handled. Called with the fire
 * callback's arg. */
typedef wf_code (*wf_sched_schedules_fn)(void *arg, const char *tenant, int64_t deadline_ms,
                                         size_t *claimed, size_t *runs, wf_error *err);

/* Zero fields take the defaults in brackets. */
typedef struct wf_scheduler_options {
    size_t batch;                     /* timers claimed, leases expired per store call [100] */
    int64_t claim_ms;                 /* how long a claim keeps other replicas off [30000] */
    int64_t idle_ms;                  /* longest sleep between passes [200] */
    int64_t call_timeout_ms;          /* deadline of each store call and each fire [5000] */
    int64_t backoff_max_ms;           /* longest wait between retries after an error [5000] */
    bool manual;                      /* no thread: only wf_scheduler_tick/_run run passes */
    wf_sched_wake_fn wake;            /* after each lease expiry; NULL = none */
    wf_sched_batch_fn fire_batch;     /* fires each claimed batch at once; NULL = fire */
    size_t sweep_batch;               /* rows per signal-expiry or retention statement [500] */
    int64_t sweep_interval_ms;        /* how often the thread sweeps [60000] */
    int64_t idempotency_retention_ms; /* request records older go [24 h] */
    int64_t signal_retention_ms;      /* expired buffered signals, deliveries run, older go [7 d] */
    int64_t event_retention_ms;       /* events of trees ended longer ago go; 0 = keep */
    wf_sched_batches_fn batches;      /* a pass of batch operations; NULL = none */
    wf_sched_schedules_fn schedules;  /* a pass of schedules; NULL = none */
} wf_scheduler_options;

/* What one run did (wf_scheduler_run). */
typedef struct wf_sched_counts {
    size_t timers_fired;    /* timers whose firing committed */
    size_t leases_expired;  /* jobs made activatable again, JOB_LEASE_EXPIRED written */
    size_t signals_expired; /* buffered signals that left the buffer unconsumed */
    size_t rows_removed;    /* rows deleted by retention (signals, request records, events) */
    size_t batch_chunks;    /* chunks of batch operations run (their progress kept) */
    size_t schedule_runs;   /* fire times of schedules handled */
} wf_sched_counts;

/* Counters since start, for metrics. */
typedef struct wf_scheduler_stats {
    uint64_t passes;          /* claim calls made (successful or not) */
    uint64_t fired;           /* timers that fired (fire reported *fired) */
    uint64_t gone;            /* claimed timers that were already gone */
    uint64_t fire_errors;     /* fire calls that failed (the timer is retried later) */
    uint64_t claim_errors;    /* claim calls that failed */
    uint64_t leases_expired;  /* jobs whose expired lease this scheduler ended */
    uint64_t signals_expired; /* buffered signals it expired */
    uint64_t rows_removed;    /* rows its retention sweeps deleted */
    uint64_t step_errors;     /* lease, signal or sweep steps that failed */
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

/* Runs the timer, lease and signal passes now (every tenant, no sweep),
 * on the calling thread, until a claim returns less than a full batch
 * (everything due is handled), and sets *fired (may be NULL) to the
 * number of timers fired. A claim error is returned (err set);
 * failures of single timers are not (they are logged and counted, and the
 * timers retried after their claim). May run concurrently with the thread:
 * the claims keep the two apart. */
wf_code wf_scheduler_tick(wf_scheduler *s, size_t *fired, wf_error *err);

/* Runs every pass now, on the calling thread, for tenant (NULL: every
 * tenant): timers until a claim returns less than a full batch, then
 * expired leases and expired signals the same way, then batch operations
 * until a pass runs no chunk (so every RUNNING one that no other replica
 * holds goes to its end, deadline permitting), then schedules until a
 * pass claims none, then, with sweep, the
 * retention sweep. No new batch starts after deadline_ms (monotonic; 0 =
 * none). *out (may be NULL) gets what was done, also on error. The first
 * store error ends the run and is returned (err set); failures of single
 * timers or leases are not (logged, counted, retried later). May run
 * concurrently with the thread and with other runs. */
wf_code wf_scheduler_run(wf_scheduler *s, const char *tenant, bool sweep, int64_t deadline_ms,
                         wf_sched_counts *out, wf_error *err);

/* Copies the counters (thread-safe). */
void wf_scheduler_get_stats(wf_scheduler *s, wf_scheduler_stats *out);

/* Stops the thread (it finishes the timer, or the fire_batch call, in hand; the rest of its batch
 * stays claimed and is retried after claim_ms, here or on another
 * replica), joins it and frees s. NULL-safe. Returns within one store
 * call's deadline. */
void wf_scheduler_stop(wf_scheduler *s);

#endif /* WF_SCHEDULER_H */
