/*
 * End-to-end tests over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), of GetDefinitionStatistics: the live totals of a
 * definition's instances (tokens per place, enabled work items and open
 * incidents per transition), of one version and of every version, checked
 * against the sum of GetInstance's markings and ListWorkItems' enabled
 * items of the same instances, and with `at` the instances there, paged;
 * GetDiagram with live_totals draws the same numbers; ended instances and
 * other tenants are not counted; refusals with their code, reason and
 * field.
 *
 * Postgres keeps rows between runs: every definition key and job type is
 * made unique with a per-test suffix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "workflow/v1/workflow.pb-c.h"

#define W_ENABLED WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_ENABLED

static Workflow__V1__GetDefinitionStatisticsResponse *
stats_c(wf_client *c, const char *key, int32_t version, wf_client_status *st)
{
    Workflow__V1__GetDefinitionStatisticsRequest req =
        WORKFLOW__V1__GET_DEFINITION_STATISTICS_REQUEST__INIT;
    req.definition_key = (char *)key;
    req.version = version;
    return call(c, "GetDefinitionStatistics", &req,
                &workflow__v1__get_definition_statistics_response__descriptor, st);
}

static Workflow__V1__GetDefinitionStatisticsResponse *
stats(const char *key, int32_t version)
{
    wf_client_status st;
    Workflow__V1__GetDefinitionStatisticsResponse *r = stats_c(as(NULL), key, version, &st);
    ck_ok(st);
    return r;
}

#define AT_TOKENS WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_TOKENS
#define AT_ENABLED WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_ENABLED_WORK_ITEMS
#define AT_INCIDENTS WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_INCIDENTS

static Workflow__V1__GetDefinitionStatisticsResponse *
at_c(const char *key, int32_t version, Workflow__V1__ElementCountKind at, const char *element,
     int32_t page_size, const char *token, wf_client_status *st)
{
    Workflow__V1__GetDefinitionStatisticsRequest req =
        WORKFLOW__V1__GET_DEFINITION_STATISTICS_REQUEST__INIT;
    req.definition_key = (char *)key;
    req.version = version;
    req.at = at;
    req.element_id = (char *)element;
    req.page_size = page_size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(as(NULL), "GetDefinitionStatistics", &req,
                &workflow__v1__get_definition_statistics_response__descriptor, st);
}

/* Every instance listed at element, one page of page_size at a time,
 * joined as "id id " in the order listed (at most 64 pages). */
static char *
listed_at(const char *key, int32_t version, Workflow__V1__ElementCountKind at, const char *element,
          int32_t page_size)
{
    char *out = wf_arena_strdup(ta, "");
    const char *token = NULL;
    for (int page = 0; page < 64; page++) {
        wf_client_status st;
        Workflow__V1__GetDefinitionStatisticsResponse *r =
            at_c(key, version, at, element, page_size, token, &st);
        ck_ok(st);
        ck_assert_uint_le(r->n_instance_ids, (size_t)page_size);
        ck_assert_uint_eq(r->n_tokens + r->n_enabled_work_items + r->n_incidents, 0);
        for (size_t i = 0; i < r->n_instance_ids; i++)
            out = wf_arena_printf(ta, "%s%s ", out, r->instance_ids[i]);
        if (r->next_page_token[0] == '\0')
            return out;
        token = wf_arena_strdup(ta, r->next_page_token);
    }
    ck_abort_msg("more than 64 pages");
    return NULL;
}

/* The ids of ids[0..n) that pred holds for, sorted, as listed_at joins
 * them. */
static char *
expected_at(char *const *ids, size_t n, bool (*pred)(const char *id, const char *element),
            const char *element)
{
    const char *v[8];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 8; i++)
        if (pred(ids[i], element))
            v[k++] = ids[i];
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    char *out = wf_arena_strdup(ta, "");
    for (size_t i = 0; i < k; i++)
        out = wf_arena_printf(ta, "%s%s ", out, v[i]);
    return out;
}

static bool
holds_token(const char *id, const char *place)
{
    return marking(get_instance(id), place) > 0;
}

static int enabled_at(const char *id, const char *transition);

static bool
has_enabled(const char *id, const char *transition)
{
    return enabled_at(id, transition) > 0;
}

/* The count of element in a list of the answer (0 when absent). */
static int64_t
count_at(Workflow__V1__ElementCount *const *v, size_t n, const char *element)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i]->element_id, element) == 0)
            return v[i]->count;
    return 0;
}

/* The enabled work items of instance id at transition. */
static int
enabled_at(const char *id, const char *transition)
{
    Workflow__V1__ListWorkItemsRequest req = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
    Workflow__V1__WorkItemState states[] = {W_ENABLED};
    req.instance_id = (char *)id;
    req.states = states;
    req.n_states = 1;
    req.page_size = 500;
    wf_client_status st;
    Workflow__V1__ListWorkItemsResponse *r = call(
        as(NULL), "ListWorkItems", &req, &workflow__v1__list_work_items_response__descriptor, &st);
    ck_ok(st);
    int n = 0;
    for (size_t i = 0; i < r->n_work_items; i++)
        n += strcmp(r->work_items[i]->transition_id, transition) == 0;
    return n;
}

/* GetDiagram of key's version with the live totals (all: of every
 * version), as DOT or SVG. */
static char *
live_diagram_c(const char *key, int32_t version, bool all, const char *instance,
               Workflow__V1__DiagramFormat format, wf_client_status *st)
{
    Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    req.definition_key = (char *)(key != NULL ? key : "");
    req.instance_id = (char *)(instance != NULL ? instance : "");
    req.version = version;
    req.format = format;
    req.live_totals = instance == NULL || all;
    req.all_versions = all;
    Workflow__V1__GetDiagramResponse *r =
        call(as(NULL), "GetDiagram", &req, &workflow__v1__get_diagram_response__descriptor, st);
    return r != NULL ? r->content : NULL;
}

static char *
live_diagram(const char *key, int32_t version, bool all, Workflow__V1__DiagramFormat format)
{
    wf_client_status st;
    char *c = live_diagram_c(key, version, all, NULL, format, &st);
    ck_ok(st);
    return c;
}

#define DOT WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT
#define SVG WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_SVG

/* s -> work (job type) -> mid -> ship (job ship) -> e. */
static nb *
two_jobs(const char *key, const char *type, const char *ship)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "mid", NORMAL);
    place(n, "e", END);
    with_job(trans(n, "work", T_AUTO), type, 1, 0);
    with_job(trans(n, "ship", T_AUTO), ship, 1, 0);
    arc(n, "s", "work");
    arc(n, "work", "mid");
    arc(n, "mid", "ship");
    arc(n, "ship", "e");
    return n;
}

/* The totals of r equal the sums over the n instances ids of their
 * markings and enabled work items, for the places and transitions of
 * two_jobs. */
static void
matches_instances(const Workflow__V1__GetDefinitionStatisticsResponse *r, char *const *ids,
                  size_t n)
{
    static const char *const places[] = {"s", "mid", "e"};
    static const char *const transitions[] = {"work", "ship"};
    ck_assert_int_eq(r->live_instances, (int64_t)n);
    for (size_t p = 0; p < 3; p++) {
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += marking(get_instance(ids[i]), places[p]);
        ck_assert_int_eq(count_at(r->tokens, r->n_tokens, places[p]), sum);
    }
    for (size_t t = 0; t < 2; t++) {
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += enabled_at(ids[i], transitions[t]);
        ck_assert_int_eq(count_at(r->enabled_work_items, r->n_enabled_work_items, transitions[t]),
                         sum);
    }
}

WF_TEST(test_statistics_total_the_live_instances)
{
    char *key = u("fleet");
    char *type = u("work"), *ship = u("ship");
    ck_assert(deploy(two_jobs(key, type, ship))->created);
    wf_client_status st;
    char *ids[4];
    for (int i = 0; i < 4; i++) {
        ids[i] = start_v(as("boss"), key, 0, NULL, &st)->id;
        ck_ok(st);
    }
    /* Nothing moved: every token in s, every work item at work. */
    Workflow__V1__GetDefinitionStatisticsResponse *r = stats(key, 1);
    ck_assert_int_eq(r->live_instances, 4);
    ck_assert_uint_eq(r->n_tokens, 1);
    ck_assert_str_eq(r->tokens[0]->element_id, "s");
    ck_assert_int_eq(r->tokens[0]->count, 4);
    ck_assert_int_eq(count_at(r->enabled_work_items, r->n_enabled_work_items, "work"), 4);
    ck_assert_uint_eq(r->n_incidents, 0);
    matches_instances(r, ids, 4);

    /* One moves on to mid, one fails for good at work (an incident). */
    Workflow__V1__ActivateJobsResponse *a = activate(type, 2, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 2);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    ck_assert_int_eq(fail_job(a->jobs[1]->key, "card declined", 0, -1, &st), 0);
    const char *failed_id = a->jobs[1]->instance_id;
    r = stats(key, 1);
    ck_assert_int_eq(count_at(r->tokens, r->n_tokens, "mid"), 1);
    ck_assert_int_eq(count_at(r->enabled_work_items, r->n_enabled_work_items, "ship"), 1);
    ck_assert_uint_eq(r->n_incidents, 1);
    ck_assert_str_eq(r->incidents[0]->element_id, "work");
    ck_assert_int_eq(r->incidents[0]->count, 1);
    matches_instances(r, ids, 4);
    /* Clicking a place or transition: the instances there, paged. */
    for (int size = 1; size <= 3; size += 2) {
        ck_assert_str_eq(listed_at(key, 1, AT_TOKENS, "s", size),
                         expected_at(ids, 4, holds_token, "s"));
        ck_assert_str_eq(listed_at(key, 1, AT_TOKENS, "mid", size),
                         expected_at(ids, 4, holds_token, "mid"));
        ck_assert_str_eq(listed_at(key, 0, AT_ENABLED, "ship", size),
                         expected_at(ids, 4, has_enabled, "ship"));
    }
    ck_assert_str_eq(listed_at(key, 1, AT_ENABLED, "work", 2),
                     expected_at(ids, 4, has_enabled, "work"));
    ck_assert_str_eq(listed_at(key, 1, AT_INCIDENTS, "work", 2),
                     wf_arena_printf(ta, "%s ", failed_id));
    ck_assert_str_eq(listed_at(key, 1, AT_INCIDENTS, "ship", 2), "");
    ck_assert_str_eq(listed_at(key, 1, AT_TOKENS, "nowhere", 2), "");
    /* The diagram with the live totals: the same numbers, in DOT and SVG. */
    char *dot = live_diagram(key, 1, false, DOT);
    ck_assert_msg(strstr(dot, "4 live instances of v1") != NULL, "%s", dot);
    ck_assert_msg(strstr(dot, "1 incident") != NULL, "%s", dot);
    char *svg = live_diagram(key, 1, false, SVG);
    ck_assert_msg(strstr(svg, "4 live instances of v1") != NULL, "%s", svg);
    ck_assert_msg(strstr(svg, "1 incident") != NULL, "%s", svg);
    ck_assert_msg(strstr(svg, "1 token<") != NULL, "the token in mid: %s", svg);
    ck_assert_msg(strstr(live_diagram(key, 0, true, DOT), "4 live instances of every version"),
                  "every version");
    /* A page token belongs to its element. */
    Workflow__V1__GetDefinitionStatisticsResponse *p1 = at_c(key, 1, AT_TOKENS, "s", 1, NULL, &st);
    ck_ok(st);
    ck_assert_str_ne(p1->next_page_token, "");
    ck_assert_ptr_null(at_c(key, 1, AT_TOKENS, "mid", 1, p1->next_page_token, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    /* The one at mid completes, another is cancelled: neither counts. */
    a = activate(ship, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    char *left[4];
    size_t n_left = 0;
    bool cancelled = false;
    for (int i = 0; i < 4; i++) {
        int s = get_instance(ids[i])->instance->status;
        if (s == I_RUNNING && !cancelled) {
            Workflow__V1__CancelInstanceRequest c = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
            c.instance_id = ids[i];
            call(as("ops"), "CancelInstance", &c,
                 &workflow__v1__cancel_instance_response__descriptor, &st);
            ck_ok(st);
            cancelled = true;
        } else if (s == I_RUNNING || s == I_FAILED) {
            left[n_left++] = ids[i];
        }
    }
    ck_assert_uint_eq(n_left, 2);
    r = stats(key, 1);
    ck_assert_int_eq(count_at(r->tokens, r->n_tokens, "mid"), 0);
    ck_assert_int_eq(count_at(r->tokens, r->n_tokens, "e"), 0);
    matches_instances(r, left, n_left);
}
END_TEST

WF_TEST(test_statistics_by_version_and_of_every_version)
{
    char *key = u("fleet-v");
    char *type = u("work"), *ship = u("ship");
    ck_assert(deploy(two_jobs(key, type, ship))->created);
    wf_client_status st;
    for (int i = 0; i < 2; i++) {
        start_v(as("boss"), key, 0, NULL, &st);
        ck_ok(st);
    }
    nb *v2 = two_jobs(key, type, ship);
    place(v2, "extra", NORMAL);
    arc(v2, "work", "extra");
    arc(v2, "extra", "ship");
    ck_assert(deploy(v2)->created);
    for (int i = 0; i < 3; i++) {
        start_v(as("boss"), key, 0, NULL, &st);
        ck_ok(st);
    }
    ck_assert_int_eq(stats(key, 1)->live_instances, 2);
    ck_assert_int_eq(stats(key, 2)->live_instances, 3);
    Workflow__V1__GetDefinitionStatisticsResponse *all = stats(key, 0);
    ck_assert_int_eq(all->live_instances, 5);
    ck_assert_int_eq(count_at(all->tokens, all->n_tokens, "s"), 5);
    ck_assert_int_eq(count_at(all->enabled_work_items, all->n_enabled_work_items, "work"), 5);

    /* Another tenant sees none of them, and a key of its own is counted
     * apart. */
    ck_assert_ptr_null(stats_c(as_tenant("fleet-elsewhere", NULL), key, 0, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
}
END_TEST

WF_TEST(test_statistics_refusals)
{
    char *key = u("fleet-r");
    ck_assert(deploy(two_jobs(key, u("work"), u("ship")))->created);
    wf_client_status st;
    ck_assert_ptr_null(stats_c(as(NULL), "", 0, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "definition_key", NULL));
    ck_assert_ptr_null(stats_c(as(NULL), key, -1, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "version", NULL));
    ck_assert_ptr_null(stats_c(as(NULL), key, 2, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    ck_assert_ptr_null(stats_c(as(NULL), u("fleet-none"), 0, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    /* The listing: `at` and element_id go together; page_size and the
     * token are checked. */
    ck_assert_ptr_null(at_c(key, 0, AT_TOKENS, "", 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "element_id", NULL));
    ck_assert_ptr_null(at_c(key, 0, 0, "s", 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "at", NULL));
    ck_assert_ptr_null(at_c(key, 0, 9, "s", 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "at", NULL));
    ck_assert_ptr_null(at_c(key, 0, AT_TOKENS, "s", -1, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "page_size", NULL));
    ck_assert_ptr_null(at_c(key, 0, AT_TOKENS, "s", 0, "bogus", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "page_token", NULL));
    ck_assert_ptr_null(at_c(u("fleet-none"), 0, AT_TOKENS, "s", 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    /* The diagram's live totals: of a definition only, all_versions with
     * them only. */
    ck_assert_ptr_null(
        live_diagram_c(key, 0, true, "00000000-0000-7000-8000-000000000001", DOT, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "live_totals", NULL));
    {
        Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
        req.definition_key = key;
        req.format = DOT;
        req.all_versions = true;
        ck_assert_ptr_null(call(as(NULL), "GetDiagram", &req,
                                &workflow__v1__get_diagram_response__descriptor, &st));
        ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        ck_assert(has_violation(&st, "all_versions", NULL));
    }
    /* A definition without instances: zeros, empty lists. */
    Workflow__V1__GetDefinitionStatisticsResponse *r = stats(key, 0);
    ck_assert_int_eq(r->live_instances, 0);
    ck_assert_uint_eq(r->n_tokens + r->n_enabled_work_items + r->n_incidents, 0);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_fleet", wf_test_store_name(), setup, teardown, 60));
}
