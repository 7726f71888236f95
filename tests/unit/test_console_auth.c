/*
 * Unit tests of the console's access rules (server/console/console_auth.c
 * and console_auth_config.c), without a server: the signed session cookie
 * (a round trip, any change refused, another key refused, the expiry, the
 * CSRF token shared by replicas of one key), the trust of the proxy's
 * identity headers (secret, networks, both), the roles and tenants of
 * groups, the table of the role each action needs, and the settings'
 * refusals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console_auth.h"
#include "test_support.h"

static const char KEY[] = "0123456789abcdef0123456789abcdef-a";
static const char OTHER[] = "0123456789abcdef0123456789abcdef-b";

static wf_console__session
person(void)
{
    wf_console__session s = {
        .expires_s = 2000, .source = WF_CONSOLE_SOURCE_PROXY, .role = WF_CONSOLE_ROLE_OPERATOR};
    strcpy(s.tenant, "acme");
    strcpy(s.actor, "<b>ann</b>@example.com");
    strcpy(s.nonce, "00112233445566778899aabbccddeeff");
    return s;
}

WF_TEST(test_cookie_round_trip)
{
    wf_console__session s = person(), got;
    char *c = wf_console__session_sign(KEY, strlen(KEY), &s);
    ck_assert_ptr_nonnull(c);
    ck_assert(strchr(c, ';') == NULL && strchr(c, ' ') == NULL && strchr(c, '<') == NULL);
    ck_assert(wf_console__session_verify(KEY, strlen(KEY), c, 1999, &got));
    ck_assert_str_eq(got.actor, s.actor);
    ck_assert_str_eq(got.tenant, "acme");
    ck_assert_int_eq(got.role, WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(got.source, WF_CONSOLE_SOURCE_PROXY);
    ck_assert_int_eq(got.expires_s, 2000);
    /* Expired at its expiry; another replica's key is not this one. */
    ck_assert(!wf_console__session_verify(KEY, strlen(KEY), c, 2000, &got));
    ck_assert(!wf_console__session_verify(OTHER, strlen(OTHER), c, 1999, &got));
    free(c);
}
END_TEST

/* Any changed character, in the fields or in the MAC, is refused; so is
 * a cookie cut short or without its MAC. */
WF_TEST(test_cookie_tampered)
{
    wf_console__session s = person(), got;
    char *c = wf_console__session_sign(KEY, strlen(KEY), &s);
    ck_assert_ptr_nonnull(c);
    size_t n = strlen(c);
    for (size_t i = 0; i < n; i++) {
        if (c[i] == '.')
            continue;
        char was = c[i];
        c[i] = was == '0' ? '1' : '0';
        ck_assert_msg(!wf_console__session_verify(KEY, strlen(KEY), c, 1, &got), "changed at %zu",
                      i);
        c[i] = was;
    }
    ck_assert(wf_console__session_verify(KEY, strlen(KEY), c, 1, &got));
    c[n - 1] = '\0';
    ck_assert(!wf_console__session_verify(KEY, strlen(KEY), c, 1, &got));
    *strchr(c, '.') = '\0';
    ck_assert(!wf_console__session_verify(KEY, strlen(KEY), c, 1, &got));
    ck_assert(!wf_console__session_verify(KEY, strlen(KEY), "", 1, &got));
    ck_assert(!wf_console__session_verify(KEY, strlen(KEY), NULL, 1, &got));
    free(c);
}
END_TEST

/* A role raised in the fields and signed with another key is refused; a
 * field with a line break (which would add a field) is never signed. */
WF_TEST(test_cookie_forged)
{
    wf_console__session s = person(), got;
    s.role = WF_CONSOLE_ROLE_ADMIN;
    char *forged = wf_console__session_sign(OTHER, strlen(OTHER), &s);
    ck_assert(!wf_console__session_verify(KEY, strlen(KEY), forged, 1, &got));
    free(forged);
    strcpy(s.actor, "ann\nadmin");
    ck_assert_ptr_null(wf_console__session_sign(KEY, strlen(KEY), &s));
}
END_TEST

/* Two replicas of one key derive the same token from one cookie; two
 * sign-ins of one person (another nonce) have tokens of their own. */
WF_TEST(test_csrf_of_session)
{
    wf_console__session s = person();
    char *c1 = wf_console__session_sign(KEY, strlen(KEY), &s);
    strcpy(s.nonce, "ffeeddccbbaa99887766554433221100");
    char *c2 = wf_console__session_sign(KEY, strlen(KEY), &s);
    char a[WF_CONSOLE_CSRF_HEX + 1], b[WF_CONSOLE_CSRF_HEX + 1], d[WF_CONSOLE_CSRF_HEX + 1];
    wf_console__csrf_of(KEY, strlen(KEY), c1, a);
    wf_console__csrf_of(KEY, strlen(KEY), c1, b);
    ck_assert_int_eq(strlen(a), WF_CONSOLE_CSRF_HEX);
    ck_assert_str_eq(a, b);
    wf_console__csrf_of(KEY, strlen(KEY), c2, d);
    ck_assert_str_ne(a, d);
    wf_console__csrf_of(OTHER, strlen(OTHER), c1, d);
    ck_assert_str_ne(a, d);
    free(c1);
    free(c2);
}
END_TEST

static wf_console__sso
load(char **env)
{
    wf_console__sso s;
    wf_error err = {0};
    ck_assert_msg(wf_console__sso_load(env, &s, &err), "%s", err.msg);
    return s;
}

static void
refused(char **env, const char *names)
{
    wf_console__sso s;
    wf_error err = {0};
    ck_assert(!wf_console__sso_load(env, &s, &err));
    ck_assert_msg(strstr(err.msg, names) != NULL, "%s", err.msg);
}

WF_TEST(test_trust_secret_only)
{
    char *env[] = {"WF_CONSOLE_PROXY_SECRET=s3cret-of-the-proxy", NULL};
    wf_console__sso s = load(env);
    ck_assert(wf_console__sso_on(&s));
    ck_assert(!s.session_key_shared);
    ck_assert(wf_console__proxy_trusted(&s, "10.1.2.3", "s3cret-of-the-proxy"));
    ck_assert(!wf_console__proxy_trusted(&s, "10.1.2.3", "s3cret-of-the-prox"));
    ck_assert(!wf_console__proxy_trusted(&s, "10.1.2.3", "s3cret-of-the-proxy!"));
    ck_assert(!wf_console__proxy_trusted(&s, "10.1.2.3", ""));
    ck_assert(!wf_console__proxy_trusted(&s, "10.1.2.3", NULL));
    ck_assert_str_eq(s.secret_header, "X-Console-Proxy-Secret");
    ck_assert_str_eq(s.user_header, "X-Forwarded-User");
    ck_assert_str_eq(s.email_header, "X-Forwarded-Email");
    ck_assert_str_eq(s.groups_header, "X-Forwarded-Groups");
    wf_console__sso_free(&s);
}
END_TEST

WF_TEST(test_trust_addresses_only)
{
    char *env[] = {"WF_CONSOLE_PROXY_ADDRS=127.0.0.1, 10.8.0.0/16,fd00::/8", NULL};
    wf_console__sso s = load(env);
    ck_assert(wf_console__proxy_trusted(&s, "127.0.0.1", NULL));
    ck_assert(wf_console__proxy_trusted(&s, "::ffff:127.0.0.1", NULL));
    ck_assert(wf_console__proxy_trusted(&s, "10.8.255.1", NULL));
    ck_assert(wf_console__proxy_trusted(&s, "fd12::1", NULL));
    ck_assert(!wf_console__proxy_trusted(&s, "127.0.0.2", NULL));
    ck_assert(!wf_console__proxy_trusted(&s, "10.9.0.1", NULL));
    ck_assert(!wf_console__proxy_trusted(&s, "fe80::1", NULL));
    ck_assert(!wf_console__proxy_trusted(&s, "", NULL));
    wf_console__sso_free(&s);
}
END_TEST

/* Both configured: both must hold. Neither: no header is ever trusted. */
WF_TEST(test_trust_both_or_none)
{
    char *env[] = {"WF_CONSOLE_PROXY_ADDRS=127.0.0.1", "WF_CONSOLE_PROXY_SECRET=xyz", NULL};
    wf_console__sso s = load(env);
    ck_assert(wf_console__proxy_trusted(&s, "127.0.0.1", "xyz"));
    ck_assert(!wf_console__proxy_trusted(&s, "127.0.0.1", "xy"));
    ck_assert(!wf_console__proxy_trusted(&s, "127.0.0.1", NULL));
    ck_assert(!wf_console__proxy_trusted(&s, "10.0.0.1", "xyz"));
    wf_console__sso_free(&s);
    char *none[] = {NULL};
    s = load(none);
    ck_assert(!wf_console__sso_on(&s));
    ck_assert(!wf_console__proxy_trusted(&s, "127.0.0.1", ""));
    ck_assert_int_eq(s.key_role, WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(s.default_role, WF_CONSOLE_ROLE_NONE);
    wf_console__sso_free(&s);
}
END_TEST

WF_TEST(test_roles_of_groups)
{
    char *env[] = {"WF_CONSOLE_PROXY_ADDRS=127.0.0.1",
                   "WF_CONSOLE_ROLE_MAP=readers=viewer, ops-team=operator,platform=admin",
                   "WF_CONSOLE_GROUP_TENANTS=ops-team=acme,platform=acme", NULL};
    wf_console__sso s = load(env);
    const char *t;
    ck_assert_int_eq(wf_console__role_of_groups(&s, "readers", &t), WF_CONSOLE_ROLE_VIEWER);
    ck_assert_str_eq(t, "default");
    ck_assert_int_eq(wf_console__role_of_groups(&s, "x, ops-team ,readers", &t),
                     WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_str_eq(t, "acme");
    ck_assert_int_eq(wf_console__role_of_groups(&s, "ops-team,platform", &t),
                     WF_CONSOLE_ROLE_ADMIN);
    /* A name is matched whole: no prefix, no case folding. */
    ck_assert_int_eq(wf_console__role_of_groups(&s, "platform-x,Platform,ops", &t),
                     WF_CONSOLE_ROLE_NONE);
    ck_assert_int_eq(wf_console__role_of_groups(&s, NULL, &t), WF_CONSOLE_ROLE_NONE);
    ck_assert_int_eq(wf_console__role_of_groups(&s, "", &t), WF_CONSOLE_ROLE_NONE);
    wf_console__sso_free(&s);
    char *dflt[] = {"WF_CONSOLE_PROXY_ADDRS=127.0.0.1", "WF_CONSOLE_DEFAULT_ROLE=viewer", NULL};
    s = load(dflt);
    ck_assert_int_eq(wf_console__role_of_groups(&s, "anyone", &t), WF_CONSOLE_ROLE_VIEWER);
    ck_assert_str_eq(t, "default");
    wf_console__sso_free(&s);
}
END_TEST

/* The one table: what each action of the console needs; an action
 * without an entry needs admin. */
WF_TEST(test_action_roles)
{
    ck_assert_int_eq(wf_console__action_role("/logout"), WF_CONSOLE_ROLE_VIEWER);
    ck_assert_int_eq(wf_console__action_role("/instance/retry"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__action_role("/task/claim"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__action_role("/task/release"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__action_role("/task/complete"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__action_role("/batch/preview"), WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(wf_console__action_role("/batch/start"), WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(wf_console__action_role("/batch/cancel"), WF_CONSOLE_ROLE_ADMIN);
    /* The repairs whose confirm page cannot be undone or moves work: an
     * admin's; the others an operator's. */
    ck_assert_int_eq(wf_console__action_role("/instance/cancel"), WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(wf_console__action_role("/instance/modify"), WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(wf_console__action_role("/instance/migrate"), WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(wf_console__action_role("/instance/signal"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__action_role("/instance/suspend"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__action_role("/instance/anything-new"), WF_CONSOLE_ROLE_ADMIN);
    ck_assert_int_eq(wf_console__role_parse("operator"), WF_CONSOLE_ROLE_OPERATOR);
    ck_assert_int_eq(wf_console__role_parse("Admin"), WF_CONSOLE_ROLE_NONE);
}
END_TEST

WF_TEST(test_settings_refused)
{
    char *short_key[] = {"WF_CONSOLE_SESSION_KEY=too-short", NULL};
    refused(short_key, "WF_CONSOLE_SESSION_KEY");
    char *both[] = {"WF_CONSOLE_PROXY_SECRET=a", "WF_CONSOLE_PROXY_SECRET_FILE=/nonexistent", NULL};
    refused(both, "both set");
    char *no_file[] = {"WF_CONSOLE_PROXY_SECRET_FILE=/nonexistent/secret", NULL};
    refused(no_file, "WF_CONSOLE_PROXY_SECRET_FILE");
    char *addr[] = {"WF_CONSOLE_PROXY_ADDRS=10.0.0.0/33", NULL};
    refused(addr, "WF_CONSOLE_PROXY_ADDRS");
    char *host[] = {"WF_CONSOLE_PROXY_ADDRS=proxy.example", NULL};
    refused(host, "WF_CONSOLE_PROXY_ADDRS");
    char *role[] = {"WF_CONSOLE_ROLE_MAP=ops=root", NULL};
    refused(role, "WF_CONSOLE_ROLE_MAP");
    char *twice[] = {"WF_CONSOLE_ROLE_MAP=ops=viewer,ops=admin", NULL};
    refused(twice, "WF_CONSOLE_ROLE_MAP");
    char *tenant[] = {"WF_CONSOLE_ROLE_MAP=ops=viewer", "WF_CONSOLE_GROUP_TENANTS=dev=acme", NULL};
    refused(tenant, "WF_CONSOLE_GROUP_TENANTS");
    char *bad_tenant[] = {"WF_CONSOLE_ROLE_MAP=ops=viewer", "WF_CONSOLE_GROUP_TENANTS=ops=a b",
                          NULL};
    refused(bad_tenant, "WF_CONSOLE_GROUP_TENANTS");
    char *key_role[] = {"WF_CONSOLE_KEY_ROLE=none", NULL};
    refused(key_role, "WF_CONSOLE_KEY_ROLE");
    char *dflt[] = {"WF_CONSOLE_DEFAULT_ROLE=root", NULL};
    refused(dflt, "WF_CONSOLE_DEFAULT_ROLE");
}
END_TEST

/* A configured key is shared (sessions move between replicas); read from
 * a file without its trailing line break. */
WF_TEST(test_session_key_file)
{
    const char *tmp = getenv("TMPDIR");
    char path[256];
    snprintf(path, sizeof path, "%s/wf-console-key-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, KEY, strlen(KEY)), (ssize_t)strlen(KEY));
    ck_assert_int_eq(write(fd, "\n", 1), 1);
    close(fd);
    char var[320];
    snprintf(var, sizeof var, "WF_CONSOLE_SESSION_KEY_FILE=%s", path);
    char *env[] = {var, NULL};
    wf_console__sso s = load(env);
    unlink(path);
    ck_assert(s.session_key_shared);
    ck_assert_int_eq(s.session_key_len, strlen(KEY));
    ck_assert(memcmp(s.session_key, KEY, strlen(KEY)) == 0);
    wf_console__sso_free(&s);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("console_auth", "access", NULL, NULL, 0));
}
