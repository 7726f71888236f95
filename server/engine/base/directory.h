/*
 * directory: who exists and who belongs to which group (docs/behaviour.md,
 * "Directory and permissions"; the TaskFlow seed's IDirectory).
 *
 * Two kinds, chosen once from the configuration:
 *   - open (neither WF_USERS nor any WF_GROUP_<id> is set): every user and
 *     group id is accepted and the directory knows no memberships; a
 *     user's groups then come only from a trusted x-actor-groups header;
 *   - static: a user is known when listed in WF_USERS or a member of some
 *     group; a group is known when WF_GROUP_<id> lists at least one member.
 *
 * A directory is immutable after wf_directory_new and shared by every
 * thread without locking.
 */
#ifndef WF_DIRECTORY_H
#define WF_DIRECTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "wf_arena.h"
#include "wf_config.h"
#include "wf_error.h"

typedef struct wf_directory wf_directory;

/* Builds the directory cfg describes, copying what it needs (cfg may be
 * freed afterwards). NULL and err when out of memory. Release with
 * wf_directory_free. */
wf_directory *wf_directory_new(const wf_config *cfg, wf_error *err);

/* An open directory over nothing (tests and tools). NULL when out of
 * memory. */
wf_directory *wf_directory_new_open(void);

/* NULL-safe. */
void wf_directory_free(wf_directory *d);

/* True for an open directory (no WF_USERS, no WF_GROUP_<id>). */
bool wf_directory_is_open(const wf_directory *d);

/* True when user may be assigned work: always in an open directory. */
bool wf_directory_has_user(const wf_directory *d, const char *user);

/* True when group has at least one member (always in an open directory). */
bool wf_directory_has_group(const wf_directory *d, const char *group);

/* True when the static directory lists user in group; always false in an
 * open directory (it knows no memberships). */
bool wf_directory_is_member(const wf_directory *d, const char *user, const char *group);

/* The groups the static directory lists user in, as an arena array of
 * borrowed strings (valid as long as d). *n is 0 for an open directory.
 * Returns false when out of memory. */
bool wf_directory_user_groups(const wf_directory *d, const char *user, wf_arena *arena,
                              const char ***groups, size_t *n);

#endif /* WF_DIRECTORY_H */
