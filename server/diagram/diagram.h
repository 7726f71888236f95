/*
 * diagram: definitions and instances drawn as Graphviz diagrams
 * (GetDiagram).
 *
 * Three parts, lowest first:
 *   - the DOT text of a compiled net, with an optional overlay of an
 *     instance's state: pure, no store, no Graphviz;     (diagram_dot.c)
 *   - the SVG rendering of DOT text by Graphviz's libgvc, in process,
 *     one call at a time (libgvc is not thread-safe);    (diagram_render.c)
 *   - GetDiagram's rule: which definition version, which overlay, which
 *     format; the reads finish before anything is laid out, so no store
 *     lock or connection is held while Graphviz runs.    (diagram.c)
 *
 * Above the engine (it reads through the engine's public functions),
 * below the handlers; it never sees protobuf or grpc, so a server-side
 * caller other than the handlers can draw too. Everything returned lives
 * in the caller's arena.
 */
#ifndef WF_DIAGRAM_H
#define WF_DIAGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "net_runtime.h"
#include "wf_arena.h"
#include "wf_error.h"

/* Numbering follows the proto's DiagramFormat; 0 is unset (refused). */
typedef enum wf_diagram_format {
    WF_DIAGRAM_UNSET = 0,
    WF_DIAGRAM_SVG = 1,
    WF_DIAGRAM_DOT = 2,
} wf_diagram_format;

/* Labels longer than this (names, guards, job types, expressions) are cut
 * at a character boundary and end in "..."; ids are never cut (they are
 * at most WF_NET_MAX_ID_LEN bytes). */
#define WF_DIAGRAM_MAX_LABEL 120

/* The largest net laid out as SVG: places plus transitions, and arcs plus
 * cancel-set entries. Graphviz's time grows with the edges' spans and
 * crossings, not only with the counts: the largest net a deploy accepts
 * (WF_NET_MAX_NODES, WF_NET_MAX_ARCS) can take minutes and gigabytes with
 * long crossing arcs, a net at these bounds a few seconds (README.md).
 * Bigger nets are refused for SVG (TOO_LARGE); their DOT is always given. */
#define WF_DIAGRAM_MAX_SVG_NODES 200
#define WF_DIAGRAM_MAX_SVG_EDGES 400

/* What an instance adds to the diagram of its definition version. Every
 * array is borrowed for the call; NULL with a count of 0 is empty. */
typedef struct wf_diagram_overlay {
    const char *instance_id;           /* shown in the graph's label */
    const char *status;                /* e.g. "RUNNING", shown in the label; may be NULL */
    const wf_runtime_marking *marking; /* token counts by place */
    size_t n_marking;
    const char *const *enabled; /* transition id of each enabled work item */
    size_t n_enabled;
    const char *incident_code;          /* open incident (FAILED), NULL = none */
    const char *incident_transition_id; /* the transition to blame, NULL = none */
    const char *const *current_steps;   /* STEPS: ids of the steps it is in */
    size_t n_current_steps;
    /* Instead of one instance: the live totals of a definition's instances
     * (GetDiagram with live_totals); the fields above are then unset. */
    const wf_fleet_counts *fleet;
    int32_t fleet_version; /* the version counted; 0: every version */
} wf_diagram_overlay;

/* ---- DOT (diagram_dot.c) ------------------------------------------------------------------ */

/* The DOT text of net (a definition of kind kind, at net->version), with
 * ov drawn over it (NULL = the bare definition). Places are circles
 * (START bold, END a double circle), transitions boxes labelled with
 * their trigger (USER, AUTO with the job type, TIME with its delay or due
 * expression, MSG with the signal), arcs labelled with weight, guard and
 * "else", cancel sets dashed. Each place and transition is the node whose
 * name and `id` are its id; every string is escaped for DOT (quotes,
 * backslashes, entities, control bytes and invalid UTF-8), so that
 * Graphviz's SVG of it is well-formed XML and each element is found by the
 * `id` attribute. An AD_HOC definition (no net) is one note. *out is
 * NUL-terminated, in a. Fails only when out of memory. */
wf_code wf_diagram_dot(const wf_net *net, wf_def_kind kind, const wf_diagram_overlay *ov,
                       wf_arena *a, char **out, wf_error *err);

/* ---- SVG (diagram_render.c) --------------------------------------------------------------- */

/* Lays dot out with Graphviz (layout "dot") and renders it as SVG into
 * *out (NUL-terminated, in a; *len its length). Graphviz keeps global
 * state: one thread of its own, the render thread, lays out one text at a
 * time, at a lower CPU priority than the server's threads. The plugins
 * (the dot layout and the core renderers) are linked in and registered
 * explicitly, so no Graphviz configuration file is read. The size of the
 * net is the caller's to bound (wf_diagram_get: WF_DIAGRAM_MAX_SVG_*).
 * The caller waits until deadline_ms (monotonic ms, 0 = without bound),
 * then gets WF_E_DEADLINE_EXCEEDED (a layout already started runs to its
 * end on the render thread). WF_E_INTERNAL when Graphviz refuses the text
 * or fails to lay it out. */
wf_code wf_diagram_svg(const char *dot, int64_t deadline_ms, wf_arena *a, char **out, size_t *len,
                       wf_error *err);

/* ---- the layout cache (diagram_cache.c) ----------------------------------------------------- */

/* The cache's bound until wf_diagram_configure (WF_DIAGRAM_CACHE_BYTES). */
#define WF_DIAGRAM_CACHE_DEFAULT_BYTES ((size_t)32 * 1024 * 1024)

/* Sets the bytes the cache of laid-out versions may hold (0: none is
 * kept); evicts what no longer fits. */
void wf_diagram_configure(size_t cache_bytes);

/* Empties the cache (tests; layouts being drawn stay valid). */
void wf_diagram_cache_clear(void);

typedef struct wf_diagram_stats {
    size_t entries, bytes, cap; /* what the cache holds, and its bound */
    unsigned long long hits;    /* SVG requests served from the cache */
    unsigned long long misses;  /* SVG requests that needed a layout */
    unsigned long long layouts; /* Graphviz runs */
} wf_diagram_stats;

void wf_diagram_get_stats(wf_diagram_stats *out);

/* ---- GetDiagram (diagram.c) ------------------------------------------------------------------ */

typedef struct wf_diagram_in {
    const char *definition_key; /* exactly one of definition_key and instance_id */
    int32_t version;            /* with definition_key: 0 = the latest */
    const char *instance_id;    /* the version it is pinned to, with its overlay */
    wf_diagram_format format;
    bool live_totals;  /* with definition_key: the live totals drawn over it */
    bool all_versions; /* with live_totals: of every version */
} wf_diagram_in;

typedef struct wf_diagram {
    const char *content;      /* SVG or DOT text, in ctx's arena */
    size_t len;               /* bytes of content */
    const char *content_type; /* "image/svg+xml" or "text/vnd.graphviz" (static) */
} wf_diagram;

/* GetDiagram. Refusals: INVALID_ARGUMENT (neither or both of the key and
 * the instance, a version with the instance, a negative version, an
 * unknown format; each reported to ctx->ref.violation),
 * live_totals with the instance or all_versions without live_totals),
 * DEFINITION_NOT_FOUND, INSTANCE_NOT_FOUND (also for another tenant's
 * instance), TOO_LARGE (SVG of a net above WF_DIAGRAM_MAX_SVG_NODES or
 * WF_DIAGRAM_MAX_SVG_EDGES; DOT is given for any net). */
wf_code wf_diagram_get(const wf_runtime_ctx *ctx, const wf_diagram_in *in, wf_diagram *out,
                       wf_error *err);

#endif /* WF_DIAGRAM_H */
