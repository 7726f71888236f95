/*
 * wf_explain: the one-line "waiting for" of an instance (wf_explain.h).
 */
#include "wf_explain.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The text written so far into a fixed buffer. */
typedef struct wf_explain_buf {
    char *b;
    size_t size, len;
} wf_explain_buf;

static void
wf_explain_add(wf_explain_buf *o, const char *f, ...)
{
    if (o->len + 1 >= o->size)
        return;
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(o->b + o->len, o->size - o->len, f, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n < o->size - o->len ? (size_t)n : o->size - o->len - 1;
}

/* ", " before every part but the first. */
static const char *
wf_explain_sep(const wf_explain_buf *o)
{
    return o->len > 0 ? ", " : "";
}

static void
wf_explain_time(wf_explain_buf *o, const Google__Protobuf__Timestamp *t)
{
    char b[32] = "";
    time_t s = t != NULL ? (time_t)t->seconds : 0;
    struct tm tm;
    if (t != NULL && gmtime_r(&s, &tm) != NULL)
        strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    wf_explain_add(o, "%s", b);
}

bool
wf_explain_is_waiting(const Workflow__V1__Instance *in)
{
    return in != NULL &&
           (in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING ||
            in->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING);
}

static size_t
wf_explain_open_tasks(const Workflow__V1__GetInstanceResponse *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_tasks; i++)
        if (r->tasks[i]->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN ||
            r->tasks[i]->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED)
            n++;
    return n;
}

/* Whether child id is the child of one of r's calls. */
static bool
wf_explain_is_call(const Workflow__V1__GetInstanceResponse *r, const char *id)
{
    for (size_t i = 0; i < r->n_calls; i++)
        if (strcmp(r->calls[i]->instance_id, id) == 0)
            return true;
    return false;
}

/* Running children that are referrals, not calls (those are named). */
static size_t
wf_explain_running_children(const Workflow__V1__GetInstanceResponse *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_children; i++)
        if (r->children[i]->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING &&
            !wf_explain_is_call(r, r->children[i]->id))
            n++;
    return n;
}

char *
wf_explain_waiting(const Workflow__V1__GetInstanceResponse *r, char *buf, size_t size)
{
    wf_explain_buf o = {buf, size, 0};
    if (size == 0)
        return buf;
    buf[0] = '\0';
    size_t tasks = wf_explain_open_tasks(r);
    if (tasks > 0)
        wf_explain_add(&o, "%zu task%s", tasks, tasks == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_jobs; i++)
        wf_explain_add(&o, "%sjob %s", wf_explain_sep(&o), r->jobs[i]->job_type);
    for (size_t i = 0; i < r->n_timers; i++) {
        wf_explain_add(&o, "%stimer ", wf_explain_sep(&o));
        wf_explain_time(&o, r->timers[i]->due_at);
    }
    for (size_t i = 0; i < r->n_awaiting_signals; i++)
        wf_explain_add(&o, "%ssignal %s", wf_explain_sep(&o), r->awaiting_signals[i]->name);
    for (size_t i = 0; i < r->n_calls; i++)
        if (r->calls[i]->status == WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING)
            wf_explain_add(&o, "%scall %s@%d", wf_explain_sep(&o), r->calls[i]->definition_key,
                           r->calls[i]->definition_version);
    size_t running = wf_explain_running_children(r);
    if (running > 0)
        wf_explain_add(&o, "%s%zu running referral%s", wf_explain_sep(&o), running,
                       running == 1 ? "" : "s");
    return buf;
}
