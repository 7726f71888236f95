/*
 * wf_bulkhead: bounded classes of expensive work (see wf_bulkhead.h).
 *
 * Each class is two counters: its limit and the calls in it. Joining takes
 * a place with a compare-and-swap below the limit, so a full class refuses
 * without a lock and without waiting.
 */
#include "wf_bulkhead.h"

#include <stdatomic.h>
#include <stddef.h>

static const char *const names[WF_BULKHEAD_COUNT_] = {
    [WF_BULKHEAD_DIAGRAM] = "diagram",
    [WF_BULKHEAD_COMPILE] = "compile",
    [WF_BULKHEAD_EXPR] = "expression",
};

/* What the refusal says each class's callers are doing. */
static const char *const doing[WF_BULKHEAD_COUNT_] = {
    [WF_BULKHEAD_DIAGRAM] = "calls are laying out diagrams",
    [WF_BULKHEAD_COMPILE] = "calls are compiling the expressions of definitions",
    [WF_BULKHEAD_EXPR] = "calls are evaluating expressions past their budget",
};

static struct {
    atomic_int limit;
    atomic_int active;
    atomic_ullong joined;
    atomic_ullong refused;
} classes[WF_BULKHEAD_COUNT_] = {
    [WF_BULKHEAD_DIAGRAM] = {WF_BULKHEAD_DEFAULT_LIMIT, 0, 0, 0},
    [WF_BULKHEAD_COMPILE] = {WF_BULKHEAD_DEFAULT_LIMIT, 0, 0, 0},
    [WF_BULKHEAD_EXPR] = {WF_BULKHEAD_DEFAULT_LIMIT, 0, 0, 0},
};

/* The calling thread's call. */
static _Thread_local struct {
    bool in_call;
    bool handed_off;
    unsigned joined; /* bit per class */
    void (*hand_off)(void *arg);
    void *arg;
} call;

void
wf_bulkhead_configure(const int limits[WF_BULKHEAD_COUNT_])
{
    for (int c = 0; c < WF_BULKHEAD_COUNT_; c++)
        atomic_store(&classes[c].limit, limits[c] > 0 ? limits[c] : 1);
}

const char *
wf_bulkhead_name(wf_bulkhead_class c)
{
    return (int)c >= 0 && c < WF_BULKHEAD_COUNT_ ? names[c] : "?";
}

void
wf_bulkhead_call_begin(void (*hand_off)(void *arg), void *arg)
{
    wf_bulkhead_call_end(); /* a call never inherits another's classes */
    call.in_call = true;
    call.hand_off = hand_off;
    call.arg = arg;
}

void
wf_bulkhead_call_end(void)
{
    for (int c = 0; c < WF_BULKHEAD_COUNT_; c++)
        if (call.joined & (1u << c))
            atomic_fetch_sub(&classes[c].active, 1);
    call.in_call = false;
    call.handed_off = false;
    call.joined = 0;
    call.hand_off = NULL;
    call.arg = NULL;
}

/* Takes a place in c below its limit; false when c is full. */
static bool
take_place(wf_bulkhead_class c)
{
    int now = atomic_load(&classes[c].active);
    for (;;) {
        if (now >= atomic_load(&classes[c].limit))
            return false;
        if (atomic_compare_exchange_weak(&classes[c].active, &now, now + 1))
            return true;
    }
}

wf_code
wf_bulkhead_enter(wf_bulkhead_class c, wf_error *err)
{
    if ((int)c < 0 || c >= WF_BULKHEAD_COUNT_)
        return wf_error_set(err, WF_E_INTERNAL, "unknown bulkhead %d", (int)c);
    if (!call.in_call || (call.joined & (1u << c)))
        return WF_OK;
    if (!take_place(c)) {
        atomic_fetch_add(&classes[c].refused, 1);
        return wf_error_set(err, WF_E_BULKHEAD_FULL,
                            "bulkhead \"%s\" is full: %d %s at once; retry later", names[c],
                            atomic_load(&classes[c].limit), doing[c]);
    }
    atomic_fetch_add(&classes[c].joined, 1);
    call.joined |= 1u << c;
    if (!call.handed_off && call.hand_off != NULL) {
        call.handed_off = true;
        call.hand_off(call.arg);
    }
    return WF_OK;
}

bool
wf_bulkhead_joined(wf_bulkhead_class c)
{
    return (int)c >= 0 && c < WF_BULKHEAD_COUNT_ && (call.joined & (1u << c)) != 0;
}

void
wf_bulkhead_get_stats(wf_bulkhead_class c, wf_bulkhead_stats *out)
{
    out->limit = atomic_load(&classes[c].limit);
    out->active = atomic_load(&classes[c].active);
    out->joined = atomic_load(&classes[c].joined);
    out->refused = atomic_load(&classes[c].refused);
}
