/*
 * rpc_probe: one grpc.health.v1 Check, as a client of a server, for
 * `workflowd --health-probe` (server/health_probe.c). The server binary
 * needs no client library for it.
 */
#ifndef WF_RPC_PROBE_H
#define WF_RPC_PROBE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct wf_rpc_probe {
    const char *target;      /* host:port */
    const char *roots_pem;   /* NULL = plaintext; else TLS trusting these roots */
    const char *server_name; /* TLS: the name to check instead of the target's; may be NULL */
    int timeout_ms;
} wf_rpc_probe;

/* Asks the server's overall health (service ""). Returns the call's grpc
 * status code; on 0 *serving tells whether it answered SERVING, otherwise
 * message receives the status message. */
int wf_rpc_probe_health(const wf_rpc_probe *p, bool *serving, char *message, size_t size);

#endif /* WF_RPC_PROBE_H */
