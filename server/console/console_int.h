/*
 * console_int.h: what the files of the web console share (prefix
 * wf_console__). Not seen outside server/console/.
 */
#ifndef WF_CONSOLE_INT_H
#define WF_CONSOLE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "console_auth.h"
#include "handler.h"
#include "wf_arena.h"
#include "wf_error.h"
#include "wf_http.h"

#include "workflow/v1/workflow.pb-c.h"

/* One request as the pages see it: who acts, in which tenant, and where
 * the page is written. */
typedef struct wf_console__ctx {
    wf_app *app;
    const wf_http_req *req;
    wf_arena *arena;
    const char *tenant;       /* the session's (the key's) tenant; "default" in open access */
    const char *actor;        /* named at login; NULL when none was */
    const char *csrf;         /* the session's token; NULL without a session */
    wf_console__role role;    /* what the session may do (console_auth.h) */
    FILE *out;                /* the page (open_memstream) */
    unsigned status;          /* HTTP status of the page, 200 unless set */
    const char *location;     /* set: answer 303 See Other to it instead of the page */
    const char *content_type; /* of what out holds; NULL = text/html */
    /* A page shown again after a refused action: which form was refused
     * (a repair's name, "variables", or the task id of a Complete), and
     * why. The form keeps what was typed and shows the reason inline. */
    const char *refused;
    const wf_error *refusal;
} wf_console__ctx;

/* Runs the route `method` of wf_routes (the handler the gRPC route calls)
 * with the context's tenant and actor, a 10 s deadline and the arena. A
 * route that acts for a person refuses without an actor (ACTOR_MISSING),
 * as the interceptors do. */
wf_code wf_console__call(wf_console__ctx *x, const char *method, const ProtobufCMessage *req,
                         ProtobufCMessage **resp, wf_error *err);

/* Reads at most max events of the tenant after after_seq (of one instance
 * tree when instance_id is set) through WatchEvents' stream ops, without
 * following; fn gets each. Returns WF_OK or the stream's error. */
typedef void (*wf_console__event_fn)(void *arg, const Workflow__V1__Event *ev);
wf_code wf_console__read_events(wf_app *app, const char *tenant, const char *instance_id,
                                int64_t after_seq, size_t max, wf_console__event_fn fn, void *arg,
                                wf_error *err);

/* ---- HTML (console_html.c) ---- */

/* The one escape of every value shown: & < > " ' become entities, so the
 * text is safe in element content and in quoted attributes alike. NULL
 * writes nothing. */
void wf_console__esc(FILE *out, const char *s);
/* Percent-encodes s for a URL's query component (all but A-Z a-z 0-9 - _ . ~). */
void wf_console__url(FILE *out, const char *s);
/* True for a path of this console, safe as a Location: one "/" not
 * followed by another or by a backslash, and only printable ASCII without
 * blanks. Browsers drop tabs and line breaks from a URL and read "\\" as
 * "/", so "/\t/evil.example" or "/\\evil.example" would lead to another
 * host. */
bool wf_console__own_path(const char *path);
/* Writes a JSON string literal of s (for the event stream's data lines). */
void wf_console__json_str(FILE *out, const char *s);
/* The name of enum value v without its prefix ("INSTANCE_STATUS_"), escaped. */
void wf_console__enum(FILE *out, const ProtobufCEnumDescriptor *d, int v);
/* A timestamp as "YYYY-MM-DD HH:MM:SS" UTC; "—" when unset. */
void wf_console__time(FILE *out, const Google__Protobuf__Timestamp *t);

/* The page frame: head, navigation, who acts; then the body; then end. */
void wf_console__page_begin(wf_console__ctx *x, const char *title);
void wf_console__page_end(wf_console__ctx *x);
/* A refusal shown as a page (status from the code) with its reason. */
void wf_console__page_error(wf_console__ctx *x, const wf_error *err);
/* True when the page may show the button of the action (its POST path):
 * a session with a CSRF token whose role the action's table entry allows. */
bool wf_console__may(const wf_console__ctx *x, const char *action);
/* Opens a POST form to action with the CSRF token, a fresh idempotency
 * key (request_id) and the page to come back to; close it with "</form>". */
void wf_console__form_begin(wf_console__ctx *x, const char *action, const char *cls);

/* A field of the POSTed form; "" when absent. */
const char *wf_console__field(wf_console__ctx *x, const char *name);
/* <input type="hidden"> of name and value, both escaped. */
void wf_console__hidden(wf_console__ctx *x, const char *name, const char *value);
/* path, with "?param=value" (percent-encoded) when value is not empty; in
 * the arena. */
const char *wf_console__self_url(wf_console__ctx *x, const char *path, const char *param,
                                 const char *value);
/* Where to go after an action: the form's back when it is a path of this
 * console (wf_console__own_path), else /instances. */
const char *wf_console__back(wf_console__ctx *x);

/* Splits "from=to,from=to" into at most 64 place mappings (in the
 * arena; the handler checks them); *n their number. NULL when out of
 * memory. */
Workflow__V1__PlaceMapping **wf_console__place_mappings(wf_console__ctx *x, const char *text,
                                                        size_t *n);

/* ---- pages (console_pages.c) ---- */

void wf_console__definitions(wf_console__ctx *x);
void wf_console__definition(wf_console__ctx *x);
void wf_console__instances(wf_console__ctx *x);
void wf_console__instance(wf_console__ctx *x);
void wf_console__incidents(wf_console__ctx *x);
void wf_console__inbox(wf_console__ctx *x);
void wf_console__batches(wf_console__ctx *x);
void wf_console__batch(wf_console__ctx *x);
/* /diagram.svg: GetDiagram's SVG (of ?key=&version=, with &live=1 and
 * &all=1 its live_totals and all_versions, or of ?instance=) as
 * image/svg+xml, shown by the pages in <img>, where no script runs. */
void wf_console__diagram(wf_console__ctx *x);
/* /fleet?key=&version= (0: every version): the live totals of a
 * definition's instances over its diagram and by place and transition;
 * /fleet/instances (&at=tokens|enabled|incidents&element=): the instances
 * there, paged (console_fleet.c). */
void wf_console__fleet(wf_console__ctx *x);
void wf_console__fleet_instances(wf_console__ctx *x);
/* Actions (POST, checked already): the one dispatch of every action by
 * its path (console_actions.c). Each action is one function of the
 * context and the actor who acts, so who may do what is decided here. */
typedef void (*wf_console__action_fn)(wf_console__ctx *x, const char *actor);
void wf_console__act(wf_console__ctx *x, const char *path);
/* The actions of the pages (console_pages.c). */
void wf_console__act_retry(wf_console__ctx *x, const char *actor);
void wf_console__act_claim(wf_console__ctx *x, const char *actor);
void wf_console__act_release(wf_console__ctx *x, const char *actor);
void wf_console__act_complete(wf_console__ctx *x, const char *actor);
void wf_console__act_batch_preview(wf_console__ctx *x, const char *actor);
void wf_console__act_batch_start(wf_console__ctx *x, const char *actor);
void wf_console__act_batch_cancel(wf_console__ctx *x, const char *actor);
/* After an action's call: on success back (303), else the refusal. */
void wf_console__acted(wf_console__ctx *x, wf_code rc, const wf_error *err);

/* ---- how a definition reads (console_steps.c) ---- */

/* A transition's trigger details as a list: job type, retry, lease,
 * compensation, assignee, signal and correlation, delay or due. */
void wf_console__transition_details(wf_console__ctx *x, const Workflow__V1__Transition *t);
/* A step list as steps (a section; nothing for a net): in order, each
 * with its kind, details and next rules, the steps of cur highlighted. */
void wf_console__step_list(wf_console__ctx *x, const Workflow__V1__Definition *d,
                           Workflow__V1__CurrentStep *const *cur, size_t n_cur);

/* ---- repairs of one instance (console_repair.c) ---- */

/* The instance page's Repair section: a form per repair, keeping what was
 * typed when x->refused names it. def: the definition version the
 * instance runs (its places), NULL when it could not be read. */
void wf_console__repair_section(wf_console__ctx *x, const Workflow__V1__GetInstanceResponse *g,
                                const Workflow__V1__Definition *def);
/* POST /instance/variables: SetVariables; a refusal shows the instance
 * page again with the text kept and the reason inline. */
void wf_console__act_variables(wf_console__ctx *x, const char *actor);
/* POST /instance/{cancel,suspend,resume,signal,modify,migrate}: first a
 * page stating what it will do (for migrate the dry run's plan) with a
 * Confirm form; confirmed, the call; refused, the instance page again. */
void wf_console__act_cancel(wf_console__ctx *x, const char *actor);
void wf_console__act_suspend(wf_console__ctx *x, const char *actor);
void wf_console__act_resume(wf_console__ctx *x, const char *actor);
void wf_console__act_signal(wf_console__ctx *x, const char *actor);
void wf_console__act_modify(wf_console__ctx *x, const char *actor);
void wf_console__act_migrate(wf_console__ctx *x, const char *actor);

/* ---- the login throttle (console_throttle.c) ---- */

/* Refused logins per source address, in a table of fixed size. */
typedef struct wf_console__throttle wf_console__throttle;
wf_console__throttle *wf_console__throttle_new(void);
void wf_console__throttle_free(wf_console__throttle *t);
/* Seconds addr must wait before it may try to log in again; 0: it may now. */
int wf_console__throttle_wait(wf_console__throttle *t, const char *addr, int64_t now_ms);
/* Counts a refused login of addr; returns the seconds it is now barred
 * for (0 while its first refusals are free). */
int wf_console__throttle_failed(wf_console__throttle *t, const char *addr, int64_t now_ms);
/* A login of addr succeeded: its count starts again. */
void wf_console__throttle_passed(wf_console__throttle *t, const char *addr, int64_t now_ms);

#endif /* WF_CONSOLE_INT_H */
