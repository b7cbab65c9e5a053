/* Sizes and durations in configuration files: one convention for every key.
 *
 * A key's name says its unit: `_s` seconds, `_ms` milliseconds, `_h` hours, `_mib` MiB,
 * `_gib` GiB, `_bytes` bytes, `_bytes_per_sec` bytes a second. Its value is either a plain
 * number of that unit ("timeout_s = 90") or a number followed by a unit of the same kind,
 * converted exactly ("timeout_s = 90s", "2m", "1h"; "memory_mib = 512MiB", "2GiB", "2G").
 * A value that does not convert to a whole number of the key's unit ("1500ms" for a `_s`
 * key) is refused, never rounded. Other keys (counts, rates such as `_per_minute` or
 * `_ms_per_mib`, percentages) take plain numbers only.
 *
 *   durations: ms, s, m, min, h, d
 *   sizes:     B, K | KiB, M | MiB, G | GiB, T | TiB (binary: 1K = 1024 B)
 *
 * Pure: no I/O, no allocation; any thread; fuzzed through the daemon's config parser. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef enum { UNIT_COUNT, UNIT_DURATION, UNIT_SIZE } UnitKind;

typedef struct Unit {
    UnitKind kind;
    uint64_t scale;   /* durations: microseconds per unit; sizes: bytes per unit; counts: 1 */
    const char *name; /* "seconds", "MiB", ... for messages; "" for counts */
} Unit;

/* The unit a key's name declares (UNIT_COUNT when it declares none). */
Unit unit_of_key(const char *key);

/* Parses value for a key of unit u into a whole number of that unit. false on anything
 * malformed, an unknown or wrong-kind suffix, overflow or an inexact conversion; *ret is
 * untouched then. */
bool unit_parse(const char *value, Unit u, uint64_t *ret);

/* The suffixes a key of kind k accepts, for error messages ("" for counts). */
const char *unit_suffixes(UnitKind k);
