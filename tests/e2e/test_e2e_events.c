/*
 * End-to-end tests of WatchEvents, on both stores: the history of an
 * instance in order, filters, resuming from a sequence without skipping or
 * repeating, live events with follow, bad requests, and the stream ending
 * with a retryable status when the server stops.
 *
 * Postgres keeps rows between runs, so every test filters on the
 * instances it creates.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <grpc/status.h>

#include "test_support.h"
#include "wf_id.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"

static wf_test_server ts;
static wf_client *cli;

static void
setup(void)
{
    wf_test_server_start(&ts, NULL);
    cli = wf_test_client(&ts, NULL, NULL, "hr-anna");
}

static void
teardown(void)
{
    wf_client_free(cli);
    if (ts.srv != NULL)
        wf_test_server_stop(&ts, 1000);
}

/* Starts an AD_HOC root and returns its id (static buffer per call site). */
static void
start_root(char id[WF_UUID_LEN + 1])
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    req.definition_key = "events-test";
    req.variables_json = "{\"employee\":\"e-1\"}";
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    ck_assert_int_eq(wf_client_call(cli, SVC "StartInstance", &req.base,
                                    &workflow__v1__start_instance_response__descriptor, &resp, NULL,
                                    &st),
                     GRPC_STATUS_OK);
    snprintf(id, WF_UUID_LEN + 1, "%s",
             ((Workflow__V1__StartInstanceResponse *)resp)->instance->id);
    protobuf_c_message_free_unpacked(resp, NULL);
}

/* Refers the root to a user; returns the task id. */
static void
assign(const char *root, const char *user, char task[WF_UUID_LEN + 1])
{
    Workflow__V1__AssignToRequest req = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee who = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {(char *)user};
    who.kind = WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER;
    who.n_ids = 1;
    who.ids = ids;
    req.parent_instance_id = (char *)root;
    req.assignee = &who;
    req.title = "check";
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    ck_assert_msg(wf_client_call(cli, SVC "AssignTo", &req.base,
                                 &workflow__v1__assign_to_response__descriptor, &resp, NULL,
                                 &st) == GRPC_STATUS_OK,
                  "AssignTo: %s %s", st.reason, st.message);
    snprintf(task, WF_UUID_LEN + 1, "%s", ((Workflow__V1__AssignToResponse *)resp)->task->id);
    protobuf_c_message_free_unpacked(resp, NULL);
}

/* Reads the whole history (follow=false) into types/seqs; returns the count. */
static size_t
history(const char *instance, int64_t after, const Workflow__V1__EventType *only, size_t nonly,
        int types[], int64_t seqs[], size_t cap, wf_client_status *st)
{
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.instance_id = (char *)instance;
    req.after_sequence = after;
    req.types = (Workflow__V1__EventType *)only;
    req.n_types = nonly;
    wf_client_stream *s = wf_client_stream_open(cli, SVC "WatchEvents", &req.base, NULL);
    ck_assert_ptr_nonnull(s);
    size_t n = 0;
    ProtobufCMessage *m;
    while (wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, st)) {
        Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)m)->event;
        if (n < cap) {
            types[n] = e->type;
            seqs[n] = e->sequence;
        }
        ck_assert_str_eq(e->root_instance_id, instance);
        n++;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    wf_client_stream_close(s);
    return n;
}

WF_TEST(test_history_in_order_then_end)
{
    char root[WF_UUID_LEN + 1], task[WF_UUID_LEN + 1];
    start_root(root);
    assign(root, "it-ivan", task);
    int types[16];
    int64_t seqs[16];
    wf_client_status st;
    size_t n = history(root, 0, NULL, 0, types, seqs, 16, &st);
    ck_assert_int_eq(st.code, GRPC_STATUS_OK);
    ck_assert_uint_ge(n, 2);
    ck_assert_int_eq(types[0], WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_STARTED);
    int created = 0;
    for (size_t i = 0; i < n; i++) {
        created += types[i] == WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED;
        if (i > 0)
            ck_assert_int_gt(seqs[i], seqs[i - 1]);
    }
    ck_assert_int_eq(created, 1);

    /* Resuming after the first event returns exactly the rest. */
    int types2[16];
    int64_t seqs2[16];
    size_t n2 = history(root, seqs[0], NULL, 0, types2, seqs2, 16, &st);
    ck_assert_uint_eq(n2, n - 1);
    for (size_t i = 0; i < n2; i++)
        ck_assert_int_eq(seqs2[i], seqs[i + 1]);
}
END_TEST

WF_TEST(test_type_filter)
{
    char root[WF_UUID_LEN + 1], task[WF_UUID_LEN + 1];
    start_root(root);
    assign(root, "it-ivan", task);
    assign(root, "fin-fay", task);
    Workflow__V1__EventType only[] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED};
    int types[16];
    int64_t seqs[16];
    wf_client_status st;
    size_t n = history(root, 0, only, 1, types, seqs, 16, &st);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(types[0], WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED);
    ck_assert_int_eq(types[1], WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED);
}
END_TEST

WF_TEST(test_bad_requests)
{
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.after_sequence = -1;
    wf_client_status st;
    ProtobufCMessage *m;
    wf_client_stream *s = wf_client_stream_open(cli, SVC "WatchEvents", &req.base, NULL);
    ck_assert_int_eq(
        wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st), 0);
    ck_assert_int_eq(st.code, GRPC_STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(st.reason, "INVALID_ARGUMENT");
    wf_client_stream_close(s);

    Workflow__V1__EventType bad[] = {(Workflow__V1__EventType)999};
    req.after_sequence = 0;
    req.types = bad;
    req.n_types = 1;
    s = wf_client_stream_open(cli, SVC "WatchEvents", &req.base, NULL);
    ck_assert_int_eq(
        wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st), 0);
    ck_assert_int_eq(st.code, GRPC_STATUS_INVALID_ARGUMENT);
    wf_client_stream_close(s);
}
END_TEST

/* A follow stream sees events committed after it opened, then ends with a
 * retryable status when the server stops. */
WF_TEST(test_follow_live_then_shutdown)
{
    char root[WF_UUID_LEN + 1], task[WF_UUID_LEN + 1];
    start_root(root);
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.instance_id = root;
    req.follow = 1;
    wf_client_call_opts o = {.timeout_ms = 20000};
    wf_client_stream *s = wf_client_stream_open(cli, SVC "WatchEvents", &req.base, &o);
    ck_assert_ptr_nonnull(s);
    ProtobufCMessage *m;
    wf_client_status st;
    ck_assert_int_eq(
        wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st), 1);
    Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)m)->event;
    ck_assert_int_eq(e->type, WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_STARTED);
    int64_t last = e->sequence;
    protobuf_c_message_free_unpacked(m, NULL);

    /* Caught up: the next event arrives only after a new commit. */
    int64_t t0 = wf_mono_ms();
    assign(root, "it-ivan", task);
    int seen_task = 0;
    while (!seen_task) {
        ck_assert_int_eq(
            wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st), 1);
        e = ((Workflow__V1__WatchEventsResponse *)m)->event;
        ck_assert_int_gt(e->sequence, last);
        last = e->sequence;
        seen_task = e->type == WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    /* Woken, not polled on a timer. */
    ck_assert_int_lt(wf_mono_ms() - t0, 3000 * wf_test_time_scale());

    wf_test_server_stop(&ts, 3000);
    ck_assert_int_eq(
        wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st), 0);
    ck_assert_int_eq(st.code, GRPC_STATUS_UNAVAILABLE);
    wf_client_stream_close(s);
}
END_TEST

/* Many writers while a follower reads: every event of the watched roots
 * arrives exactly once, in increasing sequence. */
struct writer {
    char root[WF_UUID_LEN + 1];
    int tasks;
};

static void *
writer_main(void *arg)
{
    struct writer *w = arg;
    char task[WF_UUID_LEN + 1];
    for (int i = 0; i < w->tasks; i++)
        assign(w->root, "it-ivan", task);
    return NULL;
}

WF_TEST(test_follow_under_concurrent_writers)
{
    enum { WRITERS = 4, TASKS = 10 };
    struct writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        start_root(w[i].root);
        w[i].tasks = TASKS;
    }
    /* Follow everything after the roots' starts, filtered to TASK_CREATED. */
    int types[8];
    int64_t seqs[8];
    wf_client_status st;
    history(w[WRITERS - 1].root, 0, NULL, 0, types, seqs, 8, &st);
    int64_t after = seqs[0];

    Workflow__V1__EventType only[] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED};
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.after_sequence = after;
    req.types = only;
    req.n_types = 1;
    req.follow = 1;
    wf_client_call_opts o = {.timeout_ms = 30000};
    wf_client_stream *s = wf_client_stream_open(cli, SVC "WatchEvents", &req.base, &o);

    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++)
        pthread_create(&th[i], NULL, writer_main, &w[i]);

    int got[WRITERS] = {0};
    int64_t last = after;
    int total = 0;
    while (total < WRITERS * TASKS) {
        ProtobufCMessage *m;
        int more =
            wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st);
        ck_assert_msg(more == 1, "stream ended after %d events: %s %s %s", total,
                      wf_client_code_name(st.code), st.reason, st.message);
        Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)m)->event;
        ck_assert_int_gt(e->sequence, last);
        last = e->sequence;
        for (int i = 0; i < WRITERS; i++)
            if (strcmp(e->root_instance_id, w[i].root) == 0) {
                got[i]++;
                total++;
            }
        protobuf_c_message_free_unpacked(m, NULL);
    }
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(got[i], TASKS);
    }
    wf_client_stream_close(s);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite(wf_test_store_is_pg() ? "e2e_events_pg" : "e2e_events",
                                     "events", setup, teardown, 60));
}
