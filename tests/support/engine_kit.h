/*
 * engine_kit: what the unit suites of the engine share, calling it without
 * a server: deploying nets and starting instances, asserting OK (the
 * failure message names the reason and the text of the error).
 */
#ifndef WF_ENGINE_KIT_H
#define WF_ENGINE_KIT_H

#include "instances.h"
#include "net_runtime.h"
#include "uow.h"

/* ---- the fixture of suites over one store ----------------------------------------------- */

/* Names the variables that hold the running case's store and arena:
 * kit_setup fills them, kit_teardown frees them, kit_ctx reads them. A
 * suite's main calls it before the suite runs; st NULL: the cases need
 * an arena only. */
void kit_fixture(wf_store **st, wf_arena **arena);

/* Checked fixture: a fresh memory store (unless kit_fixture's st is NULL)
 * and arena, asserting both. */
void kit_setup(void);

/* Frees the case's store and arena and empties the engine's caches
 * (compiled expressions, definitions), so that no case sees another's.
 * Cached jq states keep their stack through a pointer one past the end of
 * the block, which LeakSanitizer cannot follow: they must be freed. */
void kit_teardown(void);

/* The context of actor in tenant "default" over the case's store and
 * arena. */
wf_runtime_ctx kit_ctx(const char *actor);

/* ---- what the case's store holds (tenant "default"), asserting OK ------------------------- */

/* The instance id. */
wf_instance_row kit_instance(const char *id);

/* The aggregate of the root instance id (the root and its tree). */
wf_aggregate kit_aggregate(const char *id);

/* The events of root's tree in order (at most 1000); *n their number. */
wf_event_row *kit_events(const char *root, size_t *n);

/* How many events root's tree has. */
size_t kit_n_events(const char *root);

/* The types of root's events after the first skip, space-separated (a
 * static buffer, valid until the next call). */
const char *kit_event_types(const char *root, size_t skip);

/* The data (JSON text) of the last event of type in root's tree; fails
 * the test when there is none. */
const char *kit_event_data(const char *root, const char *type);

/* ---- deploying and starting ---------------------------------------------------------------- */

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
