/*
 * net: Petri-net process definitions (docs/architecture.md).
 *
 * Four parts, all pure (no store, no protobuf, no grpc):
 *   - the definition model, mapping 1:1 onto workflow.v1.Definition, with
 *     a canonical JSON encoding (the stored definition content) and its
 *     content hash;                                           (net.c)
 *   - validation, reporting every finding at once;            (net_validate.c)
 *   - the firing rules over an in-memory case state: enablings, firing,
 *     silent AUTO transitions, withdrawals and termination;   (net_fire.c)
 *   - step lists (DEFINITION_KIND_STEPS): their validation and their
 *     compilation into a net that the firing rules run.       (net_steps.c)
 *
 * Memory. A wf_net and everything the functions below return live in a
 * caller-supplied arena (the RPC's); nothing is freed on its own. Strings
 * in the model may be NULL, which reads as "" (unset).
 *
 * Units. Durations are milliseconds, times microseconds since the Unix
 * epoch (as in the store); 0 means unset and reads as the documented
 * default.
 */
#ifndef WF_NET_H
#define WF_NET_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h" /* wf_trigger, wf_join_mode: persisted enums, shared */
#include "wf_arena.h"
#include "wf_error.h"

/* ---- the model ----------------------------------------------------------- */

/* Numbering follows the proto enums; 0 is "unset". */
typedef enum wf_place_kind {
    WF_PLACE_UNSET = 0, /* read as NORMAL */
    WF_PLACE_START = 1,
    WF_PLACE_NORMAL = 2,
    WF_PLACE_END = 3,
} wf_place_kind;

typedef enum wf_termination {
    WF_TERMINATION_UNSET = 0, /* read as EXPLICIT */
    WF_TERMINATION_EXPLICIT = 1,
    WF_TERMINATION_IMPLICIT = 2,
} wf_termination;

/* The store's wf_assignee_kind has no USERS (a USERS assignee becomes one
 * USER task per id), so the definition has its own. */
typedef enum wf_net_assignee_kind {
    WF_NET_ASSIGNEE_UNSET = 0,
    WF_NET_ASSIGNEE_USER = 1,
    WF_NET_ASSIGNEE_GROUP = 2,
    WF_NET_ASSIGNEE_USERS = 3,
} wf_net_assignee_kind;

typedef enum wf_correlation {
    WF_CORRELATION_UNSET = 0, /* read as INSTANCE */
    WF_CORRELATION_INSTANCE = 1,
    WF_CORRELATION_AGGREGATE = 2,
} wf_correlation;

/* Defaults documented in workflow.proto. */
#define WF_NET_DEFAULT_MAX_ATTEMPTS 3
#define WF_NET_DEFAULT_INITIAL_BACKOFF_MS 1000
#define WF_NET_DEFAULT_MULTIPLIER 2.0
#define WF_NET_DEFAULT_MAX_BACKOFF_MS (5 * 60 * 1000)
#define WF_NET_DEFAULT_LEASE_MS (5 * 60 * 1000)

/* Limits that keep one step bounded (checked by validation). */
#define WF_NET_MAX_NODES 1000 /* places, and transitions, each */
#define WF_NET_MAX_ARCS 4000
#define WF_NET_MAX_WEIGHT 100 /* tokens per arc and firing */
#define WF_NET_MAX_ID_LEN 128
/* Silent AUTO firings in one step before the step fails (an incident). */
#define WF_NET_MAX_SILENT_FIRINGS 1000

typedef struct wf_place {
    const char *id;
    const char *name;
    wf_place_kind kind;
} wf_place;

typedef struct wf_assignee {
    wf_net_assignee_kind kind;
    const char **ids;
    size_t n_ids;
    const char *ids_expression; /* jq; used instead of ids */
} wf_assignee;

typedef struct wf_completion {
    wf_join_mode mode; /* WF_JOIN_NONE (unset) reads as ALL */
    int32_t quorum;    /* QUORUM only */
} wf_completion;

typedef struct wf_retry_policy {
    int32_t max_attempts;       /* 0 = 3 */
    int64_t initial_backoff_ms; /* 0 = 1 s */
    double multiplier;          /* 0 = 2.0; else >= 1 */
    int64_t max_backoff_ms;     /* 0 = 5 min */
} wf_retry_policy;

/* A resource (DeclareResource) the work of a transition or a step needs
 * while it runs: name, and key_expression (jq over the variables yielding
 * the key of a per-key resource; "" = the resource as a whole). */
typedef struct wf_resource_use {
    const char *name;
    const char *key_expression;
} wf_resource_use;

#define WF_NET_MAX_RESOURCE_USES 8
#define WF_NET_MAX_RESOURCE_NAME 128

typedef struct wf_transition {
    const char *id;
    const char *name;
    wf_trigger trigger;   /* 0 = unset (invalid) */
    const char **cancels; /* place ids emptied on firing */
    size_t n_cancels;
    /* USER */
    wf_assignee assignee;
    wf_completion completion;
    /* USER, jq over the variables at enablement ("" = none): the tasks'
     * priority (an integer 0-100), due and follow-up times (RFC 3339) */
    const char *priority_expression;
    const char *task_due_expression;
    const char *task_follow_up_expression;
    /* AUTO: job_type "" is a silent routing transition */
    const char *job_type;
    wf_retry_policy retry;
    int64_t lease_ms; /* 0 = 5 min */
    const char *compensation_job_type;
    /* AUTO, jq over the variables when the job is created ("" = 50): the
     * job's priority, an integer 0-100 */
    const char *job_priority_expression;
    /* AUTO, jq over the variables when the job is created ("" = no key):
     * the job's fairness key, a string or an integer */
    const char *job_fairness_key_expression;
    /* AUTO with a job_type: multi-instance. for_each is jq over the
     * variables at enablement yielding the items ("" = one job); item the
     * variable naming an item in its job ("" = "item"), output the array
     * variable set at the join ("" = item + "s"); completion the join. */
    const char *for_each;
    const char *for_each_item;
    const char *for_each_output;
    bool for_each_sequential;
    wf_completion for_each_completion;
    /* TIME: exactly one of the two */
    int64_t delay_ms;
    const char *due_expression;
    /* MSG */
    const char *signal_name;
    wf_correlation correlation;
    /* CALL: an instance of definition call_key (version call_version, 0 =
     * the newest active at the call) started as a child of the instance in
     * its tree; call_input (jq over the caller's variables, "" = {}) gives
     * its variables, call_output (jq over the child's final variables, "" =
     * {}) what is merged into the caller's when it completes. */
    const char *call_key;
    int32_t call_version;
    const char *call_input;
    const char *call_output;
    bool call_strict; /* deploy checks that call_key has a definition */
    /* USER, AUTO with a job_type, CALL: the resources its work needs */
    const wf_resource_use *resources;
    size_t n_resources;
    /* Set only by the step compiler (net_steps.c), never by a NET deploy:
     * step_id is the step the transition runs ("" = none); first_match
     * routes to the first output arc, in arc order, whose guard is absent
     * or true (else the default arc) instead of to every matching arc;
     * fails marks the timeout of an await step without on_timeout: its
     * firing is refused (WF_E_NO_ARC_MATCHED) and the runtime fails the
     * step instead. */
    const char *step_id;
    bool first_match;
    bool fails;
} wf_transition;

typedef struct wf_arc {
    const char *source;
    const char *target;
    int32_t weight;    /* 0 = 1 */
    const char *guard; /* output arcs only; jq */
    bool is_default;   /* output arcs only: the else-branch */
} wf_arc;

/* ---- step lists (DEFINITION_KIND_STEPS, net_steps.c) ------------------- */

/* One `next` rule: when guard (jq; "" = always) is true after the step's
 * output is merged, go to step `step`. Rules are tried in order. */
typedef struct wf_step_rule {
    const char *guard;
    const char *step;
} wf_step_rule;

/* One step: exactly one of job, user, await, sleep, call (has_* tell which
 * are given; validation refuses zero or several). Durations in ms. */
typedef struct wf_step {
    const char *id;
    const char *name;
    bool has_job, has_user, has_await, has_sleep, has_call;
    /* job */
    const char *job_type;
    int64_t lease_ms;
    const char *job_priority_expression;     /* as on an AUTO transition */
    const char *job_fairness_key_expression; /* as on an AUTO transition */
    /* user */
    wf_assignee assignee;
    wf_completion completion;
    const char *priority_expression; /* of the tasks, as on a USER transition */
    const char *task_due_expression;
    const char *task_follow_up_expression;
    /* await */
    const char *signal_name;
    wf_correlation correlation;
    int64_t timeout_ms;     /* 0 = waits for ever; negative = invalid */
    const char *on_timeout; /* step id; "" = the step fails */
    /* sleep: exactly one of the two */
    int64_t duration_ms; /* negative = invalid */
    const char *due_expression;
    /* call: as the call_* fields of a CALL transition */
    const char *call_key;
    int32_t call_version;
    const char *call_input;
    const char *call_output;
    bool call_strict;
    /* job and user steps: as the for_each fields of a transition */
    const char *for_each;
    const char *for_each_item;
    const char *for_each_output;
    bool for_each_sequential;
    wf_completion for_each_completion;
    /* job steps only */
    wf_retry_policy retry;
    const char *compensation_job_type;
    wf_step_rule *next;
    size_t n_next;
    /* job and user steps only: as wf_transition's */
    const wf_resource_use *resources;
    size_t n_resources;
} wf_step;

typedef struct wf_net {
    const char *key;
    int32_t version; /* row metadata: not part of the canonical content */
    const char *name;
    const char *description;
    wf_termination termination;
    int64_t valid_from;  /* µs, 0 = no bound */
    int64_t valid_until; /* µs, 0 = no bound */
    wf_place *places;
    size_t n_places;
    wf_transition *transitions;
    size_t n_transitions;
    wf_arc *arcs;
    size_t n_arcs;
    /* A STEPS definition: its ordered steps; places, transitions and arcs
     * are then the net compiled from them (wf_steps_compile). */
    wf_step *steps;
    size_t n_steps;
} wf_net;

/* True for an AUTO transition without a job type (fires at once). */
bool wf_net_is_silent(const wf_transition *t);

/* Effective values, with the proto defaults applied. */
int32_t wf_net_arc_weight(const wf_arc *a);
wf_retry_policy wf_net_retry_effective(const wf_transition *t);
int64_t wf_net_lease_effective(const wf_transition *t);

/* The trigger's name as events and messages spell it: "USER", "AUTO",
 * "TIME", "MSG" (or "UNSPECIFIED"). */
const char *wf_net_trigger_name(wf_trigger t);

/* Index of the place / transition with that id, or -1. */
int wf_net_place_index(const wf_net *net, const char *id);
int wf_net_transition_index(const wf_net *net, const char *id);

/* ---- canonical JSON and content hash -------------------------------------- */

/* Encodes net as compact JSON with sorted keys, defaults made explicit and
 * unset values left out, so equal content gives equal bytes. version is
 * not encoded. *out is NUL-terminated, in a. */
wf_code wf_net_to_json(const wf_net *net, wf_arena *a, char **out, wf_error *err);

/* Decodes what wf_net_to_json produced (or any JSON of that shape) into a
 * net allocated in a. Malformed input gives WF_E_INVALID_JSON. */
wf_code wf_net_from_json(const char *json, wf_arena *a, wf_net **out, wf_error *err);

/* Lower-case hex SHA-256 of the canonical JSON: 64 chars + NUL, in a. */
wf_code wf_net_content_hash(const wf_net *net, wf_arena *a, char **out, wf_error *err);

/* SHA-256 of any bytes as lower-case hex into out[65]. */
void wf_sha256_hex(const void *data, size_t len, char out[65]);

/* ---- validation ------------------------------------------------------------ */

typedef enum wf_severity {
    WF_SEVERITY_ERROR = 1, /* blocks the deploy */
    WF_SEVERITY_WARNING = 2,
} wf_severity;

/* One finding; code is a stable UPPER_SNAKE string (see net_validate.c),
 * path names the element ("transitions[2].assignee", "" = whole net). */
typedef struct wf_validation_error {
    const char *code;
    const char *path;
    const char *message;
    wf_severity severity;
} wf_validation_error;

/* Checks net and returns every finding at once in *errors (in a, possibly
 * zero of them). Returns WF_OK even when findings exist. Expressions are
 * compiled together at the end (wf_expr_check_all: the ones the cache has
 * not seen, in the compile bulkhead); that compile, or running out of
 * memory, is what can fail (WF_E_BULKHEAD_FULL, WF_E_EXPRESSION_LIMIT,
 * WF_E_NOMEM). */
wf_code wf_net_validate(const wf_net *net, wf_arena *a, wf_validation_error **errors,
                        size_t *n_errors, wf_error *err);

/* Findings being collected (net_validate.c, net_steps.c and the deploy
 * checks of the runtime): an arena-backed array that grows; oom is sticky. */
typedef struct wf_findings {
    wf_arena *a;
    wf_validation_error *v;
    size_t n, cap;
    bool oom;
} wf_findings;

/* Appends one finding (message from fmt and ap, cut to 300 bytes). */
void wf_net__vfinding(wf_findings *f, wf_severity sev, const char *code, const char *path,
                      const char *fmt, va_list ap);
/* The same with the arguments of fmt; code is a static string. */
void wf_findings_add(wf_findings *f, wf_severity sev, const char *code, const char *path,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* True when net (its transitions, arcs and steps) holds an expression the
 * expression cache has not seen (wf_expr_seen): its validation compiles. */
bool wf_net_has_unseen_expressions(const wf_net *net);

/* True when some finding has ERROR severity. */
bool wf_net_has_errors(const wf_validation_error *errors, size_t n_errors);

/* ---- case state and firing --------------------------------------------- */

typedef struct wf_token {
    const char *id;
    const char *place_id;
    int64_t seq; /* creation order: tokens are taken oldest (lowest) first */
} wf_token;

/* A live (enabled) work item, bound to specific tokens. */
typedef struct wf_work_item {
    const char *id;
    const char *transition_id;
    wf_trigger trigger; /* filled by the engine for new items; ignored on input */
    const char **token_ids;
    size_t n_token_ids;
} wf_work_item;

/* The marking and live work items of one case. Inputs are borrowed. */
typedef struct wf_net_state {
    const wf_token *tokens;
    size_t n_tokens;
    const wf_work_item *items;
    size_t n_items;
    int64_t next_seq; /* seq for the next token; raised above every seq seen */
} wf_net_state;

/* One firing in a step, in order. */
typedef struct wf_net_firing {
    const char *work_item_id;
    const char *transition_id;
    bool enabled_in_step;  /* a silent item created and fired in this step */
    const char **produced; /* place ids of the tokens produced, in order */
    size_t n_produced;
} wf_net_firing;

/* What a step changed, as a diff against the input state. Items created
 * and withdrawn (or fired) within the step never reach created/withdrawn;
 * tokens produced and consumed within it never reach the token lists. */
typedef struct wf_net_diff {
    wf_token *added_tokens; /* in the new state, not in the old */
    size_t n_added_tokens;
    const char **removed_tokens; /* in the old state, not in the new */
    size_t n_removed_tokens;
    wf_work_item *created; /* live at the end of the step, new */
    size_t n_created;
    const char **withdrawn; /* live before, withdrawn by the step */
    size_t n_withdrawn;
    wf_net_firing *fired;
    size_t n_fired;
    bool ended;      /* the case is complete (termination rule met) */
    bool deadlocked; /* not ended, yet nothing is enabled: needs an incident */
} wf_net_diff;

/* Starts a case: one token in the START place, then enablings, silent
 * transitions and termination as after a firing. state->next_seq seeds the
 * token sequence (state may be NULL: empty, seq 1). */
wf_code wf_net_start(const wf_net *net, const wf_net_state *state, const char *vars_json,
                     wf_arena *a, wf_net_state *out, wf_net_diff *diff, wf_error *err);

/* The work items the current marking enables beyond the live ones (no
 * firing). Each transition's tokens are taken oldest first, skipping tokens
 * bound by its own live items; different transitions may share tokens
 * (deferred choice). */
wf_code wf_net_enablings(const wf_net *net, const wf_net_state *state, wf_arena *a,
                         wf_work_item **items, size_t *n_items, wf_error *err);

/* Fires the live work item work_item_id with the variables after the
 * firing's output was merged (vars_json). In order: consume its tokens,
 * empty its cancel places, produce weight tokens on every output arc whose
 * guard is absent or true (the default arc only when no guarded arc
 * matched), withdraw every live item whose tokens are gone, enable new
 * items, fire silent AUTO items at once, check termination.
 * On error *out and *diff are not written and nothing changed:
 *   WF_E_NO_ARC_MATCHED     no output arc matched (of this transition, or
 *                           of a silent one it led to);
 *   WF_E_INVALID_ARGUMENT   no such live work item, or a guard failed;
 *   WF_E_DEFINITION_INVALID more than WF_NET_MAX_SILENT_FIRINGS silent
 *                           firings (a silent cycle): raise an incident. */
wf_code wf_net_fire(const wf_net *net, const wf_net_state *state, const char *work_item_id,
                    const char *vars_json, wf_arena *a, wf_net_state *out, wf_net_diff *diff,
                    wf_error *err);

/* wf_net_fire, except that with goto_place set (a place id, NULL = none)
 * the firing produces one token in that place instead of on its output
 * arcs (a worker's "goto" of a step list). An unknown goto_place is
 * WF_E_INVALID_ARGUMENT. */
wf_code wf_net_fire_goto(const wf_net *net, const wf_net_state *state, const char *work_item_id,
                         const char *goto_place, const char *vars_json, wf_arena *a,
                         wf_net_state *out, wf_net_diff *diff, wf_error *err);

/* ---- modification (ModifyInstance) --------------------------------------- */

/* Bounds of one modification. */
#define WF_NET_MAX_MODIFY_OPS 100                 /* operations */
#define WF_NET_MAX_MODIFY_COUNT WF_NET_MAX_WEIGHT /* tokens per operation */

/* What one operation of a modification does. */
typedef enum wf_net_mod_kind {
    WF_NET_MOD_UNSET = 0,  /* invalid */
    WF_NET_MOD_ADD = 1,    /* count new tokens in place_id */
    WF_NET_MOD_REMOVE = 2, /* count tokens out of place_id, oldest first (or token_id) */
    WF_NET_MOD_MOVE = 3,   /* REMOVE from place_id, then ADD as many to to_place_id */
} wf_net_mod_kind;

/* One operation; the numbering follows the proto's TokenOperationKind. */
typedef struct wf_net_mod {
    wf_net_mod_kind kind;
    const char *place_id;    /* ADD: where tokens appear; REMOVE, MOVE: where they leave */
    const char *to_place_id; /* MOVE only */
    int32_t count;           /* 0 = 1 */
    const char *token_id;    /* REMOVE, MOVE: take this token (count 1); NULL/"" = oldest */
} wf_net_mod;

/* What operation i did: the tokens it took and the tokens it made (in
 * the arena of the step). */
typedef struct wf_net_mod_done {
    const char **taken;
    size_t n_taken;
    const char **made;
    size_t n_made;
} wf_net_mod_done;

/* Applies ops in order to the marking of state (a token added by an
 * earlier operation may be taken by a later one), then settles the case
 * as a firing does: every live item whose tokens are gone is withdrawn,
 * new enablings become items, silent AUTO items fire, termination is
 * checked (a token in END ends an EXPLICIT case). No transition fires for
 * the operations themselves. done (n_ops entries, may be NULL) tells what
 * each did. On error nothing is written and *bad is the failing
 * operation's index (SIZE_MAX for a failure of the settling):
 *   WF_E_UNKNOWN_PLACE    a place the net does not have;
 *   WF_E_TOKENS_NOT_HELD  the place holds fewer tokens than taken, or
 *                         token_id is not a token of that place;
 *   and the errors of a silent firing (wf_net_fire). */
wf_code wf_net_modify(const wf_net *net, const wf_net_state *state, const wf_net_mod *ops,
                      size_t n_ops, const char *vars_json, wf_arena *a, wf_net_state *out,
                      wf_net_diff *diff, wf_net_mod_done *done, size_t *bad, wf_error *err);

/* ---- migration (MigrateInstance) ---------------------------------------- */

/* Bound of one place mapping. */
#define WF_NET_MAX_PLACE_MAPPINGS WF_NET_MAX_NODES

/* One entry of a place mapping: the tokens of from_place (a place of the
 * version the case runs) go to to_place (a place of the target version).
 * A place without an entry maps to the target's place of the same id. */
typedef struct wf_net_place_map {
    const char *from_place;
    const char *to_place;
} wf_net_place_map;

/* Moves the case state of net `from` onto net `to` (another version of
 * the same definition). Every problem is reported at once in *problems
 * (in a; codes are stable UPPER_SNAKE strings, paths name the request
 * field: "place_mapping[i].from_place", "place_mapping", "target_version"):
 *   UNKNOWN_SOURCE_PLACE, UNKNOWN_TARGET_PLACE, DUPLICATE_MAPPING   a bad entry;
 *   UNMAPPED_PLACE       a place holding tokens with no place in `to`;
 *   TRANSITION_MISSING   a live work item whose transition `to` lacks;
 *   TRIGGER_CHANGED, JOB_TYPE_CHANGED, SIGNAL_CHANGED
 *                        ... whose transition changed its trigger, job type,
 *                        or signal name or correlation;
 *   FIRING_REFUSED       the target net could not settle (a silent
 *                        transition whose arcs match nothing, a loop);
 *   MIGRATION_DEADLOCKS  tokens would be left that enable nothing.
 * With no problem, *out and *diff hold the new state (tokens keep their ids
 * and order, in their mapped places) and what changed, settled as after a
 * firing: a live item whose transition is still enabled by its tokens is
 * kept, every other one withdrawn, new enablings created, silent AUTO
 * transitions fired, termination checked. With problems *out and *diff
 * are not written. Returns WF_OK either way; only running out of memory
 * fails. */
wf_code wf_net_migrate(const wf_net *from, const wf_net *to, const wf_net_state *state,
                       const wf_net_place_map *map, size_t n_map, const char *vars_json,
                       wf_arena *a, wf_net_state *out, wf_net_diff *diff,
                       wf_validation_error **problems, size_t *n_problems, wf_error *err);

/* USERS completion: true once `done` of `total` tasks satisfy mode
 * (ALL: all done; ANY: one; QUORUM: quorum of them). NONE reads as ALL. */
bool wf_completion_met(wf_join_mode mode, int32_t quorum, size_t done, size_t total);

/* Top-level merge of the JSON object patch into the JSON object base
 * (NULL or "" read as {}); keys of patch win. *out is compact JSON in a.
 * Non-objects or malformed JSON give WF_E_INVALID_JSON. */
wf_code wf_net_merge_variables(const char *base_json, const char *patch_json, wf_arena *a,
                               char **out, wf_error *err);

/* Comma-joined token ids (the store's work item column) and back. */
char *wf_net_join_ids(wf_arena *a, const char *const *ids, size_t n);
wf_code wf_net_split_ids(wf_arena *a, const char *joined, const char ***ids, size_t *n,
                         wf_error *err);

/* ---- step lists -------------------------------------------------------------------- */

/* The compiled net of a step list: place STEPS_START (":start"), a silent
 * AUTO transition ":begin" to the first step's place, per step a place
 * "<id>:ready" and a transition "<id>" (job: AUTO with the job type,
 * retry, lease and compensation; user: USER; await: MSG; sleep: TIME;
 * call: CALL; job and user with the step's for_each fields)
 * whose output arcs are the step's `next` rules in order (first match)
 * and a default arc to the following step's place (to ":end" after the
 * last step); an await with a timeout also gets a competing TIME
 * transition "<id>:timeout" on the same place, to on_timeout's place or,
 * without on_timeout, marked `fails`. */
#define WF_STEPS_START_PLACE ":start"
#define WF_STEPS_END_PLACE ":end"

/* The place id of step step_id ("<id>:ready") in a, or NULL (no memory). */
char *wf_steps_place_id(wf_arena *a, const char *step_id);

/* Index of the step with that id in net->steps, or -1. */
int wf_steps_index(const wf_net *net, const char *step_id);

/* Validates the step list of in (every finding at once, as
 * wf_net_validate; paths name steps: "steps[2].next[0].step") and, when
 * it has no error, compiles it: *out is a copy of in with places,
 * transitions and arcs filled (in a). With errors *out is NULL. Only
 * running out of memory fails. */
wf_code wf_steps_compile(const wf_net *in, wf_arena *a, wf_net **out, wf_validation_error **errors,
                         size_t *n_errors, wf_error *err);

#endif /* WF_NET_H */
