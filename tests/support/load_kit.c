/*
 * load_kit: helpers of the suites that load the server (see load_kit.h).
 */
#include "load_kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "wf_time.h"

int64_t
percentile(int64_t *v, size_t n, double p)
{
    if (n == 0)
        return -1;
    for (size_t i = 1; i < n; i++) /* insertion sort: a few thousand values at most */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    size_t k = (size_t)(p * (double)(n - 1) + 0.5);
    return v[k];
}

long long
started_calls(const char *method)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wf_rpc_server_render_metrics(ts.srv, f);
    fclose(f);
    char key[160];
    snprintf(key, sizeof key, "grpc_service=\"workflow.v1.WorkflowService\",grpc_method=\"%s\"} ",
             method);
    const char *at = strstr(text, key); /* started_total comes first; handled has a code */
    long long n = at != NULL ? atoll(at + strlen(key)) : -1;
    free(text);
    return n;
}

void
await_started(const char *method, long long n)
{
    int64_t until = wf_mono_ms() + 10000 * (int64_t)wf_test_time_scale();
    while (started_calls(method) < n && wf_mono_ms() < until)
        sleep_ms(10);
    long long got = started_calls(method);
    ck_assert_msg(got >= n, "%lld %s calls taken by the server, want %lld", got, method, n);
}

void
expr_isolate(int timeout_ms, int workers, int slow_ms)
{
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = timeout_ms,
                                         .memory_mb = 256,
                                         .workers = workers,
                                         .recycle_after = 1000,
                                         .slow_ms = slow_ms});
}

char *
slow_vars(wf_arena *a, int n)
{
    char *s = wf_arena_alloc(a, 16 + 8 * (size_t)n);
    ck_assert_ptr_nonnull(s);
    size_t k = (size_t)sprintf(s, "{\"a\":[");
    for (int i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "%s%d", i ? "," : "", i);
    sprintf(s + k, "]}");
    return s;
}

char *
deploy_slow(void)
{
    char *key = u("slow");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "mid", NORMAL);
    place(n, "e", END);
    trans(n, "go", T_AUTO);
    trans(n, "fin", T_AUTO);
    arc(n, "s", "go");
    arc(n, "mid", "fin");
    arc(n, "fin", "e");
    arc(n, "go", "mid")->guard = SLOW_GUARD;
    arc(n, "go", "e")->is_default = true;
    ck_assert_uint_eq(deploy(n)->n_errors, 0);
    return key;
}

char *
deploy_plain(void)
{
    char *key = u("plain");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    trans(n, "go", T_AUTO);
    arc(n, "s", "go");
    arc(n, "go", "e");
    ck_assert_uint_eq(deploy(n)->n_errors, 0);
    return key;
}

/* ---- raw definitions ------------------------------------------------------------------------ */

static Workflow__V1__Definition *
raw_net(wf_arena *a, const char *key, size_t np, size_t nt, size_t na)
{
    Workflow__V1__Definition *d = wf_arena_calloc(a, 1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    workflow__v1__definition__init(d);
    d->key = (char *)key;
    d->kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET;
    d->places = wf_arena_calloc(a, np, sizeof *d->places);
    d->transitions = wf_arena_calloc(a, nt, sizeof *d->transitions);
    d->arcs = wf_arena_calloc(a, na, sizeof *d->arcs);
    ck_assert(d->places != NULL && d->transitions != NULL && d->arcs != NULL);
    return d;
}

static void
raw_place(wf_arena *a, Workflow__V1__Definition *d, const char *id, Workflow__V1__PlaceKind kind)
{
    Workflow__V1__Place *p = wf_arena_calloc(a, 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    workflow__v1__place__init(p);
    p->id = (char *)id;
    p->kind = kind;
    d->places[d->n_places++] = p;
}

static void
raw_trans(wf_arena *a, Workflow__V1__Definition *d, const char *id)
{
    Workflow__V1__Transition *t = wf_arena_calloc(a, 1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    workflow__v1__transition__init(t);
    t->id = (char *)id;
    t->trigger = T_AUTO;
    d->transitions[d->n_transitions++] = t;
}

static Workflow__V1__Arc *
raw_arc(wf_arena *a, Workflow__V1__Definition *d, const char *src, const char *dst)
{
    Workflow__V1__Arc *r = wf_arena_calloc(a, 1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    workflow__v1__arc__init(r);
    r->source = (char *)src;
    r->target = (char *)dst;
    d->arcs[d->n_arcs++] = r;
    return r;
}

Workflow__V1__Definition *
wide_net(wf_arena *a, const char *key, int nguards, int salt)
{
    Workflow__V1__Definition *d = raw_net(a, key, (size_t)nguards + 2, 2, 2 * (size_t)nguards + 3);
    raw_place(a, d, "s", START);
    raw_place(a, d, "e", END);
    raw_trans(a, d, "go");
    raw_trans(a, d, "fin");
    raw_arc(a, d, "s", "go");
    raw_arc(a, d, "fin", "e");
    raw_arc(a, d, "go", "e")->is_default = true;
    for (int i = 0; i < nguards; i++) {
        char *m = wf_arena_printf(a, "m%d", i);
        raw_place(a, d, m, NORMAL);
        raw_arc(a, d, "go", m)->guard = wf_arena_printf(a, ".x > %d", salt + i);
        raw_arc(a, d, m, "fin");
    }
    return d;
}

Workflow__V1__Definition *
tangled_net(wf_arena *a, const char *key)
{
    enum { NP = 100, NT = 100, NA = 400 };
    Workflow__V1__Definition *d = raw_net(a, key, NP, NT, NA);
    char *p[NP], *t[NT];
    for (int i = 0; i < NP; i++) {
        p[i] = wf_arena_printf(a, "p%d", i);
        raw_place(a, d, p[i], i == 0 ? START : i == NP - 1 ? END : NORMAL);
    }
    for (int i = 0; i < NT; i++) {
        t[i] = wf_arena_printf(a, "t%d", i);
        raw_trans(a, d, t[i]);
    }
    for (int i = 0; i < NT - 1; i++) {
        raw_arc(a, d, p[i], t[i]);
        raw_arc(a, d, t[i], p[i + 1]);
    }
    raw_arc(a, d, p[NP - 2], t[NT - 1]);
    raw_arc(a, d, t[NT - 1], p[NP - 1]);
    for (int k = 0; k < 50; k++)
        for (int j = 0; j < 4; j++)
            raw_arc(a, d, t[50 + k], p[1 + (4 * k + j) % 29]);
    return d;
}
