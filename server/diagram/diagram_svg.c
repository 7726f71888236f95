/*
 * diagram_svg: an instance drawn over the cached SVG of its definition
 * version, without laying anything out again.
 *
 * Graphviz's SVG is regular: each place and transition is a group
 * <g id="..." class="node"> holding its <title>, its shapes (<ellipse>,
 * <polygon>, ... one per line) and its label's <text> lines; the drawing
 * is one group whose transform puts the bottom edge of the graph at y = 0,
 * over a white background polygon. The layout DOT puts a marker comment
 * "n<index>" before each node's group (diagram_dot.c), which is how a node
 * is found whatever its id (ids reach the SVG escaped twice, by the DOT
 * writer and by Graphviz). wf_diagram__index notes, once per layout, where
 * each node's shapes are and how low they reach.
 *
 * The overlay then changes only what the layout does not depend on: the
 * fill and outline of nodes, and text under them and under the drawing,
 * which grows downwards to hold it. The words are the DOT's ("3 tokens",
 * "enabled (2)", "current step", "incident CODE", "instance ID: STATUS").
 * The markers are left out of every SVG served.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagram_int.h"
#include "wf_str.h"

/* Line heights of the text the overlay adds (points). */
#define NODE_LINE 11.0  /* under a node, 9 pt */
#define GRAPH_LINE 14.0 /* under the drawing, 12 pt */

/* ---- reading Graphviz's SVG ------------------------------------------------------------------ */

/* The value of attribute name (` name="`) in the element [p, end), or NULL. */
static const char *
attr_in(const char *p, const char *end, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    size_t n = strlen(key);
    for (const char *q = p; q + n <= end; q++)
        if (memcmp(q, key, n) == 0)
            return q + n;
    return NULL;
}

/* Widens [*cx range] and *bottom with one shape element [p, end). */
static bool
measure_shape(const char *p, const char *end, double *minx, double *maxx, double *bottom)
{
    if (strncmp(p, "<ellipse", 8) == 0) {
        const char *cx = attr_in(p, end, "cx"), *cy = attr_in(p, end, "cy");
        const char *rx = attr_in(p, end, "rx"), *ry = attr_in(p, end, "ry");
        if (cx == NULL || cy == NULL || rx == NULL || ry == NULL)
            return false;
        double x = strtod(cx, NULL), y = strtod(cy, NULL), w = strtod(rx, NULL),
               h = strtod(ry, NULL);
        *minx = x - w < *minx ? x - w : *minx;
        *maxx = x + w > *maxx ? x + w : *maxx;
        *bottom = y + h > *bottom ? y + h : *bottom;
        return true;
    }
    const char *pts = attr_in(p, end, "points");
    if (pts == NULL)
        return true; /* a shape without points (a path): its neighbours place the node */
    for (const char *q = pts; q < end && *q != '"';) {
        char *e;
        double x = strtod(q, &e);
        if (e == q || *e != ',')
            break;
        double y = strtod(e + 1, &e);
        *minx = x < *minx ? x : *minx;
        *maxx = x > *maxx ? x : *maxx;
        *bottom = y > *bottom ? y : *bottom;
        q = e;
        while (q < end && *q == ' ')
            q++;
    }
    return true;
}

/* Indexes the node group whose marker starts at m (index i). */
static void
index_node(wf_diagram_layout *l, size_t i, const char *m)
{
    const char *svg = l->svg, *mark_end = strstr(m, "-->\n");
    if (mark_end == NULL || strncmp(mark_end + 4, "<g id=\"", 7) != 0)
        return;
    const char *title = strstr(mark_end, "</title>\n");
    const char *close = strstr(mark_end, "</g>");
    if (title == NULL || close == NULL || title > close)
        return;
    wf_diagram_node *n = &l->nodes[i];
    double minx = 1e300, maxx = -1e300, bottom = -1e300;
    const char *p = title + 9, *last = p;
    while (p < close && *p == '<' && strncmp(p, "<text", 5) != 0 && strncmp(p, "</g>", 4) != 0) {
        const char *eol = strchr(p, '\n');
        if (eol == NULL || !measure_shape(p, eol, &minx, &maxx, &bottom))
            return;
        p = last = eol + 1;
    }
    if (last == title + 9 || minx > maxx)
        return;
    n->mark = (size_t)(m - svg);
    n->mark_end = (size_t)(mark_end + 4 - svg);
    n->shapes = (size_t)(title + 9 - svg);
    n->shapes_end = (size_t)(last - svg);
    n->cx = (minx + maxx) / 2;
    n->bottom = bottom;
    n->found = true;
}

/* The drawing's size and the places the overlay edits; false when the
 * SVG is not shaped as expected. */
static bool
index_canvas(wf_diagram_layout *l)
{
    const char *svg = l->svg;
    const char *h = strstr(svg, "<svg width=\"");
    const char *height = h != NULL ? strstr(h, " height=\"") : NULL;
    const char *vb = h != NULL ? strstr(h, " viewBox=\"") : NULL;
    const char *g = strstr(svg, " class=\"graph\"");
    const char *bg = g != NULL ? strstr(g, "<polygon fill=\"white\"") : NULL;
    const char *bg_end = bg != NULL ? strstr(bg, "/>\n") : NULL;
    const char *close = strstr(svg, "</g>\n</svg>");
    if (height == NULL || vb == NULL || bg_end == NULL || close == NULL)
        return false;
    double x0, y0;
    if (sscanf(vb + 10, "%lf %lf %lf %lf", &x0, &y0, &l->width, &l->height) != 4)
        return false;
    l->size_at = (size_t)(height + 9 - svg);
    l->viewbox_at = (size_t)(vb + 10 - svg);
    l->body_at = (size_t)(bg_end + 3 - svg);
    l->close_at = (size_t)(close - svg);
    return true;
}

void
wf_diagram__index(wf_diagram_layout *l)
{
    l->indexed = false;
    if (!index_canvas(l))
        return;
    for (const char *m = strstr(l->svg, "<!-- n"); m != NULL; m = strstr(m + 6, "<!-- n")) {
        char *end;
        unsigned long i = strtoul(m + 6, &end, 10);
        if (end == m + 6 || strncmp(end, " -->\n", 5) != 0 || i >= l->nnodes || l->nodes[i].found)
            continue;
        index_node(l, i, m);
    }
    for (size_t i = 0; i < l->nnodes; i++)
        if (!l->nodes[i].found)
            return;
    l->indexed = true;
}

/* ---- writing ----------------------------------------------------------------------------------
 */

/* s as XML text: the five special characters escaped. */
static void
put_xml(wf_diagram_buf *b, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        switch (*s) {
        case '&':
            wf_diagram__put_n(b, "&amp;", 5);
            break;
        case '<':
            wf_diagram__put_n(b, "&lt;", 4);
            break;
        case '>':
            wf_diagram__put_n(b, "&gt;", 4);
            break;
        case '"':
            wf_diagram__put_n(b, "&quot;", 6);
            break;
        case '\'':
            wf_diagram__put_n(b, "&#39;", 5);
            break;
        default:
            wf_diagram__put_n(b, s, 1);
        }
    }
}

/* What the overlay does to one node. */
typedef struct node_look {
    const char *fill, *stroke, *width;
    const char *lines[3]; /* text under the node */
    bool red[3];
    size_t nlines;
} node_look;

static void
add_line(node_look *lk, bool red, const char *text)
{
    if (lk->nlines == 3)
        return;
    lk->red[lk->nlines] = red;
    lk->lines[lk->nlines++] = text != NULL ? text : "";
}

/* The look of every node under ov, by node index (places, then
 * transitions), as the DOT writer labels and colours them. */
static node_look *
looks_of(const wf_net *net, const wf_diagram_overlay *ov, wf_arena *a)
{
    size_t np = net->n_places, nt = net->n_transitions;
    node_look *lk = wf_arena_calloc(a, np + nt + 1, sizeof *lk);
    if (lk == NULL || ov == NULL)
        return lk;
    for (size_t i = 0; i < np; i++) {
        int32_t tokens = wf_diagram__tokens_of(ov, net->places[i].id);
        if (tokens <= 0)
            continue;
        lk[i].fill = WF_DIAGRAM_COLOR_TOKENS;
        add_line(&lk[i], false,
                 wf_arena_printf(a, "%d token%s", (int)tokens, tokens == 1 ? "" : "s"));
    }
    for (size_t j = 0; j < nt; j++) {
        const wf_transition *t = &net->transitions[j];
        node_look *k = &lk[np + j];
        size_t enabled = wf_diagram__enabled_of(ov, t->id);
        size_t incidents = wf_diagram__incidents_at(ov, t->id);
        if (wf_diagram__is_current_step(ov, t)) {
            k->stroke = WF_DIAGRAM_COLOR_STEP;
            k->width = "3";
            add_line(k, false, "current step");
        }
        if (enabled > 0) {
            k->fill = WF_DIAGRAM_COLOR_ENABLED;
            k->width = k->width != NULL ? k->width : "2";
            add_line(k, false,
                     enabled == 1 ? "enabled" : wf_arena_printf(a, "enabled (%zu)", enabled));
        }
        if (incidents > 0) {
            k->stroke = WF_DIAGRAM_COLOR_INCIDENT;
            k->width = "3";
            add_line(k, true, wf_diagram__incident_text(ov, incidents, a));
        }
    }
    return lk;
}

/* Copies the attribute value at *p (just after name=") as value instead. */
static const char *
put_replaced(wf_diagram_buf *b, const char *p, const char *value)
{
    put_xml(b, value);
    const char *q = strchr(p, '"');
    return q != NULL ? q : p;
}

/* Writes one shape element line [p, end) with lk's fill (first shape
 * only), stroke and stroke width. */
static void
put_shape(wf_diagram_buf *b, const char *p, const char *end, const node_look *lk, bool first)
{
    const char *fill = first && lk->fill != NULL ? attr_in(p, end, "fill") : NULL;
    const char *stroke = lk->stroke != NULL || lk->width != NULL ? attr_in(p, end, "stroke") : NULL;
    const char *width = lk->width != NULL ? attr_in(p, end, "stroke-width") : NULL;
    const char *q = p;
    while (q < end) {
        if (q == fill) {
            q = put_replaced(b, q, lk->fill);
        } else if (q == stroke) {
            if (lk->stroke != NULL) {
                q = put_replaced(b, q, lk->stroke);
            } else {
                const char *e = strchr(q, '"');
                wf_diagram__put_n(b, q, (size_t)(e - q));
                q = e;
            }
            if (lk->width != NULL && width == NULL) {
                wf_diagram__put_n(b, "\" stroke-width=\"", 16);
                put_xml(b, lk->width);
            }
        } else if (q == width) {
            q = put_replaced(b, q, lk->width);
        } else {
            wf_diagram__put_n(b, q, 1);
            q++;
        }
    }
}

/* The text lines of lk under node n. */
static void
put_node_lines(wf_diagram_buf *b, const wf_diagram_node *n, const node_look *lk)
{
    for (size_t k = 0; k < lk->nlines; k++) {
        wf_diagram__putf(b,
                         "<text text-anchor=\"middle\" x=\"%.2f\" y=\"%.2f\" "
                         "font-family=\"Helvetica,sans-Serif\" "
                         "font-size=\"9.00\"%s>",
                         n->cx, n->bottom + NODE_LINE * (double)(k + 1),
                         lk->red[k] ? " fill=\"red\"" : "");
        put_xml(b, lk->lines[k]);
        wf_diagram__put_n(b, "</text>\n", 8);
    }
}

/* The lines under the drawing: the instance, its status, its incident;
 * or how many instances the live totals count. */
static size_t
graph_lines(const wf_diagram_overlay *ov, wf_arena *a, const char *lines[2])
{
    size_t n = 0;
    if (ov == NULL)
        return 0;
    if (ov->fleet != NULL) {
        lines[n++] = wf_diagram__fleet_line(ov, a);
        return n;
    }
    lines[n++] = wf_str_empty(ov->status)
                     ? wf_arena_printf(a, "instance %s", ov->instance_id)
                     : wf_arena_printf(a, "instance %s: %s", ov->instance_id, ov->status);
    if (wf_diagram__has_incident(ov))
        lines[n++] = wf_arena_printf(a, "incident %s", ov->incident_code);
    return n;
}

/* The lowest point of the drawing with the text under its nodes: its
 * bottom edge (y = 4, the margin included) or below. */
static double
lowest(const wf_diagram_layout *l, const node_look *lk)
{
    double low = 4;
    for (size_t i = 0; lk != NULL && i < l->nnodes; i++)
        if (lk[i].nlines > 0) {
            double y = l->nodes[i].bottom + NODE_LINE * (double)lk[i].nlines + 3;
            low = y > low ? y : low;
        }
    return low;
}

/* The head of the SVG up to the background, with the canvas grown by
 * grow points and the background under the added text. */
static void
put_head(wf_diagram_buf *b, const wf_diagram_layout *l, double grow)
{
    const char *svg = l->svg;
    if (grow <= 0) {
        wf_diagram__put_n(b, svg, l->body_at);
        return;
    }
    wf_diagram__put_n(b, svg, l->size_at);
    const char *p = svg + l->size_at;
    wf_diagram__putf(b, "%.0f", l->height + grow);
    p += strspn(p, "0123456789.");
    wf_diagram__put_n(b, p, (size_t)(svg + l->viewbox_at - p));
    wf_diagram__putf(b, "0.00 0.00 %.2f %.2f", l->width, l->height + grow);
    p = strchr(svg + l->viewbox_at, '"');
    wf_diagram__put_n(b, p, (size_t)(svg + l->body_at - p));
    wf_diagram__putf(
        b,
        "<polygon fill=\"white\" stroke=\"transparent\" points=\"-4,4 -4,%.2f %.2f,%.2f %.2f,4 "
        "-4,4\"/>\n",
        4 + grow, l->width - 4, 4 + grow, l->width - 4);
}

/* The body: every node, with its look, without markers. */
static void
put_body(wf_diagram_buf *b, const wf_diagram_layout *l, const node_look *lk)
{
    const char *svg = l->svg;
    size_t at = l->body_at;
    for (;;) {
        /* The next node in the text (they are not in index order). */
        const wf_diagram_node *n = NULL;
        size_t ni = 0;
        for (size_t i = 0; i < l->nnodes; i++)
            if (l->nodes[i].mark >= at && (n == NULL || l->nodes[i].mark < n->mark)) {
                n = &l->nodes[i];
                ni = i;
            }
        if (n == NULL)
            break;
        wf_diagram__put_n(b, svg + at, n->mark - at);
        wf_diagram__put_n(b, svg + n->mark_end, n->shapes - n->mark_end);
        const node_look *k = lk != NULL ? &lk[ni] : NULL;
        bool first = true;
        for (size_t p = n->shapes; p < n->shapes_end;) {
            const char *eol = strchr(svg + p, '\n') + 1;
            if (k != NULL && (k->fill != NULL || k->stroke != NULL || k->width != NULL))
                put_shape(b, svg + p, eol, k, first);
            else
                wf_diagram__put_n(b, svg + p, (size_t)(eol - (svg + p)));
            first = false;
            p = (size_t)(eol - svg);
        }
        const char *close = strstr(svg + n->shapes_end, "</g>");
        wf_diagram__put_n(b, svg + n->shapes_end, (size_t)(close - (svg + n->shapes_end)));
        if (k != NULL)
            put_node_lines(b, n, k);
        at = (size_t)(close - svg);
    }
    wf_diagram__put_n(b, svg + at, l->close_at - at);
}

wf_code
wf_diagram__overlay_svg(const wf_diagram_layout *l, const wf_net *net, const wf_diagram_overlay *ov,
                        wf_arena *a, char **out, size_t *len, wf_error *err)
{
    if (!l->indexed) {
        /* Not shaped as expected: the SVG as laid out (the caller draws
         * an overlay otherwise). */
        *out = wf_arena_strndup(a, l->svg, l->svg_len);
        *len = l->svg_len;
        return *out != NULL ? WF_OK : wf_error_nomem(err);
    }
    node_look *lk = ov != NULL ? looks_of(net, ov, a) : NULL;
    if (ov != NULL && lk == NULL)
        return wf_error_nomem(err);
    const char *glines[2];
    size_t ng = graph_lines(ov, a, glines);
    double low = lowest(l, lk);
    double grow = low - 4 + (ng > 0 ? GRAPH_LINE * (double)ng + 6 : 0);
    wf_diagram_buf b = {0};
    put_head(&b, l, grow);
    put_body(&b, l, lk);
    for (size_t i = 0; i < ng; i++) {
        wf_diagram__putf(&b,
                         "<text text-anchor=\"middle\" x=\"%.2f\" y=\"%.2f\" "
                         "font-family=\"Helvetica,sans-Serif\" "
                         "font-size=\"12.00\"%s>",
                         l->width / 2 - 4, low + GRAPH_LINE * (double)(i + 1),
                         i == 1 ? " fill=\"red\"" : "");
        put_xml(&b, glines[i] != NULL ? glines[i] : "");
        wf_diagram__put_n(&b, "</text>\n", 8);
    }
    wf_diagram__put_n(&b, l->svg + l->close_at, l->svg_len - l->close_at);
    if (b.oom) {
        free(b.p);
        return wf_error_nomem(err);
    }
    *out = wf_arena_strndup(a, b.p, b.n);
    *len = b.n;
    free(b.p);
    return *out != NULL ? WF_OK : wf_error_nomem(err);
}
