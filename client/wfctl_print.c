/*
 * wfctl_print: human-readable output. One printer per message type (an
 * instance, a task, a definition, ...) and one per response; list commands
 * print one table row per item. Machine-readable output (--json) does not
 * come through here: wfctl_json.c prints any message by reflection.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grpc/health/v1/health.pb-c.h"
#include "wf_explain.h"
#include "workflow/v1/workflow.pb-c.h"
#include "wfctl.h"

#define EN(type, v) enum_or(&workflow__v1__##type##__descriptor, (int)(v))

static const char *
enum_or(const ProtobufCEnumDescriptor *d, int v)
{
    const char *n = pb_enum_name(d, v);
    return n != NULL ? n : "?";
}

/* Rotating scratch buffers, so that several formatted values can appear in
 * one printf. */
static char *
scratch(void)
{
    static char bufs[32][256];
    static unsigned i;
    return bufs[i++ % 32];
}

static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static const char *
fmt(const char *f, ...)
{
    char *b = scratch();
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, 256, f, ap);
    va_end(ap);
    return b;
}

static const char *
ts(const Google__Protobuf__Timestamp *t)
{
    if (t == NULL)
        return "";
    char *b = scratch();
    wfctl_format_time(t->seconds, t->nanos, 0, b, 256);
    return b;
}

/* "2024-05-01T12:00:00Z (in 4m10s)" */
static const char *
ts_rel(const Google__Protobuf__Timestamp *t)
{
    if (t == NULL)
        return "";
    long long d = (long long)t->seconds - (long long)time(NULL);
    long long a = d < 0 ? -d : d;
    const char *span = a >= 86400  ? fmt("%lldd%lldh", a / 86400, a % 86400 / 3600)
                       : a >= 3600 ? fmt("%lldh%lldm", a / 3600, a % 3600 / 60)
                       : a >= 60   ? fmt("%lldm%llds", a / 60, a % 60)
                                   : fmt("%llds", a);
    return fmt("%s (%s%s%s)", ts(t), d >= 0 ? "in " : "", span, d >= 0 ? "" : " ago");
}

/* "48h", "1m30s", "1.5s", "250ms" */
static const char *
dur(const Google__Protobuf__Duration *d)
{
    if (d == NULL)
        return "";
    if (d->seconds < 0 || d->nanos < 0 || (d->seconds >= 60 && d->nanos != 0)) {
        char *b = scratch();
        wfctl_format_duration(d->seconds, d->nanos, b, 256);
        return b;
    }
    if (d->seconds == 0 && d->nanos != 0)
        return d->nanos % 1000000 == 0 ? fmt("%dms", (int)(d->nanos / 1000000))
                                       : fmt("%gms", d->nanos / 1e6);
    if (d->seconds < 60)
        return d->nanos != 0 ? fmt("%gs", (double)d->seconds + d->nanos / 1e9)
                             : fmt("%llds", (long long)d->seconds);
    long long s = (long long)d->seconds, h = s / 3600, m = s % 3600 / 60;
    s %= 60;
    return fmt("%s%s%s", h ? fmt("%lldh", h) : "", m ? fmt("%lldm", m) : "",
               s ? fmt("%llds", s) : "");
}

static const char *
dash(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "-";
}

static const char *
agg(const Workflow__V1__Aggregate *a)
{
    return a != NULL ? fmt("%s:%s", a->type, a->id) : "";
}

/* "user:alice", "group:finance" */
static const char *
assignee_of(Workflow__V1__AssigneeKind kind, const char *id)
{
    return fmt("%s:%s", kind == WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP ? "group" : "user",
               id);
}

/* ---- key: value blocks ---------------------------------------------------- */

static int kv_indent;

/* Prints "label  value" unless the value is empty. */
static void kv(const char *label, const char *f, ...) __attribute__((format(printf, 2, 3)));

static void
kv(const char *label, const char *f, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    if (buf[0] != '\0')
        printf("%*s%-14s %s\n", kv_indent, "", label, buf);
}

static void
section(const char *title, size_t n)
{
    printf("\n%s (%zu)\n", title, n);
}

/* ---- tables --------------------------------------------------------------- */

#define TABLE_MAX_COLS 12

static struct {
    int indent, ncols;
    const char *names[TABLE_MAX_COLS];
    char **cells;
    size_t nrows, cap;
} tbl;

void
table_begin(int indent, int ncols, const char *const *names)
{
    table_flush();
    tbl.indent = indent;
    tbl.ncols = ncols < TABLE_MAX_COLS ? ncols : TABLE_MAX_COLS;
    for (int i = 0; i < tbl.ncols; i++)
        tbl.names[i] = names[i];
}

void
table_row(const char *const *cells)
{
    if (tbl.nrows == tbl.cap) {
        size_t cap = tbl.cap ? tbl.cap * 2 : 32;
        char **c = realloc(tbl.cells, cap * (size_t)tbl.ncols * sizeof *c);
        if (c == NULL)
            return;
        tbl.cells = c;
        tbl.cap = cap;
    }
    for (int i = 0; i < tbl.ncols; i++)
        tbl.cells[tbl.nrows * (size_t)tbl.ncols + (size_t)i] =
            strdup(cells[i] != NULL && cells[i][0] != '\0' ? cells[i] : "-");
    tbl.nrows++;
}

/* Prints the collected rows under their header, columns aligned. */
void
table_flush(void)
{
    if (tbl.nrows > 0) {
        size_t w[TABLE_MAX_COLS];
        for (int c = 0; c < tbl.ncols; c++) {
            w[c] = strlen(tbl.names[c]);
            for (size_t r = 0; r < tbl.nrows; r++) {
                const char *s = tbl.cells[r * (size_t)tbl.ncols + (size_t)c];
                if (s != NULL && strlen(s) > w[c])
                    w[c] = strlen(s);
            }
        }
        for (size_t r = 0; r <= tbl.nrows; r++) {
            printf("%*s", tbl.indent, "");
            for (int c = 0; c < tbl.ncols; c++) {
                const char *s =
                    r == 0 ? tbl.names[c] : tbl.cells[(r - 1) * (size_t)tbl.ncols + (size_t)c];
                if (s == NULL)
                    s = "";
                if (c + 1 < tbl.ncols)
                    printf("%-*s  ", (int)w[c], s);
                else
                    printf("%s\n", s);
            }
        }
    }
    for (size_t i = 0; i < tbl.nrows * (size_t)tbl.ncols; i++)
        free(tbl.cells[i]);
    free(tbl.cells);
    memset(&tbl, 0, sizeof tbl);
}

size_t
table_rows(void)
{
    return tbl.nrows;
}

/* ---- one printer per message type ---------------------------------------- */

static void
instance_block(const Workflow__V1__Instance *in)
{
    kv("instance", "%s", in->id);
    kv("status", "%s", EN(instance_status, in->status));
    kv("definition", "%s@%d", in->definition_key, in->definition_version);
    kv("parent", "%s", in->parent_instance_id);
    if (strcmp(in->root_instance_id, in->id) != 0)
        kv("root", "%s", in->root_instance_id);
    kv("aggregate", "%s", agg(in->aggregate));
    kv("tenant", "%s", in->tenant_id);
    kv("started by", "%s", in->started_by);
    kv("created", "%s", ts(in->created_at));
    kv("updated", "%s", ts(in->updated_at));
    kv("ended", "%s", ts(in->ended_at));
    kv("variables", "%s", in->variables_json[0] != '\0' ? in->variables_json : "{}");
}

static void
task_block(const Workflow__V1__Task *t)
{
    kv("task", "%s", t->id);
    kv("status", "%s", EN(task_status, t->status));
    kv("title", "%s", t->title);
    kv("assignee", "%s", assignee_of(t->assignee_kind, t->assignee_id));
    kv("claimed by", "%s", t->claimed_by);
    kv("completed by", "%s", t->completed_by);
    kv("assigned by", "%s", t->assigned_by);
    kv("instance", "%s", t->instance_id);
    if (strcmp(t->root_instance_id, t->instance_id) != 0)
        kv("root", "%s", t->root_instance_id);
    kv("definition", "%s", t->definition_key);
    kv("transition", "%s", t->transition_id);
    kv("priority", "%d", (int)t->priority);
    kv("created", "%s", ts(t->created_at));
    kv("due", "%s", ts_rel(t->due_at));
    kv("follow up", "%s", ts_rel(t->follow_up_at));
    kv("owner", "%s", t->owner);
    if (t->delegation_state != 0)
        kv("delegation", "%s", EN(delegation_state, t->delegation_state));
    kv("ended", "%s", ts(t->ended_at));
}

static const char *
assignee_spec(const Workflow__V1__Assignee *a)
{
    if (a == NULL)
        return "";
    char b[256];
    snprintf(b, sizeof b, "%s", EN(assignee_kind, a->kind));
    for (size_t i = 0; i < a->n_ids; i++)
        snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", i == 0 ? " " : ",", a->ids[i]);
    if (a->ids_expression[0] != '\0')
        snprintf(b + strlen(b), sizeof b - strlen(b), " ids from `%s`", a->ids_expression);
    return fmt("%s", b);
}

/* One line describing what a transition does, by trigger. */
static const char *
transition_spec(const Workflow__V1__Transition *t)
{
    char b[256] = "";
    size_t n = 0;
#define ADD(...)                                                                                   \
    (n += (size_t)snprintf(b + n, n < 256 ? 256 - n : 0, __VA_ARGS__), n = n < 256 ? n : 255)
    switch (t->trigger) {
    case WORKFLOW__V1__TRIGGER__TRIGGER_USER:
        ADD("assignee %s", assignee_spec(t->assignee));
        if (t->completion != NULL &&
            t->completion->mode != WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_UNSPECIFIED)
            ADD(", completion %s%s", EN(completion_mode, t->completion->mode),
                t->completion->quorum ? fmt(" %d", t->completion->quorum) : "");
        break;
    case WORKFLOW__V1__TRIGGER__TRIGGER_AUTO:
        if (t->job_type[0] == '\0')
            ADD("silent");
        else
            ADD("job %s", t->job_type);
        if (t->retry != NULL)
            ADD(", retry %d attempts, backoff %s x%g up to %s", t->retry->max_attempts,
                dash(dur(t->retry->initial_backoff)), t->retry->multiplier,
                dash(dur(t->retry->max_backoff)));
        if (t->lease != NULL)
            ADD(", lease %s", dur(t->lease));
        if (t->compensation_job_type[0] != '\0')
            ADD(", compensation %s", t->compensation_job_type);
        break;
    case WORKFLOW__V1__TRIGGER__TRIGGER_TIME:
        if (t->delay != NULL)
            ADD("delay %s", dur(t->delay));
        if (t->due_expression[0] != '\0')
            ADD("due `%s`", t->due_expression);
        break;
    case WORKFLOW__V1__TRIGGER__TRIGGER_MSG:
        ADD("signal %s (%s)", t->signal_name,
            t->correlation ? EN(correlation, t->correlation) : "INSTANCE");
        break;
    case WORKFLOW__V1__TRIGGER__TRIGGER_CALL:
        ADD("calls %s", t->call_definition_key);
        if (t->call_version > 0)
            ADD(" version %d", t->call_version);
        else
            ADD(" (newest)");
        if (t->call_input_expression[0] != '\0')
            ADD(", input `%s`", t->call_input_expression);
        if (t->call_output_expression[0] != '\0')
            ADD(", output `%s`", t->call_output_expression);
        break;
    default:
        break;
    }
    if (t->for_each[0] != '\0')
        ADD(", for each `%s`%s", t->for_each, t->for_each_sequential ? " one at a time" : "");
    for (size_t i = 0; i < t->n_cancels; i++)
        ADD("%s%s", i == 0 ? ", cancels " : ",", t->cancels[i]);
    for (size_t i = 0; i < t->n_resources; i++)
        ADD("%s%s%s%s%s", i == 0 ? ", resources " : ",", t->resources[i]->name,
            t->resources[i]->key_expression[0] != '\0' ? " by `" : "",
            t->resources[i]->key_expression, t->resources[i]->key_expression[0] != '\0' ? "`" : "");
#undef ADD
    return fmt("%s", b);
}

static void
definition_block(const Workflow__V1__Definition *d)
{
    kv("definition", "%s@%d", d->key, d->version);
    kv("kind", "%s", EN(definition_kind, d->kind));
    kv("name", "%s", d->name);
    kv("description", "%s", d->description);
    if (d->kind == WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET)
        kv("termination", "%s",
           d->termination ? EN(termination, d->termination) : "EXPLICIT (default)");
    kv("valid from", "%s", ts(d->valid_from));
    kv("valid until", "%s", ts(d->valid_until));
    kv("created", "%s", ts(d->created_at));
    kv("created by", "%s", d->created_by);
    if (d->n_steps > 0) {
        section("steps", d->n_steps);
        table_begin(2, 4, (const char *const[]){"ID", "KIND", "NAME", "NEXT"});
        for (size_t i = 0; i < d->n_steps; i++) {
            const Workflow__V1__Step *st = d->steps[i];
            char b[512] = "";
            size_t n = 0;
            for (size_t r = 0; r < st->n_next && n < sizeof b; r++)
                n += (size_t)snprintf(b + n, sizeof b - n, "%s%s%s%s", r ? "; " : "",
                                      st->next[r]->guard[0] ? st->next[r]->guard : "always", " -> ",
                                      st->next[r]->step);
            const char *kind = st->job            ? fmt("job %s", st->job->job_type)
                               : st->user         ? "user"
                               : st->await_signal ? fmt("await %s", st->await_signal->signal_name)
                               : st->sleep        ? "sleep"
                               : st->call         ? fmt("call %s", st->call->definition_key)
                                                  : "";
            if (st->for_each[0] != '\0')
                kind = fmt("%s for each %s", kind, st->for_each);
            table_row((const char *const[]){st->id, kind, st->name, b});
        }
        table_flush();
    }
    if (d->n_places > 0) {
        section("places", d->n_places);
        table_begin(2, 3, (const char *const[]){"ID", "KIND", "NAME"});
        for (size_t i = 0; i < d->n_places; i++) {
            const Workflow__V1__Place *p = d->places[i];
            table_row((const char *const[]){p->id, p->kind ? EN(place_kind, p->kind) : "NORMAL",
                                            p->name});
        }
        table_flush();
    }
    if (d->n_transitions > 0) {
        section("transitions", d->n_transitions);
        table_begin(2, 4, (const char *const[]){"ID", "TRIGGER", "NAME", "DETAILS"});
        for (size_t i = 0; i < d->n_transitions; i++) {
            const Workflow__V1__Transition *t = d->transitions[i];
            table_row(
                (const char *const[]){t->id, EN(trigger, t->trigger), t->name, transition_spec(t)});
        }
        table_flush();
    }
    if (d->n_arcs > 0) {
        section("arcs", d->n_arcs);
        for (size_t i = 0; i < d->n_arcs; i++) {
            const Workflow__V1__Arc *a = d->arcs[i];
            printf("  %s -> %s", a->source, a->target);
            if (a->weight > 1)
                printf("  weight %d", a->weight);
            if (a->guard[0] != '\0')
                printf("  if `%s`", a->guard);
            if (a->is_default)
                printf("  (default)");
            printf("\n");
        }
    }
}

/* ---- table rows of list items -------------------------------------------- */

void
row_definition(const ProtobufCMessage *m)
{
    const Workflow__V1__Definition *d = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(
            0, 6, (const char *const[]){"KEY", "VERSION", "KIND", "NAME", "CREATED", "CREATED_BY"});
    table_row((const char *const[]){d->key, fmt("%d", d->version), EN(definition_kind, d->kind),
                                    d->name, ts(d->created_at), d->created_by});
}

void
row_instance(const ProtobufCMessage *m)
{
    const Workflow__V1__Instance *in = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 6,
                    (const char *const[]){"ID", "STATUS", "DEFINITION", "STARTED_BY", "CREATED",
                                          "AGGREGATE"});
    table_row((const char *const[]){in->id, EN(instance_status, in->status),
                                    fmt("%s@%d", in->definition_key, in->definition_version),
                                    in->started_by, ts(in->created_at), agg(in->aggregate)});
}

void
row_incident(const ProtobufCMessage *m)
{
    const Workflow__V1__Incident *in = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 7,
                    (const char *const[]){"INSTANCE", "CODE", "DEFINITION", "TRANSITION", "SINCE",
                                          "ATTEMPTS", "MESSAGE"});
    table_row((const char *const[]){
        in->instance_id, in->code, fmt("%s@%d", in->definition_key, in->definition_version),
        in->transition_id, ts(in->since), fmt("%d", in->attempts), in->message});
}

void
row_batch(const ProtobufCMessage *m)
{
    const Workflow__V1__BatchOperation *b = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 8,
                    (const char *const[]){"ID", "ACTION", "STATE", "TOTAL", "DONE", "FAILED",
                                          "CREATED", "BY"});
    table_row((const char *const[]){
        b->id, EN(batch_action, b->action), EN(batch_operation_state, b->state),
        fmt("%lld", (long long)b->total), fmt("%lld", (long long)b->done),
        fmt("%lld", (long long)b->failed), ts(b->created_at), b->created_by});
}

void
row_task(const ProtobufCMessage *m)
{
    const Workflow__V1__Task *t = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 8,
                    (const char *const[]){"ID", "STATUS", "PRIO", "DUE", "ASSIGNEE", "CLAIMED_BY",
                                          "TITLE", "INSTANCE"});
    table_row((const char *const[]){t->id, EN(task_status, t->status), fmt("%d", (int)t->priority),
                                    ts(t->due_at), assignee_of(t->assignee_kind, t->assignee_id),
                                    t->claimed_by, t->title, t->instance_id});
}

void
row_signal(const ProtobufCMessage *m)
{
    const Workflow__V1__Signal *s = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 8,
                    (const char *const[]){"RECEIVED", "NAME", "OUTCOME", "TARGET", "CONSUMED",
                                          "BY_INSTANCE", "TRANSITION", "SIGNAL_ID"});
    const char *target = s->instance_id[0] != '\0' ? s->instance_id : agg(s->aggregate);
    const char *consumed = ts(s->consumed_at);
    if (consumed[0] == '\0' && s->expired)
        consumed = fmt("expired %s", ts(s->expires_at));
    else if (consumed[0] == '\0' && s->expires_at != NULL)
        consumed = fmt("expires %s", ts(s->expires_at));
    table_row((const char *const[]){ts(s->received_at), s->name, EN(signal_outcome, s->outcome),
                                    target, consumed, s->consumed_by_instance, s->transition_id,
                                    s->signal_id});
}

/* show --history: the work items of the instance, in enabled order. */
void
print_history(const ProtobufCMessage *const *items, size_t n)
{
    section("history", n);
    if (n == 0) {
        printf("  no work items\n");
        return;
    }
    table_begin(2, 9,
                (const char *const[]){"ID", "TRANSITION", "TRIGGER", "STATE", "ENABLED", "ENDED",
                                      "DEADLINE", "FOR", "BY"});
    for (size_t i = 0; i < n; i++) {
        const Workflow__V1__WorkItem *w = (const void *)items[i];
        const char *who = w->job_type[0] != '\0'      ? fmt("job %s", w->job_type)
                          : w->signal_name[0] != '\0' ? fmt("signal %s", w->signal_name)
                                                      : "";
        if (w->n_assignee_ids > 0) {
            char *list = scratch();
            list[0] = '\0';
            for (size_t k = 0; k < w->n_assignee_ids; k++)
                snprintf(list + strlen(list), 256 - strlen(list), "%s%s", k ? "," : "",
                         w->assignee_ids[k]);
            who = w->assignee_kind == WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP
                      ? fmt("group:%s", list)
                      : fmt("user:%s", list);
        }
        table_row((const char *const[]){
            w->id, w->transition_id, EN(trigger, w->trigger), EN(work_item_state, w->state),
            ts(w->enabled_at), ts(w->finished_at != NULL ? w->finished_at : w->cancelled_at),
            ts(w->deadline), who, w->finished_by});
    }
    table_flush();
}

/* Events stream: one line each, printed at once (no table). */
void
row_event(const ProtobufCMessage *m)
{
    const Workflow__V1__Event *e = (const void *)m;
    printf("%lld  %s  %-22s  %s", (long long)e->sequence, ts(e->time), EN(event_type, e->type),
           dash(e->instance_id));
    if (e->actor[0] != '\0')
        printf("  actor=%s", e->actor);
    if (e->data_json[0] != '\0' && strcmp(e->data_json, "{}") != 0)
        printf("  %s", e->data_json);
    printf("\n");
    fflush(stdout);
}

/* ---- response printers ---------------------------------------------------- */

int
status_health(const ProtobufCMessage *m)
{
    const Grpc__Health__V1__HealthCheckResponse *r = (const void *)m;
    return r->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
               ? WFCTL_OK
               : WFCTL_FAILED;
}

int
print_health(const ProtobufCMessage *m)
{
    const Grpc__Health__V1__HealthCheckResponse *r = (const void *)m;
    const char *name = pb_enum_name(
        &grpc__health__v1__health_check_response__serving_status__descriptor, r->status);
    printf("%s\n", name != NULL ? name : "UNKNOWN");
    return status_health(m);
}

int
status_deploy(const ProtobufCMessage *m)
{
    const Workflow__V1__DeployDefinitionResponse *r = (const void *)m;
    for (size_t i = 0; i < r->n_errors; i++)
        if (r->errors[i]->severity !=
            WORKFLOW__V1__VALIDATION_SEVERITY__VALIDATION_SEVERITY_WARNING)
            return WFCTL_FAILED;
    return WFCTL_OK;
}

int
print_deploy(const ProtobufCMessage *m)
{
    const Workflow__V1__DeployDefinitionResponse *r = (const void *)m;
    size_t nerr = 0;
    for (size_t i = 0; i < r->n_errors; i++)
        if (r->errors[i]->severity !=
            WORKFLOW__V1__VALIDATION_SEVERITY__VALIDATION_SEVERITY_WARNING)
            nerr++;
    if (r->definition != NULL)
        printf("deployed %s version %d%s\n", r->definition->key, r->definition->version,
               r->created ? "" : " (unchanged: same content as the latest version)");
    else if (nerr > 0)
        printf("invalid: %zu error%s\n", nerr, nerr == 1 ? "" : "s");
    else
        printf("valid\n");
    for (size_t i = 0; i < r->n_errors; i++) {
        const Workflow__V1__ValidationError *e = r->errors[i];
        printf("  %-7s %s  %s%s%s\n", EN(validation_severity, e->severity), e->code, e->path,
               e->path[0] != '\0' ? ": " : "", e->message);
    }
    return status_deploy(m);
}

int
print_definition(const ProtobufCMessage *m)
{
    const Workflow__V1__GetDefinitionResponse *r = (const void *)m;
    if (r->definition != NULL)
        definition_block(r->definition);
    return WFCTL_OK;
}

/* StartInstance: the new instance's id alone, for shell scripts. */
int
print_start(const ProtobufCMessage *m)
{
    const Workflow__V1__StartInstanceResponse *r = (const void *)m;
    if (r->instance != NULL)
        printf("%s\n", r->instance->id);
    if (r->view == NULL)
        return WFCTL_OK;
    kv("timed out", "%s", r->timed_out ? "yes" : "no");
    return print_show(&r->view->base);
}

/* AwaitInstance: whether the wait ran out, then the instance as show prints
 * it. */
int
print_await(const ProtobufCMessage *m)
{
    const Workflow__V1__AwaitInstanceResponse *r = (const void *)m;
    kv("timed out", "%s", r->timed_out ? "yes" : "no");
    return r->view != NULL ? print_show(&r->view->base) : WFCTL_OK;
}

/* Any response whose field "instance" is the result (cancel, set-vars,
 * retry). */
int
print_instance_resp(const ProtobufCMessage *m)
{
    const ProtobufCMessage *in = pb_get_message(m, "instance");
    if (in != NULL)
        instance_block((const void *)in);
    return WFCTL_OK;
}

/* A batch operation (any response whose field "batch_operation" is it):
 * its progress, then the first refusals. */
int
print_batch_resp(const ProtobufCMessage *m)
{
    const Workflow__V1__BatchOperation *b = (const void *)pb_get_message(m, "batch_operation");
    if (b == NULL)
        return WFCTL_OK;
    if (b->id[0] == '\0') { /* a dry run: nothing was started */
        kv("dry run", "%s would act on %lld instances; nothing started",
           EN(batch_action, b->action), (long long)b->total);
        return WFCTL_OK;
    }
    kv("batch operation", "%s", b->id);
    kv("action", "%s", EN(batch_action, b->action));
    kv("state", "%s", EN(batch_operation_state, b->state));
    kv("progress", "%lld of %lld done, %lld failed", (long long)b->done, (long long)b->total,
       (long long)b->failed);
    kv("reason", "%s", b->reason);
    kv("started by", "%s", b->created_by);
    kv("created", "%s", ts(b->created_at));
    kv("updated", "%s", ts(b->updated_at));
    kv("ended", "%s", ts(b->ended_at));
    if (b->n_errors > 0) {
        section("first errors", b->n_errors);
        table_begin(2, 3, (const char *const[]){"INSTANCE", "REASON", "MESSAGE"});
        for (size_t i = 0; i < b->n_errors; i++)
            table_row((const char *const[]){b->errors[i]->instance_id, b->errors[i]->reason,
                                            b->errors[i]->message});
        table_flush();
    }
    return WFCTL_OK;
}

void
print_batch_progress(const ProtobufCMessage *m)
{
    const Workflow__V1__BatchOperation *b = (const void *)m;
    long long seen = (long long)(b->done + b->failed);
    int pct = b->total > 0 ? (int)(seen * 100 / b->total) : 100;
    fprintf(stderr, "batch %s: %s %lld/%lld (%d%%), %lld failed\n", b->id,
            EN(batch_operation_state, b->state), seen, (long long)b->total, pct,
            (long long)b->failed);
}

/* ModifyInstance: the instance, then its marking and tokens. */
int
print_modify(const ProtobufCMessage *m)
{
    const Workflow__V1__ModifyInstanceResponse *r = (const void *)m;
    if (r->instance != NULL)
        instance_block(r->instance);
    section("marking", r->n_marking);
    table_begin(2, 2, (const char *const[]){"PLACE", "TOKENS"});
    for (size_t i = 0; i < r->n_marking; i++)
        table_row((const char *const[]){r->marking[i]->key, fmt("%d", r->marking[i]->value)});
    table_flush();
    if (r->n_tokens > 0) {
        section("tokens", r->n_tokens);
        table_begin(2, 2, (const char *const[]){"ID", "PLACE"});
        for (size_t i = 0; i < r->n_tokens; i++)
            table_row((const char *const[]){r->tokens[i]->id, r->tokens[i]->place_id});
        table_flush();
    }
    return WFCTL_OK;
}

/* MigrateInstance: exit 1 when a dry run found problems. */
int
status_migrate(const ProtobufCMessage *m)
{
    const Workflow__V1__MigrateInstanceResponse *r = (const void *)m;
    return r->n_problems > 0 ? WFCTL_FAILED : WFCTL_OK;
}

static void
plan_rows(const char *change, Workflow__V1__MigrationWorkItem *const *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        table_row((const char *const[]){items[i]->work_item_id, items[i]->transition_id,
                                        EN(trigger, items[i]->trigger), change});
}

/* MigrateInstance: the instance, the plan (tokens, work items), then the
 * problems. */
int
print_migrate(const ProtobufCMessage *m)
{
    const Workflow__V1__MigrateInstanceResponse *r = (const void *)m;
    const Workflow__V1__MigrationPlan *p = r->plan;
    if (r->instance != NULL)
        instance_block(r->instance);
    if (p != NULL) {
        kv("migration", "version %d -> %d, %s%s", p->source_version, p->target_version,
           r->applied ? "applied" : "not applied", p->completes ? ", completes the instance" : "");
        section("tokens", p->n_tokens);
        table_begin(2, 3, (const char *const[]){"ID", "FROM", "TO"});
        for (size_t i = 0; i < p->n_tokens; i++)
            table_row((const char *const[]){p->tokens[i]->token_id, p->tokens[i]->from_place,
                                            p->tokens[i]->to_place});
        table_flush();
        section("work items", p->n_kept + p->n_withdrawn + p->n_created);
        table_begin(2, 4, (const char *const[]){"ID", "TRANSITION", "TRIGGER", "CHANGE"});
        plan_rows("kept", p->kept, p->n_kept);
        plan_rows("withdrawn", p->withdrawn, p->n_withdrawn);
        plan_rows("created", p->created, p->n_created);
        table_flush();
        for (size_t i = 0; i < p->n_fired_transition_ids; i++)
            kv("fires", "%s", p->fired_transition_ids[i]);
    }
    if (r->n_problems > 0) {
        section("problems", r->n_problems);
        table_begin(2, 3, (const char *const[]){"CODE", "FIELD", "MESSAGE"});
        for (size_t i = 0; i < r->n_problems; i++)
            table_row((const char *const[]){r->problems[i]->code, r->problems[i]->path,
                                            r->problems[i]->message});
        table_flush();
    }
    return status_migrate(m);
}

/* Any response whose field "task" is the result (task, claim, release). */
int
print_task_resp(const ProtobufCMessage *m)
{
    const ProtobufCMessage *t = pb_get_message(m, "task");
    if (t != NULL)
        task_block((const void *)t);
    return WFCTL_OK;
}

/* UpdateJob: the job after the change. */
int
print_job_resp(const ProtobufCMessage *m)
{
    const Workflow__V1__Job *j = ((const Workflow__V1__UpdateJobResponse *)m)->job;
    if (j == NULL)
        return WFCTL_OK;
    kv("job", "%s", j->id);
    kv("instance", "%s", j->instance_id);
    kv("type", "%s", j->job_type);
    kv("priority", "%d", j->priority);
    kv("fairness key", "%s", dash(j->fairness_key));
    kv("state", "%s", j->key[0] != '\0' ? "activated" : "activatable");
    return WFCTL_OK;
}

static void
counts_line(const char *label, protobuf_c_boolean all, int total, int open, int claimed, int done,
            int cancelled)
{
    kv(label, "%d of %d done, %d open, %d claimed, %d cancelled%s", done, total, open, claimed,
       cancelled, all ? " (all completed)" : "");
}

static void
assign_lines(const Workflow__V1__AssignToResponse *r)
{
    kv("instance", "%s", r->instance_id);
    for (size_t i = 0; i < r->n_tasks; i++)
        kv("task", "%s  %s", r->tasks[i]->id,
           assignee_of(r->tasks[i]->assignee_kind, r->tasks[i]->assignee_id));
    if (r->n_tasks == 0 && r->task != NULL)
        kv("task", "%s  %s", r->task->id,
           assignee_of(r->task->assignee_kind, r->task->assignee_id));
}

int
print_assign(const ProtobufCMessage *m)
{
    assign_lines((const void *)m);
    return WFCTL_OK;
}

int
print_complete(const ProtobufCMessage *m)
{
    const Workflow__V1__CompleteTaskResponse *r = (const void *)m;
    if (r->task != NULL)
        task_block(r->task);
    const Workflow__V1__CompletionCounts *c = r->completion;
    if (c != NULL)
        counts_line("completion", c->all_completed, c->total, c->open, c->claimed, c->done,
                    c->cancelled);
    if (r->next != NULL) {
        printf("next referral (the join fired):\n");
        kv_indent = 2;
        assign_lines(r->next);
        kv_indent = 0;
    }
    return WFCTL_OK;
}

int
print_complete_and_end(const ProtobufCMessage *m)
{
    const Workflow__V1__CompleteAndEndResponse *r = (const void *)m;
    if (r->task != NULL)
        kv("task", "%s  %s", r->task->id, EN(task_status, r->task->status));
    if (r->root_instance != NULL)
        kv("root instance", "%s  %s", r->root_instance->id,
           EN(instance_status, r->root_instance->status));
    for (size_t i = 0; i < r->n_cancelled_tasks; i++)
        kv("cancelled task", "%s  %s  %s", r->cancelled_tasks[i]->id,
           assignee_of(r->cancelled_tasks[i]->assignee_kind, r->cancelled_tasks[i]->assignee_id),
           r->cancelled_tasks[i]->title);
    return WFCTL_OK;
}

int
print_completion(const ProtobufCMessage *m)
{
    const Workflow__V1__GetCompletionResponse *r = (const void *)m;
    kv("all completed", "%s", r->all_completed ? "yes" : "no");
    kv("total", "%d", r->total);
    kv("open", "%d", r->open);
    kv("claimed", "%d", r->claimed);
    kv("done", "%d", r->done);
    kv("cancelled", "%d", r->cancelled);
    return WFCTL_OK;
}

int
print_send_signal(const ProtobufCMessage *m)
{
    const Workflow__V1__SendSignalResponse *r = (const void *)m;
    kv("outcome", "%s", EN(signal_outcome, r->outcome));
    for (size_t i = 0; i < r->n_instance_ids; i++)
        kv("instance", "%s", r->instance_ids[i]);
    kv("expires", "%s", ts(r->expires_at));
    return WFCTL_OK;
}

int
print_tick(const ProtobufCMessage *m)
{
    const Workflow__V1__RunSchedulerPassResponse *r = (const void *)m;
    /* One column wider than kv's: "signals expired" does not fit it. */
    printf("%-15s %lld\n", "timers fired", (long long)r->timers_fired);
    printf("%-15s %lld\n", "leases expired", (long long)r->leases_expired);
    printf("%-15s %lld\n", "signals expired", (long long)r->signals_expired);
    printf("%-15s %lld\n", "rows removed", (long long)r->rows_removed);
    printf("%-15s %lld\n", "schedule runs", (long long)r->schedule_runs);
    return WFCTL_OK;
}

/* ---- schedules ---------------------------------------------------------------- */

/* The spec in one line: "cron 30 2 * * * (Europe/Berlin)". */
static const char *
spec_line(const Workflow__V1__ScheduleSpec *sp)
{
    if (sp == NULL)
        return "";
    const char *zone = sp->time_zone[0] != '\0' ? sp->time_zone : "UTC";
    const char *line = sp->cron[0] != '\0'       ? fmt("cron %s (%s)", sp->cron, zone)
                       : sp->interval[0] != '\0' ? fmt("interval %s", sp->interval)
                                                 : "";
    for (size_t i = 0; i < sp->n_rrules; i++)
        line = fmt("%s%srrule %s (%s)", line, line[0] != '\0' ? ", " : "", sp->rrules[i], zone);
    return line;
}

void
row_schedule(const ProtobufCMessage *m)
{
    const Workflow__V1__Schedule *s = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 5, (const char *const[]){"ID", "STATE", "DEFINITION", "SPEC", "NEXT"});
    table_row((const char *const[]){s->id, EN(schedule_state, s->state), s->definition_key,
                                    spec_line(s->spec),
                                    s->n_upcoming > 0 ? s->upcoming[0]->local_time : "-"});
}

/* The DETAIL of a run: the refusal, else when a fire that waited was
 * buffered and the instance a CANCEL_OTHER fire cancelled. */
static const char *
run_detail(const Workflow__V1__ScheduleRun *r)
{
    if (r->detail != NULL && r->detail[0] != '\0')
        return r->detail;
    const char *buffered = r->buffered_time != NULL ? fmt("buffered %s", ts(r->buffered_time)) : "";
    const char *cancelled = r->cancelled_instance_id != NULL && r->cancelled_instance_id[0] != '\0'
                                ? fmt("cancelled %s", r->cancelled_instance_id)
                                : "";
    return fmt("%s%s%s", buffered, buffered[0] != '\0' && cancelled[0] != '\0' ? ", " : "",
               cancelled);
}

void
row_schedule_run(const ProtobufCMessage *m)
{
    const Workflow__V1__ScheduleRun *r = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 5,
                    (const char *const[]){"NOMINAL", "ACTUAL", "OUTCOME", "INSTANCE", "DETAIL"});
    table_row((const char *const[]){ts(r->nominal_time), ts(r->actual_time),
                                    fmt("%s%s", EN(schedule_run_outcome, r->outcome),
                                        r->manual     ? " (manual)"
                                        : r->backfill ? " (backfill)"
                                                      : ""),
                                    r->instance_id, run_detail(r)});
}

int
print_schedule_resp(const ProtobufCMessage *m)
{
    const Workflow__V1__Schedule *s = (const void *)pb_get_message(m, "schedule");
    if (s == NULL)
        return WFCTL_OK;
    kv("schedule", "%s", s->id);
    kv("state", "%s", EN(schedule_state, s->state));
    kv("pause reason", "%s", s->pause_reason);
    kv("definition", "%s v%d", s->definition_key, (int)s->version);
    kv("spec", "%s", spec_line(s->spec));
    if (s->policy != NULL)
        kv("policy", "overlap %s, catch-up %s, pause after %d failures",
           EN(schedule_overlap_policy, s->policy->overlap), dur(s->policy->catchup_window),
           (int)s->policy->pause_after_failures);
    kv("last instance", "%s", s->last_instance_id);
    kv("note", "%s", s->note);
    if (s->n_upcoming > 0) {
        section("next fire times", s->n_upcoming);
        table_begin(2, 2, (const char *const[]){"LOCAL", "UTC"});
        for (size_t i = 0; i < s->n_upcoming; i++)
            table_row((const char *const[]){s->upcoming[i]->local_time, ts(s->upcoming[i]->time)});
        table_flush();
    }
    return WFCTL_OK;
}

/* ---- resources ---------------------------------------------------------------- */

/* The rate in one line: "100 per 1m", or "-". */
static const char *
rate_line(const Workflow__V1__ResourceRate *r)
{
    return r == NULL ? "-" : fmt("%d per %s", (int)r->limit, dur(r->period));
}

void
row_resource(const ProtobufCMessage *m)
{
    const Workflow__V1__Resource *r = (const void *)m;
    if (tbl.ncols == 0)
        table_begin(0, 5, (const char *const[]){"NAME", "CAPACITY", "PER KEY", "RATE", "STRATEGY"});
    table_row((const char *const[]){r->name, r->capacity > 0 ? fmt("%d", (int)r->capacity) : "-",
                                    r->per_key ? "yes" : "no", rate_line(r->rate),
                                    EN(resource_strategy, r->strategy)});
}

int
print_resource_resp(const ProtobufCMessage *m)
{
    const Workflow__V1__Resource *r = (const void *)pb_get_message(m, "resource");
    if (r == NULL)
        return WFCTL_OK;
    kv("resource", "%s", r->name);
    kv("capacity", "%s", r->capacity > 0 ? fmt("%d", (int)r->capacity) : "-");
    kv("per key", "%s", r->per_key ? "yes" : "no");
    kv("rate", "%s", rate_line(r->rate));
    kv("strategy", "%s", EN(resource_strategy, r->strategy));
    kv("version", "%lld", (long long)r->version);
    return WFCTL_OK;
}

int
print_schedule_run_resp(const ProtobufCMessage *m)
{
    const Workflow__V1__ScheduleRun *r = (const void *)pb_get_message(m, "run");
    if (r == NULL)
        return WFCTL_OK;
    kv("outcome", "%s", EN(schedule_run_outcome, r->outcome));
    kv("instance", "%s", r->instance_id);
    kv("nominal", "%s", ts(r->nominal_time));
    return WFCTL_OK;
}

int
print_schedule_backfill_resp(const ProtobufCMessage *m)
{
    const Workflow__V1__BackfillScheduleResponse *r = (const void *)m;
    for (size_t i = 0; i < r->n_runs; i++)
        row_schedule_run(&r->runs[i]->base);
    table_flush();
    printf("%zu run(s) recorded, %d fire time(s) handled before\n", r->n_runs,
           (int)r->already_handled);
    return WFCTL_OK;
}

int
print_done(const ProtobufCMessage *m)
{
    (void)m;
    printf("ok\n");
    return WFCTL_OK;
}

/* GetInstance: where the instance is parked and why. */
int
print_show(const ProtobufCMessage *m)
{
    const Workflow__V1__GetInstanceResponse *r = (const void *)m;
    if (r->instance != NULL) {
        instance_block(r->instance);
        if (wf_explain_is_waiting(r->instance)) {
            char b[256];
            kv("waiting for", "%s", wf_explain_waiting(r, b, sizeof b));
        }
    }
    if (r->n_current_steps > 0) {
        char b[512] = "";
        size_t n = 0;
        for (size_t i = 0; i < r->n_current_steps && n < sizeof b; i++) {
            const Workflow__V1__CurrentStep *c = r->current_steps[i];
            n += (size_t)snprintf(b + n, sizeof b - n, "%s%s", i ? ", " : "", c->id);
            if (n < sizeof b && strcmp(c->name, c->id) != 0)
                n += (size_t)snprintf(b + n, sizeof b - n, " (%s)", c->name);
        }
        kv(r->n_current_steps == 1 ? "current step" : "current steps", "%s", b);
    }
    kv("last error", "%s", r->last_error);

    if (r->n_marking > 0) {
        section("marking", r->n_marking);
        table_begin(2, 2, (const char *const[]){"PLACE", "TOKENS"});
        for (size_t i = 0; i < r->n_marking; i++)
            table_row((const char *const[]){r->marking[i]->key, fmt("%d", r->marking[i]->value)});
        table_flush();
    }
    if (r->n_tasks > 0) {
        section("tasks", r->n_tasks);
        table_begin(
            2, 7,
            (const char *const[]){"ID", "STATUS", "ASSIGNEE", "BY", "TITLE", "CREATED", "DUE"});
        for (size_t i = 0; i < r->n_tasks; i++) {
            const Workflow__V1__Task *t = r->tasks[i];
            table_row((const char *const[]){
                t->id, EN(task_status, t->status), assignee_of(t->assignee_kind, t->assignee_id),
                t->completed_by[0] != '\0' ? t->completed_by : t->claimed_by, t->title,
                ts(t->created_at), ts_rel(t->due_at)});
        }
        table_flush();
    }
    if (r->n_jobs > 0) {
        section("jobs", r->n_jobs);
        table_begin(2, 8,
                    (const char *const[]){"ID", "TYPE", "TRANSITION", "PRIORITY", "FAIRNESS_KEY",
                                          "ATTEMPT", "STATE", "LAST_ERROR"});
        for (size_t i = 0; i < r->n_jobs; i++) {
            const Workflow__V1__Job *j = r->jobs[i];
            const char *state =
                j->key[0] != '\0' ? fmt("activated by %s, lease until %s", dash(j->worker),
                                        ts_rel(j->lease_expires_at))
                : j->activatable_at != NULL ? fmt("retry at %s", ts_rel(j->activatable_at))
                                            : "activatable";
            table_row((const char *const[]){
                j->id, fmt("%s%s", j->job_type, j->compensation ? " (compensation)" : ""),
                j->transition_id, fmt("%d", j->priority), dash(j->fairness_key),
                fmt("%d/%d", j->attempt, j->max_attempts), state, j->error_message});
        }
        table_flush();
    }
    if (r->n_timers > 0) {
        section("timers", r->n_timers);
        table_begin(2, 3, (const char *const[]){"ID", "TRANSITION", "DUE"});
        for (size_t i = 0; i < r->n_timers; i++)
            table_row((const char *const[]){r->timers[i]->id, r->timers[i]->transition_id,
                                            ts_rel(r->timers[i]->due_at)});
        table_flush();
    }
    if (r->n_awaiting_signals > 0) {
        section("awaiting signals", r->n_awaiting_signals);
        table_begin(
            2, 5, (const char *const[]){"NAME", "TRANSITION", "CORRELATION", "SINCE", "TIMES_OUT"});
        for (size_t i = 0; i < r->n_awaiting_signals; i++) {
            const Workflow__V1__AwaitingSignal *a = r->awaiting_signals[i];
            table_row(
                (const char *const[]){a->name, a->transition_id,
                                      a->correlation ? EN(correlation, a->correlation) : "INSTANCE",
                                      ts(a->since), ts_rel(a->times_out_at)});
        }
        table_flush();
    }
    if (r->n_buffered_signals > 0) {
        section("buffered signals", r->n_buffered_signals);
        table_begin(2, 5, (const char *const[]){"ID", "NAME", "RECEIVED", "EXPIRES", "PAYLOAD"});
        for (size_t i = 0; i < r->n_buffered_signals; i++) {
            const Workflow__V1__Signal *s = r->buffered_signals[i];
            table_row((const char *const[]){s->id, s->name, ts(s->received_at),
                                            ts_rel(s->expires_at), s->payload_json});
        }
        table_flush();
    }
    if (r->n_joins > 0) {
        section("joins", r->n_joins);
        table_begin(2, 5, (const char *const[]){"INSTANCE", "TRANSITION", "MODE", "DONE", "TOTAL"});
        for (size_t i = 0; i < r->n_joins; i++) {
            const Workflow__V1__JoinProgress *j = r->joins[i];
            const char *mode = j->mode == WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM
                                   ? fmt("QUORUM %d", j->quorum)
                               : j->mode ? EN(completion_mode, j->mode)
                                         : "ALL";
            table_row((const char *const[]){
                j->instance_id, j->transition_id[0] ? j->transition_id : "(referral)", mode,
                fmt("%d of %d needed", j->done, j->required), fmt("%d", j->total)});
        }
        table_flush();
    }
    if (r->n_for_each > 0) {
        section("for-each", r->n_for_each);
        table_begin(2, 5, (const char *const[]){"TRANSITION", "MODE", "ORDER", "DONE", "TOTAL"});
        for (size_t i = 0; i < r->n_for_each; i++) {
            const Workflow__V1__ForEachProgress *f = r->for_each[i];
            const char *mode = f->mode == WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM
                                   ? fmt("QUORUM %d", f->quorum)
                               : f->mode ? EN(completion_mode, f->mode)
                                         : "ALL";
            table_row((const char *const[]){
                f->transition_id, mode, f->sequential ? "sequential" : "parallel",
                fmt("%d of %d needed", f->completed, f->required), fmt("%d", f->total)});
        }
        table_flush();
    }
    if (r->n_calls > 0) {
        section("calls", r->n_calls);
        table_begin(2, 4, (const char *const[]){"ID", "TRANSITION", "DEFINITION", "STATUS"});
        for (size_t i = 0; i < r->n_calls; i++) {
            const Workflow__V1__InstanceCall *c = r->calls[i];
            table_row((const char *const[]){c->instance_id, c->transition_id,
                                            fmt("%s@%d", c->definition_key, c->definition_version),
                                            EN(instance_status, c->status)});
        }
        table_flush();
    }
    if (r->n_children > 0) {
        section("children", r->n_children);
        table_begin(2, 5,
                    (const char *const[]){"ID", "STATUS", "DEFINITION", "STARTED_BY", "CREATED"});
        for (size_t i = 0; i < r->n_children; i++) {
            const Workflow__V1__Instance *c = r->children[i];
            table_row((const char *const[]){c->id, EN(instance_status, c->status),
                                            fmt("%s@%d", c->definition_key, c->definition_version),
                                            c->started_by, ts(c->created_at)});
        }
        table_flush();
    }
    return WFCTL_OK;
}
