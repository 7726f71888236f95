/*
 * net_kit: what the end-to-end suites of nets, signals and sagas share — an
 * in-process server per test (checked fixture setup/teardown), clients by
 * actor, calls whose responses live until teardown, names unique to the
 * run (Postgres keeps rows between runs), and a builder for Definition
 * messages. Every end-to-end suite but the fault suite builds on it.
 */
#ifndef WF_NET_KIT_H
#define WF_NET_KIT_H

#include <grpc/status.h>
#include <jansson.h>

#include "google/protobuf/duration.pb-c.h"
#include "scheduler.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

extern wf_test_server ts; /* the test's server */
extern wf_arena *ta;      /* test-owned messages and strings, freed at teardown */

/* Checked fixture: starts ts on the store WF_TEST_STORE names / stops it
 * and frees every kept response, client and cached definition. */
void setup(void);
void teardown(void);
/* setup with a NULL-terminated "NAME=value" server environment (see
 * wf_test_server_start). */
void setup_with(const char *const *env);
/* setup_with(env), and a tenant unique to the test: prefix, "-" and 12
 * hex digits (in ta). */
char *setup_tenant(const char *const *env, const char *prefix);
/* A client of the test's tenant (setup_tenant) acting as actor. */
wf_client *me(const char *actor);

/* SendSignal name with payload to the aggregate {order, order_id}, not
 * buffered; request_id may be NULL. */
Workflow__V1__SendSignalResponse *signal_order(wf_client *c, const char *name, const char *order_id,
                                               const char *payload, const char *request_id,
                                               wf_client_status *st);

/* One RunSchedulerPass as "ops" (the test fails unless it answers OK). */
Workflow__V1__RunSchedulerPassResponse *scheduler_pass(void);

/* "name" -> "name-1a2b3c4d", unique to the test run. */
char *u(const char *name);

/* A client acting as actor, freed at teardown. */
wf_client *as(const char *actor);

/* Calls WorkflowService/method; the response (kept until teardown) or NULL
 * with st filled. */
void *call(wf_client *c, const char *method, const void *req, const ProtobufCMessageDescriptor *d,
           wf_client_status *st);

#define ck_fails(st, code_, reason_)                                                               \
    do {                                                                                           \
        ck_assert_msg((st).code == (code_), "code %s, want %s: %s",                                \
                      wf_client_code_name((st).code), wf_client_code_name(code_), (st).message);   \
        ck_assert_str_eq((st).reason, (reason_));                                                  \
    } while (0)

#define ck_ok(st)                                                                                  \
    ck_assert_msg((st).code == 0, "%s %s: %s", wf_client_code_name((st).code), (st).reason,        \
                  (st).message)

/* True when some violation of st starts with prefix and has reason (NULL:
 * any reason). */
bool has_violation(const wf_client_status *st, const char *prefix, const char *reason);

/* ---- building definitions ---------------------------------------------------------------- */

#define START WORKFLOW__V1__PLACE_KIND__PLACE_KIND_START
#define NORMAL WORKFLOW__V1__PLACE_KIND__PLACE_KIND_NORMAL
#define END WORKFLOW__V1__PLACE_KIND__PLACE_KIND_END
#define T_USER WORKFLOW__V1__TRIGGER__TRIGGER_USER
#define T_AUTO WORKFLOW__V1__TRIGGER__TRIGGER_AUTO
#define T_TIME WORKFLOW__V1__TRIGGER__TRIGGER_TIME
#define T_MSG WORKFLOW__V1__TRIGGER__TRIGGER_MSG
#define A_USER WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER
#define A_USERS WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USERS
#define TS_OPEN WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN
#define TS_DONE WORKFLOW__V1__TASK_STATUS__TASK_STATUS_DONE
#define TS_CANCELLED WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CANCELLED
#define I_RUNNING WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING
#define I_COMPLETED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPLETED
#define I_FAILED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED

/* A Definition under construction (fixed capacities suit the tests). */
typedef struct nb {
    Workflow__V1__Definition d;
    Workflow__V1__Place *p[16];
    Workflow__V1__Transition *t[16];
    Workflow__V1__Arc *a[48];
} nb;

nb *net_new(const char *key);
void place(nb *n, const char *id, Workflow__V1__PlaceKind kind);
Workflow__V1__Transition *trans(nb *n, const char *id, Workflow__V1__Trigger trigger);
Workflow__V1__Arc *arc(nb *n, const char *source, const char *target);
Google__Protobuf__Duration *dur(int64_t ms);
/* start -> transition id (trigger) -> end. */
nb *one_step(const char *key, const char *id, Workflow__V1__Trigger trigger);
/* s -> work (AUTO job of type, see with_job) -> e. */
nb *job_net(const char *key, const char *type, int max_attempts, int64_t initial_ms);
/* s -> work (AUTO job of type, max_attempts attempts) -> big (guard .amount
 * > 100) | small (guard 0 <= .amount <= 100) -> e; no default arc: a
 * negative amount matches none. */
nb *guarded_job_net(const char *key, const char *type, int max_attempts);
/* Makes t an AUTO job of type with max_attempts and, when initial_ms > 0,
 * that initial backoff (and 8x it as the maximum). */
void with_job(Workflow__V1__Transition *t, const char *type, int max_attempts, int64_t initial_ms);

/* A step list under construction (DEFINITION_KIND_STEPS; at most 16 steps
 * of at most 4 next rules). */
typedef struct sb {
    Workflow__V1__Definition d;
    Workflow__V1__Step *s[16];
} sb;

sb *steps_new(const char *key);
/* A step with id and no kind yet. */
Workflow__V1__Step *step(sb *b, const char *id);
/* A job step of type; max_attempts > 0 sets a retry with 10 ms backoff. */
Workflow__V1__Step *job_step(sb *b, const char *id, const char *type, int max_attempts);
/* A call step of key (version 0), with its input and output mappings
 * (NULL = none). */
Workflow__V1__Step *call_step(sb *b, const char *id, const char *key, const char *input,
                              const char *output);
/* A USER assignee (in ta): user, or ids_expression when not NULL. */
Workflow__V1__Assignee *user_assignee(const char *user, const char *ids_expression);
/* A user step for one user; ids_expression (NULL = none) reads the assignee. */
Workflow__V1__Step *user_step(sb *b, const char *id, const char *user, const char *ids_expression);
void next_rule(Workflow__V1__Step *s, const char *guard, const char *target);
/* Sets s's for_each with item name, output name and the join (mode 0 =
 * unset). */
void step_for_each(Workflow__V1__Step *s, const char *expr, const char *item, const char *output,
                   Workflow__V1__CompletionMode mode, int quorum);

/* ---- common calls --------------------------------------------------------------------------- */

/* DeployDefinition of d as c; the response or NULL with st filled. */
Workflow__V1__DeployDefinitionResponse *deploy_d(wf_client *c, const Workflow__V1__Definition *d,
                                                 bool validate_only, wf_client_status *st);

/* Deploys n as c / as "dev", asserting OK. */
Workflow__V1__DeployDefinitionResponse *deploy_as(wf_client *c, const nb *n);
Workflow__V1__DeployDefinitionResponse *deploy(const nb *n);

/* GetInstance of id as c / as a reader of the default tenant, asserting OK. */
Workflow__V1__GetInstanceResponse *get_instance_as(wf_client *c, const char *id);
Workflow__V1__GetInstanceResponse *get_instance(const char *id);

/* StartInstance of key at version (0 = latest) with vars (NULL = none) as
 * c; the instance or NULL with st filled. */
Workflow__V1__Instance *start_v(wf_client *c, const char *key, int32_t version, const char *vars,
                                wf_client_status *st);

/* StartInstance of key as c, bound to aggregate ("order", agg_id) unless
 * agg_id is NULL, with vars and request_id (NULL = none), asserting OK. */
Workflow__V1__Instance *start_order(wf_client *c, const char *key, const char *agg_id,
                                    const char *vars, const char *request_id);

/* StartInstance of key (latest version) with vars (NULL = none) as "boss",
 * asserting OK. */
Workflow__V1__Instance *start_boss(const char *key, const char *vars);

/* CompleteTask of task_id with vars (NULL = none) as actor; the response or
 * NULL with st filled. */
Workflow__V1__CompleteTaskResponse *complete_task_as(const char *actor, const char *task_id,
                                                     const char *vars, wf_client_status *st);

/* RetryInstance of id as "ops"; the instance or NULL with st filled. */
Workflow__V1__Instance *retry_c(const char *id, wf_client_status *st);

/* SetVariables of vars (a JSON object) on id as "ops"; the instance or
 * NULL with st filled. */
Workflow__V1__Instance *set_vars(const char *id, const char *vars, wf_client_status *st);

/* The task of transition_id with status (0 = any); NULL when none. */
Workflow__V1__Task *task_of(const Workflow__V1__GetInstanceResponse *g, const char *transition_id,
                            int status);

/* Tokens in place_id (0 when absent). */
int marking(const Workflow__V1__GetInstanceResponse *g, const char *place_id);

/* ---- jobs and events ---------------------------------------------------------------------- */

/* ActivateJobs of type as worker "w1" (lease_ms / wait_ms 0 = unset). */
Workflow__V1__ActivateJobsResponse *activate_c(wf_client *c, const char *type, int max,
                                               int64_t lease_ms, int64_t wait_ms,
                                               wf_client_status *st);
/* The same without actor, asserting OK. */
Workflow__V1__ActivateJobsResponse *activate(const char *type, int max, int64_t lease_ms,
                                             int64_t wait_ms);
/* Activates exactly one job of type (waiting up to 2 s) and returns it. */
Workflow__V1__Job *one_job(const char *type);
/* CompleteJob / FailJob (retryable, backoff_ms < 0 = unset); the gRPC code. */
int complete_job_c(wf_client *c, const char *key, const char *vars, wf_client_status *st);
int fail_job(const char *key, const char *msg, int retryable, int64_t backoff_ms,
             wf_client_status *st);

/* root's tree events in order (at most 1000), read from the server's
 * store into ta (in setup_tenant's tenant, else "default"); *n their
 * number. */
wf_event_row *events_of(const char *root, size_t *n);

/* The last event of type in root's tree; NULL when none. */
const wf_event_row *last_event(const char *root, const char *type);

/* Types of root's tree events, space-separated, read from the store (a
 * static buffer, valid until the next call). */
char *event_types(const char *root);

/* The data of the last event of type in root's tree, parsed (asserted). */
json_t *event_data(const char *root, const char *type);

/* text parsed as JSON (asserted). */
json_t *json_parsed(const char *text);

/* v as compact JSON text in ta ("" for NULL); v is released. */
const char *json_in_ta(json_t *v);

/* The value of key in a JSON object text, as compact JSON in ta ("" when
 * absent). */
const char *var_of(const char *json, const char *key);

void sleep_ms(int ms);

/* ---- tenants and timers ------------------------------------------------------------------- */

/* A client acting as actor in tenant (x-tenant-id), freed at teardown. */
wf_client *as_tenant(const char *tenant, const char *actor);
/* The same with x-actor-groups (tenant and groups may be NULL). */
wf_client *as_groups(const char *tenant, const char *actor, const char *groups);

/* The timer scheduler workflowd runs (the test server has none), on ts's
 * store with a pass at least every idle_ms: TIME transitions come due and
 * fire by themselves, waking the server's streams. Stop it with
 * wf_scheduler_stop before teardown. */
wf_scheduler *scheduler_start(int64_t idle_ms);

/* Fires timer_id of the root instance_id (default tenant) the way the
 * scheduler fires a claimed row, whether or not it is due (a row claimed
 * before the signal came is exactly a stale timeout): true when it fired. */
bool fire_timer(const char *instance_id, const char *timer_id);

#endif /* WF_NET_KIT_H */
