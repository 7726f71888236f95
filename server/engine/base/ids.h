/*
 * ids: the one check of an id argument, used by every RPC that takes one.
 *
 *   ""                       INVALID_ARGUMENT INVALID_ARGUMENT, with a field
 *                            violation naming the field ("is required")
 *   not of the kind's shape  NOT_FOUND <KIND>_NOT_FOUND: ids are opaque, so a
 *                            malformed one is an id that names nothing (and
 *                            costs no store round trip)
 *   well-formed              WF_OK: the caller looks it up, and a row that is
 *                            not there is NOT_FOUND <KIND>_NOT_FOUND too
 *
 * Shapes (core/wf_id.h): instance, task, job and batch operation ids are UUIDs; a job key is
 * "<instance id>.<uuid>" or, as older keys were, a bare UUID.
 */
#ifndef WF_IDS_H
#define WF_IDS_H

#include "work.h"

/* What an id names. */
typedef enum wf_id_kind {
    WF_ID_INSTANCE, /* INSTANCE_NOT_FOUND */
    WF_ID_TASK,     /* TASK_NOT_FOUND */
    WF_ID_JOB_KEY,  /* JOB_NOT_FOUND */
    WF_ID_BATCH,    /* BATCH_OPERATION_NOT_FOUND */
    WF_ID_JOB,      /* a job's id, or its instance's (UpdateJob): JOB_NOT_FOUND */
} wf_id_kind;

/* Checks id, the request field field, by the rule above; the violation of
 * an empty id goes to ctx->violation (ctx may be NULL: none). */
wf_code wf_ids_check(const wf_ref_ctx *ctx, wf_id_kind kind, const char *field, const char *id,
                     wf_error *err);

#endif /* WF_IDS_H */
