/*
 * console_auth.h: who may use the console and how far (prefix
 * wf_console__): the signed session cookie, the trust of a reverse proxy's
 * identity headers, the roles mapped from the person's groups, and the
 * one table of the role each action needs. Pure functions over their
 * inputs (no server, no clock of their own), so that they are tested
 * without one. Not seen outside server/console/.
 */
#ifndef WF_CONSOLE_AUTH_H
#define WF_CONSOLE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>

#include "wf_error.h"

/* Ordered: a role may do what the ones below it may. NONE may do nothing,
 * not even look. */
typedef enum wf_console__role {
    WF_CONSOLE_ROLE_NONE = 0,
    WF_CONSOLE_ROLE_VIEWER,   /* reads every page */
    WF_CONSOLE_ROLE_OPERATOR, /* tasks, retries, variables, suspend and resume, signals */
    WF_CONSOLE_ROLE_ADMIN,    /* cancel, modify, migrate, batch operations */
} wf_console__role;

/* "viewer", "operator", "admin" (NONE for anything else). */
wf_console__role wf_console__role_parse(const char *name);
const char *wf_console__role_name(wf_console__role r);

/* The role an action (the path of its POST) needs. An action without an
 * entry in the table needs ADMIN. */
wf_console__role wf_console__action_role(const char *path);

/* ---- sessions: a signed cookie ------------------------------------------ */

#define WF_CONSOLE_SESSION_KEY_MIN 32 /* bytes of WF_CONSOLE_SESSION_KEY at least */
#define WF_CONSOLE_MAC_HEX 64         /* HMAC-SHA256 in hex */
#define WF_CONSOLE_CSRF_HEX 32

/* How a session was opened. */
typedef enum wf_console__source {
    WF_CONSOLE_SOURCE_OPEN = 'o',  /* development without keys: an actor only */
    WF_CONSOLE_SOURCE_KEY = 'k',   /* an API key at /login */
    WF_CONSOLE_SOURCE_PROXY = 'p', /* a trusted proxy's identity headers */
} wf_console__source;

/* What the cookie carries: the whole session, no server keeps it. */
typedef struct wf_console__session {
    int64_t expires_s; /* Unix seconds */
    char source;       /* wf_console__source */
    char tenant[65];
    wf_console__role role;
    char actor[129]; /* the person: the actor recorded for every action */
    char key_id[9];  /* SOURCE_KEY: the key's id and tenant binding */
    char key_tenant[65];
    char nonce[33]; /* random per sign-in: two sessions never share a CSRF token */
} wf_console__session;

/* The cookie value of s, signed with key (HMAC-SHA256): "<hex of the
 * fields>.<hex of the MAC>". Returns a malloc'd string, NULL when a field
 * holds a line break or memory is short. */
char *wf_console__session_sign(const char *key, size_t klen, const wf_console__session *s);

/* Fills *out from a cookie value when its MAC is key's (compared in
 * constant time), its fields are well formed and it has not expired at
 * now_s; false otherwise. */
bool wf_console__session_verify(const char *key, size_t klen, const char *cookie, int64_t now_s,
                                wf_console__session *out);

/* The session's CSRF token: the first WF_CONSOLE_CSRF_HEX hex digits of
 * HMAC(key, "csrf" + cookie). Every replica with the same key derives the
 * same token from the same cookie. */
void wf_console__csrf_of(const char *key, size_t klen, const char *cookie,
                         char out[WF_CONSOLE_CSRF_HEX + 1]);

/* ---- the trusted proxy --------------------------------------------------- */

#define WF_CONSOLE_MAX_NETS 32
#define WF_CONSOLE_MAX_GROUPS 64

typedef struct wf_console__net {
    int family; /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    int bits;
} wf_console__net;

typedef struct wf_console__group_rule {
    char *group;
    wf_console__role role;
    char *tenant; /* NULL: WF_CONSOLE_GROUP_TENANTS names none, "default" */
} wf_console__group_rule;

/* The console's access settings (docs/operations.md, "Web console"). */
typedef struct wf_console__sso {
    char *session_key; /* WF_CONSOLE_SESSION_KEY(_FILE); NULL: a random one of this process */
    size_t session_key_len;
    bool session_key_shared; /* configured, not random: sessions move between replicas */
    char *proxy_secret;      /* WF_CONSOLE_PROXY_SECRET(_FILE); NULL: not required */
    char *secret_header;     /* WF_CONSOLE_PROXY_SECRET_HEADER */
    wf_console__net nets[WF_CONSOLE_MAX_NETS]; /* WF_CONSOLE_PROXY_ADDRS */
    size_t nnets;
    char *user_header;                                   /* WF_CONSOLE_USER_HEADER */
    char *email_header;                                  /* WF_CONSOLE_EMAIL_HEADER */
    char *groups_header;                                 /* WF_CONSOLE_GROUPS_HEADER */
    wf_console__group_rule rules[WF_CONSOLE_MAX_GROUPS]; /* WF_CONSOLE_ROLE_MAP */
    size_t nrules;
    wf_console__role default_role; /* WF_CONSOLE_DEFAULT_ROLE: signed in, no group mapped */
    wf_console__role key_role;     /* WF_CONSOLE_KEY_ROLE: an API-key login */
} wf_console__sso;

/* Reads the settings from a NULL-terminated "NAME=value" environment.
 * False and err naming the variable when one is wrong. */
bool wf_console__sso_load(char *const *env, wf_console__sso *out, wf_error *err);
void wf_console__sso_free(wf_console__sso *s);

/* True when proxy identity headers are read at all: a secret or an
 * address list is configured. */
bool wf_console__sso_on(const wf_console__sso *s);

/* True when a request from peer (a numeric address, "" unknown) carrying
 * secret (the secret header's value, NULL when absent) comes from the
 * trusted proxy: every configured condition holds (the secret, compared in
 * constant time; the address, in one of the networks). False when nothing
 * is configured. */
bool wf_console__proxy_trusted(const wf_console__sso *s, const char *peer, const char *secret);

/* The role and tenant of a person in groups (the groups header: names
 * separated by commas, blanks around them ignored): the highest role any
 * group maps to, with the tenant of the first group giving it; the
 * default role (tenant "default") when none maps. *tenant points into s
 * or is "default". */
wf_console__role wf_console__role_of_groups(const wf_console__sso *s, const char *groups,
                                            const char **tenant);

#endif /* WF_CONSOLE_AUTH_H */
