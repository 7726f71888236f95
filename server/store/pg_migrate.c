/*
 * pg_migrate.c: applies the embedded migrations (server/store/migrations).
 */
#include "pg_int.h"

#include <stdlib.h>

#include "wf_log.h"
#include "wf_time.h"

/* ---- migrations -------------------------------------------------------------- */

/* Applies every embedded migration not yet in schema_migrations, each in
 * its own transaction, while holding a session advisory lock: replicas
 * starting together queue on the lock, and each finds the work done. */
wf_code
wf_pg__migrate(pg_store *s, wf_error *err)
{
    PGconn *pg = wf_pg_pool_connect(s->pool, 0, false, err);
    if (pg == NULL)
        return err != NULL ? err->code : WF_E_STORE_UNAVAILABLE;
    wf_pg_conn c = {.pg = pg};
    wf_arena *a = wf_arena_new();
    wf_code rc = a != NULL ? WF_OK : wf_error_nomem(err);
    if (rc == WF_OK)
        rc = wf_pg__run_cmd(&c, S_MIG_LOCK, NULL, 0, NULL, err);
    if (rc == WF_OK)
        rc = wf_pg__run_cmd(&c, S_MIG_TABLE, NULL, 0, NULL, err);
    for (int i = 0; rc == WF_OK && i < wf_pg_n_migrations; i++) {
        const wf_pg_migration *m = &wf_pg_migrations[i];
        params p = {.a = a};
        wf_pg__p_i64(&p, m->version);
        long have = 0;
        rc = wf_pg__run_cmd(&c, S_BEGIN, NULL, 0, NULL, err);
        if (rc == WF_OK)
            rc = wf_pg__run_cmd(&c, S_MIG_HAS, &p, 0, &have, err);
        if (rc == WF_OK && have == 0) {
            /* The migration text is ours, embedded at build time; it may
             * hold several statements, hence the simple protocol. */
            PGresult *res = PQexec(pg, m->sql);
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                bool broken = false;
                rc = wf_pg_map_error(pg, res, "migration", "the schema", false, &broken, err);
            }
            PQclear(res);
            if (rc == WF_OK)
                rc = wf_pg__run_cmd(&c, S_MIG_RECORD, &p, 0, NULL, err);
            if (rc == WF_OK)
                WF_LOG(WF_LOG_INFO, "db_migrated", "version=%d", m->version);
        }
        if (rc == WF_OK)
            rc = wf_pg__run_cmd(&c, S_COMMIT, NULL, 0, NULL, err);
    }
    /* Closing the session releases the advisory lock and rolls back a
     * failed migration; unlock explicitly anyway on success. */
    if (rc == WF_OK)
        rc = wf_pg__run_cmd(&c, S_MIG_UNLOCK, NULL, 0, NULL, err);
    wf_pg_conn_clear(&c);
    PQfinish(pg);
    wf_arena_free(a);
    return rc;
}
