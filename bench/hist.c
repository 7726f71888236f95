/*
 * Log-linear latency histogram in microseconds: values below 128 us have a
 * bucket each; above, every power of two is split into 64 buckets, so a
 * bucket's width is at most 1/64 (1.6 %) of its value. Bounded memory, cheap
 * to merge, exact maximum.
 */
#include "bench.h"

static int
bucket_of(uint64_t v)
{
    if (v < 128)
        return (int)v;
    int msb = 63 - __builtin_clzll(v); /* >= 7 */
    int shift = msb - 6;
    int sub = (int)(v >> shift) - 64; /* 0..63 */
    int idx = 128 + (msb - 7) * 64 + sub;
    return idx < HIST_NBUCKETS ? idx : HIST_NBUCKETS - 1;
}

/* The middle of bucket idx, in microseconds. */
static double
bucket_value(int idx)
{
    if (idx < 128)
        return idx;
    int msb = (idx - 128) / 64 + 7;
    int sub = (idx - 128) % 64;
    int shift = msb - 6;
    double lo = (double)((uint64_t)(64 + sub) << shift);
    double width = (double)((uint64_t)1 << shift);
    return lo + width / 2;
}

void
hist_add(hist *h, uint64_t us)
{
    h->b[bucket_of(us)]++;
    h->n++;
    h->sum_us += us;
    if (us > h->max_us)
        h->max_us = us;
}

void
hist_merge(hist *dst, const hist *src)
{
    for (int i = 0; i < HIST_NBUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->n += src->n;
    dst->sum_us += src->sum_us;
    if (src->max_us > dst->max_us)
        dst->max_us = src->max_us;
}

double
hist_pct_ms(const hist *h, double p)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)((p / 100.0) * (double)h->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > h->n)
        rank = h->n;
    uint64_t seen = 0;
    for (int i = 0; i < HIST_NBUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            double v = bucket_value(i);
            if (v > (double)h->max_us)
                v = (double)h->max_us;
            return v / 1000.0;
        }
    }
    return (double)h->max_us / 1000.0;
}

double
hist_max_ms(const hist *h)
{
    return (double)h->max_us / 1000.0;
}
