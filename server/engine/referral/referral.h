/*
 * referral: TaskFlow's ad-hoc referral workflows (docs/referrals.md).
 *
 * A root instance is started (StartInstance on an AD_HOC key, created on
 * first use); each AssignTo creates a child instance (a referral) with its
 * tasks (USER: one personal task, GROUP: one group task a member claims,
 * USERS: one personal task per id). A referral completes when its join is
 * met (ALL by default, ANY, QUORUM k); then its on_all_completed spec runs
 * as the next AssignTo in the same transaction, exactly once.
 *
 * Every mutation is one unit of work on one root (uow.h) and appends one
 * event per state change in the same transaction. Every rule of a
 * referral lives here: the handlers only translate, the entry layer
 * (instances.h) chooses between a referral and a net, and the net runtime
 * uses the rules on a working set below for the tasks of its USER
 * transitions. No protobuf or grpc type appears in this header.
 *
 * Result rows and strings live in ctx->arena.
 */
#ifndef WF_REFERRAL_H
#define WF_REFERRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "uow.h"
#include "work.h"

/* ---- requests ------------------------------------------------------------ */

/* Assignee kinds of an AssignTo; USER and GROUP equal wf_assignee_kind. */
typedef enum wf_ref_assignee {
    WF_REF_ASSIGNEE_UNSET = 0,
    WF_REF_ASSIGNEE_USER = 1,
    WF_REF_ASSIGNEE_GROUP = 2,
    WF_REF_ASSIGNEE_USERS = 3,
} wf_ref_assignee;

/* One AssignTo, possibly with the next one to run when its join fires.
 * The engine persists on_all_completed in its own encoding
 * (wf_referral_spec_encode) on the child instance. */
typedef struct wf_assign_spec {
    const char *parent_id;      /* required at top level; "" in a nested spec
                                   = the parent of the enclosing referral (its
                                   nearest running ancestor when the parent has
                                   ended) */
    const char *definition_key; /* NULL/"" = the parent's definition */
    const char *title;          /* 1-512 bytes */
    wf_ref_assignee kind;
    const char *const *ids; /* user or group ids */
    size_t n_ids;
    const char *ids_expression;  /* jq, instead of ids: evaluated when the referral is
                                    created, over the parent's variables merged with
                                    variables_json */
    const char *variables_json;  /* JSON object text; NULL/"" = {} */
    wf_join_mode join_mode;      /* NONE (unset) reads as ALL */
    int32_t join_quorum;         /* QUORUM only */
    struct wf_assign_spec *next; /* on_all_completed; NULL = none */
    const char *assigned_by;     /* NULL = the caller; set on specs run by a join */
    bool has_priority;           /* false = WF_TASK_PRIORITY_DEFAULT */
    int32_t priority;            /* 0-100 */
    int64_t due_at;              /* of the tasks; 0 = none */
    int64_t follow_up_at;        /* of the tasks; 0 = none, never after due_at */
} wf_assign_spec;

typedef struct wf_start_spec {
    const char *definition_key;
    int32_t version;            /* 0 = the latest (a NET: the newest inside its
                                   validity window) */
    const char *variables_json; /* NULL/"" = {} */
    const char *aggregate_type; /* both or neither */
    const char *aggregate_id;
    const char *instance_id; /* NULL = a new id (SendSignal's start names it first) */
} wf_start_spec;

/* ---- results ------------------------------------------------------------- */

typedef struct wf_ref_counts {
    bool all_completed; /* at least one task, none OPEN or CLAIMED */
    int32_t total, open, claimed, done, cancelled;
} wf_ref_counts;

/* What an AssignTo created. */
typedef struct wf_ref_assignment {
    wf_instance_row instance; /* the new child */
    wf_task_row *tasks;       /* in assignee order */
    size_t n_tasks;
} wf_ref_assignment;

typedef struct wf_ref_completion {
    wf_task_row task;        /* now DONE */
    wf_ref_counts counts;    /* of the task's instance, after completion */
    wf_ref_assignment *next; /* started by the join; NULL when none */
} wf_ref_completion;

typedef struct wf_ref_end {
    wf_instance_row root; /* now COMPLETED */
    wf_task_row task;     /* now DONE */
    wf_task_row *cancelled;
    size_t n_cancelled;
} wf_ref_end;

/* A join that has not fired (GetInstance). */
typedef struct wf_ref_join {
    const char *instance_id;
    const char *transition_id; /* the USER transition; NULL for an AssignTo join */
    wf_join_mode mode;
    int32_t quorum, required, done, total;
} wf_ref_join;

/* GetInstance of an ad-hoc tree. */
typedef struct wf_ref_instance_view {
    wf_instance_row instance;
    wf_task_row *tasks; /* of this instance only, oldest first */
    size_t n_tasks;
    wf_instance_row *children; /* direct children, oldest first */
    size_t n_children;
    wf_ref_join *joins; /* pending joins of this instance and its children */
    size_t n_joins;
} wf_ref_instance_view;

/* ---- mutations (one unit of work each; idem may be NULL) ------------------ */

/* StartInstance's checks of spec (actor, key, version, aggregate) and its
 * variables, normalised into *vars; violations go to ctx->violation. */
wf_code wf_referral_check_start(const wf_ref_ctx *ctx, const wf_start_spec *spec, const char **vars,
                                wf_error *err);

/* The definition StartInstance starts, inside tx: key at spec->version,
 * or a new AD_HOC version 1 when the key has none, version 0 is asked and
 * auto-creation is on. A NET definition is the runtime's to start
 * (wf_runtime_start_in). */
wf_code wf_referral_start_definition(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec,
                                     wf_definition_row *def, wf_error *err);

/* Starts an AD_HOC root of def inside tx (spec checked, vars normalised):
 * DEFINITION_NOT_ACTIVE outside def's validity window, else the root row
 * and INSTANCE_STARTED. */
wf_code wf_referral_start_root(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec,
                               const char *vars, const wf_definition_row *def, wf_instance_row *out,
                               wf_error *err);

/* AssignTo. */
wf_code wf_referral_assign(const wf_ref_ctx *ctx, const wf_assign_spec *spec, wf_uow_idem *idem,
                           wf_ref_assignment *out, wf_error *err);

/* ClaimTask / ReleaseTask: out is the task afterwards. */
wf_code wf_referral_claim(const wf_ref_ctx *ctx, const char *task_id, wf_uow_idem *idem,
                          wf_task_row *out, wf_error *err);
wf_code wf_referral_release(const wf_ref_ctx *ctx, const char *task_id, wf_uow_idem *idem,
                            wf_task_row *out, wf_error *err);

/* ReassignTask: exactly one of user (a personal task) and group (a group
 * task); reason NULL or at most 1024 bytes. */
typedef struct wf_task_reassign {
    const char *user;
    const char *group;
    const char *reason;
} wf_task_reassign;

/* ReassignTask: the task OPEN for its new assignee, any claim and any
 * delegation ended (TASK_REASSIGNED). The user must be in the directory,
 * the group must have members (EMPTY_GROUP). */
wf_code wf_referral_reassign(const wf_ref_ctx *ctx, const char *task_id, const wf_task_reassign *r,
                             wf_uow_idem *idem, wf_task_row *out, wf_error *err);

/* DelegateTask: the holder becomes the owner (a first owner is kept), the
 * task is CLAIMED by user, delegation PENDING (TASK_DELEGATED). */
wf_code wf_referral_delegate(const wf_ref_ctx *ctx, const char *task_id, const char *user,
                             wf_uow_idem *idem, wf_task_row *out, wf_error *err);

/* UpdateTask: each set_* field changes (a time of 0 clears it);
 * TASK_UPDATED with the values afterwards. */
typedef struct wf_task_update {
    bool set_priority;
    int32_t priority; /* 0-100 */
    bool set_due;
    int64_t due_at; /* 0 = clear */
    bool set_follow_up;
    int64_t follow_up_at; /* 0 = clear; never after due_at */
} wf_task_update;

wf_code wf_referral_update_task(const wf_ref_ctx *ctx, const char *task_id, const wf_task_update *u,
                                wf_uow_idem *idem, wf_task_row *out, wf_error *err);

/* A task located before its unit of work (the lock is taken by instance):
 * its instance and root, and its transition (NULL = a referral task; else
 * a task of a net's USER transition, completed by the runtime). */
typedef struct wf_ref_task_at {
    const char *task_id;
    const char *instance_id;
    const char *root_id;
    const char *transition_id;
    wf_delegation delegation; /* as read: PENDING routes CompleteTask to the resolve */
} wf_ref_task_at;

/* Checks the actor and task_id and reads the task's location. */
wf_code wf_referral_locate_task(const wf_ref_ctx *ctx, const char *task_id, wf_ref_task_at *out,
                                wf_error *err);

/* CompleteTask of a located referral task: merges patch (normalised JSON)
 * into the task's instance and fires the referral's join when it is met. */
wf_code wf_referral_complete_at(const wf_ref_ctx *ctx, const wf_ref_task_at *at, const char *patch,
                                wf_uow_idem *idem, wf_ref_completion *out, wf_error *err);

/* CompleteTask of a located task whose delegation is PENDING, by its
 * delegate: merges patch into the task's instance and gives the task back
 * to its owner (CLAIMED by the owner, delegation RESOLVED; TASK_RESOLVED).
 * Nothing fires; out->next stays NULL. For the tasks of referrals and of
 * USER transitions alike. */
wf_code wf_referral_resolve_at(const wf_ref_ctx *ctx, const wf_ref_task_at *at, const char *patch,
                               wf_uow_idem *idem, wf_ref_completion *out, wf_error *err);

/* CompleteAndEnd of a located referral task: completes the task, cancels
 * every other pending task of the tree, completes the root and every
 * running descendant. */
wf_code wf_referral_end_at(const wf_ref_ctx *ctx, const wf_ref_task_at *at, const char *patch,
                           wf_uow_idem *idem, wf_ref_end *out, wf_error *err);

/* CancelInstance: the instance and all its descendants, a plain cancel;
 * reason may be NULL. A saga is the runtime's (wf_runtime_cancel_compensate;
 * wf_instances_cancel chooses). */
wf_code wf_referral_cancel(const wf_ref_ctx *ctx, const char *instance_id, const char *reason,
                           wf_uow_idem *idem, wf_instance_row *out, wf_error *err);

/* ---- reads ------------------------------------------------------------------ */

wf_code wf_referral_get_task(const wf_ref_ctx *ctx, const char *task_id, wf_task_row *out,
                             wf_error *err);

wf_code wf_referral_get_instance(const wf_ref_ctx *ctx, const char *instance_id,
                                 wf_ref_instance_view *out, wf_error *err);

wf_code wf_referral_completion(const wf_ref_ctx *ctx, const char *instance_id, wf_ref_counts *out,
                               wf_error *err);

/* TaskFlow's coarse state of a root (ListInstances). */
typedef enum wf_process_state {
    WF_PROCESS_ANY = 0,
    WF_PROCESS_NOT_STARTED = 1,
    WF_PROCESS_OPEN = 2,
    WF_PROCESS_CLOSED = 3,
} wf_process_state;

/* A time range of ListInstances (microseconds): after <= t < before, each
 * bound only when its has_ flag is set. */
typedef struct wf_ref_time_range {
    bool has_after, has_before;
    int64_t after, before;
} wf_ref_time_range;

/* A variable equality of ListInstances, as the request gives it. */
typedef struct wf_ref_var_filter {
    const char *path;       /* dotted keys */
    const char *value_json; /* a JSON scalar */
} wf_ref_var_filter;

/* Variable filters one ListInstances takes at most. */
#define WF_REF_MAX_VAR_FILTERS 8

typedef struct wf_ref_instance_query {
    const char *started_by; /* "" or NULL = the actor; "*" = anyone */
    wf_process_state state;
    wf_instance_status status;  /* 0 = any */
    const char *definition_key; /* NULL/"" = any */
    const char *aggregate_type; /* NULL/"" = any; required when aggregate_id is set */
    const char *aggregate_id;   /* NULL/"" = any id of the type */
    int32_t page_size;          /* 0 = 50, > 500 = 500, < 0 invalid */
    const char *cursor;         /* store cursor; NULL/"" = first page */
    wf_ref_time_range created, ended;
    const wf_ref_var_filter *vars;
    size_t n_vars;
    bool newest_first; /* descending creation order */
} wf_ref_instance_query;

/* ListInstances: roots only. *next_cursor is NULL on the last page. */
wf_code wf_referral_list_instances(const wf_ref_ctx *ctx, const wf_ref_instance_query *q,
                                   wf_instance_row **rows, size_t *n, char **next_cursor,
                                   wf_error *err);

typedef struct wf_ref_task_query {
    const char *user;             /* NULL/"" = the actor unless group is set */
    const char *group;            /* NULL/"" = none */
    const wf_task_status *states; /* empty = OPEN and CLAIMED (a group: OPEN) */
    size_t n_states;
    int32_t page_size;
    const char *cursor;
    wf_task_sort sort; /* CREATED (0) unless set */
    bool descending;
    int64_t due_after;  /* 0 = none */
    int64_t due_before; /* 0 = none */
} wf_ref_task_query;

/* ListTasks: a user's inbox (personal tasks, OPEN tasks of their groups,
 * tasks they claimed) or a group's tasks. */
wf_code wf_referral_list_tasks(const wf_ref_ctx *ctx, const wf_ref_task_query *q,
                               wf_task_row **rows, size_t *n, char **next_cursor, wf_error *err);

/* ---- pure rules (exposed for unit tests) ------------------------------------ */

typedef enum wf_task_op {
    WF_TASK_OP_CLAIM = 1,
    WF_TASK_OP_RELEASE = 2,
    WF_TASK_OP_COMPLETE = 3,
    WF_TASK_OP_REASSIGN = 4, /* the holder, owner, assigner or an OPEN group task's member */
    WF_TASK_OP_DELEGATE = 5, /* the holder of a personal or claimed task */
    WF_TASK_OP_RESOLVE = 6,  /* the delegate of a pending delegation */
    WF_TASK_OP_UPDATE = 7,   /* as REASSIGN */
} wf_task_op;

/* Decides whether actor may do op on task. is_member says whether actor
 * belongs to the task's group (GROUP tasks). WF_OK when allowed; for a
 * CLAIM of a task actor already holds WF_OK as well (no change). */
wf_code wf_referral_check_task_op(const wf_task_row *task, wf_task_op op, const char *actor,
                                  bool is_member, wf_error *err);

/* Whether actor counts as a member of group: the static directory's
 * membership, or the trusted x-actor-groups list (actor_groups); an open
 * directory with no group information accepts any actor (TaskFlow's open
 * directory). */
bool wf_referral_actor_in_group(const wf_directory *dir, const char *actor,
                                const char *actor_groups, const char *group);

/* Counts the tasks of instance_id among tasks[]. */
void wf_referral_count(const wf_task_row *tasks, size_t n, const char *instance_id,
                       wf_ref_counts *out);

/* Tasks DONE needed for a join: all tasks for ALL/NONE, 1 for ANY, the
 * quorum for QUORUM. */
int32_t wf_referral_join_required(wf_join_mode mode, int32_t quorum, const wf_ref_counts *c);

/* True when the join of a referral with these counts is met: ALL (and
 * NONE): at least one task and none OPEN or CLAIMED; ANY: one DONE;
 * QUORUM k: k DONE. */
bool wf_referral_join_met(wf_join_mode mode, int32_t quorum, const wf_ref_counts *c);

/* Checks the shape of spec (and every nested spec): title, assignee, ids
 * (or that ids_expression compiles), join, JSON. Reports each violation to
 * ctx->violation; returns the first error (WF_E_INVALID_ARGUMENT or
 * WF_E_INVALID_JSON). The rules that need the number of tasks wait, with
 * an ids_expression, for wf_referral_spec_resolve. */
wf_code wf_referral_spec_validate(const wf_ref_ctx *ctx, const wf_assign_spec *spec, bool nested,
                                  wf_error *err);

/* The rule of an assignee id, listed or given by an ids_expression, of a
 * referral or of a net's USER transition: 1 to 128 printable ASCII
 * bytes. */
bool wf_referral_assignee_id_ok(const char *id);

/* Evaluates the ids_expression of spec over vars_json (the variables the
 * referral is assigned over) and checks the ids it gave by the rules of a
 * literal list: at least one, exactly one for USER and GROUP, each 1-128
 * printable bytes, and a QUORUM no larger than the number of tasks.
 * Duplicates are dropped, order is kept. On WF_OK *out is spec with the
 * ids filled in and no expression (strings in ctx->arena). Violations go to
 * ctx->violation under the paths of the AssignTo request. Errors:
 * WF_E_INVALID_ARGUMENT (wrong result, runtime error), WF_E_TOO_LARGE,
 * WF_E_EXPRESSION_LIMIT. */
wf_code wf_referral_spec_resolve(const wf_ref_ctx *ctx, const wf_assign_spec *spec,
                                 const char *vars_json, wf_assign_spec *out, wf_error *err);

/* The engine's persisted encoding of an assignment spec chain (a JSON
 * document), in arena. by is recorded as the assigner of specs that have
 * no assigned_by. */
wf_code wf_referral_spec_encode(wf_arena *arena, const wf_assign_spec *spec, const char *by,
                                unsigned char **bytes, size_t *len, wf_error *err);

/* Decodes wf_referral_spec_encode output into arena. */
wf_code wf_referral_spec_decode(wf_arena *arena, const unsigned char *bytes, size_t len,
                                wf_assign_spec **out, wf_error *err);

/* ---- rules on a working set (work.h), shared with the net runtime --------- */

/* Cancels task t (TASK_CANCELLED). */
wf_code wf_referral_cancel_task(wf_work *w, size_t t, wf_error *err);

/* Marks task t DONE by the actor (TASK_COMPLETED, with the transition of
 * a net task) and merges the output patch into instance i. Shared by
 * CompleteTask and CompleteAndEnd, of referrals and of nets. */
wf_code wf_referral_done_task(wf_work *w, size_t t, size_t i, const char *patch, wf_error *err);

/* The end of CompleteAndEnd, once task keep is done: every other OPEN or
 * CLAIMED task of the tree is CANCELLED (listed in out->cancelled); then
 * wf_referral_complete_tree: every running instance but root COMPLETED, then
 * root (its INSTANCE_COMPLETED is the last event of the process). */
wf_code wf_referral_cancel_pending_except(wf_work *w, size_t keep, wf_ref_end *out, wf_error *err);
wf_code wf_referral_complete_tree(wf_work *w, size_t root, wf_error *err);

/* Ends instance i with status (COMPLETED or CANCELLED) at now, with its
 * event: INSTANCE_CANCELLED (reason, NULL = "") or INSTANCE_COMPLETED. */
wf_code wf_referral_finish_instance(wf_work *w, size_t i, wf_instance_status status,
                                    const char *reason, wf_error *err);

#endif /* WF_REFERRAL_H */
