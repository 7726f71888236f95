/*
 * directory: the open and static user/group directories.
 *
 * Owns a private deep copy of WF_USERS and WF_GROUP_<id> so it does not
 * depend on the configuration's lifetime. Lookups are linear scans: static
 * directories are small (they come from environment variables), and the
 * structure is never written after construction, so no lock is needed.
 */
#include "directory.h"

#include <stdlib.h>
#include <string.h>

typedef struct dir_group {
    char *id;
    char **members;
    size_t n_members;
} dir_group;

struct wf_directory {
    bool open;
    char **users; /* WF_USERS */
    size_t n_users;
    dir_group *groups; /* WF_GROUP_<id> */
    size_t n_groups;
};

static void
free_strings(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

/* Copies the non-empty strings of src; NULL when out of memory. */
static char **
copy_strings(char *const *src, size_t n, size_t *out_n)
{
    char **v = calloc(n > 0 ? n : 1, sizeof *v);
    size_t k = 0;
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == NULL || src[i][0] == '\0')
            continue;
        v[k] = strdup(src[i]);
        if (v[k] == NULL) {
            free_strings(v, k);
            return NULL;
        }
        k++;
    }
    *out_n = k;
    return v;
}

void
wf_directory_free(wf_directory *d)
{
    if (d == NULL)
        return;
    free_strings(d->users, d->n_users);
    for (size_t i = 0; i < d->n_groups; i++) {
        free(d->groups[i].id);
        free_strings(d->groups[i].members, d->groups[i].n_members);
    }
    free(d->groups);
    free(d);
}

wf_directory *
wf_directory_new_open(void)
{
    wf_directory *d = calloc(1, sizeof *d);
    if (d != NULL)
        d->open = true;
    return d;
}

wf_directory *
wf_directory_new(const wf_config *cfg, wf_error *err)
{
    wf_directory *d = calloc(1, sizeof *d);
    if (d == NULL)
        goto nomem;
    /* WF_USERS="" alone keeps the directory open, as in the seed. */
    d->open = cfg->nusers == 0 && cfg->ngroups == 0;
    d->users = copy_strings(cfg->users, cfg->nusers, &d->n_users);
    d->groups = calloc(cfg->ngroups > 0 ? cfg->ngroups : 1, sizeof *d->groups);
    if (d->users == NULL || d->groups == NULL)
        goto nomem;
    for (size_t i = 0; i < cfg->ngroups; i++) {
        dir_group *g = &d->groups[d->n_groups++];
        g->id = strdup(cfg->groups[i].id);
        g->members = copy_strings(cfg->groups[i].members, cfg->groups[i].nmembers, &g->n_members);
        if (g->id == NULL || g->members == NULL)
            goto nomem;
    }
    return d;
nomem:
    wf_directory_free(d);
    wf_error_nomem(err);
    return NULL;
}

bool
wf_directory_is_open(const wf_directory *d)
{
    return d == NULL || d->open;
}

static bool
listed(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static const dir_group *
find_group(const wf_directory *d, const char *group)
{
    for (size_t i = 0; i < d->n_groups; i++)
        if (strcmp(d->groups[i].id, group) == 0)
            return &d->groups[i];
    return NULL;
}

bool
wf_directory_has_user(const wf_directory *d, const char *user)
{
    if (wf_directory_is_open(d))
        return true;
    if (listed(d->users, d->n_users, user))
        return true;
    for (size_t i = 0; i < d->n_groups; i++)
        if (listed(d->groups[i].members, d->groups[i].n_members, user))
            return true;
    return false;
}

bool
wf_directory_has_group(const wf_directory *d, const char *group)
{
    if (wf_directory_is_open(d))
        return true;
    const dir_group *g = find_group(d, group);
    return g != NULL && g->n_members > 0;
}

bool
wf_directory_is_member(const wf_directory *d, const char *user, const char *group)
{
    if (wf_directory_is_open(d))
        return false;
    const dir_group *g = find_group(d, group);
    return g != NULL && listed(g->members, g->n_members, user);
}

bool
wf_directory_user_groups(const wf_directory *d, const char *user, wf_arena *arena,
                         const char ***groups, size_t *n)
{
    *groups = NULL;
    *n = 0;
    if (wf_directory_is_open(d))
        return true;
    const char **v = wf_arena_calloc(arena, d->n_groups + 1, sizeof *v);
    if (v == NULL)
        return false;
    for (size_t i = 0; i < d->n_groups; i++)
        if (listed(d->groups[i].members, d->groups[i].n_members, user))
            v[(*n)++] = d->groups[i].id;
    *groups = v;
    return true;
}
