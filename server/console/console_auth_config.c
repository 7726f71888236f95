/*
 * console_auth_config: the console's access settings read from the
 * environment (docs/operations.md, "Web console"): the session key, the
 * trusted proxy (secret, networks, header names) and the roles and
 * tenants of groups. Every wrong value stops the start with a message
 * naming the variable.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "console_auth.h"
#include "wf_id.h"

static const char *
env_get(char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = env; e != NULL && *e != NULL; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return (*e)[n + 1] != '\0' ? *e + n + 1 : NULL;
    return NULL;
}

static char *
env_or(char *const *env, const char *name, const char *dflt)
{
    const char *v = env_get(env, name);
    return strdup(v != NULL ? v : dflt);
}

/* The file's content without its trailing line breaks (a Secret mounted
 * as a file ends with one or not). */
static char *
read_secret_file(const char *path, const char *what, wf_error *err)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s: cannot read the file: %s", what,
                     strerror(errno));
        return NULL;
    }
    char buf[1025];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    if (n == 0 || strlen(buf) != n) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s: the file is empty or holds a NUL", what);
        return NULL;
    }
    return strdup(buf);
}

/* NAME or NAME_FILE (not both); *out NULL when neither is set. */
static bool
secret_setting(char *const *env, const char *name, char **out, wf_error *err)
{
    char file_name[64];
    snprintf(file_name, sizeof file_name, "%s_FILE", name);
    const char *v = env_get(env, name), *path = env_get(env, file_name);
    *out = NULL;
    if (v != NULL && path != NULL) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s and %s are both set: set one", name,
                     file_name);
        return false;
    }
    if (path != NULL)
        *out = read_secret_file(path, file_name, err);
    else if (v != NULL)
        *out = strdup(v);
    return path == NULL || *out != NULL;
}

static bool
session_key(char *const *env, wf_console__sso *s, wf_error *err)
{
    if (!secret_setting(env, "WF_CONSOLE_SESSION_KEY", &s->session_key, err))
        return false;
    if (s->session_key != NULL) {
        s->session_key_len = strlen(s->session_key);
        s->session_key_shared = true;
        if (s->session_key_len < WF_CONSOLE_SESSION_KEY_MIN) {
            wf_error_set(err, WF_E_INVALID_ARGUMENT,
                         "WF_CONSOLE_SESSION_KEY: at least %d characters (e.g. openssl rand "
                         "-hex 32)",
                         WF_CONSOLE_SESSION_KEY_MIN);
            return false;
        }
        return true;
    }
    /* None configured: a random key of this process, so that its sessions
     * hold on this replica only and end with it. */
    unsigned char b[32];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        wf_error_set(err, WF_E_INTERNAL, "no random bytes for the console's session key");
        return false;
    }
    s->session_key = malloc(sizeof b);
    if (s->session_key == NULL)
        return wf_error_nomem(err), false;
    memcpy(s->session_key, b, sizeof b);
    s->session_key_len = sizeof b;
    return true;
}

static bool
parse_net(const char *text, size_t len, wf_console__net *n)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *slash = strchr(buf, '/');
    if (slash != NULL)
        *slash = '\0';
    memset(n->addr, 0, sizeof n->addr);
    if (inet_pton(AF_INET, buf, n->addr) == 1)
        n->family = AF_INET;
    else if (inet_pton(AF_INET6, buf, n->addr) == 1)
        n->family = AF_INET6;
    else
        return false;
    int max = n->family == AF_INET ? 32 : 128;
    n->bits = max;
    if (slash != NULL) {
        char *e = NULL;
        long b = strtol(slash + 1, &e, 10);
        if (e == slash + 1 || *e != '\0' || b < 0 || b > max)
            return false;
        n->bits = (int)b;
    }
    return true;
}

/* Splits list at commas into trimmed items; fn gets each. */
typedef bool (*item_fn)(wf_console__sso *s, const char *item, size_t len, wf_error *err);

static bool
each_item(const char *list, wf_console__sso *s, item_fn fn, wf_error *err)
{
    const char *p = list;
    while (p != NULL && *p != '\0') {
        const char *comma = strchr(p, ',');
        const char *e = comma != NULL ? comma : p + strlen(p);
        while (p < e && *p == ' ')
            p++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        if (t > p && !fn(s, p, (size_t)(t - p), err))
            return false;
        p = comma != NULL ? comma + 1 : e;
    }
    return true;
}

static bool
add_net(wf_console__sso *s, const char *item, size_t len, wf_error *err)
{
    if (s->nnets == WF_CONSOLE_MAX_NETS || !parse_net(item, len, &s->nets[s->nnets])) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_CONSOLE_PROXY_ADDRS: \"%.*s\" is not an address or network "
                     "(ADDR or ADDR/BITS, at most %d)",
                     (int)(len > 64 ? 64 : len), item, WF_CONSOLE_MAX_NETS);
        return false;
    }
    s->nnets++;
    return true;
}

static wf_console__group_rule *
rule_of(wf_console__sso *s, const char *group, size_t len)
{
    for (size_t i = 0; i < s->nrules; i++)
        if (strlen(s->rules[i].group) == len && memcmp(s->rules[i].group, group, len) == 0)
            return &s->rules[i];
    return NULL;
}

static bool
add_role(wf_console__sso *s, const char *item, size_t len, wf_error *err)
{
    const char *eq = memchr(item, '=', len);
    char role[16] = "";
    if (eq != NULL && (size_t)(item + len - eq - 1) < sizeof role)
        memcpy(role, eq + 1, (size_t)(item + len - eq - 1));
    wf_console__role r = wf_console__role_parse(role);
    if (eq == NULL || eq == item || r == WF_CONSOLE_ROLE_NONE ||
        s->nrules == WF_CONSOLE_MAX_GROUPS || rule_of(s, item, (size_t)(eq - item)) != NULL) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_CONSOLE_ROLE_MAP: \"%.*s\" is not GROUP=viewer|operator|admin (each "
                     "group once, at most %d)",
                     (int)(len > 64 ? 64 : len), item, WF_CONSOLE_MAX_GROUPS);
        return false;
    }
    wf_console__group_rule *g = &s->rules[s->nrules++];
    g->group = strndup(item, (size_t)(eq - item));
    g->role = r;
    return g->group != NULL || (wf_error_nomem(err), false);
}

static bool
add_tenant(wf_console__sso *s, const char *item, size_t len, wf_error *err)
{
    const char *eq = memchr(item, '=', len);
    wf_console__group_rule *g = eq != NULL ? rule_of(s, item, (size_t)(eq - item)) : NULL;
    size_t tlen = eq != NULL ? (size_t)(item + len - eq - 1) : 0;
    if (g == NULL || g->tenant != NULL || !wf_id_tenant_valid(eq + 1, tlen)) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_CONSOLE_GROUP_TENANTS: \"%.*s\" is not GROUP=TENANT of a group of "
                     "WF_CONSOLE_ROLE_MAP (each once)",
                     (int)(len > 64 ? 64 : len), item);
        return false;
    }
    g->tenant = strndup(eq + 1, tlen);
    return g->tenant != NULL || (wf_error_nomem(err), false);
}

static bool
role_setting(char *const *env, const char *name, const char *dflt, wf_console__role *out,
             wf_error *err)
{
    const char *v = env_get(env, name);
    if (v == NULL)
        v = dflt;
    *out = wf_console__role_parse(v);
    if (*out == WF_CONSOLE_ROLE_NONE && strcmp(v, "none") != 0) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s: none, viewer, operator or admin", name);
        return false;
    }
    return true;
}

static bool
proxy_settings(char *const *env, wf_console__sso *s, wf_error *err)
{
    if (!secret_setting(env, "WF_CONSOLE_PROXY_SECRET", &s->proxy_secret, err))
        return false;
    s->secret_header = env_or(env, "WF_CONSOLE_PROXY_SECRET_HEADER", "X-Console-Proxy-Secret");
    s->user_header = env_or(env, "WF_CONSOLE_USER_HEADER", "X-Forwarded-User");
    s->email_header = env_or(env, "WF_CONSOLE_EMAIL_HEADER", "X-Forwarded-Email");
    s->groups_header = env_or(env, "WF_CONSOLE_GROUPS_HEADER", "X-Forwarded-Groups");
    if (s->secret_header == NULL || s->user_header == NULL || s->email_header == NULL ||
        s->groups_header == NULL)
        return wf_error_nomem(err), false;
    return each_item(env_get(env, "WF_CONSOLE_PROXY_ADDRS"), s, add_net, err) &&
           each_item(env_get(env, "WF_CONSOLE_ROLE_MAP"), s, add_role, err) &&
           each_item(env_get(env, "WF_CONSOLE_GROUP_TENANTS"), s, add_tenant, err) &&
           role_setting(env, "WF_CONSOLE_DEFAULT_ROLE", "none", &s->default_role, err);
}

bool
wf_console__sso_load(char *const *env, wf_console__sso *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    if (session_key(env, out, err) && proxy_settings(env, out, err) &&
        role_setting(env, "WF_CONSOLE_KEY_ROLE", "admin", &out->key_role, err)) {
        if (out->key_role != WF_CONSOLE_ROLE_NONE)
            return true;
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "WF_CONSOLE_KEY_ROLE: viewer, operator or admin");
    }
    wf_console__sso_free(out);
    return false;
}

void
wf_console__sso_free(wf_console__sso *s)
{
    free(s->session_key);
    free(s->proxy_secret);
    free(s->secret_header);
    free(s->user_header);
    free(s->email_header);
    free(s->groups_header);
    for (size_t i = 0; i < s->nrules; i++) {
        free(s->rules[i].group);
        free(s->rules[i].tenant);
    }
    memset(s, 0, sizeof *s);
}
