/*
 * instances.h: the entry layer of the engine, for the RPCs whose rule
 * depends on what an instance runs. Each function chooses between the
 * referral rules (referral/) and the net runtime (runtime/): the handlers
 * call these and never choose themselves.
 */
#ifndef WF_INSTANCES_H
#define WF_INSTANCES_H

#include <stdbool.h>

#include "net_runtime.h"
#include "referral.h"
#include "signals.h"

/* StartInstance: checks spec, then one unit of work that starts the
 * definition key names (wf_runtime_start_in: a NET, or an AD_HOC root). */
wf_code wf_instances_start(const wf_ref_ctx *ctx, const wf_start_spec *spec, wf_uow_idem *idem,
                           wf_instance_row *out, wf_error *err);

/* CompleteTask: variables_json normalised, the task located, then the
 * net runtime's completion for a task of a USER transition, else the
 * referral's (its join fires when met). */
wf_code wf_instances_complete_task(const wf_ref_ctx *ctx, const char *task_id,
                                   const char *variables_json, wf_uow_idem *idem,
                                   wf_ref_completion *out, wf_error *err);

/* CompleteAndEnd: as wf_instances_complete_task, then the whole tree ends. */
wf_code wf_instances_complete_and_end(const wf_ref_ctx *ctx, const char *task_id,
                                      const char *variables_json, wf_uow_idem *idem,
                                      wf_ref_end *out, wf_error *err);

/* CancelInstance: with compensate, a net with completed compensable steps
 * starts its saga (wf_runtime_cancel_compensate); anything else is a plain
 * cancel of the instance and its descendants (wf_referral_cancel).
 * reason may be NULL. */
wf_code wf_instances_cancel(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason,
                            bool compensate, wf_uow_idem *idem, wf_instance_row *out,
                            wf_error *err);

/* GetInstance: the instance with its tasks, children and pending joins;
 * for a NET instance where the net is parked; the signals buffered for it
 * (by id or by its aggregate). */
typedef struct wf_instance_view {
    wf_ref_instance_view tree;
    wf_runtime_view net; /* net.is_net false for an AD_HOC instance */
    wf_signal_row *buffered;
    size_t n_buffered;
} wf_instance_view;

wf_code wf_instances_get(const wf_ref_ctx *ctx, const char *instance_id, wf_instance_view *out,
                         wf_error *err);

#endif /* WF_INSTANCES_H */
