/*
 * console_steps: how a definition reads on its pages: every transition's
 * trigger details (job type, retry, lease, assignee, signal, delay), and a
 * step list shown as steps (in order, with their kinds and next rules, the
 * current ones highlighted) beside the net it compiles to.
 */
#include <string.h>

#include "console_int.h"

#define E(s) wf_console__esc(x->out, (s))
#define P(s) fputs((s), x->out)

/* A duration as "90s", "5m", "2h" or "3d"; nothing when unset. */
static void
duration(wf_console__ctx *x, const Google__Protobuf__Duration *d)
{
    if (d == NULL)
        return;
    long long s = (long long)d->seconds;
    if (s != 0 && s % 86400 == 0)
        fprintf(x->out, "%lldd", s / 86400);
    else if (s != 0 && s % 3600 == 0)
        fprintf(x->out, "%lldh", s / 3600);
    else if (s != 0 && s % 60 == 0)
        fprintf(x->out, "%lldm", s / 60);
    else
        fprintf(x->out, "%llds", s);
}

/* One "name value" item of a details list; nothing when value is empty. */
static void
item(wf_console__ctx *x, const char *cls, const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return;
    P("<li class=\"");
    E(cls);
    P("\"><b>");
    E(name);
    P("</b> ");
    E(value);
    P("</li>");
}

static void
assignee(wf_console__ctx *x, const Workflow__V1__Assignee *a)
{
    if (a == NULL)
        return;
    P("<li class=\"assignee\"><b>assignee</b> ");
    wf_console__enum(x->out, &workflow__v1__assignee_kind__descriptor, (int)a->kind);
    for (size_t i = 0; i < a->n_ids; i++) {
        P(i == 0 ? " " : ", ");
        E(a->ids[i]);
    }
    if (a->ids_expression[0] != '\0') {
        P(" from <code>");
        E(a->ids_expression);
        P("</code>");
    }
    P("</li>");
}

static void
retry(wf_console__ctx *x, const Workflow__V1__RetryPolicy *r)
{
    if (r == NULL)
        return;
    fprintf(x->out, "<li class=\"retry\"><b>retry</b> %d attempt%s", r->max_attempts,
            r->max_attempts == 1 ? "" : "s");
    if (r->initial_backoff != NULL) {
        P(", backoff ");
        duration(x, r->initial_backoff);
        fprintf(x->out, " ×%g", r->multiplier);
    }
    if (r->max_backoff != NULL) {
        P(" up to ");
        duration(x, r->max_backoff);
    }
    P("</li>");
}

static void
lease(wf_console__ctx *x, const char *name, const Google__Protobuf__Duration *d)
{
    if (d == NULL)
        return;
    P("<li class=\"");
    E(name);
    P("\"><b>");
    E(name);
    P("</b> ");
    duration(x, d);
    P("</li>");
}

static void
signal(wf_console__ctx *x, const char *name, Workflow__V1__Correlation c)
{
    if (name[0] == '\0')
        return;
    P("<li class=\"signal\"><b>signal</b> ");
    E(name);
    P(" (");
    wf_console__enum(x->out, &workflow__v1__correlation__descriptor, (int)c);
    P(")</li>");
}

void
wf_console__transition_details(wf_console__ctx *x, const Workflow__V1__Transition *t)
{
    P("<ul class=\"details\">");
    /* A silent AUTO transition (no job type) only routes: its retry and
     * lease are the defaults and mean nothing. */
    if (t->job_type[0] != '\0') {
        item(x, "job-type", "job type", t->job_type);
        retry(x, t->retry);
        lease(x, "lease", t->lease);
        item(x, "compensation", "compensation job type", t->compensation_job_type);
    }
    assignee(x, t->assignee);
    signal(x, t->signal_name, t->correlation);
    lease(x, "delay", t->delay);
    item(x, "due", "due", t->due_expression);
    for (size_t i = 0; i < t->n_cancels; i++)
        item(x, "cancels", "cancels", t->cancels[i]);
    P("</ul>");
}

/* The kind of a step and its details. */
static void
step_kind(wf_console__ctx *x, const Workflow__V1__Step *s)
{
    P("<td class=\"kind\">");
    P(s->job != NULL            ? "job"
      : s->user != NULL         ? "user"
      : s->await_signal != NULL ? "await"
      : s->call != NULL         ? "call"
                                : "sleep");
    P("</td><td><ul class=\"details\">");
    if (s->job != NULL) {
        item(x, "job-type", "job type", s->job->job_type);
        lease(x, "lease", s->job->lease);
    }
    if (s->user != NULL)
        assignee(x, s->user->assignee);
    if (s->await_signal != NULL) {
        signal(x, s->await_signal->signal_name, s->await_signal->correlation);
        lease(x, "timeout", s->await_signal->timeout);
        item(x, "on-timeout", "on timeout", s->await_signal->on_timeout);
    }
    if (s->sleep != NULL) {
        lease(x, "delay", s->sleep->duration);
        item(x, "due", "due", s->sleep->due_expression);
    }
    if (s->call != NULL) {
        item(x, "call", "calls", s->call->definition_key);
        item(x, "call-input", "input", s->call->input_expression);
        item(x, "call-output", "output", s->call->output_expression);
    }
    item(x, "for-each", "for each", s->for_each);
    retry(x, s->retry);
    item(x, "compensation", "compensation job type", s->compensation_job_type);
    P("</ul></td>");
}

/* The next rules of step i in order, then where it goes by default. */
static void
step_next(wf_console__ctx *x, const Workflow__V1__Definition *d, size_t i)
{
    const Workflow__V1__Step *s = d->steps[i];
    P("<td class=\"next\"><ol>");
    for (size_t k = 0; k < s->n_next; k++) {
        P("<li>");
        if (s->next[k]->guard[0] != '\0') {
            P("if <code>");
            E(s->next[k]->guard);
            P("</code> → ");
        } else {
            P("→ ");
        }
        E(s->next[k]->step);
        P("</li>");
    }
    /* The default arc to the following step is taken only when every
     * rule has a guard; after a rule without one it is never taken. */
    bool open = true;
    for (size_t k = 0; k < s->n_next; k++)
        open = open && s->next[k]->guard[0] != '\0';
    if (open) {
        P(s->n_next > 0 ? "<li class=\"default\">otherwise → " : "<li class=\"default\">→ ");
        E(i + 1 < d->n_steps ? d->steps[i + 1]->id : "end");
        P("</li>");
    }
    P("</ol></td>");
}

static bool
is_current(const char *id, Workflow__V1__CurrentStep *const *cur, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cur[i]->id, id) == 0)
            return true;
    return false;
}

void
wf_console__step_list(wf_console__ctx *x, const Workflow__V1__Definition *d,
                      Workflow__V1__CurrentStep *const *cur, size_t n_cur)
{
    if (d == NULL || d->n_steps == 0)
        return;
    P("<section class=\"steps\"><h2>Steps</h2><table id=\"steps\"><tr><th>#</th><th>Step</th>"
      "<th>Kind</th><th>Details</th><th>Next</th></tr>");
    for (size_t i = 0; i < d->n_steps; i++) {
        const Workflow__V1__Step *s = d->steps[i];
        bool now = is_current(s->id, cur, n_cur);
        P(now ? "<tr class=\"step current\" data-step=\"" : "<tr class=\"step\" data-step=\"");
        E(s->id);
        fprintf(x->out, "\"><td>%zu</td><td>", i + 1);
        E(s->name[0] != '\0' ? s->name : s->id);
        if (s->name[0] != '\0') {
            P(" <small>(");
            E(s->id);
            P(")</small>");
        }
        P(now ? " <span class=\"badge now\">now</span></td>" : "</td>");
        step_kind(x, s);
        step_next(x, d, i);
        P("</tr>");
    }
    P("</table></section>\n");
}
