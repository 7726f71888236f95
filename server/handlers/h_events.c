/*
 * h_events: WatchEvents, the event log as a server stream.
 *
 * Pull-based (see wf_stream_ops): each step hands out the next event of a
 * buffered batch, reading the next batch from the store when the buffer is
 * empty. With follow=false the stream ends once it has caught up; with
 * follow=true it parks and is woken when new events commit (in this
 * process, or in another replica through the store's notifications). The
 * store returns events in commit order without gaps, so resuming from the
 * last sequence seen never skips or repeats one.
 */
#include <string.h>

#include "h_common.h"
#include "handlers.h"
#include "reads.h"

#define BATCH 256
#define MAX_TYPES 64

struct watch {
    int64_t after; /* last sequence handed out */
    wf_event_filter filter;
    bool follow;
    wf_arena *batch; /* owns rows; replaced at each read */
    wf_event_row *rows;
    size_t n, next;
};

static wf_code
watch_open(wf_call *call, const ProtobufCMessage *msg, void **state, wf_error *err)
{
    const Workflow__V1__WatchEventsRequest *req = (const void *)msg;
    if (req->after_sequence < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "after_sequence must not be negative");
    if (req->n_types > MAX_TYPES)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "at most %d event types may be given",
                            MAX_TYPES);
    struct watch *w = wf_arena_calloc(call->arena, 1, sizeof *w);
    const char **types = wf_arena_calloc(call->arena, req->n_types + 1, sizeof *types);
    if (w == NULL || types == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < req->n_types; i++) {
        const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
            &workflow__v1__event_type__descriptor, req->types[i]);
        if (v == NULL || req->types[i] == WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_UNSPECIFIED)
            return wf_error_set(err, WF_E_INVALID_ARGUMENT, "types[%zu] is not an event type", i);
        /* "EVENT_TYPE_TASK_CREATED" is stored as "TASK_CREATED". */
        types[i] = v->name + strlen("EVENT_TYPE_");
    }
    call->wake_topic = WF_TOPIC_EVENTS;
    w->after = req->after_sequence;
    w->follow = req->follow;
    w->filter.instance_id = req->instance_id[0] ? req->instance_id : NULL;
    w->filter.definition_key = req->definition_key[0] ? req->definition_key : NULL;
    w->filter.types = types;
    w->filter.n_types = req->n_types;
    *state = w;
    return WF_OK;
}

static Workflow__V1__WatchEventsResponse *
event_message(wf_arena *a, const wf_event_row *r)
{
    Workflow__V1__WatchEventsResponse *resp = wf_arena_alloc(a, sizeof *resp);
    Workflow__V1__Event *e = wf_arena_alloc(a, sizeof *e);
    char *name = wf_arena_printf(a, "EVENT_TYPE_%s", r->type);
    if (resp == NULL || e == NULL || name == NULL)
        return NULL;
    workflow__v1__watch_events_response__init(resp);
    workflow__v1__event__init(e);
    bool oom = false;
    e->sequence = r->sequence;
    e->time = wf_h_timestamp(a, r->time, &oom);
    e->instance_id = r->instance_id != NULL ? r->instance_id : (char *)protobuf_c_empty_string;
    e->root_instance_id = r->root_id != NULL ? r->root_id : (char *)protobuf_c_empty_string;
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value_by_name(&workflow__v1__event_type__descriptor, name);
    e->type = v != NULL ? v->value : WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_UNSPECIFIED;
    e->actor = r->actor != NULL ? r->actor : (char *)protobuf_c_empty_string;
    e->data_json = r->data_json != NULL ? r->data_json : (char *)"{}";
    resp->event = e;
    return oom ? NULL : resp;
}

static wf_stream_step
watch_next(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg, wf_error *err)
{
    struct watch *w = state;
    if (w->next == w->n) {
        /* The buffer is empty: read the next batch. */
        wf_arena_free(w->batch);
        w->batch = wf_arena_new();
        w->rows = NULL;
        w->n = w->next = 0;
        if (w->batch == NULL) {
            wf_error_nomem(err);
            return WF_STREAM_END;
        }
        /* A follow stream lives beyond any one read: the engine gives each
         * read its own deadline rather than the stream's. */
        if (wf_reads_events(call->app->store, call->tenant, w->batch, w->after, &w->filter, BATCH,
                            &w->rows, &w->n, err) != WF_OK)
            return WF_STREAM_END; /* the client resumes from its last sequence */
        if (w->n == 0) {
            if (w->follow)
                return WF_STREAM_WAIT;
            wf_error_clear(err);
            return WF_STREAM_END;
        }
    }
    const wf_event_row *r = &w->rows[w->next++];
    Workflow__V1__WatchEventsResponse *resp = event_message(scratch, r);
    if (resp == NULL) {
        wf_error_nomem(err);
        return WF_STREAM_END;
    }
    w->after = r->sequence;
    *msg = &resp->base;
    return WF_STREAM_MESSAGE;
}

static void
watch_close(void *state)
{
    struct watch *w = state;
    wf_arena_free(w->batch);
}

const wf_stream_ops h_watch_events = {watch_open, watch_next, watch_close, false};
