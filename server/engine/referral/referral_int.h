/*
 * referral_int.h: what the referral*.c files share and nobody else uses:
 * the working set of one unit of work.
 *
 * A working set starts as a copy of the locked aggregate. Rules change rows
 * in place (marking them dirty) or append new ones, and append events; at
 * the end wf_ref__work_changes collects exactly the dirty rows and the
 * events into a wf_store_changes. Keeping every row in one place means a
 * row changed twice in one call (variables merged, then completed by the
 * join) is written once with the version it was loaded with, and a nested
 * AssignTo can see the referral created moments before it.
 *
 * Row pointers into the working set are invalidated by any append; keep
 * indexes, not pointers, across appends.
 */
#ifndef WF_REFERRAL_INT_H
#define WF_REFERRAL_INT_H

#include "referral.h"

typedef struct ref_work {
    const wf_ref_ctx *ctx;
    wf_arena *arena;
    int64_t now;
    wf_instance_row *insts;
    bool *inst_dirty;
    size_t n_insts, cap_insts;
    wf_task_row *tasks;
    bool *task_dirty;
    size_t n_tasks, cap_tasks;
    wf_event_row *events;
    size_t n_events, cap_events;
    const char **del_jobs, **del_timers, **del_subs;
    size_t n_del_jobs, n_del_timers, n_del_subs;
} ref_work;

#define WF_REF_NONE ((size_t)-1)

/* Starts a working set over agg (NULL = empty, for a new root). */
wf_code wf_ref__work_init(ref_work *w, const wf_ref_ctx *ctx, const wf_aggregate *agg,
                          wf_error *err);

/* Index of instance / task id, or WF_REF_NONE. */
size_t wf_ref__find_instance(const ref_work *w, const char *id);
size_t wf_ref__find_task(const ref_work *w, const char *id);

/* Appends a new row (version 0, dirty); *index receives its index. */
wf_code wf_ref__add_instance(ref_work *w, const wf_instance_row *row, size_t *index, wf_error *err);
wf_code wf_ref__add_task(ref_work *w, const wf_task_row *row, size_t *index, wf_error *err);

/* Marks a row changed (and bumps an instance's updated_at). */
void wf_ref__touch_instance(ref_work *w, size_t i);
void wf_ref__touch_task(ref_work *w, size_t i);

/* Appends an event about instance i with data, a jansson object built
 * by the caller (json_pack); the reference is stolen. NULL data (also a
 * failed json_pack) is out of memory. */
struct json_t;
wf_code wf_ref__event(ref_work *w, size_t inst, const char *type, struct json_t *data,
                      wf_error *err);

/* Collects the dirty rows, deletions and events. */
void wf_ref__work_changes(const ref_work *w, wf_store_changes *out);

/* Queues the removal of a NET row of the aggregate (jobs, timers,
 * subscriptions of a cancelled instance). */
wf_code wf_ref__del(ref_work *w, const char ***list, size_t *n, const char *id, wf_error *err);

/* True when instance i is a descendant of (or equal to) instance a. */
bool wf_ref__in_subtree(const ref_work *w, size_t i, size_t a);

/* Task state changes, each with its event. */
wf_code wf_ref__cancel_task(ref_work *w, size_t t, wf_error *err);

/* Marks task t DONE by the actor (TASK_COMPLETED, with the transition of
 * a net task) and merges the output patch into instance i. Shared by
 * CompleteTask and CompleteAndEnd, of referrals and of nets. */
wf_code wf_ref__complete_task(ref_work *w, size_t t, size_t i, const char *patch, wf_error *err);

/* The end of CompleteAndEnd, once task keep is done: every other OPEN or
 * CLAIMED task of the tree is CANCELLED (listed in out->cancelled); then
 * wf_ref__complete_tree: every running instance but root COMPLETED, then
 * root (its INSTANCE_COMPLETED is the last event of the process). */
wf_code wf_ref__cancel_pending_except(ref_work *w, size_t keep, wf_ref_end *out, wf_error *err);
wf_code wf_ref__complete_tree(ref_work *w, size_t root, wf_error *err);
wf_code wf_ref__finish_instance(ref_work *w, size_t i, wf_instance_status status,
                                const char *reason, wf_error *err);

/* Runs an AssignTo inside the working set: a request's (joined false:
 * field violations go to ctx->violation) or the next step of a join. */
wf_code wf_ref__assign(ref_work *w, const wf_assign_spec *spec, wf_tx *tx,
                       const char *default_parent, bool joined, wf_ref_assignment *out,
                       wf_error *err);

/* StartInstance's checks of spec (actor, key, version, aggregate) and its
 * variables, normalised into *vars; violations go to ctx->violation. */
wf_code wf_ref__check_start(const wf_ref_ctx *ctx, const wf_start_spec *spec, const char **vars,
                            wf_error *err);

/* StartInstance's unit of work inside tx (spec checked, vars normalised):
 * the definition (created when the key has none and auto-creation is on),
 * the root instance and, for a net, everything it does until it waits.
 * *out is the new root. */
wf_code wf_ref__start_in(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec,
                         const char *vars, wf_instance_row *out, wf_error *err);

/* Copies text into the arena; NULL when out of memory or s is NULL. */
char *wf_ref__strdup(ref_work *w, const char *s);

/* Out-of-memory failure with the standard message. */
wf_code wf_ref__nomem(wf_error *err);

/* Reports one field violation of the request (field, msg) and fails with
 * INVALID_ARGUMENT. */
wf_code wf_ref__invalid(const wf_ref_ctx *ctx, const char *field, const char *msg, wf_error *err);

#endif /* WF_REFERRAL_INT_H */
