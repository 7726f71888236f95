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

#endif /* WF_REFERRAL_INT_H */
