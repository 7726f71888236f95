/*
 * console_pages: the pages and actions. Each builds the protobuf request a
 * gRPC client would send, runs it through the route's handler
 * (wf_console__call) and renders the response; no rule is decided here.
 */
#define _XOPEN_SOURCE 700 /* strptime */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console_int.h"
#include "wf_explain.h"

#define PB(m) (&(m).base)

/* Instances a batch preview lists. */
#define PREVIEW_ROWS 20

/* Place mappings one batch form may carry. */
#define MAX_MAPPINGS 64

static const char *
q(wf_console__ctx *x, const char *name)
{
    const char *v = wf_http_req_query(x->req, name);
    return v != NULL ? v : "";
}

#define E(s) wf_console__esc(x->out, (s))
#define U(s) wf_console__url(x->out, (s))
#define P(s) fputs((s), x->out)

static void
link_instance(wf_console__ctx *x, const char *id)
{
    P("<a href=\"/instance?id=");
    U(id);
    P("\">");
    E(id);
    P("</a>");
}

static void
text_input(wf_console__ctx *x, const char *label, const char *name)
{
    P("<label>");
    E(label);
    P(" <input type=\"text\" name=\"");
    E(name);
    P("\" value=\"");
    E(q(x, name));
    P("\"></label> ");
}

/* A select of an enum's values (its UNSPECIFIED as "any"). */
static void
enum_select(wf_console__ctx *x, const char *label, const char *name,
            const ProtobufCEnumDescriptor *d)
{
    const char *cur = q(x, name);
    P("<label>");
    E(label);
    P(" <select name=\"");
    E(name);
    P("\"><option value=\"\">any</option>");
    for (unsigned i = 1; i < d->n_values; i++) {
        P("<option value=\"");
        E(d->values[i].name);
        P("\"");
        if (strcmp(cur, d->values[i].name) == 0)
            P(" selected");
        P(">");
        wf_console__enum(x->out, d, d->values[i].value);
        P("</option>");
    }
    P("</select></label> ");
}

static int
enum_value(const ProtobufCEnumDescriptor *d, const char *name)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value_by_name(d, name);
    return v != NULL ? v->value : 0;
}

/* Parses "YYYY-MM-DDTHH:MM" (or with ":SS") UTC into a Timestamp; NULL
 * when empty or malformed. */
static Google__Protobuf__Timestamp *
parse_time(wf_console__ctx *x, const char *s)
{
    if (s == NULL || s[0] == '\0')
        return NULL;
    struct tm tm = {0};
    const char *end = strptime(s, "%Y-%m-%dT%H:%M", &tm);
    if (end != NULL && *end == ':')
        end = strptime(end + 1, "%S", &tm);
    if (end == NULL || *end != '\0')
        return NULL;
    Google__Protobuf__Timestamp *t = wf_arena_alloc(x->arena, sizeof *t);
    if (t == NULL)
        return NULL;
    google__protobuf__timestamp__init(t);
    t->seconds = (int64_t)timegm(&tm);
    return t;
}

/* A "next page" link: the current query with page_token replaced. */
static void
next_page(wf_console__ctx *x, const char *token, const char *const *keep)
{
    if (token == NULL || token[0] == '\0')
        return;
    P("<p class=\"paging\"><a id=\"next-page\" href=\"");
    E(wf_http_req_path(x->req));
    P("?page_token=");
    U(token);
    for (const char *const *k = keep; *k != NULL; k++) {
        const char *v = q(x, *k);
        if (v[0] == '\0')
            continue;
        P("&amp;");
        P(*k);
        P("=");
        U(v);
    }
    P("\">Next page →</a></p>\n");
}

/* An <img> of the diagram (/diagram.svg) for the query "param=value...". */
static void
diagram_img(wf_console__ctx *x, const char *key, int version, const char *instance)
{
    P("<section data-live=\"diagram\"><h2>Diagram</h2><p class=\"diagram-box\"><img "
      "class=\"diagram\" alt=\"diagram\" title=\"click to zoom\" "
      "src=\"/diagram.svg?");
    if (instance != NULL) {
        P("instance=");
        U(instance);
        /* A new URL after each change: the browser does not reuse a stale
         * drawing when the section is reloaded. */
        fprintf(x->out, "&amp;t=%lld", (long long)time(NULL));
    } else {
        P("key=");
        U(key);
        fprintf(x->out, "&amp;version=%d", version);
    }
    P("\"></p></section>\n");
}

/* Calls method as the page's call; on a refusal shows it and ends the
 * page: false. */
static bool
page_call(wf_console__ctx *x, const char *method, const ProtobufCMessage *req,
          ProtobufCMessage **resp)
{
    wf_error err = {0};
    if (wf_console__call(x, method, req, resp, &err) == WF_OK)
        return true;
    wf_console__page_error(x, &err);
    wf_console__page_end(x);
    return false;
}

/* A list's section, reloaded by the page's script every 5 s while no form
 * of the page is being edited. */
static void
list_begin(wf_console__ctx *x)
{
    P("<section data-live=\"list\" data-refresh=\"5000\">");
}

/* ---- definitions ------------------------------------------------------------ */

void
wf_console__definitions(wf_console__ctx *x)
{
    wf_console__page_begin(x, "Definitions");
    Workflow__V1__ListDefinitionsRequest req = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    req.page_token = (char *)q(x, "page_token");
    Workflow__V1__ListDefinitionsResponse *resp = NULL;
    if (!page_call(x, "ListDefinitions", PB(req), (ProtobufCMessage **)&resp))
        return;
    list_begin(x);
    P("<table id=\"definitions\"><tr><th>Key</th><th>Latest version</th><th>Name</th>"
      "<th>Kind</th><th>Deployed</th></tr>\n");
    for (size_t i = 0; i < resp->n_definitions; i++) {
        const Workflow__V1__Definition *d = resp->definitions[i];
        P("<tr><td><a href=\"/definition?key=");
        U(d->key);
        P("\">");
        E(d->key);
        fprintf(x->out, "</a></td><td>%d</td><td>", d->version);
        E(d->name);
        P("</td><td>");
        wf_console__enum(x->out, &workflow__v1__definition_kind__descriptor, (int)d->kind);
        P("</td><td>");
        wf_console__time(x->out, d->created_at);
        P("</td></tr>\n");
    }
    P("</table>\n");
    static const char *const keep[] = {NULL};
    next_page(x, resp->next_page_token, keep);
    P("</section>");
    wf_console__page_end(x);
}

void
wf_console__definition(wf_console__ctx *x)
{
    const char *key = q(x, "key");
    wf_console__page_begin(x, "Definition");
    Workflow__V1__GetDefinitionRequest greq = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    greq.key = (char *)key;
    greq.version = atoi(q(x, "version"));
    Workflow__V1__GetDefinitionResponse *g = NULL;
    wf_error err = {0};
    if (!page_call(x, "GetDefinition", PB(greq), (ProtobufCMessage **)&g))
        return;
    const Workflow__V1__Definition *d = g->definition;
    P("<dl class=\"summary\"><dt>Key</dt><dd id=\"def-key\">");
    E(d->key);
    fprintf(x->out, "</dd><dt>Version</dt><dd>%d</dd><dt>Name</dt><dd>", d->version);
    E(d->name);
    P("</dd><dt>Kind</dt><dd>");
    wf_console__enum(x->out, &workflow__v1__definition_kind__descriptor, (int)d->kind);
    P("</dd><dt>Description</dt><dd>");
    E(d->description);
    P("</dd><dt>Deployed by</dt><dd>");
    E(d->created_by);
    P("</dd></dl>\n");

    /* Versions: every version of the key, newest first. */
    Workflow__V1__ListDefinitionsRequest lreq = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    lreq.key = (char *)key;
    lreq.page_size = 100;
    Workflow__V1__ListDefinitionsResponse *l = NULL;
    if (wf_console__call(x, "ListDefinitions", PB(lreq), (ProtobufCMessage **)&l, &err) == WF_OK) {
        P("<h2>Versions</h2><ul id=\"versions\">");
        for (size_t i = 0; i < l->n_definitions; i++) {
            P("<li><a href=\"/definition?key=");
            U(key);
            fprintf(x->out, "&amp;version=%d\">version %d</a> ", l->definitions[i]->version,
                    l->definitions[i]->version);
            wf_console__time(x->out, l->definitions[i]->created_at);
            P("</li>");
        }
        P("</ul>\n");
    }
    if (d->n_places > 0) {
        P("<h2>Places</h2><table><tr><th>Id</th><th>Name</th><th>Kind</th></tr>");
        for (size_t i = 0; i < d->n_places; i++) {
            P("<tr><td>");
            E(d->places[i]->id);
            P("</td><td>");
            E(d->places[i]->name);
            P("</td><td>");
            wf_console__enum(x->out, &workflow__v1__place_kind__descriptor,
                             (int)d->places[i]->kind);
            P("</td></tr>");
        }
        P("</table>\n");
    }
    if (d->n_transitions > 0) {
        P("<h2>Transitions</h2><table id=\"transitions\"><tr><th>Id</th><th>Name</th>"
          "<th>Trigger</th><th>Details</th></tr>");
        for (size_t i = 0; i < d->n_transitions; i++) {
            P("<tr class=\"transition\" data-transition=\"");
            E(d->transitions[i]->id);
            P("\"><td>");
            E(d->transitions[i]->id);
            P("</td><td>");
            E(d->transitions[i]->name);
            P("</td><td>");
            wf_console__enum(x->out, &workflow__v1__trigger__descriptor,
                             (int)d->transitions[i]->trigger);
            P("</td><td>");
            wf_console__transition_details(x, d->transitions[i]);
            P("</td></tr>");
        }
        P("</table>\n");
    }
    wf_console__step_list(x, d, NULL, 0);
    diagram_img(x, d->key, d->version, NULL);
    P("<p><a href=\"/instances?definition_key=");
    U(key);
    P("\">Instances of this definition</a> · <a id=\"fleet-link\" href=\"/fleet?key=");
    U(key);
    fprintf(x->out,
            "&amp;version=%d\">Fleet of this version</a> · <a href=\"/fleet?key=", d->version);
    U(key);
    P("&amp;version=0\">Fleet of every version</a></p>\n");
    wf_console__page_end(x);
}

/* ---- instances -------------------------------------------------------------- */

/* "type id" of an aggregate; nothing when there is none. */
static void
aggregate_text(wf_console__ctx *x, const Workflow__V1__Aggregate *a)
{
    if (a == NULL || (a->type[0] == '\0' && a->id[0] == '\0'))
        return;
    E(a->type);
    P(" ");
    E(a->id);
}

/* The one line an empty section shows instead of a table. */
static void
empty_line(wf_console__ctx *x, const char *id, const char *text)
{
    P("<p class=\"empty\" id=\"");
    E(id);
    P("\">");
    E(text);
    P("</p>");
}

/* The open incidents of a list's instances, for their badges: one
 * ListIncidents call of at most INCIDENT_ROWS. */
#define INCIDENT_ROWS 500

/* Rows of an instance list whose "Now" column is looked up (a
 * ListWorkItems each); further rows show "…". */
#define NOW_ROWS 50

typedef struct list_info {
    const Workflow__V1__ListIncidentsResponse *incidents; /* NULL: unknown */
    int now_budget;                                       /* rows left to look up */
} list_info;

/* Reads the open incidents (of one definition key when given) into li. */
static void
list_incidents(wf_console__ctx *x, const char *definition_key, list_info *li)
{
    Workflow__V1__ListIncidentsRequest req = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    req.definition_key = (char *)definition_key;
    req.page_size = INCIDENT_ROWS;
    Workflow__V1__ListIncidentsResponse *resp = NULL;
    wf_error err = {0};
    if (wf_console__call(x, "ListIncidents", PB(req), (ProtobufCMessage **)&resp, &err) == WF_OK)
        li->incidents = resp;
}

static const Workflow__V1__Incident *
incident_of(const list_info *li, const char *instance_id)
{
    if (li == NULL || li->incidents == NULL)
        return NULL;
    for (size_t i = 0; i < li->incidents->n_incidents; i++)
        if (strcmp(li->incidents->incidents[i]->instance_id, instance_id) == 0)
            return li->incidents->incidents[i];
    return NULL;
}

/* An instance's status, with a badge when it has an open incident (an
 * incident is what makes an instance FAILED): its code when known, its
 * message as the badge's title. */
static void
status_cell(wf_console__ctx *x, const Workflow__V1__Instance *in, const list_info *li)
{
    P("<td class=\"status\">");
    wf_console__enum(x->out, &workflow__v1__instance_status__descriptor, (int)in->status);
    const Workflow__V1__Incident *inc = incident_of(li, in->id);
    if (inc != NULL) {
        P(" <span class=\"badge incident\" title=\"");
        E(inc->message);
        P("\">incident <span class=\"incident-code\">");
        E(inc->code);
        P("</span></span>");
    } else if (in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED) {
        P(" <span class=\"badge incident\">incident</span>");
    }
    P("</td>");
}

/* What an instance that has not ended does now: its enabled transitions
 * (for a step list its current steps) by name; "—" for none or an
 * AD_HOC instance, "…" past the rows looked up. */
static void
now_cell(wf_console__ctx *x, const Workflow__V1__Instance *in, list_info *li)
{
    P("<td class=\"now\">");
    if (wf_explain_is_waiting(in) ||
        in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED ||
        in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED) {
        if (li == NULL || li->now_budget-- <= 0) {
            P("…</td>");
            return;
        }
        Workflow__V1__WorkItemState st[1] = {
            WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_ENABLED};
        Workflow__V1__ListWorkItemsRequest req = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
        req.instance_id = in->id;
        req.states = st;
        req.n_states = 1;
        req.page_size = 20;
        Workflow__V1__ListWorkItemsResponse *w = NULL;
        wf_error err = {0};
        if (wf_console__call(x, "ListWorkItems", PB(req), (ProtobufCMessage **)&w, &err) == WF_OK)
            for (size_t i = 0; i < w->n_work_items; i++) {
                P(i > 0 ? ", " : "");
                E(w->work_items[i]->transition_name[0] ? w->work_items[i]->transition_name
                                                       : w->work_items[i]->transition_id);
            }
    }
    P("</td>");
}

static void
instance_rows(wf_console__ctx *x, Workflow__V1__Instance *const *v, size_t n, const char *id,
              list_info *li)
{
    if (n == 0) {
        empty_line(x, id, "No instance.");
        return;
    }
    P("<table id=\"");
    E(id);
    P("\"><tr><th>Id</th><th>Definition</th><th>Aggregate</th><th>Status</th><th>Now</th>"
      "<th>Started by</th><th>Created</th><th>Ended</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        P("<tr><td>");
        link_instance(x, v[i]->id);
        P("</td><td>");
        E(v[i]->definition_key);
        fprintf(x->out, " v%d</td><td class=\"aggregate\">", v[i]->definition_version);
        aggregate_text(x, v[i]->aggregate);
        P("</td>");
        status_cell(x, v[i], li);
        now_cell(x, v[i], li);
        P("<td>");
        E(v[i]->started_by);
        P("</td><td>");
        wf_console__time(x->out, v[i]->created_at);
        P("</td><td>");
        wf_console__time(x->out, v[i]->ended_at);
        P("</td></tr>\n");
    }
    P("</table>\n");
}

/* The calls of CALL transitions: each child linked, every value escaped. */
static void
call_rows(wf_console__ctx *x, Workflow__V1__InstanceCall *const *v, size_t n)
{
    P("<table id=\"calls\"><tr><th>Id</th><th>Transition</th><th>Definition</th>"
      "<th>Status</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        P("<tr><td>");
        link_instance(x, v[i]->instance_id);
        P("</td><td>");
        E(v[i]->transition_id);
        P("</td><td>");
        E(v[i]->definition_key);
        fprintf(x->out, " v%d</td><td>", v[i]->definition_version);
        wf_console__enum(x->out, &workflow__v1__instance_status__descriptor, (int)v[i]->status);
        P("</td></tr>\n");
    }
    P("</table>\n");
}

/* The search by id: the one instance of the tenant with that id (a root or
 * a child), as a row of the list, or its refusal (INSTANCE_NOT_FOUND). */
static void
instance_by_id(wf_console__ctx *x, const char *id)
{
    Workflow__V1__GetInstanceRequest req = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    Workflow__V1__GetInstanceResponse *g = NULL;
    if (!page_call(x, "GetInstance", PB(req), (ProtobufCMessage **)&g))
        return;
    Workflow__V1__Instance *one[1] = {g->instance};
    list_info li = {NULL, NOW_ROWS};
    list_incidents(x, g->instance->definition_key, &li);
    instance_rows(x, one, 1, "instances", &li);
    P("<p><a href=\"/instances\">All instances</a></p>\n");
    wf_console__page_end(x);
}

/* The instances with an open incident of a code (of one definition key
 * when given): a page of ListIncidents, each instance read by GetInstance.
 * The other filters do not apply. */
static void
instances_by_incident(wf_console__ctx *x)
{
    Workflow__V1__ListIncidentsRequest req = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    req.code = (char *)q(x, "incident_code");
    req.definition_key = (char *)q(x, "definition_key");
    req.page_size = NOW_ROWS;
    req.page_token = (char *)q(x, "page_token");
    Workflow__V1__ListIncidentsResponse *resp = NULL;
    if (!page_call(x, "ListIncidents", PB(req), (ProtobufCMessage **)&resp))
        return;
    Workflow__V1__Instance **v = wf_arena_calloc(x->arena, resp->n_incidents + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v != NULL && i < resp->n_incidents; i++) {
        Workflow__V1__GetInstanceRequest g = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
        g.instance_id = resp->incidents[i]->instance_id;
        Workflow__V1__GetInstanceResponse *gr = NULL;
        wf_error err = {0};
        if (wf_console__call(x, "GetInstance", PB(g), (ProtobufCMessage **)&gr, &err) == WF_OK)
            v[n++] = gr->instance;
    }
    list_info li = {resp, NOW_ROWS};
    list_begin(x);
    instance_rows(x, v, n, "instances", &li);
    static const char *const keep[] = {"incident_code", "definition_key", NULL};
    next_page(x, resp->next_page_token, keep);
    P("</section>");
    wf_console__page_end(x);
}

void
wf_console__instances(wf_console__ctx *x)
{
    wf_console__page_begin(x, "Instances");
    P("<form method=\"get\" action=\"/instances\" class=\"filters search\">");
    text_input(x, "Instance id", "id");
    P("<button type=\"submit\" class=\"search-id\">Find</button></form>\n");
    if (q(x, "id")[0] != '\0') {
        instance_by_id(x, q(x, "id"));
        return;
    }

    P("<form method=\"get\" action=\"/instances\" class=\"filters\">");
    text_input(x, "Started by (* = anyone)", "started_by");
    enum_select(x, "State", "state", &workflow__v1__process_state__descriptor);
    enum_select(x, "Status", "status", &workflow__v1__instance_status__descriptor);
    text_input(x, "Definition key", "definition_key");
    text_input(x, "Aggregate type", "aggregate_type");
    text_input(x, "Aggregate id", "aggregate_id");
    text_input(x, "Variable path", "var_path");
    text_input(x, "Variable value (JSON)", "var_value");
    text_input(x, "Created after (UTC, YYYY-MM-DDTHH:MM)", "created_after");
    text_input(x, "Created before", "created_before");
    text_input(x, "Ended after", "ended_after");
    text_input(x, "Ended before", "ended_before");
    text_input(x, "Page size", "page_size");
    text_input(x, "Incident code", "incident_code");
    P("<label>Order <select name=\"order\"><option value=\"\">newest first</option>"
      "<option value=\"oldest\"");
    if (strcmp(q(x, "order"), "oldest") == 0)
        P(" selected");
    P(">oldest first</option></select></label> ");
    P("<button type=\"submit\">Filter</button></form>\n");
    if (q(x, "incident_code")[0] != '\0') {
        instances_by_incident(x);
        return;
    }

    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = (char *)(q(x, "started_by")[0] ? q(x, "started_by") : "*");
    req.state = enum_value(&workflow__v1__process_state__descriptor, q(x, "state"));
    req.status = enum_value(&workflow__v1__instance_status__descriptor, q(x, "status"));
    req.definition_key = (char *)q(x, "definition_key");
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    if (q(x, "aggregate_type")[0] || q(x, "aggregate_id")[0]) {
        agg.type = (char *)q(x, "aggregate_type");
        agg.id = (char *)q(x, "aggregate_id");
        req.aggregate = &agg;
    }
    Workflow__V1__VariableFilter vf = WORKFLOW__V1__VARIABLE_FILTER__INIT;
    Workflow__V1__VariableFilter *vfs[1] = {&vf};
    if (q(x, "var_path")[0] || q(x, "var_value")[0]) {
        vf.path = (char *)q(x, "var_path");
        vf.value_json = (char *)q(x, "var_value");
        req.variables = vfs;
        req.n_variables = 1;
    }
    req.created_after = parse_time(x, q(x, "created_after"));
    req.created_before = parse_time(x, q(x, "created_before"));
    req.ended_after = parse_time(x, q(x, "ended_after"));
    req.ended_before = parse_time(x, q(x, "ended_before"));
    req.page_size = atoi(q(x, "page_size"));
    req.page_token = (char *)q(x, "page_token");
    req.newest_first = strcmp(q(x, "order"), "oldest") != 0;
    Workflow__V1__ListInstancesResponse *resp = NULL;
    if (!page_call(x, "ListInstances", PB(req), (ProtobufCMessage **)&resp))
        return;
    list_info li = {NULL, NOW_ROWS};
    list_incidents(x, req.definition_key, &li);
    list_begin(x);
    instance_rows(x, resp->instances, resp->n_instances, "instances", &li);
    static const char *const keep[] = {
        "started_by",   "state",        "status",    "definition_key", "aggregate_type",
        "aggregate_id", "var_path",     "var_value", "created_after",  "created_before",
        "ended_after",  "ended_before", "page_size", "order",          NULL};
    next_page(x, resp->next_page_token, keep);
    P("</section>");
    wf_console__page_end(x);
}

/* The Complete form of a task. Its action carries the page's query, so
 * that a refusal can show the same page again; a refused Complete of
 * this task keeps the typed output and shows the reason inline. The page's
 * script checks the JSON before it is sent. */
static void
complete_form(wf_console__ctx *x, const Workflow__V1__Task *t, const char *back)
{
    const char *query = strchr(back, '?');
    bool refused = x->refused != NULL && strcmp(x->refused, t->id) == 0;
    const char *action =
        query != NULL ? wf_arena_printf(x->arena, "/task/complete%s", query) : NULL;
    wf_console__form_begin(x, action != NULL ? action : "/task/complete", "inline complete");
    wf_console__hidden(x, "task_id", t->id);
    wf_console__hidden(x, "back", back);
    P("<input type=\"text\" name=\"variables_json\" placeholder=\"{}\" data-json=\"object\" "
      "aria-label=\"output variables (JSON)\" value=\"");
    E(refused ? wf_console__field(x, "variables_json") : "");
    P("\"><button type=\"submit\" class=\"complete\">Complete</button>"
      "<span class=\"json-error error\"></span></form>");
    if (refused) {
        P("<div class=\"refused\" id=\"complete-refused\">");
        wf_console__page_error(x, x->refusal);
        P("</div>");
    }
}

static void
task_rows(wf_console__ctx *x, Workflow__V1__Task *const *v, size_t n, const char *back,
          bool actions)
{
    if (n == 0) {
        empty_line(x, "tasks-none", "No task.");
        return;
    }
    P("<table class=\"tasks\"><tr><th>Title</th><th>Status</th><th>Assignee</th>"
      "<th>Claimed by</th><th>Instance</th><th>Created</th><th>Due</th>");
    if (actions)
        P("<th>Act</th>");
    P("</tr>\n");
    for (size_t i = 0; i < n; i++) {
        const Workflow__V1__Task *t = v[i];
        P("<tr class=\"task\" data-task=\"");
        E(t->id);
        P("\"><td class=\"title\">");
        E(t->title);
        P("</td><td class=\"status\">");
        wf_console__enum(x->out, &workflow__v1__task_status__descriptor, (int)t->status);
        P("</td><td>");
        wf_console__enum(x->out, &workflow__v1__assignee_kind__descriptor, (int)t->assignee_kind);
        P(" ");
        E(t->assignee_id);
        P("</td><td>");
        E(t->claimed_by);
        P("</td><td>");
        link_instance(x, t->instance_id);
        P("</td><td>");
        wf_console__time(x->out, t->created_at);
        P("</td><td>");
        wf_console__time(x->out, t->due_at);
        P("</td>");
        if (actions) {
            P("<td>");
            bool pending = t->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN ||
                           t->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED;
            if (wf_console__may(x, "/task/complete") && pending) {
                if (t->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN &&
                    t->assignee_kind == WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP) {
                    wf_console__form_begin(x, "/task/claim", "inline");
                    wf_console__hidden(x, "task_id", t->id);
                    wf_console__hidden(x, "back", back);
                    P("<button type=\"submit\" class=\"claim\">Claim</button></form> ");
                }
                if (t->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED) {
                    wf_console__form_begin(x, "/task/release", "inline");
                    wf_console__hidden(x, "task_id", t->id);
                    wf_console__hidden(x, "back", back);
                    P("<button type=\"submit\" class=\"release\">Release</button></form> ");
                }
                complete_form(x, t, back);
            }
            P("</td>");
        }
        P("</tr>\n");
    }
    P("</table>\n");
}

typedef struct ev_rows {
    wf_console__ctx *x;
    int64_t last;
} ev_rows;

static void
event_row(void *arg, const Workflow__V1__Event *ev)
{
    ev_rows *r = arg;
    wf_console__ctx *x = r->x;
    fprintf(x->out, "<tr><td>%lld</td><td>", (long long)ev->sequence);
    wf_console__time(x->out, ev->time);
    P("</td><td>");
    wf_console__enum(x->out, &workflow__v1__event_type__descriptor, (int)ev->type);
    P("</td><td>");
    E(ev->instance_id);
    P("</td><td>");
    E(ev->actor);
    P("</td><td><code>");
    E(ev->data_json);
    P("</code></td></tr>\n");
    r->last = ev->sequence;
}

/* A fan-out's progress: its instances and how many were delivered,
 * skipped and are pending; nothing for another signal. */
static void
fanout_progress(wf_console__ctx *x, const Workflow__V1__Signal *sg)
{
    int64_t n = sg->deliveries_pending + sg->deliveries_delivered + sg->deliveries_skipped;
    if (n == 0)
        return;
    fprintf(x->out, "%lld instances: %lld delivered, %lld skipped, %lld pending", (long long)n,
            (long long)sg->deliveries_delivered, (long long)sg->deliveries_skipped,
            (long long)sg->deliveries_pending);
}

/* This instance's delivery of a fanned-out signal: its state and when it
 * ran; nothing for another signal. */
static void
own_delivery(wf_console__ctx *x, const Workflow__V1__Signal *sg)
{
    const Workflow__V1__SignalDelivery *d = sg->delivery;
    if (d == NULL)
        return;
    wf_console__enum(x->out, &workflow__v1__signal_delivery_state__descriptor, (int)d->state);
    if (d->delivered_at != NULL) {
        P(" ");
        wf_console__time(x->out, d->delivered_at);
    }
}

/* A row of the instance's log. A fanned-out signal's log row names the
 * first instance as its consumer: on another instance's page its own
 * delivery stands instead. */
static void
signal_row(wf_console__ctx *x, const Workflow__V1__Signal *sg, const char *id)
{
    bool theirs = sg->delivery != NULL && strcmp(sg->consumed_by_instance, id) != 0;
    P("<tr><td>");
    E(sg->name);
    P("</td><td>");
    wf_console__enum(x->out, &workflow__v1__signal_outcome__descriptor, (int)sg->outcome);
    if (sg->expired)
        P(" (expired)");
    P("</td><td>");
    wf_console__time(x->out, sg->received_at);
    P("</td><td>");
    wf_console__time(x->out, theirs ? NULL : sg->consumed_at);
    P("</td><td>");
    E(theirs ? "" : sg->transition_id);
    P("</td><td class=\"delivery\">");
    own_delivery(x, sg);
    P("</td><td class=\"fanout\">");
    fanout_progress(x, sg);
    P("</td><td><code>");
    E(sg->payload_json);
    P("</code></td></tr>\n");
}

/* The instance's signal delivery log: the signals sent to it or consumed
 * by it, and those fanned out to its aggregate with a delivery to it. */
static void
signal_log(wf_console__ctx *x, const char *id)
{
    wf_error err;
    Workflow__V1__ListSignalsRequest sreq = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    sreq.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
    sreq.instance_id = (char *)id;
    sreq.page_size = 100;
    Workflow__V1__ListSignalsResponse *s = NULL;
    P("<section data-live=\"signals\"><h2>Signal delivery log</h2>");
    bool listed =
        wf_console__call(x, "ListSignals", PB(sreq), (ProtobufCMessage **)&s, &err) == WF_OK;
    if (listed && s->n_signals == 0) {
        empty_line(x, "signals-none", "No signal was sent to this instance.");
    } else if (listed) {
        P("<table id=\"signals\"><tr><th>Name</th><th>Outcome</th><th>Received</th>"
          "<th>Consumed</th><th>Transition</th><th>Delivery here</th><th>Fan-out</th>"
          "<th>Payload</th></tr>\n");
        for (size_t i = 0; i < s->n_signals; i++)
            signal_row(x, s->signals[i], id);
        P("</table>");
    } else {
        wf_console__page_error(x, &err);
        x->status = 200;
    }
    P("</section>\n");
}

/* The progress of the instance's for-each transitions, one line each. */
static void
for_each_summary(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g)
{
    for (size_t i = 0; i < g->n_for_each; i++) {
        const Workflow__V1__ForEachProgress *f = g->for_each[i];
        P("<p class=\"for-each\"><b>For each:</b> ");
        E(f->transition_id);
        fprintf(x->out, ", %d of %d items completed, %d needed (", f->completed, f->total,
                f->required);
        wf_console__enum(x->out, &workflow__v1__completion_mode__descriptor,
                         f->mode ? (int)f->mode : 1);
        P(f->sequential ? ", one at a time)</p>" : ", in parallel)</p>");
    }
}

/* The top of an instance page: what it waits for (the explanation wfctl
 * show prints), its current steps and, when failed, that it has an
 * incident. */
static void
waiting_summary(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g)
{
    char b[1024];
    P("<p class=\"waiting\" id=\"waiting-for\"><b>Waiting for:</b> ");
    if (g->instance->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED) {
        P("<span class=\"badge incident\">incident</span> a person to retry it after the error "
          "below");
    } else if (g->instance->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED) {
        P("a person to resume it (suspended)");
    } else if (!wf_explain_is_waiting(g->instance)) {
        P("nothing: the instance is ");
        wf_console__enum(x->out, &workflow__v1__instance_status__descriptor,
                         (int)g->instance->status);
    } else if (wf_explain_waiting(g, b, sizeof b)[0] != '\0') {
        E(b);
    } else {
        P("nothing it could name (no open task, job, timer, signal or running referral)");
    }
    P("</p>");
    if (g->n_current_steps > 0) {
        P("<p id=\"current-steps\"><b>Current step");
        P(g->n_current_steps == 1 ? ":</b> " : "s:</b> ");
        for (size_t i = 0; i < g->n_current_steps; i++) {
            P(i > 0 ? ", " : "");
            E(g->current_steps[i]->name[0] ? g->current_steps[i]->name : g->current_steps[i]->id);
        }
        P("</p>");
    }
    for_each_summary(x, g);
}

/* The marking: tokens by place; one line when there is none (an AD_HOC
 * instance, or one that has ended). */
static void
marking_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g)
{
    P("<section data-live=\"marking\"><h2>Marking</h2>");
    if (g->n_marking == 0) {
        empty_line(x, "marking-none", "No token.");
        P("</section>\n");
        return;
    }
    P("<table id=\"marking\"><tr><th>Place</th><th>Tokens</th></tr>");
    for (size_t i = 0; i < g->n_marking; i++) {
        P("<tr><td>");
        E(g->marking[i]->key);
        fprintf(x->out, "</td><td>%d</td></tr>", g->marking[i]->value);
    }
    P("</table></section>\n");
}

/* A job's state: activated (by whom, lease until), waiting for its retry,
 * or activatable. */
static void
job_state(wf_console__ctx *x, const Workflow__V1__Job *j)
{
    if (j->key[0] != '\0')
        P("activated");
    else if (j->activatable_at != NULL)
        P("waiting for its retry");
    else
        P("activatable");
}

static void
job_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g)
{
    P("<section data-live=\"jobs\"><h2>Jobs</h2>");
    if (g->n_jobs == 0) {
        empty_line(x, "jobs-none", "No job is waiting for a worker.");
        P("</section>\n");
        return;
    }
    P("<table id=\"jobs\"><tr><th>Type</th><th>Transition</th><th>Attempt</th><th>State</th>"
      "<th>Next retry</th><th>Worker</th><th>Lease expires</th><th>Last error</th></tr>\n");
    for (size_t i = 0; i < g->n_jobs; i++) {
        const Workflow__V1__Job *j = g->jobs[i];
        P("<tr class=\"job\"><td>");
        E(j->job_type);
        if (j->compensation)
            P(" (compensation)");
        P("</td><td>");
        E(j->transition_id);
        fprintf(x->out, "</td><td class=\"attempt\">%d / %d</td><td class=\"state\">", j->attempt,
                j->max_attempts);
        job_state(x, j);
        P("</td><td>");
        wf_console__time(x->out, j->activatable_at);
        P("</td><td class=\"worker\">");
        E(j->worker);
        P("</td><td>");
        wf_console__time(x->out, j->lease_expires_at);
        P("</td><td class=\"error\">");
        E(j->error_message);
        P("</td></tr>\n");
    }
    P("</table></section>\n");
}

static void
timer_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g)
{
    P("<section data-live=\"timers\"><h2>Timers</h2>");
    if (g->n_timers == 0) {
        empty_line(x, "timers-none", "No timer is pending.");
        P("</section>\n");
        return;
    }
    P("<table id=\"timers\"><tr><th>Transition</th><th>Due (UTC)</th></tr>\n");
    for (size_t i = 0; i < g->n_timers; i++) {
        P("<tr><td>");
        E(g->timers[i]->transition_id);
        P("</td><td class=\"due\">");
        wf_console__time(x->out, g->timers[i]->due_at);
        P("</td></tr>\n");
    }
    P("</table></section>\n");
}

static void
awaiting_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g)
{
    P("<section data-live=\"awaiting\"><h2>Awaited signals</h2>");
    if (g->n_awaiting_signals == 0) {
        empty_line(x, "awaiting-none", "No signal is awaited.");
        P("</section>\n");
        return;
    }
    P("<table id=\"awaiting\"><tr><th>Name</th><th>Transition</th><th>Correlation</th>"
      "<th>Since</th><th>Times out (UTC)</th></tr>\n");
    for (size_t i = 0; i < g->n_awaiting_signals; i++) {
        const Workflow__V1__AwaitingSignal *a = g->awaiting_signals[i];
        P("<tr><td class=\"name\">");
        E(a->name);
        P("</td><td>");
        E(a->transition_id);
        P("</td><td class=\"correlation\">");
        if (a->correlation == WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE) {
            P("AGGREGATE ");
            aggregate_text(x, g->instance->aggregate);
        } else {
            P("INSTANCE");
        }
        P("</td><td>");
        wf_console__time(x->out, a->since);
        P("</td><td class=\"timeout\">");
        if (a->times_out_at != NULL)
            wf_console__time(x->out, a->times_out_at);
        else
            P("never");
        P("</td></tr>\n");
    }
    P("</table></section>\n");
}

/* The Repair section, for a person who may act on an instance that has
 * not ended, with the places of its definition's version. */
static const Workflow__V1__Definition *
instance_definition(wf_console__ctx *x, const Workflow__V1__Instance *in)
{
    Workflow__V1__GetDefinitionRequest req = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    req.key = in->definition_key;
    req.version = in->definition_version;
    Workflow__V1__GetDefinitionResponse *d = NULL;
    wf_error err = {0};
    if (wf_console__call(x, "GetDefinition", PB(req), (ProtobufCMessage **)&d, &err) != WF_OK)
        return NULL;
    return d->definition;
}

static void
repair_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g,
               const Workflow__V1__Definition *def)
{
    Workflow__V1__InstanceStatus st = g->instance->status;
    bool may = wf_console__may(x, "/instance/signal");
    if (!may || st == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPLETED ||
        st == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED ||
        st == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATED) {
        if (may)
            P("<p class=\"empty\" id=\"repair-none\">The instance has ended: nothing to "
              "repair.</p>");
        return;
    }
    wf_console__repair_section(x, g, def);
}

void
wf_console__instance(wf_console__ctx *x)
{
    const char *id = q(x, "id");
    wf_console__page_begin(x, "Instance");
    Workflow__V1__GetInstanceRequest req = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    Workflow__V1__GetInstanceResponse *g = NULL;
    wf_error err = {0};
    if (!page_call(x, "GetInstance", PB(req), (ProtobufCMessage **)&g))
        return;
    const Workflow__V1__Instance *in = g->instance;
    const char *back = wf_console__self_url(x, "/instance", "id", id);
    P("<section id=\"summary\" data-live=\"summary\">");
    waiting_summary(x, g);
    P("<dl class=\"summary\"><dt>Id</dt><dd id=\"instance-id\">");
    E(in->id);
    P("</dd><dt>Definition</dt><dd><a href=\"/definition?key=");
    U(in->definition_key);
    fprintf(x->out, "&amp;version=%d\">", in->definition_version);
    E(in->definition_key);
    fprintf(x->out, " v%d</a></dd><dt>Status</dt><dd id=\"instance-status\">",
            in->definition_version);
    wf_console__enum(x->out, &workflow__v1__instance_status__descriptor, (int)in->status);
    P("</dd><dt>Parent</dt><dd>");
    if (in->parent_instance_id[0])
        link_instance(x, in->parent_instance_id);
    P("</dd><dt>Aggregate</dt><dd id=\"instance-aggregate\">");
    aggregate_text(x, in->aggregate);
    P("</dd><dt>Started by</dt><dd>");
    E(in->started_by);
    P("</dd><dt>Created</dt><dd>");
    wf_console__time(x->out, in->created_at);
    P("</dd><dt>Updated</dt><dd>");
    wf_console__time(x->out, in->updated_at);
    P("</dd>");
    if (g->last_error[0]) {
        P("<dt>Last error</dt><dd class=\"error\">");
        E(g->last_error);
        P("</dd>");
    }
    P("</dl>");
    if (in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED &&
        wf_console__may(x, "/instance/retry")) {
        wf_console__form_begin(x, "/instance/retry", "inline");
        wf_console__hidden(x, "instance_id", in->id);
        wf_console__hidden(x, "back", back);
        P("<button type=\"submit\" class=\"retry\">Retry</button></form>");
    }
    P("</section>\n");

    job_section(x, g);
    timer_section(x, g);
    awaiting_section(x, g);
    const Workflow__V1__Definition *def = instance_definition(x, in);
    P("<div data-live=\"steps\">");
    wf_console__step_list(x, def, g->current_steps, g->n_current_steps);
    P("</div>");
    diagram_img(x, NULL, 0, in->id);
    marking_section(x, g);

    P("<section data-live=\"variables\"><h2>Variables</h2><pre id=\"variables\">");
    E(in->variables_json);
    P("</pre></section>\n");
    repair_section(x, g, def);

    P("<section data-live=\"tasks\"><h2>Tasks</h2>");
    task_rows(x, g->tasks, g->n_tasks, back, true);
    P("</section>\n");

    /* Work items, every state: their history (enabled, finished or
     * cancelled, by whom). */
    Workflow__V1__ListWorkItemsRequest wreq = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
    wreq.instance_id = (char *)id;
    wreq.page_size = 500;
    Workflow__V1__ListWorkItemsResponse *w = NULL;
    P("<section data-live=\"workitems\"><h2>Work items</h2>");
    bool listed =
        wf_console__call(x, "ListWorkItems", PB(wreq), (ProtobufCMessage **)&w, &err) == WF_OK;
    if (listed && w->n_work_items == 0) {
        empty_line(x, "workitems-none", "No work item.");
    } else if (listed) {
        P("<table id=\"workitems\"><tr><th>Transition</th><th>Trigger</th><th>State</th>"
          "<th>Enabled</th><th>Finished</th><th>Cancelled</th><th>Finished by</th></tr>\n");
        for (size_t i = 0; i < w->n_work_items; i++) {
            const Workflow__V1__WorkItem *wi = w->work_items[i];
            P("<tr><td>");
            E(wi->transition_name[0] ? wi->transition_name : wi->transition_id);
            P("</td><td>");
            wf_console__enum(x->out, &workflow__v1__trigger__descriptor, (int)wi->trigger);
            P("</td><td>");
            wf_console__enum(x->out, &workflow__v1__work_item_state__descriptor, (int)wi->state);
            P("</td><td>");
            wf_console__time(x->out, wi->enabled_at);
            P("</td><td>");
            wf_console__time(x->out, wi->finished_at);
            P("</td><td>");
            wf_console__time(x->out, wi->cancelled_at);
            P("</td><td>");
            E(wi->finished_by);
            P("</td></tr>\n");
        }
        P("</table>");
    } else if (err.code != WF_E_NOT_A_NET_INSTANCE) {
        wf_console__page_error(x, &err);
        x->status = 200;
    }
    P("</section>\n");

    signal_log(x, id);

    if (g->n_calls > 0) {
        P("<section data-live=\"calls\"><h2>Calls</h2>");
        call_rows(x, g->calls, g->n_calls);
        P("</section>\n");
    }

    P("<section data-live=\"children\"><h2>Children</h2>");
    list_info li = {NULL, NOW_ROWS};
    instance_rows(x, g->children, g->n_children, "children", &li);
    P("</section>\n");

    /* Events of the tree; the page's script appends the new ones as they
     * commit (/events) and reloads the sections above. */
    P("<section><h2>Events</h2><table id=\"events\"><tr><th>#</th><th>Time</th><th>Type</th>"
      "<th>Instance</th><th>Actor</th><th>Data</th></tr>\n");
    ev_rows er = {x, 0};
    if (wf_console__read_events(x->app, x->tenant, in->root_instance_id, 0, 500, event_row, &er,
                                &err) != WF_OK) {
        P("</table>");
        wf_console__page_error(x, &err);
        x->status = 200;
    } else {
        P("</table>");
    }
    fprintf(x->out, "<div id=\"live\" data-instance=\"");
    E(in->root_instance_id);
    fprintf(x->out, "\" data-after=\"%lld\"></div></section>\n", (long long)er.last);
    wf_console__page_end(x);
}

/* ---- incidents -------------------------------------------------------------- */

void
wf_console__incidents(wf_console__ctx *x)
{
    wf_console__page_begin(x, "Incidents");
    P("<form method=\"get\" action=\"/incidents\" class=\"filters\">");
    text_input(x, "Definition key", "definition_key");
    text_input(x, "Code", "code");
    P("<button type=\"submit\">Filter</button></form>\n");
    Workflow__V1__ListIncidentsRequest req = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    req.definition_key = (char *)q(x, "definition_key");
    req.code = (char *)q(x, "code");
    req.page_token = (char *)q(x, "page_token");
    Workflow__V1__ListIncidentsResponse *resp = NULL;
    if (!page_call(x, "ListIncidents", PB(req), (ProtobufCMessage **)&resp))
        return;
    list_begin(x);
    P("<table id=\"incidents\"><tr><th>Instance</th><th>Definition</th><th>Transition</th>"
      "<th>Code</th><th>Message</th><th>Since</th><th>Attempts</th><th>Act</th></tr>\n");
    for (size_t i = 0; i < resp->n_incidents; i++) {
        const Workflow__V1__Incident *inc = resp->incidents[i];
        P("<tr class=\"incident\" data-instance=\"");
        E(inc->instance_id);
        P("\"><td>");
        link_instance(x, inc->instance_id);
        P("</td><td>");
        E(inc->definition_key);
        fprintf(x->out, " v%d</td><td>", inc->definition_version);
        E(inc->transition_id);
        P("</td><td>");
        E(inc->code);
        P("</td><td>");
        E(inc->message);
        P("</td><td>");
        wf_console__time(x->out, inc->since);
        fprintf(x->out, "</td><td>%d</td><td>", inc->attempts);
        if (wf_console__may(x, "/instance/retry")) {
            wf_console__form_begin(x, "/instance/retry", "inline");
            wf_console__hidden(x, "instance_id", inc->instance_id);
            wf_console__hidden(x, "back", "/incidents");
            P("<button type=\"submit\" class=\"retry\">Retry</button></form>");
        }
        P("</td></tr>\n");
    }
    P("</table>\n");
    static const char *const keep[] = {"definition_key", "code", NULL};
    next_page(x, resp->next_page_token, keep);
    P("</section>");
    wf_console__page_end(x);
}

/* ---- inbox ------------------------------------------------------------------ */

void
wf_console__inbox(wf_console__ctx *x)
{
    wf_console__page_begin(x, "Inbox");
    P("<form method=\"get\" action=\"/inbox\" class=\"filters\">");
    text_input(x, "User (empty = you)", "user");
    text_input(x, "Group", "group");
    enum_select(x, "Status", "status", &workflow__v1__task_status__descriptor);
    P("<button type=\"submit\">Show</button></form>\n");
    Workflow__V1__ListTasksRequest req = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    req.user = (char *)q(x, "user");
    req.group = (char *)q(x, "group");
    Workflow__V1__TaskStatus st[1];
    st[0] = enum_value(&workflow__v1__task_status__descriptor, q(x, "status"));
    if (st[0] != 0) {
        req.states = st;
        req.n_states = 1;
    }
    req.page_token = (char *)q(x, "page_token");
    Workflow__V1__ListTasksResponse *resp = NULL;
    if (!page_call(x, "ListTasks", PB(req), (ProtobufCMessage **)&resp))
        return;
    const char *back = q(x, "group")[0] ? wf_console__self_url(x, "/inbox", "group", q(x, "group"))
                                        : wf_console__self_url(x, "/inbox", "user", q(x, "user"));
    list_begin(x);
    task_rows(x, resp->tasks, resp->n_tasks, back, true);
    static const char *const keep[] = {"user", "group", "status", NULL};
    next_page(x, resp->next_page_token, keep);
    P("</section>");
    wf_console__page_end(x);
}

/* ---- batch operations ------------------------------------------------------- */

/* The progress of a batch: a bar of the instances visited, red as soon as
 * one was refused (so "0 done, 4 failed" is never a full blue bar), and
 * the counts, the failed ones in red. */
static void
batch_progress(wf_console__ctx *x, const Workflow__V1__BatchOperation *b)
{
    long long seen = (long long)(b->done + b->failed);
    long long total = (long long)b->total;
    int pct = total > 0 ? (int)(seen * 100 / total) : 100;
    fprintf(x->out, "<progress max=\"100\" value=\"%d\"%s></progress> ", pct,
            b->failed > 0 ? " class=\"failed\"" : "");
    fprintf(x->out, "<span class=\"progress\">%lld / %lld</span> (%lld done, ", seen, total,
            (long long)b->done);
    if (b->failed > 0)
        fprintf(x->out, "<span class=\"error failed-count\">%lld failed</span>)",
                (long long)b->failed);
    else
        P("0 failed)");
}

static void
batch_row(wf_console__ctx *x, const Workflow__V1__BatchOperation *b)
{
    P("<tr class=\"batch\" data-batch=\"");
    E(b->id);
    P("\"><td><a href=\"/batch?id=");
    U(b->id);
    P("\">");
    E(b->id);
    P("</a></td><td>");
    wf_console__enum(x->out, &workflow__v1__batch_action__descriptor, (int)b->action);
    P("</td><td class=\"state\">");
    wf_console__enum(x->out, &workflow__v1__batch_operation_state__descriptor, (int)b->state);
    P("</td><td>");
    batch_progress(x, b);
    P("</td><td>");
    if (b->filter != NULL) {
        E(b->filter->definition_key);
        if (b->filter->status != 0) {
            P(" ");
            wf_console__enum(x->out, &workflow__v1__instance_status__descriptor,
                             (int)b->filter->status);
        }
    }
    P("</td><td>");
    E(b->reason);
    P("</td><td>");
    E(b->created_by);
    P("</td><td>");
    wf_console__time(x->out, b->created_at);
    P("</td><td>");
    if (b->state == WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_RUNNING &&
        wf_console__may(x, "/batch/cancel")) {
        wf_console__form_begin(x, "/batch/cancel", "inline");
        wf_console__hidden(x, "id", b->id);
        wf_console__hidden(x, "back", "/batches");
        P("<button type=\"submit\" class=\"cancel\">Cancel</button></form>");
    }
    P("</td></tr>\n");
}

static const char batch_head[] =
    "<tr><th>Id</th><th>Action</th><th>State</th><th>Progress</th><th>Filter</th>"
    "<th>Reason</th><th>By</th><th>Started</th><th>Act</th></tr>\n";

/* A select of an enum's values after a first option (value ""), with
 * cur selected. */
static void
enum_options(wf_console__ctx *x, const ProtobufCEnumDescriptor *d, const char *first,
             const char *cur)
{
    P("<option value=\"\"");
    if (cur[0] == '\0')
        P(" selected");
    P(">");
    E(first);
    P("</option>");
    for (unsigned i = 1; i < d->n_values; i++) {
        P("<option value=\"");
        E(d->values[i].name);
        P("\"");
        if (strcmp(cur, d->values[i].name) == 0)
            P(" selected");
        P(">");
        wf_console__enum(x->out, d, d->values[i].value);
        P("</option>");
    }
}

/* A text input of the batch form, holding what was posted when kept. */
static void
batch_input(wf_console__ctx *x, const char *label, const char *name, const char *type, bool kept)
{
    P("<label>");
    E(label);
    P(" <input type=\"");
    E(type);
    P("\" name=\"");
    E(name);
    P("\" value=\"");
    E(kept ? wf_console__field(x, name) : "");
    P("\"></label> ");
}

/* The form that starts a batch operation. Nothing is chosen for the
 * person: no action, no "anyone" as the starter. Acting on instances of
 * every definition takes the box ticked, and Preview shows how many
 * instances match before anything starts (both checked again by the POST
 * handlers). kept: filled with the posted fields (after a refusal). */
static void
batch_form(wf_console__ctx *x, bool kept)
{
    P("<h2>Start a batch operation</h2>");
    wf_console__form_begin(x, "/batch/preview", "filters");
    P("<label>Action <select name=\"action\" required>");
    enum_options(x, &workflow__v1__batch_action__descriptor, "choose…",
                 kept ? wf_console__field(x, "action") : "");
    P("</select></label> ");
    batch_input(x, "Started by (empty = you, * = anyone)", "started_by", "text", kept);
    batch_input(x, "Definition key", "definition_key", "text", kept);
    P("<label><input type=\"checkbox\" name=\"every_definition\" value=\"1\"");
    if (kept && strcmp(wf_console__field(x, "every_definition"), "1") == 0)
        P(" checked");
    P("> no definition key: every instance of the tenant the other filters match</label> ");
    P("<label>Status <select name=\"status\">");
    enum_options(x, &workflow__v1__instance_status__descriptor, "any",
                 kept ? wf_console__field(x, "status") : "");
    P("</select></label> ");
    batch_input(x, "Reason", "reason", "text", kept);
    batch_input(x, "Target version (MIGRATE)", "target_version", "number", kept);
    batch_input(x, "Place mapping (MIGRATE, from=to,...)", "place_mapping", "text", kept);
    wf_console__hidden(x, "back", "/batches");
    P("<button type=\"submit\" class=\"preview-batch\">Preview…</button></form>\n");
}

/* The filter of a batch operation, as it was stored (started_by resolved). */
static void
batch_filter(wf_console__ctx *x, const Workflow__V1__InstanceFilter *f)
{
    P("<dl class=\"summary\" id=\"batch-filter\"><dt>Definition</dt><dd class=\"definition\">");
    if (f != NULL && f->definition_key[0] != '\0')
        E(f->definition_key);
    else
        P("<b>any (every instance of the tenant)</b>");
    P("</dd><dt>Started by</dt><dd class=\"started-by\">");
    if (f != NULL)
        E(f->started_by);
    P("</dd><dt>Status</dt><dd class=\"status\">");
    if (f != NULL && f->status != 0)
        wf_console__enum(x->out, &workflow__v1__instance_status__descriptor, (int)f->status);
    else
        P("any");
    P("</dd>");
    if (f != NULL && f->aggregate != NULL) {
        P("<dt>Aggregate</dt><dd>");
        aggregate_text(x, f->aggregate);
        P("</dd>");
    }
    P("</dl>\n");
}

void
wf_console__batches(wf_console__ctx *x)
{
    wf_console__page_begin(x, "Batch operations");
    Workflow__V1__ListBatchOperationsRequest req =
        WORKFLOW__V1__LIST_BATCH_OPERATIONS_REQUEST__INIT;
    req.page_token = (char *)q(x, "page_token");
    Workflow__V1__ListBatchOperationsResponse *resp = NULL;
    if (!page_call(x, "ListBatchOperations", PB(req), (ProtobufCMessage **)&resp))
        return;
    bool running = false;
    for (size_t i = 0; i < resp->n_batch_operations; i++)
        running |= resp->batch_operations[i]->state ==
                   WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_RUNNING;
    /* While one runs, the script reloads the table every few seconds. */
    P("<section data-live=\"batches\" data-refresh=\"5000\"");
    if (running)
        P(" data-poll=\"2000\"");
    P("><table id=\"batches\">");
    P(batch_head);
    for (size_t i = 0; i < resp->n_batch_operations; i++)
        batch_row(x, resp->batch_operations[i]);
    P("</table></section>\n");
    static const char *const keep[] = {NULL};
    next_page(x, resp->next_page_token, keep);
    if (wf_console__may(x, "/batch/preview"))
        batch_form(x, false);
    wf_console__page_end(x);
}

/* The first refusals, in red; one line when there are none. */
static void
batch_errors(wf_console__ctx *x, const Workflow__V1__BatchOperation *b)
{
    P("<h2>First refusals</h2>");
    if (b->n_errors == 0) {
        empty_line(x, "batch-errors-none", "No instance refused the action.");
        return;
    }
    P("<table id=\"batch-errors\" class=\"error\"><tr><th>Instance</th><th>Reason</th>"
      "<th>Message</th></tr>\n");
    for (size_t i = 0; i < b->n_errors; i++) {
        P("<tr><td>");
        link_instance(x, b->errors[i]->instance_id);
        P("</td><td>");
        E(b->errors[i]->reason);
        P("</td><td>");
        E(b->errors[i]->message);
        P("</td></tr>\n");
    }
    P("</table>");
}

void
wf_console__batch(wf_console__ctx *x)
{
    wf_console__page_begin(x, "Batch operation");
    Workflow__V1__GetBatchOperationRequest req = WORKFLOW__V1__GET_BATCH_OPERATION_REQUEST__INIT;
    req.id = (char *)q(x, "id");
    Workflow__V1__GetBatchOperationResponse *resp = NULL;
    if (!page_call(x, "GetBatchOperation", PB(req), (ProtobufCMessage **)&resp))
        return;
    const Workflow__V1__BatchOperation *b = resp->batch_operation;
    P("<section data-live=\"batch\"");
    if (b->state == WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_RUNNING)
        P(" data-poll=\"2000\"");
    P("><table id=\"batch\">");
    P(batch_head);
    batch_row(x, b);
    P("</table><h2>Filter</h2>");
    batch_filter(x, b->filter);
    batch_errors(x, b);
    P("</section>\n");
    wf_console__page_end(x);
}

/* ---- diagrams --------------------------------------------------------------- */

void
wf_console__diagram(wf_console__ctx *x)
{
    Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    req.definition_key = (char *)q(x, "key");
    req.version = atoi(q(x, "version"));
    req.instance_id = (char *)q(x, "instance");
    req.format = WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_SVG;
    req.live_totals = strcmp(q(x, "live"), "1") == 0;
    req.all_versions = strcmp(q(x, "all"), "1") == 0;
    Workflow__V1__GetDiagramResponse *resp = NULL;
    wf_error err = {0};
    if (wf_console__call(x, "GetDiagram", PB(req), (ProtobufCMessage **)&resp, &err) != WF_OK) {
        wf_console__page_begin(x, "Diagram");
        wf_console__page_error(x, &err);
        wf_console__page_end(x);
        return;
    }
    x->content_type = "image/svg+xml";
    fputs(resp->content, x->out);
}

/* ---- actions ---------------------------------------------------------------- */

/* ---- starting a batch operation: preview, then confirm -------------------- */

/* The form fields a batch operation is made of, carried from the form to
 * the preview and from the preview's Confirm to the start. */
static const char *const batch_fields[] = {
    "action", "started_by", "definition_key", "every_definition",
    "status", "reason",     "target_version", "place_mapping",
};

Workflow__V1__PlaceMapping **
wf_console__place_mappings(wf_console__ctx *x, const char *text, size_t *n)
{
    Workflow__V1__PlaceMapping *maps = wf_arena_calloc(x->arena, MAX_MAPPINGS, sizeof *maps);
    Workflow__V1__PlaceMapping **mapv = wf_arena_calloc(x->arena, MAX_MAPPINGS, sizeof *mapv);
    char *spec = wf_arena_strdup(x->arena, text);
    *n = 0;
    if (maps == NULL || mapv == NULL || spec == NULL)
        return NULL;
    char *save = NULL;
    for (char *m = strtok_r(spec, ",", &save); m != NULL && *n < MAX_MAPPINGS;
         m = strtok_r(NULL, ",", &save)) {
        Workflow__V1__PlaceMapping *pm = &maps[*n];
        workflow__v1__place_mapping__init(pm);
        char *eq = strchr(m, '=');
        pm->from_place = m;
        pm->to_place = (char *)"";
        if (eq != NULL) {
            *eq = '\0';
            pm->to_place = eq + 1;
        }
        mapv[(*n)++] = pm;
    }
    return mapv;
}

/* The StartBatchOperation request of the posted form (in the arena);
 * place_mapping "from=to,from=to" is split here and checked by the
 * handler. NULL when out of memory. */
static Workflow__V1__StartBatchOperationRequest *
batch_request(wf_console__ctx *x, bool dry_run)
{
    Workflow__V1__StartBatchOperationRequest *r = wf_arena_alloc(x->arena, sizeof *r);
    Workflow__V1__InstanceFilter *f = wf_arena_alloc(x->arena, sizeof *f);
    if (r == NULL || f == NULL)
        return NULL;
    workflow__v1__start_batch_operation_request__init(r);
    workflow__v1__instance_filter__init(f);
    f->started_by = (char *)wf_console__field(x, "started_by");
    f->definition_key = (char *)wf_console__field(x, "definition_key");
    f->status =
        enum_value(&workflow__v1__instance_status__descriptor, wf_console__field(x, "status"));
    r->filter = f;
    r->action = enum_value(&workflow__v1__batch_action__descriptor, wf_console__field(x, "action"));
    r->reason = (char *)wf_console__field(x, "reason");
    r->request_id = (char *)wf_console__field(x, "request_id");
    r->target_version = atoi(wf_console__field(x, "target_version"));
    r->dry_run = dry_run;
    r->place_mapping =
        wf_console__place_mappings(x, wf_console__field(x, "place_mapping"), &r->n_place_mapping);
    return r->place_mapping != NULL || r->n_place_mapping == 0 ? r : NULL;
}

/* A refusal of the console's own (400): the reason, then the form again
 * with what was typed. */
static void
batch_refusal(wf_console__ctx *x, const char *msg)
{
    x->status = 400;
    wf_console__page_begin(x, "Refused");
    P("<p class=\"error\" id=\"batch-refused\">Refused: ");
    E(msg);
    P("</p>");
    if (wf_console__may(x, "/batch/preview"))
        batch_form(x, true);
    P("<p><a href=\"/batches\">Back</a></p>");
    wf_console__page_end(x);
}

/* Actions that cannot be undone: they ask for a ticked box before they
 * start. */
static bool
batch_destructive(Workflow__V1__BatchAction a)
{
    return a == WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_CANCEL ||
           a == WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_MIGRATE;
}

/* The first matches of the filter (at most PREVIEW_ROWS), through
 * ListInstances with the very filter the dry run resolved. */
static void
batch_matches(wf_console__ctx *x, const Workflow__V1__InstanceFilter *f, long long total)
{
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = f->started_by;
    req.state = f->state;
    req.definition_key = f->definition_key;
    req.aggregate = f->aggregate;
    req.status = f->status;
    req.page_size = PREVIEW_ROWS;
    Workflow__V1__ListInstancesResponse *l = NULL;
    wf_error err = {0};
    fprintf(x->out, "<h2>The first %lld of them</h2>",
            total < PREVIEW_ROWS ? total : (long long)PREVIEW_ROWS);
    if (wf_console__call(x, "ListInstances", PB(req), (ProtobufCMessage **)&l, &err) != WF_OK) {
        wf_console__page_error(x, &err);
        x->status = 200;
        return;
    }
    list_info li = {NULL, NOW_ROWS};
    instance_rows(x, l->instances, l->n_instances, "batch-matches", &li);
}

/* The sentence stating what the batch would do and to how many. */
static void
batch_statement(wf_console__ctx *x, const Workflow__V1__BatchOperation *b, long long total)
{
    P("<p id=\"batch-preview\">");
    wf_console__enum(x->out, &workflow__v1__batch_action__descriptor, (int)b->action);
    fprintf(x->out,
            " would act on <b id=\"batch-count\" data-total=\"%lld\">%lld</b> root "
            "instance%s of tenant <b>",
            total, total, total == 1 ? "" : "s");
    E(x->tenant);
    P("</b> (those created up to the start) that match:</p>\n");
    batch_filter(x, b->filter);
}

/* The Confirm form: the same fields and the count; a destructive action
 * also takes a ticked box. */
static void
batch_confirm(wf_console__ctx *x, const Workflow__V1__BatchOperation *b, long long total)
{
    wf_console__form_begin(x, "/batch/start", "confirm");
    for (size_t i = 0; i < sizeof batch_fields / sizeof batch_fields[0]; i++)
        wf_console__hidden(x, batch_fields[i], wf_console__field(x, batch_fields[i]));
    char n[32];
    snprintf(n, sizeof n, "%lld", total);
    wf_console__hidden(x, "confirmed_total", n);
    wf_console__hidden(x, "back", "/batches");
    if (batch_destructive(b->action)) {
        P("<p><label class=\"understood error\"><input type=\"checkbox\" name=\"understood\" "
          "value=\"1\" required> I understand that ");
        wf_console__enum(x->out, &workflow__v1__batch_action__descriptor, (int)b->action);
        fprintf(x->out, " of %lld instance%s cannot be undone</label></p>", total,
                total == 1 ? "" : "s");
    }
    P("<button type=\"submit\" class=\"confirm-batch\">Confirm: ");
    wf_console__enum(x->out, &workflow__v1__batch_action__descriptor, (int)b->action);
    fprintf(x->out, " %lld instance%s</button></form> <a href=\"/batches\">Back</a>\n", total,
            total == 1 ? "" : "s");
}

/* The preview: how many instances the batch would act on now, counted by
 * the handler's dry run (the very count a start makes), the first of
 * them, and a Confirm form carrying the same fields and that count.
 * changed_from >= 0: the count the person confirmed, which is no longer
 * the count. note: why the start came back here (NULL: it did not). */
static void
batch_preview(wf_console__ctx *x, const Workflow__V1__BatchOperation *b, long long changed_from,
              const char *note)
{
    wf_console__page_begin(x, "Confirm the batch operation");
    long long total = (long long)b->total;
    if (changed_from >= 0)
        fprintf(x->out,
                "<p class=\"error\" id=\"batch-count-changed\">The matching instances changed: "
                "%lld when previewed, %lld now. Nothing was started.</p>\n",
                changed_from, total);
    if (note != NULL) {
        P("<p class=\"error\" id=\"batch-not-confirmed\">");
        E(note);
        P("</p>\n");
    }
    batch_statement(x, b, total);
    if (total == 0) {
        P("<p>Nothing to do. <a href=\"/batches\">Back</a></p>");
        wf_console__page_end(x);
        return;
    }
    batch_confirm(x, b, total);
    batch_matches(x, b->filter, total);
    wf_console__page_end(x);
}

/* The checks of the console's own before any count: a definition key or
 * the box, and for a start the count of its preview. NULL when they
 * pass, else why not. */
static const char *
batch_refused(wf_console__ctx *x, bool start)
{
    if (wf_console__field(x, "definition_key")[0] == '\0' &&
        strcmp(wf_console__field(x, "every_definition"), "1") != 0)
        return "name a definition key, or tick \"every instance of the tenant\" to act on "
               "instances of every definition";
    if (start && wf_console__field(x, "confirmed_total")[0] == '\0')
        return "a batch operation starts from its preview, which states how many instances it "
               "acts on";
    return NULL;
}

/* Starts the batch r (a dry run so far) and opens its page; false on a
 * refusal (in err). */
static bool
batch_start(wf_console__ctx *x, Workflow__V1__StartBatchOperationRequest *r, wf_error *err)
{
    ProtobufCMessage *resp = NULL;
    r->dry_run = false;
    if (wf_console__call(x, "StartBatchOperation", PB(*r), &resp, err) != WF_OK)
        return false;
    const Workflow__V1__StartBatchOperationResponse *sr = (const void *)resp;
    x->location = wf_console__self_url(x, "/batch", "id", sr->batch_operation->id);
    return true;
}

/* POST /batch/preview (start false) and /batch/start (start true). Both
 * refuse a batch without a definition key unless every_definition says so,
 * and both count through the handler's dry run. The start also needs the
 * count the person confirmed, and starts only while it still holds
 * (otherwise the preview comes back with the new count), and for a
 * destructive action the ticked box (otherwise the preview comes back,
 * 400). */
static void
batch_action(wf_console__ctx *x, bool start)
{
    const char *why = batch_refused(x, start);
    if (why != NULL) {
        batch_refusal(x, why);
        return;
    }
    long long confirmed = strtoll(wf_console__field(x, "confirmed_total"), NULL, 10);
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__StartBatchOperationRequest *r = batch_request(x, true);
    wf_code rc = r != NULL ? wf_console__call(x, "StartBatchOperation", PB(*r), &resp, &err)
                           : wf_error_nomem(&err);
    const Workflow__V1__BatchOperation *b =
        rc == WF_OK ? ((const Workflow__V1__StartBatchOperationResponse *)(const void *)resp)
                          ->batch_operation
                    : NULL;
    if (b != NULL && !start) {
        batch_preview(x, b, -1, NULL);
        return;
    }
    if (b != NULL && b->total != confirmed) {
        batch_preview(x, b, confirmed, NULL);
        return;
    }
    if (b != NULL && batch_destructive(b->action) &&
        strcmp(wf_console__field(x, "understood"), "1") != 0) {
        x->status = 400;
        batch_preview(x, b, -1,
                      "Refused: tick the box to confirm an action that cannot be undone. "
                      "Nothing was started.");
        return;
    }
    if (b != NULL && batch_start(x, r, &err))
        return;
    wf_console__page_begin(x, "Refused");
    wf_console__page_error(x, &err);
    if (wf_console__may(x, "/batch/preview"))
        batch_form(x, true);
    P("<p><a href=\"/batches\">Back</a></p>");
    wf_console__page_end(x);
}

void
wf_console__acted(wf_console__ctx *x, wf_code rc, const wf_error *err)
{
    if (rc == WF_OK) {
        x->location = wf_console__back(x);
        return;
    }
    wf_console__page_begin(x, "Refused");
    wf_console__page_error(x, err);
    P("<p><a href=\"");
    E(wf_console__back(x));
    P("\">Back</a></p>");
    wf_console__page_end(x);
}

void
wf_console__act_retry(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__RetryInstanceRequest r = WORKFLOW__V1__RETRY_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)wf_console__field(x, "instance_id");
    r.request_id = (char *)wf_console__field(x, "request_id");
    wf_console__acted(x, wf_console__call(x, "RetryInstance", PB(r), &resp, &err), &err);
}

void
wf_console__act_claim(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__ClaimTaskRequest r = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    r.task_id = (char *)wf_console__field(x, "task_id");
    r.request_id = (char *)wf_console__field(x, "request_id");
    wf_console__acted(x, wf_console__call(x, "ClaimTask", PB(r), &resp, &err), &err);
}

void
wf_console__act_release(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__ReleaseTaskRequest r = WORKFLOW__V1__RELEASE_TASK_REQUEST__INIT;
    r.task_id = (char *)wf_console__field(x, "task_id");
    r.request_id = (char *)wf_console__field(x, "request_id");
    wf_console__acted(x, wf_console__call(x, "ReleaseTask", PB(r), &resp, &err), &err);
}

/* Complete a task. A refusal (bad JSON, a task no longer open) shows the
 * page the form was on again (its query came with the form's action):
 * the task's row keeps the typed output and says why, inline. */
void
wf_console__act_complete(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__CompleteTaskRequest r = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    r.task_id = (char *)wf_console__field(x, "task_id");
    r.variables_json = (char *)wf_console__field(x, "variables_json");
    r.request_id = (char *)wf_console__field(x, "request_id");
    if (wf_console__call(x, "CompleteTask", PB(r), &resp, &err) == WF_OK) {
        x->location = wf_console__back(x);
        return;
    }
    x->refused = r.task_id;
    x->refusal = &err;
    const char *back = wf_console__back(x);
    if (strncmp(back, "/instance?", 10) == 0 && q(x, "id")[0] != '\0')
        wf_console__instance(x);
    else if (strncmp(back, "/inbox", 6) == 0)
        wf_console__inbox(x);
    else
        wf_console__acted(x, err.code, &err);
    if (x->status == 200)
        x->status = 400;
}

void
wf_console__act_batch_preview(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    batch_action(x, false);
}

void
wf_console__act_batch_start(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    batch_action(x, true);
}

void
wf_console__act_batch_cancel(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__CancelBatchOperationRequest r =
        WORKFLOW__V1__CANCEL_BATCH_OPERATION_REQUEST__INIT;
    r.id = (char *)wf_console__field(x, "id");
    r.request_id = (char *)wf_console__field(x, "request_id");
    wf_console__acted(x, wf_console__call(x, "CancelBatchOperation", PB(r), &resp, &err), &err);
}
