/*
 * console_repair: the repairs of one instance from its page (edit its
 * variables, cancel, suspend, resume, send a signal, move tokens, migrate).
 * Each builds the request a gRPC client would send and runs it through the
 * route's handler (wf_console__call) as the session's actor. Every repair
 * but the variables first shows what it will do (for a migration the dry
 * run's plan) with a Confirm form; a refusal shows the instance page again
 * with the form open, what was typed kept and the reason inline.
 */
#include <stdlib.h>
#include <string.h>

#include "console_int.h"

#define PB(m) (&(m).base)
#define E(s) wf_console__esc(x->out, (s))
#define P(s) fputs((s), x->out)
#define F(n) wf_console__field(x, (n))

/* One field of a repair form, with its label on the confirm page. */
typedef struct repair_field {
    const char *name;
    const char *label;
} repair_field;

static bool
refused_here(wf_console__ctx *x, const char *repair)
{
    return x->refused != NULL && strcmp(x->refused, repair) == 0;
}

/* What a field shows: what was typed when its form was refused, else def. */
static const char *
kept(wf_console__ctx *x, const char *repair, const char *name, const char *def)
{
    return refused_here(x, repair) ? F(name) : def;
}

/* Opens a repair: a <details> (open, with the reason, when it was
 * refused) around a form posting to /instance/<repair>?id=ID. */
static void
repair_begin(wf_console__ctx *x, const char *repair, const char *title, const char *id)
{
    bool refused = refused_here(x, repair);
    P("<details class=\"repair\" id=\"repair-");
    E(repair);
    P(refused ? "\" open><summary>" : "\"><summary>");
    E(title);
    P("</summary>");
    if (refused) {
        P("<div class=\"refused\" id=\"refused-");
        E(repair);
        P("\">");
        wf_console__page_error(x, x->refusal);
        P("</div>");
    }
    const char *path = wf_arena_printf(x->arena, "/instance/%s", repair);
    wf_console__form_begin(x, wf_console__self_url(x, path != NULL ? path : "/", "id", id),
                           "repair");
    wf_console__hidden(x, "instance_id", id);
    wf_console__hidden(x, "back", wf_console__self_url(x, "/instance", "id", id));
}

static void
repair_end(wf_console__ctx *x, const char *repair, const char *button)
{
    P("<button type=\"submit\" class=\"repair-");
    E(repair);
    P("\">");
    E(button);
    P("</button></form></details>\n");
}

static void
text_field(wf_console__ctx *x, const char *repair, const char *label, const char *name,
           const char *def)
{
    P("<label>");
    E(label);
    P(" <input type=\"text\" name=\"");
    E(name);
    P("\" value=\"");
    E(kept(x, repair, name, def));
    P("\"></label> ");
}

/* A JSON object typed in a textarea: the page's script checks it before
 * the form is sent, the handler again. */
static void
json_field(wf_console__ctx *x, const char *repair, const char *label, const char *name,
           const char *def)
{
    P("<label class=\"json\">");
    E(label);
    P("<textarea name=\"");
    E(name);
    P("\" rows=\"6\" data-json=\"object\" spellcheck=\"false\">");
    E(kept(x, repair, name, def));
    P("</textarea></label><span class=\"json-error error\"></span>");
}

static void
checkbox(wf_console__ctx *x, const char *repair, const char *label, const char *name)
{
    P("<label><input type=\"checkbox\" name=\"");
    E(name);
    P("\" value=\"1\"");
    if (strcmp(kept(x, repair, name, ""), "1") == 0)
        P(" checked");
    P("> ");
    E(label);
    P("</label> ");
}

/* An option of a select, selected when it is what the field holds. */
static void
option(wf_console__ctx *x, const char *value, const char *cur, const char *text)
{
    P("<option value=\"");
    E(value);
    P(strcmp(value, cur) == 0 ? "\" selected>" : "\">");
    E(text);
    P("</option>");
}

/* ---- the forms on the instance page ---------------------------------------- */

static void
variables_form(wf_console__ctx *x, const Workflow__V1__Instance *in)
{
    repair_begin(x, "variables", "Edit variables", in->id);
    P("<p>The object is merged into the variables (its top-level keys replace those of the "
      "same name; a key left out keeps its value).</p>");
    json_field(x, "variables", "Variables (JSON object)", "variables_json", in->variables_json);
    repair_end(x, "variables", "Save variables");
}

static void
cancel_form(wf_console__ctx *x, const Workflow__V1__Instance *in)
{
    repair_begin(x, "cancel", "Cancel", in->id);
    text_field(x, "cancel", "Reason", "reason", "");
    checkbox(x, "cancel", "compensate (run the compensation jobs of completed transitions)",
             "compensate");
    repair_end(x, "cancel", "Cancel the instance…");
}

/* Suspend a running root, resume a suspended one. */
static void
suspend_form(wf_console__ctx *x, const Workflow__V1__Instance *in)
{
    if (in->parent_instance_id[0] != '\0')
        return;
    bool suspended = in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED;
    if (!suspended && in->status != WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING)
        return;
    const char *repair = suspended ? "resume" : "suspend";
    repair_begin(x, repair, suspended ? "Resume" : "Suspend", in->id);
    text_field(x, repair, "Reason", "reason", "");
    repair_end(x, repair, suspended ? "Resume the instance…" : "Suspend the instance…");
}

static void
signal_form(wf_console__ctx *x, const Workflow__V1__Instance *in)
{
    repair_begin(x, "signal", "Send a signal", in->id);
    text_field(x, "signal", "Name", "signal_name", "");
    const char *cur = kept(x, "signal", "target", "instance");
    P("<label>Correlation <select name=\"target\">");
    option(x, "instance", cur, "INSTANCE (this instance)");
    if (in->aggregate != NULL && in->aggregate->type[0] != '\0') {
        char *text =
            wf_arena_printf(x->arena, "AGGREGATE (%s %s)", in->aggregate->type, in->aggregate->id);
        option(x, "aggregate", cur, text != NULL ? text : "AGGREGATE");
        wf_console__hidden(x, "aggregate_type", in->aggregate->type);
        wf_console__hidden(x, "aggregate_id", in->aggregate->id);
    }
    P("</select></label> ");
    json_field(x, "signal", "Payload (JSON object, optional)", "payload_json", "");
    repair_end(x, "signal", "Send the signal…");
}

/* A select of the net's places, each with the tokens it holds now. */
static void
place_select(wf_console__ctx *x, const char *name, const Workflow__V1__GetInstanceResponse *g,
             const Workflow__V1__Definition *def, bool none)
{
    const char *cur = kept(x, "modify", name, "");
    P("<select name=\"");
    E(name);
    P("\">");
    if (none)
        option(x, "", cur, "—");
    for (size_t i = 0; i < def->n_places; i++) {
        int n = 0;
        for (size_t k = 0; k < g->n_marking; k++)
            if (strcmp(g->marking[k]->key, def->places[i]->id) == 0)
                n = g->marking[k]->value;
        char *text =
            wf_arena_printf(x->arena, "%s (%d token%s)", def->places[i]->id, n, n == 1 ? "" : "s");
        option(x, def->places[i]->id, cur, text != NULL ? text : def->places[i]->id);
    }
    P("</select>");
}

static void
modify_form(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g,
            const Workflow__V1__Definition *def)
{
    if (def == NULL || def->n_places == 0)
        return;
    repair_begin(x, "modify", "Move tokens", g->instance->id);
    const char *cur = kept(x, "modify", "kind", "TOKEN_OPERATION_KIND_MOVE");
    P("<label>Operation <select name=\"kind\">");
    option(x, "TOKEN_OPERATION_KIND_MOVE", cur, "MOVE");
    option(x, "TOKEN_OPERATION_KIND_ADD", cur, "ADD");
    option(x, "TOKEN_OPERATION_KIND_REMOVE", cur, "REMOVE");
    P("</select></label> <label>Place ");
    place_select(x, "place_id", g, def, false);
    P("</label> <label>To (MOVE) ");
    place_select(x, "to_place_id", g, def, true);
    P("</label> <label>Count <input type=\"number\" name=\"count\" min=\"1\" max=\"100\" "
      "value=\"");
    E(kept(x, "modify", "count", "1"));
    P("\"></label> ");
    text_field(x, "modify", "Reason", "reason", "");
    repair_end(x, "modify", "Change the marking…");
}

static void
migrate_form(wf_console__ctx *x, const Workflow__V1__Instance *in,
             const Workflow__V1__Definition *def)
{
    if (def == NULL || def->n_places == 0 || in->parent_instance_id[0] != '\0')
        return;
    repair_begin(x, "migrate", "Migrate to another version", in->id);
    char *next = wf_arena_printf(x->arena, "%d", in->definition_version + 1);
    P("<label>Target version <input type=\"number\" name=\"target_version\" min=\"1\" value=\"");
    E(kept(x, "migrate", "target_version", next != NULL ? next : ""));
    P("\"></label> ");
    text_field(x, "migrate", "Place mapping (from=to,…)", "place_mapping", "");
    repair_end(x, "migrate", "Plan the migration…");
}

void
wf_console__repair_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g,
                           const Workflow__V1__Definition *def)
{
    const Workflow__V1__Instance *in = g->instance;
    P("<section id=\"repair\"><h2>Repair</h2>");
    /* Only the repairs the session's role may use (console_auth.c). */
    if (wf_console__may(x, "/instance/variables"))
        variables_form(x, in);
    if (wf_console__may(x, "/instance/cancel"))
        cancel_form(x, in);
    if (wf_console__may(x, "/instance/suspend") && wf_console__may(x, "/instance/resume"))
        suspend_form(x, in);
    if (wf_console__may(x, "/instance/signal"))
        signal_form(x, in);
    if (wf_console__may(x, "/instance/modify"))
        modify_form(x, g, def);
    if (wf_console__may(x, "/instance/migrate"))
        migrate_form(x, in, def);
    P("</section>\n");
}

/* ---- confirm, then act ------------------------------------------------------ */

static bool
confirmed(wf_console__ctx *x)
{
    return strcmp(F("confirmed"), "1") == 0;
}

/* The Confirm form: the same fields, confirmed=1, a fresh idempotency key. */
static void
confirm_form(wf_console__ctx *x, const char *repair, const repair_field *fields, size_t n,
             const char *button)
{
    const char *id = F("instance_id");
    const char *path = wf_arena_printf(x->arena, "/instance/%s", repair);
    wf_console__form_begin(x, wf_console__self_url(x, path != NULL ? path : "/", "id", id),
                           "confirm");
    wf_console__hidden(x, "instance_id", id);
    wf_console__hidden(x, "back", wf_console__back(x));
    for (size_t i = 0; i < n; i++)
        wf_console__hidden(x, fields[i].name, F(fields[i].name));
    wf_console__hidden(x, "confirmed", "1");
    P("<button type=\"submit\" class=\"confirm-repair\">");
    E(button);
    P("</button></form> <a id=\"repair-back\" href=\"");
    E(wf_console__back(x));
    P("\">Back</a>\n");
}

/* The head of a confirm page: what the repair will do, to which instance,
 * as whom, and the fields given. */
static void
confirm_head(wf_console__ctx *x, const char *actor, const char *title, const char *what,
             const repair_field *fields, size_t n)
{
    wf_console__page_begin(x, title);
    P("<p id=\"repair-statement\">");
    E(what);
    P("</p><dl class=\"summary\" id=\"repair-fields\"><dt>Instance</dt><dd class=\"instance\">");
    E(F("instance_id"));
    P("</dd><dt>Acting as</dt><dd class=\"actor\">");
    E(actor);
    P("</dd>");
    for (size_t i = 0; i < n; i++) {
        if (F(fields[i].name)[0] == '\0')
            continue;
        P("<dt>");
        E(fields[i].label);
        P("</dt><dd class=\"");
        E(fields[i].name);
        P("\"><code>");
        E(F(fields[i].name));
        P("</code></dd>");
    }
    P("</dl>");
}

static void
confirm_page(wf_console__ctx *x, const char *actor, const char *repair, const char *what,
             const repair_field *fields, size_t n, const char *button)
{
    confirm_head(x, actor, "Confirm the repair", what, fields, n);
    confirm_form(x, repair, fields, n, button);
    wf_console__page_end(x);
}

/* After the call: back to the instance page (303), or, refused, the page
 * again with the repair's form open, what was typed kept and the reason. */
static void
repair_done(wf_console__ctx *x, const char *repair, wf_code rc, const wf_error *err)
{
    if (rc == WF_OK) {
        x->location = wf_console__back(x);
        return;
    }
    x->refused = repair;
    x->refusal = err;
    wf_console__instance(x);
    if (x->status == 200)
        x->status = 409;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

void
wf_console__act_variables(wf_console__ctx *x, const char *actor)
{
    (void)actor;
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__SetVariablesRequest r = WORKFLOW__V1__SET_VARIABLES_REQUEST__INIT;
    r.instance_id = (char *)F("instance_id");
    r.variables_json = (char *)F("variables_json");
    r.request_id = (char *)F("request_id");
    repair_done(x, "variables", wf_console__call(x, "SetVariables", PB(r), &resp, &err), &err);
}

void
wf_console__act_cancel(wf_console__ctx *x, const char *actor)
{
    static const repair_field fields[] = {{"reason", "Reason"}, {"compensate", "Compensate"}};
    if (!confirmed(x)) {
        bool comp = strcmp(F("compensate"), "1") == 0;
        confirm_page(x, actor, "cancel",
                     comp ? "Cancel the instance and its children, compensating: the "
                            "compensation jobs of its completed transitions run in reverse "
                            "order (COMPENSATING, then COMPENSATED). This cannot be undone."
                          : "Cancel the instance and its children: open tasks are cancelled, "
                            "jobs, timers and signal subscriptions removed. This cannot be "
                            "undone.",
                     fields, N(fields), "Confirm: cancel the instance");
        return;
    }
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__CancelInstanceRequest r = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)F("instance_id");
    r.reason = (char *)F("reason");
    r.compensate = strcmp(F("compensate"), "1") == 0;
    r.request_id = (char *)F("request_id");
    repair_done(x, "cancel", wf_console__call(x, "CancelInstance", PB(r), &resp, &err), &err);
}

void
wf_console__act_suspend(wf_console__ctx *x, const char *actor)
{
    static const repair_field fields[] = {{"reason", "Reason"}};
    if (!confirmed(x)) {
        confirm_page(x, actor, "suspend",
                     "Suspend the instance and its tree: no job is activated, due timers "
                     "wait, signals are buffered and its tasks cannot be claimed or completed "
                     "until it is resumed.",
                     fields, N(fields), "Confirm: suspend the instance");
        return;
    }
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__SuspendInstanceRequest r = WORKFLOW__V1__SUSPEND_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)F("instance_id");
    r.reason = (char *)F("reason");
    r.request_id = (char *)F("request_id");
    repair_done(x, "suspend", wf_console__call(x, "SuspendInstance", PB(r), &resp, &err), &err);
}

void
wf_console__act_resume(wf_console__ctx *x, const char *actor)
{
    static const repair_field fields[] = {{"reason", "Reason"}};
    if (!confirmed(x)) {
        confirm_page(x, actor, "resume",
                     "Resume the instance: its jobs are activatable again, timers that fell "
                     "due fire, and buffered signals it waits for are consumed.",
                     fields, N(fields), "Confirm: resume the instance");
        return;
    }
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__ResumeInstanceRequest r = WORKFLOW__V1__RESUME_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)F("instance_id");
    r.reason = (char *)F("reason");
    r.request_id = (char *)F("request_id");
    repair_done(x, "resume", wf_console__call(x, "ResumeInstance", PB(r), &resp, &err), &err);
}

void
wf_console__act_signal(wf_console__ctx *x, const char *actor)
{
    static const repair_field fields[] = {{"signal_name", "Signal"},
                                          {"target", "Correlation"},
                                          {"payload_json", "Payload"},
                                          {"aggregate_type", "Aggregate type"},
                                          {"aggregate_id", "Aggregate id"}};
    bool aggregate = strcmp(F("target"), "aggregate") == 0;
    if (!confirmed(x)) {
        /* The aggregate is stated only when the signal goes to it. */
        confirm_page(x, actor, "signal",
                     aggregate ? "Send the signal to every running instance of the aggregate: "
                                 "each that waits for it consumes it (its payload merged into "
                                 "the variables); with none waiting it is dropped."
                               : "Send the signal to this instance: a transition waiting for "
                                 "it consumes it (its payload merged into the variables); "
                                 "with none waiting it is dropped.",
                     fields, aggregate ? N(fields) : 3, "Confirm: send the signal");
        return;
    }
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    Workflow__V1__SendSignalRequest r = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    r.name = (char *)F("signal_name");
    r.payload_json = (char *)F("payload_json");
    r.request_id = (char *)F("request_id");
    if (aggregate) {
        agg.type = (char *)F("aggregate_type");
        agg.id = (char *)F("aggregate_id");
        r.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
        r.aggregate = &agg;
    } else {
        r.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
        r.instance_id = (char *)F("instance_id");
    }
    repair_done(x, "signal", wf_console__call(x, "SendSignal", PB(r), &resp, &err), &err);
}

void
wf_console__act_modify(wf_console__ctx *x, const char *actor)
{
    static const repair_field fields[] = {{"kind", "Operation"},
                                          {"place_id", "Place"},
                                          {"to_place_id", "To place"},
                                          {"count", "Count"},
                                          {"reason", "Reason"}};
    if (!confirmed(x)) {
        confirm_page(x, actor, "modify",
                     "Change the marking as below, in one step: work items that lose a token "
                     "are withdrawn (their tasks cancelled, jobs and timers removed), and the "
                     "transitions the new marking enables get their work.",
                     fields, N(fields), "Confirm: change the marking");
        return;
    }
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__TokenOperation op = WORKFLOW__V1__TOKEN_OPERATION__INIT;
    Workflow__V1__TokenOperation *ops[1] = {&op};
    const ProtobufCEnumValue *kind = protobuf_c_enum_descriptor_get_value_by_name(
        &workflow__v1__token_operation_kind__descriptor, F("kind"));
    op.kind = kind != NULL ? kind->value : 0;
    op.place_id = (char *)F("place_id");
    op.to_place_id = (char *)F("to_place_id");
    op.count = atoi(F("count"));
    Workflow__V1__ModifyInstanceRequest r = WORKFLOW__V1__MODIFY_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)F("instance_id");
    r.operations = ops;
    r.n_operations = 1;
    r.reason = (char *)F("reason");
    r.request_id = (char *)F("request_id");
    repair_done(x, "modify", wf_console__call(x, "ModifyInstance", PB(r), &resp, &err), &err);
}

/* ---- migration: the dry run's plan, then the run ------------------------- */

static void
plan_items(wf_console__ctx *x, const char *id, const char *title,
           Workflow__V1__MigrationWorkItem *const *v, size_t n)
{
    P("<h3>");
    E(title);
    P("</h3>");
    if (n == 0) {
        P("<p class=\"empty\">None.</p>");
        return;
    }
    P("<table id=\"");
    E(id);
    P("\"><tr><th>Transition</th><th>Trigger</th><th>Work item</th></tr>");
    for (size_t i = 0; i < n; i++) {
        P("<tr><td>");
        E(v[i]->transition_id);
        P("</td><td>");
        wf_console__enum(x->out, &workflow__v1__trigger__descriptor, (int)v[i]->trigger);
        P("</td><td>");
        E(v[i]->work_item_id[0] ? v[i]->work_item_id : "(new)");
        P("</td></tr>");
    }
    P("</table>");
}

static void
plan_tokens(wf_console__ctx *x, const Workflow__V1__MigrationPlan *p)
{
    fprintf(x->out, "<p id=\"migration-versions\">From version %d to version %d%s.</p>",
            p->source_version, p->target_version,
            p->completes ? "; the migration completes the instance" : "");
    P("<h3>Tokens</h3><table id=\"migration-tokens\"><tr><th>Token</th><th>From</th><th>To</th>"
      "</tr>");
    for (size_t i = 0; i < p->n_tokens; i++) {
        P("<tr><td>");
        E(p->tokens[i]->token_id);
        P("</td><td>");
        E(p->tokens[i]->from_place);
        P("</td><td class=\"to\">");
        E(p->tokens[i]->to_place[0] ? p->tokens[i]->to_place : "(none)");
        P("</td></tr>");
    }
    P("</table>");
}

static void
plan_problems(wf_console__ctx *x, const Workflow__V1__MigrateInstanceResponse *m)
{
    P("<p class=\"error\" id=\"migration-invalid\">The migration cannot run as asked; nothing "
      "was changed.</p><table class=\"error\" id=\"migration-problems\"><tr><th>Problem</th>"
      "<th>Field</th><th>Message</th></tr>");
    for (size_t i = 0; i < m->n_problems; i++) {
        P("<tr><td class=\"code\">");
        E(m->problems[i]->code);
        P("</td><td>");
        E(m->problems[i]->path);
        P("</td><td>");
        E(m->problems[i]->message);
        P("</td></tr>");
    }
    P("</table>");
}

static void
migrate_plan(wf_console__ctx *x, const char *actor, const Workflow__V1__MigrateInstanceResponse *m)
{
    static const repair_field fields[] = {{"target_version", "Target version"},
                                          {"place_mapping", "Place mapping"}};
    confirm_head(x, actor, "Plan of the migration",
                 "The plan of the migration, computed by a dry run (nothing changed yet):", fields,
                 N(fields));
    plan_tokens(x, m->plan);
    plan_items(x, "migration-kept", "Work items kept", m->plan->kept, m->plan->n_kept);
    plan_items(x, "migration-withdrawn", "Work items withdrawn", m->plan->withdrawn,
               m->plan->n_withdrawn);
    plan_items(x, "migration-created", "Work items created", m->plan->created, m->plan->n_created);
    if (m->n_problems > 0) {
        plan_problems(x, m);
        P("<p><a id=\"repair-back\" href=\"");
        E(wf_console__back(x));
        P("\">Back</a></p>");
    } else {
        confirm_form(x, "migrate", fields, N(fields), "Confirm: migrate the instance");
    }
    wf_console__page_end(x);
}

void
wf_console__act_migrate(wf_console__ctx *x, const char *actor)
{
    wf_error err = {0};
    ProtobufCMessage *resp = NULL;
    Workflow__V1__MigrateInstanceRequest r = WORKFLOW__V1__MIGRATE_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)F("instance_id");
    r.target_version = atoi(F("target_version"));
    r.place_mapping = wf_console__place_mappings(x, F("place_mapping"), &r.n_place_mapping);
    r.dry_run = !confirmed(x);
    r.request_id = (char *)F("request_id");
    wf_code rc = wf_console__call(x, "MigrateInstance", PB(r), &resp, &err);
    if (rc == WF_OK && r.dry_run) {
        migrate_plan(x, actor, (const Workflow__V1__MigrateInstanceResponse *)(const void *)resp);
        return;
    }
    repair_done(x, "migrate", rc, &err);
}
