/*
 * wfctl internals: shared by wfctl.c (main, global flags), wfctl_commands.c
 * (the command table and the generic runner), wfctl_json.c (protobuf <-> JSON
 * by reflection), wfctl_print.c (human-readable output) and wfctl_jobs.c
 * (the job worker loop).
 */
#ifndef WFCTL_H
#define WFCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#include "wf_client.h"

/* Exit statuses. */
enum { WFCTL_OK = 0, WFCTL_FAILED = 1, WFCTL_USAGE = 2 };

/* Process-wide settings of one wfctl run. */
struct wfctl {
    wf_client *client;
    int json;        /* --json: machine-readable output, one object per line */
    int json_errors; /* --json given anywhere: errors as JSON objects on stderr */
    int timeout_ms;  /* --timeout (0 = the client's default, 10 s) */
};
extern struct wfctl g_wfctl;

/* ---- wfctl.c -------------------------------------------------------------- */

/* A global flag: --name [META], its environment variable (NULL: none). */
struct wfctl_global {
    const char *name;
    const char *meta; /* NULL: takes no value */
    const char *env;
    const char *help;
};
extern const struct wfctl_global wfctl_globals[]; /* ends with a NULL name */

/* Prints "error: CODE (REASON): message" and the violations on stderr
 * (with --json one object: {"error":{"code","code_number","reason","domain",
 * "message","violations","violations_total","metadata"}}); returns
 * WFCTL_FAILED. */
int wfctl_fail(const wf_client_status *st);

/* A failure found by wfctl itself (no call answered): "error: <message>", or
 * {"error":{"code":"CLIENT","message"}}; returns WFCTL_FAILED. */
int wfctl_fail_local(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "wfctl: <message>" on stderr (with --json
 * {"error":{"code":"USAGE","exit_status":2,"message"}}); returns
 * WFCTL_USAGE. */
int wfctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Calls WorkflowService/<method> (or a full path starting with '/'). */
int wfctl_call(const char *method, const ProtobufCMessage *req,
               const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp, int timeout_ms,
               wf_client_status *st);

/* ---- wfctl_commands.c -------------------------------------------------- */

struct wfctl_args;
typedef int (*wfctl_printer)(const ProtobufCMessage *resp);

/* How the text of an argument is read into the request. */
enum argk {
    ARG_END,
    ARG_STR,       /* string field */
    ARG_INT,       /* integer field */
    ARG_FLAG,      /* boolean field set to true (no value) */
    ARG_LOCAL,     /* a flag of the command itself, not a request field (--all, --once) */
    ARG_LOCAL_INT, /* an integer option of the command itself (--concurrency N) */
    ARG_JSON,      /* JSON object text for a *_json field; @FILE reads a file, @- stdin */
    ARG_FILE,      /* a JSON file (- = stdin) parsed into a message field */
    ARG_AGG,       /* TYPE:ID into an Aggregate */
    ARG_DURATION,  /* 30 (seconds), 30s, 1.5s, 5m, 1h30m into a Duration */
    ARG_LIST,      /* comma-separated list into a repeated field */
    ARG_ASSIGNEE,  /* an id (USER, GROUP) or an id list (USERS) into an Assignee */
    ARG_JOIN,      /* all | any | quorum:K into a JoinPolicy */
    ARG_TOKENOP,   /* PLACE[:N] or FROM:TO[:N] appended to "operations" (kind in fixed) */
    ARG_VAR,       /* PATH=VALUE appended to a repeated VariableFilter (the flag repeats) */
    ARG_PLACEMAP,  /* FROM:TO or FROM->TO appended to a repeated PlaceMapping (the flag repeats) */
    ARG_EACH,      /* a string appended to a repeated field (the flag repeats; commas kept) */
};

#define ARGF_OPTIONAL 1u /* a positional that may be left out */
#define ARGF_EXPR 2u     /* ARG_ASSIGNEE: the value is an ids_expression, not ids */

struct arg {
    enum argk kind;
    const char *name;  /* --name; NULL for a positional argument */
    const char *field; /* request field path ("on_all_completed.title") or local flag */
    const char *meta;  /* placeholder of the value in the help text */
    const char *help;
    const char *fixed; /* ARG_ASSIGNEE: the assignee kind; ARG_TOKENOP: the operation;
                          ARG_STR: the values it takes, comma-separated (shell completion),
                          when it does not fill an enum field */
    unsigned flags;
};

struct command {
    const char *name;
    const char *summary;
    const char *method; /* WorkflowService method, or a full path */
    const ProtobufCMessageDescriptor *req, *resp;
    const struct arg *args;
    wfctl_printer print;                                       /* human output */
    int (*status)(const ProtobufCMessage *resp);               /* exit status, when not 0 */
    const char *items;                                         /* list: the repeated field */
    void (*row)(const ProtobufCMessage *item);                 /* list: one table row */
    int (*prepare)(struct wfctl_args *a);                      /* adjusts the request JSON */
    int (*run)(const struct command *c, struct wfctl_args *a); /* own runner */
    int takes_rest;                                            /* "-- COMMAND ARGS..." */
    const char *details;
};

/* The command table, ended by a NULL name. */
/* True when word is the first word of commands of two words ("batch" of
 * "batch start"). */
int wfctl_command_group(const char *word);
extern const struct command *const wfctl_commands;

/* Runs command argv[0]; returns the exit status. */
int wfctl_run_command(int argc, char **argv);

/* Prints the command list for the global usage text. */
void wfctl_list_commands(FILE *f);

/* Parsed arguments of one command: the request as JSON (field names of the
 * proto) and the command-local flags (--all, --once, ...). */
struct wfctl_args {
    json_t *req;
    json_t *local;
    char **rest; /* arguments after the positionals ("jobs TYPE -- CMD ...") */
    int nrest;
};

/* ---- wfctl_json.c ------------------------------------------------------ */

/* Converts a message to JSON: proto field names, every scalar and repeated
 * field (unset ones with their zero value), set sub-messages only, enums
 * without their prefix ("RUNNING"), Timestamp as RFC 3339 UTC, Duration as
 * "1.5s", maps as objects, *_json strings embedded as JSON values. */
json_t *pbjson_from_message(const ProtobufCMessage *m);

/* Builds a message of type desc from JSON (the inverse of
 * pbjson_from_message; also accepts lowerCamelCase names, enum names with or
 * without prefix, in any case, '-' for '_', durations as "30s", "5m",
 * "1h30m" or seconds, and *_json fields as JSON values). The result is freed
 * with protobuf_c_message_free_unpacked(m, NULL). NULL on error, with a
 * message naming the JSON path in err. */
ProtobufCMessage *pbjson_to_message(const ProtobufCMessageDescriptor *desc, json_t *j,
                                    const char *path, char *err, size_t errlen);

/* Writes j compactly on one line (shortest round-trip reals) to f. */
void json_print_line(FILE *f, const json_t *j);

/* Prints a message as one JSON line on stdout. */
void pbjson_print(const ProtobufCMessage *m);

/* Parses JSON text; NULL with err filled on failure. */
json_t *json_parse_text(const char *text, char *err, size_t errlen);

/* Timestamps and durations. */
int wfctl_parse_time(const char *s, int64_t *sec, int32_t *nanos);
int wfctl_parse_duration(const char *s, int64_t *sec, int32_t *nanos);
/* RFC 3339 UTC; frac: with 0/3/6/9 fractional digits as needed. */
void wfctl_format_time(int64_t sec, int32_t nanos, int frac, char *buf, size_t n);
void wfctl_format_duration(int64_t sec, int32_t nanos, char *buf, size_t n);

/* Name of an enum value without the enum's prefix ("RUNNING"). */
const char *pb_enum_name(const ProtobufCEnumDescriptor *d, int value);

/* Reflection helpers by field name (NULL / -1 when there is no such field). */
const char *pb_get_string(const ProtobufCMessage *m, const char *field);
int pb_set_string(ProtobufCMessage *m, const char *field, const char *value);
const ProtobufCMessage *pb_get_message(const ProtobufCMessage *m, const char *field);
ProtobufCMessage *const *pb_get_messages(const ProtobufCMessage *m, const char *field, size_t *n);

/* ---- wfctl_print.c ----------------------------------------------------- */

/* (wfctl_printer: the human-readable printer of a response, returning the
 * exit status, is declared with the command table above.) */

/* Column table: collects rows, prints them aligned under their header on
 * flush (empty cells as "-"). */
void table_begin(int indent, int ncols, const char *const *names);
void table_row(const char *const *cells);
void table_flush(void);
size_t table_rows(void);

/* Exit status implied by a response (health NOT_SERVING, validation errors). */
int status_health(const ProtobufCMessage *m);
int status_deploy(const ProtobufCMessage *m);
int status_migrate(const ProtobufCMessage *m);

/* Printers of the commands (each takes the RPC's response message). */
int print_health(const ProtobufCMessage *m);
int print_deploy(const ProtobufCMessage *m);
int print_definition(const ProtobufCMessage *m);
int print_start(const ProtobufCMessage *m);
int print_instance_resp(const ProtobufCMessage *m);
int print_modify(const ProtobufCMessage *m);
int print_migrate(const ProtobufCMessage *m);
int print_show(const ProtobufCMessage *m);
int print_await(const ProtobufCMessage *m);
int print_assign(const ProtobufCMessage *m);
int print_task_resp(const ProtobufCMessage *m);
int print_job_resp(const ProtobufCMessage *m);
int print_complete(const ProtobufCMessage *m);
int print_complete_and_end(const ProtobufCMessage *m);
int print_completion(const ProtobufCMessage *m);
int print_send_signal(const ProtobufCMessage *m);
int print_tick(const ProtobufCMessage *m);
int print_batch_resp(const ProtobufCMessage *m);
int print_schedule_resp(const ProtobufCMessage *m);
int print_schedule_run_resp(const ProtobufCMessage *m);
int print_schedule_backfill_resp(const ProtobufCMessage *m);
/* "ok": a call whose answer is empty (schedule delete). */
int print_done(const ProtobufCMessage *m);
int print_resource_resp(const ProtobufCMessage *m);
/* One progress line of a batch operation (batch --follow), to stderr. */
void print_batch_progress(const ProtobufCMessage *batch_operation);

/* Printers of list items (one per item message type): a table row, printed
 * on table_flush(); row_event prints its line at once (event stream). */
void row_definition(const ProtobufCMessage *m);
void row_instance(const ProtobufCMessage *m);
void row_task(const ProtobufCMessage *m);
void row_incident(const ProtobufCMessage *m);
void row_batch(const ProtobufCMessage *m);
void row_schedule(const ProtobufCMessage *m);
void row_schedule_run(const ProtobufCMessage *m);
void row_resource(const ProtobufCMessage *m);
void row_signal(const ProtobufCMessage *m);
void row_event(const ProtobufCMessage *m);

/* show --history: a "history" section with one row per work item. */
void print_history(const ProtobufCMessage *const *items, size_t n);

/* ---- wfctl_doc.c ------------------------------------------------------- */

/* `wfctl completion bash|zsh` and `wfctl man`: a shell completion script and
 * a man page (roff), generated from the command table and wfctl_globals. */
int wfctl_run_completion(const struct command *c, struct wfctl_args *a);
int wfctl_run_man(const struct command *c, struct wfctl_args *a);

/* ---- wfctl_jobs.c ------------------------------------------------------ */

int wfctl_jobs(struct wfctl_args *a);

#endif /* WFCTL_H */
