/*
 * console_fleet: the fleet view of a definition. /fleet draws a version
 * with the live totals of the definition's instances overlaid (GetDiagram
 * with live_totals) and lists the totals by place and transition
 * (GetDefinitionStatistics), each count a link to /fleet/instances: the
 * instances at that place or transition (GetDefinitionStatistics with
 * `at`), a page at a time.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console_int.h"

#define PB(m) (&(m).base)
#define E(s) wf_console__esc(x->out, (s))
#define U(s) wf_console__url(x->out, (s))
#define P(s) fputs((s), x->out)

/* Instances per page of /fleet/instances. */
#define FLEET_PAGE 50

static const char *
fleet_q(wf_console__ctx *x, const char *name)
{
    const char *v = wf_http_req_query(x->req, name);
    return v != NULL ? v : "";
}

/* The query's kind of /fleet/instances: "tokens", "enabled" or
 * "incidents"; 0 for anything else (the handler refuses it). */
static Workflow__V1__ElementCountKind
fleet_kind(const char *at)
{
    if (strcmp(at, "tokens") == 0)
        return WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_TOKENS;
    if (strcmp(at, "enabled") == 0)
        return WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_ENABLED_WORK_ITEMS;
    if (strcmp(at, "incidents") == 0)
        return WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_INCIDENTS;
    return WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_UNSPECIFIED;
}

static int64_t
fleet_count(Workflow__V1__ElementCount *const *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i]->element_id, id) == 0)
            return v[i]->count;
    return 0;
}

/* "key=K&amp;version=N" of the page's query (version 0: every version). */
static void
fleet_scope_query(wf_console__ctx *x, const char *key, int version)
{
    P("key=");
    U(key);
    fprintf(x->out, "&amp;version=%d", version);
}

/* A count's cell: the count, linked to the instances there when > 0. */
static void
fleet_cell(wf_console__ctx *x, const char *key, int version, const char *at, const char *id,
           int64_t n)
{
    fprintf(x->out, "<td class=\"count\" data-at=\"%s\" data-element=\"", at);
    E(id);
    P("\">");
    if (n > 0) {
        P("<a href=\"/fleet/instances?");
        fleet_scope_query(x, key, version);
        fprintf(x->out, "&amp;at=%s&amp;element=", at);
        U(id);
        fprintf(x->out, "\">%lld</a>", (long long)n);
    } else {
        P("0");
    }
    P("</td>");
}

static void
fleet_diagram(wf_console__ctx *x, const char *key, int drawn, int version)
{
    P("<section data-live=\"diagram\"><h2>Diagram</h2><p class=\"diagram-box\"><img "
      "class=\"diagram\" id=\"fleet-diagram\" alt=\"diagram with the live totals\" "
      "title=\"click to zoom\" src=\"/diagram.svg?key=");
    U(key);
    fprintf(x->out, "&amp;version=%d&amp;live=1%s&amp;t=%lld\"></p></section>\n", drawn,
            version == 0 ? "&amp;all=1" : "", (long long)time(NULL));
}

static void
fleet_places(wf_console__ctx *x, const Workflow__V1__Definition *d, int version,
             const Workflow__V1__GetDefinitionStatisticsResponse *s)
{
    P("<h2>Places</h2><table id=\"fleet-places\"><tr><th>Place</th><th>Name</th>"
      "<th>Tokens</th></tr>\n");
    for (size_t i = 0; i < d->n_places; i++) {
        const Workflow__V1__Place *p = d->places[i];
        P("<tr><td>");
        E(p->id);
        P("</td><td>");
        E(p->name);
        P("</td>");
        fleet_cell(x, d->key, version, "tokens", p->id, fleet_count(s->tokens, s->n_tokens, p->id));
        P("</tr>\n");
    }
    P("</table>\n");
}

static void
fleet_transitions(wf_console__ctx *x, const Workflow__V1__Definition *d, int version,
                  const Workflow__V1__GetDefinitionStatisticsResponse *s)
{
    P("<h2>Transitions</h2><table id=\"fleet-transitions\"><tr><th>Transition</th>"
      "<th>Name</th><th>Enabled work items</th><th>Incidents</th></tr>\n");
    for (size_t i = 0; i < d->n_transitions; i++) {
        const Workflow__V1__Transition *t = d->transitions[i];
        P("<tr><td>");
        E(t->id);
        P("</td><td>");
        E(t->name);
        P("</td>");
        fleet_cell(x, d->key, version, "enabled", t->id,
                   fleet_count(s->enabled_work_items, s->n_enabled_work_items, t->id));
        fleet_cell(x, d->key, version, "incidents", t->id,
                   fleet_count(s->incidents, s->n_incidents, t->id));
        P("</tr>\n");
    }
    P("</table>\n");
}

/* The other version's (or versions') links of the page. */
static void
fleet_scopes(wf_console__ctx *x, const Workflow__V1__Definition *d, int version)
{
    P("<p id=\"fleet-scopes\">");
    if (version != 0) {
        P("<a href=\"/fleet?");
        fleet_scope_query(x, d->key, 0);
        P("\">Every version</a> · ");
    }
    P("<a href=\"/definition?key=");
    U(d->key);
    fprintf(x->out,
            "&amp;version=%d\">The definition</a> · <a href=\"/instances?"
            "definition_key=",
            d->version);
    U(d->key);
    P("\">Its instances</a></p>\n");
}

void
wf_console__fleet(wf_console__ctx *x)
{
    const char *key = fleet_q(x, "key");
    int version = atoi(fleet_q(x, "version"));
    wf_console__page_begin(x, "Fleet");
    Workflow__V1__GetDefinitionStatisticsRequest sreq =
        WORKFLOW__V1__GET_DEFINITION_STATISTICS_REQUEST__INIT;
    sreq.definition_key = (char *)key;
    sreq.version = version;
    Workflow__V1__GetDefinitionStatisticsResponse *s = NULL;
    Workflow__V1__GetDefinitionRequest greq = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    greq.key = (char *)key;
    greq.version = version;
    Workflow__V1__GetDefinitionResponse *g = NULL;
    wf_error err = {0};
    if (wf_console__call(x, "GetDefinitionStatistics", PB(sreq), (ProtobufCMessage **)&s, &err) !=
            WF_OK ||
        wf_console__call(x, "GetDefinition", PB(greq), (ProtobufCMessage **)&g, &err) != WF_OK) {
        wf_console__page_error(x, &err);
        wf_console__page_end(x);
        return;
    }
    const Workflow__V1__Definition *d = g->definition;
    P("<dl class=\"summary\"><dt>Key</dt><dd id=\"fleet-key\">");
    E(d->key);
    P("</dd><dt>Instances of</dt><dd id=\"fleet-scope\">");
    if (version == 0)
        fprintf(x->out, "every version (drawn: version %d, the latest)", d->version);
    else
        fprintf(x->out, "version %d", version);
    fprintf(x->out, "</dd><dt>Not ended</dt><dd id=\"fleet-live\">%lld</dd></dl>\n",
            (long long)s->live_instances);
    fleet_scopes(x, d, version);
    fleet_diagram(x, d->key, d->version, version);
    P("<section data-live=\"list\" data-refresh=\"5000\">");
    fleet_places(x, d, version, s);
    fleet_transitions(x, d, version, s);
    P("</section>\n");
    wf_console__page_end(x);
}

/* "with a token in place E" and the like, for the list's heading. */
static void
fleet_where(wf_console__ctx *x, Workflow__V1__ElementCountKind k, const char *element)
{
    P(k == WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_TOKENS ? "with a token in place "
      : k == WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_INCIDENTS
          ? "with an incident at "
          : "with work enabled at ");
    P("<code id=\"fleet-element\">");
    E(element);
    P("</code>");
}

void
wf_console__fleet_instances(wf_console__ctx *x)
{
    const char *key = fleet_q(x, "key"), *element = fleet_q(x, "element");
    int version = atoi(fleet_q(x, "version"));
    Workflow__V1__ElementCountKind k = fleet_kind(fleet_q(x, "at"));
    wf_console__page_begin(x, "Instances there");
    Workflow__V1__GetDefinitionStatisticsRequest req =
        WORKFLOW__V1__GET_DEFINITION_STATISTICS_REQUEST__INIT;
    req.definition_key = (char *)key;
    req.version = version;
    req.at = k;
    req.element_id = (char *)element;
    req.page_size = FLEET_PAGE;
    req.page_token = (char *)fleet_q(x, "page_token");
    Workflow__V1__GetDefinitionStatisticsResponse *s = NULL;
    wf_error err = {0};
    if (wf_console__call(x, "GetDefinitionStatistics", PB(req), (ProtobufCMessage **)&s, &err) !=
        WF_OK) {
        wf_console__page_error(x, &err);
        wf_console__page_end(x);
        return;
    }
    P("<p id=\"fleet-heading\">Instances of <a href=\"/fleet?");
    fleet_scope_query(x, key, version);
    P("\">");
    E(key);
    P("</a>");
    if (version != 0)
        fprintf(x->out, " version %d", version);
    P(" that have not ended, ");
    fleet_where(x, k, element);
    P(":</p>\n");
    if (s->n_instance_ids == 0)
        P("<p class=\"empty\" id=\"fleet-none\">No instance is there now.</p>\n");
    P("<ul id=\"fleet-instances\">");
    for (size_t i = 0; i < s->n_instance_ids; i++) {
        P("<li><a href=\"/instance?id=");
        U(s->instance_ids[i]);
        P("\">");
        E(s->instance_ids[i]);
        P("</a></li>");
    }
    P("</ul>\n");
    if (s->next_page_token[0] != '\0') {
        P("<p class=\"paging\"><a id=\"next-page\" href=\"/fleet/instances?");
        fleet_scope_query(x, key, version);
        P("&amp;at=");
        U(fleet_q(x, "at"));
        P("&amp;element=");
        U(element);
        P("&amp;page_token=");
        U(s->next_page_token);
        P("\">Next page →</a></p>\n");
    }
    wf_console__page_end(x);
}
