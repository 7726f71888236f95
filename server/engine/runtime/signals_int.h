/*
 * signals_int.h: what signals.c (SendSignal) and signals_fanout.c (the
 * deliveries of a fan-out) share. Internal to engine/runtime.
 */
#ifndef WF_SIGNALS_INT_H
#define WF_SIGNALS_INT_H

#include "net_runtime_int.h"

/* One delivery of a signal in the making: SendSignal's, or a fan-out
 * delivery's (built from the log row). */
typedef struct send_op {
    const wf_runtime_ctx *ctx;
    const wf_runtime_send_signal_in *in;
    const char *payload; /* normalised object text */
    int64_t received_at;
    const char *log_id;
    bool write_log;   /* this unit of work writes the log row when it fires */
    const char *root; /* aggregate path: the root to visit */
    const char *instance_id;
    /* results of one run */
    bool fired;
    bool logged;
    const char *fired_instance;
    wf_signal_outcome outcome;
    int64_t expires_at;
    const char **wake;
    size_t n_wake;
    /* The call's idempotency (NULL: none), one call over several units
     * of work (wf_uow_span_begin), and its response: each unit of work
     * with an effect records the response so far in its transaction. */
    wf_uow_idem *idem;
    wf_runtime_send_signal_out *out;
    size_t base_ids;        /* aggregate path: instances fired by earlier roots */
    const char *original;   /* DUPLICATE: the log row of the first delivery */
    const char *start_vars; /* start: its variables, normalised */
    const char *started;    /* STARTED: the instance started */
    bool may_queue;         /* fanout_body may answer QUEUED ... */
    bool would_queue;       /* ... else it sets this and writes nothing */
} send_op;

/* The oldest waiting subscription of w's instance for the signal of in. */
size_t wf_runtime__sig_pick_sub(const net_work *w, const wf_runtime_send_signal_in *in);

/* Fires subscription si of w with op's payload (events included). */
wf_code wf_runtime__sig_fire_sub(net_work *w, send_op *op, size_t si, wf_error *err);

/* Writes the log row of op as CORRELATED, consumed by w's instance. */
wf_code wf_runtime__sig_log_fired(net_work *w, send_op *op, const char *trans, wf_error *err);

/* Under the correlation lock: buffers, drops or (may_start) starts. */
wf_code wf_runtime__sig_settle_unawaited(wf_tx *tx, send_op *op, bool may_start, wf_error *err);

/* Writes the log row of a fan-out (CORRELATED) or a QUEUED signal. */
wf_code wf_runtime__sig_log_fanout(wf_tx *tx, send_op *op, wf_signal_outcome outcome,
                                   wf_error *err);

/* After the answer of a fan-out committed: wakes the schedulers and runs
 * the first deliveries itself when there are few (signals_fanout.c). */
void wf_runtime__sig_after_fanout(const wf_runtime_ctx *ctx, const char *log_id,
                                  const wf_runtime_send_signal_out *out);

/* A sender that would queue behind a few pending deliveries to the
 * aggregate (at most WF_RUNTIME_FANOUT_INLINE) runs them itself, each exactly
 * once as a scheduler would: true when it ran them all. */
bool wf_runtime__sig_help(const wf_runtime_ctx *ctx, const char *aggregate_type,
                          const char *aggregate_id);

#endif
