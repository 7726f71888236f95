/*
 * handlers: the handler functions named by the method table (routes.c).
 */
#ifndef WF_HANDLERS_H
#define WF_HANDLERS_H

#include "handler.h"

/* Definitions (h_definitions.c). */
wf_code h_deploy_definition(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                            wf_error *err);
wf_code h_get_definition_statistics(wf_call *call, const ProtobufCMessage *req,
                                    ProtobufCMessage **resp, wf_error *err);
wf_code h_get_definition(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_list_definitions(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);

/* Diagrams (h_diagrams.c). */
wf_code h_get_diagram(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                      wf_error *err);

/* Instances (h_instances.c): ad-hoc roots and trees. */
wf_code h_start_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_get_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                       wf_error *err);
wf_code h_list_instances(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_list_incidents(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);

/* Batch operations (h_batch.c). */
wf_code h_start_batch_operation(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                                wf_error *err);
wf_code h_get_batch_operation(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                              wf_error *err);
wf_code h_cancel_batch_operation(wf_call *call, const ProtobufCMessage *req,
                                 ProtobufCMessage **resp, wf_error *err);
wf_code h_list_batch_operations(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                                wf_error *err);
/* Resources (h_resources.c). */
wf_code h_declare_resource(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);
wf_code h_get_resource(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                       wf_error *err);
wf_code h_list_resources(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_update_resource(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_delete_resource(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
/* Schedules (h_schedules.c). */
wf_code h_create_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_get_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                       wf_error *err);
wf_code h_list_schedules(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_update_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_delete_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_pause_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_unpause_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);
wf_code h_trigger_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);
wf_code h_list_schedule_runs(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                             wf_error *err);
wf_code h_backfill_schedule(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                            wf_error *err);
wf_code h_cancel_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_set_variables(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                        wf_error *err);
wf_code h_modify_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_migrate_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);
wf_code h_retry_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_suspend_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);
wf_code h_resume_instance(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);
wf_code h_list_work_items(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                          wf_error *err);

/* Ad-hoc referral (h_referral.c). */
wf_code h_assign_to(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                    wf_error *err);
wf_code h_get_completion(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                         wf_error *err);
wf_code h_complete_and_end(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);

/* Tasks (h_tasks.c). */
wf_code h_list_tasks(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                     wf_error *err);
wf_code h_get_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                   wf_error *err);
wf_code h_claim_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                     wf_error *err);
wf_code h_release_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                       wf_error *err);
wf_code h_complete_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                        wf_error *err);
wf_code h_reassign_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                        wf_error *err);
wf_code h_delegate_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                        wf_error *err);
wf_code h_update_task(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                      wf_error *err);

/* Jobs (h_jobs.c): ActivateJobs is a long-polling unary call. */
extern const wf_stream_ops h_activate_jobs;
/* Jobs pushed to a worker within a credit, and batched completions
 * (h_job_stream.c). */
extern const wf_stream_ops h_stream_activated_jobs;
wf_code h_complete_jobs(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                        wf_error *err);
/* The activation key (of tenant) is finished on this process (completed, failed, or
 * refused as no longer current): the job stream holding it, if any, gets
 * its credit back and is woken. */
void wf_h_job_stream_release(wf_app *app, const char *tenant, const char *key);
/* ExtendJobLease moved the lease of key to expires_at (µs). */
void wf_h_job_stream_extended(wf_app *app, const char *tenant, const char *key, int64_t expires_at);
wf_code h_complete_job(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                       wf_error *err);
wf_code h_fail_job(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                   wf_error *err);
wf_code h_extend_job_lease(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                           wf_error *err);
wf_code h_update_job(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                     wf_error *err);

/* Signals (h_signals.c). */
wf_code h_send_signal(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                      wf_error *err);
wf_code h_list_signals(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                       wf_error *err);
/* Delivery-log rows as messages (an array of n, NULL when out of memory);
 * GetInstance uses it for buffered_signals. */
struct wf_signal_row;
struct Workflow__V1__Signal **wf_h_signals(wf_arena *a, const struct wf_signal_row *rows, size_t n);

/* AwaitInstance, a unary long poll, and the ops StartInstance and
 * SendSignal park a call on when it awaits a result (h_await.c). */
extern const wf_stream_ops h_await_instance;
extern const wf_stream_ops h_await_parked;

/* WatchEvents: the event log as a server stream (h_events.c). */
extern const wf_stream_ops h_watch_events;

/* RunSchedulerPass: one scheduler pass for the caller's tenant
 * (h_scheduler.c). */
wf_code h_run_scheduler_pass(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                             wf_error *err);

#endif /* WF_HANDLERS_H */
