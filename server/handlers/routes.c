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
    {"DeployDefinition", h_not_built, WF_ROUTE_ACTOR},
    {"GetDefinition", h_not_built, 0},
    {"ListDefinitions", h_not_built, 0},
    /* Instances */
    {"StartInstance", h_not_built, WF_ROUTE_ACTOR},
    {"GetInstance", h_not_built, 0},
    {"ListInstances", h_not_built, 0},
    {"CancelInstance", h_not_built, WF_ROUTE_ACTOR},
    {"SetVariables", h_not_built, WF_ROUTE_ACTOR},
    {"RetryInstance", h_not_built, WF_ROUTE_ACTOR},
    /* Ad-hoc referral */
    {"AssignTo", h_not_built, WF_ROUTE_ACTOR},
    {"GetCompletion", h_not_built, 0},
    {"CompleteAndEnd", h_not_built, WF_ROUTE_ACTOR},
    /* Tasks */
    {"ListTasks", h_not_built, 0},
    {"GetTask", h_not_built, 0},
    {"ClaimTask", h_not_built, WF_ROUTE_ACTOR},
    {"ReleaseTask", h_not_built, WF_ROUTE_ACTOR},
    {"CompleteTask", h_not_built, WF_ROUTE_ACTOR},
    /* Jobs */
    {"ActivateJobs", h_not_built, 0},
    {"CompleteJob", h_not_built, 0},
    {"FailJob", h_not_built, 0},
    {"ExtendJobLease", h_not_built, 0},
    /* Signals */
    {"SendSignal", h_not_built, 0},
    {"ListSignals", h_not_built, 0},
    /* Events */
    {"WatchEvents", h_not_built, WF_ROUTE_STREAM},
    {NULL, NULL, 0},
};
