/*
 * net_runtime_foreach: for-each (multi-instance) AUTO, USER and CALL
 * transitions. When such a transition is enabled its for_each expression
 * gives the items; each item gets a job, a task or a call child of its own
 * (all at once, or one at a time when sequential) whose variables are the
 * instance's with the item and its index (a child: the input mapping over
 * them, with the item and its index). The state of the items lives on the
 * work item (foreach_json):
 *
 *   {"items": [...], "st": [0|1|2, ...], "out": [...], "done": k}
 *
 * st[i] is 0 before item i's job is created (sequential), 1 while it
 * runs, 2 once completed; out[i] its output (null until then); refs[i]
 * the id of its task or call child. The
 * completion of an item's job is applied in the unit of work that locks
 * the instance's aggregate, so concurrent completions are counted one at
 * a time: the join is met, and the transition fires, exactly once; the
 * jobs of the remaining items are deleted in that same unit of work
 * (their completions then find no job: JOB_LEASE_LOST).
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "expr.h"
#include "vars.h"
#include "wf_str.h"

enum { FE_WAITING = 0, FE_RUNNING = 1, FE_DONE = 2 };

static int foreach_max_items = 1000;

void
wf_runtime_set_foreach_max_items(int n)
{
    __atomic_store_n(&foreach_max_items, n > 0 ? n : 1000, __ATOMIC_RELAXED);
}

bool
wf_runtime__is_foreach(const wf_transition *t)
{
    return t != NULL &&
           (t->trigger == WF_TRIGGER_AUTO || t->trigger == WF_TRIGGER_USER ||
            t->trigger == WF_TRIGGER_CALL) &&
           !wf_str_empty(t->for_each);
}

static const char *
item_name(const wf_transition *t)
{
    return wf_str_empty(t->for_each_item) ? "item" : t->for_each_item;
}

/* The name of the array variable set at the join. */
static char *
output_name(wf_arena *a, const wf_transition *t)
{
    if (!wf_str_empty(t->for_each_output))
        return (char *)t->for_each_output;
    return wf_arena_printf(a, "%ss", item_name(t));
}

/* The items of t over vars, checked: an array of 1 to the maximum. */
static wf_code
eval_items(net_work *w, const wf_transition *t, const char *vars, json_t **out, wf_error *err)
{
    wf_expr *e;
    char *text = NULL;
    wf_code rc = wf_expr_cached(t->for_each, &e, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_expr_eval_json(e, vars, w->rw.arena, &text, err);
    wf_expr_free(e);
    if (rc != WF_OK)
        return rc;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    size_t max = (size_t)__atomic_load_n(&foreach_max_items, __ATOMIC_RELAXED);
    if (!json_is_array(v))
        rc = wf_error_set(err, WF_E_FOREACH_NOT_ARRAY,
                          "for_each of transition \"%s\" gave %.64s, which is not an array", t->id,
                          text);
    else if (n == 0)
        rc = wf_error_set(err, WF_E_FOREACH_EMPTY,
                          "for_each of transition \"%s\" gave an empty array", t->id);
    else if (n > max)
        rc = wf_error_set(err, WF_E_FOREACH_TOO_MANY,
                          "for_each of transition \"%s\" gave %zu items; at most %zu "
                          "(WF_FOREACH_MAX_ITEMS)",
                          t->id, n, max);
    if (rc != WF_OK) {
        json_decref(v);
        return rc;
    }
    *out = v;
    return WF_OK;
}

/* The index of the item a job of a for-each item runs ("...:each:<i>"
 * ends its idempotency key); -1 when it is not one. */
static long
job_index(const wf_job_row *j)
{
    const char *k = j->idempotency_key != NULL ? strstr(j->idempotency_key, ":each:") : NULL;
    if (k == NULL)
        return -1;
    char *end;
    long i = strtol(k + 6, &end, 10);
    return *end == '\0' && i >= 0 ? i : -1;
}

wf_code
wf_runtime__job_vars(net_work *w, const wf_job_row *j, const char **out, wf_error *err)
{
    const char *vars = w->rw.insts[w->inst].variables_json;
    const wf_transition *t = wf_runtime__transition_of(w, j->transition_id);
    *out = vars;
    if (j->compensation || job_index(j) < 0 || !wf_runtime__is_foreach(t))
        return WF_OK;
    char index_name[80];
    snprintf(index_name, sizeof index_name, "%s_index", item_name(t));
    const char *names[2] = {item_name(t), index_name};
    const char *picked;
    wf_code rc = wf_vars_pick(w->rw.arena, j->variables_json, names, 2, &picked, err);
    if (rc == WF_OK)
        rc = wf_vars_merge(w->rw.arena, vars, picked, out, err);
    return rc;
}

/* The instance's variables with item i of st and its index; the item and
 * index alone in *patch_out (NULL = not wanted). */
static wf_code
item_vars(net_work *w, const wf_transition *t, json_t *st, size_t i, const char **out,
          const char **patch_out, wf_error *err)
{
    const char *name = item_name(t);
    char index_name[80];
    snprintf(index_name, sizeof index_name, "%s_index", name);
    json_t *patch = json_pack("{s:O,s:I}", name, json_array_get(json_object_get(st, "items"), i),
                              index_name, (json_int_t)i);
    char *ptext = patch != NULL ? wf_vars_dump(w->rw.arena, patch) : NULL;
    json_decref(patch);
    if (ptext == NULL)
        return wf_error_nomem(err);
    if (patch_out != NULL)
        *patch_out = ptext;
    return wf_vars_merge(w->rw.arena, w->rw.insts[w->inst].variables_json, ptext, out, err);
}

/* USER: the task of item i, its assignee, priority and times chosen over
 * the item's variables; its id kept in refs[i]. */
static wf_code
start_task(net_work *w, const wf_work_item_row *it, const wf_transition *t, json_t *st, size_t i,
           const char *vars, wf_error *err)
{
    size_t before = w->rw.n_tasks;
    wf_code rc = wf_runtime__enable_user(w, it, t, vars, err);
    if (rc != WF_OK)
        return rc;
    if (w->rw.n_tasks != before + 1)
        return wf_error_set(err, WF_E_INTERNAL, "item %zu of \"%s\" made %zu tasks", i, t->id,
                            w->rw.n_tasks - before);
    json_array_set_new(json_object_get(st, "refs"), i,
                       json_string(w->rw.tasks[w->rw.n_tasks - 1].id));
    json_array_set_new(json_object_get(st, "st"), i, json_integer(FE_RUNNING));
    return WF_OK;
}

/* AUTO: the job of item i, with the item in its variables. */
static wf_code
start_job(net_work *w, const wf_work_item_row *it, const wf_transition *t, json_t *st, size_t i,
          const char *vars, wf_error *err)
{
    wf_job_row job;
    wf_code rc = wf_runtime__create_job(w, it, t, vars, false, &job, err);
    if (rc != WF_OK)
        return rc;
    /* Each item's job has a key of its own, stable across its attempts. */
    char *key = wf_arena_printf(w->rw.arena, "%s:each:%zu", job.idempotency_key, i);
    if (key == NULL)
        return wf_error_nomem(err);
    JOB(w, w->jobs.n - 1)->idempotency_key = key;
    json_array_set_new(json_object_get(st, "st"), i, json_integer(FE_RUNNING));
    return wf_runtime__event(w, "JOB_CREATED",
                             json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:I}", "jobId", job.id, "jobType",
                                       t->job_type, "transitionId", t->id, "workItemId", it->id,
                                       "priority", (int)job.priority, "fairnessKey",
                                       job.fairness_key, "index", (json_int_t)i),
                             err);
}

/* CALL: the child of item i, queued to start once the caller is written
 * (its id derived from the work item's and i), its id kept in refs[i]. */
static wf_code
start_call(net_work *w, const wf_work_item_row *it, const wf_transition *t, json_t *st, size_t i,
           const char *vars, const char *patch, wf_error *err)
{
    const char *child;
    wf_code rc = wf_runtime__call_queue(w, it->id, t, vars, (long)i, patch, &child, err);
    if (rc != WF_OK)
        return rc;
    json_array_set_new(json_object_get(st, "refs"), i, json_string(child));
    json_array_set_new(json_object_get(st, "st"), i, json_integer(FE_RUNNING));
    return WF_OK;
}

/* Starts item i of st (the for-each state of item row it): the one place
 * where an item's kind of work is chosen. */
static wf_code
start_item(net_work *w, const wf_work_item_row *it, const wf_transition *t, json_t *st, size_t i,
           wf_error *err)
{
    const char *vars, *patch = NULL;
    wf_code rc = item_vars(w, t, st, i, &vars, &patch, err);
    if (rc != WF_OK)
        return rc;
    if (t->trigger == WF_TRIGGER_USER)
        return start_task(w, it, t, st, i, vars, err);
    if (t->trigger == WF_TRIGGER_CALL)
        return start_call(w, it, t, st, i, vars, patch, err);
    return start_job(w, it, t, st, i, vars, err);
}

/* Writes st onto work item ii. */
static wf_code
save_state(net_work *w, size_t ii, json_t *st, wf_error *err)
{
    char *text = wf_vars_dump(w->rw.arena, st);
    if (text == NULL)
        return wf_error_nomem(err);
    ITEM(w, ii)->foreach_json = text;
    wf_runtime__dirty(&w->items, ii);
    return WF_OK;
}

wf_code
wf_runtime__foreach_enable(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                           const char *vars, wf_error *err)
{
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), it->id);
    if (ii == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INTERNAL, "work item \"%s\" is not live", it->id);
    json_t *items;
    wf_code rc = eval_items(w, t, vars, &items, err);
    if (rc != WF_OK)
        return rc;
    size_t n = json_array_size(items);
    json_t *st =
        json_pack("{s:o,s:[],s:[],s:[],s:i}", "items", items, "st", "out", "refs", "done", 0);
    for (size_t i = 0; st != NULL && i < n; i++) {
        json_array_append_new(json_object_get(st, "st"), json_integer(FE_WAITING));
        json_array_append_new(json_object_get(st, "out"), json_null());
        json_array_append_new(json_object_get(st, "refs"), json_null());
    }
    if (st == NULL)
        return wf_error_nomem(err);
    size_t first = t->for_each_sequential ? 1 : n;
    for (size_t i = 0; rc == WF_OK && i < first; i++)
        rc = start_item(w, ITEM(w, ii), t, st, i, err);
    if (rc == WF_OK)
        rc = save_state(w, ii, st, err);
    json_decref(st);
    return rc;
}

/* Loads the for-each state of work item it. */
static wf_code
load_state(const wf_work_item_row *it, json_t **st, wf_error *err)
{
    json_t *v = it->foreach_json != NULL ? json_loads(it->foreach_json, 0, NULL) : NULL;
    if (!json_is_object(v) || !json_is_array(json_object_get(v, "items")) ||
        !json_is_array(json_object_get(v, "st")) || !json_is_array(json_object_get(v, "out"))) {
        json_decref(v);
        return wf_error_set(err, WF_E_INTERNAL, "work item \"%s\" has no for-each state", it->id);
    }
    *st = v;
    return WF_OK;
}

wf_code
wf_runtime__foreach_progress(const wf_work_item_row *it, int32_t *total, int32_t *completed)
{
    json_t *st;
    wf_error e;
    wf_error_clear(&e);
    if (load_state(it, &st, &e) != WF_OK)
        return e.code;
    *total = (int32_t)json_array_size(json_object_get(st, "items"));
    *completed = (int32_t)json_integer_value(json_object_get(st, "done"));
    json_decref(st);
    return WF_OK;
}

/* The call children of the items of st still running are cancelled
 * (their subtrees, with reason); their indexes appended to idx, their ids
 * to children. */
static wf_code
withdraw_children(net_work *w, json_t *st, json_t *idx, json_t *children, const char *reason,
                  wf_error *err)
{
    json_t *sv = json_object_get(st, "st"), *refs = json_object_get(st, "refs");
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < json_array_size(sv); i++) {
        const char *child = json_string_value(json_array_get(refs, i));
        if (json_integer_value(json_array_get(sv, i)) != FE_RUNNING || child == NULL)
            continue;
        json_array_append_new(idx, json_integer((json_int_t)i));
        json_array_append_new(children, json_string(child));
        rc = wf_runtime__call_cancel_child(w, child, reason, err);
    }
    return rc;
}

wf_code
wf_runtime__foreach_cancel_children(net_work *w, const wf_work_item_row *it, const char *reason,
                                    wf_error *err)
{
    json_t *st = NULL, *idx = json_array(), *children = json_array();
    wf_code rc = idx != NULL && children != NULL ? load_state(it, &st, err) : wf_error_nomem(err);
    if (rc == WF_OK) {
        rc = withdraw_children(w, st, idx, children, reason, err);
        json_decref(st);
    }
    json_decref(idx);
    json_decref(children);
    return rc;
}

/* The join is met: the jobs of the items still running are withdrawn
 * (FOREACH_ITEMS_WITHDRAWN, once), and the transition fires with the
 * outputs in item order. */
static wf_code
join_met(net_work *w, size_t ii, const wf_transition *t, json_t *st, wf_error *err)
{
    const char *item_id = ITEM(w, ii)->id;
    json_t *idx = json_array(), *jobs = json_array();
    for (size_t k = 0; idx != NULL && jobs != NULL && k < w->jobs.n; k++) {
        const wf_job_row *j = JOB(w, k);
        if ((w->jobs.flags[k] & NW_GONE) || j->compensation || !wf_str_eq(j->work_item_id, item_id))
            continue;
        json_array_append_new(idx, json_integer(job_index(j)));
        json_array_append_new(jobs, json_string(j->id));
        wf_runtime__gone(&w->jobs, k);
    }
    json_t *tasks = json_array();
    wf_code rc = idx != NULL && jobs != NULL && tasks != NULL ? WF_OK : wf_error_nomem(err);
    json_t *refs = json_object_get(st, "refs");
    for (size_t k = 0; rc == WF_OK && k < w->rw.n_tasks; k++) {
        const wf_task_row *task = &w->rw.tasks[k];
        if (!wf_str_eq(task->work_item_id, item_id) || !wf_runtime__task_pending(task))
            continue;
        for (size_t i = 0; i < json_array_size(refs); i++)
            if (wf_str_eq(json_string_value(json_array_get(refs, i)), task->id))
                json_array_append_new(idx, json_integer((json_int_t)i));
        json_array_append_new(tasks, json_string(task->id));
        rc = wf_referral_cancel_task(&w->rw, k, err);
    }
    json_t *children = json_array();
    if (rc == WF_OK && children == NULL)
        rc = wf_error_nomem(err);
    if (rc == WF_OK && t->trigger == WF_TRIGGER_CALL)
        rc = withdraw_children(w, st, idx, children, "its for-each item was withdrawn", err);
    if (rc == WF_OK && json_array_size(idx) > 0) {
        rc = wf_runtime__event(w, "FOREACH_ITEMS_WITHDRAWN",
                               json_pack("{s:s,s:s,s:O,s:O,s:O,s:O}", "transitionId", t->id,
                                         "workItemId", item_id, "indexes", idx, "jobIds", jobs,
                                         "taskIds", tasks, "childInstanceIds", children),
                               err);
    }
    json_decref(idx);
    json_decref(jobs);
    json_decref(tasks);
    json_decref(children);
    if (rc != WF_OK)
        return rc;
    json_t *patch = json_pack("{s:O}", output_name(w->rw.arena, t), json_object_get(st, "out"));
    char *ptext = patch != NULL ? wf_vars_dump(w->rw.arena, patch) : NULL;
    json_decref(patch);
    if (rc == WF_OK && ptext == NULL)
        rc = wf_error_nomem(err);
    if (rc == WF_OK)
        rc = wf_runtime__fire(w, item_id, ptext, err);
    return rc;
}

/* The output of a job (its CompleteJob variables; {} when none). */
static json_t *
item_output(const char *patch)
{
    json_t *v = patch != NULL && patch[0] != '\0' ? json_loads(patch, 0, NULL) : NULL;
    return json_is_object(v) ? v : (json_decref(v), json_object());
}

/* Records item i as completed with its output; false when it was already. */
static bool
record_item(json_t *st, size_t i, const char *patch)
{
    json_t *sv = json_object_get(st, "st");
    if (i >= json_array_size(sv) || json_integer_value(json_array_get(sv, i)) == FE_DONE)
        return false;
    json_array_set_new(sv, i, json_integer(FE_DONE));
    json_array_set_new(json_object_get(st, "out"), i, item_output(patch));
    json_object_set_new(st, "done",
                        json_integer(json_integer_value(json_object_get(st, "done")) + 1));
    return true;
}

/* The first item not started yet (sequential); -1 when none. */
static long
next_waiting(json_t *st)
{
    json_t *sv = json_object_get(st, "st");
    for (size_t i = 0; i < json_array_size(sv); i++)
        if (json_integer_value(json_array_get(sv, i)) == FE_WAITING)
            return (long)i;
    return -1;
}

/* Item i of work item ii (transition t) completed with patch, by the job
 * or task named by_key/by_id: recorded, then the join or the next item. */
static wf_code
item_done(net_work *w, size_t ii, const wf_transition *t, long i, const char *by_key,
          const char *by_id, const char *patch, wf_error *err)
{
    json_t *st;
    wf_code rc = load_state(ITEM(w, ii), &st, err);
    if (rc != WF_OK)
        return rc;
    if (i < 0 || !record_item(st, (size_t)i, patch)) {
        json_decref(st);
        return wf_error_set(err, WF_E_INTERNAL, "%s \"%s\" is no running item of \"%s\"", by_key,
                            by_id, t->id);
    }
    size_t total = json_array_size(json_object_get(st, "items"));
    size_t done = (size_t)json_integer_value(json_object_get(st, "done"));
    rc = wf_runtime__event(w, "FOREACH_ITEM_COMPLETED",
                           json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "transitionId", t->id,
                                     "workItemId", ITEM(w, ii)->id, by_key, by_id, "index",
                                     (json_int_t)i, "completed", (json_int_t)done, "total",
                                     (json_int_t)total),
                           err);
    if (rc == WF_OK)
        rc = save_state(w, ii, st, err);
    if (rc == WF_OK &&
        wf_completion_met(t->for_each_completion.mode, t->for_each_completion.quorum, done, total))
        rc = join_met(w, ii, t, st, err);
    else if (rc == WF_OK && t->for_each_sequential && next_waiting(st) >= 0) {
        rc = start_item(w, ITEM(w, ii), t, st, (size_t)next_waiting(st), err);
        if (rc == WF_OK)
            rc = save_state(w, ii, st, err);
    }
    json_decref(st);
    return rc;
}

wf_code
wf_runtime__foreach_job_done(net_work *w, size_t ji, size_t ii, const wf_transition *t,
                             const char *patch, wf_error *err)
{
    const wf_job_row *j = JOB(w, ji);
    wf_runtime__gone(&w->jobs, ji);
    return item_done(w, ii, t, job_index(j), "jobId", j->id, patch, err);
}

wf_code
wf_runtime__foreach_task_done(net_work *w, size_t task, size_t ii, const wf_transition *t,
                              const char *patch, wf_error *err)
{
    if (ii == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INTERNAL, "the work item of a for-each task is gone");
    const char *id = w->rw.tasks[task].id;
    json_t *st;
    wf_code rc = load_state(ITEM(w, ii), &st, err);
    if (rc != WF_OK)
        return rc;
    json_t *refs = json_object_get(st, "refs");
    long i = -1;
    for (size_t k = 0; refs != NULL && k < json_array_size(refs) && i < 0; k++)
        if (wf_str_eq(json_string_value(json_array_get(refs, k)), id))
            i = (long)k;
    json_decref(st);
    return item_done(w, ii, t, i, "taskId", id, patch, err);
}

/* ---- CALL items ---------------------------------------------------------------- */

/* The index of child_id in the refs of st; -1 when none. */
static long
child_index(json_t *st, const char *child_id)
{
    json_t *refs = json_object_get(st, "refs");
    for (size_t k = 0; k < json_array_size(refs); k++)
        if (wf_str_eq(json_string_value(json_array_get(refs, k)), child_id))
            return (long)k;
    return -1;
}

size_t
wf_runtime__foreach_child(const net_work *w, const char *child_id, long *index)
{
    *index = -1;
    for (size_t ii = 0; ii < w->items.n; ii++) {
        const wf_work_item_row *it = ITEM(w, ii);
        json_t *st;
        wf_error e;
        if ((w->items.flags[ii] & NW_GONE) || it->trigger != WF_TRIGGER_CALL ||
            it->state != WF_WORK_ITEM_ENABLED || it->foreach_json == NULL ||
            load_state(it, &st, &e) != WF_OK)
            continue;
        long i = child_index(st, child_id);
        bool running = i >= 0 && json_integer_value(json_array_get(json_object_get(st, "st"),
                                                                   (size_t)i)) == FE_RUNNING;
        json_decref(st);
        if (running) {
            *index = i;
            return ii;
        }
    }
    return WF_WORK_NONE;
}

wf_code
wf_runtime__foreach_call_done(net_work *w, size_t ii, const wf_transition *t, long index,
                              const char *child_id, const char *patch, wf_error *err)
{
    return item_done(w, ii, t, index, "childInstanceId", child_id, patch, err);
}

long
wf_runtime__foreach_settled_child(const net_work *w, size_t ii, const wf_instance_row **child)
{
    json_t *st;
    wf_error e;
    if (load_state(ITEM(w, ii), &st, &e) != WF_OK)
        return -1;
    json_t *sv = json_object_get(st, "st"), *refs = json_object_get(st, "refs");
    long found = -1;
    for (size_t i = 0; found < 0 && i < json_array_size(sv); i++) {
        size_t c = wf_work_find_instance(&w->rw, json_string_value(json_array_get(refs, i)));
        if (json_integer_value(json_array_get(sv, i)) != FE_RUNNING || c == WF_WORK_NONE)
            continue;
        wf_instance_status s = w->rw.insts[c].status;
        if (s == WF_INSTANCE_COMPLETED || s == WF_INSTANCE_FAILED || s == WF_INSTANCE_CANCELLED ||
            s == WF_INSTANCE_COMPENSATED) {
            *child = &w->rw.insts[c];
            found = (long)i;
        }
    }
    json_decref(st);
    return found;
}

wf_code
wf_runtime__foreach_call_retry(net_work *w, size_t ii, const wf_transition *t, wf_error *err)
{
    json_t *st;
    wf_code rc = load_state(ITEM(w, ii), &st, err);
    if (rc != WF_OK)
        return rc;
    json_t *sv = json_object_get(st, "st"), *refs = json_object_get(st, "refs");
    for (size_t i = 0; rc == WF_OK && i < json_array_size(sv); i++)
        if (json_integer_value(json_array_get(sv, i)) == FE_RUNNING &&
            wf_work_find_instance(&w->rw, json_string_value(json_array_get(refs, i))) ==
                WF_WORK_NONE)
            rc = start_item(w, ITEM(w, ii), t, st, i, err);
    if (rc == WF_OK)
        rc = save_state(w, ii, st, err);
    json_decref(st);
    return rc;
}
