/*
 * rpc_wire: a descriptor-guided walk over protobuf wire data (see
 * rpc_wire.h). Only length-delimited fields need attention: sub-messages
 * are walked one level deeper, strings are checked for UTF-8, everything
 * else is skipped.
 */
#include "rpc_wire.h"

#include <stdio.h>

enum { NOT_CHECKED = -1 }; /* malformed wire data: let the unpacker say so */

static int
varint(const uint8_t *p, size_t len, size_t *at, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *at < len; shift += 7) {
        uint8_t b = p[(*at)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *out = v;
            return 0;
        }
    }
    return NOT_CHECKED;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static int
utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* Where the walk is: the field of each enclosing message that it
 * descended through, and where that message's bytes are. */
typedef struct frame {
    const ProtobufCFieldDescriptor *f; /* the field holding the next level */
    const uint8_t *msg;                /* the enclosing message */
    size_t at;                         /* offset of the field's key in msg */
} frame;

typedef struct walker {
    int max_depth;
    frame path[WF_RPC_MAX_DEPTH + 1];
    wf_arena *arena;
    wf_violation *bad;
} walker;

/* How many times field number fn occurs in msg before offset upto: the
 * index of a repeated element. Only called on an error, on bytes already
 * walked. */
static size_t
index_of(const uint8_t *msg, size_t upto, uint64_t fn)
{
    size_t at = 0, count = 0;
    while (at < upto) {
        uint64_t key, n = 0;
        if (varint(msg, upto, &at, &key) != 0)
            break;
        if ((key >> 3) == fn)
            count++;
        switch (key & 7) {
        case 0:
            varint(msg, upto, &at, &n);
            break;
        case 1:
            at += 8;
            break;
        case 5:
            at += 4;
            break;
        case 2:
            if (varint(msg, upto, &at, &n) != 0 || n > upto - at)
                return count;
            at += (size_t)n;
            break;
        default:
            return count;
        }
    }
    return count;
}

/* "definition.transitions[2].name": the path of the string field f (key
 * at offset at of msg) below the frames 0..depth-2, in the arena. */
static const char *
field_path(walker *wk, int depth, const ProtobufCFieldDescriptor *f, const uint8_t *msg, size_t at)
{
    char buf[512];
    size_t len = 0;
    for (int d = 0; d < depth && len < sizeof buf; d++) {
        const frame *fr = d + 1 < depth ? &wk->path[d] : &(frame){f, msg, at};
        int k = snprintf(buf + len, sizeof buf - len, "%s%s", d > 0 ? "." : "", fr->f->name);
        len += k > 0 ? (size_t)k : 0;
        if (fr->f->label == PROTOBUF_C_LABEL_REPEATED && len < sizeof buf) {
            k = snprintf(buf + len, sizeof buf - len, "[%zu]",
                         index_of(fr->msg, fr->at, fr->f->id));
            len += k > 0 ? (size_t)k : 0;
        }
    }
    return wf_arena_strdup(wk->arena, buf);
}

static wf_code
walk(walker *wk, const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len, int depth,
     wf_error *err)
{
    if (depth > wk->max_depth)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "the request nests messages more than %d deep", wk->max_depth);
    size_t at = 0;
    while (at < len) {
        uint64_t key, n;
        size_t key_at = at;
        if (varint(p, len, &at, &key) != 0)
            return WF_OK;
        switch (key & 7) {
        case 0:
            if (varint(p, len, &at, &n) != 0)
                return WF_OK;
            break;
        case 1:
            at += 8;
            break;
        case 5:
            at += 4;
            break;
        case 2: {
            if (varint(p, len, &at, &n) != 0 || n > len - at)
                return WF_OK;
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3));
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth <= WF_RPC_MAX_DEPTH)
                    wk->path[depth - 1] = (frame){f, p, key_at};
                wf_code rc = walk(wk, f->descriptor, p + at, (size_t)n, depth + 1, err);
                if (rc != WF_OK)
                    return rc;
            } else if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING &&
                       !utf8_ok(p + at, (size_t)n)) {
                if (wk->bad != NULL && wk->arena != NULL) {
                    wk->bad->field = field_path(wk, depth, f, p, key_at);
                    wk->bad->description = "must be valid UTF-8";
                }
                return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                    "field \"%s\" of %s is not valid UTF-8", f->name, desc->name);
            }
            at += (size_t)n;
            break;
        }
        default: /* groups (3, 4) and invalid types: the unpacker refuses them */
            return WF_OK;
        }
    }
    return WF_OK;
}

wf_code
wf_rpc_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                  int max_depth, wf_arena *arena, wf_violation *bad, wf_error *err)
{
    walker wk = {.max_depth = max_depth < WF_RPC_MAX_DEPTH ? max_depth : WF_RPC_MAX_DEPTH,
                 .arena = arena,
                 .bad = bad};
    if (bad != NULL)
        *bad = (wf_violation){0};
    return walk(&wk, desc, data, len, 1, err);
}
