/*
 * health_probe: `workflowd --health-probe [--tls-name NAME]` (see
 * health_probe.c). Returns the process exit status.
 */
#ifndef WF_HEALTH_PROBE_H
#define WF_HEALTH_PROBE_H

int wf_health_probe(int argc, char **argv);

#endif /* WF_HEALTH_PROBE_H */
