/*
 * await.h: the conditions a call may wait for (AwaitInstance, and the
 * await_result of StartInstance and SendSignal): checked against an
 * instance's view, one read per check, and validated against the net of a
 * definition version before anything waits or starts.
 */
#ifndef WF_AWAIT_H
#define WF_AWAIT_H

#include <stdbool.h>

#include "instances.h"
#include "net_runtime.h"

/* The longest wait a call may ask for (ms); longer is refused. */
#define WF_AWAIT_MAX_MS ((int64_t)60 * 1000)

typedef enum wf_await_kind {
    WF_AWAIT_ENDED = 1,        /* COMPLETED, CANCELLED, COMPENSATED or FAILED */
    WF_AWAIT_STEP_ENABLED = 2, /* a step (STEPS) or transition (NET) has a work item enabled */
    WF_AWAIT_PLACE_MARKED = 3, /* a place holds at least one token */
} wf_await_kind;

typedef struct wf_await_until {
    wf_await_kind kind;
    const char *name; /* step, transition or place id; NULL for ENDED */
} wf_await_until;

/* Checks that u names what net has: WF_E_UNKNOWN_STEP for a step_enabled
 * that names no step of a step list (no transition of a plain net),
 * WF_E_UNKNOWN_PLACE for a place the net does not have. net NULL (an
 * AD_HOC definition) has neither. ENDED is always valid. */
wf_code wf_await_check_net(const wf_net *net, const wf_await_until *u, wf_error *err);

/* wf_await_check_net against the definition key at version (0 = the latest
 * valid). A key without any definition has no names: ENDED passes, a name
 * is unknown. */
wf_code wf_await_check_definition(const wf_runtime_ctx *ctx, const char *key, int32_t version,
                                  const wf_await_until *u, wf_error *err);

/* Whether u names a step, transition or place (to be checked). */
bool wf_await_until_names(const wf_await_until *u);

/* Whether the instance of view v meets u (v from wf_instances_get). */
bool wf_await_met(const wf_instance_view *v, const wf_await_until *u);

#endif /* WF_AWAIT_H */
