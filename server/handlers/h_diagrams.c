/*
 * h_diagrams: GetDiagram.
 *
 * Translation only: the request to a wf_diagram_in (DiagramFormat carries
 * the numbers of wf_diagram_format, checked below; unknown numbers pass
 * through and the rule refuses them), the diagram's text to the response.
 * Which version, which overlay and the rendering are server/diagram's.
 */
#include "diagram.h"
#include "h_common.h"
#include "handlers.h"

_Static_assert((int)WF_DIAGRAM_SVG == (int)WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_SVG,
               "diagram format");
_Static_assert((int)WF_DIAGRAM_DOT == (int)WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT,
               "diagram format");

wf_code
h_get_diagram(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetDiagramRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_diagram d;
    wf_h_net_ctx(call, &ctx);
    wf_diagram_in in = {.definition_key = req->definition_key,
                        .version = req->version,
                        .instance_id = req->instance_id,
                        .format = (wf_diagram_format)req->format,
                        .live_totals = req->live_totals,
                        .all_versions = req->all_versions};
    wf_code rc = wf_diagram_get(&ctx, &in, &d, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetDiagramResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_diagram_response__init(m);
    m->content = (char *)d.content;
    m->content_type = (char *)d.content_type;
    *resp = &m->base;
    return WF_OK;
}
