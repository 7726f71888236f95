/*
 * test_e2e_diagram: GetDiagram through the real gRPC client, on the store
 * WF_TEST_STORE names (memory and Postgres).
 *
 * A definition version as DOT and as SVG (every place and transition under
 * its id, the version asked for), an instance with its overlay (tokens, the
 * enabled job, then its incident in red), the current step of a STEPS
 * instance, an AD_HOC instance, and every refusal with its code and reason
 * (another tenant's ids are not found). A version is laid out once: its
 * instances are drawn over its cached layout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagram.h"
#include "net_kit.h"
#include "wf_id.h"

#define F_SVG WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_SVG
#define F_DOT WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT
#define STEPS_KIND WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS

static Workflow__V1__GetDiagramResponse *
diagram_c(wf_client *c, const char *key, int32_t version, const char *instance_id, int format,
          wf_client_status *st)
{
    Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    req.definition_key = (char *)(key != NULL ? key : "");
    req.version = version;
    req.instance_id = (char *)(instance_id != NULL ? instance_id : "");
    req.format = (Workflow__V1__DiagramFormat)format;
    return call(c, "GetDiagram", &req, &workflow__v1__get_diagram_response__descriptor, st);
}

static const char *
diagram(const char *key, int32_t version, const char *instance_id, int format)
{
    wf_client_status st;
    Workflow__V1__GetDiagramResponse *r =
        diagram_c(as(NULL), key, version, instance_id, format, &st);
    ck_ok(st);
    ck_assert_str_eq(r->content_type, format == F_SVG ? "image/svg+xml" : "text/vnd.graphviz");
    return r->content;
}

/* The DOT statement of node id (its line, without the newline). */
static char *
node_line(const char *dot, const char *id)
{
    char head[256];
    snprintf(head, sizeof head, "\n  \"%s\" [id=\"%s\"", id, id);
    const char *p = strstr(dot, head);
    ck_assert_msg(p != NULL, "no node %s in:\n%s", id, dot);
    const char *e = strchr(p + 1, '\n');
    return wf_arena_strndup(ta, p + 1, (size_t)(e - p - 1));
}

/* True when the SVG has the node id (ids here have no XML-special byte;
 * Graphviz writes '-' as &#45;). */
static bool
svg_has(const char *svg, const char *id)
{
    char attr[512];
    size_t n = (size_t)snprintf(attr, sizeof attr, "<g id=\"");
    for (const char *p = id; *p != '\0' && n + 8 < sizeof attr; p++)
        n += (size_t)snprintf(attr + n, sizeof attr - n, *p == '-' ? "&#45;" : "%c", *p);
    snprintf(attr + n, sizeof attr - n, "\" class=\"node\">");
    return strstr(svg, attr) != NULL;
}

/* s -> review (USER) -> mid -> work (AUTO job) -> e; mid -> poke (MSG) ->
 * e; review -> later -> remind (TIME) -> mid; work cancels "later". */
static nb *
every_trigger(const char *key, const char *type)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "mid", NORMAL);
    place(n, "later", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *review = trans(n, "review", T_USER);
    review->assignee = wf_arena_calloc(ta, 1, sizeof *review->assignee);
    workflow__v1__assignee__init(review->assignee);
    review->assignee->kind = A_USER;
    review->assignee->ids = wf_arena_calloc(ta, 1, sizeof(char *));
    review->assignee->ids[0] = "bob";
    review->assignee->n_ids = 1;
    Workflow__V1__Transition *work = trans(n, "work", T_AUTO);
    with_job(work, type, 1, 0);
    work->cancels = wf_arena_calloc(ta, 1, sizeof(char *));
    work->cancels[0] = "later";
    work->n_cancels = 1;
    trans(n, "remind", T_TIME)->delay = dur(60000);
    trans(n, "poke", T_MSG)->signal_name = "poked";
    arc(n, "s", "review");
    arc(n, "review", "mid")->weight = 2;
    arc(n, "review", "later");
    arc(n, "mid", "work")->weight = 2;
    arc(n, "work", "e");
    arc(n, "later", "remind");
    arc(n, "remind", "mid");
    arc(n, "mid", "poke");
    arc(n, "poke", "e");
    return n;
}

WF_TEST(test_definition_as_dot_and_svg)
{
    char *key = u("diag-def"), *type = u("ship");
    nb *n = every_trigger(key, type);
    ck_assert(deploy(n)->created);
    const char *dot = diagram(key, 0, NULL, F_DOT);
    ck_assert_ptr_nonnull(strstr(dot, "digraph \""));
    ck_assert_ptr_nonnull(strstr(dot, " v1 (NET)"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "s"), "shape=circle"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "e"), "shape=doublecircle"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "review"), "\\nUSER\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "work"), "shape=box"));
    char want[160];
    snprintf(want, sizeof want, "\\nAUTO job: %s\"", type);
    ck_assert_ptr_nonnull(strstr(node_line(dot, "work"), want));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "remind"), "\\nTIME after 1m\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "poke"), "\\nMSG poked\""));
    ck_assert_ptr_nonnull(strstr(dot, "\"review\" -> \"mid\" [id=\"arc 1\", label=\"2\"]"));
    ck_assert_ptr_nonnull(strstr(dot, "\"work\" -> \"later\" [id=\"cancel 1 0\", style=dashed"));
    /* The bare definition has no overlay. */
    ck_assert_ptr_null(strstr(dot, "token"));
    ck_assert_ptr_null(strstr(dot, "instance"));

    const char *svg = diagram(key, 0, NULL, F_SVG);
    ck_assert_ptr_nonnull(strstr(svg, "<?xml"));
    ck_assert_ptr_nonnull(strstr(svg, "<svg "));
    for (size_t i = 0; i < n->d.n_places; i++)
        ck_assert_msg(svg_has(svg, n->d.places[i]->id), "place %s", n->d.places[i]->id);
    for (size_t i = 0; i < n->d.n_transitions; i++)
        ck_assert_msg(svg_has(svg, n->d.transitions[i]->id), "transition %s",
                      n->d.transitions[i]->id);

    /* A second version; version 1 is still drawn when asked for. */
    trans(n, "extra", T_AUTO);
    arc(n, "mid", "extra");
    arc(n, "extra", "e");
    ck_assert(deploy(n)->created);
    ck_assert_ptr_nonnull(strstr(diagram(key, 0, NULL, F_DOT), " v2 (NET)"));
    ck_assert_ptr_nonnull(strstr(diagram(key, 0, NULL, F_DOT), "\"extra\" [id=\"extra\""));
    dot = diagram(key, 1, NULL, F_DOT);
    ck_assert_ptr_nonnull(strstr(dot, " v1 (NET)"));
    ck_assert_ptr_null(strstr(dot, "\"extra\""));
}
END_TEST

WF_TEST(test_instance_overlay_then_incident)
{
    char *key = u("diag-inst"), *type = u("charge");
    ck_assert(deploy(job_net(key, type, 1, 0))->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    const char *dot = diagram(NULL, 0, in->id, F_DOT);
    char want[160];
    snprintf(want, sizeof want, "\\ninstance %s: RUNNING\"", in->id);
    ck_assert_ptr_nonnull(strstr(dot, want));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "work"), "\\nenabled\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "work"), "fillcolor=\"#fff2a8\""));
    /* The job's token was consumed into its work item: s holds none. */
    ck_assert_ptr_null(strstr(node_line(dot, "e"), "token"));
    ck_assert_ptr_nonnull(strstr(diagram(NULL, 0, in->id, F_SVG), "fill=\"#fff2a8\""));

    /* The job fails for good: the instance is FAILED, work in red. */
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(fail_job(a->jobs[0]->key, "declined", 0, -1, &st), 0);
    dot = diagram(NULL, 0, in->id, F_DOT);
    snprintf(want, sizeof want, "\\ninstance %s: FAILED\\nincident JOB_FAILED\", fontcolor=red",
             in->id);
    ck_assert_ptr_nonnull(strstr(dot, want));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "work"), "\\nincident JOB_FAILED\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "work"), "color=red, fontcolor=red"));
    const char *svg = diagram(NULL, 0, in->id, F_SVG);
    ck_assert_ptr_nonnull(strstr(svg, "stroke=\"red\""));
    ck_assert(svg_has(svg, "work"));
}
END_TEST

/* A value of the server's metrics (the app's families), -1 when absent. */
static long long
app_metric(const char *series)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wf_app_render_metrics(&ts.app, f);
    fclose(f);
    char key[160];
    snprintf(key, sizeof key, "\n%s ", series);
    const char *at = strstr(text, key);
    long long n = at != NULL ? atoll(at + strlen(key)) : -1;
    free(text);
    return n;
}

WF_TEST(test_a_version_is_laid_out_once_for_all_its_instances)
{
    char *key = u("diag-once"), *type = u("charge");
    ck_assert(deploy(job_net(key, type, 1, 0))->created);
    long long layouts = app_metric("workflow_diagram_layouts_total");
    long long hits = app_metric("workflow_diagram_requests_total{cache=\"hit\"}");
    ck_assert_int_ge(layouts, 0);
    const char *bare = diagram(key, 0, NULL, F_SVG);
    ck_assert_int_eq(app_metric("workflow_diagram_layouts_total"), layouts + 1);
    wf_client_status st;
    const char *ids[3];
    for (int i = 0; i < 3; i++) {
        Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
        ck_ok(st);
        ids[i] = in->id;
    }
    for (int i = 0; i < 3; i++) {
        const char *svg = diagram(NULL, 0, ids[i], F_SVG);
        char want[160];
        snprintf(want, sizeof want, ">instance %s: RUNNING</text>", ids[i]);
        ck_assert_ptr_nonnull(strstr(svg, want));
        ck_assert_ptr_nonnull(strstr(svg, "fill=\"#fff2a8\""));
        ck_assert(svg_has(svg, "work"));
    }
    ck_assert_ptr_null(strstr(bare, "instance"));
    ck_assert_ptr_nonnull(strstr(diagram(key, 0, NULL, F_SVG), "<svg"));
    /* Four SVGs more, no layout more. */
    ck_assert_int_eq(app_metric("workflow_diagram_layouts_total"), layouts + 1);
    ck_assert_int_eq(app_metric("workflow_diagram_requests_total{cache=\"hit\"}"), hits + 4);
    ck_assert_int_ge(app_metric("workflow_diagram_cache_entries"), 1);
}
END_TEST

WF_TEST(test_tokens_on_places)
{
    char *key = u("diag-tokens");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "wait", NORMAL);
    place(n, "e", END);
    trans(n, "split", T_AUTO);
    trans(n, "poke", T_MSG)->signal_name = "poked";
    arc(n, "s", "split");
    arc(n, "split", "wait")->weight = 3;
    arc(n, "wait", "poke");
    arc(n, "poke", "e");
    ck_assert(deploy(n)->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    const char *dot = diagram(NULL, 0, in->id, F_DOT);
    ck_assert_ptr_nonnull(strstr(node_line(dot, "wait"), "\\n3 tokens\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "wait"), "fillcolor=\"#d6e9ff\""));
    ck_assert_ptr_null(strstr(node_line(dot, "s"), "token"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "poke"), "\\nenabled"));
    ck_assert_ptr_nonnull(strstr(diagram(NULL, 0, in->id, F_SVG), ">3 tokens<"));
}
END_TEST

WF_TEST(test_steps_current_step)
{
    char *key = u("diag-steps"), *type = u("pack");
    Workflow__V1__Definition *d = wf_arena_calloc(ta, 1, sizeof *d);
    workflow__v1__definition__init(d);
    d->key = key;
    d->kind = STEPS_KIND;
    d->steps = wf_arena_calloc(ta, 1, sizeof *d->steps);
    Workflow__V1__Step *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__step__init(s);
    s->id = "pack";
    s->name = "Pack the parcel";
    s->job = wf_arena_calloc(ta, 1, sizeof *s->job);
    workflow__v1__job_step__init(s->job);
    s->job->job_type = type;
    d->steps[0] = s;
    d->n_steps = 1;
    wf_client_status st;
    deploy_d(as("dev"), d, false, &st);
    ck_ok(st);
    ck_assert_ptr_nonnull(strstr(diagram(key, 0, NULL, F_DOT), " v1 (STEPS)"));
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    const char *dot = diagram(NULL, 0, in->id, F_DOT);
    const char *l = node_line(dot, "pack");
    ck_assert_ptr_nonnull(strstr(l, "label=\"Pack the parcel\\n(pack)"));
    ck_assert_ptr_nonnull(strstr(l, "\\ncurrent step\\nenabled\""));
    ck_assert_ptr_nonnull(strstr(l, "color=\"#1f6feb\""));
    const char *svg = diagram(NULL, 0, in->id, F_SVG);
    ck_assert(svg_has(svg, "pack"));
    ck_assert(svg_has(svg, "pack:ready"));
    ck_assert(svg_has(svg, ":start"));
    ck_assert(svg_has(svg, ":end"));
}
END_TEST

WF_TEST(test_ad_hoc_instance_is_a_note)
{
    char *key = u("diag-adhoc");
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    const char *dot = diagram(NULL, 0, in->id, F_DOT);
    ck_assert_ptr_nonnull(strstr(dot, " v1 (AD_HOC)"));
    ck_assert_ptr_nonnull(strstr(dot, "shape=note"));
    ck_assert_ptr_nonnull(strstr(diagram(key, 0, NULL, F_SVG), "<g id=\"ad hoc\" class=\"node\">"));
}
END_TEST

/* A chain of 101 places and 100 transitions: one node more than SVG takes. */
WF_TEST(test_net_above_the_svg_bound_is_dot_only)
{
    enum { NP = WF_DIAGRAM_MAX_SVG_NODES / 2 + 1, NT = NP - 1 };
    char *key = u("diag-big");
    Workflow__V1__Definition *d = wf_arena_calloc(ta, 1, sizeof *d);
    workflow__v1__definition__init(d);
    d->key = key;
    d->kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET;
    d->places = wf_arena_calloc(ta, NP, sizeof *d->places);
    d->transitions = wf_arena_calloc(ta, NT, sizeof *d->transitions);
    d->arcs = wf_arena_calloc(ta, 2 * NT, sizeof *d->arcs);
    for (int i = 0; i < NP; i++) {
        Workflow__V1__Place *p = wf_arena_calloc(ta, 1, sizeof *p);
        workflow__v1__place__init(p);
        p->id = wf_arena_printf(ta, "p%d", i);
        p->kind = i == 0 ? START : i == NP - 1 ? END : NORMAL;
        d->places[d->n_places++] = p;
    }
    for (int i = 0; i < NT; i++) {
        Workflow__V1__Transition *t = wf_arena_calloc(ta, 1, sizeof *t);
        workflow__v1__transition__init(t);
        t->id = wf_arena_printf(ta, "t%d", i);
        t->trigger = T_USER;
        t->assignee = wf_arena_calloc(ta, 1, sizeof *t->assignee);
        workflow__v1__assignee__init(t->assignee);
        t->assignee->kind = A_USER;
        t->assignee->ids = wf_arena_calloc(ta, 1, sizeof(char *));
        t->assignee->ids[0] = "bob";
        t->assignee->n_ids = 1;
        d->transitions[d->n_transitions++] = t;
        for (int k = 0; k < 2; k++) {
            Workflow__V1__Arc *a = wf_arena_calloc(ta, 1, sizeof *a);
            workflow__v1__arc__init(a);
            a->source = k == 0 ? d->places[i]->id : t->id;
            a->target = k == 0 ? t->id : d->places[i + 1]->id;
            d->arcs[d->n_arcs++] = a;
        }
    }
    wf_client_status st;
    deploy_d(as("dev"), d, false, &st);
    ck_ok(st);
    ck_assert_ptr_null(diagram_c(as(NULL), key, 0, NULL, F_SVG, &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "TOO_LARGE");
    ck_assert_ptr_nonnull(strstr(st.message, "ask for DOT"));
    const char *dot = diagram(key, 0, NULL, F_DOT);
    ck_assert_ptr_nonnull(strstr(dot, "\"p100\" [id=\"p100\""));
    ck_assert_ptr_nonnull(strstr(dot, "\"t99\" -> \"p100\""));
}
END_TEST

static void
refused(wf_client *c, const char *key, int32_t version, const char *id, int format, int code,
        const char *reason)
{
    wf_client_status st;
    ck_assert_ptr_null(diagram_c(c, key, version, id, format, &st));
    ck_fails(st, code, reason);
}

WF_TEST(test_refusals)
{
    char *key = u("diag-refuse"), *type = u("t");
    ck_assert(deploy(job_net(key, type, 1, 0))->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    wf_client *me = as(NULL);
    /* Neither, or both, of the key and the instance. */
    refused(me, NULL, 0, NULL, F_SVG, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(diagram_c(me, key, 0, in->id, F_DOT, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_ptr_nonnull(strstr(st.violations[0], "instance_id"));
    /* A version with the instance, a negative version. */
    refused(me, NULL, 1, in->id, F_DOT, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    refused(me, key, -1, NULL, F_DOT, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* The format: unset or unknown; every violation is listed. */
    refused(me, key, 0, NULL, 0, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    refused(me, key, 0, NULL, 7, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(diagram_c(me, NULL, -2, NULL, 9, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 3);
    /* Unknown key, version, instance. */
    refused(me, u("diag-none"), 0, NULL, F_SVG, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    refused(me, key, 9, NULL, F_DOT, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    refused(me, NULL, 0, id, F_SVG, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    /* Another tenant sees neither the definition nor the instance. */
    wf_client *other = as_tenant(u("diag-other"), "eve");
    refused(other, key, 0, NULL, F_SVG, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    refused(other, NULL, 0, in->id, F_SVG, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    refused(other, NULL, 0, in->id, F_DOT, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_diagram", wf_test_store_name(), setup, teardown, 60));
}
