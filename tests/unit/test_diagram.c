/*
 * test_diagram: the DOT text of nets and overlays (server/diagram), and
 * Graphviz's SVG of it, without a server: every place and transition is
 * there under its id, hostile ids and names are escaped (quotes, '<', '&',
 * backslashes, newlines, control bytes, invalid UTF-8, non-ASCII), the
 * overlay shows token counts, enabled items, an incident in red and the
 * current step of a step list, the rendering reads no Graphviz
 * configuration file, and a call queued behind a slow layout gives up at
 * its deadline. The cache of layouts: a version is laid out once, within
 * the cache's byte bound, least recently used evicted first; an
 * instance's overlay drawn onto a cached SVG.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diagram_int.h"
#include "expr.h"
#include "engine_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "wf_time.h"
#include "wf_utf8.h"

static wf_arena *A;

/* A net of every trigger: start -> review (USER) -> mid -> ship (AUTO job)
 * -> end, mid -> remind (TIME) -> mid, mid -> poke (MSG) -> end with a
 * weight, a guard and a default arc; ship cancels "remind-me". */
static wf_net *
sample_net(void)
{
    static wf_place places[] = {{"start", "Start", WF_PLACE_START},
                                {"mid", "Waiting", WF_PLACE_NORMAL},
                                {"remind-me", NULL, WF_PLACE_NORMAL},
                                {"end", "Done", WF_PLACE_END}};
    static const char *ship_cancels[] = {"remind-me"};
    static wf_transition trans[4];
    memset(trans, 0, sizeof trans);
    trans[0] = (wf_transition){.id = "review", .name = "Review", .trigger = WF_TRIGGER_USER};
    trans[1] = (wf_transition){.id = "ship",
                               .name = "Ship it",
                               .trigger = WF_TRIGGER_AUTO,
                               .job_type = "shipping",
                               .cancels = ship_cancels,
                               .n_cancels = 1};
    trans[2] = (wf_transition){.id = "remind", .trigger = WF_TRIGGER_TIME, .delay_ms = 90000};
    trans[3] = (wf_transition){.id = "poke", .trigger = WF_TRIGGER_MSG, .signal_name = "poked"};
    static wf_arc arcs[] = {
        {"start", "review", 0, NULL, false},     {"review", "mid", 2, ".ok", false},
        {"review", "remind-me", 0, NULL, true},  {"mid", "ship", 2, NULL, false},
        {"ship", "end", 0, NULL, false},         {"remind-me", "remind", 0, NULL, false},
        {"remind", "remind-me", 0, NULL, false}, {"mid", "poke", 0, NULL, false},
        {"poke", "end", 0, NULL, false},
    };
    wf_net *n = wf_arena_calloc(A, 1, sizeof *n);
    n->key = "sample";
    n->version = 3;
    n->name = "Sample";
    n->places = places;
    n->n_places = 4;
    n->transitions = trans;
    n->n_transitions = 4;
    n->arcs = arcs;
    n->n_arcs = sizeof arcs / sizeof arcs[0];
    return n;
}

static char *
dot_of(const wf_net *n, wf_def_kind kind, const wf_diagram_overlay *ov)
{
    wf_error err;
    char *dot = NULL;
    ck_assert_int_eq(wf_diagram_dot(n, kind, ov, A, &dot, &err), WF_OK);
    ck_assert_ptr_nonnull(dot);
    return dot;
}

static char *
svg_of(const char *dot)
{
    wf_error err;
    char *svg = NULL;
    size_t len = 0;
    wf_code rc = wf_diagram_svg(dot, 0, A, &svg, &len, &err);
    ck_assert_msg(rc == WF_OK, "svg: %s", err.msg);
    ck_assert_uint_eq(strlen(svg), len);
    return svg;
}

/* The statement of node id in dot: from its quoted name to the line's end. */
static char *
node_line(const char *dot, const char *quoted_id)
{
    char head[512];
    snprintf(head, sizeof head, "\n  %s [id=%s", quoted_id, quoted_id);
    const char *p = strstr(dot, head);
    ck_assert_msg(p != NULL, "no node %s in:\n%s", quoted_id, dot);
    const char *e = strchr(p + 1, '\n');
    return wf_arena_strndup(A, p + 1, (size_t)(e - p - 1));
}

/* True when the SVG has a node whose id attribute is xml_id (XML-escaped;
 * Graphviz also writes '-' as &#45;, so that no "--" reaches a comment). */
static int
svg_has_id(const char *svg, const char *xml_id)
{
    char attr[1024];
    size_t n = (size_t)snprintf(attr, sizeof attr, "<g id=\"");
    for (const char *p = xml_id; *p != '\0' && n + 8 < sizeof attr; p++)
        n += (size_t)snprintf(attr + n, sizeof attr - n, *p == '-' ? "&#45;" : "%c", *p);
    snprintf(attr + n, sizeof attr - n, "\" class=\"node\">");
    return strstr(svg, attr) != NULL;
}

WF_TEST(test_every_place_and_transition_is_a_node)
{
    wf_net *n = sample_net();
    char *dot = dot_of(n, WF_DEF_NET, NULL);
    ck_assert_ptr_nonnull(strstr(dot, "digraph \"sample\" {"));
    ck_assert_ptr_nonnull(strstr(dot, "label=\"sample v3 (NET)\\nSample\""));
    for (size_t i = 0; i < n->n_places; i++) {
        char q[64];
        snprintf(q, sizeof q, "\"%s\"", n->places[i].id);
        ck_assert_ptr_nonnull(strstr(node_line(dot, q), "shape="));
    }
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"start\""), "shape=circle, penwidth=2"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"end\""), "shape=doublecircle"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"mid\""), "label=\"Waiting\\n(mid)\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"remind-me\""), "label=\"remind-me\""));
    /* Transitions are boxes marked by trigger. */
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"review\""), "shape=box"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"review\""), "\\nUSER\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"ship\""), "\\nAUTO job: shipping\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"remind\""), "\\nTIME after 90s\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"poke\""), "\\nMSG poked\""));
    /* Arcs carry weight, guard and the default; cancel sets are dashed. */
    ck_assert_ptr_nonnull(strstr(dot, "\"review\" -> \"mid\" [id=\"arc 1\", label=\"2 [.ok]\"]"));
    ck_assert_ptr_nonnull(
        strstr(dot, "\"review\" -> \"remind-me\" [id=\"arc 2\", label=\"[else]\"]"));
    ck_assert_ptr_nonnull(strstr(dot, "\"mid\" -> \"ship\" [id=\"arc 3\", label=\"2\"]"));
    ck_assert_ptr_nonnull(strstr(dot, "\"start\" -> \"review\" [id=\"arc 0\"];"));
    const char *cancel = strstr(dot, "\"ship\" -> \"remind-me\" [id=\"cancel 1 0\"");
    ck_assert_ptr_nonnull(cancel);
    ck_assert_ptr_nonnull(strstr(cancel, "style=dashed"));
    /* The SVG has every element under its id. */
    char *svg = svg_of(dot);
    ck_assert_ptr_nonnull(strstr(svg, "<svg"));
    for (size_t i = 0; i < n->n_places; i++)
        ck_assert_msg(svg_has_id(svg, n->places[i].id), "place %s", n->places[i].id);
    for (size_t i = 0; i < n->n_transitions; i++)
        ck_assert_msg(svg_has_id(svg, n->transitions[i].id), "transition %s", n->transitions[i].id);
    ck_assert_ptr_nonnull(strstr(svg, "<g id=\"cancel 1 0\" class=\"edge\">"));
    ck_assert_ptr_nonnull(strstr(svg, "stroke-dasharray"));
}
END_TEST

WF_TEST(test_hostile_ids_and_names_are_escaped)
{
    static wf_place places[] = {
        {"s\"q", "quote \" name", WF_PLACE_START},
        {"a<b&c",
         "line one\nline two\ttab\x01"
         "ctl",
         WF_PLACE_NORMAL},
        {"back\\slash", "entity &amp; and &x", WF_PLACE_NORMAL},
        {"caf\xc3\xa9-\xe2\x86\x92", "bad \xff utf8 \xc3", WF_PLACE_END},
    };
    static wf_transition trans[2];
    memset(trans, 0, sizeof trans);
    trans[0] = (wf_transition){.id = "t\"1", .name = "<b>bold</b>", .trigger = WF_TRIGGER_USER};
    trans[1] = (wf_transition){.id = "t&lt;2",
                               .name = "\\N\\G node",
                               .trigger = WF_TRIGGER_MSG,
                               .signal_name = "sig\"nal"};
    static wf_arc arcs[] = {
        {"s\"q", "t\"1", 0, NULL, false},
        {"t\"1", "a<b&c", 0, ".x == \"<&>\"", false},
        {"a<b&c", "t&lt;2", 0, NULL, false},
        {"t&lt;2", "back\\slash", 0, NULL, false},
        {"t&lt;2", "caf\xc3\xa9-\xe2\x86\x92", 0, NULL, true},
    };
    wf_net *n = wf_arena_calloc(A, 1, sizeof *n);
    n->key = "k\"<&>";
    n->name = "Name\nwith \"quotes\"";
    n->places = places;
    n->n_places = 4;
    n->transitions = trans;
    n->n_transitions = 2;
    n->arcs = arcs;
    n->n_arcs = 5;
    char *dot = dot_of(n, WF_DEF_NET, NULL);
    ck_assert_ptr_nonnull(strstr(dot, "digraph \"k\\\"<&>\" {"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"s\\\"q\""), "label=\"quote \\\" name\\n"));
    const char *l = node_line(dot, "\"a<b&c\"");
    ck_assert_ptr_nonnull(strstr(l, "line one\\nline two tab\xEF\xBF\xBD"
                                    "ctl"));
    l = node_line(dot, "\"back\\\\slash\"");
    ck_assert_ptr_nonnull(strstr(l, "entity &amp;amp; and &x"));
    l = node_line(dot, "\"caf\xc3\xa9-\xe2\x86\x92\"");
    ck_assert_ptr_nonnull(strstr(l, "bad \xEF\xBF\xBD utf8 \xEF\xBF\xBD"));
    l = node_line(dot, "\"t&amp;lt;2\"");
    ck_assert_ptr_nonnull(strstr(l, "\\\\N\\\\G node"));
    ck_assert_ptr_nonnull(strstr(l, "MSG sig\\\"nal"));
    ck_assert_ptr_nonnull(strstr(dot, "label=\"[.x == \\\"<&>\\\"]\""));
    ck_assert_ptr_nonnull(strstr(dot, "label=\"k\\\"<&> v0 (NET)\\nName\\nwith \\\"quotes\\\"\""));
    /* No raw newline inside a statement, and only valid UTF-8. */
    for (const char *p = dot; *p != '\0'; p++)
        if (*p == '\n')
            ck_assert(p[1] == '\0' || p[1] == ' ' || p[1] == '}');
    ck_assert(wf_utf8_valid((const unsigned char *)dot, strlen(dot)));

    /* Graphviz keeps the ids exact in the id attributes, XML-escaped. */
    char *svg = svg_of(dot);
    ck_assert(wf_utf8_valid((const unsigned char *)svg, strlen(svg)));
    for (const unsigned char *p = (const unsigned char *)svg; *p != '\0'; p++)
        ck_assert_msg(*p >= 0x20 || *p == '\n' || *p == '\t', "control byte %u", *p);
    ck_assert(svg_has_id(svg, "s&quot;q"));
    ck_assert(svg_has_id(svg, "a&lt;b&amp;c"));
    ck_assert(svg_has_id(svg, "back\\slash"));
    ck_assert(svg_has_id(svg, "caf\xc3\xa9-\xe2\x86\x92"));
    ck_assert(svg_has_id(svg, "t&quot;1"));
    ck_assert(svg_has_id(svg, "t&amp;lt;2"));
    ck_assert_ptr_nonnull(strstr(svg, "&lt;b&gt;bold&lt;/b&gt;"));
    ck_assert_ptr_nonnull(strstr(svg, ">\\N\\G node<"));
}
END_TEST

WF_TEST(test_labels_are_cut)
{
    char name[400];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    /* A multi-byte character across the cut is not split. */
    memcpy(name + WF_DIAGRAM_MAX_LABEL - 1, "\xc3\xa9", 2);
    static wf_place places[1];
    places[0] = (wf_place){"p", name, WF_PLACE_START};
    wf_net *n = wf_arena_calloc(A, 1, sizeof *n);
    n->key = "cut";
    n->places = places;
    n->n_places = 1;
    const char *l = node_line(dot_of(n, WF_DEF_NET, NULL), "\"p\"");
    char want[WF_DIAGRAM_MAX_LABEL + 16];
    memset(want, 'x', WF_DIAGRAM_MAX_LABEL - 1);
    strcpy(want + WF_DIAGRAM_MAX_LABEL - 1, "...\\n(p)\"");
    ck_assert_ptr_nonnull(strstr(l, want));
}
END_TEST

WF_TEST(test_overlay_tokens_enabled_and_incident)
{
    wf_net *n = sample_net();
    wf_runtime_marking marking[] = {{"mid", 2}, {"remind-me", 1}};
    const char *enabled[] = {"ship", "poke", "poke"};
    wf_diagram_overlay ov = {.instance_id = "i-1",
                             .status = "FAILED",
                             .marking = marking,
                             .n_marking = 2,
                             .enabled = enabled,
                             .n_enabled = 3,
                             .incident_code = "JOB_FAILED",
                             .incident_transition_id = "ship"};
    char *dot = dot_of(n, WF_DEF_NET, &ov);
    ck_assert_ptr_nonnull(strstr(dot, "\\ninstance i-1: FAILED\\nincident JOB_FAILED\""));
    ck_assert_ptr_nonnull(strstr(dot, "incident JOB_FAILED\", fontcolor=red];"));
    const char *l = node_line(dot, "\"mid\"");
    ck_assert_ptr_nonnull(strstr(l, "\\n2 tokens\""));
    ck_assert_ptr_nonnull(strstr(l, "style=filled, fillcolor=\"#d6e9ff\""));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"remind-me\""), "\\n1 token\""));
    ck_assert_ptr_null(strstr(node_line(dot, "\"start\""), "token"));
    l = node_line(dot, "\"ship\"");
    ck_assert_ptr_nonnull(strstr(l, "\\nenabled\\nincident JOB_FAILED\""));
    ck_assert_ptr_nonnull(strstr(l, "fillcolor=\"#fff2a8\""));
    ck_assert_ptr_nonnull(strstr(l, "color=red, fontcolor=red, penwidth=3"));
    l = node_line(dot, "\"poke\"");
    ck_assert_ptr_nonnull(strstr(l, "\\nenabled (2)\""));
    ck_assert_ptr_null(strstr(l, "red"));
    l = node_line(dot, "\"review\"");
    ck_assert_ptr_null(strstr(l, "enabled"));
    ck_assert_ptr_null(strstr(l, "fillcolor"));
    /* The SVG shows the incident in red and the enabled fill. */
    char *svg = svg_of(dot);
    ck_assert_ptr_nonnull(strstr(svg, "stroke=\"red\""));
    ck_assert_ptr_nonnull(strstr(svg, "fill=\"#fff2a8\""));
    ck_assert_ptr_nonnull(strstr(svg, ">2 tokens<"));
}
END_TEST

WF_TEST(test_incident_without_transition_marks_the_graph)
{
    wf_net *n = sample_net();
    wf_diagram_overlay ov = {.instance_id = "i-2", .incident_code = "DEADLOCK"};
    char *dot = dot_of(n, WF_DEF_NET, &ov);
    ck_assert_ptr_nonnull(strstr(dot, "\\ninstance i-2\\nincident DEADLOCK\", fontcolor=red];"));
    ck_assert_ptr_null(strstr(dot, "penwidth=3"));
}
END_TEST

WF_TEST(test_steps_current_step)
{
    wf_net *in = wf_arena_calloc(A, 1, sizeof *in);
    in->key = "list";
    in->steps = wf_arena_calloc(A, 2, sizeof *in->steps);
    in->steps[0] = (wf_step){.id = "charge", .name = "Charge", .has_job = true, .job_type = "pay"};
    static const char *bob[] = {"bob"};
    in->steps[1] = (wf_step){
        .id = "confirm", .has_user = true, .assignee = {WF_NET_ASSIGNEE_USER, bob, 1, NULL}};
    in->n_steps = 2;
    wf_net *net = NULL;
    wf_validation_error *v = NULL;
    size_t nv = 0;
    wf_error err;
    ck_assert_int_eq(wf_steps_compile(in, A, &net, &v, &nv, &err), WF_OK);
    ck_assert_ptr_nonnull(net);
    const char *steps[] = {"confirm"};
    wf_runtime_marking marking[] = {{"confirm:ready", 1}};
    const char *enabled[] = {"confirm"};
    wf_diagram_overlay ov = {.instance_id = "i-3",
                             .status = "RUNNING",
                             .marking = marking,
                             .n_marking = 1,
                             .enabled = enabled,
                             .n_enabled = 1,
                             .current_steps = steps,
                             .n_current_steps = 1};
    char *dot = dot_of(net, WF_DEF_STEPS, &ov);
    ck_assert_ptr_nonnull(strstr(dot, "label=\"list v0 (STEPS)\\ninstance i-3: RUNNING\""));
    const char *l = node_line(dot, "\"confirm\"");
    ck_assert_ptr_nonnull(strstr(l, "\\nUSER\\ncurrent step\\nenabled\""));
    ck_assert_ptr_nonnull(strstr(l, "color=\"#1f6feb\", penwidth=3"));
    l = node_line(dot, "\"charge\"");
    ck_assert_ptr_nonnull(strstr(l, "label=\"Charge\\n(charge)\\nAUTO job: pay\""));
    ck_assert_ptr_null(strstr(l, "current step"));
    ck_assert_ptr_nonnull(strstr(node_line(dot, "\"confirm:ready\""), "\\n1 token\""));
    /* Every place and transition of the compiled net is in the SVG. */
    char *svg = svg_of(dot);
    for (size_t i = 0; i < net->n_places; i++)
        ck_assert_msg(svg_has_id(svg, net->places[i].id), "place %s", net->places[i].id);
    for (size_t i = 0; i < net->n_transitions; i++)
        ck_assert_msg(svg_has_id(svg, net->transitions[i].id), "transition %s",
                      net->transitions[i].id);
}
END_TEST

WF_TEST(test_ad_hoc_is_a_note)
{
    wf_net *n = wf_arena_calloc(A, 1, sizeof *n);
    n->key = "referrals";
    n->version = 1;
    char *dot = dot_of(n, WF_DEF_AD_HOC, NULL);
    ck_assert_ptr_nonnull(strstr(dot, "label=\"referrals v1 (AD_HOC)\""));
    ck_assert_ptr_nonnull(strstr(dot, "\"ad hoc\" [id=\"ad hoc\", shape=note"));
    ck_assert_ptr_nonnull(strstr(svg_of(dot), "<g id=\"ad hoc\" class=\"node\">"));
}
END_TEST

/* The plugins are linked in: no configuration file (nor plugin folder) is
 * looked for. GVBINDIR names the folder Graphviz would read it from; an
 * empty one must not matter. Runs in its own process (fork mode), so the
 * context is made here, with the variable set. */
WF_TEST(test_renders_without_graphviz_config)
{
    char dir[] = "diagram-gvXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(setenv("GVBINDIR", dir, 1), 0);
    char *svg = svg_of(dot_of(sample_net(), WF_DEF_NET, NULL));
    ck_assert(svg_has_id(svg, "review"));
    rmdir(dir);
}
END_TEST

WF_TEST(test_bad_dot_is_internal)
{
    wf_error err;
    char *svg = NULL;
    size_t len = 0;
    ck_assert_int_eq(wf_diagram_svg("digraph { \"a\" -> ", 0, A, &svg, &len, &err), WF_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "Graphviz refused the DOT text"));
    /* The lock was released: the next call works. */
    ck_assert(svg_has_id(svg_of("digraph { a [id=\"a\"]; }"), "a"));
}
END_TEST

/* A DOT text Graphviz takes a second or more to lay out: 40 places and
 * transitions whose labelled arcs jump far ahead, with curved edges (all
 * forward: Graphviz 2.42 leaks some virtual edges of the cycles it breaks,
 * server/diagram/README.md). */
static char *
slow_dot(void)
{
    size_t cap = 64 * 1024, n = 0;
    char *d = wf_arena_alloc(A, cap);
    n += (size_t)snprintf(d + n, cap - n, "digraph slow { rankdir=LR;\n");
    for (int i = 1; i < 40; i++)
        n += (size_t)snprintf(
            d + n, cap - n, "p%d -> t%d; p%d -> t%d; t%d -> p%d; t%d -> p%d [label=\"g %d\"];\n", i,
            i, (i * 7 + 3) % i, i, i, i + 1, i, i + 1 + (i * 13 + 5) % (40 - i), i);
    snprintf(d + n, cap - n, "}\n");
    return d;
}

static void *
render_slowly(void *dot)
{
    wf_arena *a = wf_arena_new();
    char *svg;
    size_t len;
    wf_error err;
    wf_diagram_svg(dot, 0, a, &svg, &len, &err);
    wf_arena_free(a);
    return NULL;
}

/* While a slow layout holds Graphviz, a call waits only until its deadline;
 * the slow layout then ends as usual. */
WF_TEST(test_waits_for_the_lock_until_the_deadline)
{
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, render_slowly, slow_dot()), 0);
    wf_error err;
    char *svg = NULL;
    size_t len = 0;
    /* Until the slow layout has taken Graphviz (a loaded machine may start
     * the thread late), a quick call still gets it: try again, a bounded
     * number of times. */
    wf_code rc = WF_OK;
    int64_t t0 = 0;
    for (int i = 0; i < 200 && rc == WF_OK; i++) {
        usleep(50 * 1000);
        t0 = wf_mono_ms();
        rc = wf_diagram_svg("digraph { a; }", t0 + 100, A, &svg, &len, &err);
    }
    ck_assert_int_eq(rc, WF_E_DEADLINE_EXCEEDED);
    int64_t waited = wf_mono_ms() - t0;
    ck_assert_msg(waited >= 90 && waited < 2000 * wf_test_time_scale(), "waited %lld ms",
                  (long long)waited);
    ck_assert_ptr_nonnull(strstr(err.msg, "deadline passed"));
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert(svg_has_id(svg_of("digraph { a [id=\"a\"]; }"), "a"));
}
END_TEST

/* ---- the layout cache and the overlay on a cached SVG ---------------------------------------- */

static wf_diagram_stats
stats(void)
{
    wf_diagram_stats st;
    wf_diagram_get_stats(&st);
    return st;
}

/* The layout of net through the cache. */
static wf_diagram_layout *
layout_of(const wf_net *n)
{
    char *dot;
    wf_error err;
    ck_assert_int_eq(wf_diagram__layout_dot(n, WF_DEF_NET, A, &dot, &err), WF_OK);
    wf_diagram_layout *l = NULL;
    ck_assert_int_eq(wf_diagram__layout(dot, n->n_places + n->n_transitions, 0, &l, &err), WF_OK);
    return l;
}

/* A chain of n places and n - 1 transitions named by prefix. */
static wf_net *
chain_net(const char *key, int n)
{
    wf_net *net = wf_arena_calloc(A, 1, sizeof *net);
    net->key = key;
    net->version = 1;
    net->places = wf_arena_calloc(A, (size_t)n, sizeof *net->places);
    net->transitions = wf_arena_calloc(A, (size_t)n, sizeof *net->transitions);
    net->arcs = wf_arena_calloc(A, 2 * (size_t)n, sizeof *net->arcs);
    for (int i = 0; i < n; i++) {
        net->places[i] = (wf_place){wf_arena_printf(A, "p%d", i), NULL,
                                    i == 0 ? WF_PLACE_START : WF_PLACE_NORMAL};
        if (i + 1 == n)
            break;
        net->transitions[i] =
            (wf_transition){.id = wf_arena_printf(A, "t%d", i), .trigger = WF_TRIGGER_USER};
        net->arcs[net->n_arcs++] = (wf_arc){net->places[i].id, net->transitions[i].id, 0, NULL, 0};
        net->arcs[net->n_arcs++] =
            (wf_arc){net->transitions[i].id, wf_arena_printf(A, "p%d", i + 1), 0, NULL, 0};
    }
    net->n_places = (size_t)n;
    net->n_transitions = (size_t)n - 1;
    return net;
}

WF_TEST(test_a_version_is_laid_out_once)
{
    wf_diagram_cache_clear();
    wf_diagram_configure(WF_DIAGRAM_CACHE_DEFAULT_BYTES);
    wf_diagram_stats st0 = stats();
    wf_diagram_layout *a = layout_of(sample_net());
    wf_diagram_layout *b = layout_of(sample_net());
    ck_assert_ptr_eq(a, b);
    ck_assert(a->indexed);
    wf_diagram_stats st = stats();
    ck_assert_uint_eq(st.layouts, st0.layouts + 1);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert_uint_eq(st.bytes, a->bytes);
    /* Another version is another layout. */
    wf_net *v4 = sample_net();
    v4->version = 4;
    wf_diagram_layout *c = layout_of(v4);
    ck_assert_ptr_ne(a, c);
    ck_assert_uint_eq(stats().layouts, st0.layouts + 2);
    /* Layouts outlive their eviction while someone draws them. */
    wf_diagram_cache_clear();
    ck_assert_uint_eq(stats().entries, 0);
    ck_assert_ptr_nonnull(strstr(a->svg, "<svg"));
    wf_diagram__layout_unref(a);
    wf_diagram__layout_unref(b);
    wf_diagram__layout_unref(c);
}
END_TEST

WF_TEST(test_the_cache_keeps_within_its_bound)
{
    wf_diagram_cache_clear();
    wf_diagram_layout *one = layout_of(chain_net("one", 6));
    size_t each = one->bytes;
    wf_diagram__layout_unref(one);
    /* Room for two layouts of that size: a third evicts the least
     * recently used. */
    wf_diagram_configure(2 * each + each / 2);
    wf_diagram_cache_clear();
    wf_diagram__layout_unref(layout_of(chain_net("one", 6)));
    wf_diagram__layout_unref(layout_of(chain_net("two", 6)));
    wf_diagram__layout_unref(layout_of(chain_net("one", 6))); /* one is the most recent */
    unsigned long long before = stats().layouts;
    wf_diagram__layout_unref(layout_of(chain_net("six", 6))); /* evicts two */
    wf_diagram_stats st = stats();
    ck_assert_uint_eq(st.entries, 2);
    ck_assert_uint_le(st.bytes, st.cap);
    wf_diagram__layout_unref(layout_of(chain_net("one", 6)));
    ck_assert_uint_eq(stats().layouts, before + 1); /* one was still there */
    wf_diagram__layout_unref(layout_of(chain_net("two", 6)));
    ck_assert_uint_eq(stats().layouts, before + 2); /* two was not */
    /* A layout larger than the bound is served, not kept; 0 keeps none. */
    wf_diagram_configure(each / 2);
    ck_assert_uint_eq(stats().entries, 0);
    wf_diagram_layout *big = layout_of(chain_net("big", 6));
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq(stats().entries, 0);
    wf_diagram__layout_unref(big);
    wf_diagram_configure(0);
    wf_diagram__layout_unref(layout_of(chain_net("none", 3)));
    ck_assert_uint_eq(stats().entries, 0);
    wf_diagram_configure(WF_DIAGRAM_CACHE_DEFAULT_BYTES);
}
END_TEST

/* The overlay drawn onto the cached SVG says what the DOT's labels say,
 * in the same colours, on the nodes laid out for the bare version. */
WF_TEST(test_overlay_drawn_onto_the_cached_svg)
{
    wf_diagram_cache_clear();
    wf_net *n = sample_net();
    wf_diagram_layout *l = layout_of(n);
    wf_error err;
    char *bare, *svg;
    size_t blen, len;
    ck_assert_int_eq(wf_diagram__overlay_svg(l, n, NULL, A, &bare, &blen, &err), WF_OK);
    /* As Graphviz made it, without the markers. */
    ck_assert_ptr_null(strstr(bare, "<!-- n0 -->"));
    ck_assert_uint_eq(blen + strlen("<!-- n0 -->\n") * 8, l->svg_len);
    ck_assert(svg_has_id(bare, "review"));
    wf_runtime_marking marking[] = {{"mid", 2}, {"remind-me", 1}};
    const char *enabled[] = {"ship", "poke", "poke"};
    wf_diagram_overlay ov = {.instance_id = "i-1",
                             .status = "FAILED",
                             .marking = marking,
                             .n_marking = 2,
                             .enabled = enabled,
                             .n_enabled = 3,
                             .incident_code = "JOB_<FAILED>",
                             .incident_transition_id = "ship"};
    ck_assert_int_eq(wf_diagram__overlay_svg(l, n, &ov, A, &svg, &len, &err), WF_OK);
    ck_assert_uint_eq(strlen(svg), len);
    ck_assert_ptr_nonnull(strstr(svg, ">2 tokens</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">1 token</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">enabled (2)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, " fill=\"red\">incident JOB_&lt;FAILED&gt;</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">instance i-1: FAILED</text>"));
    ck_assert_ptr_nonnull(strstr(svg, "fill=\"" WF_DIAGRAM_COLOR_TOKENS "\""));
    ck_assert_ptr_nonnull(strstr(svg, "fill=\"" WF_DIAGRAM_COLOR_ENABLED "\""));
    ck_assert_ptr_nonnull(strstr(svg, "stroke=\"red\" stroke-width=\"3\""));
    for (size_t i = 0; i < n->n_places; i++)
        ck_assert_msg(svg_has_id(svg, n->places[i].id), "place %s", n->places[i].id);
    for (size_t i = 0; i < n->n_transitions; i++)
        ck_assert_msg(svg_has_id(svg, n->transitions[i].id), "transition %s", n->transitions[i].id);
    /* The canvas grew to hold the text under the drawing. */
    double h0 = 0, h1 = 0;
    ck_assert_int_eq(sscanf(strstr(bare, " height=\"") + 9, "%lf", &h0), 1);
    ck_assert_int_eq(sscanf(strstr(svg, " height=\"") + 9, "%lf", &h1), 1);
    ck_assert_msg(h1 >= h0 + 28, "height %g, bare %g", h1, h0);
    ck_assert_ptr_null(strstr(svg, "<!-- n"));
    ck_assert_ptr_nonnull(strstr(svg, "</g>\n</svg>"));
    wf_diagram__layout_unref(l);
}
END_TEST

int
main(void)
{
    kit_fixture(NULL, &A);
    /* The slow layout takes seconds, many more under sanitizers and load. */
    return wf_test_run(
        wf_test_suite("diagram", "core", kit_setup, kit_teardown, 60 * wf_test_time_scale()));
}
