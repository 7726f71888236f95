/*
 * wf_id: the ids the server makes (UUIDv7) and the one rule for checking an
 * id a caller sends.
 *
 * Instance, task, timer, signal and event ids are UUIDs; a job key is
 * "<instance id>.<uuid>" (older keys are a bare UUID). Ids are opaque to
 * callers: a string that is not of the right shape is an id that names
 * nothing (NOT_FOUND), and only an empty one is a malformed request
 * (INVALID_ARGUMENT).
 */
#ifndef WF_ID_H
#define WF_ID_H

#include <stdbool.h>
#include <stddef.h>

#include "wf_arena.h"

/* Length of a UUID string, without its NUL. */
#define WF_UUID_LEN 36

/* Writes a fresh UUIDv7 (RFC 9562: time-ordered, 36 chars + NUL) into out,
 * which must hold at least WF_UUID_LEN + 1 bytes. Time ordering makes ids
 * usable as stable keyset-pagination keys. */
void wf_uuid7(char out[WF_UUID_LEN + 1]);

/* A new UUIDv7 in the arena; NULL when out of memory. */
char *wf_id_new(wf_arena *a);

/* True when s is a canonical lower- or upper-case UUID string. */
bool wf_uuid_valid(const char *s);

/* True when s is a job key of the current shape, "<instance id>.<uuid>";
 * then *instance_len is the length of its instance id (may be NULL). */
bool wf_id_job_key_split(const char *s, size_t *instance_len);

/* True when s is a job key of either shape (see above). */
bool wf_id_job_key_valid(const char *s);

/* True when the n bytes at s are a tenant id: 1 to 64 of [A-Za-z0-9._-]
 * (tenants end up in logs and row keys). */
bool wf_id_tenant_valid(const char *s, size_t n);

#endif /* WF_ID_H */
