/*
 * engine_kit: what the unit suites of the engine share, calling it without
 * a server: deploying nets and starting instances, asserting OK (the
 * failure message names the reason and the text of the error).
 */
#ifndef WF_ENGINE_KIT_H
#define WF_ENGINE_KIT_H

#include "instances.h"
#include "net_runtime.h"

/* Deploys net in c's tenant as c's actor, asserting OK. */
wf_runtime_deployed kit_deploy(const wf_runtime_ctx *c, const wf_net *net);

/* Deploys key: s -> t -> e in c, asserting OK. */
void kit_deploy_line(wf_runtime_ctx c, const char *key, wf_transition *t);

/* Deploys key: s -> paid (MSG "payment", correlation corr) -> e in c,
 * asserting OK. The transition lives in c's arena. */
void kit_deploy_msg_net(wf_runtime_ctx c, const char *key, wf_correlation corr);

/* A start of key, bound to the aggregate ("order", aggregate_id) unless
 * aggregate_id is NULL. */
wf_start_spec kit_order_spec(const char *key, const char *aggregate_id);

/* StartInstance of spec in c (idem may be NULL), asserting OK. */
wf_instance_row kit_start(const wf_ref_ctx *c, const wf_start_spec *spec, wf_uow_idem *idem);

/* StartInstance of kit_order_spec(key, aggregate_id) in c, asserting OK. */
wf_instance_row kit_start_order(wf_runtime_ctx c, const char *key, const char *aggregate_id);

/* A request id for method, new at each call ("req-1", "req-2", ... in
 * arena), whose response is recorded as a fixed text: for suites that
 * count what a request id costs, not what it answers. */
wf_uow_idem kit_request(wf_arena *arena, const char *method);

#endif /* WF_ENGINE_KIT_H */
