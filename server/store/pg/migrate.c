/*
 * pg/migrate.c: applies the embedded migrations (server/store/migrations).
 */
#include "pg/pg_int.h"

#include <stdlib.h>

#include "wf_log.h"
#include "wf_time.h"

/* ---- migrations -------------------------------------------------------------- */

/* The newest version in schema_migrations (0 when none) into *out. */
static wf_code
newest_applied(wf_store_pg_conn *c, int *out, wf_error *err)
{
    PGresult *res;
    wf_code rc = wf_store_pg__run(c, S_MIG_MAX, NULL, 0, &res, err);
    if (rc == WF_OK)
        *out = PQntuples(res) > 0 ? atoi(PQgetvalue(res, 0, 0)) : 0;
    PQclear(res);
    return rc;
}

/* Applies every embedded migration not yet in schema_migrations, each in
 * its own transaction, while holding a session advisory lock: replicas
 * starting together queue on the lock, and each finds the work done.
 * Refuses (WF_E_SCHEMA_TOO_NEW, nothing applied) a schema that holds a
 * migration newer than the newest embedded one: a newer workflowd made it,
 * and this one cannot know whether it may serve on it. *version (when not
 * NULL) gets the schema's version afterwards. */
wf_code
wf_store_pg__migrate(pg_store *s, int *version, wf_error *err)
{
    PGconn *pg = wf_store_pg__pool_connect(s->pool, 0, false, err);
    if (pg == NULL)
        return err != NULL ? err->code : WF_E_STORE_UNAVAILABLE;
    wf_store_pg_conn c = {.pg = pg};
    wf_arena *a = wf_arena_new();
    wf_code rc = a != NULL ? WF_OK : wf_error_nomem(err);
    if (rc == WF_OK)
        rc = wf_store_pg__run_cmd(&c, S_MIG_LOCK, NULL, 0, NULL, err);
    if (rc == WF_OK)
        rc = wf_store_pg__run_cmd(&c, S_MIG_TABLE, NULL, 0, NULL, err);
    int newest = 0, known = wf_store_pg_migrations[wf_store_pg_n_migrations - 1].version;
    if (rc == WF_OK)
        rc = newest_applied(&c, &newest, err);
    if (rc == WF_OK && newest > known)
        rc =
            wf_error_set(err, WF_E_SCHEMA_TOO_NEW,
                         "the database schema is at migration %d, newer than the newest this "
                         "workflowd %s knows (%d): run a workflowd at least as new as the one that "
                         "migrated it",
                         newest, WF_VERSION, known);
    for (int i = 0; rc == WF_OK && i < wf_store_pg_n_migrations; i++) {
        const wf_store_pg_migration *m = &wf_store_pg_migrations[i];
        params p = {.a = a};
        wf_store_pg__p_i64(&p, m->version);
        long have = 0;
        rc = wf_store_pg__run_cmd(&c, S_BEGIN, NULL, 0, NULL, err);
        if (rc == WF_OK)
            rc = wf_store_pg__run_cmd(&c, S_MIG_HAS, &p, 0, &have, err);
        if (rc == WF_OK && have == 0) {
            /* The migration text is ours, embedded at build time; it may
             * hold several statements, hence the simple protocol. */
            PGresult *res = PQexec(pg, m->sql);
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                bool broken = false;
                rc =
                    wf_store_pg__map_error(pg, res, "migration", "the schema", false, &broken, err);
            }
            PQclear(res);
            if (rc == WF_OK)
                rc = wf_store_pg__run_cmd(&c, S_MIG_RECORD, &p, 0, NULL, err);
            if (rc == WF_OK)
                WF_LOG(WF_LOG_INFO, "db_migrated", "version=%d", m->version);
        }
        if (rc == WF_OK)
            rc = wf_store_pg__run_cmd(&c, S_COMMIT, NULL, 0, NULL, err);
    }
    /* Closing the session releases the advisory lock and rolls back a
     * failed migration; unlock explicitly anyway on success. */
    if (rc == WF_OK)
        rc = wf_store_pg__run_cmd(&c, S_MIG_UNLOCK, NULL, 0, NULL, err);
    if (rc == WF_OK && version != NULL)
        *version = newest > known ? newest : known;
    wf_store_pg__conn_clear(&c);
    PQfinish(pg);
    wf_arena_free(a);
    return rc;
}
