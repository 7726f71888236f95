/*
 * signals_int.h: the hooks net_runtime.c calls so that a MSG work item
 * consumes a buffered signal when it is enabled, and an instance that
 * ends discards the signals buffered for it.
 *
 * Consumption happens inside apply_created (the MSG branch): the signal
 * row is taken (wf_tx_consume_signal, SKIP LOCKED) and the firing is
 * queued. The queue is drained by the apply_diff that created the item,
 * after all of that step's items exist, so the firing sees the whole
 * marking; nested steps keep their own part of the queue (a per-thread
 * stack, marked on entry to apply_diff and always cut back to the mark on
 * exit). A queued item withdrawn before it fires puts its signal back in
 * the buffer.
 */
#ifndef WF_SIGNALS_INT_H
#define WF_SIGNALS_INT_H

#include "net_runtime_int.h"
#include "signals.h"

/* The current top of the queue (opaque). */
void *wf_sig__pending_mark(void);

/* MSG work item it of transition t was just enabled (its subscription is
 * in w->subs): consumes a matching buffered signal and queues the firing. */
wf_code wf_sig__msg_enabled(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                            wf_error *err);

/* Cuts the queue back to mark and, when rc is WF_OK, fires what was
 * queued above it (SIGNAL_CONSUMED, payload merged). A refused firing
 * (NO_ARC_MATCHED, a failing guard) is an incident of the instance, not
 * an error: the caller's unit of work goes on. When rc is such a refusal
 * the queued signals go back to the buffer. Returns rc or the firing's
 * error. */
wf_code wf_sig__fire_pending(net_work *w, void *mark, wf_code rc, wf_error *err);

/* RetryInstance resolved an incident and the instance runs again: every
 * MSG work item of it still waiting (ENABLED, its subscription in place)
 * looks at the buffer again, as when it was enabled (wf_sig__msg_enabled
 * then wf_sig__fire_pending). A signal it missed while the instance was
 * FAILED (sent then, or put back when an earlier firing of the same step
 * was refused) is consumed and fires now; a refused firing is the
 * instance's incident again, and the retry keeps what it did before. */
wf_code wf_sig__consume_awaited(net_work *w, wf_error *err);

/* The net instance ended: its buffered signals (addressed to its id) are
 * marked discarded. */
wf_code wf_sig__discard_buffered(net_work *w, wf_error *err);

#endif /* WF_SIGNALS_INT_H */
