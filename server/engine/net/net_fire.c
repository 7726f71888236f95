/*
 * net_fire: the firing rules of a Petri net (net.h) over an in-memory case
 * state. A step copies the state into a working set, mutates it, and hands
 * back the new state plus a diff; the input is never touched, so a refused
 * step (NO_ARC_MATCHED, a failing guard, the silent-loop bound) changes
 * nothing and the caller's transaction can simply roll back.
 */
#include "vars.h"
#include "net.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "wf_id.h"
#include "wf_time.h"

/* An arc resolved to indices; arcs that do not join an existing place and
 * transition are dropped (validation refuses them anyway). */
typedef struct rarc {
    int place, trans;
    bool input;
    int32_t weight;
    size_t index; /* in net->arcs, for messages */
} rarc;

typedef struct wtok {
    const char *id;
    int place; /* -1: a place the net does not have (inert) */
    int64_t seq;
    bool alive, orig;
} wtok;

typedef struct witem {
    const char *id;
    int trans;
    int *toks; /* indices into ws.tok; -1 = a token the state did not have */
    size_t ntoks;
    bool live, orig, withdrawn;
} witem;

typedef struct ws {
    const wf_net *net;
    wf_arena *a;
    wf_error *err;
    rarc *arcs;
    size_t narcs;
    wtok *tok;
    size_t ntok, captok;
    witem *it;
    size_t nit, capit;
    wf_net_firing *fired;
    size_t nfired, capfired;
    int64_t next_seq;
    bool ended;
} ws;

static wf_code
oom(ws *w)
{
    return wf_error_nomem(w->err);
}

/* Makes room for `need` elements of which the first `used` are kept.
 * Arena arrays cannot realloc: grow by copying (steps are small). */
static bool
reserve(ws *w, void **arr, size_t *cap, size_t used, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc < need)
        nc = need;
    void *p = wf_arena_alloc(w->a, nc * elem);
    if (p == NULL)
        return false;
    if (used > 0)
        memcpy(p, *arr, used * elem);
    *arr = p;
    *cap = nc;
    return true;
}

static int
cmp_tok(const void *x, const void *y)
{
    const wtok *a = x, *b = y;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return strcmp(a->id, b->id);
}

static wf_code
load(ws *w, const wf_net *net, const wf_net_state *st, wf_arena *a, wf_error *err)
{
    memset(w, 0, sizeof *w);
    w->net = net;
    w->a = a;
    w->err = err;
    w->next_seq = 1;

    w->arcs = wf_arena_alloc(a, (net->n_arcs + 1) * sizeof *w->arcs);
    if (w->arcs == NULL)
        return oom(w);
    for (size_t i = 0; i < net->n_arcs; i++) {
        const wf_arc *ar = &net->arcs[i];
        int ps = wf_net_place_index(net, ar->source), tt = wf_net_transition_index(net, ar->target);
        int ts = wf_net_transition_index(net, ar->source), pt = wf_net_place_index(net, ar->target);
        rarc r = {.weight = wf_net_arc_weight(ar), .index = i};
        if (ps >= 0 && tt >= 0) {
            r.place = ps;
            r.trans = tt;
            r.input = true;
        } else if (ts >= 0 && pt >= 0) {
            r.place = pt;
            r.trans = ts;
            r.input = false;
        } else {
            continue;
        }
        w->arcs[w->narcs++] = r;
    }
    if (st == NULL)
        return WF_OK;

    if (st->next_seq > w->next_seq)
        w->next_seq = st->next_seq;
    if (!reserve(w, (void **)&w->tok, &w->captok, 0, st->n_tokens, sizeof *w->tok))
        return oom(w);
    for (size_t i = 0; i < st->n_tokens; i++) {
        const wf_token *t = &st->tokens[i];
        w->tok[i] = (wtok){.id = t->id ? t->id : "",
                           .place = wf_net_place_index(net, t->place_id),
                           .seq = t->seq,
                           .alive = true,
                           .orig = true};
        if (t->seq >= w->next_seq)
            w->next_seq = t->seq + 1;
    }
    w->ntok = st->n_tokens;
    if (w->ntok > 1)
        qsort(w->tok, w->ntok, sizeof *w->tok, cmp_tok); /* oldest first */

    if (!reserve(w, (void **)&w->it, &w->capit, 0, st->n_items, sizeof *w->it))
        return oom(w);
    for (size_t i = 0; i < st->n_items; i++) {
        const wf_work_item *in = &st->items[i];
        witem *it = &w->it[i];
        *it = (witem){.id = in->id ? in->id : "",
                      .trans = wf_net_transition_index(net, in->transition_id),
                      .ntoks = in->n_token_ids,
                      .live = true,
                      .orig = true};
        it->toks = wf_arena_alloc(a, (in->n_token_ids + 1) * sizeof *it->toks);
        if (it->toks == NULL)
            return oom(w);
        for (size_t k = 0; k < in->n_token_ids; k++) {
            it->toks[k] = -1;
            for (size_t j = 0; j < w->ntok; j++)
                if (in->token_ids[k] != NULL && strcmp(w->tok[j].id, in->token_ids[k]) == 0) {
                    it->toks[k] = (int)j;
                    break;
                }
        }
        /* An item of a transition the net lacks can never fire. */
        if (it->trans < 0 || it->ntoks == 0) {
            it->toks[0] = -1;
            it->ntoks = 1;
        }
    }
    w->nit = st->n_items;
    return WF_OK;
}

static wf_code
add_token(ws *w, int place)
{
    if (!reserve(w, (void **)&w->tok, &w->captok, w->ntok, w->ntok + 1, sizeof *w->tok))
        return oom(w);
    const char *id = wf_id_new(w->a);
    if (id == NULL)
        return oom(w);
    /* Appended with a rising seq, so the array stays oldest first. */
    w->tok[w->ntok++] = (wtok){.id = id, .place = place, .seq = w->next_seq++, .alive = true};
    return WF_OK;
}

/* Withdraws every live item one of whose bound tokens is gone. */
static void
sweep(ws *w)
{
    for (size_t i = 0; i < w->nit; i++) {
        witem *it = &w->it[i];
        if (!it->live)
            continue;
        for (size_t k = 0; k < it->ntoks; k++)
            if (it->toks[k] < 0 || !w->tok[it->toks[k]].alive) {
                it->live = false;
                it->withdrawn = true;
                break;
            }
    }
}

/* Creates work items for every enabling beyond the live ones: per
 * transition, tokens not bound by its own live items, oldest first; as
 * many disjoint items as the marking allows (multi-merge). */
static wf_code
enable(ws *w)
{
    const wf_net *net = w->net;
    unsigned char *used = wf_arena_alloc(w->a, w->ntok + 1);
    int *picks = NULL;
    size_t cap_picks = 0;
    if (used == NULL)
        return oom(w);
    for (size_t t = 0; t < net->n_transitions; t++) {
        size_t need = 0;
        for (size_t i = 0; i < w->narcs; i++)
            if (w->arcs[i].input && w->arcs[i].trans == (int)t)
                need += (size_t)w->arcs[i].weight;
        if (need == 0)
            continue; /* no input arc: never enabled (invalid net) */
        if (need > cap_picks) {
            cap_picks = need;
            picks = wf_arena_alloc(w->a, need * sizeof *picks);
            if (picks == NULL)
                return oom(w);
        }
        memset(used, 0, w->ntok);
        for (size_t i = 0; i < w->nit; i++)
            if (w->it[i].live && w->it[i].trans == (int)t)
                for (size_t k = 0; k < w->it[i].ntoks; k++)
                    if (w->it[i].toks[k] >= 0)
                        used[w->it[i].toks[k]] = 1;
        for (;;) {
            size_t np = 0;
            bool ok = true;
            for (size_t i = 0; ok && i < w->narcs; i++) {
                const rarc *r = &w->arcs[i];
                if (!r->input || r->trans != (int)t)
                    continue;
                int32_t got = 0;
                for (size_t j = 0; j < w->ntok && got < r->weight; j++)
                    if (w->tok[j].alive && w->tok[j].place == r->place && !used[j]) {
                        used[j] = 1;
                        picks[np++] = (int)j;
                        got++;
                    }
                ok = got == r->weight;
            }
            if (!ok) {
                for (size_t k = 0; k < np; k++)
                    used[picks[k]] = 0;
                break;
            }
            if (!reserve(w, (void **)&w->it, &w->capit, w->nit, w->nit + 1, sizeof *w->it))
                return oom(w);
            witem *it = &w->it[w->nit];
            *it = (witem){.id = wf_id_new(w->a), .trans = (int)t, .ntoks = np, .live = true};
            it->toks = wf_arena_alloc(w->a, np * sizeof *it->toks);
            if (it->id == NULL || it->toks == NULL)
                return oom(w);
            memcpy(it->toks, picks, np * sizeof *picks);
            w->nit++;
        }
    }
    return WF_OK;
}

/* Fires live item ii; goto_place >= 0 produces one token there instead
 * of routing over the output arcs. Guards are evaluated before anything
 * changes, so a refusal leaves the working set as it was. A first_match
 * transition takes only the first arc (in arc order) that passes. */
static wf_code
fire_one(ws *w, size_t ii, const char *vars_json, int goto_place)
{
    const wf_net *net = w->net;
    witem *it = &w->it[ii];
    const wf_transition *t = &net->transitions[it->trans];
    if (t->fails)
        return wf_error_set(w->err, WF_E_NO_ARC_MATCHED,
                            "step \"%s\" timed out and has no on_timeout step",
                            t->step_id != NULL ? t->step_id : t->id);
    unsigned char *chosen = wf_arena_calloc(w->a, w->narcs + 1, 1);
    if (chosen == NULL)
        return oom(w);
    size_t outputs = 0, nchosen = 0;
    int dflt = -1;
    bool guard_matched = false;
    for (size_t i = 0; i < w->narcs && goto_place < 0; i++) {
        const rarc *r = &w->arcs[i];
        if (r->input || r->trans != it->trans)
            continue;
        outputs++;
        const wf_arc *ar = &net->arcs[r->index];
        if (t->first_match && guard_matched && !ar->is_default)
            continue;
        if (ar->is_default) {
            dflt = (int)i;
        } else if (ar->guard == NULL || ar->guard[0] == '\0') {
            chosen[i] = 1;
            nchosen++;
            guard_matched |= t->first_match;
        } else {
            wf_expr *e;
            wf_error ge;
            bool yes = false;
            wf_code rc = wf_expr_cached(ar->guard, &e, &ge);
            if (rc == WF_OK) {
                rc = wf_expr_eval_bool(e, vars_json, &yes, &ge);
                wf_expr_free(e);
            }
            if (rc != WF_OK)
                return wf_error_set(w->err, rc, "guard of arc %zu of transition \"%s\": %s",
                                    r->index, t->id, ge.msg);
            if (yes) {
                chosen[i] = 1;
                nchosen++;
                guard_matched = true;
            }
        }
    }
    if (!guard_matched && dflt >= 0) {
        chosen[dflt] = 1;
        nchosen++;
    }
    if (outputs > 0 && nchosen == 0)
        return wf_error_set(w->err, WF_E_NO_ARC_MATCHED,
                            "no output arc of transition \"%s\" matched", t->id);

    for (size_t k = 0; k < it->ntoks; k++)
        w->tok[it->toks[k]].alive = false;
    for (size_t c = 0; c < t->n_cancels; c++) {
        int p = wf_net_place_index(net, t->cancels[c]);
        for (size_t j = 0; p >= 0 && j < w->ntok; j++)
            if (w->tok[j].place == p)
                w->tok[j].alive = false;
    }
    it->live = false;
    if (!reserve(w, (void **)&w->fired, &w->capfired, w->nfired, w->nfired + 1, sizeof *w->fired))
        return oom(w);
    size_t nprod = 0;
    for (size_t i = 0; i < w->narcs; i++)
        nprod += chosen[i] ? (size_t)w->arcs[i].weight : 0;
    const char **prod = wf_arena_alloc(w->a, (nprod + 2) * sizeof *prod);
    if (prod == NULL)
        return oom(w);
    wf_net_firing *f = &w->fired[w->nfired++];
    *f = (wf_net_firing){.work_item_id = it->id,
                         .transition_id = t->id,
                         .enabled_in_step = !it->orig,
                         .produced = prod};
    if (goto_place >= 0) {
        prod[f->n_produced++] = net->places[goto_place].id;
        return add_token(w, goto_place);
    }
    /* The default arc last (the order the events have always listed). */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < w->narcs; i++) {
            if (!chosen[i] || (pass == 0) == ((int)i == dflt))
                continue;
            for (int32_t k = 0; k < w->arcs[i].weight; k++) {
                prod[f->n_produced++] = net->places[w->arcs[i].place].id;
                wf_code rc = add_token(w, w->arcs[i].place);
                if (rc != WF_OK)
                    return rc;
            }
        }
    return WF_OK;
}

static bool
token_in_end(const ws *w)
{
    for (size_t j = 0; j < w->ntok; j++)
        if (w->tok[j].alive && w->tok[j].place >= 0 &&
            w->net->places[w->tok[j].place].kind == WF_PLACE_END)
            return true;
    return false;
}

/* Withdrawals, termination, enablings and silent firings until the case
 * rests: every live item then waits for a user, job, timer or signal. */
static wf_code
settle(ws *w, const char *vars_json)
{
    const wf_net *net = w->net;
    bool implicit = net->termination == WF_TERMINATION_IMPLICIT;
    int silent = 0;
    for (;;) {
        sweep(w);
        if (!implicit && token_in_end(w)) {
            /* EXPLICIT: the first token in END ends the case. */
            w->ended = true;
            for (size_t i = 0; i < w->nit; i++)
                if (w->it[i].live) {
                    w->it[i].live = false;
                    w->it[i].withdrawn = true;
                }
            return WF_OK;
        }
        wf_code rc = enable(w);
        if (rc != WF_OK)
            return rc;
        size_t next = w->nit;
        for (size_t i = 0; i < w->nit && next == w->nit; i++)
            if (w->it[i].live && wf_net_is_silent(&net->transitions[w->it[i].trans]))
                next = i;
        if (next == w->nit)
            break;
        if (++silent > WF_NET_MAX_SILENT_FIRINGS)
            return wf_error_set(w->err, WF_E_DEFINITION_INVALID,
                                "silent transitions of definition \"%s\" fired more than %d "
                                "times in one step; the net loops without waiting",
                                net->key ? net->key : "", WF_NET_MAX_SILENT_FIRINGS);
        rc = fire_one(w, next, vars_json, -1);
        if (rc != WF_OK)
            return rc;
    }
    if (implicit) {
        /* IMPLICIT: no token outside END and nothing enabled. */
        bool busy = false;
        for (size_t j = 0; j < w->ntok && !busy; j++)
            busy = w->tok[j].alive &&
                   (w->tok[j].place < 0 || net->places[w->tok[j].place].kind != WF_PLACE_END);
        for (size_t i = 0; i < w->nit && !busy; i++)
            busy = w->it[i].live;
        w->ended = !busy;
    }
    return WF_OK;
}

static wf_code
item_out(ws *w, const witem *it, wf_work_item *out)
{
    const wf_transition *t = &w->net->transitions[it->trans];
    const char **ids = wf_arena_alloc(w->a, (it->ntoks + 1) * sizeof *ids);
    if (ids == NULL)
        return oom(w);
    for (size_t k = 0; k < it->ntoks; k++)
        ids[k] = w->tok[it->toks[k]].id;
    *out = (wf_work_item){.id = it->id,
                          .transition_id = t->id,
                          .trigger = t->trigger,
                          .token_ids = ids,
                          .n_token_ids = it->ntoks};
    return WF_OK;
}

/* Builds the new state and the diff from the working set. */
static wf_code
finish(ws *w, wf_net_state *out, wf_net_diff *diff)
{
    size_t nt = 0, nadd = 0, nrem = 0, nlive = 0, ncre = 0, nwd = 0;
    for (size_t j = 0; j < w->ntok; j++) {
        nt += w->tok[j].alive;
        nadd += w->tok[j].alive && !w->tok[j].orig;
        nrem += !w->tok[j].alive && w->tok[j].orig;
    }
    for (size_t i = 0; i < w->nit; i++) {
        nlive += w->it[i].live;
        ncre += w->it[i].live && !w->it[i].orig;
        nwd += w->it[i].withdrawn && w->it[i].orig;
    }
    wf_token *toks = wf_arena_alloc(w->a, (nt + 1) * sizeof *toks);
    wf_token *added = wf_arena_alloc(w->a, (nadd + 1) * sizeof *added);
    const char **removed = wf_arena_alloc(w->a, (nrem + 1) * sizeof *removed);
    wf_work_item *live = wf_arena_alloc(w->a, (nlive + 1) * sizeof *live);
    wf_work_item *created = wf_arena_alloc(w->a, (ncre + 1) * sizeof *created);
    const char **withdrawn = wf_arena_alloc(w->a, (nwd + 1) * sizeof *withdrawn);
    if (!toks || !added || !removed || !live || !created || !withdrawn)
        return oom(w);
    nt = nadd = nrem = nlive = ncre = nwd = 0;
    for (size_t j = 0; j < w->ntok; j++) {
        const wtok *t = &w->tok[j];
        wf_token tk = {.id = t->id,
                       .place_id = t->place >= 0 ? w->net->places[t->place].id : "",
                       .seq = t->seq};
        if (t->alive)
            toks[nt++] = tk;
        if (t->alive && !t->orig)
            added[nadd++] = tk;
        if (!t->alive && t->orig)
            removed[nrem++] = t->id;
    }
    for (size_t i = 0; i < w->nit; i++) {
        const witem *it = &w->it[i];
        if (it->live) {
            wf_code rc = item_out(w, it, &live[nlive++]);
            if (rc != WF_OK)
                return rc;
            if (!it->orig)
                created[ncre++] = live[nlive - 1];
        }
        if (it->withdrawn && it->orig)
            withdrawn[nwd++] = it->id;
    }
    *out = (wf_net_state){
        .tokens = toks, .n_tokens = nt, .items = live, .n_items = nlive, .next_seq = w->next_seq};
    *diff = (wf_net_diff){.added_tokens = added,
                          .n_added_tokens = nadd,
                          .removed_tokens = removed,
                          .n_removed_tokens = nrem,
                          .created = created,
                          .n_created = ncre,
                          .withdrawn = withdrawn,
                          .n_withdrawn = nwd,
                          .fired = w->fired,
                          .n_fired = w->nfired,
                          .ended = w->ended,
                          .deadlocked = !w->ended && nlive == 0};
    return WF_OK;
}

wf_code
wf_net_start(const wf_net *net, const wf_net_state *state, const char *vars_json, wf_arena *a,
             wf_net_state *out, wf_net_diff *diff, wf_error *err)
{
    ws w;
    wf_code rc = load(&w, net, state, a, err);
    if (rc != WF_OK)
        return rc;
    int start = -1;
    for (size_t i = 0; i < net->n_places && start < 0; i++)
        if (net->places[i].kind == WF_PLACE_START)
            start = (int)i;
    if (start < 0)
        return wf_error_set(err, WF_E_DEFINITION_INVALID, "definition \"%s\" has no start place",
                            net->key ? net->key : "");
    if ((rc = add_token(&w, start)) != WF_OK || (rc = settle(&w, vars_json)) != WF_OK)
        return rc;
    return finish(&w, out, diff);
}

wf_code
wf_net_enablings(const wf_net *net, const wf_net_state *state, wf_arena *a, wf_work_item **items,
                 size_t *n_items, wf_error *err)
{
    ws w;
    wf_code rc = load(&w, net, state, a, err);
    if (rc != WF_OK)
        return rc;
    sweep(&w); /* items whose tokens are gone bind nothing */
    size_t before = w.nit;
    if ((rc = enable(&w)) != WF_OK)
        return rc;
    wf_work_item *v = wf_arena_alloc(a, (w.nit - before + 1) * sizeof *v);
    if (v == NULL)
        return oom(&w);
    for (size_t i = before; i < w.nit; i++)
        if ((rc = item_out(&w, &w.it[i], &v[i - before])) != WF_OK)
            return rc;
    *items = v;
    *n_items = w.nit - before;
    return WF_OK;
}

wf_code
wf_net_fire(const wf_net *net, const wf_net_state *state, const char *work_item_id,
            const char *vars_json, wf_arena *a, wf_net_state *out, wf_net_diff *diff, wf_error *err)
{
    return wf_net_fire_goto(net, state, work_item_id, NULL, vars_json, a, out, diff, err);
}

wf_code
wf_net_fire_goto(const wf_net *net, const wf_net_state *state, const char *work_item_id,
                 const char *goto_place, const char *vars_json, wf_arena *a, wf_net_state *out,
                 wf_net_diff *diff, wf_error *err)
{
    int gp = goto_place != NULL ? wf_net_place_index(net, goto_place) : -1;
    if (goto_place != NULL && gp < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "place \"%s\" is not in the net",
                            goto_place);
    ws w;
    wf_code rc = load(&w, net, state, a, err);
    if (rc != WF_OK)
        return rc;
    sweep(&w);
    size_t ii = w.nit;
    for (size_t i = 0; i < w.nit && ii == w.nit; i++)
        if (w.it[i].live && work_item_id != NULL && strcmp(w.it[i].id, work_item_id) == 0)
            ii = i;
    if (ii == w.nit)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "work item \"%s\" is not enabled",
                            work_item_id ? work_item_id : "");
    if ((rc = fire_one(&w, ii, vars_json, gp)) != WF_OK || (rc = settle(&w, vars_json)) != WF_OK)
        return rc;
    return finish(&w, out, diff);
}

/* Takes count live tokens of place p, oldest first (or the one token
 * token_id), into done->taken. */
static wf_code
take_tokens(ws *w, int p, int32_t count, const char *token_id, wf_net_mod_done *done)
{
    const char *pid = w->net->places[p].id;
    int32_t held = 0;
    for (size_t j = 0; j < w->ntok; j++)
        held += w->tok[j].alive && w->tok[j].place == p;
    if (token_id != NULL && token_id[0] != '\0') {
        for (size_t j = 0; j < w->ntok; j++)
            if (w->tok[j].alive && w->tok[j].place == p && strcmp(w->tok[j].id, token_id) == 0) {
                w->tok[j].alive = false;
                done->taken[done->n_taken++] = w->tok[j].id;
                return WF_OK;
            }
        return wf_error_set(w->err, WF_E_TOKENS_NOT_HELD,
                            "place \"%s\" holds no token with id \"%.64s\"", pid, token_id);
    }
    if (held < count)
        return wf_error_set(w->err, WF_E_TOKENS_NOT_HELD,
                            "place \"%s\" holds %d token(s), fewer than the %d to take", pid,
                            (int)held, (int)count);
    /* The array is oldest first. */
    for (size_t j = 0; j < w->ntok && count > 0; j++)
        if (w->tok[j].alive && w->tok[j].place == p) {
            w->tok[j].alive = false;
            done->taken[done->n_taken++] = w->tok[j].id;
            count--;
        }
    return WF_OK;
}

/* Puts count new tokens in place p, into done->made. */
static wf_code
make_tokens(ws *w, int p, int32_t count, wf_net_mod_done *done)
{
    for (int32_t k = 0; k < count; k++) {
        wf_code rc = add_token(w, p);
        if (rc != WF_OK)
            return rc;
        done->made[done->n_made++] = w->tok[w->ntok - 1].id;
    }
    return WF_OK;
}

static int
mod_place(ws *w, const char *id)
{
    int p = id != NULL ? wf_net_place_index(w->net, id) : -1;
    if (p < 0)
        wf_error_set(w->err, WF_E_UNKNOWN_PLACE, "place \"%.128s\" is not in the net of \"%s\"",
                     id != NULL ? id : "", w->net->key != NULL ? w->net->key : "");
    return p;
}

/* One operation of wf_net_modify. */
static wf_code
modify_one(ws *w, const wf_net_mod *op, wf_net_mod_done *done)
{
    int32_t count = op->count > 0 ? op->count : 1;
    done->taken = wf_arena_alloc(w->a, ((size_t)count + 1) * sizeof *done->taken);
    done->made = wf_arena_alloc(w->a, ((size_t)count + 1) * sizeof *done->made);
    if (done->taken == NULL || done->made == NULL)
        return oom(w);
    int from = mod_place(w, op->place_id);
    if (from < 0)
        return w->err->code;
    switch (op->kind) {
    case WF_NET_MOD_ADD:
        return make_tokens(w, from, count, done);
    case WF_NET_MOD_REMOVE:
        return take_tokens(w, from, count, op->token_id, done);
    case WF_NET_MOD_MOVE: {
        int to = mod_place(w, op->to_place_id);
        if (to < 0)
            return w->err->code;
        wf_code rc = take_tokens(w, from, count, op->token_id, done);
        return rc == WF_OK ? make_tokens(w, to, (int32_t)done->n_taken, done) : rc;
    }
    case WF_NET_MOD_UNSET:
        break;
    }
    return wf_error_set(w->err, WF_E_INVALID_ARGUMENT, "operation has no kind");
}

wf_code
wf_net_modify(const wf_net *net, const wf_net_state *state, const wf_net_mod *ops, size_t n_ops,
              const char *vars_json, wf_arena *a, wf_net_state *out, wf_net_diff *diff,
              wf_net_mod_done *done, size_t *bad, wf_error *err)
{
    wf_error local;
    if (err == NULL)
        err = &local;
    *bad = SIZE_MAX;
    ws w;
    wf_code rc = load(&w, net, state, a, err);
    if (rc != WF_OK)
        return rc;
    sweep(&w);
    wf_net_mod_done *d = wf_arena_calloc(a, n_ops + 1, sizeof *d);
    if (d == NULL)
        return oom(&w);
    for (size_t i = 0; i < n_ops; i++)
        if ((rc = modify_one(&w, &ops[i], &d[i])) != WF_OK) {
            *bad = i;
            return rc;
        }
    if ((rc = settle(&w, vars_json)) != WF_OK || (rc = finish(&w, out, diff)) != WF_OK)
        return rc;
    if (done != NULL)
        memcpy(done, d, n_ops * sizeof *d);
    return WF_OK;
}

/* ---- migration -------------------------------------------------------------- */

static bool
str_same(const char *x, const char *y)
{
    return strcmp(x != NULL ? x : "", y != NULL ? y : "") == 0;
}

/* The target place of source place id: its mapping entry, else the place
 * of the same id in `to`; NULL when there is none. */
static const char *
mapped_place(const wf_net *to, const wf_net_place_map *map, size_t n_map, const char *id)
{
    for (size_t i = 0; i < n_map; i++)
        if (str_same(map[i].from_place, id))
            return wf_net_place_index(to, map[i].to_place) >= 0 ? map[i].to_place : NULL;
    return wf_net_place_index(to, id) >= 0 ? id : NULL;
}

/* The entries of the mapping themselves. */
static void
check_mapping(const wf_net *from, const wf_net *to, const wf_net_place_map *map, size_t n_map,
              wf_findings *f)
{
    char path[64];
    for (size_t i = 0; i < n_map; i++) {
        const char *fp = map[i].from_place != NULL ? map[i].from_place : "";
        const char *tp = map[i].to_place != NULL ? map[i].to_place : "";
        snprintf(path, sizeof path, "place_mapping[%zu].from_place", i);
        if (wf_net_place_index(from, fp) < 0)
            wf_findings_add(f, WF_SEVERITY_ERROR, "UNKNOWN_SOURCE_PLACE", path,
                            "place \"%.128s\" is not a place of version %d", fp,
                            (int)from->version);
        for (size_t k = 0; k < i; k++)
            if (str_same(map[k].from_place, fp)) {
                wf_findings_add(f, WF_SEVERITY_ERROR, "DUPLICATE_MAPPING", path,
                                "place \"%.128s\" is mapped more than once", fp);
                break;
            }
        snprintf(path, sizeof path, "place_mapping[%zu].to_place", i);
        if (wf_net_place_index(to, tp) < 0)
            wf_findings_add(f, WF_SEVERITY_ERROR, "UNKNOWN_TARGET_PLACE", path,
                            "place \"%.128s\" is not a place of version %d", tp, (int)to->version);
    }
}

/* Every live work item keeps its transition: it exists in `to` with the
 * same trigger, job type and signal. */
static void
check_items(const wf_net *from, const wf_net *to, const wf_net_state *st, wf_findings *f)
{
    for (size_t i = 0; i < st->n_items; i++) {
        const wf_work_item *it = &st->items[i];
        int fi = wf_net_transition_index(from, it->transition_id);
        int ti = wf_net_transition_index(to, it->transition_id);
        const char *tid = it->transition_id != NULL ? it->transition_id : "";
        if (ti < 0) {
            wf_findings_add(f, WF_SEVERITY_ERROR, "TRANSITION_MISSING", "target_version",
                            "work item \"%s\" waits on transition \"%.128s\", which version %d "
                            "does not have",
                            it->id, tid, (int)to->version);
            continue;
        }
        if (fi < 0)
            continue; /* an item of a transition its own net lacks: nothing to compare */
        const wf_transition *a = &from->transitions[fi], *b = &to->transitions[ti];
        if (a->trigger != b->trigger)
            wf_findings_add(f, WF_SEVERITY_ERROR, "TRIGGER_CHANGED", "target_version",
                            "transition \"%.128s\" of work item \"%s\" is %s in version %d and %s "
                            "in version %d",
                            tid, it->id, wf_net_trigger_name(a->trigger), (int)from->version,
                            wf_net_trigger_name(b->trigger), (int)to->version);
        else if (a->trigger == WF_TRIGGER_AUTO && !str_same(a->job_type, b->job_type))
            wf_findings_add(f, WF_SEVERITY_ERROR, "JOB_TYPE_CHANGED", "target_version",
                            "transition \"%.128s\" of work item \"%s\" has job type \"%.64s\" in "
                            "version %d and \"%.64s\" in version %d",
                            tid, it->id, a->job_type != NULL ? a->job_type : "", (int)from->version,
                            b->job_type != NULL ? b->job_type : "", (int)to->version);
        else if (a->trigger == WF_TRIGGER_MSG && (!str_same(a->signal_name, b->signal_name) ||
                                                  (a->correlation == WF_CORRELATION_AGGREGATE) !=
                                                      (b->correlation == WF_CORRELATION_AGGREGATE)))
            wf_findings_add(f, WF_SEVERITY_ERROR, "SIGNAL_CHANGED", "target_version",
                            "transition \"%.128s\" of work item \"%s\" awaits another signal or "
                            "correlation in version %d",
                            tid, it->id, (int)to->version);
    }
}

/* True when live item it, on net w->net, is still enabled by exactly its
 * bound tokens: each input arc of its transition finds weight of them in
 * its place, and none is left over. */
static bool
still_enabled(const ws *w, const witem *it)
{
    if (it->trans < 0)
        return false;
    size_t need = 0;
    for (size_t i = 0; i < w->narcs; i++) {
        const rarc *r = &w->arcs[i];
        if (!r->input || r->trans != it->trans)
            continue;
        int32_t got = 0;
        for (size_t k = 0; k < it->ntoks; k++)
            got += it->toks[k] >= 0 && w->tok[it->toks[k]].alive &&
                   w->tok[it->toks[k]].place == r->place;
        if (got != r->weight)
            return false;
        need += (size_t)r->weight;
    }
    return need > 0 && need == it->ntoks;
}

wf_code
wf_net_migrate(const wf_net *from, const wf_net *to, const wf_net_state *state,
               const wf_net_place_map *map, size_t n_map, const char *vars_json, wf_arena *a,
               wf_net_state *out, wf_net_diff *diff, wf_validation_error **problems,
               size_t *n_problems, wf_error *err)
{
    wf_findings f = {.a = a};
    *problems = NULL;
    *n_problems = 0;
    check_mapping(from, to, map, n_map, &f);
    /* The places holding tokens, each reported once. */
    wf_token *toks = wf_arena_alloc(a, (state->n_tokens + 1) * sizeof *toks);
    if (toks == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < state->n_tokens; i++) {
        const wf_token *t = &state->tokens[i];
        const char *pid = t->place_id != NULL ? t->place_id : "";
        toks[i] = *t;
        toks[i].place_id = mapped_place(to, map, n_map, pid);
        if (toks[i].place_id != NULL)
            continue;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = str_same(state->tokens[k].place_id, pid);
        if (seen)
            continue;
        int32_t held = 0;
        for (size_t k = 0; k < state->n_tokens; k++)
            held += str_same(state->tokens[k].place_id, pid);
        wf_findings_add(
            &f, WF_SEVERITY_ERROR, "UNMAPPED_PLACE", "place_mapping",
            "place \"%.128s\" holds %d token(s) and version %d has no place of that id; "
            "map it to a place of version %d",
            pid, (int)held, (int)to->version, (int)to->version);
    }
    check_items(from, to, state, &f);
    if (f.oom)
        return wf_error_nomem(err);
    if (f.n > 0) {
        *problems = f.v;
        *n_problems = f.n;
        return WF_OK;
    }

    wf_net_state mapped = *state;
    mapped.tokens = toks;
    ws w;
    wf_code rc = load(&w, to, &mapped, a, err);
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < w.nit; i++)
        if (w.it[i].live && !still_enabled(&w, &w.it[i])) {
            w.it[i].live = false;
            w.it[i].withdrawn = true;
        }
    wf_net_state after;
    wf_net_diff d;
    rc = settle(&w, vars_json);
    if (rc == WF_OK)
        rc = finish(&w, &after, &d);
    if (rc == WF_E_NOMEM)
        return rc;
    if (rc != WF_OK)
        wf_findings_add(&f, WF_SEVERITY_ERROR, "FIRING_REFUSED", "target_version",
                        "version %d cannot settle the case: %s", (int)to->version, err->msg);
    else if (d.deadlocked && after.n_tokens > 0)
        wf_findings_add(&f, WF_SEVERITY_ERROR, "MIGRATION_DEADLOCKS", "place_mapping",
                        "the mapped tokens would enable no transition of version %d",
                        (int)to->version);
    if (f.oom)
        return wf_error_nomem(err);
    if (f.n > 0) {
        *problems = f.v;
        *n_problems = f.n;
        return WF_OK;
    }
    *out = after;
    *diff = d;
    return WF_OK;
}

bool
wf_completion_met(wf_join_mode mode, int32_t quorum, size_t done, size_t total)
{
    switch (mode) {
    case WF_JOIN_ANY:
        return done >= 1;
    case WF_JOIN_QUORUM:
        /* A quorum above the task count (ids from an expression) can never
         * be met by counting; it degrades to ALL. */
        if (quorum < 1)
            return false;
        return done > 0 && done >= ((size_t)quorum < total ? (size_t)quorum : total);
    case WF_JOIN_NONE:
    case WF_JOIN_ALL:
    default:
        return total > 0 && done >= total;
    }
}

/* ---- variables and id lists ------------------------------------------------- */

static json_t *
load_object(const char *s, const char *what, wf_error *err)
{
    json_t *v = NULL;
    return wf_vars_load_object(s, what, &v, err) == WF_OK ? v : NULL;
}

wf_code
wf_net_merge_variables(const char *base_json, const char *patch_json, wf_arena *a, char **out,
                       wf_error *err)
{
    json_t *base = load_object(base_json, "variables", err);
    if (base == NULL)
        return err != NULL ? err->code : WF_E_INVALID_JSON;
    json_t *patch = load_object(patch_json, "output variables", err);
    if (patch == NULL) {
        json_decref(base);
        return err != NULL ? err->code : WF_E_INVALID_JSON;
    }
    wf_code rc = WF_OK;
    char *s = NULL;
    if (json_object_update(base, patch) != 0 ||
        (s = json_dumps(base, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
        rc = wf_error_nomem(err);
    json_decref(base);
    json_decref(patch);
    if (rc != WF_OK)
        return rc;
    char *copy = wf_arena_strdup(a, s);
    free(s);
    if (copy == NULL)
        return wf_error_nomem(err);
    *out = copy;
    return WF_OK;
}

char *
wf_net_join_ids(wf_arena *a, const char *const *ids, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(ids[i]) + 1;
    char *s = wf_arena_alloc(a, len), *p = s;
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(ids[i]);
        if (i > 0)
            *p++ = ',';
        memcpy(p, ids[i], l);
        p += l;
    }
    *p = '\0';
    return s;
}

wf_code
wf_net_split_ids(wf_arena *a, const char *joined, const char ***ids, size_t *n, wf_error *err)
{
    size_t cnt = 0;
    if (joined != NULL && joined[0] != '\0') {
        cnt = 1;
        for (const char *p = joined; *p; p++)
            cnt += *p == ',';
    }
    const char **v = wf_arena_alloc(a, (cnt + 1) * sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    const char *p = joined;
    for (size_t i = 0; i < cnt; i++) {
        size_t l = strcspn(p, ",");
        if ((v[i] = wf_arena_strndup(a, p, l)) == NULL)
            return wf_error_nomem(err);
        p += l + (p[l] == ',');
    }
    *ids = v;
    *n = cnt;
    return WF_OK;
}
