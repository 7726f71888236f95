/*
 * diagram_dot: the DOT text of a compiled net and of an instance's overlay.
 *
 * Owns the look of a diagram (shapes, labels, colours) and the escaping of
 * every string that reaches the DOT text. Graphviz reads a quoted DOT
 * string with only \" as an escape, then expands backslash sequences (\N,
 * \n, \l, \\) in labels and ids, and turns &name; entities into characters
 * and copies them into the SVG as they are; so a backslash is doubled, a
 * quote escaped, an '&' that starts an entity written as &amp;, control
 * bytes and invalid UTF-8 replaced by U+FFFD (XML allows neither), and a
 * newline in a label becomes a DOT line break.
 *
 * Must not: read the store or call Graphviz (diagram_render.c does).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagram_int.h"
#include "wf_str.h"
#include "wf_utf8.h"

/* The replacement character U+FFFD in UTF-8. */
#define REPLACEMENT "\xEF\xBF\xBD"

/* Colours of the overlay (diagram_int.h), and of cancel-set arcs. */
#define COLOR_TOKENS WF_DIAGRAM_COLOR_TOKENS
#define COLOR_ENABLED WF_DIAGRAM_COLOR_ENABLED
#define COLOR_STEP WF_DIAGRAM_COLOR_STEP
#define COLOR_INCIDENT WF_DIAGRAM_COLOR_INCIDENT
#define COLOR_CANCEL "gray40"

/* ---- escaping ----------------------------------------------------------------------------- */

/* True when s (just after an '&') reads as an entity: a name or a #number
 * of 1-32 characters, then ';'. */
static bool
entity_follows(const char *s)
{
    size_t i = 0;
    while (i < 33 && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      (s[i] >= '0' && s[i] <= '9') || s[i] == '#'))
        i++;
    return i > 0 && i <= 32 && s[i] == ';';
}

/* Writes s (NULL = "") escaped for the inside of a quoted DOT string.
 * label: a newline becomes a DOT line break (else, like every other
 * control byte, U+FFFD). max > 0 cuts s after max bytes, at a character
 * boundary, and appends "...". */
static void
put_escaped(wf_diagram_buf *b, const char *s, size_t max, bool label)
{
    const unsigned char *u = (const unsigned char *)(s != NULL ? s : "");
    size_t n = strlen((const char *)u);
    for (size_t i = 0; i < n;) {
        size_t len = wf_utf8_char(u + i, n - i);
        if (max > 0 && i + (len != 0 ? len : 1) > max) {
            wf_diagram__put(b, "...");
            return;
        }
        if (len == 0) {
            wf_diagram__put(b, REPLACEMENT);
            i++;
            continue;
        }
        if (len > 1) {
            /* U+FFFE and U+FFFF are not XML characters. */
            if (len == 3 && u[i] == 0xEF && u[i + 1] == 0xBF && u[i + 2] >= 0xBE)
                wf_diagram__put(b, REPLACEMENT);
            else
                wf_diagram__put_n(b, (const char *)u + i, len);
            i += len;
            continue;
        }
        unsigned char c = u[i++];
        if (c == '"')
            wf_diagram__put(b, "\\\"");
        else if (c == '\\')
            wf_diagram__put(b, "\\\\");
        else if (c == '&' && entity_follows((const char *)u + i))
            wf_diagram__put(b, "&amp;");
        else if (c == '\n' && label)
            wf_diagram__put(b, "\\n");
        else if (c == '\r' && label)
            continue;
        else if (c == '\t')
            wf_diagram__put(b, " ");
        else if (c < 0x20)
            wf_diagram__put(b, REPLACEMENT);
        else
            wf_diagram__put_n(b, (const char *)&c, 1);
    }
}

/* A quoted id: "..." */
static void
put_id(wf_diagram_buf *b, const char *id)
{
    wf_diagram__put(b, "\"");
    put_escaped(b, id, 0, false);
    wf_diagram__put(b, "\"");
}

/* A quoted label text, cut at WF_DIAGRAM_MAX_LABEL. */
static void
put_text(wf_diagram_buf *b, const char *s)
{
    put_escaped(b, s, WF_DIAGRAM_MAX_LABEL, true);
}

/* ---- labels ----------------------------------------------------------------------------- */

/* A duration in ms as "250ms", "30s", "5m", "2h" or "3d" (the largest unit
 * that divides it), else in ms. */
static void
put_duration(wf_diagram_buf *b, int64_t ms)
{
    static const struct {
        int64_t ms;
        const char *unit;
    } units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ms >= units[i].ms && ms % units[i].ms == 0) {
            wf_diagram__putf(b, "%lld%s", (long long)(ms / units[i].ms), units[i].unit);
            return;
        }
    wf_diagram__putf(b, "%lldms", (long long)ms);
}

/* The name of a node, then its id when the name is set and differs. */
static void
put_name(wf_diagram_buf *b, const char *name, const char *id)
{
    if (wf_str_empty(name) || wf_str_eq(name, id)) {
        put_text(b, id);
        return;
    }
    put_text(b, name);
    wf_diagram__put(b, "\\n(");
    put_text(b, id);
    wf_diagram__put(b, ")");
}

/* The trigger line of a transition. */
static void
put_trigger(wf_diagram_buf *b, const wf_transition *t)
{
    switch (t->trigger) {
    case WF_TRIGGER_USER:
        wf_diagram__put(b, "USER");
        break;
    case WF_TRIGGER_AUTO:
        if (wf_str_empty(t->job_type)) {
            wf_diagram__put(b, "AUTO (routing)");
        } else {
            wf_diagram__put(b, "AUTO job: ");
            put_text(b, t->job_type);
        }
        break;
    case WF_TRIGGER_TIME:
        wf_diagram__put(b, "TIME");
        if (t->delay_ms > 0) {
            wf_diagram__put(b, " after ");
            put_duration(b, t->delay_ms);
        } else if (!wf_str_empty(t->due_expression)) {
            wf_diagram__put(b, " at ");
            put_text(b, t->due_expression);
        }
        break;
    case WF_TRIGGER_MSG:
        wf_diagram__put(b, "MSG ");
        put_text(b, t->signal_name);
        break;
    case WF_TRIGGER_CALL:
        wf_diagram__put(b, "CALL ");
        put_text(b, t->call_key);
        if (t->call_version > 0)
            wf_diagram__putf(b, " v%d", (int)t->call_version);
        break;
    default:
        wf_diagram__putf(b, "trigger %d", (int)t->trigger);
        break;
    }
    /* A multi-instance transition: one job or task per item. */
    if (!wf_str_empty(t->for_each)) {
        wf_diagram__put(b, t->for_each_sequential ? "\\n\u2261 for each (one at a time): "
                                                  : "\\n\u2261 for each: ");
        put_text(b, t->for_each);
    }
}

/* ---- the overlay ------------------------------------------------------------------------- */

/* The count of id in a list of the live totals (at most INT32_MAX). */
static int64_t
fleet_count(const wf_element_count *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (wf_str_eq(v[i].element_id, id))
            return v[i].count < INT32_MAX ? v[i].count : INT32_MAX;
    return 0;
}

int32_t
wf_diagram__tokens_of(const wf_diagram_overlay *ov, const char *place_id)
{
    if (ov != NULL && ov->fleet != NULL)
        return (int32_t)fleet_count(ov->fleet->tokens, ov->fleet->n_tokens, place_id);
    int32_t n = 0;
    for (size_t i = 0; ov != NULL && i < ov->n_marking; i++)
        if (wf_str_eq(ov->marking[i].place_id, place_id))
            n += ov->marking[i].count;
    return n;
}

size_t
wf_diagram__enabled_of(const wf_diagram_overlay *ov, const char *transition_id)
{
    if (ov != NULL && ov->fleet != NULL)
        return (size_t)fleet_count(ov->fleet->enabled, ov->fleet->n_enabled, transition_id);
    size_t n = 0;
    for (size_t i = 0; ov != NULL && i < ov->n_enabled; i++)
        n += wf_str_eq(ov->enabled[i], transition_id);
    return n;
}

bool
wf_diagram__is_current_step(const wf_diagram_overlay *ov, const wf_transition *t)
{
    if (ov == NULL || wf_str_empty(t->step_id))
        return false;
    for (size_t i = 0; i < ov->n_current_steps; i++)
        if (wf_str_eq(ov->current_steps[i], t->step_id))
            return true;
    return false;
}

bool
wf_diagram__has_incident(const wf_diagram_overlay *ov)
{
    return ov != NULL && !wf_str_empty(ov->incident_code);
}

size_t
wf_diagram__incidents_at(const wf_diagram_overlay *ov, const char *transition_id)
{
    if (ov != NULL && ov->fleet != NULL)
        return (size_t)fleet_count(ov->fleet->incidents, ov->fleet->n_incidents, transition_id);
    return wf_diagram__has_incident(ov) && wf_str_eq(ov->incident_transition_id, transition_id);
}

const char *
wf_diagram__incident_text(const wf_diagram_overlay *ov, size_t n, wf_arena *a)
{
    if (ov->fleet == NULL)
        return wf_arena_printf(a, "incident %s", ov->incident_code);
    return wf_arena_printf(a, "%zu incident%s", n, n == 1 ? "" : "s");
}

const char *
wf_diagram__fleet_line(const wf_diagram_overlay *ov, wf_arena *a)
{
    int64_t n = ov->fleet->live;
    const char *what = n == 1 ? "instance" : "instances";
    return ov->fleet_version == 0
               ? wf_arena_printf(a, "%lld live %s of every version", (long long)n, what)
               : wf_arena_printf(a, "%lld live %s of v%d", (long long)n, what,
                                 (int)ov->fleet_version);
}

/* ---- the graph ---------------------------------------------------------------------------- */

static const char *
kind_name(wf_def_kind kind)
{
    switch (kind) {
    case WF_DEF_AD_HOC:
        return "AD_HOC";
    case WF_DEF_NET:
        return "NET";
    case WF_DEF_STEPS:
        return "STEPS";
    }
    return "?";
}

static void
put_header(wf_diagram_buf *b, const wf_net *net, wf_def_kind kind, const wf_diagram_overlay *ov)
{
    wf_diagram__put(b, "digraph ");
    put_id(b, net->key);
    wf_diagram__put(b, " {\n");
    /* The graph's id has a space: no place or transition id has one. */
    /* Bounded layout work: straight edges (spline routing around long
     * edges dominates the time), and few network-simplex and crossing
     * passes. */
    wf_diagram__put(
        b, "  graph [id=\"net graph\", rankdir=LR, splines=line, nslimit=0.1, nslimit1=0.1, "
           "mclimit=0.1, labelloc=t, fontname=\"Helvetica\", fontsize=12, label=\"");
    put_text(b, net->key);
    wf_diagram__putf(b, " v%d (%s)", (int)net->version, kind_name(kind));
    if (!wf_str_empty(net->name) && !wf_str_eq(net->name, net->key)) {
        wf_diagram__put(b, "\\n");
        put_text(b, net->name);
    }
    if (ov != NULL && ov->fleet != NULL) {
        int64_t n = ov->fleet->live;
        wf_diagram__putf(b, "\\n%lld live instance%s of ", (long long)n, n == 1 ? "" : "s");
        if (ov->fleet_version == 0)
            wf_diagram__put(b, "every version");
        else
            wf_diagram__putf(b, "v%d", (int)ov->fleet_version);
    } else if (ov != NULL) {
        wf_diagram__put(b, "\\ninstance ");
        put_text(b, ov->instance_id);
        if (!wf_str_empty(ov->status)) {
            wf_diagram__put(b, ": ");
            put_text(b, ov->status);
        }
        if (wf_diagram__has_incident(ov)) {
            wf_diagram__put(b, "\\nincident ");
            put_text(b, ov->incident_code);
        }
    }
    wf_diagram__put(b, "\"");
    if (wf_diagram__has_incident(ov))
        wf_diagram__putf(b, ", fontcolor=%s", COLOR_INCIDENT);
    wf_diagram__put(b, "];\n");
    wf_diagram__put(b, "  node [fontname=\"Helvetica\", fontsize=10];\n");
    wf_diagram__put(b, "  edge [fontname=\"Helvetica\", fontsize=9];\n");
}

/* The marker comment of node index i (layout DOT only; i < 0: none). */
static void
put_marker(wf_diagram_buf *b, long i)
{
    if (i >= 0)
        wf_diagram__putf(b, ", comment=\"n%ld\"", i);
}

static void
put_place(wf_diagram_buf *b, const wf_place *p, const wf_diagram_overlay *ov, long mark)
{
    int32_t tokens = wf_diagram__tokens_of(ov, p->id);
    wf_diagram__put(b, "  ");
    put_id(b, p->id);
    wf_diagram__put(b, " [id=");
    put_id(b, p->id);
    put_marker(b, mark);
    wf_diagram__put(b, p->kind == WF_PLACE_END ? ", shape=doublecircle" : ", shape=circle");
    if (p->kind == WF_PLACE_START)
        wf_diagram__put(b, ", penwidth=2");
    wf_diagram__put(b, ", label=\"");
    put_name(b, p->name, p->id);
    if (tokens > 0)
        wf_diagram__putf(b, "\\n%d token%s", (int)tokens, tokens == 1 ? "" : "s");
    wf_diagram__put(b, "\"");
    if (tokens > 0)
        wf_diagram__putf(b, ", style=filled, fillcolor=\"%s\"", COLOR_TOKENS);
    wf_diagram__put(b, "];\n");
}

static void
put_transition(wf_diagram_buf *b, const wf_transition *t, const wf_diagram_overlay *ov, long mark)
{
    size_t enabled = wf_diagram__enabled_of(ov, t->id);
    size_t incidents = wf_diagram__incidents_at(ov, t->id);
    bool incident = incidents > 0;
    bool step = wf_diagram__is_current_step(ov, t);
    wf_diagram__put(b, "  ");
    put_id(b, t->id);
    wf_diagram__put(b, " [id=");
    put_id(b, t->id);
    put_marker(b, mark);
    /* A call's box has a double border (BPMN's call activity). */
    wf_diagram__put(b, t->trigger == WF_TRIGGER_CALL ? ", shape=box, peripheries=2, label=\""
                                                     : ", shape=box, label=\"");
    put_name(b, t->name, t->id);
    wf_diagram__put(b, "\\n");
    put_trigger(b, t);
    if (t->fails)
        wf_diagram__put(b, "\\n(the step fails)");
    if (step)
        wf_diagram__put(b, "\\ncurrent step");
    if (enabled == 1)
        wf_diagram__put(b, "\\nenabled");
    else if (enabled > 1)
        wf_diagram__putf(b, "\\nenabled (%zu)", enabled);
    if (incident && ov->fleet != NULL) {
        wf_diagram__putf(b, "\\n%zu incident%s", incidents, incidents == 1 ? "" : "s");
    } else if (incident) {
        wf_diagram__put(b, "\\nincident ");
        put_text(b, ov->incident_code);
    }
    wf_diagram__put(b, "\"");
    if (enabled > 0)
        wf_diagram__putf(b, ", style=\"filled,bold\", fillcolor=\"%s\"", COLOR_ENABLED);
    if (incident)
        wf_diagram__putf(b, ", color=%s, fontcolor=%s, penwidth=3", COLOR_INCIDENT, COLOR_INCIDENT);
    else if (step)
        wf_diagram__putf(b, ", color=\"%s\", penwidth=3", COLOR_STEP);
    wf_diagram__put(b, "];\n");
}

static void
put_arc(wf_diagram_buf *b, const wf_arc *a, size_t i)
{
    int32_t w = wf_net_arc_weight(a);
    bool guard = !wf_str_empty(a->guard);
    wf_diagram__put(b, "  ");
    put_id(b, a->source);
    wf_diagram__put(b, " -> ");
    put_id(b, a->target);
    /* Edge ids have a space too, so they never meet a node's. */
    wf_diagram__putf(b, " [id=\"arc %zu\"", i);
    if (w != 1 || guard || a->is_default) {
        wf_diagram__put(b, ", label=\"");
        if (w != 1)
            wf_diagram__putf(b, "%d", (int)w);
        if (guard) {
            wf_diagram__put(b, w != 1 ? " [" : "[");
            put_text(b, a->guard);
            wf_diagram__put(b, "]");
        }
        if (a->is_default)
            wf_diagram__put(b, w != 1 || guard ? " [else]" : "[else]");
        wf_diagram__put(b, "\"");
    }
    wf_diagram__put(b, "];\n");
}

static void
put_cancels(wf_diagram_buf *b, const wf_transition *t, size_t ti)
{
    for (size_t j = 0; j < t->n_cancels; j++) {
        wf_diagram__put(b, "  ");
        put_id(b, t->id);
        wf_diagram__put(b, " -> ");
        put_id(b, t->cancels[j]);
        wf_diagram__putf(
            b,
            " [id=\"cancel %zu %zu\", style=dashed, color=%s, fontcolor=%s, arrowhead=tee, "
            "constraint=false, label=\"cancels\"];\n",
            ti, j, COLOR_CANCEL, COLOR_CANCEL);
    }
}

/* The DOT text; markers: each place and transition carries its index as
 * a comment (the layout DOT, diagram_int.h). */
static wf_code
dot_text(const wf_net *net, wf_def_kind kind, const wf_diagram_overlay *ov, bool markers,
         wf_arena *a, char **out, wf_error *err)
{
    wf_diagram_buf b = {0};
    put_header(&b, net, kind, ov);
    if (kind == WF_DEF_AD_HOC) {
        wf_diagram__put(&b,
                        "  \"ad hoc\" [id=\"ad hoc\", shape=note, label=\"AD_HOC: no net; work is "
                        "referred with AssignTo\"];\n");
    }
    for (size_t i = 0; i < net->n_places; i++)
        put_place(&b, &net->places[i], ov, markers ? (long)i : -1);
    for (size_t i = 0; i < net->n_transitions; i++)
        put_transition(&b, &net->transitions[i], ov, markers ? (long)(net->n_places + i) : -1);
    for (size_t i = 0; i < net->n_arcs; i++)
        put_arc(&b, &net->arcs[i], i);
    for (size_t i = 0; i < net->n_transitions; i++)
        put_cancels(&b, &net->transitions[i], i);
    wf_diagram__put(&b, "}\n");
    if (b.oom) {
        free(b.p);
        return wf_error_nomem(err);
    }
    *out = wf_arena_strndup(a, b.p, b.n);
    free(b.p);
    return *out != NULL ? WF_OK : wf_error_nomem(err);
}

wf_code
wf_diagram_dot(const wf_net *net, wf_def_kind kind, const wf_diagram_overlay *ov, wf_arena *a,
               char **out, wf_error *err)
{
    return dot_text(net, kind, ov, false, a, out, err);
}

wf_code
wf_diagram__layout_dot(const wf_net *net, wf_def_kind kind, wf_arena *a, char **out, wf_error *err)
{
    return dot_text(net, kind, NULL, true, a, out, err);
}
