/*
 * pg/store.c: the Postgres store. ALL of the service's SQL lives in it:
 * the statements in pg/stmts.c, the unit of work in pg/tx.c, reads in
 * pg/reads.c, migrations in pg/migrate.c, the notifier and listener
 * threads in pg/listen.c (shared declarations: pg/pg_int.h). This file holds
 * its lifecycle, the definition cache and the store's operations table.
 *
 * DESIGN. Each store call borrows one pooled connection (pg/pool.c) for
 * its duration; a unit of work keeps it from begin to commit/rollback.
 * Every statement is prepared (lazily, per connection) and parameterised,
 * and its text never changes. Postgres may plan it once for every value
 * (a generic plan), so a query whose filters are optional comes as one
 * statement per shape: the parameters a call has pick the statement, and
 * each shape has an index serving its filter and its order
 * (migrations/0006_plans.sql). Filters that do not pick the index are
 * written as "($n IS NULL OR ...)" on the rows it returns; a keyset
 * cursor is always bound. tests/store/test_store_plans.c plans every
 * statement of stmts[] that way over a large backlog. Statements travel
 * in flights (pg/pool.c: libpq pipeline mode), so that what a store call
 * needs costs one round trip: BEGIN rides with a transaction's first
 * statement, the aggregate load is one flight, and so is every write of
 * one mutation. statement_timeout
 * follows the call's deadline as a session setting, rounded (wf_store_pg__timeout_for)
 * and sent, in the same flight, only when the session holds another
 * value. Mutations lock the root instance row with
 * SELECT ... FOR UPDATE and then the aggregate's jobs and timers, so the
 * cross-instance leases (job activation, timer claims), which use FOR
 * UPDATE SKIP LOCKED, never race a mutation and never block on one.
 * Rows map to C structs through the descriptors of store_rows.c: the column
 * lists below are in descriptor order, and every result's column count is
 * checked against its descriptor.
 *
 * Events are inserted unnumbered; the sequencer (wf_sequence_events in
 * migrations/0001_init.sql, which explains why it is gap-free) numbers
 * committed ones, and every event read runs it first. Wake-ups: commits
 * note what they owe and the notifier thread sends wf_events / wf_jobs
 * after commit, coalesced, in a transaction of its own (never inside a
 * writer: see "notifier"); the optional listener thread owns one
 * connection outside the pool that LISTENs and hands notifications to the
 * callback, reconnecting with back-off after an outage.
 *
 * Owns: the schema (migrations/, applied at startup under an advisory
 * lock) and every query. Must not: leak SQL or libpq text to clients
 * (pg/errors.c maps failures), build SQL from strings, or keep a
 * connection across calls.
 */
#include "pg/pg_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_log.h"
#include "wf_time.h"

/* ---- store lifecycle -------------------------------------------------------- */

static void
pg_destroy(wf_store *st)
{
    pg_store *s = (pg_store *)st;
    wf_store_pg__notifier_stop(s);
    wf_store_pg__listener_stop(s->listener);
    wf_store_pg__pool_free(s->pool);
    for (size_t i = 0; i < s->n_defs; i++)
        wf_store__row_clear(&wf_store__definition_desc, &s->defs[i]);
    pthread_mutex_destroy(&s->defs_mu);
    free(s);
}

/* The cached version of key into ctx->arena: 1 found, 0 not cached, -1
 * out of memory. */
int
wf_store_pg__defs_get(pg_store *s, const wf_store_ctx *ctx, const char *key, int32_t version,
                      wf_definition_row *out)
{
    int got = 0;
    pthread_mutex_lock(&s->defs_mu);
    for (size_t i = 0; i < s->n_defs; i++) {
        const wf_definition_row *d = &s->defs[i];
        if (d->version == version && strcmp(d->key, key) == 0 &&
            strcmp(d->tenant, ctx->tenant) == 0) {
            got = wf_store__row_copy(&wf_store__definition_desc, out, d, ctx->arena, NULL) ? 1 : -1;
            break;
        }
    }
    pthread_mutex_unlock(&s->defs_mu);
    return got;
}

/* Caches a committed row (once; the cache stops growing when full). */
void
wf_store_pg__defs_put(pg_store *s, const wf_definition_row *row)
{
    if (row->tenant == NULL || row->key == NULL || row->version <= 0)
        return;
    pthread_mutex_lock(&s->defs_mu);
    bool have = false;
    for (size_t i = 0; !have && i < s->n_defs; i++)
        have = s->defs[i].version == row->version && strcmp(s->defs[i].key, row->key) == 0 &&
               strcmp(s->defs[i].tenant, row->tenant) == 0;
    if (!have && s->n_defs < DEFS_MAX) {
        wf_definition_row *d = &s->defs[s->n_defs];
        if (wf_store__row_copy(&wf_store__definition_desc, d, row, NULL, NULL))
            s->n_defs++;
        else
            wf_store__row_clear(&wf_store__definition_desc, d);
    }
    pthread_mutex_unlock(&s->defs_mu);
}

static bool
pg_ready(wf_store *st)
{
    pg_store *s = (pg_store *)st;
    wf_store_pg_conn *c = NULL;
    int64_t deadline = wf_mono_ms() + 1000;
    if (wf_store_pg__pool_acquire(s->pool, deadline, &c, NULL) != WF_OK)
        return false;
    bool ok = wf_store_pg__run_cmd(c, S_PING, NULL, deadline, NULL, NULL) == WF_OK;
    wf_store_pg__conn_put(s, c);
    return ok;
}

static void
pg_stats(wf_store *st, wf_store_stats *out)
{
    wf_store_pg__pool_stats(((pg_store *)st)->pool, out);
}

/* ---- construction ------------------------------------------------------------ */

static const wf_store_ops pg_ops = {
    .destroy = pg_destroy,
    .ready = pg_ready,
    .stats = pg_stats,
    .begin = wf_store_pg__begin,
    .lock_root = wf_store_pg__lock_root,
    .apply = wf_store_pg__apply,
    .commit = wf_store_pg__commit,
    .rollback = wf_store_pg__rollback,
    .idem_get = wf_store_pg__idem_get,
    .idem_put = wf_store_pg__idem_put,
    .idem_amend = wf_store_pg__idem_amend,
    .idem_prefetch = wf_store_pg__idem_prefetch,
    .defer_writes = wf_store_pg__defer_writes,
    .commit_recorded = wf_store_pg__commit_recorded,
    .put_definition = wf_store_pg__put_definition,
    .tx_get_definition = wf_store_pg__tx_get_definition,
    .consume_signal = wf_store_pg__consume_signal,
    .lock_correlation = wf_store_pg__lock_correlation,
    .aggregate_live = wf_store_pg__aggregate_live,
    .get_definition = wf_store_pg__get_definition,
    .get_instance = wf_store_pg__get_instance,
    .get_task = wf_store_pg__get_task,
    .get_job_by_key = wf_store_pg__get_job_by_key,
    .list_tasks = wf_store_pg__list_tasks,
    .list_instances = wf_store_pg__list_instances,
    .list_incidents = wf_store_pg__list_incidents,
    .list_definitions = wf_store_pg__list_definitions,
    .list_signals = wf_store_pg__list_signals,
    .list_work_items = wf_store_pg__list_work_items,
    .activate_jobs = wf_store_pg__activate_jobs,
    .tx_activate_jobs = wf_store_pg__tx_activate_jobs,
    .claim_due_timers = wf_store_pg__claim_due_timers,
    .find_expired_leases = wf_store_pg__find_expired_leases,
    .expire_signals = wf_store_pg__expire_signals,
    .sweep = wf_store_pg__sweep,
    .find_subscriptions = wf_store_pg__find_subscriptions,
    .read_events = wf_store_pg__read_events,
    .sequence_events = wf_store_pg__sequence_events,
    .count_backlog = wf_store_pg__count_backlog,
    .set_listener = wf_store_pg__set_listener,
    .put_batch = wf_store_pg__put_batch,
    .get_batch = wf_store_pg__get_batch,
    .update_batch = wf_store_pg__update_batch,
    .list_batches = wf_store_pg__list_batches,
    .claim_batches = wf_store_pg__claim_batches,
    .put_schedule = wf_store_pg__put_schedule,
    .get_schedule = wf_store_pg__get_schedule,
    .update_schedule = wf_store_pg__update_schedule,
    .delete_schedule = wf_store_pg__delete_schedule,
    .list_schedules = wf_store_pg__list_schedules,
    .claim_schedules = wf_store_pg__claim_schedules,
    .put_schedule_run = wf_store_pg__put_schedule_run,
    .settle_schedule_run = wf_store_pg__settle_schedule_run,
    .list_schedule_runs = wf_store_pg__list_schedule_runs,
    .get_resource = wf_store_pg__get_resource,
    .save_resource = wf_store_pg__save_resource,
    .delete_resource = wf_store_pg__delete_resource,
    .list_resources = wf_store_pg__list_resources,
    .fanout_targets = wf_store_pg__fanout_targets,
    .take_delivery = wf_store_pg__take_delivery,
    .pending_deliveries = wf_store_pg__pending_deliveries,
    .tx_get_signal = wf_store_pg__tx_get_signal,
    .claim_deliveries = wf_store_pg__claim_deliveries,
    .find_queued_signals = wf_store_pg__find_queued_signals,
    .count_deliveries = wf_store_pg__count_deliveries,
    .fleet_counts = wf_store_pg__fleet_counts,
    .fleet_instances = wf_store_pg__fleet_instances,
};

wf_code
wf_store_pg_migrate(const wf_store_pg_config *cfg, int *version, wf_error *err)
{
    pg_store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return wf_error_nomem(err);
    s->base.ops = &pg_ops;
    pthread_mutex_init(&s->defs_mu, NULL);
    s->pool = wf_store_pg__pool_new(cfg, err);
    wf_code rc = s->pool != NULL ? wf_store_pg__migrate(s, version, err) : err->code;
    pg_destroy(&s->base);
    return rc;
}

wf_store *
wf_store_pg_new(const wf_store_pg_config *cfg, wf_error *err)
{
    pg_store *s = calloc(1, sizeof *s);
    if (s == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    s->base.ops = &pg_ops;
    pthread_mutex_init(&s->defs_mu, NULL);
    s->pool = wf_store_pg__pool_new(cfg, err);
    if (s->pool == NULL || wf_store_pg__migrate(s, NULL, err) != WF_OK) {
        pg_destroy(&s->base);
        return NULL;
    }
    if (!wf_store_pg__notifier_start(s)) {
        wf_error_set(err, WF_E_INTERNAL, "could not start the database notifier");
        pg_destroy(&s->base);
        return NULL;
    }
    return &s->base;
}
