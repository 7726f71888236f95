/*
 * net_runtime_int.h: what the files of the runtime share and nobody else
 * uses: the working set of a net unit of work and the wf_runtime__
 * functions one file of the runtime defines and another calls.
 *
 * The working set of a net unit of work extends the working set of the
 * base module (work.h: instances, tasks, events) with the net's own rows:
 * tokens and work items of the net instance, and the jobs, timers and
 * subscriptions of the whole aggregate. Each row carries flags: NEW (not
 * in the store yet), DIRTY (changed) and GONE (to delete). At the end a
 * GONE row is deleted (not written at all when it is also NEW), and a NEW
 * or DIRTY row is upserted, once, whatever happened to it in between. A
 * work item that ends is GONE from the working set but KEEP: it is
 * upserted with its end state, as history (wf_runtime__end_item).
 */
#ifndef WF_NET_RUNTIME_INT_H
#define WF_NET_RUNTIME_INT_H

#include "net_runtime.h"
#include "signals.h"
#include "work.h"

enum { NW_NEW = 1, NW_DIRTY = 2, NW_GONE = 4, NW_KEEP = 8 };

/* One array of rows with their flags. */
typedef struct nw_rows {
    void *rows;
    unsigned char *flags;
    size_t n, cap;
} nw_rows;

typedef struct net_work {
    wf_work rw; /* instances, tasks, events */
    wf_tx *tx;
    const wf_aggregate *agg; /* as loaded (NULL for a new root) */
    size_t inst;             /* the net instance in rw.insts */
    const wf_net *net;       /* its definition; NULL for an AD_HOC instance */
    nw_rows toks;            /* wf_token_row of the net instance */
    nw_rows items;           /* wf_work_item_row of the net instance */
    nw_rows jobs;            /* wf_job_row of the aggregate */
    nw_rows timers;          /* wf_timer_row of the aggregate */
    nw_rows subs;            /* wf_subscription_row of the aggregate */
    const char **wake;       /* job types made activatable */
    size_t n_wake;
    size_t first_new_task;          /* tasks at and after this index were created here */
    struct nw_sig_pending *sig_top; /* MSG firings queued by signal consumption
                                       (signals_consume.c), newest first */
    struct nw_call *calls;          /* CALL items enabled here, their children to start
                                       once the working set is written (net_runtime_call.c) */
    bool call_told;                 /* the caller of this call child was told of its end */
} net_work;

#define NW_ROW(w, arr, type, i) (&((type *)(w)->arr.rows)[i])
#define TOK(w, i) NW_ROW(w, toks, wf_token_row, i)
#define ITEM(w, i) NW_ROW(w, items, wf_work_item_row, i)
#define JOB(w, i) NW_ROW(w, jobs, wf_job_row, i)
#define TIMER(w, i) NW_ROW(w, timers, wf_timer_row, i)
#define SUB(w, i) NW_ROW(w, subs, wf_subscription_row, i)

/* ---- the working set (net_runtime_work.c) ----------------------------------- */

/* Appends a copy of row (elem bytes) to r with flags; its index in
 * *index (NULL = not wanted). */
wf_code wf_runtime__add_row(wf_arena *a, nw_rows *r, const void *row, size_t elem,
                            unsigned char flags, size_t *index, wf_error *err);

/* Fills the row arrays of w from w->agg (NULL: empty) for the net
 * instance w->inst, and clears the job types to wake. */
wf_code wf_runtime__load(net_work *w, wf_error *err);

/* Locks the root of instance_id, loads it into a working set and binds
 * the net instance: instance_id itself. WF_E_INSTANCE_NOT_FOUND when the
 * aggregate lacks it. w->net is NULL when its definition is AD_HOC.
 * root_hint: the root_id of a row read before, or NULL (see
 * wf_tx_lock_root_hint). */
wf_code wf_runtime__open(net_work *w, const wf_ref_ctx *ctx, wf_tx *tx, const char *instance_id,
                         const char *root_hint, wf_error *err);

/* Starts over from the loaded aggregate, dropping every change (used to
 * turn a refused firing into an incident). */
wf_code wf_runtime__reset(net_work *w, wf_error *err);

/* Saves w as it is now into *save (its own copies, in w's arena), so that
 * wf_runtime__restore can go back to this point and keep the changes made
 * before it: unlike wf_runtime__reset, a refused firing nested in a larger unit
 * of work then undoes only itself. Store writes made in between (signals
 * consumed) are not undone. */
wf_code wf_runtime__save(const net_work *w, net_work *save, wf_error *err);
void wf_runtime__restore(net_work *w, const net_work *save);

/* Finds a row by id; WF_WORK_NONE when absent or GONE. */
size_t wf_runtime__find(const net_work *w, const nw_rows *r, size_t elem, const char *id);

/* A TIME or MSG work item still waits: its timer or subscription is in
 * place (a firing spends it, a refused firing too). */
bool wf_runtime__armed(const net_work *w, const wf_work_item_row *it);

/* Transition id of w's net (NULL when absent or the instance is AD_HOC). */
const wf_transition *wf_runtime__transition_of(const net_work *w, const char *id);

/* The task is OPEN or CLAIMED. */
bool wf_runtime__task_pending(const wf_task_row *t);

/* Marks row i of r changed / deleted. */
void wf_runtime__dirty(nw_rows *r, size_t i);
void wf_runtime__gone(nw_rows *r, size_t i);

/* Ends work item ii of the working set: state FINISHED or WITHDRAWN,
 * finished_at now (kept when already set: a compensated step keeps the
 * time it fired), finished_by (NULL = nobody). The row leaves the working
 * set and is written as history (store.h). */
void wf_runtime__end_item(net_work *w, size_t ii, wf_work_item_state state, const char *by);

/* Appends an event about the net instance (data reference stolen). */
wf_code wf_runtime__event(net_work *w, const char *type, struct json_t *data, wf_error *err);

/* Marks the net instance FAILED with last_error (INSTANCE_FAILED) and opens
 * its incident: code a stable reason (Incident.code), transition_id the
 * transition to blame (NULL = none), attempts the attempts of the failed
 * job, or -1 for the instance's retries so far. */
wf_code wf_runtime__fail_instance(net_work *w, const char *code, const char *transition_id,
                                  int32_t attempts, const char *message, wf_error *err);
/* The same with more event data (the event takes data). */
wf_code wf_runtime__fail_instance_data(net_work *w, const char *code, const char *transition_id,
                                       int32_t attempts, const char *message, struct json_t *data,
                                       wf_error *err);

/* Codes of a firing the net refused (no arc matched, a guard or
 * expression failed or hit its limit): a TIME or MSG firing, or a
 * CompleteJob's, gives the instance an incident instead of the caller an
 * error; RetryInstance refused again answers the code. */
bool wf_runtime__incident_code(wf_code rc);

/* Writes everything with one wf_tx_apply. */
wf_code wf_runtime__write(net_work *w, wf_error *err);

/* Adds a job type to wake after the commit (once). WF_NW_WAKE_TIMERS
 * (no job type is empty) stands for "a timer was created". */
wf_code wf_runtime__add_wake(net_work *w, const char *job_type, wf_error *err);
#define WF_NW_WAKE_TIMERS ""

/* Sets (*types, *n), replacing what they held, to the job types of
 * w->wake: they live in the call's arena, so they outlive the attempt. */
void wf_runtime__keep_wake(const net_work *w, const char ***types, size_t *n);

/* Calls ctx->wake for "events" and every "jobs:<type>" (and "timers" for
 * WF_NW_WAKE_TIMERS). */
void wf_runtime__wake(const wf_runtime_ctx *ctx, const char *const *types, size_t n);

/* wf_time_rfc3339 (core/wf_time.h) under the name signals.c and
 * net_runtime_jobs.c call it by. */
char *wf_runtime__time_text(wf_arena *a, int64_t us);

/* ---- firing (net_runtime.c) ------------------------------------------------- */

/* Applies diff d of a step of the net instance (vars: its variables after
 * the step's patch): fired and withdrawn items, tokens, created items with
 * their tasks, jobs, timers and subscriptions, the MSG firings queued by
 * signal consumption, due times of tasks, and the end or deadlock of the
 * instance. */
wf_code wf_runtime__apply_diff(net_work *w, const wf_net_diff *d, const char *vars, wf_error *err);

/* Adds a NEW, ACTIVATABLE job for work item it of the net instance, with
 * the retry policy of its transition t and vars as its variables, and
 * wakes the workers of its type after the commit. A forward job has t's
 * job_type and the idempotency key "<instance>:<work item>"; a
 * compensation job (compensation true) has t's compensation_job_type and
 * "<instance>:<work item>:compensate", stable across attempts and
 * RetryInstance. On WF_OK *out is a copy of the row (strings in w's arena).
 * The caller writes the JOB_CREATED event. */
wf_code wf_runtime__create_job(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                               const char *vars, bool compensation, wf_job_row *out, wf_error *err);

/* ---- for-each transitions (net_runtime_foreach.c) ----------------------------- */

/* Creates the task(s) of USER item it of transition t over vars: its
 * assignee (ids or ids_expression), priority, due and follow-up times. */
wf_code wf_runtime__enable_user(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                                const char *vars, wf_error *err);

/* t is an AUTO, USER or CALL transition with for_each. */
bool wf_runtime__is_foreach(const wf_transition *t);

/* Enables for-each item it of transition t: evaluates for_each over vars
 * (WF_E_FOREACH_NOT_ARRAY, _EMPTY, _TOO_MANY), keeps the items' state on
 * the work item and creates the first item's job (sequential) or every
 * item's job. */
wf_code wf_runtime__foreach_enable(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                                   const char *vars, wf_error *err);

/* Job ji of for-each work item ii (transition t) completed with output
 * patch: the item is recorded (FOREACH_ITEM_COMPLETED), the job deleted;
 * when t's join is met the remaining items' jobs are withdrawn and the
 * item fires, else a sequential for-each starts its next item. */
wf_code wf_runtime__foreach_job_done(net_work *w, size_t ji, size_t ii, const wf_transition *t,
                                     const char *patch, wf_error *err);

/* The variables job j runs with now: the instance's, and for the item of
 * a for-each its item and index (kept from the job's variables). */
wf_code wf_runtime__job_vars(net_work *w, const wf_job_row *j, const char **out, wf_error *err);

/* Task t (an index in w->rw.tasks) of for-each work item ii (transition
 * t) is done with output patch: as wf_runtime__foreach_job_done, the
 * remaining items' tasks CANCELLED when the join is met. */
wf_code wf_runtime__foreach_task_done(net_work *w, size_t task, size_t ii, const wf_transition *t,
                                      const char *patch, wf_error *err);

/* The live for-each CALL work item whose running item i (*index) has
 * child child_id; WF_WORK_NONE when none. */
size_t wf_runtime__foreach_child(const net_work *w, const char *child_id, long *index);

/* The child child_id of item index of for-each CALL work item ii
 * (transition t) completed with output patch (its output mapping): as
 * wf_runtime__foreach_job_done, the remaining items' children cancelled
 * when the join is met. */
wf_code wf_runtime__foreach_call_done(net_work *w, size_t ii, const wf_transition *t, long index,
                                      const char *child_id, const char *patch, wf_error *err);

/* The first running item of for-each CALL work item ii whose child (in
 * w) has ended or FAILED (*child); -1 when none. */
long wf_runtime__foreach_settled_child(const net_work *w, size_t ii, const wf_instance_row **child);

/* The running items of for-each CALL work item ii (transition t) whose
 * child never started (an incident of the call) are started again. */
wf_code wf_runtime__foreach_call_retry(net_work *w, size_t ii, const wf_transition *t,
                                       wf_error *err);

/* Cancels the live call children of for-each CALL work item it (their
 * subtrees, with reason). */
wf_code wf_runtime__foreach_cancel_children(net_work *w, const wf_work_item_row *it,
                                            const char *reason, wf_error *err);

/* Items in all and completed of for-each work item it (WF_OK), or the
 * code of a missing state. */
wf_code wf_runtime__foreach_progress(const wf_work_item_row *it, int32_t *total,
                                     int32_t *completed);

/* The marking and live work items of the net instance (in w's arena). */
wf_code wf_runtime__state(net_work *w, wf_net_state *st, wf_error *err);

/* Due time of the earliest live timer competing with item row for a
 * token; 0 when none. */
int64_t wf_runtime__competing_due(const net_work *w, const wf_work_item_row *row);

/* Fires live work item work_item_id of the net instance, merging patch_json (NULL =
 * nothing) into the instance's variables first, and applies the step's
 * diff: tokens, work items with their tasks, jobs, timers and
 * subscriptions, events, termination. Errors of the net engine
 * (NO_ARC_MATCHED, a failing guard or expression, the silent loop bound)
 * leave the working set in an undefined state: roll back, or wf_runtime__reset. */
wf_code wf_runtime__fire(net_work *w, const char *work_item_id, const char *patch_json,
                         wf_error *err);

/* wf_runtime__fire producing one token in goto_place (NULL = route as usual). */
wf_code wf_runtime__fire_goto(net_work *w, const char *work_item_id, const char *patch_json,
                              const char *goto_place, wf_error *err);

/* Arms TIME work item ii (an index in w->items) again: a new timer from
 * now, TIMER_SCHEDULED. */
wf_code wf_runtime__rearm_timer(net_work *w, size_t ii, wf_error *err);

/* Abandons the work of the net instance: every other ENABLED work item is
 * withdrawn (WORKITEM_WITHDRAWN, its OPEN and CLAIMED tasks CANCELLED),
 * item keep (NULL = none) ends FINISHED by the actor without an event,
 * the tokens are removed, and the jobs, timers and subscriptions of the
 * net instance (whole_tree: of every instance of the aggregate) are
 * deleted. Used when compensation begins and by CompleteAndEnd. */
wf_code wf_runtime__abandon(net_work *w, const char *keep, bool whole_tree, wf_error *err);

/* ---- calls (net_runtime_call.c) ------------------------------------------------ *
 *
 * A CALL work item's child is an instance of the called definition in the
 * caller's tree (parent_id the caller, root_id the caller's root), whose id
 * is the work item's id: the item finds its child, the child its item,
 * without a column of their own. The child starts in the unit of work that
 * enables the item, once the caller's rows are written; its end fires the
 * item (or opens the caller's incident) in the unit of work that ends it.
 */

/* CALL work item it of transition t was just enabled with the caller's
 * variables vars: maps the child's input now and queues its start. */
wf_code wf_runtime__call_enabled(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                                 const char *vars, wf_error *err);

/* Queues the start of a child of CALL work item item_id of transition t:
 * its input mapped over vars now, item_patch (NULL = none) merged into it.
 * index -1: the child of the item, its id the item's; a for-each item
 * index: its id derived from item_id and index (*child_id, NULL = not
 * wanted). The children start once the caller is written
 * (wf_runtime__call_after_write). */
wf_code wf_runtime__call_queue(net_work *w, const char *item_id, const wf_transition *t,
                               const char *vars, long index, const char *item_patch,
                               const char **child_id, wf_error *err);

/* Cancels the subtree of call child child_id in w, when live (reason on
 * its INSTANCE_CANCELLED). */
wf_code wf_runtime__call_cancel_child(net_work *w, const char *child_id, const char *reason,
                                      wf_error *err);

/* CALL work item item_id is withdrawn: its child's subtree in w is
 * cancelled (tasks CANCELLED, jobs, timers and subscriptions deleted,
 * INSTANCE_CANCELLED newest first). */
wf_code wf_runtime__call_withdrawn(net_work *w, const char *item_id, wf_error *err);

/* GetInstance's calls of w's net instance (a view's working set): every
 * child whose id is a CALL work item of it, the transition from its live
 * item, else the CALL transition of the child's key. */
wf_code wf_runtime__call_view(const net_work *w, wf_runtime_view *out, wf_error *err);

/* After w was written: starts the queued children, and when w's instance
 * is a call child whose status changed, tells its caller. */
wf_code wf_runtime__call_after_write(net_work *w, wf_error *err);

/* The version of a NET definition to start (wf_runtime_start_in's rule):
 * def read at version asked, replaced by an older one when asked is 0
 * and def is outside its validity window. */
wf_code wf_runtime__pick_version(wf_tx *tx, int32_t asked, wf_definition_row *def, wf_error *err);

/* Starts net def as a new instance (id NULL = a new id) with vars: a
 * root, or with parent set a child in parent's tree. */
wf_code wf_runtime__start_net(const wf_ref_ctx *ctx, wf_tx *tx, const wf_definition_row *def,
                              const wf_start_spec *spec, const wf_instance_row *parent,
                              const char *vars, wf_instance_row *out, wf_error *err);

/* ---- USER tasks (net_runtime_tasks.c) --------------------------------------- */

/* Counts the tasks of work item item_id in rw. */
void wf_runtime__count_tasks(const wf_work *rw, const char *item_id, wf_ref_counts *c);

/* ---- sagas (net_runtime_saga.c) -------------------------------------------- */

/* Starts compensating when there are steps (*started): the forward work is
 * abandoned, COMPENSATING, COMPENSATION_STARTED (cause in its data) and
 * the first compensation job. Else changes nothing. */
wf_code wf_runtime__saga_begin(net_work *w, const char *cause, bool *started, wf_error *err);

/* CompleteJob of compensation job ji (patch merged, NULL = none): the step
 * is done, then the next one or the end (COMPENSATED / FAILED). */
wf_code wf_runtime__saga_job_done(net_work *w, size_t ji, const char *patch, wf_error *err);

/* Compensation job ji failed with no attempt left: COMPENSATION_STEP_FAILED,
 * then the next step or the end. */
wf_code wf_runtime__saga_job_failed(net_work *w, size_t ji, const char *message, wf_error *err);

/* ---- signal consumption (signals_consume.c) -------------------------------------- *
 *
 * The hooks the firing (net_runtime.c) calls so that a MSG work item
 * consumes a buffered signal when it is enabled, and an instance that
 * ends discards the signals buffered for it (CompleteAndEnd too); the
 * second look at the buffer of RetryInstance (net_runtime_saga.c); and
 * the firing of a signal, which SendSignal (signals.c) shares.
 *
 * Consumption happens inside apply_created (the MSG branch): the signal
 * row is taken (wf_tx_consume_signal, SKIP LOCKED) and the firing is
 * queued. The queue is drained by the wf_runtime__apply_diff that created
 * the item, after all of that step's items exist, so the firing sees the
 * whole marking; nested steps keep their own part of the queue (a stack
 * in the working set, net_work.sig_top, marked before the step's items
 * are created and always cut back to the mark after). A queued item
 * withdrawn before it fires puts its signal back in the buffer.
 */

/* Fires MSG work item item_id of transition trans with a signal's payload
 * (NULL = none); the events of the signal's consumption are already in w.
 * A refused firing becomes an incident without failing the unit of work
 * around it: w goes back to how it was before the firing (what the caller
 * did so far is kept), the signal stays spent on this instance, which
 * keeps the payload, the item stays ENABLED with its subscription deleted
 * (RetryInstance re-fires it) and the instance turns FAILED. Used by
 * SendSignal too (signals.c). */
wf_code wf_runtime__fire_signal(net_work *w, const char *name, const char *item_id,
                                const char *trans, const char *payload, wf_error *err);

/* The data of SIGNAL_CONSUMED: signal s fires work item item_id of
 * transition_id (new reference). */
struct json_t *wf_runtime__consumed_data(const wf_signal_row *s, const char *transition_id,
                                         const char *item_id);

/* The current top of w's queue (opaque). */
void *wf_runtime__pending_mark(const net_work *w);

/* MSG work item it of transition t was just enabled (its subscription is
 * in w->subs): consumes a matching buffered signal and queues the firing. */
wf_code wf_runtime__msg_enabled(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                                wf_error *err);

/* Cuts the queue back to mark and, when rc is WF_OK, fires what was
 * queued above it (SIGNAL_CONSUMED, payload merged). A refused firing
 * (NO_ARC_MATCHED, a failing guard) is an incident of the instance, not
 * an error: the caller's unit of work goes on. When rc is such a refusal
 * the queued signals go back to the buffer. Returns rc or the firing's
 * error. */
wf_code wf_runtime__fire_pending(net_work *w, void *mark, wf_code rc, wf_error *err);

/* RetryInstance resolved an incident and the instance runs again: every
 * MSG work item of it still waiting (ENABLED, its subscription in place)
 * looks at the buffer again, as when it was enabled (wf_runtime__msg_enabled
 * then wf_runtime__fire_pending). A signal it missed while the instance was
 * FAILED (sent then, or put back when an earlier firing of the same step
 * was refused) is consumed and fires now; a refused firing is the
 * instance's incident again, and the retry keeps what it did before. */
wf_code wf_runtime__consume_awaited(net_work *w, wf_error *err);

/* The net instance ended: its buffered signals (addressed to its id) are
 * marked discarded. */
wf_code wf_runtime__discard_buffered(net_work *w, wf_error *err);

/* True when s is 1..max bytes with no control character (names and keys a
 * caller gives: signal names, correlation keys, signal ids). */
bool wf_runtime__printable(const char *s, size_t max);

#endif /* WF_NET_RUNTIME_INT_H */
