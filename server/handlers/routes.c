/*
 * routes: the method table of workflow.v1.WorkflowService.
 *
 * One row per RPC: which handler serves it and which interceptors it needs.
 * The rpc layer refuses to start when this table and the service descriptor
 * generated from workflow.proto disagree, so adding an RPC to the proto
 * without a row here (or the reverse) fails at startup and in the unit tests.
 */
#include "handler.h"
#include "handlers.h"

const wf_route wf_routes[] = {
    /* Definitions */
    {"DeployDefinition", h_deploy_definition, WF_ROUTE_ACTOR, NULL},
    {"GetDefinition", h_get_definition, 0, NULL},
    {"ListDefinitions", h_list_definitions, 0, NULL},
    {"GetDiagram", h_get_diagram, 0, NULL},
    /* Instances */
    {"StartInstance", h_start_instance, WF_ROUTE_ACTOR, &h_await_parked},
    {"GetInstance", h_get_instance, 0, NULL},
    {"AwaitInstance", NULL, 0, &h_await_instance},
    {"ListInstances", h_list_instances, 0, NULL},
    {"CancelInstance", h_cancel_instance, WF_ROUTE_ACTOR, NULL},
    {"SetVariables", h_set_variables, WF_ROUTE_ACTOR, NULL},
    {"ModifyInstance", h_modify_instance, WF_ROUTE_ACTOR, NULL},
    {"MigrateInstance", h_migrate_instance, WF_ROUTE_ACTOR, NULL},
    {"RetryInstance", h_retry_instance, WF_ROUTE_ACTOR, NULL},
    {"SuspendInstance", h_suspend_instance, WF_ROUTE_ACTOR, NULL},
    {"ResumeInstance", h_resume_instance, WF_ROUTE_ACTOR, NULL},
    {"ListWorkItems", h_list_work_items, 0, NULL},
    {"ListIncidents", h_list_incidents, 0, NULL},
    /* Batch operations */
    {"StartBatchOperation", h_start_batch_operation, WF_ROUTE_ACTOR, NULL},
    {"GetBatchOperation", h_get_batch_operation, 0, NULL},
    {"CancelBatchOperation", h_cancel_batch_operation, WF_ROUTE_ACTOR, NULL},
    {"ListBatchOperations", h_list_batch_operations, 0, NULL},
    /* Schedules */
    {"CreateSchedule", h_create_schedule, WF_ROUTE_ACTOR, NULL},
    {"GetSchedule", h_get_schedule, 0, NULL},
    {"ListSchedules", h_list_schedules, 0, NULL},
    {"UpdateSchedule", h_update_schedule, WF_ROUTE_ACTOR, NULL},
    {"DeleteSchedule", h_delete_schedule, WF_ROUTE_ACTOR, NULL},
    {"PauseSchedule", h_pause_schedule, WF_ROUTE_ACTOR, NULL},
    {"UnpauseSchedule", h_unpause_schedule, WF_ROUTE_ACTOR, NULL},
    {"TriggerSchedule", h_trigger_schedule, WF_ROUTE_ACTOR, NULL},
    {"ListScheduleRuns", h_list_schedule_runs, 0, NULL},
    {"BackfillSchedule", h_backfill_schedule, WF_ROUTE_ACTOR, NULL},
    /* Resources */
    {"DeclareResource", h_declare_resource, WF_ROUTE_ACTOR, NULL},
    {"GetResource", h_get_resource, 0, NULL},
    {"ListResources", h_list_resources, 0, NULL},
    {"UpdateResource", h_update_resource, WF_ROUTE_ACTOR, NULL},
    {"DeleteResource", h_delete_resource, WF_ROUTE_ACTOR, NULL},
    /* Ad-hoc referral */
    {"AssignTo", h_assign_to, WF_ROUTE_ACTOR, NULL},
    {"GetCompletion", h_get_completion, 0, NULL},
    {"CompleteAndEnd", h_complete_and_end, WF_ROUTE_ACTOR, NULL},
    /* Tasks */
    {"ListTasks", h_list_tasks, 0, NULL},
    {"GetTask", h_get_task, 0, NULL},
    {"ClaimTask", h_claim_task, WF_ROUTE_ACTOR, NULL},
    {"ReleaseTask", h_release_task, WF_ROUTE_ACTOR, NULL},
    {"CompleteTask", h_complete_task, WF_ROUTE_ACTOR, NULL},
    {"ReassignTask", h_reassign_task, WF_ROUTE_ACTOR, NULL},
    {"DelegateTask", h_delegate_task, WF_ROUTE_ACTOR, NULL},
    {"UpdateTask", h_update_task, WF_ROUTE_ACTOR, NULL},
    /* Jobs */
    {"ActivateJobs", NULL, 0, &h_activate_jobs},
    {"CompleteJob", h_complete_job, 0, NULL},
    {"FailJob", h_fail_job, 0, NULL},
    {"ExtendJobLease", h_extend_job_lease, 0, NULL},
    {"UpdateJob", h_update_job, 0, NULL},
    {"StreamActivatedJobs", NULL, WF_ROUTE_STREAM, &h_stream_activated_jobs},
    {"CompleteJobs", h_complete_jobs, 0, NULL},
    /* Signals */
    {"SendSignal", h_send_signal, 0, &h_await_parked},
    {"ListSignals", h_list_signals, 0, NULL},
    /* Events */
    {"WatchEvents", NULL, WF_ROUTE_STREAM, &h_watch_events},
    /* Scheduler */
    {"RunSchedulerPass", h_run_scheduler_pass, 0, NULL},
    {"GetDefinitionStatistics", h_get_definition_statistics, 0, NULL},
    {NULL, NULL, 0, NULL},
};
