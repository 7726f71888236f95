/*
 * h_common: what the instance, referral and task handlers share: the
 * engine context of a call, engine rows → protobuf messages, and the
 * idempotency and paging plumbing of the wire protocol (request
 * fingerprints, packed responses, page tokens bound to their filters).
 *
 * Everything returned lives in the call's arena.
 */
#ifndef WF_H_COMMON_H
#define WF_H_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "handler.h"
#include "ids.h"
#include "instances.h"
#include "net_runtime.h"
#include "referral.h"
#include "uow.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "workflow/v1/workflow.pb-c.h"

/* GetInstance's answer for instance id, built in a (so is iv, the
 * engine's view it comes from): one read of the instance. */
wf_code wf_h_instance_view(wf_call *call, wf_arena *a, const char *id,
                           Workflow__V1__GetInstanceResponse **out, wf_instance_view *iv,
                           wf_error *err);

/* ---- waiting for a result (h_await.c) ---- */

struct wf_await_until;
/* An await's condition and timeout from the request (field names the
 * request's path of them, e.g. "await_result"), checked: a condition is
 * required, its name non-empty, the timeout 0 to WF_AWAIT_MAX_MS (unset =
 * the maximum). *state (in the call's arena) waits for instance_id, set
 * later when NULL; it sets the call's wake topic. */
wf_code wf_h_await_parse(wf_call *call, const char *field, const Workflow__V1__AwaitUntil *until,
                         const Google__Protobuf__Duration *timeout, void **state, wf_error *err);
/* The state's condition (for checks before a start or a signal). */
const struct wf_await_until *wf_h_await_until(void *state);
/* Parks the call on the state once the handler has answered resp: the
 * wait is for instance_id, and resp (a StartInstanceResponse or a
 * SendSignalResponse) is sent with its view and timed_out when it ends. */
void wf_h_await_park(wf_call *call, void *state, const char *instance_id, ProtobufCMessage *resp);

/* The engine context of call (store, directory, identity, deadline). */
void wf_h_ref_ctx(wf_call *call, wf_ref_ctx *out);

/* The net runtime context of call: wf_h_ref_ctx plus wake-ups of the
 * call's server (wf_app_wake_streams) after commits. */
void wf_h_net_ctx(wf_call *call, wf_runtime_ctx *out);

/* Duration → milliseconds (a partial millisecond counts as one); 0 for
 * NULL. Negative durations stay negative. */
int64_t wf_h_duration_ms(const Google__Protobuf__Duration *d);

/* Milliseconds → Duration in the arena; NULL for 0 and when out of memory
 * (then *oom is set). */
Google__Protobuf__Duration *wf_h_duration(wf_arena *a, int64_t ms, bool *oom);

/* Timestamp → microseconds since the epoch; 0 for NULL. */
int64_t wf_h_time_us(const Google__Protobuf__Timestamp *t);

/* Microseconds since the epoch → Timestamp in the arena; NULL for 0 (unset),
 * and NULL with *oom set when out of memory. */
Google__Protobuf__Timestamp *wf_h_timestamp(wf_arena *a, int64_t us, bool *oom);

/* The filter of ListInstances and StartBatchOperation (an InstanceFilter,
 * or ListInstancesRequest's filter fields seen as one) → the engine's
 * query, page_size and cursor unset; strings borrowed from f, the rest
 * in a. The engine checks it (wf_referral_list_instances). */
wf_code wf_h_instance_query(wf_arena *a, const Workflow__V1__InstanceFilter *f,
                            wf_ref_instance_query *q, wf_error *err);

/* The reverse, for an answer; NULL when out of memory. */
Workflow__V1__InstanceFilter *wf_h_instance_filter(wf_arena *a, const wf_ref_instance_query *q);

/* A place mapping of MigrateInstance or StartBatchOperation → the
 * engine's (strings borrowed); NULL when out of memory. */
wf_net_place_map *wf_h_place_mapping(wf_arena *a, Workflow__V1__PlaceMapping *const *m, size_t n);

/* The reverse, for an answer (*oom set when out of memory). */
Workflow__V1__PlaceMapping **wf_h_place_mapping_msgs(wf_arena *a, const wf_net_place_map *m,
                                                     size_t n, bool *oom);

/* Rows → messages. NULL when out of memory. */
Workflow__V1__Instance *wf_h_instance(wf_arena *a, const wf_instance_row *r);
Workflow__V1__Task *wf_h_task(wf_arena *a, const wf_task_row *r);
Workflow__V1__Task **wf_h_tasks(wf_arena *a, const wf_task_row *rows, size_t n);
Workflow__V1__Instance **wf_h_instances(wf_arena *a, const wf_instance_row *rows, size_t n);
Workflow__V1__AssignToResponse *wf_h_assignment(wf_arena *a, const wf_ref_assignment *r);
Workflow__V1__Job *wf_h_job(wf_arena *a, const wf_job_row *r);
Workflow__V1__Timer *wf_h_timer(wf_arena *a, const wf_timer_row *r);

/* Builds the response message of a handler from the engine's result.
 * build NULL: the response's one field is `instance`, built from a
 * wf_instance_row result by wf_h_instance. */
typedef struct wf_h_builder {
    ProtobufCMessage *(*build)(wf_arena *a, const void *result);
    const ProtobufCMessageDescriptor *desc; /* of the response */
} wf_h_builder;

/* CompleteJob's response (h_jobs.c): CompleteJobs items store it too, so
 * that a request id is shared by both methods. */
extern const wf_h_builder wf_h_complete_job_builder;

/* Prepares the idempotency of a mutating call: checks request_id (0-128
 * printable bytes) and fingerprints req (every field but request_id) with
 * the actor. The response is produced by b. */
wf_code wf_h_idem(wf_call *call, const ProtobufCMessage *req, const char *request_id,
                  const wf_h_builder *b, wf_uow_idem *out, wf_error *err);

/* Ends a mutating call: on WF_OK *resp is the replayed response (unpacked
 * from the stored bytes) or the one b builds from result. */
wf_code wf_h_respond(wf_call *call, wf_code rc, const wf_uow_idem *idem, const wf_h_builder *b,
                     const void *result, ProtobufCMessage **resp, wf_error *err);

/* Page tokens: a store cursor bound to a fingerprint of the request's
 * filters (every field but page_token and page_size, plus the actor), so
 * a token reused with other filters is refused. */
wf_code wf_h_page_in(wf_call *call, const ProtobufCMessage *req, const char *token,
                     const char **cursor, wf_error *err);
char *wf_h_page_out(wf_call *call, const ProtobufCMessage *req, const char *cursor);

/* The violation sink of wf_ref_ctx (arg is the wf_call). */
void wf_h_violation_coded(void *arg, const char *field, const char *reason,
                          const char *description);

/* A violation of a handler's own check, with the reason of the error the
 * call fails with. */
void wf_h_violation(void *arg, const char *field, const char *description);

#endif /* WF_H_COMMON_H */
