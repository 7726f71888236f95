/*
 * End-to-end tests of the bulkheads, on the memory store and on Postgres
 * (WF_TEST_STORE=pg): the expensive classes of work (diagram layouts,
 * compiles of definitions' expressions, expression evaluations past their
 * budget) run beside the shared threads, never on them.
 *
 * - Sixteen callers of each class at once, while a prober on a connection
 *   of its own calls GetInstance and StartInstance: their p99 stays within
 *   50 ms (times the test time scale), and the classes that fill up refuse
 *   with RESOURCE_EXHAUSTED BULKHEAD_FULL, a RetryInfo and the class in the
 *   ErrorInfo's metadata.
 * - A full class refuses at once, whatever the deadline of the call; work
 *   the class does not cover (DOT, a diagram already laid out, an
 *   expression within its budget) goes on.
 *
 * Figures are printed so that they can be quoted.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "expr.h"
#include "load_kit.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"
#define F_SVG WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_SVG
#define F_DOT WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT

/* Bounds hold on a quiet machine; sanitizers and load stretch them. */
#define SLOW ((int64_t)wf_test_time_scale())

/* The cheap calls' p99 target on a quiet machine, in ms. */
#define CHEAP_P99_MS 50

/* Callers per class. */
#define NLOAD 16

/* Rounds of the prober (each a GetInstance and a StartInstance). */
#define PROBES 200

static void
setup8(void)
{
    const char *env[] = {"WF_THREADS=8", NULL};
    setup_with(env);
}

static void
setup_ones(void)
{
    const char *env[] = {"WF_THREADS=4", "WF_BULKHEAD_DIAGRAM=1", "WF_BULKHEAD_EXPR=1",
                         "WF_BULKHEAD_COMPILE=1", NULL};
    setup_with(env);
}

/* The value of metadata key in st ("" when absent). */
static const char *
metadata_of(const wf_client_status *st, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < st->nmetadata && i < 8; i++)
        if (strncmp(st->metadata[i], key, n) == 0 && st->metadata[i][n] == '=')
            return st->metadata[i] + n + 1;
    return "";
}

/* ---- the loaders ------------------------------------------------------------------------------
 */

enum load_class { L_DIAGRAM, L_COMPILE, L_EXPR };

static const char *const class_names[] = {"diagram", "compile", "expression"};

typedef struct loader {
    enum load_class cls;
    int idx;
    const char *slow_key; /* L_EXPR */
    const char *vars;     /* L_EXPR */
    atomic_int *stop;
    /* outcomes */
    int ok, limit, late, refused, other, retry_ms;
    char refused_class[32];
    char other_text[192];
    pthread_t th;
} loader;

/* Files st under the loader's outcomes; true when the caller should wait
 * the RetryInfo delay and ask again. */
static bool
file_outcome(loader *l, int code, const wf_client_status *st)
{
    if (code == GRPC_STATUS_OK) {
        l->ok++;
        return false;
    }
    if (code == GRPC_STATUS_RESOURCE_EXHAUSTED && strcmp(st->reason, "BULKHEAD_FULL") == 0) {
        l->refused++;
        l->retry_ms = st->retry_delay_ms;
        snprintf(l->refused_class, sizeof l->refused_class, "%s", metadata_of(st, "bulkhead"));
        return true;
    }
    /* A guard at its time limit; a compile in a worker behind the
     * server's threads for CPU past its budget on a loaded machine. */
    if (l->cls != L_DIAGRAM && strcmp(st->reason, "EXPRESSION_LIMIT") == 0) {
        l->limit++;
        return false;
    }
    /* A layout behind others (and behind the server's threads for CPU)
     * may outlast its caller's deadline on a loaded machine. */
    if (l->cls == L_DIAGRAM && code == GRPC_STATUS_DEADLINE_EXCEEDED) {
        l->late++;
        return false;
    }
    l->other++;
    snprintf(l->other_text, sizeof l->other_text, "%.20s %.30s: %.80s", wf_client_code_name(code),
             st->reason, st->message);
    return false;
}

/* Waits the retry delay (at most 2 s) unless told to stop. */
static void
back_off(loader *l, int ms)
{
    for (int waited = 0; waited < ms && waited < 2000 && !atomic_load(l->stop); waited += 20)
        sleep_ms(20);
}

/* Deploys a fresh tangled net and asks for its SVG until it is given. */
static void
diagram_round(loader *l, wf_client *c, wf_arena *a, int round)
{
    char *key = wf_arena_printf(a, "%s-%d-%d", u("tangle"), l->idx, round);
    Workflow__V1__DeployDefinitionRequest dreq = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    dreq.definition = tangled_net(a, key);
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    wf_client_call_opts o = {.timeout_ms = (int)(30000 * SLOW)};
    int code =
        wf_client_call(c, SVC "DeployDefinition", &dreq.base,
                       &workflow__v1__deploy_definition_response__descriptor, &resp, &o, &st);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    if (code != GRPC_STATUS_OK) {
        file_outcome(l, code, &st);
        return;
    }
    for (int tries = 0; tries < 1000 && !atomic_load(l->stop); tries++) {
        Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
        req.definition_key = key;
        req.format = F_SVG;
        wf_client_call_opts go = {.timeout_ms = 60000};
        code = wf_client_call(c, SVC "GetDiagram", &req.base,
                              &workflow__v1__get_diagram_response__descriptor, &resp, &go, &st);
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        if (!file_outcome(l, code, &st))
            return;
        back_off(l, st.retry_delay_ms);
    }
}

/* DeployDefinition{validate_only} of 100 guards no cache has seen. */
static void
compile_round(loader *l, wf_client *c, wf_arena *a, int round)
{
    static atomic_int salts;
    int salt = (int)(wf_now_us() % 100000) * 10000 + atomic_fetch_add(&salts, 1) * 100;
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition =
        wide_net(a, wf_arena_printf(a, "%s-%d-%d", u("wide"), l->idx, round), 100, salt);
    req.validate_only = true;
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    wf_client_call_opts o = {.timeout_ms = 60000};
    int code =
        wf_client_call(c, SVC "DeployDefinition", &req.base,
                       &workflow__v1__deploy_definition_response__descriptor, &resp, &o, &st);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    if (file_outcome(l, code, &st))
        back_off(l, st.retry_delay_ms);
}

/* StartInstance of the net whose guard runs to its 1 s limit. */
static void
expr_round(loader *l, wf_client *c)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    req.definition_key = (char *)l->slow_key;
    req.variables_json = (char *)l->vars;
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    wf_client_call_opts o = {.timeout_ms = 60000};
    int code = wf_client_call(c, SVC "StartInstance", &req.base,
                              &workflow__v1__start_instance_response__descriptor, &resp, &o, &st);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    if (file_outcome(l, code, &st))
        back_off(l, st.retry_delay_ms);
}

static void *
load(void *arg)
{
    loader *l = arg;
    wf_client *c = wf_test_client(&ts, NULL, NULL, "load");
    for (int round = 0; round < 10000 && !atomic_load(l->stop); round++) {
        wf_arena *a = wf_arena_new();
        if (l->cls == L_DIAGRAM)
            diagram_round(l, c, a, round);
        else if (l->cls == L_COMPILE)
            compile_round(l, c, a, round);
        else
            expr_round(l, c);
        wf_arena_free(a);
    }
    wf_client_free(c);
    return NULL;
}

/* ---- the prober --------------------------------------------------------------------------------
 */

typedef struct probe {
    int64_t get_us[PROBES], start_us[PROBES];
    size_t n;
    int failed;
    char failure[160];
} probe;

/* n rounds of GetInstance(id) and StartInstance(plain) on a connection of
 * their own, 20 ms apart, for at most a minute. */
static void
probe_cheap(probe *p, const char *id, const char *plain, size_t n)
{
    wf_client *c = wf_test_client(&ts, NULL, NULL, "prober");
    int64_t until = wf_mono_ms() + 60000;
    for (p->n = 0; p->n < n && p->n < PROBES && wf_mono_ms() < until; p->n++) {
        Workflow__V1__GetInstanceRequest g = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
        g.instance_id = (char *)id;
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        int64_t t0 = wf_now_us();
        wf_client_call_opts o = {.timeout_ms = 10000};
        int code = wf_client_call(c, SVC "GetInstance", &g.base,
                                  &workflow__v1__get_instance_response__descriptor, &resp, &o, &st);
        p->get_us[p->n] = wf_now_us() - t0;
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        if (code != 0 && p->failed++ == 0)
            snprintf(p->failure, sizeof p->failure, "GetInstance: %.100s", st.message);
        Workflow__V1__StartInstanceRequest s = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
        s.definition_key = (char *)plain;
        t0 = wf_now_us();
        code = wf_client_call(c, SVC "StartInstance", &s.base,
                              &workflow__v1__start_instance_response__descriptor, &resp, &o, &st);
        p->start_us[p->n] = wf_now_us() - t0;
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        if (code != 0 && p->failed++ == 0)
            snprintf(p->failure, sizeof p->failure, "StartInstance: %.100s", st.message);
        sleep_ms(20);
    }
    wf_client_free(c);
}

/* Sums a class's outcomes over its loaders and prints them. */
static loader
class_total(const loader *l, size_t n, enum load_class cls)
{
    loader t = {.cls = cls};
    for (size_t i = 0; i < n; i++) {
        if (l[i].cls != cls)
            continue;
        t.ok += l[i].ok;
        t.limit += l[i].limit;
        t.late += l[i].late;
        t.refused += l[i].refused;
        t.other += l[i].other;
        if (l[i].refused > 0) {
            t.retry_ms = l[i].retry_ms;
            memcpy(t.refused_class, l[i].refused_class, sizeof t.refused_class);
        }
        if (l[i].other > 0)
            memcpy(t.other_text, l[i].other_text, sizeof t.other_text);
    }
    printf(
        "  %s: %d ok, %d EXPRESSION_LIMIT, %d DEADLINE_EXCEEDED, %d BULKHEAD_FULL, %d other%s%s\n",
        class_names[cls], t.ok, t.limit, t.late, t.refused, t.other, t.other > 0 ? ": " : "",
        t.other_text);
    return t;
}

WF_CASE_TEST(wf_test_store_name(), test_cheap_calls_beside_16_callers_of_each_slow_class)
{
    expr_isolate(1000, 10, 0);
    char *slow = deploy_slow(), *plain = deploy_plain();
    const char *vars = slow_vars(ta, 400);
    wf_client_status st;
    Workflow__V1__Instance *inst = start_v(as("dev"), plain, 0, NULL, &st);
    ck_ok(st);
    char *id = wf_arena_strdup(ta, inst->id);

    /* The cheap calls alone first: the figures to compare with. */
    static probe alone;
    probe_cheap(&alone, id, plain, 30);
    int64_t a99 = percentile(alone.get_us, alone.n, 0.99),
            as99 = percentile(alone.start_us, alone.n, 0.99);
    printf("alone (%s): GetInstance p50 %.1f ms p99 %.1f ms; StartInstance p50 %.1f ms p99 %.1f "
           "ms\n",
           wf_test_store_name(), percentile(alone.get_us, alone.n, 0.5) / 1e3, a99 / 1e3,
           percentile(alone.start_us, alone.n, 0.5) / 1e3, as99 / 1e3);

    static loader l[3 * NLOAD];
    atomic_int stop = 0;
    long long before[3] = {started_calls("GetDiagram"), started_calls("DeployDefinition"),
                           started_calls("StartInstance")};
    for (int i = 0; i < 3 * NLOAD; i++) {
        l[i] = (loader){.cls = (enum load_class)(i % 3),
                        .idx = i,
                        .slow_key = slow,
                        .vars = vars,
                        .stop = &stop};
        pthread_create(&l[i].th, NULL, load, &l[i]);
    }
    /* Every class has sixteen callers in the server before probing (or as
     * many as a starved pool let in within 20 s). */
    const char *methods[3] = {"GetDiagram", "DeployDefinition", "StartInstance"};
    long long want[3] = {before[0] + NLOAD, before[1] + 2 * NLOAD, before[2] + NLOAD};
    for (int k = 0; k < 3; k++)
        for (int64_t until = wf_mono_ms() + 20000; started_calls(methods[k]) < want[k];) {
            if (wf_mono_ms() > until)
                break;
            sleep_ms(10);
        }
    static probe p;
    int64_t t0 = wf_mono_ms();
    probe_cheap(&p, id, plain, PROBES);
    int64_t probe_ms = wf_mono_ms() - t0;
    atomic_store(&stop, 1);
    for (int i = 0; i < 3 * NLOAD; i++)
        pthread_join(l[i].th, NULL);

    int64_t g50 = percentile(p.get_us, p.n, 0.5), g99 = percentile(p.get_us, p.n, 0.99);
    int64_t s50 = percentile(p.start_us, p.n, 0.5), s99 = percentile(p.start_us, p.n, 0.99);
    printf("bulkheads (%s, 8 threads, %d callers of each class, %lld ms of probing): GetInstance "
           "p50 %.1f ms p99 %.1f ms max %.1f ms; StartInstance p50 %.1f ms p99 %.1f ms max %.1f "
           "ms\n",
           wf_test_store_name(), NLOAD, (long long)probe_ms, g50 / 1e3, g99 / 1e3,
           p.get_us[p.n - 1] / 1e3, s50 / 1e3, s99 / 1e3, p.start_us[p.n - 1] / 1e3);
    loader d = class_total(l, 3 * NLOAD, L_DIAGRAM);
    loader cc = class_total(l, 3 * NLOAD, L_COMPILE);
    loader e = class_total(l, 3 * NLOAD, L_EXPR);
    fflush(stdout);
    ck_assert_msg(p.failed == 0, "%d cheap calls failed: %s", p.failed, p.failure);
    /* Each class was loaded: sixteen callers got at least one answer. */
    for (int k = 0; k < 3; k++)
        ck_assert_msg(started_calls(methods[k]) >= want[k], "%s: %lld calls, want %lld", methods[k],
                      started_calls(methods[k]), want[k]);
    ck_assert_msg(d.other == 0 && cc.other == 0 && e.other == 0, "unexpected outcomes");
    /* Sixteen layouts of seconds each, sixteen guards at their limit: both
     * classes are full, and say so. */
    ck_assert_int_gt(d.refused, 0);
    ck_assert_str_eq(d.refused_class, "diagram");
    ck_assert_int_gt(d.retry_ms, 0);
    ck_assert_int_gt(e.refused, 0);
    ck_assert_str_eq(e.refused_class, "expression");
    ck_assert_int_gt(e.retry_ms, 0);
    ck_assert_int_gt(cc.ok, 0);
    if (cc.refused > 0)
        ck_assert_str_eq(cc.refused_class, "compile");
    /* The cheap calls never waited behind them: p99 within 50 ms on a
     * quiet machine. The bound stretches with the load as it stood during
     * the run too, and twice over: on a shared machine the load moves
     * within the minute its average reports, and a Postgres call is
     * several processes to schedule. Before the bulkheads, the probes
     * waited seconds for a thread. */
    int64_t bound = 2 * CHEAP_P99_MS * 1000 * (int64_t)wf_test_time_scale_now();
    ck_assert_msg(g99 <= bound, "GetInstance p99 %lld us, bound %lld us", (long long)g99,
                  (long long)bound);
    ck_assert_msg(s99 <= bound, "StartInstance p99 %lld us, bound %lld us", (long long)s99,
                  (long long)bound);
}
END_TEST

/* ---- a full class ------------------------------------------------------------------------------
 */

/* workflow_bulkhead_active of class in the server's metrics. */
static long long
bulkhead_metric(const char *family, const char *cls)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wf_rpc_server_render_metrics(ts.srv, f);
    fclose(f);
    char key[128];
    snprintf(key, sizeof key, "%s{bulkhead=\"%s\"} ", family, cls);
    const char *at = strstr(text, key);
    long long n = at != NULL ? atoll(at + strlen(key)) : -1;
    free(text);
    return n;
}

/* Waits (bounded) until a call is in class cls. */
static void
await_in_class(const char *cls)
{
    int64_t until = wf_mono_ms() + 20000 * SLOW;
    while (bulkhead_metric("workflow_bulkhead_active", cls) < 1 && wf_mono_ms() < until)
        sleep_ms(5);
    ck_assert_int_eq(bulkhead_metric("workflow_bulkhead_active", cls), 1);
}

typedef struct bg_call {
    const char *method;
    const ProtobufCMessage *req;
    const ProtobufCMessageDescriptor *resp;
    int code;
    wf_client_status st;
    pthread_t th;
} bg_call;

static void *
bg_run(void *arg)
{
    bg_call *b = arg;
    wf_client *c = wf_test_client(&ts, NULL, NULL, "holder");
    char path[128];
    snprintf(path, sizeof path, SVC "%s", b->method);
    ProtobufCMessage *resp = NULL;
    wf_client_call_opts o = {.timeout_ms = 120000};
    b->code = wf_client_call(c, path, b->req, b->resp, &resp, &o, &b->st);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    wf_client_free(c);
    return NULL;
}

/* Calls method as c; its code, st, and the milliseconds it took. */
static int
timed_call(wf_client *c, const char *method, const ProtobufCMessage *req,
           const ProtobufCMessageDescriptor *d, wf_client_status *st, int64_t *ms)
{
    char path[128];
    snprintf(path, sizeof path, SVC "%s", method);
    ProtobufCMessage *resp = NULL;
    int64_t t0 = wf_mono_ms();
    int code = wf_client_call(c, path, req, d, &resp, NULL, st);
    *ms = wf_mono_ms() - t0;
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return code;
}

/* RESOURCE_EXHAUSTED BULKHEAD_FULL naming cls, with its RetryInfo, within
 * a bound far below the work of the class. */
static void
ck_refused(int code, const wf_client_status *st, const char *cls, int64_t ms)
{
    ck_assert_msg(code == GRPC_STATUS_RESOURCE_EXHAUSTED, "%s: %s %s", cls,
                  wf_client_code_name(code), st->message);
    ck_assert_str_eq(st->reason, "BULKHEAD_FULL");
    ck_assert_str_eq(metadata_of(st, "bulkhead"), cls);
    ck_assert_int_eq(st->retry_delay_ms, 1000);
    ck_assert_msg(ms < 500 * SLOW, "%s refused after %lld ms", cls, (long long)ms);
}

static Workflow__V1__GetDiagramRequest *
diagram_req(const char *key, int format)
{
    Workflow__V1__GetDiagramRequest *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__get_diagram_request__init(r);
    r->definition_key = (char *)key;
    r->format = format;
    return r;
}

static void
deploy_raw(Workflow__V1__Definition *d)
{
    wf_client_status st;
    deploy_d(as("dev"), d, false, &st);
    ck_ok(st);
}

WF_CASE_TEST("full", test_a_full_diagram_bulkhead_refuses_at_once)
{
    char *small = deploy_plain(), *a = u("tangle-a"), *b = u("tangle-b");
    deploy_raw(tangled_net(ta, a));
    deploy_raw(tangled_net(ta, b));
    wf_client *c = as("reader");
    wf_client_status st;
    int64_t ms;
    /* Laid out before: served from the cache below. */
    ck_assert_int_eq(timed_call(c, "GetDiagram", &diagram_req(small, F_SVG)->base,
                                &workflow__v1__get_diagram_response__descriptor, &st, &ms),
                     0);
    bg_call hold = {.method = "GetDiagram",
                    .req = &diagram_req(a, F_SVG)->base,
                    .resp = &workflow__v1__get_diagram_response__descriptor};
    pthread_create(&hold.th, NULL, bg_run, &hold);
    await_in_class("diagram");
    int code = timed_call(c, "GetDiagram", &diagram_req(b, F_SVG)->base,
                          &workflow__v1__get_diagram_response__descriptor, &st, &ms);
    ck_refused(code, &st, "diagram", ms);
    /* What needs no layout goes on: DOT, a cached version, other calls. */
    ck_assert_int_eq(timed_call(c, "GetDiagram", &diagram_req(b, F_DOT)->base,
                                &workflow__v1__get_diagram_response__descriptor, &st, &ms),
                     0);
    ck_assert_int_eq(timed_call(c, "GetDiagram", &diagram_req(small, F_SVG)->base,
                                &workflow__v1__get_diagram_response__descriptor, &st, &ms),
                     0);
    ck_assert_ptr_nonnull(start_v(c, small, 0, NULL, &st));
    pthread_join(hold.th, NULL);
    ck_assert_msg(hold.code == 0, "the layout: %s", hold.st.message);
    ck_assert_int_eq(bulkhead_metric("workflow_bulkhead_refused_total", "diagram"), 1);
    ck_assert_int_eq(bulkhead_metric("workflow_bulkhead_active", "diagram"), 0);
}
END_TEST

WF_CASE_TEST("full", test_a_full_expression_bulkhead_refuses_at_once)
{
    expr_isolate(1000, 4, 0);
    char *slow = deploy_slow(), *plain = deploy_plain();
    Workflow__V1__StartInstanceRequest *req = wf_arena_calloc(ta, 1, sizeof *req);
    workflow__v1__start_instance_request__init(req);
    req->definition_key = slow;
    req->variables_json = slow_vars(ta, 400);
    bg_call hold = {.method = "StartInstance",
                    .req = &req->base,
                    .resp = &workflow__v1__start_instance_response__descriptor};
    pthread_create(&hold.th, NULL, bg_run, &hold);
    await_in_class("expression");
    wf_client *c = as("starter");
    wf_client_status st;
    int64_t ms;
    /* The same guard again: known to run past its budget, refused before
     * it starts. */
    int code = timed_call(c, "StartInstance", &req->base,
                          &workflow__v1__start_instance_response__descriptor, &st, &ms);
    ck_refused(code, &st, "expression", ms);
    ck_assert_ptr_nonnull(start_v(c, plain, 0, NULL, &st));
    pthread_join(hold.th, NULL);
    ck_assert_str_eq(hold.st.reason, "EXPRESSION_LIMIT"); /* it ran to its limit, beside */
    ck_assert_int_eq(bulkhead_metric("workflow_bulkhead_refused_total", "expression"), 1);
}
END_TEST

WF_CASE_TEST("full", test_a_full_compile_bulkhead_refuses_at_once)
{
    expr_isolate(1000, 4, 0);
    /* Guards of 60 comparisons each compile in tens of milliseconds in
     * libjq: 40 of them hold the bulkhead for a second or more. */
    int salt = (int)(wf_now_us() % 100000) * 1000;
    Workflow__V1__Definition *d = wide_net(ta, u("long"), 40, salt);
    for (size_t i = 0; i < d->n_arcs; i++) {
        if (d->arcs[i]->guard == NULL)
            continue;
        char *g = wf_arena_alloc(ta, 60 * 32);
        size_t k = 0;
        for (int t = 0; t < 60; t++)
            k += (size_t)sprintf(g + k, "%s.x%zu == %d", t ? " or " : "", i, salt + t);
        d->arcs[i]->guard = g;
    }
    Workflow__V1__DeployDefinitionRequest *hreq = wf_arena_calloc(ta, 1, sizeof *hreq);
    workflow__v1__deploy_definition_request__init(hreq);
    hreq->definition = d;
    hreq->validate_only = true;
    bg_call hold = {.method = "DeployDefinition",
                    .req = &hreq->base,
                    .resp = &workflow__v1__deploy_definition_response__descriptor};
    pthread_create(&hold.th, NULL, bg_run, &hold);
    await_in_class("compile");
    wf_client *c = as("dev");
    wf_client_status st;
    int64_t ms;
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = wide_net(ta, u("wide"), 100, salt + 100000);
    req.validate_only = true;
    int code = timed_call(c, "DeployDefinition", &req.base,
                          &workflow__v1__deploy_definition_response__descriptor, &st, &ms);
    ck_refused(code, &st, "compile", ms);
    /* A definition whose expressions are known needs no compile. */
    char *plain = deploy_plain();
    ck_assert_ptr_nonnull(plain);
    pthread_join(hold.th, NULL);
    ck_assert_msg(hold.code == 0, "the long compile: %s", hold.st.message);
    ck_assert_int_eq(bulkhead_metric("workflow_bulkhead_refused_total", "compile"), 1);
}
END_TEST

int
main(int argc, char **argv)
{
    /* The expression workers are this binary. */
    if (argc > 1 && strcmp(argv[1], WF_EXPR_WORKER_ARG) == 0)
        return wf_expr_worker_main(argc, argv);
    const wf_test_case cases[] = {
        {wf_test_store_name(), setup8, teardown, 280}, {"full", setup_ones, teardown, 240}, {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_bulkheads", cases));
}
