/*
 * A watcher under load, on the memory store and on Postgres
 * (WF_TEST_STORE=pg): one WatchEvents stream follows every event of a
 * tenant from the start while 16 client threads run mixed workflows for a
 * few seconds, with the timer scheduler running:
 *
 *   - ad-hoc referrals: a personal task completed, a group task claimed
 *     and completed, CompleteAndEnd;
 *   - a net with a USER transition then an AUTO job; the threads are also
 *     the job workers (some attempts fail and are retried after a backoff);
 *   - a net where a signal by aggregate (sent before the start and
 *     buffered, sent after it, or never) races a 150 ms timeout whose arc
 *     leads through a silent transition.
 *
 * Then, once the watcher has caught up with the last sequence, what it
 * received is compared with the events table read directly (libpq on
 * WF_TEST_PG_DSN; on the memory store, the store's own read): every event
 * exactly once, none missing, in strictly increasing sequence (and so in
 * order per instance).
 *
 * Postgres keeps rows between runs and sequences are global: the test
 * works in a tenant of its own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>
#include <libpq-fe.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"
#define THREADS 16
#define LOAD_MS 6000
#define C_AGGREGATE WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE
#define A_GROUP WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP

static const char *tenant;
static const char *job_key, *wait_key, *job_type;

/* ---- calls: responses are freed by the caller (thousands per run) ----------------------- */

/* Calls method; the response, or NULL with *err describing the failure. */
static void *
rpc(wf_client *c, const char *method, const void *req, const ProtobufCMessageDescriptor *d,
    char *err, size_t cap)
{
    char path[128];
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    snprintf(path, sizeof path, SVC "%s", method);
    if (wf_client_call(c, path, req, d, &resp, NULL, &st) != GRPC_STATUS_OK) {
        snprintf(err, cap, "%s: %s (%s): %s", method, wf_client_code_name(st.code), st.reason,
                 st.message);
        return NULL;
    }
    return resp;
}

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

/* ---- the load ------------------------------------------------------------------------------ */

struct worker {
    int index;
    wf_client *me;  /* acts as w<index> */
    wf_client *rev; /* the reviewer of the job net */
    int flows, jobs_done, jobs_failed, signals;
    char error[768]; /* the first unexpected failure */
};

static Workflow__V1__Instance *
start_in(struct worker *w, const char *key, const char *order)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    req.definition_key = (char *)key;
    req.variables_json = "{\"amount\":42}";
    if (order != NULL) {
        agg.type = "order";
        agg.id = (char *)order;
        req.aggregate = &agg;
    }
    Workflow__V1__StartInstanceResponse *r =
        rpc(w->me, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor,
            w->error, sizeof w->error);
    if (r == NULL)
        return NULL;
    Workflow__V1__Instance *in = r->instance;
    r->instance = NULL;
    FREE(r);
    return in;
}

static Workflow__V1__Task *
assign(struct worker *w, const char *root, Workflow__V1__AssigneeKind kind, const char *id)
{
    Workflow__V1__AssignToRequest req = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee who = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {(char *)id};
    who.kind = kind;
    who.n_ids = 1;
    who.ids = ids;
    req.parent_instance_id = (char *)root;
    req.assignee = &who;
    req.title = "load";
    Workflow__V1__AssignToResponse *r =
        rpc(w->me, "AssignTo", &req, &workflow__v1__assign_to_response__descriptor, w->error,
            sizeof w->error);
    if (r == NULL)
        return NULL;
    Workflow__V1__Task *t = r->task;
    r->task = NULL;
    FREE(r);
    return t;
}

static bool
task_call(struct worker *w, wf_client *c, const char *method, const char *task_id)
{
    /* ClaimTask, CompleteTask and CompleteAndEnd requests share this shape. */
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    const ProtobufCMessageDescriptor *d = &workflow__v1__complete_task_response__descriptor;
    void *r;
    if (strcmp(method, "ClaimTask") == 0) {
        Workflow__V1__ClaimTaskRequest claim = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
        claim.task_id = (char *)task_id;
        r = rpc(c, method, &claim, &workflow__v1__task__descriptor, w->error, sizeof w->error);
    } else if (strcmp(method, "CompleteAndEnd") == 0) {
        Workflow__V1__CompleteAndEndRequest end = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
        end.task_id = (char *)task_id;
        r = rpc(c, method, &end, &workflow__v1__complete_and_end_response__descriptor, w->error,
                sizeof w->error);
    } else {
        req.task_id = (char *)task_id;
        req.variables_json = "{\"ok\":true}";
        r = rpc(c, method, &req, d, w->error, sizeof w->error);
    }
    if (r == NULL)
        return false;
    FREE(r);
    return true;
}

/* A root, a personal task, a group task claimed then completed, and
 * CompleteAndEnd on a last one. */
static bool
adhoc_flow(struct worker *w, char *self)
{
    Workflow__V1__Instance *root = start_in(w, "load-adhoc", NULL);
    if (root == NULL)
        return false;
    bool ok = false;
    Workflow__V1__Task *t = assign(w, root->id, A_USER, self);
    if (t != NULL && task_call(w, w->me, "CompleteTask", t->id)) {
        FREE(t);
        t = assign(w, root->id, A_GROUP, "clerks");
        if (t != NULL && task_call(w, w->me, "ClaimTask", t->id) &&
            task_call(w, w->me, "CompleteTask", t->id)) {
            FREE(t);
            t = assign(w, root->id, A_USER, self);
            ok = t != NULL && task_call(w, w->me, "CompleteAndEnd", t->id);
        }
    }
    if (t != NULL)
        FREE(t);
    FREE(root);
    return ok;
}

/* Starts the job net, completes its review task (the USER step comes
 * first), then works up to two jobs of any instance. */
static bool
job_flow(struct worker *w)
{
    Workflow__V1__Instance *in = start_in(w, job_key, NULL);
    if (in == NULL)
        return false;
    Workflow__V1__GetInstanceRequest g = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    g.instance_id = in->id;
    Workflow__V1__GetInstanceResponse *view =
        rpc(w->me, "GetInstance", &g, &workflow__v1__get_instance_response__descriptor, w->error,
            sizeof w->error);
    FREE(in);
    if (view == NULL)
        return false;
    bool ok = view->n_tasks == 1;
    if (!ok)
        snprintf(w->error, sizeof w->error, "job net: %zu tasks, want 1", view->n_tasks);
    else
        ok = task_call(w, w->rev, "CompleteTask", view->tasks[0]->id);
    FREE(view);
    if (!ok)
        return false;

    Workflow__V1__ActivateJobsRequest a = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    a.job_type = (char *)job_type;
    a.worker = "load";
    a.max_jobs = 2;
    Google__Protobuf__Duration wait = GOOGLE__PROTOBUF__DURATION__INIT;
    wait.nanos = 300 * 1000000;
    a.wait = &wait;
    Workflow__V1__ActivateJobsResponse *jobs =
        rpc(w->me, "ActivateJobs", &a, &workflow__v1__activate_jobs_response__descriptor, w->error,
            sizeof w->error);
    if (jobs == NULL)
        return false;
    for (size_t i = 0; ok && i < jobs->n_jobs; i++) {
        Workflow__V1__Job *j = jobs->jobs[i];
        void *r;
        /* Every third first attempt fails and is retried after 20 ms. */
        if (j->attempt == 1 && (w->jobs_done + w->jobs_failed) % 3 == 0) {
            Workflow__V1__FailJobRequest f = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
            Google__Protobuf__Duration backoff = GOOGLE__PROTOBUF__DURATION__INIT;
            backoff.nanos = 20 * 1000000;
            f.job_key = j->key;
            f.error_message = "flaky";
            f.backoff_override = &backoff;
            r = rpc(w->me, "FailJob", &f, &workflow__v1__fail_job_response__descriptor, w->error,
                    sizeof w->error);
            w->jobs_failed++;
        } else {
            Workflow__V1__CompleteJobRequest c = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
            c.job_key = j->key;
            c.variables_json = "{\"charged\":true}";
            r = rpc(w->me, "CompleteJob", &c, &workflow__v1__complete_job_response__descriptor,
                    w->error, sizeof w->error);
            w->jobs_done++;
        }
        ok = r != NULL;
        if (r != NULL)
            FREE(r);
    }
    FREE(jobs);
    return ok;
}

static bool
send_paid(struct worker *w, const char *order, int64_t ttl_ms)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    Google__Protobuf__Duration ttl = GOOGLE__PROTOBUF__DURATION__INIT;
    agg.type = "order";
    agg.id = (char *)order;
    req.name = "paid";
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &agg;
    req.payload_json = "{\"paid\":true}";
    if (ttl_ms > 0) {
        ttl.seconds = ttl_ms / 1000;
        req.buffer_ttl = &ttl;
    }
    Workflow__V1__SendSignalResponse *r =
        rpc(w->me, "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, w->error,
            sizeof w->error);
    if (r == NULL)
        return false;
    w->signals++;
    FREE(r);
    return true;
}

/* The signal-or-timeout net, for a fresh order: the signal is buffered
 * before the start, sent after it, or never sent (the timeout fires). */
static bool
wait_flow(struct worker *w, int round)
{
    char order[96];
    snprintf(order, sizeof order, "%s-%d-%d", tenant, w->index, round);
    if (round % 3 == 0 && !send_paid(w, order, 60000))
        return false;
    Workflow__V1__Instance *in = start_in(w, wait_key, order);
    if (in == NULL)
        return false;
    FREE(in);
    return round % 3 != 1 || send_paid(w, order, 0);
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    char self[16];
    snprintf(self, sizeof self, "w%d", w->index);
    int64_t until = wf_mono_ms() + LOAD_MS;
    for (int round = 0; wf_mono_ms() < until; round++) {
        /* Threads 0-3 and 4-7 ... each cover the three flows; the fourth
         * of every group rotates through them. */
        int kind = w->index % 4 == 3 ? round % 3 : w->index % 4;
        bool ok = kind == 0 ? adhoc_flow(w, self) : kind == 1 ? job_flow(w) : wait_flow(w, round);
        if (!ok)
            return NULL;
        w->flows++;
    }
    return NULL;
}

/* ---- the watcher ---------------------------------------------------------------------------- */

struct seen {
    int64_t sequence;
    const char *type; /* static enum name, without EVENT_TYPE_ */
    char instance_id[40];
};

struct watcher {
    wf_client *client;
    struct seen *ev;
    size_t n, cap;
    _Atomic int64_t last; /* last sequence received */
    atomic_bool stop;     /* set by the test: return after the next event */
    int not_increasing;   /* events whose sequence was not above the previous one */
    char error[768];
};

static const char *
type_name(int type)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&workflow__v1__event_type__descriptor, type);
    return v != NULL ? v->name + strlen("EVENT_TYPE_") : "?";
}

static void *
watcher_main(void *arg)
{
    struct watcher *w = arg;
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.follow = 1;
    wf_client_call_opts o = {.timeout_ms = LOAD_MS + 90000};
    wf_client_stream *s = wf_client_stream_open(w->client, SVC "WatchEvents", &req.base, &o);
    if (s == NULL) {
        snprintf(w->error, sizeof w->error, "WatchEvents did not open");
        return NULL;
    }
    while (!atomic_load(&w->stop)) {
        ProtobufCMessage *m;
        wf_client_status st;
        if (wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st) !=
            1) {
            snprintf(w->error, sizeof w->error, "the stream ended after %zu events: %s (%s): %s",
                     w->n, wf_client_code_name(st.code), st.reason, st.message);
            break;
        }
        Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)m)->event;
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            w->ev = realloc(w->ev, w->cap * sizeof *w->ev);
        }
        struct seen *x = &w->ev[w->n++];
        x->sequence = e->sequence;
        x->type = type_name(e->type);
        snprintf(x->instance_id, sizeof x->instance_id, "%s", e->instance_id);
        if (e->sequence <= atomic_load(&w->last))
            w->not_increasing++;
        else
            atomic_store(&w->last, e->sequence);
        FREE(m);
    }
    wf_client_stream_close(s);
    return NULL;
}

/* ---- the events table, read directly --------------------------------------------------- */

struct row {
    int64_t sequence;
    char type[40];
    char instance_id[40];
};

/* The tenant's sequenced events up to `upto`, and how many are not
 * sequenced yet and the largest sequence (for the catch-up wait). */
typedef struct table {
    struct row *rows;
    size_t n;
    long unsequenced;
    int64_t max;
} table;

static void
read_pg(PGconn *db, int64_t upto, table *t)
{
    const char *p[] = {tenant};
    PGresult *r = PQexecParams(db,
                               "SELECT count(*) FILTER (WHERE sequence IS NULL), "
                               "coalesce(max(sequence), 0) FROM events WHERE tenant_id = $1",
                               1, NULL, p, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    t->unsequenced = atol(PQgetvalue(r, 0, 0));
    t->max = atoll(PQgetvalue(r, 0, 1));
    PQclear(r);
    if (upto <= 0)
        return;
    char upto_s[32];
    snprintf(upto_s, sizeof upto_s, "%lld", (long long)upto);
    const char *q[] = {tenant, upto_s};
    r = PQexecParams(db,
                     "SELECT sequence, type, coalesce(instance_id, '') FROM events "
                     "WHERE tenant_id = $1 AND sequence <= $2 ORDER BY sequence",
                     2, NULL, q, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    t->n = (size_t)PQntuples(r);
    t->rows = calloc(t->n + 1, sizeof *t->rows);
    for (size_t i = 0; i < t->n; i++) {
        t->rows[i].sequence = atoll(PQgetvalue(r, (int)i, 0));
        snprintf(t->rows[i].type, sizeof t->rows[i].type, "%s", PQgetvalue(r, (int)i, 1));
        snprintf(t->rows[i].instance_id, sizeof t->rows[i].instance_id, "%s",
                 PQgetvalue(r, (int)i, 2));
    }
    PQclear(r);
}

static void
read_memory(int64_t upto, table *t)
{
    size_t cap = 0;
    int64_t after = 0;
    t->unsequenced = 0;
    t->max = 0;
    for (;;) {
        wf_arena *a = wf_arena_new();
        wf_store_ctx sc = {tenant, 0, a};
        wf_event_filter f = {0};
        wf_event_row *ev;
        size_t n;
        wf_error err;
        ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, after, &f, 1000, &ev, &n, &err),
                         WF_OK);
        for (size_t i = 0; i < n; i++) {
            t->max = ev[i].sequence;
            if (upto <= 0 || ev[i].sequence > upto)
                continue;
            if (t->n == cap) {
                cap = cap ? cap * 2 : 4096;
                t->rows = realloc(t->rows, cap * sizeof *t->rows);
            }
            struct row *x = &t->rows[t->n++];
            x->sequence = ev[i].sequence;
            snprintf(x->type, sizeof x->type, "%s", ev[i].type);
            snprintf(x->instance_id, sizeof x->instance_id, "%s",
                     ev[i].instance_id != NULL ? ev[i].instance_id : "");
        }
        if (n > 0)
            after = ev[n - 1].sequence;
        wf_arena_free(a);
        if (n < 1000)
            return;
    }
}

static void
read_table(PGconn *db, int64_t upto, table *t)
{
    memset(t, 0, sizeof *t);
    if (db != NULL)
        read_pg(db, upto, t);
    else
        read_memory(upto, t);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- the test ------------------------------------------------------------------------------- */

static void
deploy_nets(wf_client *dev)
{
    char err[768];
    /* s -> review (USER rev) -> reviewed -> charge (AUTO job) -> e */
    nb *n = net_new(job_key);
    place(n, "s", START);
    place(n, "reviewed", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *review = trans(n, "review", T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 1, sizeof *a->ids);
    a->ids[a->n_ids++] = "rev";
    review->assignee = a;
    Workflow__V1__Transition *charge = trans(n, "charge", T_AUTO);
    charge->job_type = (char *)job_type;
    Workflow__V1__RetryPolicy *retry = wf_arena_calloc(ta, 1, sizeof *retry);
    workflow__v1__retry_policy__init(retry);
    retry->max_attempts = 5;
    charge->retry = retry;
    arc(n, "s", "review");
    arc(n, "review", "reviewed");
    arc(n, "reviewed", "charge");
    arc(n, "charge", "e");
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = &n->d;
    void *r = rpc(dev, "DeployDefinition", &req,
                  &workflow__v1__deploy_definition_response__descriptor, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    FREE(r);

    /* s -> paid (MSG by aggregate) -> e, s -> timeout (150 ms) -> late
     * -> chase (silent AUTO) -> e */
    n = net_new(wait_key);
    place(n, "s", START);
    place(n, "late", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *paid = trans(n, "paid", T_MSG);
    paid->signal_name = "paid";
    paid->correlation = C_AGGREGATE;
    trans(n, "timeout", T_TIME)->delay = dur(150);
    trans(n, "chase", T_AUTO);
    arc(n, "s", "paid");
    arc(n, "paid", "e");
    arc(n, "s", "timeout");
    arc(n, "timeout", "late");
    arc(n, "late", "chase");
    arc(n, "chase", "e");
    req.definition = &n->d;
    r = rpc(dev, "DeployDefinition", &req, &workflow__v1__deploy_definition_response__descriptor,
            err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    FREE(r);
}

WF_TEST(test_watcher_under_load_gets_every_event_once)
{
    tenant = u("load");
    job_key = "load-job";
    wait_key = "load-wait";
    job_type = "load-charge";
    PGconn *db = NULL;
    if (wf_test_store_is_pg()) {
        db = PQconnectdb(getenv("WF_TEST_PG_DSN"));
        ck_assert_msg(PQstatus(db) == CONNECTION_OK, "%s", PQerrorMessage(db));
    }
    deploy_nets(as_tenant(tenant, "dev"));
    /* The ad-hoc definition is made by its first start, before the load. */
    struct worker first = {.me = as_tenant(tenant, "dev")};
    Workflow__V1__Instance *made = start_in(&first, "load-adhoc", NULL);
    ck_assert_msg(made != NULL, "%s", first.error);
    FREE(made);
    wf_scheduler *sched = scheduler_start(20);

    static struct watcher watcher;
    watcher.client = as_tenant(tenant, NULL);
    pthread_t wt;
    pthread_create(&wt, NULL, watcher_main, &watcher);

    static struct worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        char *self = wf_arena_printf(ta, "w%d", i);
        w[i] = (struct worker){
            .index = i, .me = as_tenant(tenant, self), .rev = as_tenant(tenant, "rev")};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    int flows = 0, jobs_done = 0, jobs_failed = 0, signals = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        flows += w[i].flows;
        jobs_done += w[i].jobs_done;
        jobs_failed += w[i].jobs_failed;
        signals += w[i].signals;
    }
    /* Let the last timeouts (150 ms) fire, then no writer is left. */
    sleep_ms(400);
    wf_scheduler_stop(sched);
    for (int i = 0; i < THREADS; i++)
        ck_assert_msg(w[i].error[0] == '\0', "thread %d: %s", i, w[i].error);

    /* Caught up: every event of the tenant is sequenced and the watcher
     * has received the last one. */
    table t;
    int64_t t0 = wf_mono_ms();
    for (;;) {
        read_table(db, 0, &t);
        if (t.unsequenced == 0 && atomic_load(&watcher.last) == t.max)
            break;
        ck_assert_msg(watcher.error[0] == '\0', "watcher: %s", watcher.error);
        ck_assert_msg(wf_mono_ms() - t0 < 20000,
                      "the watcher did not catch up in 20 s: at %lld of %lld, %ld unsequenced",
                      (long long)atomic_load(&watcher.last), (long long)t.max, t.unsequenced);
        sleep_ms(50);
    }
    int64_t upto = t.max;
    double caught_up_ms = (double)(wf_mono_ms() - t0);

    /* Stop the watcher: it returns after the next event, which a new
     * instance provides. */
    atomic_store(&watcher.stop, true);
    Workflow__V1__Instance *sentinel = start_in(&first, "load-adhoc", NULL);
    ck_assert_msg(sentinel != NULL, "%s", first.error);
    FREE(sentinel);
    pthread_join(wt, NULL);
    ck_assert_msg(watcher.error[0] == '\0', "watcher: %s", watcher.error);

    read_table(db, upto, &t);
    if (db != NULL)
        PQfinish(db);
    size_t received = 0;
    while (received < watcher.n && watcher.ev[received].sequence <= upto)
        received++;
    const char **ids = calloc(received + 1, sizeof *ids);
    size_t instances = 0;
    for (size_t i = 0; i < received; i++)
        ids[i] = watcher.ev[i].instance_id;
    qsort(ids, received, sizeof *ids, cmp_str);
    for (size_t i = 0; i < received; i++)
        instances += ids[i][0] != '\0' && (i == 0 || strcmp(ids[i], ids[i - 1]) != 0);
    free(ids);
    printf("%s: watcher under load: %zu events of %zu instances received by one watcher while "
           "%d threads ran %d flows (%d jobs completed, %d failed and retried, %d signals); "
           "caught up %.0f ms after the load\n",
           wf_test_store_name(), received, instances, THREADS, flows, jobs_done, jobs_failed,
           signals, caught_up_ms);

    ck_assert_msg(watcher.not_increasing == 0, "%d events came out of sequence order or repeated",
                  watcher.not_increasing);
    ck_assert_int_gt(flows, THREADS);
    ck_assert_int_gt(jobs_failed, 0);
    /* Every row once, in order, and nothing else. */
    size_t i = 0;
    for (; i < received && i < t.n; i++) {
        const struct seen *a = &watcher.ev[i];
        const struct row *b = &t.rows[i];
        ck_assert_msg(a->sequence == b->sequence,
                      "event %zu: received sequence %lld, the table has %lld next (missing or "
                      "extra)",
                      i, (long long)a->sequence, (long long)b->sequence);
        ck_assert_msg(strcmp(a->type, b->type) == 0 && strcmp(a->instance_id, b->instance_id) == 0,
                      "sequence %lld: received %s of %s, the table has %s of %s",
                      (long long)a->sequence, a->type, a->instance_id, b->type, b->instance_id);
    }
    ck_assert_msg(received == t.n, "received %zu events, the table has %zu", received, t.n);
    free(t.rows);
    free(watcher.ev);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite(wf_test_store_is_pg() ? "e2e_watch_load_pg" : "e2e_watch_load",
                                     wf_test_store_name(), setup, teardown, 120));
}
