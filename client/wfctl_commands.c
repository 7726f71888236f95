/*
 * wfctl_commands: the command table.
 *
 * Each command maps to one RPC. Its arguments are declared in a table (which
 * request field each flag or positional fills, and how the text is read);
 * the generic parser builds the request as JSON from them, wfctl_json.c turns
 * that into the protobuf-c request, and the generic runner makes the call
 * and prints the response (human-readable by the command's printer, or as
 * JSON). List commands print one row (or JSON line) per item and can follow
 * next_page_token. Only the job worker (wfctl_jobs.c) and the event stream
 * have runners of their own.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "grpc/health/v1/health.pb-c.h"
#include "workflow/v1/workflow.pb-c.h"
#include "wfctl.h"

#define POS(field, meta, help)                                                                     \
    {                                                                                              \
        ARG_STR, NULL, field, meta, help, NULL, 0                                                  \
    }
#define OPT(kind, name, field, meta, help)                                                         \
    {                                                                                              \
        kind, name, field, meta, help, NULL, 0                                                     \
    }
#define END                                                                                        \
    {                                                                                              \
        ARG_END, NULL, NULL, NULL, NULL, NULL, 0                                                   \
    }
#define REQUEST_ID                                                                                 \
    OPT(ARG_STR, "request-id", "request_id", "ID",                                                 \
        "idempotency key: a retry with the same id is applied once")
#define VARS(help) OPT(ARG_JSON, "vars", "variables_json", "JSON", help)
#define PAGING                                                                                     \
    OPT(ARG_INT, "page-size", "page_size", "N", "items per page (default 50, at most 500)"),       \
        OPT(ARG_STR, "page-token", "page_token", "TOKEN", "continue with this next_page_token"),   \
        OPT(ARG_LOCAL, "all", "all", NULL, "fetch every page (follows next_page_token)")
#define AGGREGATE(help) OPT(ARG_AGG, "aggregate", "aggregate", "TYPE:ID", help)
#define DESC(x) &workflow__v1__##x##__descriptor

static int run_watch(const struct command *c, struct wfctl_args *a);
static int run_show(const struct command *c, struct wfctl_args *a);
static int run_definition(const struct command *c, struct wfctl_args *a);
static int run_jobs(const struct command *c, struct wfctl_args *a);
static int run_batch(const struct command *c, struct wfctl_args *a);
static int prepare_assign(struct wfctl_args *a);
static int prepare_deploy(struct wfctl_args *a);
static int prepare_batch_start(struct wfctl_args *a);

static const char JSON_ARG_NOTE[] =
    "JSON arguments are JSON objects; @FILE reads one from a file and @- from stdin.\n";

/* The spec and policy flags of schedule create and update. */
#define SPEC_ARGS                                                                                  \
    OPT(ARG_STR, "cron", "spec.cron", "EXPR",                                                      \
        "cron expression: 5 fields or @hourly, @daily, @weekly, @monthly, @yearly"),               \
        OPT(ARG_STR, "interval", "spec.interval", "TEXT",                                          \
            "instead of --cron: 15m, or every 1h offset 2m"),                                      \
        OPT(ARG_STR, "tz", "spec.time_zone", "ZONE",                                               \
            "IANA time zone of --cron and --rrule (default UTC)"),                                 \
        OPT(ARG_EACH, "rrule", "spec.rrules", "RULE",                                              \
            "an iCalendar RRULE such as FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9 (repeat for several)"),   \
        OPT(ARG_STR, "rrule-start", "spec.rrule_start", "LOCAL",                                   \
            "DTSTART of the rules, YYYY-MM-DDTHH:MM:SS in --tz (default 1970-01-01T00:00:00)"),    \
        OPT(ARG_STR, "start-at", "spec.start_at", "TIME", "no fire time before (RFC 3339)"),       \
        OPT(ARG_STR, "end-at", "spec.end_at", "TIME", "no fire time after (RFC 3339)"),            \
        OPT(ARG_DURATION, "jitter", "spec.jitter", "DURATION",                                     \
            "start each fire up to this much late"),                                               \
        OPT(ARG_LIST, "exclude", "spec.exclude_dates", "DATES",                                    \
            "local dates YYYY-MM-DD on which nothing fires (comma-separated)"),                    \
        OPT(ARG_STR, "overlap", "policy.overlap", "POLICY",                                        \
            "skip (default), buffer-one, allow-all or cancel-other, while the last instance "      \
            "runs"),                                                                               \
        OPT(ARG_DURATION, "catchup", "policy.catchup_window", "DURATION",                          \
            "after an outage, fire times this old still run (default 1m)"),                        \
        OPT(ARG_INT, "pause-after", "policy.pause_after_failures", "N",                            \
            "pause after N failed starts in a row"),                                               \
        VARS("variables of each instance (JSON object)"),                                          \
        AGGREGATE("business object each instance is bound to"),                                    \
        OPT(ARG_INT, "version", "version", "N", "definition version (default: the latest)"),       \
        OPT(ARG_FLAG, "paused", "paused", NULL, "create it paused"),                               \
        OPT(ARG_STR, "note", "note", "TEXT", "free text"), REQUEST_ID, END

/* The settings flags of resource declare and update. */
#define RESOURCE_ARGS                                                                              \
    POS("name", "NAME", "resource name (letters, digits, '.', '_', '-')"),                         \
        OPT(ARG_INT, "capacity", "capacity", "N", "units held at once at most (0: none)"),         \
        OPT(ARG_FLAG, "per-key", "per_key", NULL, "the limits apply per value of a key"),          \
        OPT(ARG_INT, "rate", "rate.limit", "N", "acquisitions per --period at most"),              \
        OPT(ARG_DURATION, "period", "rate.period", "DURATION", "the period of --rate"),            \
        OPT(ARG_STR, "strategy", "strategy", "STRATEGY",                                           \
            "queue (default) or cancel-newest, when the resource is full"),                        \
        REQUEST_ID, END

static const struct command commands[] = {
    {.name = "health",
     .summary = "check the server's health (SERVING / NOT_SERVING; exit 1 unless SERVING)",
     .method = "/grpc.health.v1.Health/Check",
     .req = &grpc__health__v1__health_check_request__descriptor,
     .resp = &grpc__health__v1__health_check_response__descriptor,
     .args =
         (const struct arg[]){{ARG_STR, NULL, "service", "SERVICE",
                               "service to check (default: the whole server)", NULL, ARGF_OPTIONAL},
                              END},
     .print = print_health,
     .status = status_health},

    /* ---- definitions ---- */
    {.name = "deploy",
     .summary = "deploy (or validate) a definition from a JSON file",
     .method = "DeployDefinition",
     .req = DESC(deploy_definition_request),
     .resp = DESC(deploy_definition_response),
     .args = (const struct arg[]){{ARG_FILE, NULL, "definition", "FILE",
                                   "the Definition as JSON (- reads stdin)", NULL, 0},
                                  OPT(ARG_FLAG, "validate-only", "validate_only", NULL,
                                      "validate only: store nothing, list errors and warnings"),
                                  REQUEST_ID,
                                  END},
     .print = print_deploy,
     .status = status_deploy,
     .prepare = prepare_deploy,
     .details =
         "FILE holds a Definition with the proto's field names, e.g.\n"
         "  {\"key\":\"order\",\"kind\":\"NET\",\n"
         "   \"places\":[{\"id\":\"start\",\"kind\":\"START\"},\n"
         "             {\"id\":\"end\",\"kind\":\"END\"}],\n"
         "   \"transitions\":[{\"id\":\"approve\",\"trigger\":\"USER\",\n"
         "                   \"assignee\":{\"kind\":\"GROUP\",\"ids\":[\"finance\"]}}],\n"
         "   \"arcs\":[{\"source\":\"start\",\"target\":\"approve\"},"
         "{\"source\":\"approve\",\"target\":\"end\"}]}\n"
         "Enum values may leave out their prefix (NET, START, USER); durations are \"30s\",\n"
         "\"5m\"; times are RFC 3339. Prints the deployed version and any warnings; with\n"
         "--validate-only prints every finding and exits 1 when there are errors.\n"
         "See client/README.md for the whole format.\n"},
    {.name = "definitions",
     .summary = "list definitions (the latest version of each key, or every version of one)",
     .method = "ListDefinitions",
     .req = DESC(list_definitions_request),
     .resp = DESC(list_definitions_response),
     .args = (const struct arg[]){OPT(ARG_STR, "key", "key", "KEY",
                                      "every version of this key, newest first"),
                                  PAGING, END},
     .items = "definitions",
     .row = row_definition},
    {.name = "definition",
     .summary = "show a definition: places, transitions, arcs",
     .method = "GetDefinition",
     .req = DESC(get_definition_request),
     .resp = DESC(get_definition_response),
     .args =
         (const struct arg[]){
             POS("key", "KEY", "definition key"),
             OPT(ARG_INT, "version", "version", "N", "version (default: the latest)"),
             OPT(ARG_LOCAL, "svg", "svg", NULL, "write the diagram as SVG (GetDiagram)"),
             OPT(ARG_LOCAL, "dot", "dot", NULL, "write the diagram as Graphviz DOT (GetDiagram)"),
             END},
     .print = print_definition,
     .run = run_definition,
     .details = "--svg and --dot write the diagram of the version on stdout instead: places\n"
                "as circles, transitions as boxes with their trigger, arcs with weight and\n"
                "guard, cancel sets dashed; each element's SVG id is its id.\n"},

    /* ---- instances ---- */
    {.name = "start",
     .summary = "start an instance of a definition; prints its id",
     .method = "StartInstance",
     .req = DESC(start_instance_request),
     .resp = DESC(start_instance_response),
     .args = (const struct arg[]){POS("definition_key", "KEY", "definition key"),
                                  VARS("initial variables (JSON object)"),
                                  AGGREGATE("business object to bind (for signals)"),
                                  OPT(ARG_INT, "version", "version", "N",
                                      "definition version (default: the latest active)"),
                                  OPT(ARG_FLAG, "await", "await_result.until.ended", NULL,
                                      "wait until the instance ended (or failed on an incident)"),
                                  OPT(ARG_DURATION, "await-wait", "await_result.timeout", "SECONDS",
                                      "with --await: wait at most this long (default and at "
                                      "most 60 s)"),
                                  REQUEST_ID, END},
     .print = print_start,
     .details = "An unknown KEY creates an AD_HOC definition of that key (then use assign),\n"
                "unless the server runs with WF_AUTO_CREATE_DEFINITIONS=false.\n"
                "Needs --actor. Prints the instance id (--json: the whole response).\n"
                "--await (StartInstance's await_result) answers once the instance ended: the id,\n"
                "whether the wait timed out, then the instance as show prints it (--json: the\n"
                "response with its view). The global --timeout bounds the wait too: give one\n"
                "above --await-wait.\n"},
    {.name = "show",
     .summary = "explain an instance: status, variables, tasks, jobs, timers, signals, joins",
     .method = "GetInstance",
     .req = DESC(get_instance_request),
     .resp = DESC(get_instance_response),
     .args =
         (const struct arg[]){POS("instance_id", "ID", "instance id"),
                              OPT(ARG_LOCAL, "history", "history", NULL,
                                  "also list every work item, open and ended (ListWorkItems)"),
                              OPT(ARG_LOCAL, "svg", "svg", NULL,
                                  "write the diagram of its definition version with its "
                                  "state as SVG"),
                              OPT(ARG_LOCAL, "dot", "dot", NULL, "the same as Graphviz DOT"), END},
     .print = print_show,
     .run = run_show,
     .details =
         "--history adds the work items of a net instance in enabled order: transition,\n"
         "trigger, state, when enabled and ended, deadline, assignee / job type / signal,\n"
         "and who finished it (with --json: one more JSON line per work item).\n"
         "--svg and --dot write the diagram of the instance on stdout instead (GetDiagram):\n"
         "token counts on places, enabled work items highlighted, an incident in red,\n"
         "the current step of a STEPS definition.\n"},
    {.name = "await",
     .summary = "wait until an instance ends, reaches a step or marks a place; show it",
     .method = "AwaitInstance",
     .req = DESC(await_instance_request),
     .resp = DESC(await_instance_response),
     .args =
         (const struct arg[]){
             POS("instance_id", "ID", "instance id"),
             OPT(ARG_FLAG, "ended", "until.ended", NULL,
                 "until the instance ended (or failed on an incident)"),
             OPT(ARG_STR, "step", "until.step_enabled", "STEP",
                 "until a step (or a net's transition) has a work item enabled"),
             OPT(ARG_STR, "place", "until.place_marked", "PLACE", "until a place holds a token"),
             OPT(ARG_DURATION, "wait", "timeout", "SECONDS",
                 "wait at most this long (default and at most 60 s; 0: check "
                 "once)"),
             END},
     .print = print_await,
     .details = "Give one of --ended, --step or --place. Prints whether the wait timed out,\n"
                "then the instance as show prints it at that moment (a wait that runs out\n"
                "is not an error). The call's deadline (the global --timeout, 10 s by\n"
                "default) bounds the wait too: give one above --wait.\n"},
    {.name = "processes",
     .summary = "list root instances, oldest first",
     .method = "ListInstances",
     .req = DESC(list_instances_request),
     .resp = DESC(list_instances_response),
     .args =
         (const struct arg[]){
             OPT(ARG_STR, "started-by", "started_by", "USER",
                 "starter (default: the actor; '*' = anyone)"),
             OPT(ARG_STR, "state", "state", "STATE", "not-started, open or closed"),
             OPT(ARG_STR, "status", "status", "STATUS",
                 "running, completed, cancelled, failed, compensating, "
                 "compensated, suspended"),
             OPT(ARG_STR, "key", "definition_key", "KEY", "instances of this definition"),
             OPT(ARG_AGG, "aggregate", "aggregate", "TYPE[:ID]",
                 "instances bound to this business object"),
             OPT(ARG_STR, "created-after", "created_after", "TIME",
                 "created at or after this RFC 3339 time"),
             OPT(ARG_STR, "created-before", "created_before", "TIME", "created before this time"),
             OPT(ARG_STR, "ended-after", "ended_after", "TIME", "ended at or after this time"),
             OPT(ARG_STR, "ended-before", "ended_before", "TIME", "ended before this time"),
             OPT(ARG_VAR, "var", "variables", "PATH=VALUE",
                 "the variable at PATH equals VALUE (repeat: all must hold)"),
             OPT(ARG_STR, "schedule", "schedule_id", "ID", "instances this schedule started"),
             PAGING, END},
     .items = "instances",
     .row = row_instance,
     .details = "--var customer.country=DE: PATH is a dotted path of object keys, VALUE a JSON\n"
                "scalar (42, true, null, \"42\") or else taken as a string; at most 8.\n"
                "Times are RFC 3339, e.g. 2026-01-31T00:00:00Z.\n"},
    {.name = "incidents",
     .summary = "list open incidents: instances stopped FAILED, longest open first",
     .method = "ListIncidents",
     .req = DESC(list_incidents_request),
     .resp = DESC(list_incidents_response),
     .args = (const struct arg[]){OPT(ARG_STR, "definition", "definition_key", "KEY",
                                      "incidents of instances of this definition"),
                                  OPT(ARG_STR, "code", "code", "CODE",
                                      "JOB_FAILED, NO_ARC_MATCHED, COMPENSATION_FAILED, ..."),
                                  PAGING, END},
     .items = "incidents",
     .row = row_incident,
     .details = "Each row: the instance, the code, the definition, the transition to blame,\n"
                "since when, the attempts made and the message. `wfctl retry ID` resolves one,\n"
                "`wfctl cancel ID` ends it.\n"},
    {.name = "cancel",
     .summary = "cancel an instance and its descendants",
     .method = "CancelInstance",
     .req = DESC(cancel_instance_request),
     .resp = DESC(cancel_instance_response),
     .args = (const struct arg[]){POS("instance_id", "ID", "instance id"),
                                  OPT(ARG_STR, "reason", "reason", "TEXT", "why (recorded)"),
                                  OPT(ARG_FLAG, "compensate", "compensate", NULL,
                                      "run the compensation jobs of completed steps"),
                                  REQUEST_ID, END},
     .print = print_instance_resp},
    {.name = "set-vars",
     .summary = "merge variables into an instance (top-level keys)",
     .method = "SetVariables",
     .req = DESC(set_variables_request),
     .resp = DESC(set_variables_response),
     .args = (const struct arg[]){POS("instance_id", "ID", "instance id"),
                                  {ARG_JSON, NULL, "variables_json", "JSON",
                                   "variables to merge (JSON object, @FILE, @-)", NULL, 0},
                                  REQUEST_ID,
                                  END},
     .print = print_instance_resp},
    {.name = "modify",
     .summary = "change the marking of a net instance: add, remove or move tokens",
     .method = "ModifyInstance",
     .req = DESC(modify_instance_request),
     .resp = DESC(modify_instance_response),
     .args =
         (const struct arg[]){
             POS("instance_id", "ID", "instance id"),
             {ARG_TOKENOP, "add", "operations", "PLACE[:N]", "put N (default 1) tokens in PLACE",
              "ADD", 0},
             {ARG_TOKENOP, "remove", "operations", "PLACE[:N]",
              "take N (default 1) tokens out of PLACE, oldest first", "REMOVE", 0},
             {ARG_TOKENOP, "move", "operations", "FROM:TO[:N]",
              "move N (default 1) tokens; FROM->TO[:N] when a place id holds ':'", "MOVE", 0},
             VARS("variables to merge first (JSON object)"),
             OPT(ARG_FLAG, "allow-empty", "allow_empty", NULL,
                 "a change that leaves nothing cancels the instance"),
             OPT(ARG_STR, "reason", "reason", "TEXT", "why (recorded in INSTANCE_MODIFIED)"),
             REQUEST_ID,
             END},
     .print = print_modify,
     .details = "Operations apply in the order given; each of --add, --remove and --move may be\n"
                "repeated. The net then settles as after a firing: work items that lost a token\n"
                "are withdrawn, newly enabled transitions get their tasks, jobs, timers and\n"
                "signal waits, and a token in the END place completes the instance.\n"},
    {.name = "migrate",
     .summary = "move a root net instance to another version of its definition",
     .method = "MigrateInstance",
     .req = DESC(migrate_instance_request),
     .resp = DESC(migrate_instance_response),
     .args =
         (const struct arg[]){
             POS("instance_id", "ID", "root instance id"),
             {ARG_INT, NULL, "target_version", "VERSION", "the version to move to", NULL, 0},
             OPT(ARG_PLACEMAP, "map", "place_mapping", "FROM:TO",
                 "tokens of place FROM go to place TO; FROM->TO when a place id holds ':'"),
             OPT(ARG_FLAG, "dry-run", "dry_run", NULL,
                 "print the plan and problems, change nothing"),
             REQUEST_ID,
             END},
     .print = print_migrate,
     .status = status_migrate,
     .details = "A place not mapped goes to the place of the same id. Work items whose transition\n"
                "exists in the target with the same trigger keep their task (claim, assignee),\n"
                "job, timer or signal wait; the net then settles as after a firing. Every\n"
                "problem is listed at once: with --dry-run in the answer (exit 1 when there is\n"
                "any), else as the refusal MIGRATION_INVALID. --map may be repeated.\n"},
    {.name = "retry",
     .summary = "resolve the incident of a FAILED instance (re-arm the failed job)",
     .method = "RetryInstance",
     .req = DESC(retry_instance_request),
     .resp = DESC(retry_instance_response),
     .args = (const struct arg[]){POS("instance_id", "ID", "instance id"), REQUEST_ID, END},
     .print = print_instance_resp},
    {.name = "suspend",
     .summary = "suspend a root instance's tree (no job, timer or signal moves it until resume)",
     .method = "SuspendInstance",
     .req = DESC(suspend_instance_request),
     .resp = DESC(suspend_instance_response),
     .args = (const struct arg[]){POS("instance_id", "ID", "root instance id"),
                                  OPT(ARG_STR, "reason", "reason", "TEXT", "why (recorded)"),
                                  REQUEST_ID, END},
     .print = print_instance_resp},
    {.name = "resume",
     .summary = "resume a suspended root instance's tree",
     .method = "ResumeInstance",
     .req = DESC(resume_instance_request),
     .resp = DESC(resume_instance_response),
     .args = (const struct arg[]){POS("instance_id", "ID", "root instance id"),
                                  OPT(ARG_STR, "reason", "reason", "TEXT", "why (recorded)"),
                                  REQUEST_ID, END},
     .print = print_instance_resp},

    /* ---- batch operations ---- */
    {.name = "batch start",
     .summary = "apply cancel, retry, suspend, resume or migrate to every matching root instance",
     .method = "StartBatchOperation",
     .req = DESC(start_batch_operation_request),
     .resp = DESC(start_batch_operation_response),
     .args =
         (const struct arg[]){
             POS("action", "ACTION", "cancel, retry, suspend, resume or migrate"),
             OPT(ARG_STR, "started-by", "filter.started_by", "USER",
                 "starter (default: the actor; '*' = anyone)"),
             OPT(ARG_STR, "state", "filter.state", "STATE", "not-started, open or closed"),
             OPT(ARG_STR, "status", "filter.status", "STATUS",
                 "running, failed, suspended, ... (as processes --status)"),
             OPT(ARG_STR, "key", "filter.definition_key", "KEY", "instances of this definition"),
             OPT(ARG_AGG, "aggregate", "filter.aggregate", "TYPE[:ID]",
                 "instances bound to this business object"),
             OPT(ARG_STR, "created-after", "filter.created_after", "TIME",
                 "created at or after this RFC 3339 time"),
             OPT(ARG_STR, "created-before", "filter.created_before", "TIME",
                 "created before this time"),
             OPT(ARG_STR, "ended-after", "filter.ended_after", "TIME",
                 "ended at or after this time"),
             OPT(ARG_STR, "ended-before", "filter.ended_before", "TIME", "ended before this time"),
             OPT(ARG_VAR, "var", "filter.variables", "PATH=VALUE",
                 "the variable at PATH equals VALUE (repeat: all must hold)"),
             OPT(ARG_STR, "schedule", "filter.schedule_id", "ID",
                 "instances this schedule started"),
             OPT(ARG_STR, "reason", "reason", "TEXT", "why (passed to each action)"),
             OPT(ARG_INT, "version", "target_version", "N",
                 "migrate: the version to move to (needs --key)"),
             OPT(ARG_PLACEMAP, "map", "place_mapping", "FROM:TO",
                 "migrate: tokens of place FROM go to place TO (repeat)"),
             OPT(ARG_LOCAL, "all", "all", NULL,
                 "without --key: act on instances of every definition (required then)"),
             OPT(ARG_FLAG, "dry-run", "dry_run", NULL,
                 "count the instances it would act on; start nothing"),
             OPT(ARG_LOCAL, "follow", "follow", NULL,
                 "wait until it ends, printing a progress line"),
             REQUEST_ID,
             END},
     .print = print_batch_resp,
     .prepare = prepare_batch_start,
     .run = run_batch,
     .details = "The filter flags are those of `wfctl processes`; the instances matched are\n"
                "those created up to the start. Needs --actor (each action runs as the actor).\n"
                "Without --key it acts on instances of every definition of the tenant, so it\n"
                "needs --all then (a usage error otherwise). --dry-run prints how many\n"
                "instances match now, and starts nothing.\n"
                "migrate moves each instance as `wfctl migrate` would, to --version of the\n"
                "definition --key names, with the --map mapping.\n"
                "With --follow, a progress line goes to stderr every second until the batch\n"
                "is COMPLETED or CANCELLED; the exit status is 1 when an action was refused.\n"},
    {.name = "batch get",
     .summary = "show a batch operation's progress and first errors",
     .method = "GetBatchOperation",
     .req = DESC(get_batch_operation_request),
     .resp = DESC(get_batch_operation_response),
     .args = (const struct arg[]){POS("id", "ID", "batch operation id"),
                                  OPT(ARG_LOCAL, "follow", "follow", NULL,
                                      "wait until it ends, printing a progress line"),
                                  END},
     .print = print_batch_resp,
     .run = run_batch},
    {.name = "batch cancel",
     .summary = "stop a running batch operation (what it applied stays)",
     .method = "CancelBatchOperation",
     .req = DESC(cancel_batch_operation_request),
     .resp = DESC(cancel_batch_operation_response),
     .args = (const struct arg[]){POS("id", "ID", "batch operation id"), REQUEST_ID, END},
     .print = print_batch_resp},
    {.name = "batch list",
     .summary = "list batch operations, newest first",
     .method = "ListBatchOperations",
     .req = DESC(list_batch_operations_request),
     .resp = DESC(list_batch_operations_response),
     .args = (const struct arg[]){PAGING, END},
     .items = "batch_operations",
     .row = row_batch},

    /* ---- schedules ---- */
    {.name = "schedule create",
     .summary = "create a schedule that starts instances of a definition on a calendar",
     .method = "CreateSchedule",
     .req = DESC(create_schedule_request),
     .resp = DESC(create_schedule_response),
     .args =
         (const struct arg[]){
             POS("id", "ID", "schedule id (yours, unique in the tenant)"),
             OPT(ARG_STR, "key", "definition_key", "KEY", "the definition to start"), SPEC_ARGS},
     .print = print_schedule_resp,
     .details = "Exactly one of --cron and --interval. Prints the schedule and its next\n"
                "fire times, in its zone and in UTC.\n"},
    {.name = "schedule update",
     .summary = "replace what schedule create set (the next fire time is computed again)",
     .method = "UpdateSchedule",
     .req = DESC(update_schedule_request),
     .resp = DESC(update_schedule_response),
     .args =
         (const struct arg[]){
             POS("id", "ID", "schedule id"),
             OPT(ARG_STR, "key", "definition_key", "KEY", "the definition to start"), SPEC_ARGS},
     .print = print_schedule_resp},
    {.name = "schedule get",
     .summary = "show a schedule and its next 10 fire times",
     .method = "GetSchedule",
     .req = DESC(get_schedule_request),
     .resp = DESC(get_schedule_response),
     .args = (const struct arg[]){POS("id", "ID", "schedule id"), END},
     .print = print_schedule_resp},
    {.name = "schedule list",
     .summary = "list schedules, newest first",
     .method = "ListSchedules",
     .req = DESC(list_schedules_request),
     .resp = DESC(list_schedules_response),
     .args = (const struct arg[]){PAGING, END},
     .items = "schedules",
     .row = row_schedule},
    {.name = "schedule delete",
     .summary = "delete a schedule and its runs (the instances it started stay)",
     .method = "DeleteSchedule",
     .req = DESC(delete_schedule_request),
     .resp = DESC(delete_schedule_response),
     .args = (const struct arg[]){POS("id", "ID", "schedule id"), REQUEST_ID, END},
     .print = print_done},
    {.name = "schedule pause",
     .summary = "stop a schedule firing",
     .method = "PauseSchedule",
     .req = DESC(pause_schedule_request),
     .resp = DESC(pause_schedule_response),
     .args = (const struct arg[]){POS("id", "ID", "schedule id"),
                                  OPT(ARG_STR, "reason", "reason", "TEXT", "why (shown)"),
                                  REQUEST_ID, END},
     .print = print_schedule_resp},
    {.name = "schedule unpause",
     .summary = "fire again from the next fire time after now",
     .method = "UnpauseSchedule",
     .req = DESC(unpause_schedule_request),
     .resp = DESC(unpause_schedule_response),
     .args = (const struct arg[]){POS("id", "ID", "schedule id"),
                                  OPT(ARG_STR, "reason", "reason", "TEXT", "why"), REQUEST_ID, END},
     .print = print_schedule_resp},
    {.name = "schedule trigger",
     .summary = "start one instance now, outside the calendar",
     .method = "TriggerSchedule",
     .req = DESC(trigger_schedule_request),
     .resp = DESC(trigger_schedule_response),
     .args = (const struct arg[]){POS("id", "ID", "schedule id"), REQUEST_ID, END},
     .print = print_schedule_run_resp},
    {.name = "schedule runs",
     .summary = "list a schedule's fire times and what became of each, newest first",
     .method = "ListScheduleRuns",
     .req = DESC(list_schedule_runs_request),
     .resp = DESC(list_schedule_runs_response),
     .args = (const struct arg[]){POS("schedule_id", "ID", "schedule id"), PAGING, END},
     .items = "runs",
     .row = row_schedule_run},
    {.name = "schedule backfill",
     .summary = "run the fire times of a past range that have no run yet, oldest first",
     .method = "BackfillSchedule",
     .req = DESC(backfill_schedule_request),
     .resp = DESC(backfill_schedule_response),
     .args = (const struct arg[]){POS("schedule_id", "ID", "schedule id"),
                                  OPT(ARG_STR, "from", "from_time", "TIME",
                                      "first instant of the range (RFC 3339, required)"),
                                  OPT(ARG_STR, "to", "to_time", "TIME",
                                      "end of the range, exclusive and not after now (required)"),
                                  OPT(ARG_STR, "overlap", "overlap", "POLICY",
                                      "skip, allow-all or cancel-other (default: the schedule's)"),
                                  REQUEST_ID, END},
     .print = print_schedule_backfill_resp,
     .details = "Each fire time runs at most once: those the calendar (or an earlier backfill)\n"
                "handled are left as they are and counted. Prints the runs recorded.\n"},

    /* ---- resources ---- */
    {.name = "resources",
     .summary = "list the tenant's resources, newest first",
     .method = "ListResources",
     .req = DESC(list_resources_request),
     .resp = DESC(list_resources_response),
     .args = (const struct arg[]){PAGING, END},
     .items = "resources",
     .row = row_resource},
    {.name = "resource declare",
     .summary = "declare a resource (create it, or replace its settings)",
     .method = "DeclareResource",
     .req = DESC(declare_resource_request),
     .resp = DESC(declare_resource_response),
     .args = (const struct arg[]){RESOURCE_ARGS},
     .print = print_resource_resp,
     .details = "At least --capacity or --rate with --period. Declaring the same settings\n"
                "again changes nothing.\n"},
    {.name = "resource update",
     .summary = "replace the settings of a resource that exists",
     .method = "UpdateResource",
     .req = DESC(update_resource_request),
     .resp = DESC(update_resource_response),
     .args = (const struct arg[]){RESOURCE_ARGS},
     .print = print_resource_resp},
    {.name = "resource get",
     .summary = "show a resource",
     .method = "GetResource",
     .req = DESC(get_resource_request),
     .resp = DESC(get_resource_response),
     .args = (const struct arg[]){POS("name", "NAME", "resource name"), END},
     .print = print_resource_resp},
    {.name = "resource delete",
     .summary = "delete a resource",
     .method = "DeleteResource",
     .req = DESC(delete_resource_request),
     .resp = DESC(delete_resource_response),
     .args = (const struct arg[]){POS("name", "NAME", "resource name"), REQUEST_ID, END},
     .print = print_done},

    /* ---- ad-hoc referrals ---- */
    {.name = "assign",
     .summary = "refer work: create a child instance with task(s) for a user, group or users",
     .method = "AssignTo",
     .req = DESC(assign_to_request),
     .resp = DESC(assign_to_response),
     .args =
         (const struct arg[]){
             OPT(ARG_STR, "parent", "parent_instance_id", "ID", "parent instance (required)"),
             OPT(ARG_STR, "key", "definition_key", "KEY",
                 "AD_HOC definition of the referral (default: the parent's)"),
             OPT(ARG_STR, "title", "title", "TEXT", "task title (required)"),
             {ARG_ASSIGNEE, "user", "assignee", "USER", "one personal task", "USER", 0},
             {ARG_ASSIGNEE, "group", "assignee", "GROUP", "one group task (claimed by a member)",
              "GROUP", 0},
             {ARG_ASSIGNEE, "users", "assignee", "U1,U2", "one personal task per user", "USERS", 0},
             {ARG_ASSIGNEE, "ids-expression", "assignee", "JQ",
              "one personal task per id a jq expression gives", "USERS", ARGF_EXPR},
             VARS("variables of the referral (JSON object)"),
             OPT(ARG_JOIN, "join", "join", "MODE", "all (default), any or quorum:K"),
             {ARG_ASSIGNEE, "then-user", "on_all_completed.assignee", "USER",
              "when the join fires, refer on to this user", "USER", 0},
             {ARG_ASSIGNEE, "then-group", "on_all_completed.assignee", "GROUP",
              "... or to this group", "GROUP", 0},
             {ARG_ASSIGNEE, "then-users", "on_all_completed.assignee", "U1,U2",
              "... or to these users", "USERS", 0},
             OPT(ARG_STR, "then-title", "on_all_completed.title", "TEXT",
                 "title of the next referral (default: --title)"),
             OPT(ARG_INT, "priority", "priority.value", "N", "priority of the task(s), 0-100"),
             OPT(ARG_STR, "due", "due_at", "RFC3339", "due time of the task(s)"),
             OPT(ARG_STR, "follow-up", "follow_up_at", "RFC3339",
                 "follow-up time of the task(s), not after --due"),
             REQUEST_ID,
             END},
     .print = print_assign,
     .prepare = prepare_assign,
     .details = "Give one of --user, --group, --users, --ids-expression. Needs --actor. Prints\n"
                "the child instance id and the task ids. --ids-expression reads the parent's\n"
                "variables merged with --vars.\n"},
    {.name = "referral-status",
     .summary = "count the tasks of a referral by status",
     .method = "GetCompletion",
     .req = DESC(get_completion_request),
     .resp = DESC(get_completion_response),
     .args = (const struct arg[]){POS("instance_id", "INSTANCE_ID", "referral instance id"), END},
     .print = print_completion},

    /* ---- tasks ---- */
    {.name = "tasks",
     .summary = "list an inbox: a user's tasks (default: the actor's) or a group's",
     .method = "ListTasks",
     .req = DESC(list_tasks_request),
     .resp = DESC(list_tasks_response),
     .args =
         (const struct arg[]){
             OPT(ARG_STR, "user", "user", "USER", "whose inbox (default: the actor)"),
             OPT(ARG_STR, "group", "group", "GROUP", "a group's tasks"),
             OPT(ARG_LIST, "state", "states", "STATES",
                 "open,claimed,done,cancelled (default open,claimed)"),
             OPT(ARG_STR, "sort", "sort", "ORDER", "created (default), priority or due"),
             OPT(ARG_FLAG, "desc", "descending", NULL,
                 "descending: newest, highest priority or latest due first"),
             OPT(ARG_STR, "due-before", "due_before", "RFC3339",
                 "only tasks due strictly before this time"),
             OPT(ARG_STR, "due-after", "due_after", "RFC3339",
                 "only tasks due strictly after this time"),
             PAGING, END},
     .items = "tasks",
     .row = row_task,
     .details = "--sort due puts tasks without a due time last (first with --desc); a due\n"
                "window (--due-before, --due-after) leaves them out.\n"},
    {.name = "task",
     .summary = "show a task",
     .method = "GetTask",
     .req = DESC(get_task_request),
     .resp = DESC(get_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"), END},
     .print = print_task_resp},
    {.name = "claim",
     .summary = "claim a group task for the actor",
     .method = "ClaimTask",
     .req = DESC(claim_task_request),
     .resp = DESC(claim_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"), REQUEST_ID, END},
     .print = print_task_resp},
    {.name = "release",
     .summary = "release a claimed task back to its group",
     .method = "ReleaseTask",
     .req = DESC(release_task_request),
     .resp = DESC(release_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"), REQUEST_ID, END},
     .print = print_task_resp},
    {.name = "reassign",
     .summary = "give a task to another user or group (OPEN again, claim and delegation cleared)",
     .method = "ReassignTask",
     .req = DESC(reassign_task_request),
     .resp = DESC(reassign_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"),
                                  OPT(ARG_STR, "user", "user", "USER", "the new assignee"),
                                  OPT(ARG_STR, "group", "group", "GROUP", "... or the new group"),
                                  OPT(ARG_STR, "reason", "reason", "TEXT",
                                      "why (recorded in TASK_REASSIGNED)"),
                                  REQUEST_ID, END},
     .print = print_task_resp,
     .details = "Give one of --user and --group. Needs --actor: the task's holder, a member of\n"
                "its group, or whoever assigned it.\n"},
    {.name = "delegate",
     .summary = "hand a task to a user to work on; it returns to the owner when they complete it",
     .method = "DelegateTask",
     .req = DESC(delegate_task_request),
     .resp = DESC(delegate_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"),
                                  OPT(ARG_STR, "user", "user", "USER", "the delegate (required)"),
                                  REQUEST_ID, END},
     .print = print_task_resp,
     .details = "Needs --actor: the task's holder. The delegate's `complete` resolves the task\n"
                "(its variables are merged, nothing fires) and gives it back to the owner, who\n"
                "completes it.\n"},
    {.name = "task-update",
     .summary = "change a task's priority, due time or follow-up time",
     .method = "UpdateTask",
     .req = DESC(update_task_request),
     .resp = DESC(update_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"),
                                  OPT(ARG_INT, "priority", "priority.value", "N", "0-100"),
                                  OPT(ARG_STR, "due", "due_at", "RFC3339", "new due time"),
                                  OPT(ARG_STR, "follow-up", "follow_up_at", "RFC3339",
                                      "new follow-up time (not after the due time)"),
                                  OPT(ARG_FLAG, "clear-due", "clear_due_at", NULL,
                                      "remove the due time"),
                                  OPT(ARG_FLAG, "clear-follow-up", "clear_follow_up_at", NULL,
                                      "remove the follow-up time"),
                                  REQUEST_ID, END},
     .print = print_task_resp,
     .details = "Only what is given changes. Times are RFC 3339, e.g. 2030-05-01T12:00:00Z.\n"
                "Needs --actor: the task's holder, a member of its group, or whoever assigned\n"
                "it.\n"},
    {.name = "job-priority",
     .summary = "change the priority of a job that is not finished",
     .method = "UpdateJob",
     .req = DESC(update_job_request),
     .resp = DESC(update_job_response),
     .args = (const struct arg[]){POS("instance_id", "INSTANCE", "the job's instance id"),
                                  POS("job_id", "JOB", "job id (as `show` lists it)"),
                                  OPT(ARG_INT, "priority", "priority.value", "N",
                                      "0-100, higher first (required)"),
                                  REQUEST_ID, END},
     .print = print_job_resp,
     .details = "ActivateJobs takes the highest priority first, aged by the time a job waits\n"
                "(WF_JOB_PRIORITY_AGING_MS per point). A job that is activated keeps the new\n"
                "priority for when it becomes activatable again.\n"},
    {.name = "complete",
     .summary = "complete a task (prints completion counts and the next referral of a join)",
     .method = "CompleteTask",
     .req = DESC(complete_task_request),
     .resp = DESC(complete_task_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"),
                                  VARS("output variables (JSON object)"), REQUEST_ID, END},
     .print = print_complete},
    {.name = "complete-and-end",
     .summary = "complete a task and end its whole process",
     .method = "CompleteAndEnd",
     .req = DESC(complete_and_end_request),
     .resp = DESC(complete_and_end_response),
     .args = (const struct arg[]){POS("task_id", "ID", "task id"),
                                  VARS("output variables (JSON object)"), REQUEST_ID, END},
     .print = print_complete_and_end},

    /* ---- signals ---- */
    {.name = "signal",
     .summary = "send a signal to an instance or to the instances of an aggregate",
     .method = "SendSignal",
     .req = DESC(send_signal_request),
     .resp = DESC(send_signal_response),
     .args =
         (const struct arg[]){POS("name", "NAME", "signal name"),
                              OPT(ARG_STR, "instance", "instance_id", "ID", "target instance"),
                              AGGREGATE("target business object"),
                              OPT(ARG_JSON, "payload", "payload_json", "JSON",
                                  "data merged into the consuming instance (JSON object)"),
                              OPT(ARG_STR, "id", "signal_id", "SIGNAL_ID",
                                  "deduplication key (a repeat is DUPLICATE)"),
                              OPT(ARG_DURATION, "ttl", "buffer_ttl", "SECONDS",
                                  "buffer this long when nobody waits (default: drop)"),
                              OPT(ARG_STR, "start", "start.definition_key", "KEY",
                                  "correlate or start: start an instance of KEY if none runs"),
                              OPT(ARG_INT, "start-version", "start.version", "N",
                                  "version --start starts (default: the latest active)"),
                              OPT(ARG_JSON, "start-vars", "start.variables_json", "JSON",
                                  "initial variables of the instance --start starts"),
                              REQUEST_ID, END},
     .print = print_send_signal,
     .details = "Give --instance or --aggregate. Prints the outcome (CORRELATED, BUFFERED,\n"
                "DUPLICATE, DROPPED, STARTED), the instances it reached (or started) and\n"
                "when a buffered signal expires. --start (with --aggregate and --actor):\n"
                "when no instance of the aggregate waits for the signal and none is running,\n"
                "starts one of KEY bound to the aggregate; its first wait consumes the\n"
                "signal (STARTED).\n"},
    {.name = "signals",
     .summary = "list the signal delivery log of an instance or an aggregate",
     .method = "ListSignals",
     .req = DESC(list_signals_request),
     .resp = DESC(list_signals_response),
     .args = (const struct arg[]){OPT(ARG_STR, "instance", "instance_id", "ID", "instance"),
                                  AGGREGATE("business object"),
                                  OPT(ARG_STR, "name", "name", "NAME", "only this signal name"),
                                  PAGING, END},
     .items = "signals",
     .row = row_signal},

    /* ---- jobs and events ---- */
    {.name = "jobs",
     .summary = "run a job worker: take pushed jobs of TYPE and run COMMAND for each",
     .method = "StreamActivatedJobs (ActivateJobs with --once), CompleteJob, FailJob",
     .req = DESC(activate_jobs_request),
     .resp = DESC(activate_jobs_response),
     .args = (const struct arg[]){POS("job_type", "TYPE", "job type"),
                                  OPT(ARG_STR, "worker", "worker", "NAME",
                                      "worker name (default: wfctl-HOST-PID)"),
                                  OPT(ARG_INT, "max", "max_jobs", "N",
                                      "jobs held at once: the stream's credit (default: "
                                      "--concurrency)"),
                                  OPT(ARG_DURATION, "lease", "lease", "SECONDS",
                                      "lease per job (default: the transition's, 5m)"),
                                  OPT(ARG_DURATION, "wait", "wait", "SECONDS",
                                      "with --once: long-poll for jobs this long (default 30)"),
                                  OPT(ARG_LOCAL, "once", "once", NULL,
                                      "one ActivateJobs call (up to --max jobs), process it, exit"),
                                  OPT(ARG_LOCAL_INT, "concurrency", "concurrency", "N",
                                      "run up to N commands at once (default 1; --max follows)"),
                                  END},
     .run = run_jobs,
     .takes_rest = 1,
     .details =
         "For each job, COMMAND runs with the job's variables (a JSON object) on stdin and\n"
         "WF_JOB_KEY, WF_JOB_ID, WF_JOB_TYPE, WF_JOB_ATTEMPT, WF_JOB_MAX_ATTEMPTS,\n"
         "WF_INSTANCE_ID, WF_ROOT_INSTANCE_ID, WF_TRANSITION_ID, WF_IDEMPOTENCY_KEY and\n"
         "WF_JOB_COMPENSATION (0/1) in its environment. Exit 0 with a JSON object (or\n"
         "nothing) on stdout completes the job with those variables; exit 100 fails it\n"
         "for good (retryable=false: no retry, the instance stops FAILED with an incident);\n"
         "any other exit fails it (retryable) with the tail of its stderr as the error\n"
         "message. COMMAND's stderr is passed through. Prints one line per job. Jobs come\n"
         "from a StreamActivatedJobs stream holding at most --max jobs at once (default:\n"
         "--concurrency; reopened with backoff when it ends); up to --concurrency commands\n"
         "run at once. While a command runs, its lease is renewed (ExtendJobLease) every\n"
         "third of the lease; when the server answers JOB_LEASE_LOST the command is killed\n"
         "and the job is not reported (outcome lease_lost).\n"
         "SIGINT/SIGTERM: finish the running jobs (with --once: the batch) and exit 0; a\n"
         "second signal terminates the commands (their jobs are failed) and leaves\n"
         "unstarted jobs to their lease expiry.\n"},
    {.name = "watch",
     .summary = "print events, one line each (--follow: new ones as they come, like tail -f)",
     .method = "WatchEvents",
     .req = DESC(watch_events_request),
     .resp = DESC(watch_events_response),
     .args =
         (const struct arg[]){
             OPT(ARG_INT, "after", "after_sequence", "SEQ",
                 "events after this sequence (default: the oldest; with --follow, now)"),
             OPT(ARG_LOCAL, "from-start", "from_start", NULL,
                 "with --follow: print the history first (as --after 0)"),
             OPT(ARG_STR, "instance", "instance_id", "ID", "events of this instance tree"),
             OPT(ARG_STR, "key", "definition_key", "KEY", "events of this definition"),
             OPT(ARG_LIST, "type", "types", "T1,T2",
                 "only these event types (task_created, job_failed, ...)"),
             OPT(ARG_FLAG, "follow", "follow", NULL, "keep the stream open and print new events"),
             END},
     .run = run_watch,
     .details = "Each line: SEQUENCE TIME TYPE INSTANCE [actor=A] DATA. Without --follow it\n"
                "prints the history (after --after) and exits. With --follow it prints only\n"
                "the events that commit from now on, like tail -f (stderr names the sequence\n"
                "it follows after); --from-start or --after SEQ print the history first.\n"
                "wfctl resumes after the last sequence when the server ends or drops the\n"
                "stream.\n"},
    {.name = "tick",
     .summary = "run one scheduler pass now for this tenant (timers, leases, signals, retention)",
     .method = "RunSchedulerPass",
     .req = DESC(run_scheduler_pass_request),
     .resp = DESC(run_scheduler_pass_response),
     .args = (const struct arg[]){END},
     .print = print_tick,
     .details = "Fires the due timers of the tenant (--tenant), ends expired job leases\n"
                "(JOB_LEASE_EXPIRED), expires buffered signals past their TTL and removes rows\n"
                "past their retention, then prints how many of each. The server does the same\n"
                "on its own every few hundred milliseconds; tick is for scripts and tests.\n"},

    /* ---- the client itself ---- */
    {.name = "completion",
     .summary = "print a shell completion script (bash or zsh) for every command and flag",
     .args =
         (const struct arg[]){{ARG_STR, NULL, "shell", "SHELL", "bash or zsh", "bash,zsh", 0}, END},
     .run = wfctl_run_completion,
     .details = "bash: source <(wfctl completion bash), or save it as\n"
                "/etc/bash_completion.d/wfctl. zsh: save it as _wfctl in a directory of\n"
                "$fpath (it starts with #compdef wfctl), then run compinit.\n"
                "Completes commands, their flags, the values of enum flags (--state,\n"
                "--status, --type, ...) and the global flags.\n"},
    {.name = "man",
     .summary = "print the manual page (roff): wfctl man | man -l -",
     .args = (const struct arg[]){END},
     .run = wfctl_run_man,
     .details = "Every command with its arguments, options and details, the global flags,\n"
                "the environment and the exit status, from the same table as --help.\n"},
    {.name = NULL},
};

const struct command *const wfctl_commands = commands;

/* ---- help ----------------------------------------------------------------- */

/* The names in a column as wide as the longest, two spaces before the
 * summaries. */
void
wfctl_list_commands(FILE *f)
{
    int width = 0;
    for (const struct command *c = commands; c->name != NULL; c++)
        if ((int)strlen(c->name) > width)
            width = (int)strlen(c->name);
    for (const struct command *c = commands; c->name != NULL; c++)
        fprintf(f, "  %-*s  %s\n", width, c->name, c->summary);
}

static void
command_usage(const struct command *c, FILE *f)
{
    fprintf(f, "usage: wfctl [global flags] %s", c->name);
    int nopts = 0;
    for (const struct arg *g = c->args; g->kind != ARG_END; g++) {
        if (g->name != NULL)
            nopts++;
        else
            fprintf(f, (g->flags & ARGF_OPTIONAL) ? " [%s]" : " %s", g->meta);
    }
    fprintf(f, " [options]%s\n\n%s\n", c->takes_rest ? " -- COMMAND [ARGS...]" : "", c->summary);
    if (c->method != NULL)
        fprintf(f, "RPC: %s\n", c->method);
    int header = 0;
    for (const struct arg *g = c->args; g->kind != ARG_END; g++)
        if (g->name == NULL) {
            if (!header++)
                fprintf(f, "\narguments:\n");
            fprintf(f, "  %-24s %s\n", g->meta, g->help);
        }
    fprintf(f, "\noptions:\n");
    for (const struct arg *g = c->args; g->kind != ARG_END; g++) {
        if (g->name == NULL)
            continue;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s%s%s", g->name, g->meta != NULL ? " " : "",
                 g->meta != NULL ? g->meta : "");
        fprintf(f, "  %-24s %s\n", flag, g->help);
    }
    fprintf(f, "  %-24s %s\n", "--json",
            c->items != NULL ? "print each item as one JSON object per line"
                             : "print the response as one JSON object per line");
    fprintf(f, "  %-24s %s\n", "-h, --help", "show this help");
    int has_json = 0;
    for (const struct arg *g = c->args; g->kind != ARG_END; g++)
        has_json |= g->kind == ARG_JSON;
    if (c->details != NULL || has_json)
        fprintf(f, "\n%s%s", c->details != NULL ? c->details : "", has_json ? JSON_ARG_NOTE : "");
}

/* ---- argument parsing ----------------------------------------------------- */

/* Sets root.a.b.c = val, creating the intermediate objects. */
static void
set_path(json_t *root, const char *path, json_t *val)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = root;
    char *p = buf, *dot;
    while ((dot = strchr(p, '.')) != NULL) {
        *dot = '\0';
        json_t *next = json_object_get(o, p);
        if (!json_is_object(next)) {
            next = json_object();
            json_object_set_new(o, p, next);
        }
        o = next;
        p = dot + 1;
    }
    json_object_set_new(o, p, val);
}

static json_t *
get_path(json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = root;
    char *p = buf, *dot;
    while (o != NULL && (dot = strchr(p, '.')) != NULL) {
        *dot = '\0';
        o = json_object_get(o, p);
        p = dot + 1;
    }
    return o != NULL ? json_object_get(o, p) : NULL;
}

static json_t *
split_list(const char *v)
{
    json_t *arr = json_array();
    const char *p = v;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        if (n > 0)
            json_array_append_new(arr, json_stringn_nocheck(p, n));
        p += n;
        if (*p == ',')
            p++;
    }
    return arr;
}

/* Reads the whole of a file (or stdin for "-"); NULL on error. */
static char *
read_all(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *b = realloc(buf, cap);
            if (b == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    int err = ferror(f);
    if (f != stdin)
        fclose(f);
    if (buf != NULL)
        buf[len] = '\0';
    if (err) {
        free(buf);
        return NULL;
    }
    return buf;
}

static const char *
arg_label(const struct arg *g)
{
    static char buf[80];
    if (g->name != NULL)
        snprintf(buf, sizeof buf, "--%s", g->name);
    else
        snprintf(buf, sizeof buf, "%s", g->meta);
    return buf;
}

/* Appends one TokenOperation of kind g->fixed read from v (PLACE[:N], or
 * for MOVE FROM:TO[:N] or FROM->TO[:N]) to the request's "operations"; -1
 * when v does not parse. A trailing ":N" of digits is the count. */
static int
token_op(const struct arg *g, const char *v, json_t *req)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    long count = 0;
    char *colon = strrchr(buf, ':');
    if (colon != NULL && colon[1] != '\0' && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        count = strtol(colon + 1, NULL, 10);
        *colon = '\0';
    }
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(g->fixed));
    if (strcmp(g->fixed, "MOVE") == 0) {
        char *sep = strstr(buf, "->");
        size_t skip = 2;
        if (sep == NULL) {
            sep = strchr(buf, ':');
            skip = 1;
        }
        if (sep == NULL || sep == buf || sep[skip] == '\0') {
            json_decref(o);
            return -1;
        }
        *sep = '\0';
        json_object_set_new(o, "to_place_id", json_string_nocheck(sep + skip));
    }
    if (buf[0] == '\0') {
        json_decref(o);
        return -1;
    }
    json_object_set_new(o, "place_id", json_string_nocheck(buf));
    if (count > 0)
        json_object_set_new(o, "count", json_integer(count));
    json_t *ops = json_object_get(req, "operations");
    if (!json_is_array(ops)) {
        ops = json_array();
        json_object_set_new(req, "operations", ops);
    }
    json_array_append_new(ops, o);
    return 0;
}

/* Appends item to the repeated field at path field of req. */
static void
append_to(json_t *req, const char *field, json_t *item)
{
    json_t *list = get_path(req, field);
    if (list == NULL) {
        list = json_array();
        set_path(req, field, list);
    }
    json_array_append_new(list, item);
}

/* Appends one PlaceMapping read from v (FROM:TO, or FROM->TO) to the
 * repeated field g->field; -1 when v does not parse. */
static int
place_map(const struct arg *g, const char *v, json_t *req)
{
    const char *sep = strstr(v, "->");
    size_t skip = 2;
    if (sep == NULL) {
        sep = strchr(v, ':');
        skip = 1;
    }
    if (sep == NULL || sep == v || sep[skip] == '\0')
        return -1;
    json_t *m = json_object();
    json_object_set_new(m, "from_place", json_stringn_nocheck(v, (size_t)(sep - v)));
    json_object_set_new(m, "to_place", json_string_nocheck(sep + skip));
    append_to(req, g->field, m);
    return 0;
}

/* Applies one argument's text to the request; 0 or an exit status. */
static int
apply_arg(const struct arg *g, const char *v, struct wfctl_args *a)
{
    json_t *val = NULL;
    switch (g->kind) {
    case ARG_END:
        return 0;
    case ARG_STR:
        val = json_string_nocheck(v);
        break;
    case ARG_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0')
            return wfctl_usage_error("%s: \"%s\" is not an integer", arg_label(g), v);
        val = json_integer(x);
        break;
    }
    case ARG_FLAG:
        val = json_true();
        break;
    case ARG_LOCAL:
        json_object_set_new(a->local, g->field, json_true());
        return 0;
    case ARG_LOCAL_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0')
            return wfctl_usage_error("%s: \"%s\" is not an integer", arg_label(g), v);
        json_object_set_new(a->local, g->field, json_integer(x));
        return 0;
    }
    case ARG_JSON: {
        char *text = v[0] == '@' ? read_all(v + 1) : strdup(v);
        if (text == NULL)
            return wfctl_usage_error("%s: cannot read %s: %s", arg_label(g), v + 1,
                                     strerror(errno));
        val = json_string_nocheck(text); /* sent as given: the server validates it */
        free(text);
        break;
    }
    case ARG_FILE: {
        json_error_t e;
        val = strcmp(v, "-") == 0 ? json_loadf(stdin, 0, &e) : json_load_file(v, 0, &e);
        if (val == NULL && e.line > 0)
            return wfctl_usage_error("%s:%d:%d: %s", v, e.line, e.column, e.text);
        if (val == NULL)
            return wfctl_usage_error("%s: %s", v, e.text);
        break;
    }
    case ARG_AGG: {
        const char *colon = strchr(v, ':');
        val = json_object();
        json_object_set_new(val, "type",
                            colon != NULL ? json_stringn_nocheck(v, (size_t)(colon - v))
                                          : json_string_nocheck(v));
        json_object_set_new(val, "id", json_string_nocheck(colon != NULL ? colon + 1 : ""));
        break;
    }
    case ARG_DURATION: {
        int64_t s;
        int32_t ns;
        if (wfctl_parse_duration(v, &s, &ns) != 0)
            return wfctl_usage_error("%s: \"%s\" is not a duration (e.g. 30, 30s, 5m, 1h30m)",
                                     arg_label(g), v);
        val = json_string(v);
        break;
    }
    case ARG_LIST:
        val = split_list(v);
        break;
    case ARG_VAR: {
        const char *eq = strchr(v, '=');
        if (eq == NULL || eq == v)
            return wfctl_usage_error("%s: \"%s\" is not PATH=VALUE", arg_label(g), v);
        /* A JSON scalar as it is; any other text is a string. */
        json_t *parsed = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
        char *value = NULL;
        if (parsed != NULL && !json_is_object(parsed) && !json_is_array(parsed)) {
            value = strdup(eq + 1);
        } else {
            json_t *s = json_string_nocheck(eq + 1);
            value = json_dumps(s, JSON_ENCODE_ANY);
            json_decref(s);
        }
        json_decref(parsed);
        json_t *f = json_object();
        json_object_set_new(f, "path", json_stringn_nocheck(v, (size_t)(eq - v)));
        json_object_set_new(f, "value_json", json_string_nocheck(value != NULL ? value : ""));
        free(value);
        append_to(a->req, g->field, f);
        return 0;
    }
    case ARG_EACH:
        append_to(a->req, g->field, json_string_nocheck(v));
        return 0;
    case ARG_ASSIGNEE: {
        if (get_path(a->req, g->field) != NULL)
            return wfctl_usage_error(
                "%s: only one assignee may be given (user, group, users or ids-expression)",
                arg_label(g));
        val = json_object();
        json_object_set_new(val, "kind", json_string(g->fixed));
        if (g->flags & ARGF_EXPR) {
            json_object_set_new(val, "ids_expression", json_string_nocheck(v));
            break;
        }
        json_t *ids = strcmp(g->fixed, "USERS") == 0 ? split_list(v) : json_array();
        if (strcmp(g->fixed, "USERS") != 0)
            json_array_append_new(ids, json_string_nocheck(v));
        json_object_set_new(val, "ids", ids);
        break;
    }
    case ARG_JOIN: {
        val = json_object();
        int q = 0;
        char extra;
        if (strcasecmp(v, "all") == 0 || strcasecmp(v, "any") == 0) {
            json_object_set_new(val, "mode", json_string(v));
        } else if (sscanf(v, "quorum:%d%c", &q, &extra) == 1 && q > 0) {
            json_object_set_new(val, "mode", json_string("QUORUM"));
            json_object_set_new(val, "quorum", json_integer(q));
        } else {
            json_decref(val);
            return wfctl_usage_error("%s: \"%s\" is not all, any or quorum:K", arg_label(g), v);
        }
        break;
    }
    case ARG_TOKENOP:
        if (token_op(g, v, a->req) != 0)
            return wfctl_usage_error("%s: \"%s\" is not %s", arg_label(g), v, g->meta);
        return 0;
    case ARG_PLACEMAP:
        if (place_map(g, v, a->req) != 0)
            return wfctl_usage_error("%s: \"%s\" is not %s", arg_label(g), v, g->meta);
        return 0;
    }
    set_path(a->req, g->field, val);
    return 0;
}

#define HELP_SHOWN (-1)

/* Parses argv (argv[0] is the command name) into a. */
static int
parse_args(const struct command *c, int argc, char **argv, struct wfctl_args *a)
{
    struct option longopts[48];
    int n = 0;
    for (int i = 0; c->args[i].kind != ARG_END && n < 44; i++)
        if (c->args[i].name != NULL)
            longopts[n++] = (struct option){
                c->args[i].name,
                c->args[i].kind == ARG_FLAG || c->args[i].kind == ARG_LOCAL ? no_argument
                                                                            : required_argument,
                NULL, 256 + i};
    longopts[n++] = (struct option){"json", no_argument, NULL, 'j'};
    longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n] = (struct option){NULL, 0, NULL, 0};

    char prog[64];
    snprintf(prog, sizeof prog, "wfctl %s", c->name);
    argv[0] = prog; /* getopt's messages name the command */
    optind = 0;     /* GNU: reinitialize after main's parse */
    opterr = !g_wfctl.json_errors;
    int o;
    while ((o = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (o == 'h') {
            command_usage(c, stdout);
            return HELP_SHOWN;
        }
        if (o == 'j') {
            g_wfctl.json = g_wfctl.json_errors = 1;
            continue;
        }
        if (o < 256) {
            if (g_wfctl.json_errors)
                return wfctl_usage_error("%s: unknown option or missing value: %s (see 'wfctl "
                                         "%s --help')",
                                         c->name, argv[optind - 1], c->name);
            fprintf(stderr, "try 'wfctl %s --help'\n", c->name);
            return WFCTL_USAGE;
        }
        int rc = apply_arg(&c->args[o - 256], optarg, a);
        if (rc != 0)
            return rc;
    }
    int pos = optind;
    for (const struct arg *g = c->args; g->kind != ARG_END; g++) {
        if (g->name != NULL)
            continue;
        if (pos >= argc) {
            if (g->flags & ARGF_OPTIONAL)
                continue;
            wfctl_usage_error("%s: missing %s (see 'wfctl %s --help')", c->name, g->meta, c->name);
            return WFCTL_USAGE;
        }
        int rc = apply_arg(g, argv[pos++], a);
        if (rc != 0)
            return rc;
    }
    if (pos < argc && !c->takes_rest)
        return wfctl_usage_error("%s: unexpected argument \"%s\" (see 'wfctl %s --help')", c->name,
                                 argv[pos], c->name);
    a->rest = argv + pos;
    a->nrest = argc - pos;
    return 0;
}

static int
prepare_assign(struct wfctl_args *a)
{
    json_t *next = json_object_get(a->req, "on_all_completed");
    json_t *title = json_object_get(a->req, "title");
    if (next != NULL && json_object_get(next, "title") == NULL && title != NULL)
        json_object_set(next, "title", title);
    return 0;
}

/* Output-only fields of a Definition (as printed by `wfctl --json definition`)
 * are dropped, so that a printed definition deploys again unchanged: on a
 * step list (kind STEPS with steps) also the compiled net. */
static int
prepare_deploy(struct wfctl_args *a)
{
    json_t *d = json_object_get(a->req, "definition");
    static const char *const output_only[] = {"version", "created_at", "createdAt", "created_by",
                                              "createdBy"};
    static const char *const compiled[] = {"places", "transitions", "arcs"};
    for (size_t i = 0; json_is_object(d) && i < sizeof output_only / sizeof output_only[0]; i++)
        json_object_del(d, output_only[i]);
    json_t *k = json_object_get(d, "kind");
    const char *kind = json_string_value(k);
    int is_steps = (kind != NULL && (strcasecmp(kind, "STEPS") == 0 ||
                                     strcasecmp(kind, "DEFINITION_KIND_STEPS") == 0)) ||
                   (json_is_integer(k) &&
                    json_integer_value(k) == WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS);
    if (is_steps && json_array_size(json_object_get(d, "steps")) > 0)
        for (size_t i = 0; i < sizeof compiled / sizeof compiled[0]; i++)
            json_object_del(d, compiled[i]);
    return 0;
}

/* batch start: a filter without a definition key reaches every definition
 * of the tenant, so it must be asked for by name (--all). */
static int
prepare_batch_start(struct wfctl_args *a)
{
    const char *key = json_string_value(get_path(a->req, "filter.definition_key"));
    if ((key == NULL || key[0] == '\0') && !json_is_true(json_object_get(a->local, "all")))
        return wfctl_usage_error("batch start: give --key KEY, or --all to act on instances of "
                                 "every definition (see 'wfctl batch start --help')");
    return 0;
}

/* ---- runners -------------------------------------------------------------- */

/* One RPC; list commands print their items and may follow next_page_token. */
static int
run_unary(const struct command *c, struct wfctl_args *a)
{
    char err[1024];
    ProtobufCMessage *req = pbjson_to_message(c->req, a->req, "", err, sizeof err);
    if (req == NULL)
        return wfctl_usage_error("%s: %s", c->name, err);
    int all = json_is_true(json_object_get(a->local, "all"));
    int rc = WFCTL_OK;
    for (;;) {
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        if (wfctl_call(c->method, req, c->resp, &resp, 0, &st) != 0) {
            rc = wfctl_fail(&st);
            break;
        }
        if (c->items == NULL) {
            if (g_wfctl.json) {
                pbjson_print(resp);
                rc = c->status != NULL ? c->status(resp) : WFCTL_OK;
            } else {
                rc = c->print(resp);
            }
            protobuf_c_message_free_unpacked(resp, NULL);
            break;
        }
        size_t n;
        ProtobufCMessage *const *items = pb_get_messages(resp, c->items, &n);
        for (size_t i = 0; i < n; i++) {
            if (g_wfctl.json)
                pbjson_print(items[i]);
            else
                c->row(items[i]);
        }
        const char *token = pb_get_string(resp, "next_page_token");
        int more = token != NULL && token[0] != '\0';
        if (more && all) {
            pb_set_string(req, "page_token", token);
            protobuf_c_message_free_unpacked(resp, NULL);
            continue;
        }
        if (!g_wfctl.json) {
            if (table_rows() == 0)
                printf("no %s\n", c->items);
            table_flush();
        }
        if (more)
            fprintf(stderr, "more %s: repeat with --page-token %s, or use --all\n", c->items,
                    token);
        protobuf_c_message_free_unpacked(resp, NULL);
        break;
    }
    table_flush();
    fflush(stdout);
    protobuf_c_message_free_unpacked(req, NULL);
    return rc;
}

/* The diagram format a command's --svg / --dot asks for: 0 for none, -1
 * for both. */
static int
diagram_format(const struct wfctl_args *a)
{
    int svg = json_is_true(json_object_get(a->local, "svg"));
    int dot = json_is_true(json_object_get(a->local, "dot"));
    if (svg && dot)
        return -1;
    return svg   ? WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_SVG
           : dot ? WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT
                 : 0;
}

/* GetDiagram; writes the content on stdout as it is (--json: the response
 * as one JSON line). */
static int
write_diagram(Workflow__V1__GetDiagramRequest *req)
{
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    if (wfctl_call("GetDiagram", &req->base, &workflow__v1__get_diagram_response__descriptor, &resp,
                   0, &st) != 0)
        return wfctl_fail(&st);
    const Workflow__V1__GetDiagramResponse *r = (const void *)resp;
    int rc = WFCTL_OK;
    if (g_wfctl.json)
        pbjson_print(resp);
    else if (fwrite(r->content, 1, strlen(r->content), stdout) != strlen(r->content) ||
             fflush(stdout) != 0)
        rc = WFCTL_FAILED;
    protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

/* definition: GetDefinition, or with --svg / --dot the version's diagram. */
static int
run_definition(const struct command *c, struct wfctl_args *a)
{
    int format = diagram_format(a);
    if (format < 0)
        return wfctl_usage_error("definition: --svg and --dot exclude each other");
    if (format == 0)
        return run_unary(c, a);
    Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    req.definition_key = (char *)json_string_value(json_object_get(a->req, "key"));
    req.version = (int32_t)json_integer_value(json_object_get(a->req, "version"));
    req.format = (Workflow__V1__DiagramFormat)format;
    return write_diagram(&req);
}

/* show: GetInstance, then with --history every page of ListWorkItems; with
 * --svg / --dot the instance's diagram instead. */
static int
run_show(const struct command *c, struct wfctl_args *a)
{
    int format = diagram_format(a);
    if (format < 0)
        return wfctl_usage_error("show: --svg and --dot exclude each other");
    if (format != 0) {
        if (json_is_true(json_object_get(a->local, "history")))
            return wfctl_usage_error("show: --history does not go with --svg or --dot");
        Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
        req.instance_id = (char *)json_string_value(json_object_get(a->req, "instance_id"));
        req.format = (Workflow__V1__DiagramFormat)format;
        return write_diagram(&req);
    }
    int rc = run_unary(c, a);
    if (rc != WFCTL_OK || !json_is_true(json_object_get(a->local, "history")))
        return rc;
    Workflow__V1__ListWorkItemsRequest req = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
    req.instance_id = (char *)json_string_value(json_object_get(a->req, "instance_id"));
    req.page_size = 500;
    ProtobufCMessage **pages = NULL;
    size_t n_pages = 0, n = 0;
    const ProtobufCMessage **items = NULL;
    char *token = NULL;
    for (;;) {
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        if (wfctl_call("ListWorkItems", &req.base,
                       &workflow__v1__list_work_items_response__descriptor, &resp, 0, &st) != 0) {
            rc = wfctl_fail(&st);
            break;
        }
        ProtobufCMessage **pv = realloc(pages, (n_pages + 1) * sizeof *pv);
        const Workflow__V1__ListWorkItemsResponse *r = (const void *)resp;
        const ProtobufCMessage **iv =
            pv != NULL ? realloc(items, (n + r->n_work_items + 1) * sizeof *iv) : NULL;
        if (pv != NULL)
            pages = pv;
        if (iv == NULL) {
            protobuf_c_message_free_unpacked(resp, NULL);
            rc = wfctl_fail_local("out of memory");
            break;
        }
        items = iv;
        pages[n_pages++] = resp;
        for (size_t i = 0; i < r->n_work_items; i++)
            items[n++] = &r->work_items[i]->base;
        if (r->next_page_token[0] == '\0')
            break;
        free(token);
        token = strdup(r->next_page_token);
        req.page_token = token;
        if (token == NULL) {
            rc = WFCTL_FAILED;
            break;
        }
    }
    if (rc == WFCTL_OK) {
        if (g_wfctl.json)
            for (size_t i = 0; i < n; i++)
                pbjson_print(items[i]);
        else
            print_history(items, n);
        fflush(stdout);
    }
    for (size_t i = 0; i < n_pages; i++)
        protobuf_c_message_free_unpacked(pages[i], NULL);
    free(pages);
    free(items);
    free(token);
    return rc;
}

/* batch start and batch get: the call, then with --follow GetBatchOperation
 * every second, a progress line each time, until the batch has ended. */
static int
run_batch(const struct command *c, struct wfctl_args *a)
{
    if (!json_is_true(json_object_get(a->local, "follow")) ||
        json_is_true(json_object_get(a->req, "dry_run")))
        return run_unary(c, a);
    char err[1024];
    ProtobufCMessage *m = pbjson_to_message(c->req, a->req, "", err, sizeof err);
    if (m == NULL)
        return wfctl_usage_error("%s: %s", c->name, err);
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    int rc = wfctl_call(c->method, m, c->resp, &resp, 0, &st) != 0 ? wfctl_fail(&st) : WFCTL_OK;
    protobuf_c_message_free_unpacked(m, NULL);
    const Workflow__V1__BatchOperation *b =
        rc == WFCTL_OK ? (const void *)pb_get_message(resp, "batch_operation") : NULL;
    char *id = b != NULL ? strdup(b->id) : NULL;
    while (rc == WFCTL_OK && b != NULL && id != NULL) {
        print_batch_progress(&b->base);
        if (b->state != WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_RUNNING)
            break;
        sleep(1);
        Workflow__V1__GetBatchOperationRequest get =
            WORKFLOW__V1__GET_BATCH_OPERATION_REQUEST__INIT;
        get.id = id;
        protobuf_c_message_free_unpacked(resp, NULL);
        resp = NULL;
        if (wfctl_call("GetBatchOperation", &get.base,
                       &workflow__v1__get_batch_operation_response__descriptor, &resp, 0,
                       &st) != 0) {
            rc = wfctl_fail(&st);
            break;
        }
        b = ((const Workflow__V1__GetBatchOperationResponse *)(const void *)resp)->batch_operation;
    }
    if (rc == WFCTL_OK && b != NULL) {
        if (g_wfctl.json)
            pbjson_print(resp);
        else
            print_batch_resp(resp);
        if (b->failed > 0)
            rc = WFCTL_FAILED;
    }
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    free(id);
    return rc;
}

static int
run_jobs(const struct command *c, struct wfctl_args *a)
{
    (void)c;
    return wfctl_jobs(a);
}

/* Reads the history req matches (without following) to its end, printing
 * nothing, and leaves req->after_sequence at its last sequence: where "now"
 * is for watch --follow. */
static int
skip_history(const struct command *c, Workflow__V1__WatchEventsRequest *req)
{
    wf_client_call_opts o = {0};
    o.timeout_ms = g_wfctl.timeout_ms > 0 ? g_wfctl.timeout_ms : 300000;
    req->follow = 0;
    wf_client_stream *s = wf_client_stream_open(
        g_wfctl.client, "/workflow.v1.WorkflowService/WatchEvents", &req->base, &o);
    req->follow = 1;
    if (s == NULL)
        return wfctl_fail_local("could not open the event stream");
    wf_client_status st;
    ProtobufCMessage *msg;
    while (wf_client_stream_next(s, c->resp, &msg, &st)) {
        const Workflow__V1__WatchEventsResponse *r = (const void *)msg;
        if (r->event != NULL)
            req->after_sequence = r->event->sequence;
        protobuf_c_message_free_unpacked(msg, NULL);
    }
    wf_client_stream_close(s);
    return st.code != 0 ? wfctl_fail(&st) : WFCTL_OK;
}

/* WatchEvents. With --follow, resumes after the last sequence seen when the
 * server ends the stream (shutdown, connection age) or the connection drops
 * after it had been established. */
static int
run_watch(const struct command *c, struct wfctl_args *a)
{
    char err[1024];
    ProtobufCMessage *m = pbjson_to_message(c->req, a->req, "", err, sizeof err);
    if (m == NULL)
        return wfctl_usage_error("watch: %s", err);
    Workflow__V1__WatchEventsRequest *req = (void *)m;
    int from_start = json_is_true(json_object_get(a->local, "from_start"));
    int after_given = json_object_get(a->req, "after_sequence") != NULL;
    if (from_start && after_given) {
        protobuf_c_message_free_unpacked(m, NULL);
        return wfctl_usage_error("watch: give --from-start or --after, not both");
    }
    wf_client_call_opts o = {0};
    o.timeout_ms = req->follow ? INT_MAX : g_wfctl.timeout_ms > 0 ? g_wfctl.timeout_ms : 300000;
    int rc = WFCTL_OK, backoff = 1, established = 0;
    /* --follow from now: the matching history is read to its end and not
     * printed, and the stream follows after its last sequence. */
    if (req->follow && !from_start && !after_given) {
        rc = skip_history(c, req);
        if (rc != WFCTL_OK) {
            protobuf_c_message_free_unpacked(m, NULL);
            return rc;
        }
        fprintf(stderr,
                "wfctl: following events after sequence %lld (--from-start prints the "
                "history first)\n",
                (long long)req->after_sequence);
        fflush(stderr);
    }
    for (;;) {
        time_t started = time(NULL);
        long got = 0;
        wf_client_status st;
        wf_client_stream *s = wf_client_stream_open(
            g_wfctl.client, "/workflow.v1.WorkflowService/WatchEvents", m, &o);
        if (s == NULL) {
            rc = wfctl_fail_local("could not open the event stream");
            break;
        }
        ProtobufCMessage *msg;
        while (wf_client_stream_next(s, c->resp, &msg, &st)) {
            const Workflow__V1__WatchEventsResponse *r = (const void *)msg;
            if (r->event != NULL) {
                req->after_sequence = r->event->sequence;
                got++;
                if (g_wfctl.json)
                    pbjson_print(&r->event->base);
                else
                    row_event(&r->event->base);
            }
            protobuf_c_message_free_unpacked(msg, NULL);
        }
        wf_client_stream_close(s);
        if (!req->follow) {
            rc = st.code != 0 ? wfctl_fail(&st) : WFCTL_OK;
            break;
        }
        if (got > 0 || st.code == 0 || time(NULL) - started >= 2)
            established = 1;
        if ((st.code != 0 && st.code != 14 /* UNAVAILABLE */) || !established) {
            rc = wfctl_fail(&st);
            break;
        }
        if (got > 0)
            backoff = 1;
        fprintf(stderr, "wfctl: event stream ended (%s%s%s); resuming after sequence %lld in %ds\n",
                wf_client_code_name(st.code), st.message[0] ? ": " : "", st.message,
                (long long)req->after_sequence, backoff);
        sleep((unsigned)backoff);
        backoff = backoff < 30 ? backoff * 2 : 30;
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

int
wfctl_command_group(const char *word)
{
    size_t n = strlen(word);
    for (const struct command *c = commands; c->name != NULL; c++)
        if (strncmp(c->name, word, n) == 0 && c->name[n] == ' ')
            return 1;
    return 0;
}

int
wfctl_run_command(int argc, char **argv)
{
    /* A command of two words ("batch start"): its first word is a group. */
    char two[128];
    if (wfctl_command_group(argv[0]) && argc > 1) {
        snprintf(two, sizeof two, "%s %s", argv[0], argv[1]);
        argv++;
        argc--;
        argv[0] = two;
    } else if (wfctl_command_group(argv[0])) {
        return wfctl_usage_error("'%s' needs a subcommand (see 'wfctl --help')", argv[0]);
    }
    const struct command *c = commands;
    while (c->name != NULL && strcmp(c->name, argv[0]) != 0)
        c++;
    if (c->name == NULL) {
        return wfctl_usage_error("unknown command \"%s\" (see 'wfctl --help')", argv[0]);
    }
    struct wfctl_args a = {json_object(), json_object(), NULL, 0};
    int rc = parse_args(c, argc, argv, &a);
    if (rc == 0 && c->prepare != NULL)
        rc = c->prepare(&a);
    if (rc == 0)
        rc = c->run != NULL ? c->run(c, &a) : run_unary(c, &a);
    else if (rc == HELP_SHOWN)
        rc = WFCTL_OK;
    json_decref(a.req);
    json_decref(a.local);
    return rc;
}
