/*
 * resources.h: the resources of a tenant (DeclareResource, GetResource,
 * ListResources, UpdateResource, DeleteResource; docs/behaviour.md,
 * "Resources").
 *
 * A resource is a named limit declared per tenant, not in a definition:
 * every definition of the tenant that names it shares it. Its settings
 * are a capacity (units held at once at most; 0 = none), whether the
 * limits apply per value of a key, a rate (acquisitions per period at
 * most; both 0 = none) and a strategy for a work item that finds it full
 * (QUEUE or CANCEL_NEWEST). At least a capacity or a rate is set.
 *
 * DeclareResource creates the resource or replaces its settings; the
 * same settings again write nothing. Every write is checked against the
 * row's version (tried again on a concurrent change) and recorded under
 * its request id.
 */
#ifndef WF_RESOURCES_H
#define WF_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "referral.h"
#include "uow.h"

/* Longest resource name (bytes). */
#define WF_RESOURCE_NAME_MAX 128
/* Longest rate period (ms): one day. */
#define WF_RESOURCE_PERIOD_MAX_MS 86400000

/* What DeclareResource and UpdateResource ask for. Strings borrowed. */
typedef struct wf_resource_in {
    const char *name;
    int32_t capacity; /* 0 = no such limit; negative refused */
    bool per_key;
    int32_t rate_limit;     /* 0 with period 0 = no rate */
    int64_t rate_period_ms; /* 1 ms to WF_RESOURCE_PERIOD_MAX_MS when rate_limit is set */
    int strategy;           /* a wf_resource_strategy; 0 = QUEUE */
} wf_resource_in;

/* A resource as answered: the row, and whether the call created it. */
typedef struct wf_resource_view {
    wf_resource_row row;
    bool created;
} wf_resource_view;

/* DeclareResource: checks in (INVALID_ARGUMENT, each fault a field
 * violation), then inserts the resource or replaces its settings. */
wf_code wf_resources_declare(const wf_ref_ctx *ctx, const wf_resource_in *in, int64_t now,
                             wf_uow_idem *idem, wf_resource_view *out, wf_error *err);

/* UpdateResource: as declare, for a resource that exists
 * (RESOURCE_NOT_FOUND otherwise). */
wf_code wf_resources_update(const wf_ref_ctx *ctx, const wf_resource_in *in, int64_t now,
                            wf_uow_idem *idem, wf_resource_view *out, wf_error *err);

/* GetResource: RESOURCE_NOT_FOUND for an unknown name (another tenant's
 * included). */
wf_code wf_resources_get(const wf_ref_ctx *ctx, const char *name, wf_resource_row *out,
                         wf_error *err);

/* ListResources: newest first; page_size 0 = 50, at most 500. */
wf_code wf_resources_list(const wf_ref_ctx *ctx, int32_t page_size, const char *cursor,
                          wf_resource_row **rows, size_t *n, char **next_cursor, wf_error *err);

/* DeleteResource: RESOURCE_NOT_FOUND for an unknown name. */
wf_code wf_resources_delete(const wf_ref_ctx *ctx, const char *name, wf_uow_idem *idem,
                            wf_error *err);

#endif /* WF_RESOURCES_H */
