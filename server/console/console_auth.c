/*
 * console_auth: the console's session cookie (HMAC-SHA256 of OpenSSL's
 * libcrypto over the session's fields, so that any replica holding the
 * same key reads it), the CSRF token derived from it, the trust of a
 * reverse proxy's identity headers (a shared secret and/or source
 * networks), the roles mapped from groups and the table of the role each
 * action needs.
 */
#include "console_auth.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "wf_config.h"
#include "wf_id.h"

/* ---- roles ------------------------------------------------------------------ */

static const char *const role_names[] = {"none", "viewer", "operator", "admin"};

wf_console__role
wf_console__role_parse(const char *name)
{
    for (int r = WF_CONSOLE_ROLE_VIEWER; r <= WF_CONSOLE_ROLE_ADMIN; r++)
        if (name != NULL && strcmp(name, role_names[r]) == 0)
            return (wf_console__role)r;
    return WF_CONSOLE_ROLE_NONE;
}

const char *
wf_console__role_name(wf_console__role r)
{
    return r >= WF_CONSOLE_ROLE_NONE && r <= WF_CONSOLE_ROLE_ADMIN ? role_names[r] : "none";
}

/* Every action of the console and the role it needs: the one place the
 * roles are decided. The POST dispatch refuses beyond it and the pages
 * show an action's button only to a role that may use it. */
static const struct {
    const char *path;
    wf_console__role role;
} action_roles[] = {
    {"/logout", WF_CONSOLE_ROLE_VIEWER},
    {"/instance/retry", WF_CONSOLE_ROLE_OPERATOR},
    {"/task/claim", WF_CONSOLE_ROLE_OPERATOR},
    {"/task/release", WF_CONSOLE_ROLE_OPERATOR},
    {"/task/complete", WF_CONSOLE_ROLE_OPERATOR},
    {"/batch/preview", WF_CONSOLE_ROLE_ADMIN},
    {"/batch/start", WF_CONSOLE_ROLE_ADMIN},
    {"/batch/cancel", WF_CONSOLE_ROLE_ADMIN},
    {"/instance/variables", WF_CONSOLE_ROLE_OPERATOR},
    {"/instance/suspend", WF_CONSOLE_ROLE_OPERATOR},
    {"/instance/resume", WF_CONSOLE_ROLE_OPERATOR},
    {"/instance/signal", WF_CONSOLE_ROLE_OPERATOR},
    {"/instance/modify", WF_CONSOLE_ROLE_ADMIN},
    {"/instance/cancel", WF_CONSOLE_ROLE_ADMIN},
    {"/instance/migrate", WF_CONSOLE_ROLE_ADMIN},
};

wf_console__role
wf_console__action_role(const char *path)
{
    for (size_t i = 0; i < sizeof action_roles / sizeof action_roles[0]; i++)
        if (path != NULL && strcmp(path, action_roles[i].path) == 0)
            return action_roles[i].role;
    return WF_CONSOLE_ROLE_ADMIN;
}

/* ---- the signed cookie ---------------------------------------------------------- */

static void
hex_of(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static int
hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* HMAC-SHA256 of prefix + data as 64 hex digits. */
static bool
mac_hex(const char *key, size_t klen, const char *prefix, const char *data, size_t dlen,
        char out[WF_CONSOLE_MAC_HEX + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t plen = strlen(prefix);
    unsigned char *msg = malloc(plen + dlen + 1);
    if (msg == NULL)
        return false;
    memcpy(msg, prefix, plen);
    memcpy(msg + plen, data, dlen);
    bool ok =
        HMAC(EVP_sha256(), key, (int)klen, msg, plen + dlen, md, &mdlen) != NULL && mdlen == 32;
    free(msg);
    if (ok)
        hex_of(md, 32, out);
    return ok;
}

static bool
no_break(const char *s)
{
    return strchr(s, '\n') == NULL;
}

char *
wf_console__session_sign(const char *key, size_t klen, const wf_console__session *s)
{
    if (!no_break(s->tenant) || !no_break(s->actor) || !no_break(s->key_id) ||
        !no_break(s->key_tenant) || !no_break(s->nonce) || s->source == '\n' || s->source == '\0')
        return NULL;
    char fields[512];
    int n = snprintf(fields, sizeof fields, "v1\n%lld\n%c\n%s\n%s\n%s\n%s\n%s\n%s",
                     (long long)s->expires_s, s->source, s->tenant, wf_console__role_name(s->role),
                     s->actor, s->key_id, s->key_tenant, s->nonce);
    if (n < 0 || (size_t)n >= sizeof fields)
        return NULL;
    char *out = malloc(2 * (size_t)n + 1 + WF_CONSOLE_MAC_HEX + 1);
    if (out == NULL)
        return NULL;
    hex_of((const unsigned char *)fields, (size_t)n, out);
    char mac[WF_CONSOLE_MAC_HEX + 1];
    if (!mac_hex(key, klen, "session\n", out, 2 * (size_t)n, mac)) {
        free(out);
        return NULL;
    }
    out[2 * n] = '.';
    memcpy(out + 2 * n + 1, mac, sizeof mac);
    return out;
}

/* Copies the next "\n"-ended field of *p into dst (cap bytes). */
static bool
next_field(char **p, char *dst, size_t cap, bool last)
{
    char *end = last ? *p + strlen(*p) : strchr(*p, '\n');
    if (end == NULL || (size_t)(end - *p) >= cap)
        return false;
    memcpy(dst, *p, (size_t)(end - *p));
    dst[end - *p] = '\0';
    *p = last ? end : end + 1;
    return true;
}

static bool
parse_fields(char *text, wf_console__session *out)
{
    char v[4], exp[24], src[2], role[16];
    char *p = text;
    if (!next_field(&p, v, sizeof v, false) || strcmp(v, "v1") != 0 ||
        !next_field(&p, exp, sizeof exp, false) || !next_field(&p, src, sizeof src, false) ||
        !next_field(&p, out->tenant, sizeof out->tenant, false) ||
        !next_field(&p, role, sizeof role, false) ||
        !next_field(&p, out->actor, sizeof out->actor, false) ||
        !next_field(&p, out->key_id, sizeof out->key_id, false) ||
        !next_field(&p, out->key_tenant, sizeof out->key_tenant, false) ||
        !next_field(&p, out->nonce, sizeof out->nonce, true))
        return false;
    char *e = NULL;
    out->expires_s = strtoll(exp, &e, 10);
    out->source = src[0];
    out->role = wf_console__role_parse(role);
    return e != exp && *e == '\0' && out->role != WF_CONSOLE_ROLE_NONE &&
           (out->source == WF_CONSOLE_SOURCE_OPEN || out->source == WF_CONSOLE_SOURCE_KEY ||
            out->source == WF_CONSOLE_SOURCE_PROXY) &&
           wf_id_tenant_valid(out->tenant, strlen(out->tenant));
}

bool
wf_console__session_verify(const char *key, size_t klen, const char *cookie, int64_t now_s,
                           wf_console__session *out)
{
    const char *dot = cookie != NULL ? strchr(cookie, '.') : NULL;
    if (dot == NULL || strlen(dot + 1) != WF_CONSOLE_MAC_HEX)
        return false;
    size_t hlen = (size_t)(dot - cookie);
    if (hlen == 0 || hlen % 2 != 0 || hlen > 1024)
        return false;
    char mac[WF_CONSOLE_MAC_HEX + 1];
    if (!mac_hex(key, klen, "session\n", cookie, hlen, mac) ||
        CRYPTO_memcmp(mac, dot + 1, WF_CONSOLE_MAC_HEX) != 0)
        return false;
    char text[513];
    for (size_t i = 0; i < hlen; i += 2) {
        int hi = hex_digit(cookie[i]), lo = hex_digit(cookie[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        text[i / 2] = (char)(hi << 4 | lo);
        if (text[i / 2] == '\0')
            return false;
    }
    text[hlen / 2] = '\0';
    wf_console__session s = {0};
    if (!parse_fields(text, &s) || s.expires_s <= now_s)
        return false;
    *out = s;
    return true;
}

void
wf_console__csrf_of(const char *key, size_t klen, const char *cookie,
                    char out[WF_CONSOLE_CSRF_HEX + 1])
{
    char mac[WF_CONSOLE_MAC_HEX + 1];
    if (cookie == NULL || !mac_hex(key, klen, "csrf\n", cookie, strlen(cookie), mac)) {
        out[0] = '\0';
        return;
    }
    memcpy(out, mac, WF_CONSOLE_CSRF_HEX);
    out[WF_CONSOLE_CSRF_HEX] = '\0';
}

/* ---- the trusted proxy ------------------------------------------------------------ */

bool
wf_console__sso_on(const wf_console__sso *s)
{
    return s->proxy_secret != NULL || s->nnets > 0;
}

static bool
parse_addr(const char *text, int *family, unsigned char addr[16])
{
    memset(addr, 0, 16);
    if (inet_pton(AF_INET, text, addr) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, text, addr) != 1)
        return false;
    /* An IPv4 address mapped into IPv6 (a dual-stack listener) is the IPv4 one. */
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(addr, mapped, 12) == 0) {
        memmove(addr, addr + 12, 4);
        memset(addr + 4, 0, 12);
        *family = AF_INET;
    } else {
        *family = AF_INET6;
    }
    return true;
}

static bool
net_holds(const wf_console__net *n, int family, const unsigned char addr[16])
{
    if (n->family != family)
        return false;
    int full = n->bits / 8, rest = n->bits % 8;
    if (memcmp(n->addr, addr, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char m = (unsigned char)(0xff << (8 - rest));
    return (n->addr[full] & m) == (addr[full] & m);
}

bool
wf_console__proxy_trusted(const wf_console__sso *s, const char *peer, const char *secret)
{
    if (!wf_console__sso_on(s))
        return false;
    if (s->proxy_secret != NULL &&
        (secret == NULL || !wf_secret_equal(secret, strlen(secret), s->proxy_secret)))
        return false;
    if (s->nnets == 0)
        return true;
    int family;
    unsigned char addr[16];
    if (peer == NULL || !parse_addr(peer, &family, addr))
        return false;
    for (size_t i = 0; i < s->nnets; i++)
        if (net_holds(&s->nets[i], family, addr))
            return true;
    return false;
}

/* Trims blanks on both sides of [b, e) in place; returns the start. */
static const char *
trimmed(const char *b, const char *e, size_t *len)
{
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *len = (size_t)(e - b);
    return b;
}

wf_console__role
wf_console__role_of_groups(const wf_console__sso *s, const char *groups, const char **tenant)
{
    wf_console__role best = WF_CONSOLE_ROLE_NONE;
    *tenant = "default";
    const char *p = groups != NULL ? groups : "";
    while (*p != '\0') {
        const char *comma = strchr(p, ',');
        const char *end = comma != NULL ? comma : p + strlen(p);
        size_t n;
        const char *g = trimmed(p, end, &n);
        for (size_t i = 0; i < s->nrules && n > 0; i++) {
            const wf_console__group_rule *r = &s->rules[i];
            if (strlen(r->group) == n && memcmp(r->group, g, n) == 0 && r->role > best) {
                best = r->role;
                *tenant = r->tenant != NULL ? r->tenant : "default";
            }
        }
        p = comma != NULL ? comma + 1 : end;
    }
    if (best == WF_CONSOLE_ROLE_NONE)
        best = s->default_role;
    return best;
}
