/*
 * Sizes as people write them (docs/REPLAY.md, "Sizes"): a whole number of bytes, or a number
 * with a unit, the unit's case ignored and a space allowed before it. Decimal units are decimal
 * and binary units binary, as PyTorch's messages print them (GiB): B; KB MB GB TB = 10^3..10^12;
 * KiB MiB GiB TiB = 2^10..2^40; K M G T alone = binary (as GNU coreutils read them). A fraction
 * takes a unit ("1.5GiB", up to 6 decimals; rounded to the nearest byte); a fraction of bytes
 * ("12.5") is refused.
 */
#ifndef MEMSNAP_COMMON_SIZE_H
#define MEMSNAP_COMMON_SIZE_H

#include <stdint.h>

/*
 * s into *out. Returns NULL, or what is wrong ("no number", "unknown unit 'x'", "a fraction of
 * a byte", "too large") as a static string.
 */
const char *ms_size_parse(const char *s, uint64_t *out);

#endif
