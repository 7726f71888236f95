/*
 * h_common: conversions and wire plumbing shared by h_instances.c,
 * h_referral.c and h_tasks.c.
 *
 * Owns no state. The enums of store.h carry the same numbers as their
 * protobuf counterparts (both follow workflow.proto), so conversions are casts;
 * the static asserts below keep it that way.
 */
#include "h_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "google/protobuf/timestamp.pb-c.h"
#include "wf_time.h"

_Static_assert((int)WF_INSTANCE_COMPENSATED ==
                   (int)WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATED,
               "instance status numbering");
_Static_assert((int)WF_INSTANCE_SUSPENDED ==
                   (int)WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED,
               "instance status numbering");
_Static_assert((int)WF_TASK_CANCELLED == (int)WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CANCELLED,
               "task status numbering");
_Static_assert((int)WF_ASSIGNEE_GROUP == (int)WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP,
               "assignee kind numbering");
_Static_assert((int)WF_REF_ASSIGNEE_USERS == (int)WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USERS,
               "assignee kind numbering");
_Static_assert((int)WF_JOIN_QUORUM == (int)WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM,
               "join mode numbering");

void
wf_h_violation_coded(void *arg, const char *field, const char *reason, const char *description)
{
    wf_error ignored;
    /* Out of memory here only loses the detail, never the error itself. */
    wf_call_add_violation(arg, field, reason, description, &ignored);
}

void
wf_h_violation(void *arg, const char *field, const char *description)
{
    wf_h_violation_coded(arg, field, NULL, description);
}

void
wf_h_ref_ctx(wf_call *call, wf_ref_ctx *out)
{
    *out = (wf_ref_ctx){
        .store = call->app->store,
        .dir = call->app->directory,
        .tenant = call->tenant,
        .actor = call->actor,
        .actor_groups = call->actor_groups,
        .deadline_ms = call->deadline_ms,
        .arena = call->arena,
        .violation = wf_h_violation_coded,
        .violation_arg = call,
        .no_auto_create = call->app->cfg != NULL && !call->app->cfg->auto_create_definitions,
        .max_variables_bytes =
            call->app->cfg != NULL ? (size_t)call->app->cfg->max_variables_bytes : 0,
        .answer_bytes = call->app->cfg != NULL ? wf_config_answer_budget(call->app->cfg) : 0,
    };
}

static void
wake_app(void *arg, const char *topic)
{
    wf_app_wake_streams(arg, topic);
}

void
wf_h_net_ctx(wf_call *call, wf_runtime_ctx *out)
{
    memset(out, 0, sizeof *out);
    wf_h_ref_ctx(call, &out->ref);
    out->wake = wake_app;
    out->wake_arg = call->app;
}

/* ---- durations and times ----------------------------------------------------------- */

#define MAX_SECONDS ((int64_t)315576000000) /* the Duration / Timestamp range */

int64_t
wf_h_duration_ms(const Google__Protobuf__Duration *d)
{
    if (d == NULL)
        return 0;
    int64_t s = d->seconds > MAX_SECONDS    ? MAX_SECONDS
                : d->seconds < -MAX_SECONDS ? -MAX_SECONDS
                                            : d->seconds;
    int64_t ms = s * 1000 + d->nanos / 1000000;
    if (d->nanos % 1000000 > 0)
        ms++;
    return ms;
}

Google__Protobuf__Duration *
wf_h_duration(wf_arena *a, int64_t ms, bool *oom)
{
    if (ms == 0)
        return NULL;
    Google__Protobuf__Duration *d = wf_arena_alloc(a, sizeof *d);
    if (d == NULL) {
        *oom = true;
        return NULL;
    }
    google__protobuf__duration__init(d);
    d->seconds = ms / 1000;
    d->nanos = (int32_t)(ms % 1000) * 1000000;
    return d;
}

int64_t
wf_h_time_us(const Google__Protobuf__Timestamp *t)
{
    if (t == NULL)
        return 0;
    int64_t s = t->seconds > MAX_SECONDS    ? MAX_SECONDS
                : t->seconds < -MAX_SECONDS ? -MAX_SECONDS
                                            : t->seconds;
    return s * 1000000 + t->nanos / 1000;
}

/* ---- rows → messages ------------------------------------------------------------ */

static char *
str(const char *s)
{
    return s != NULL ? (char *)s : (char *)protobuf_c_empty_string;
}

Google__Protobuf__Timestamp *
wf_h_timestamp(wf_arena *a, int64_t us, bool *oom)
{
    if (us == 0)
        return NULL;
    Google__Protobuf__Timestamp *t = wf_arena_alloc(a, sizeof *t);
    if (t == NULL) {
        *oom = true;
        return NULL;
    }
    google__protobuf__timestamp__init(t);
    t->seconds = us / 1000000;
    t->nanos = (int32_t)(us % 1000000) * 1000;
    return t;
}

Workflow__V1__Instance *
wf_h_instance(wf_arena *a, const wf_instance_row *r)
{
    Workflow__V1__Instance *m = wf_arena_alloc(a, sizeof *m);
    bool oom = false;
    if (m == NULL)
        return NULL;
    workflow__v1__instance__init(m);
    m->id = str(r->id);
    m->tenant_id = str(r->tenant);
    m->definition_key = str(r->definition_key);
    m->definition_version = r->definition_version;
    m->parent_instance_id = str(r->parent_id);
    m->root_instance_id = str(r->root_id);
    m->status = (Workflow__V1__InstanceStatus)r->status;
    m->variables_json = str(r->variables_json);
    m->started_by = str(r->started_by);
    if (r->aggregate_type != NULL) {
        m->aggregate = wf_arena_alloc(a, sizeof *m->aggregate);
        if (m->aggregate == NULL)
            return NULL;
        workflow__v1__aggregate__init(m->aggregate);
        m->aggregate->type = str(r->aggregate_type);
        m->aggregate->id = str(r->aggregate_id);
    }
    m->created_at = wf_h_timestamp(a, r->created_at, &oom);
    m->updated_at = wf_h_timestamp(a, r->updated_at, &oom);
    m->ended_at = wf_h_timestamp(a, r->ended_at, &oom);
    return oom ? NULL : m;
}

Workflow__V1__Task *
wf_h_task(wf_arena *a, const wf_task_row *r)
{
    Workflow__V1__Task *m = wf_arena_alloc(a, sizeof *m);
    bool oom = false;
    if (m == NULL)
        return NULL;
    workflow__v1__task__init(m);
    m->id = str(r->id);
    m->instance_id = str(r->instance_id);
    m->root_instance_id = str(r->root_id);
    m->definition_key = str(r->definition_key);
    m->transition_id = str(r->transition_id);
    m->title = str(r->title);
    m->assignee_kind = (Workflow__V1__AssigneeKind)r->assignee_kind;
    m->assignee_id = str(r->assignee_id);
    m->assigned_by = str(r->assigned_by);
    m->status = (Workflow__V1__TaskStatus)r->status;
    m->claimed_by = str(r->claimed_by);
    m->completed_by = str(r->completed_by);
    m->created_at = wf_h_timestamp(a, r->created_at, &oom);
    m->due_at = wf_h_timestamp(a, r->due_at, &oom);
    m->ended_at = wf_h_timestamp(a, r->ended_at, &oom);
    m->priority = r->priority;
    m->follow_up_at = wf_h_timestamp(a, r->follow_up_at, &oom);
    m->owner = str(r->owner);
    m->delegation_state = (Workflow__V1__DelegationState)r->delegation;
    return oom ? NULL : m;
}

Workflow__V1__Task **
wf_h_tasks(wf_arena *a, const wf_task_row *rows, size_t n)
{
    Workflow__V1__Task **v = wf_arena_calloc(a, n + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++)
        if ((v[i] = wf_h_task(a, &rows[i])) == NULL)
            return NULL;
    return v;
}

Workflow__V1__Instance **
wf_h_instances(wf_arena *a, const wf_instance_row *rows, size_t n)
{
    Workflow__V1__Instance **v = wf_arena_calloc(a, n + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++)
        if ((v[i] = wf_h_instance(a, &rows[i])) == NULL)
            return NULL;
    return v;
}

Workflow__V1__AssignToResponse *
wf_h_assignment(wf_arena *a, const wf_ref_assignment *r)
{
    Workflow__V1__AssignToResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__assign_to_response__init(m);
    m->instance_id = str(r->instance.id);
    m->n_tasks = r->n_tasks;
    m->tasks = wf_h_tasks(a, r->tasks, r->n_tasks);
    if (m->tasks == NULL)
        return NULL;
    m->task = r->n_tasks > 0 ? m->tasks[0] : NULL;
    return m;
}

Workflow__V1__Job *
wf_h_job(wf_arena *a, const wf_job_row *r)
{
    Workflow__V1__Job *m = wf_arena_alloc(a, sizeof *m);
    bool oom = false;
    if (m == NULL)
        return NULL;
    workflow__v1__job__init(m);
    bool activated = r->state == WF_JOB_ACTIVATED;
    m->key = activated ? str(r->key) : (char *)protobuf_c_empty_string;
    m->id = str(r->id);
    m->instance_id = str(r->instance_id);
    m->root_instance_id = str(r->root_id);
    m->transition_id = str(r->transition_id);
    m->job_type = str(r->job_type);
    m->variables_json = r->variables_json != NULL ? r->variables_json : (char *)"{}";
    m->attempt = r->attempt + 1; /* the row counts failed attempts from 0 */
    m->max_attempts = r->max_attempts;
    m->idempotency_key = str(r->idempotency_key);
    m->compensation = r->compensation;
    m->worker = activated ? str(r->worker) : (char *)protobuf_c_empty_string;
    m->error_message = str(r->last_error);
    if (activated)
        m->lease_expires_at = wf_h_timestamp(a, r->lease_expires_at, &oom);
    if (r->state == WF_JOB_ACTIVATABLE && r->activatable_at > wf_now_us())
        m->activatable_at = wf_h_timestamp(a, r->activatable_at, &oom);
    m->priority = r->priority;
    m->fairness_key = str(r->fairness_key);
    if (r->created_at != 0)
        m->created_at = wf_h_timestamp(a, r->created_at, &oom);
    return oom ? NULL : m;
}

Workflow__V1__Timer *
wf_h_timer(wf_arena *a, const wf_timer_row *r)
{
    Workflow__V1__Timer *m = wf_arena_alloc(a, sizeof *m);
    bool oom = false;
    if (m == NULL)
        return NULL;
    workflow__v1__timer__init(m);
    m->id = str(r->id);
    m->instance_id = str(r->instance_id);
    m->transition_id = str(r->transition_id);
    m->due_at = wf_h_timestamp(a, r->due_at, &oom);
    m->created_at = wf_h_timestamp(a, r->created_at, &oom);
    return oom ? NULL : m;
}

/* ---- fingerprints --------------------------------------------------------------- */

static uint64_t
fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Clears the named scalar fields of a shallow copy of msg. */
static void
clear_field(ProtobufCMessage *copy, const char *name)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(copy->descriptor, name);
    if (f == NULL || f->label == PROTOBUF_C_LABEL_REPEATED)
        return;
    char *p = (char *)copy + f->offset;
    if (f->type == PROTOBUF_C_TYPE_STRING)
        *(char **)p = (char *)protobuf_c_empty_string;
    else if (f->type == PROTOBUF_C_TYPE_INT32)
        *(int32_t *)p = 0;
}

/* 16 hex digits of FNV-1a over req (without the fields in skip) and the
 * actor; NULL when out of memory. */
static char *
fingerprint(wf_call *call, const ProtobufCMessage *req, const char *const *skip, size_t n_skip)
{
    size_t size = req->descriptor->sizeof_message;
    ProtobufCMessage *copy = wf_arena_alloc(call->arena, size);
    if (copy == NULL)
        return NULL;
    memcpy(copy, req, size);
    for (size_t i = 0; i < n_skip; i++)
        clear_field(copy, skip[i]);
    size_t len = protobuf_c_message_get_packed_size(copy);
    uint8_t *buf = wf_arena_alloc(call->arena, len + 1);
    if (buf == NULL)
        return NULL;
    protobuf_c_message_pack(copy, buf);
    uint64_t h = fnv1a(14695981039346656037ULL, buf, len);
    /* A separator that cannot appear in an actor id keeps (req, actor)
     * pairs from colliding by concatenation. */
    h = fnv1a(h, "\n", 1);
    if (call->actor != NULL)
        h = fnv1a(h, call->actor, strlen(call->actor));
    return wf_arena_printf(call->arena, "%016" PRIx64, h);
}

/* ---- idempotency -------------------------------------------------------------------- */

/* A response of descriptor d whose one field is `instance`, from the
 * instance row r; NULL when out of memory or when d has no such field. */
static ProtobufCMessage *
instance_response(wf_arena *a, const ProtobufCMessageDescriptor *d, const wf_instance_row *r)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(d, "instance");
    if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE ||
        f->descriptor != &workflow__v1__instance__descriptor)
        return NULL;
    ProtobufCMessage *m = wf_arena_alloc(a, d->sizeof_message);
    Workflow__V1__Instance *in = wf_h_instance(a, r);
    if (m == NULL || in == NULL)
        return NULL;
    protobuf_c_message_init(d, m);
    memcpy((char *)m + f->offset, &in, sizeof in);
    return m;
}

/* The response b builds from result (see wf_h_builder). */
static ProtobufCMessage *
build(const wf_h_builder *b, wf_arena *a, const void *result)
{
    return b->build != NULL ? b->build(a, result) : instance_response(a, b->desc, result);
}

static wf_code
encode(const void *result, void *arg, wf_arena *a, unsigned char **bytes, size_t *len,
       wf_error *err)
{
    const wf_h_builder *b = arg;
    ProtobufCMessage *m = build(b, a, result);
    if (m == NULL)
        return wf_error_nomem(err);
    *len = protobuf_c_message_get_packed_size(m);
    *bytes = wf_arena_alloc(a, *len + 1);
    if (*bytes == NULL)
        return wf_error_nomem(err);
    protobuf_c_message_pack(m, *bytes);
    return WF_OK;
}

static bool
printable_id(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

wf_code
wf_h_idem(wf_call *call, const ProtobufCMessage *req, const char *request_id, const wf_h_builder *b,
          wf_uow_idem *out, wf_error *err)
{
    static const char *const skip[] = {"request_id"};
    memset(out, 0, sizeof *out);
    if (request_id == NULL || request_id[0] == '\0')
        return WF_OK;
    if (!printable_id(request_id, 128)) {
        wf_h_violation(call, "request_id", "must be 1 to 128 printable characters");
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "request_id must be 1 to 128 printable characters");
    }
    out->method = call->method;
    out->request_id = request_id;
    out->request_hash = fingerprint(call, req, skip, 1);
    out->encode = encode;
    out->encode_arg = (void *)b;
    if (out->request_hash == NULL)
        return wf_error_nomem(err);
    return WF_OK;
}

wf_code
wf_h_respond(wf_call *call, wf_code rc, const wf_uow_idem *idem, const wf_h_builder *b,
             const void *result, ProtobufCMessage **resp, wf_error *err)
{
    if (rc != WF_OK)
        return rc;
    if (idem != NULL && idem->replayed) {
        ProtobufCAllocator pa = wf_arena_pb_allocator(call->arena);
        *resp = protobuf_c_message_unpack(b->desc, &pa, idem->response_len, idem->response);
    } else {
        *resp = build(b, call->arena, result);
        /* New events were committed: let WatchEvents followers read them. */
        wf_app_wake_streams(call->app, WF_TOPIC_EVENTS);
    }
    if (*resp == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "could not build the %s response", call->method);
    return WF_OK;
}

/* ---- page tokens ------------------------------------------------------------------- */

static const char *const page_fields[] = {"page_token", "page_size"};

wf_code
wf_h_page_in(wf_call *call, const ProtobufCMessage *req, const char *token, const char **cursor,
             wf_error *err)
{
    *cursor = NULL;
    if (token == NULL || token[0] == '\0')
        return WF_OK;
    const char *fp = fingerprint(call, req, page_fields, 2);
    if (fp == NULL)
        return wf_error_nomem(err);
    size_t n = strlen(fp);
    if (strncmp(token, fp, n) != 0 || token[n] != '.' || token[n + 1] == '\0') {
        wf_h_violation(call, "page_token", "is malformed or belongs to a different query");
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "page_token is malformed or belongs to a different query");
    }
    *cursor = token + n + 1;
    return WF_OK;
}

char *
wf_h_page_out(wf_call *call, const ProtobufCMessage *req, const char *cursor)
{
    if (cursor == NULL)
        return (char *)protobuf_c_empty_string;
    const char *fp = fingerprint(call, req, page_fields, 2);
    return fp != NULL ? wf_arena_printf(call->arena, "%s.%s", fp, cursor) : NULL;
}
