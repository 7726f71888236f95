/*
 * health_probe: `workflowd --health-probe`, for Docker's HEALTHCHECK and any
 * runner without a native gRPC probe.
 *
 * Asks the grpc.health.v1 service of the server configured in this same
 * environment (WF_ADDR, WF_TLS_CERT) whether it is SERVING. A wildcard host
 * (0.0.0.0, [::], empty) is probed on 127.0.0.1. With TLS the probe trusts
 * WF_TLS_CERT itself, which fits a self-signed certificate naming
 * 127.0.0.1; `--tls-name NAME` checks another name instead.
 *
 * Exit status: 0 SERVING, 1 anything else (NOT_SERVING, unreachable, no
 * answer within the timeout), 2 for a usage error.
 */
#include "health_probe.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_probe.h"
#include "rpc_status.h"

#define PROBE_TIMEOUT_MS 2000

/* "0.0.0.0:50051" -> "127.0.0.1:50051"; other addresses as they are. */
static void
probe_target(const char *addr, char *out, size_t size)
{
    static const char *const wildcards[] = {"0.0.0.0:", "[::]:", ":", "*:"};
    for (size_t i = 0; i < sizeof wildcards / sizeof wildcards[0]; i++) {
        size_t n = strlen(wildcards[i]);
        if (strncmp(addr, wildcards[i], n) == 0) {
            snprintf(out, size, "127.0.0.1:%s", addr + n);
            return;
        }
    }
    snprintf(out, size, "%s", addr);
}

/* The whole file as a string, or NULL. */
static char *
read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf != NULL)
        buf[len] = '\0';
    return buf;
}

int
wf_health_probe(int argc, char **argv)
{
    const char *tls_name = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--tls-name") == 0 && i + 1 < argc)
            tls_name = argv[++i];
        else {
            fprintf(stderr, "usage: workflowd --health-probe [--tls-name NAME]\n");
            return 2;
        }
    }

    const char *addr = getenv("WF_ADDR");
    char target[512];
    probe_target(addr != NULL && addr[0] != '\0' ? addr : "0.0.0.0:50051", target, sizeof target);

    wf_rpc_probe o = {.target = target, .timeout_ms = PROBE_TIMEOUT_MS};
    char *roots = NULL;
    const char *cert = getenv("WF_TLS_CERT");
    if (cert != NULL && cert[0] != '\0') {
        roots = read_file(cert);
        if (roots == NULL) {
            fprintf(stderr, "health probe: cannot read WF_TLS_CERT %s\n", cert);
            return 1;
        }
        o.roots_pem = roots;
        o.server_name = tls_name;
    }

    bool serving = false;
    char message[512];
    int code = wf_rpc_probe_health(&o, &serving, message, sizeof message);
    if (code == 0)
        printf("%s\n", serving ? "SERVING" : "NOT_SERVING");
    else
        printf("%s: %s\n", wf_rpc_code_name(code), message);
    int rc = code == 0 && serving ? 0 : 1;
    free(roots);
    return rc;
}
