/*
 * rpc_wire: a descriptor-guided walk over protobuf wire data (see
 * rpc_wire.h). Only length-delimited fields need attention: sub-messages
 * are walked one level deeper, strings are checked for UTF-8 and NUL
 * bytes, Durations and Timestamps for their range; every known field's
 * wire type is checked; everything else is skipped.
 */
#include "rpc_wire.h"

#include <stdio.h>
#include <string.h>

#include "wf_time.h"
#include "wf_utf8.h"

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

/* The wire type a field of f's type is sent with; repeated scalars may
 * also come packed (length-delimited). */
static int
wire_type_ok(const ProtobufCFieldDescriptor *f, unsigned wt)
{
    unsigned want;
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return wt == 2;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        want = 5;
        break;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        want = 1;
        break;
    default: /* the varints: int32 ... uint64, sint32/64, bool, enum */
        want = 0;
        break;
    }
    return wt == want || (wt == 2 && f->label == PROTOBUF_C_LABEL_REPEATED);
}

/* google.protobuf.Duration and Timestamp hold their range in comments
 * only: a Duration is at most 10000 years either way, its nanos within
 * a second and of the seconds' sign; a Timestamp lies in the years 1 to
 * 9999, its nanos within 0..999999999. A Duration must also name a time
 * that, counted from now, is a valid Timestamp (every duration of the API
 * is added to the clock), so no time derived from a request passes year
 * 9999. Returns the description of what is wrong, or NULL. */
#define DURATION_MAX_SECONDS ((int64_t)315576000000)
#define TIMESTAMP_MIN_SECONDS ((int64_t)-62135596800) /* 0001-01-01T00:00:00Z */
#define TIMESTAMP_MAX_SECONDS ((int64_t)253402300799) /* 9999-12-31T23:59:59Z */

static const char *
well_known_range(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len)
{
    int duration = strcmp(desc->name, "google.protobuf.Duration") == 0;
    if (!duration && strcmp(desc->name, "google.protobuf.Timestamp") != 0)
        return NULL;
    int64_t seconds = 0, nanos = 0;
    size_t at = 0;
    while (at < len) {
        uint64_t key, v = 0;
        if (varint(p, len, &at, &key) != 0)
            return NULL;
        /* The wire types were checked by the walk; unknown fields of
         * another type end the scan (the unpacker skips them). */
        if ((key & 7) != 0 || varint(p, len, &at, &v) != 0)
            return NULL;
        if ((key >> 3) == 1)
            seconds = (int64_t)v;
        else if ((key >> 3) == 2)
            nanos = (int32_t)(uint32_t)v; /* protobuf-c keeps the low 32 bits */
    }
    if (duration) {
        int64_t now_s = wf_now_us() / 1000000;
        if (seconds < -DURATION_MAX_SECONDS || seconds > DURATION_MAX_SECONDS ||
            nanos < -999999999 || nanos > 999999999 || (seconds > 0 && nanos < 0) ||
            (seconds < 0 && nanos > 0) || seconds > TIMESTAMP_MAX_SECONDS - now_s)
            return "must be a valid Duration: seconds and nanos of one sign, nanos within a "
                   "second, no longer than 10000 years and not reaching past "
                   "9999-12-31T23:59:59Z from now";
    } else if (seconds < TIMESTAMP_MIN_SECONDS || seconds > TIMESTAMP_MAX_SECONDS || nanos < 0 ||
               nanos > 999999999) {
        return "must be a valid Timestamp: from 0001-01-01T00:00:00Z to "
               "9999-12-31T23:59:59.999999999Z, nanos from 0 to 999999999";
    }
    return NULL;
}

/* Refuses the field f (key at offset key_at of msg, in desc) with why. */
static wf_code
refuse(walker *wk, int depth, const ProtobufCMessageDescriptor *desc,
       const ProtobufCFieldDescriptor *f, const uint8_t *msg, size_t key_at, const char *why,
       wf_error *err)
{
    if (wk->bad != NULL && wk->arena != NULL) {
        wk->bad->field = field_path(wk, depth, f, msg, key_at);
        wk->bad->description = why;
    }
    return wf_error_set(err, WF_E_INVALID_ARGUMENT, "field \"%s\" of %s %s", f->name, desc->name,
                        why);
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
        unsigned wt = (unsigned)(key & 7);
        const ProtobufCFieldDescriptor *f =
            key >> 3 <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
                : NULL;
        /* protobuf-c reads a known field whatever its wire type says (a
         * bool sent length-delimited is true): refuse the mismatch. */
        if (f != NULL && !wire_type_ok(f, wt))
            return refuse(wk, depth, desc, f, p, key_at, "has the wrong wire type", err);
        switch (wt) {
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
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth <= WF_RPC_MAX_DEPTH)
                    wk->path[depth - 1] = (frame){f, p, key_at};
                wf_code rc = walk(wk, f->descriptor, p + at, (size_t)n, depth + 1, err);
                if (rc != WF_OK)
                    return rc;
                const char *why = well_known_range(f->descriptor, p + at, (size_t)n);
                if (why != NULL)
                    return refuse(wk, depth, desc, f, p, key_at, why, err);
            } else if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING) {
                /* protobuf-c hands strings on as C strings: a NUL would
                 * cut them silently (an id plus NUL would name the
                 * instance of its prefix). */
                if (!wf_utf8_valid(p + at, (size_t)n))
                    return refuse(wk, depth, desc, f, p, key_at, "must be valid UTF-8", err);
                if (memchr(p + at, '\0', (size_t)n) != NULL)
                    return refuse(wk, depth, desc, f, p, key_at, "must not contain NUL bytes", err);
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
