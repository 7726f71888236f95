/*
 * diagram_int: what the files of server/diagram share: the laid-out
 * diagram of a definition version (its SVG and where each node is in it),
 * the cache of them, the render thread, and the overlay of an instance
 * drawn onto a cached SVG. Internal to server/diagram (wf_diagram__
 * prefix).
 */
#ifndef WF_DIAGRAM_INT_H
#define WF_DIAGRAM_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diagram.h"

/* Colours of the overlay (the DOT's and the SVG's). */
#define WF_DIAGRAM_COLOR_TOKENS "#d6e9ff"  /* a place holding tokens */
#define WF_DIAGRAM_COLOR_ENABLED "#fff2a8" /* a transition with enabled work items */
#define WF_DIAGRAM_COLOR_STEP "#1f6feb"    /* the current step of a STEPS instance */
#define WF_DIAGRAM_COLOR_INCIDENT "red"    /* the transition of an open incident */

/* One place or transition as Graphviz's SVG draws it: offsets into the
 * SVG text and the geometry the overlay needs (SVG user units, inside the
 * graph's transform: y grows downwards, the drawing's bottom edge is 0). */
typedef struct wf_diagram_node {
    size_t mark;       /* its marker comment (skipped when served) */
    size_t mark_end;   /* just after it */
    size_t shapes;     /* its first shape element, after its <title> line */
    size_t shapes_end; /* the end of its last shape element's line */
    double cx, bottom; /* centre x and lowest point of its shapes */
    bool found;
} wf_diagram_node;

/* A definition version laid out once: immutable once made, shared by
 * reference between the cache and its readers. */
typedef struct wf_diagram_layout {
    atomic_int refs;
    uint64_t hash; /* of dot */
    char *dot;     /* the layout DOT (the key): the bare net with node markers */
    char *svg;
    size_t svg_len;
    wf_diagram_node *nodes; /* by node index: places, then transitions */
    size_t nnodes;
    bool indexed;         /* every node was found: instances can be drawn over it */
    size_t size_at;       /* the height="...pt" attribute's value */
    size_t viewbox_at;    /* the viewBox attribute's value */
    size_t body_at;       /* just after the graph's background polygon */
    size_t close_at;      /* the graph group's "</g>" */
    double width, height; /* of the drawing, in points */
    size_t bytes;         /* what it holds, for the cache's bound */
    struct wf_diagram_layout *prev, *next; /* the cache's recency list */
} wf_diagram_layout;

/* A growing text buffer (diagram_buf.c): malloc'd and NUL-terminated;
 * oom is sticky (later writes are dropped). Zero-initialised is empty. */
typedef struct wf_diagram_buf {
    char *p;
    size_t n, cap;
    bool oom;
} wf_diagram_buf;

void wf_diagram__put_n(wf_diagram_buf *b, const char *s, size_t n);
void wf_diagram__put(wf_diagram_buf *b, const char *s);
void wf_diagram__putf(wf_diagram_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* FNV-1a of s. */
uint64_t wf_diagram__hash(const char *s);

/* ---- the DOT (diagram_dot.c) ---- */

/* The DOT text Graphviz lays out for the SVG of net: the bare net (no
 * overlay) with a marker comment ("n<index>") on each place and
 * transition, by which the overlay finds its nodes in the SVG. */
wf_code wf_diagram__layout_dot(const wf_net *net, wf_def_kind kind, wf_arena *a, char **out,
                               wf_error *err);

/* What an overlay says of a place or transition. */
int32_t wf_diagram__tokens_of(const wf_diagram_overlay *ov, const char *place_id);
size_t wf_diagram__enabled_of(const wf_diagram_overlay *ov, const char *transition_id);
bool wf_diagram__is_current_step(const wf_diagram_overlay *ov, const wf_transition *t);
bool wf_diagram__has_incident(const wf_diagram_overlay *ov);
/* The open incidents at a transition: 0 or 1 for an instance, the count
 * for the live totals; and the words shown for n of them. */
size_t wf_diagram__incidents_at(const wf_diagram_overlay *ov, const char *transition_id);
const char *wf_diagram__incident_text(const wf_diagram_overlay *ov, size_t n, wf_arena *a);
/* The live totals' line under the drawing ("12 live instances of v3"). */
const char *wf_diagram__fleet_line(const wf_diagram_overlay *ov, wf_arena *a);

/* ---- layouts and their cache (diagram_cache.c) ---- */

/* A new layout of dot from Graphviz's svg (both copied), indexed for
 * nnodes nodes; one reference. NULL when out of memory. */
wf_diagram_layout *wf_diagram__layout_new(const char *dot, uint64_t hash, const char *svg,
                                          size_t svg_len, size_t nnodes);
void wf_diagram__layout_ref(wf_diagram_layout *l);
void wf_diagram__layout_unref(wf_diagram_layout *l);

/* The cached layout of dot (a new reference), or NULL; counts a hit or a
 * miss when count is set. */
wf_diagram_layout *wf_diagram__cache_get(const char *dot, uint64_t hash, bool count);

/* Keeps l (its own reference) when it fits in the cache's bound, evicting
 * the least recently used layouts. */
void wf_diagram__cache_put(wf_diagram_layout *l);

/* A Graphviz run ended (for the figures). */
void wf_diagram__count_layout(void);

/* ---- the render thread (diagram_render.c) ---- */

/* The layout of dot with nnodes markers: from the cache, else laid out by
 * the render thread and cached; a caller asking for a DOT text already
 * queued or being laid out waits for that one. Waits at most until
 * deadline_ms (0 = without bound): WF_E_DEADLINE_EXCEEDED then, while the
 * layout goes on and is cached. *out is a new reference. */
wf_code wf_diagram__layout(const char *dot, size_t nnodes, int64_t deadline_ms,
                           wf_diagram_layout **out, wf_error *err);

/* ---- the SVG of an instance (diagram_svg.c) ---- */

/* Finds each node's marker, shapes and geometry in l's SVG, and the
 * places the overlay edits; l->indexed tells whether it could. */
void wf_diagram__index(wf_diagram_layout *l);

/* The SVG of l with ov drawn over it (ov NULL: as laid out), without the
 * markers, into *out (NUL-terminated, in a). Places with tokens and
 * enabled transitions are filled in the DOT's colours, the current step
 * and the incident's transition outlined, and what the DOT writes in their
 * labels (tokens, "enabled", "current step", the incident) is written
 * under them; the instance, its status and its incident under the
 * drawing, which grows to hold them. */
wf_code wf_diagram__overlay_svg(const wf_diagram_layout *l, const wf_net *net,
                                const wf_diagram_overlay *ov, wf_arena *a, char **out, size_t *len,
                                wf_error *err);

#endif /* WF_DIAGRAM_INT_H */
