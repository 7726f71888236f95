/*
 * diagram: GetDiagram's rule. Checks the request, reads the definition
 * version (or the instance, the version it is pinned to and its open work
 * items) through the engine's public reads, builds the overlay, writes
 * the DOT text and, for SVG, draws the overlay over the layout of the
 * version: from the cache, or laid out by Graphviz once.
 *
 * Every read has returned before the layout starts: no store lock,
 * transaction or pooled connection is held while Graphviz runs. A call
 * that needs a layout joins the diagram bulkhead (core/wf_bulkhead.h)
 * first: its thread leaves the shared ones, and when as many calls as the
 * bulkhead's limit wait for layouts already, the call is refused at once
 * (BULKHEAD_FULL). So a slow layout delays other layouts, never other
 * calls, and a version laid out once is never laid out again while it
 * stays in the cache.
 *
 * Must not: see protobuf or grpc; change anything.
 */
#include <string.h>

#include "diagram_int.h"
#include "instances.h"
#include "wf_bulkhead.h"
#include "wf_str.h"
#include "work.h"

#define SVG_TYPE "image/svg+xml"
#define DOT_TYPE "text/vnd.graphviz"

/* Work items read per page when collecting the enabled ones (the most
 * ListWorkItems gives). */
#define ITEMS_PAGE 500

static const char *
status_name(wf_instance_status s)
{
    switch (s) {
    case WF_INSTANCE_RUNNING:
        return "RUNNING";
    case WF_INSTANCE_COMPLETED:
        return "COMPLETED";
    case WF_INSTANCE_CANCELLED:
        return "CANCELLED";
    case WF_INSTANCE_FAILED:
        return "FAILED";
    case WF_INSTANCE_COMPENSATING:
        return "COMPENSATING";
    case WF_INSTANCE_COMPENSATED:
        return "COMPENSATED";
    case WF_INSTANCE_SUSPENDED:
        return "SUSPENDED";
    }
    return NULL;
}

static void
violate(const wf_runtime_ctx *ctx, const char *field, const char *msg, int *n)
{
    if (ctx->ref.violation != NULL)
        ctx->ref.violation(ctx->ref.violation_arg, field, NULL, msg);
    (*n)++;
}

/* Every violation of the request at once. */
static wf_code
check_request(const wf_runtime_ctx *ctx, const wf_diagram_in *in, wf_error *err)
{
    int n = 0;
    const char *first = NULL;
    bool key = !wf_str_empty(in->definition_key), inst = !wf_str_empty(in->instance_id);
    if (key && inst) {
        violate(ctx, "instance_id", "must be empty with definition_key", &n);
        first = "set only one of definition_key and instance_id";
    } else if (!key && !inst) {
        violate(ctx, "definition_key", "is required (or instance_id)", &n);
        first = "definition_key or instance_id is required";
    }
    if (in->version < 0) {
        violate(ctx, "version", "must not be negative", &n);
        first = first != NULL ? first : "version must not be negative";
    } else if (inst && in->version != 0) {
        violate(ctx, "version", "must be 0 with instance_id (its own version is drawn)", &n);
        first = first != NULL ? first : "version must be 0 with instance_id";
    }
    if (inst && in->live_totals) {
        violate(ctx, "live_totals", "must be false with instance_id", &n);
        first = first != NULL ? first : "live_totals needs definition_key";
    }
    if (in->all_versions && !in->live_totals) {
        violate(ctx, "all_versions", "needs live_totals", &n);
        first = first != NULL ? first : "all_versions needs live_totals";
    }
    if (in->format != WF_DIAGRAM_SVG && in->format != WF_DIAGRAM_DOT) {
        violate(ctx, "format", "must be SVG or DOT", &n);
        first = first != NULL ? first : "format must be SVG or DOT";
    }
    if (n == 0)
        return WF_OK;
    return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s", first);
}

/* The transition ids of the instance's enabled work items, every page. */
static wf_code
enabled_items(const wf_runtime_ctx *ctx, const char *instance_id, wf_diagram_overlay *ov,
              wf_error *err)
{
    static const int enabled_state[] = {WF_RUNTIME_ITEM_ENABLED};
    const char **ids = NULL;
    size_t n = 0;
    char *cursor = NULL;
    do {
        wf_runtime_list_items_in q = {.instance_id = instance_id,
                                      .states = enabled_state,
                                      .n_states = 1,
                                      .page_size = ITEMS_PAGE,
                                      .cursor = cursor};
        wf_runtime_item *items = NULL;
        size_t got = 0;
        cursor = NULL;
        wf_code rc = wf_runtime_list_work_items(&ctx->ref, &q, &items, &got, &cursor, err);
        if (rc != WF_OK)
            return rc;
        const char **more = wf_arena_calloc(ctx->ref.arena, n + got + 1, sizeof *more);
        if (more == NULL)
            return wf_error_nomem(err);
        if (n > 0)
            memcpy(more, ids, n * sizeof *ids);
        for (size_t i = 0; i < got; i++)
            more[n++] = items[i].row.transition_id;
        ids = more;
    } while (!wf_str_empty(cursor));
    ov->enabled = ids;
    ov->n_enabled = n;
    return WF_OK;
}

/* The overlay of an instance, and the definition version it is pinned to. */
static wf_code
instance_overlay(const wf_runtime_ctx *ctx, const char *instance_id, wf_diagram_overlay *ov,
                 wf_definition_row *row, const wf_net **net, wf_error *err)
{
    wf_instance_view view;
    wf_code rc = wf_instances_get(&ctx->ref, instance_id, &view, err);
    if (rc != WF_OK)
        return rc;
    const wf_instance_row *in = &view.tree.instance;
    rc = wf_runtime_get_definition(ctx, in->definition_key, in->definition_version, row, net, err);
    if (rc != WF_OK)
        return rc;
    memset(ov, 0, sizeof *ov);
    ov->instance_id = in->id;
    ov->status = status_name(in->status);
    if (in->status == WF_INSTANCE_FAILED && !wf_str_empty(in->incident_code)) {
        ov->incident_code = in->incident_code;
        ov->incident_transition_id = in->incident_transition_id;
    }
    if (!view.net.is_net)
        return WF_OK;
    ov->marking = view.net.marking;
    ov->n_marking = view.net.n_marking;
    const char **steps =
        wf_arena_calloc(ctx->ref.arena, view.net.n_current_steps + 1, sizeof *steps);
    if (steps == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < view.net.n_current_steps; i++)
        steps[i] = view.net.current_steps[i]->id;
    ov->current_steps = steps;
    ov->n_current_steps = view.net.n_current_steps;
    return enabled_items(ctx, instance_id, ov, err);
}

/* The overlay of the live totals of key's instances (of version, or of
 * every version with all_versions). */
static wf_code
fleet_overlay(const wf_runtime_ctx *ctx, const wf_diagram_in *in, int32_t version,
              wf_diagram_overlay *ov, wf_error *err)
{
    wf_fleet_counts *f = wf_arena_calloc(ctx->ref.arena, 1, sizeof *f);
    if (f == NULL)
        return wf_error_nomem(err);
    memset(ov, 0, sizeof *ov);
    ov->fleet = f;
    ov->fleet_version = in->all_versions ? 0 : version;
    return wf_runtime_definition_statistics(ctx, in->definition_key, ov->fleet_version, f, err);
}

/* The SVG of net with ov over it (ov NULL: the bare version): the cached
 * layout of the version with ov drawn onto it, the layout made first when
 * no cache has it. dot is the DOT with the overlay, laid out as it is
 * should the layout's SVG not be shaped for an overlay. */
static wf_code
draw_svg(const wf_runtime_ctx *ctx, const wf_net *net, wf_def_kind kind, const char *dot,
         const wf_diagram_overlay *ov, char **svg, size_t *len, wf_error *err)
{
    char *ldot;
    wf_code rc = wf_diagram__layout_dot(net, kind, ctx->ref.arena, &ldot, err);
    if (rc != WF_OK)
        return rc;
    size_t nnodes = net->n_places + net->n_transitions;
    wf_diagram_layout *l = wf_diagram__cache_get(ldot, wf_diagram__hash(ldot), true);
    if (l == NULL) {
        /* A layout: beside the shared threads, or refused when the
         * diagram bulkhead is full. */
        rc = wf_bulkhead_enter(WF_BULKHEAD_DIAGRAM, err);
        if (rc == WF_OK)
            rc = wf_diagram__layout(ldot, nnodes, ctx->ref.deadline_ms, &l, err);
        if (rc != WF_OK)
            return rc;
    }
    if (ov != NULL && !l->indexed) {
        wf_diagram__layout_unref(l);
        rc = wf_bulkhead_enter(WF_BULKHEAD_DIAGRAM, err);
        return rc != WF_OK
                   ? rc
                   : wf_diagram_svg(dot, ctx->ref.deadline_ms, ctx->ref.arena, svg, len, err);
    }
    rc = wf_diagram__overlay_svg(l, net, ov, ctx->ref.arena, svg, len, err);
    wf_diagram__layout_unref(l);
    return rc;
}

wf_code
wf_diagram_get(const wf_runtime_ctx *ctx, const wf_diagram_in *in, wf_diagram *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_code rc = check_request(ctx, in, err);
    if (rc != WF_OK)
        return rc;
    wf_definition_row row;
    const wf_net *net;
    wf_diagram_overlay ov;
    bool overlay = !wf_str_empty(in->instance_id) || in->live_totals;
    if (!wf_str_empty(in->instance_id))
        rc = instance_overlay(ctx, in->instance_id, &ov, &row, &net, err);
    else
        rc = wf_runtime_get_definition(ctx, in->definition_key, in->version, &row, &net, err);
    if (rc == WF_OK && in->live_totals)
        rc = fleet_overlay(ctx, in, row.version, &ov, err);
    if (rc != WF_OK)
        return rc;
    /* The cached net may be shared: draw a copy that carries the row's
     * version. */
    wf_net drawn = *net;
    drawn.version = row.version;
    if (wf_str_empty(drawn.key))
        drawn.key = row.key;
    char *dot;
    rc = wf_diagram_dot(&drawn, row.kind, overlay ? &ov : NULL, ctx->ref.arena, &dot, err);
    if (rc != WF_OK)
        return rc;
    if (in->format == WF_DIAGRAM_DOT) {
        out->content = dot;
        out->len = strlen(dot);
        out->content_type = DOT_TYPE;
        return WF_OK;
    }
    size_t nodes = net->n_places + net->n_transitions, edges = net->n_arcs;
    for (size_t i = 0; i < net->n_transitions; i++)
        edges += net->transitions[i].n_cancels;
    if (nodes > WF_DIAGRAM_MAX_SVG_NODES || edges > WF_DIAGRAM_MAX_SVG_EDGES)
        return wf_error_set(err, WF_E_TOO_LARGE,
                            "the net has %zu places and transitions and %zu arcs: SVG is laid "
                            "out for at most %d and %d; ask for DOT",
                            nodes, edges, WF_DIAGRAM_MAX_SVG_NODES, WF_DIAGRAM_MAX_SVG_EDGES);
    char *svg;
    size_t len;
    rc = draw_svg(ctx, &drawn, row.kind, dot, overlay ? &ov : NULL, &svg, &len, err);
    if (rc != WF_OK)
        return rc;
    out->content = svg;
    out->len = len;
    out->content_type = SVG_TYPE;
    return WF_OK;
}
