/* See units.h. */
#include "units.h"

#include <string.h>

#include "macro.h"

#define USEC_PER_MS 1000ull
#define USEC_PER_S 1000000ull

typedef struct {
    const char *suffix;
    uint64_t scale; /* microseconds or bytes */
} Suffix;

static const Suffix durations[] = {
    {"ms", USEC_PER_MS},      {"s", USEC_PER_S},        {"m", 60 * USEC_PER_S},
    {"min", 60 * USEC_PER_S}, {"h", 3600 * USEC_PER_S}, {"d", 86400 * USEC_PER_S},
};

static const Suffix sizes[] = {
    {"B", 1},
    {"K", 1ull << 10},
    {"KiB", 1ull << 10},
    {"M", 1ull << 20},
    {"MiB", 1ull << 20},
    {"G", 1ull << 30},
    {"GiB", 1ull << 30},
    {"T", 1ull << 40},
    {"TiB", 1ull << 40},
};

static bool
ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && strcmp(s + n - t, tail) == 0;
}

Unit
unit_of_key(const char *key)
{
    static const struct {
        const char *tail;
        Unit unit;
    } tails[] = {
        {"_ms", {UNIT_DURATION, USEC_PER_MS, "milliseconds"}},
        {"_s", {UNIT_DURATION, USEC_PER_S, "seconds"}},
        {"_h", {UNIT_DURATION, 3600 * USEC_PER_S, "hours"}},
        {"_bytes", {UNIT_SIZE, 1, "bytes"}},
        {"_mib", {UNIT_SIZE, 1ull << 20, "MiB"}},
        {"_gib", {UNIT_SIZE, 1ull << 30, "GiB"}},
    };
    /* A rate names two units ("finalize_ms_per_mib", "sessions_per_minute"): a plain number,
     * but for a byte rate, whose size part takes the size suffixes. */
    if (strstr(key, "_per_"))
        return ends_with(key, "_bytes_per_sec") ? (Unit){UNIT_SIZE, 1, "bytes a second"}
                                                : (Unit){UNIT_COUNT, 1, ""};
    for (size_t i = 0; i < ELEMENTSOF(tails); i++)
        if (ends_with(key, tails[i].tail))
            return tails[i].unit;
    return (Unit){UNIT_COUNT, 1, ""};
}

const char *
unit_suffixes(UnitKind k)
{
    return k == UNIT_DURATION ? "ms, s, m, h, d" : k == UNIT_SIZE ? "B, KiB, MiB, GiB, TiB" : "";
}

/* The scale of suffix s among the kind's suffixes, or 0. */
static uint64_t
suffix_scale(UnitKind k, const char *s)
{
    const Suffix *t = k == UNIT_DURATION ? durations : sizes;
    size_t n = k == UNIT_DURATION ? ELEMENTSOF(durations) : ELEMENTSOF(sizes);
    for (size_t i = 0; k != UNIT_COUNT && i < n; i++)
        if (strcmp(s, t[i].suffix) == 0)
            return t[i].scale;
    return 0;
}

bool
unit_parse(const char *value, Unit u, uint64_t *ret)
{
    const char *p = value;
    uint64_t n = 0;

    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
            return false;
        n = n * 10 + (uint64_t) (*p - '0');
    }
    if (*p == '\0') {
        *ret = n;
        return true;
    }
    if (*p == ' ')
        p++;
    uint64_t scale = suffix_scale(u.kind, p);
    if (scale == 0 || u.scale == 0 || (n != 0 && scale > UINT64_MAX / n))
        return false;
    uint64_t base = n * scale;
    if (base % u.scale != 0)
        return false;
    *ret = base / u.scale;
    return true;
}
