/*
 * rpc_wire: a descriptor-guided walk over protobuf wire data (see
 * rpc_wire.h). Only length-delimited fields need attention: sub-messages
 * are walked one level deeper, strings are checked for UTF-8, everything
 * else is skipped.
 */
#include "rpc_wire.h"

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

static wf_code
walk(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len, int depth,
     int max_depth, wf_error *err)
{
    if (depth > max_depth)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "the request nests messages more than %d deep", max_depth);
    size_t at = 0;
    while (at < len) {
        uint64_t key, n;
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
                wf_code rc = walk(f->descriptor, p + at, (size_t)n, depth + 1, max_depth, err);
                if (rc != WF_OK)
                    return rc;
            } else if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING &&
                       !utf8_ok(p + at, (size_t)n)) {
                return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                    "field \"%s\" of %s is not valid UTF-8", f->name,
                                    desc->name);
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
                  int max_depth, wf_error *err)
{
    return walk(desc, data, len, 1, max_depth, err);
}
