/*
 * wfbench: a closed-loop (or rate-limited) load generator for workflowd on
 * the C client library. Shared types of the bench sources.
 *
 * Shape: a run = one workload for a fixed duration (or until its pre-built
 * pool is used up) on N threads, each with its own wf_client and therefore
 * its own HTTP/2 connection. Every call is timed per method, every
 * operation (one workload step, possibly several RPCs) is timed as a whole,
 * and failures are counted by gRPC code. A workload whose RPC answers
 * UNIMPLEMENTED ends its run at once and is reported as "n/a (not
 * implemented)".
 */
#ifndef WF_BENCH_H
#define WF_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "wf_client.h"

/* ---- latency histogram (log-linear, ~1.6 % resolution, microseconds) -- */

#define HIST_NBUCKETS (128 + 40 * 64)

typedef struct hist {
    uint64_t n;
    uint64_t max_us;
    uint64_t sum_us;
    uint32_t b[HIST_NBUCKETS];
} hist;

void hist_add(hist *h, uint64_t us);
void hist_merge(hist *dst, const hist *src);
/* Percentile p in [0,100] in milliseconds; 0 when empty. */
double hist_pct_ms(const hist *h, double p);
double hist_max_ms(const hist *h);

/* ---- RPCs the workloads call ------------------------------------------ */

enum bench_method {
    M_HEALTH,
    M_DEPLOY,
    M_START,
    M_GET_INSTANCE,
    M_ASSIGN_TO,
    M_GET_TASK,
    M_LIST_TASKS,
    M_CLAIM_TASK,
    M_COMPLETE_TASK,
    M_ACTIVATE_JOBS,
    M_COMPLETE_JOB,
    M_SEND_SIGNAL,
    M_COMPLETE_JOBS,
    M_START_BATCH,
    M_GET_BATCH,
    M_DEFINITION_STATISTICS,
    M_COUNT
};

extern const char *const bench_method_name[M_COUNT];

/* ---- outcome of one operation ---------------------------------------- */

enum op_result {
    OP_OK = 0,   /* done; w->units was advanced */
    OP_FAIL = 1, /* an RPC failed (counted by code); the loop goes on */
    OP_NA = 2,   /* UNIMPLEMENTED: the whole run stops, reported n/a */
    OP_DONE = 3  /* the workload's pool is used up: this thread stops */
};

struct run;
struct pg_conn; /* libpq's PGconn */

/* ---- cost of a measured phase (cost.c) -------------------------------- */

/* What the processes and the database had done at one moment. */
typedef struct cost_mark {
    double t;
    long long srv_ticks;       /* workflowd: utime + stime, clock ticks; -1 unknown */
    long long pg_ticks;        /* the postmaster, its children and the reaped ones; -1 */
    double gen_s;              /* this process: CPU seconds (getrusage RUSAGE_SELF) */
    double child_s;            /* its reaped children (pgbench): CPU seconds */
    long long rt, stmts, txns; /* workflowd's workflow_db_*_total from /metrics; -1 */
} cost_mark;

/* Postgres's commit count, sampled while the load runs: the first and the
 * last sample. */
typedef struct cost_window {
    int n;
    double t0, t1;
    uint64_t u0, u1; /* units done at those samples */
    long long c0, c1;
    long long own; /* commits of the harness's own queries between them */
} cost_window;

/* Per unit of work; a negative figure is unknown. */
typedef struct cost {
    int has;
    double srv_us, pg_us, gen_us; /* CPU microseconds: workflowd, Postgres, load generator */
    double rt, stmts, txns;       /* workflowd's round trips, statements, transactions */
    double commits;               /* pg_stat_database.xact_commit (background included) */
} cost;

/* One load thread. */
typedef struct worker {
    int idx;
    wf_client *c; /* borrowed: one per thread, so one connection each */
    struct run *run;
    hist op;             /* latency of whole operations, from the scheduled start */
    hist op_svc;         /* the same, from the actual start (= op when closed-loop) */
    hist *m;             /* [M_COUNT] latency per RPC */
    uint64_t ops_ok;     /* operations that succeeded */
    uint64_t ops_failed; /* operations with a failed RPC */
    uint64_t units;      /* work units done (instances, jobs, signals...) */
    uint64_t mismatches; /* OK answers that did not do what was expected */
    uint64_t codes[17];  /* failed calls by gRPC code */
    uint64_t seq;        /* per-thread counter for request ids */
    unsigned rng;
    double t_exit; /* when the thread left its loop */
    char last_err[200];
} worker;

typedef struct bench bench;
typedef struct workload workload;

/* One timed phase of one workload. */
typedef struct run {
    const workload *wl;
    bench *b;
    int nthreads;
    double duration_s;
    double rate;          /* operations/s over all threads; 0 = closed loop */
    uint64_t max_units;   /* stop after this many units; 0 = no limit */
    int (*op)(worker *w); /* the operation (the workload's or a setup one) */
    int timed_rss;        /* 1: sample the server's RSS every second */
    int measure_cost;     /* 1: CPU marks at both ends, commits sampled every second */

    atomic_int stop;
    atomic_int na;
    atomic_int exited;
    pthread_barrier_t bar;
    atomic_uint_fast64_t slot;   /* rate limiting: next schedule slot */
    atomic_uint_fast64_t cursor; /* shared pool index */
    atomic_uint_fast64_t units;  /* all threads' units, for max_units */
    char na_method[64];
    char na_message[256];
    double t0;

    worker *w;
    void *shared; /* workload data made by setup */

    /* results, filled by run_phase */
    double elapsed_s;
    uint64_t ops_ok, ops_failed, units_done, mismatches;
    uint64_t codes[17];
    hist op_hist;
    hist op_svc_hist;
    hist m_hist[M_COUNT];
    long rss_kb[4096];      /* RSS samples (timed_rss), one per second */
    uint64_t units_s[4096]; /* units done at each RSS sample (timed_rss) */
    int nrss;
    cost_mark cpu0, cpu1; /* measure_cost: CPU at t0 and after the threads joined */
    struct pg_conn *pgc;  /* measure_cost: the connection that samples commits */
    cost_window commits;  /* measure_cost: from 1 s after t0 to the last sample */
    char last_err[200];
} run;

/* What a workload reports. */
typedef struct result {
    int status; /* RS_OK, RS_NA, RS_ERROR, RS_SKIPPED */
    char note[320];
    double units_per_s;
    double ops_per_s;
    uint64_t units, ops_ok, ops_failed, mismatches;
    uint64_t codes[17];
    double p50_ms, p99_ms, max_ms;
    double p50_svc_ms, p99_svc_ms; /* from the actual start of each operation */
    int has_latency;
    double value; /* rss (MB), bytes, drain rate ... when not a rate run */
    hist m_hist[M_COUNT];
    cost cost; /* closed-loop runs and the timers' drain */
} result;

enum { RS_OK = 0, RS_NA = 1, RS_ERROR = 2, RS_SKIPPED = 3 };

/* A workload. setup and cleanup may be NULL. */
struct workload {
    const char *name;
    const char *unit;     /* what one unit is: "call", "instance", "job"... */
    int (*setup)(run *r); /* 0 ok, OP_NA, or -1 (error in r->last_err) */
    int (*op)(worker *w);
    void (*cleanup)(run *r);
    int pooled; /* the run stops when its pool is used up */
};

/* Global settings and shared state. */
struct bench {
    const char *target;
    const char *api_key;
    const char *actor;
    const char *actor_groups;
    const char *dsn;
    const char *pgbench_script;
    int server_pid;
    int pg_pid;          /* the postmaster (CPU of Postgres); 0: unknown */
    const char *metrics; /* workflowd's metrics HOST:PORT; NULL: no round trips */
    int nthreads;
    double duration_s;
    double half_duration_s;
    double base_s; /* each baseline run (default: duration_s) */
    int no_half;   /* 1: no half-rate pass */
    double pool_s;
    uint64_t pool_max;
    double soak_s;
    long inbox_rows;
    long fleet_rows; /* live instances of the fleet workload's definition */
    long timers;
    long parked;
    long backlog; /* waiting jobs of the large backlog run (the small: 1/100) */
    int use_request_ids;
    int durable;
    char run_id[16];

    wf_client **clients; /* nthreads, plus one for setup at [nthreads] */
    wf_client *setup_client;
};

/* ---- runner (wfbench.c) ---------------------------------------------- */

double bench_now(void);
/* Runs r->op on r->nthreads threads; fills the result fields of r. */
void run_phase(run *r);
/* Calls one RPC, timing it into w->m and counting failures; marks the run
 * n/a on UNIMPLEMENTED. Returns the gRPC code. */
int bcall(worker *w, int method, const ProtobufCMessage *req,
          const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp, int timeout_ms);
/* A fresh request id ("" when request ids are off). */
const char *bench_request_id(worker *w, char *buf, size_t len);

/* A single-threaded "worker" on the setup client, for setup calls. */
void setup_worker_init(worker *w, run *r);
void setup_worker_free(worker *w);

/* ---- workloads (workloads.c) ----------------------------------------- */

extern const workload wl_health, wl_read, wl_start, wl_referral, wl_flow, wl_jobs, wl_jobs32,
    wl_signal, wl_inbox, wl_soak;
/* fleet: GetDefinitionStatistics of a definition with b->fleet_rows live
 * instances (grown in bulk by SQL), as the console's fleet view asks. */
extern const workload wl_fleet;
/* steps2: an instance through two AUTO job steps; the backlog runs: jobs
 * with b->backlog / 100 and with b->backlog waiting jobs of their type. */
extern const workload wl_steps2, wl_backlog_small, wl_backlog_large;

/* After the closed-loop steps2 run: takes its units from the COMPLETED
 * instances the database counts. */
void bench_steps2_check(bench *b, result *res);
/* Waiting jobs of the last backlog run, as its setup counted them. */
long bench_backlog_size(void);
/* Seconds the backlog setup may take: 4 x duration, within 30..300. */
double bench_backlog_budget(const bench *b);
extern const workload wl_jobs_stream, wl_jobs_stream1;

/* The drain of due timers: not a closed-loop run. */
void bench_timers(bench *b, result *res);
/* A batch SUSPEND over b->timers parked instances: instances per second
 * from StartBatchOperation to COMPLETED, the replica's scheduler doing
 * the work. */
void bench_batch(bench *b, result *res);
/* Bytes per parked instance (ad-hoc or net). */
void bench_bytes(bench *b, int net, result *res);

/* ---- Postgres helpers (pgutil.c) ------------------------------------- */

/* Runs SQL on b->dsn; returns 0, or -1 with the message in err. When out
 * is not NULL, copies the first column of the first row there. */
int pg_exec(const bench *b, const char *sql, char *out, size_t outlen, char *err, size_t errlen);
/* Total size of the service's tables (heap, indexes, TOAST), bytes; -1. */
long long pg_service_bytes(const bench *b, char *err, size_t errlen);
/* "table=bytes,table=bytes,..." for the service's tables; 0 or -1. */
int pg_table_bytes(const bench *b, char *out, size_t outlen, char *err, size_t errlen);
/* Runs pgbench with the one-row-insert script; tps or -1. *ntx gets the
 * transactions it made. */
double pg_pgbench(const bench *b, double seconds, double *lat_ms, long long *ntx, char *err,
                  size_t errlen);

/* ---- cost (cost.c) ----------------------------------------------------- */

/* CPU of workflowd (b->server_pid), of Postgres (b->pg_pid) and of this
 * process and its reaped children, into m. */
void cost_mark_cpu(const bench *b, cost_mark *m);
/* workflowd's round trips, statements and transactions, scraped from
 * b->metrics into m (-1 each when there is none). */
void cost_mark_server(const bench *b, cost_mark *m);
/* A connection for cost_pg_commits (NULL without --dsn); close it with
 * cost_pg_close (NULL-safe). */
struct pg_conn *cost_pg_open(const bench *b);
void cost_pg_close(struct pg_conn *c);
/* The first column of the one row sql returns, as a number; -1. */
long long cost_pg_value(struct pg_conn *c, const char *sql);
/* xact_commit of the database, as Postgres has published it; -1. */
long long cost_pg_commits(struct pg_conn *c);
/* Adds a sample (time, units done, commits) to w; own: the commits of the
 * harness's own queries since the previous sample. */
void cost_commit_sample(cost_window *w, double t, uint64_t units, long long commits, int own);
/* The cost per unit from a to z over units, with commits from w (NULL:
 * unknown). */
void cost_per_unit(const cost_mark *a, const cost_mark *z, uint64_t units, const cost_window *w,
                   cost *out);
/* Multiplies every known figure of c by f (units counted anew). */
void cost_scale(cost *c, double f);

/* VmRSS of pid in kB; -1 when unreadable. */
long proc_rss_kb(int pid);

#endif /* WF_BENCH_H */
