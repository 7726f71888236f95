/*
 * work.h: the call context of the engine and the working set of one unit
 * of work, shared by the referral rules and the net runtime.
 *
 * A working set starts as a copy of the locked aggregate. Rules change rows
 * in place (marking them dirty) or append new ones, and append events; at
 * the end wf_work_changes collects exactly the dirty rows and the
 * events into a wf_store_changes. Keeping every row in one place means a
 * row changed twice in one call (variables merged, then completed by the
 * join) is written once with the version it was loaded with, and a nested
 * AssignTo can see the referral created moments before it.
 *
 * Row pointers into the working set are invalidated by any append; keep
 * indexes, not pointers, across appends.
 */
#ifndef WF_WORK_H
#define WF_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "directory.h"
#include "store.h"

/* Receives one field violation (google.rpc.BadRequest) of a request: field
 * is the request path, reason a stable code (NULL = the reason of the
 * error the call fails with). */
typedef void (*wf_ref_violation_fn)(void *arg, const char *field, const char *reason,
                                    const char *description);

/* Who calls and with what. Borrowed for the duration of one engine call. */
typedef struct wf_ref_ctx {
    wf_store *store;
    const wf_directory *dir;       /* NULL = open directory */
    const char *tenant;            /* required */
    const char *actor;             /* x-actor-id; NULL when absent */
    const char *actor_groups;      /* trusted x-actor-groups (comma list); NULL otherwise */
    int64_t deadline_ms;           /* monotonic ms, 0 = none */
    wf_arena *arena;               /* receives every result */
    wf_ref_violation_fn violation; /* optional sink for field violations */
    void *violation_arg;
    /* WF_AUTO_CREATE_DEFINITIONS=false: StartInstance of a key without any
     * definition fails DEFINITION_NOT_FOUND instead of creating an AD_HOC
     * version 1. */
    bool no_auto_create;
    /* WF_MAX_VARIABLES_BYTES: the variables of one instance tree (the sum
     * over its instances) may not grow past this; 0 = unbounded. */
    size_t max_variables_bytes;
    /* What the rows of one answer may take (wf_config_answer_budget):
     * activated jobs, list pages; 0 = unbounded. */
    size_t answer_bytes;
} wf_ref_ctx;

typedef struct wf_work {
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
    size_t vars_loaded; /* bytes of variables of the tree as loaded */
} wf_work;

#define WF_WORK_NONE ((size_t)-1)

/* Starts a working set over agg (NULL = empty, for a new root). */
wf_code wf_work_init(wf_work *w, const wf_ref_ctx *ctx, const wf_aggregate *agg, wf_error *err);

/* Index of instance / task id, or WF_WORK_NONE. */
size_t wf_work_find_instance(const wf_work *w, const char *id);
size_t wf_work_find_task(const wf_work *w, const char *id);

/* Appends a new row (version 0, dirty); *index receives its index. */
wf_code wf_work_add_instance(wf_work *w, const wf_instance_row *row, size_t *index, wf_error *err);
wf_code wf_work_add_task(wf_work *w, const wf_task_row *row, size_t *index, wf_error *err);

/* Marks a row changed (and bumps an instance's updated_at). */
void wf_work_touch_instance(wf_work *w, size_t i);
void wf_work_touch_task(wf_work *w, size_t i);

/* Appends an event about instance i with data, a jansson object built
 * by the caller (json_pack); the reference is stolen. NULL data (also a
 * failed json_pack) is out of memory. */
struct json_t;
wf_code wf_work_event(wf_work *w, size_t inst, const char *type, struct json_t *data,
                      wf_error *err);

/* The bytes of variables of every instance of the working set. */
size_t wf_work_variables_bytes(const wf_work *w);

/* Refuses a mutation that grows the variables of the tree past
 * ctx->max_variables_bytes (WF_E_VARIABLES_TOO_LARGE, naming the root). A
 * tree already past the bound (the bound was lowered) may still change
 * as long as its variables do not grow. Called before every write. */
wf_code wf_work_check_variables(const wf_work *w, wf_error *err);

/* Collects the dirty rows, deletions and events. */
void wf_work_changes(const wf_work *w, wf_store_changes *out);

/* Queues the removal of a NET row of the aggregate (jobs, timers,
 * subscriptions of a cancelled instance). */
wf_code wf_work_del(wf_work *w, const char ***list, size_t *n, const char *id, wf_error *err);

/* True when instance i is a descendant of (or equal to) instance a. */
bool wf_work_in_subtree(const wf_work *w, size_t i, size_t a);

/* WF_E_INSTANCE_SUSPENDED when the root of instance i's tree (the
 * working set holds the whole tree) is SUSPENDED: task operations and
 * AssignTo wait for ResumeInstance. WF_OK otherwise. */
wf_code wf_work_check_not_suspended(const wf_work *w, size_t i, wf_error *err);

/* Copies text into the arena; NULL when out of memory or s is NULL. */
char *wf_work_strdup(wf_work *w, const char *s);

/* Reports one field violation of the request (field, msg) and fails with
 * INVALID_ARGUMENT. */
wf_code wf_work_invalid(const wf_ref_ctx *ctx, const char *field, const char *msg, wf_error *err);

/* The same for another code: the violation carries code's reason, and the
 * call fails with code. */
wf_code wf_work_violation(const wf_ref_ctx *ctx, wf_code code, const char *field, const char *msg,
                          wf_error *err);

/* The store context of a call (tenant, deadline, arena). */
wf_store_ctx wf_work_store_ctx(const wf_ref_ctx *ctx);

#endif /* WF_WORK_H */
