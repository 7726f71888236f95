/*
 * referral_int.h: what the referral*.c files share and nobody else uses.
 */
#ifndef WF_REFERRAL_INT_H
#define WF_REFERRAL_INT_H

#include "referral.h"

/* Runs an AssignTo inside the working set: a request's (joined false:
 * field violations go to ctx->violation) or the next step of a join. */
wf_code wf_referral__assign(wf_work *w, const wf_assign_spec *spec, wf_tx *tx,
                            const char *default_parent, bool joined, wf_ref_assignment *out,
                            wf_error *err);

/* Locks the tree of the located task at, finds the task (*t) and its
 * instance (*i) in *w and applies the permission rules of op
 * (wf_referral_check_task_op) and the instance's: TASK_NOT_FOUND,
 * INSTANCE_NOT_RUNNING and the rules' errors. agg (NULL = not wanted)
 * receives the aggregate as locked, for the rows *w does not hold (the
 * live work items). */
wf_code wf_referral__open_task(const wf_ref_ctx *ctx, wf_tx *tx, const wf_ref_task_at *at,
                               wf_task_op op, wf_work *w, size_t *t, size_t *i, wf_aggregate *agg,
                               wf_error *err);

/* Checks the variables of w and writes its changes with one wf_tx_apply,
 * with the work item row item too unless it is NULL. */
wf_code wf_referral__write_work(wf_tx *tx, const wf_work *w, const wf_work_item_row *item,
                                wf_error *err);

#endif /* WF_REFERRAL_INT_H */
