/* Sizes as people write them: "10GB", "10G", "10 GiB", "1.5gib", "13061062656". */
#include "common/size.h"

#include <ctype.h>
#include <string.h>

static int unit_eq(const char *a, size_t n, const char *b)
{
	if (strlen(b) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) != b[i])
			return 0;
	return 1;
}

const char *ms_size_parse(const char *s, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t mul;
	} units[] = {
	        {"b", 1},
	        {"k", 1ull << 10},
	        {"kib", 1ull << 10},
	        {"kb", 1000ull},
	        {"m", 1ull << 20},
	        {"mib", 1ull << 20},
	        {"mb", 1000000ull},
	        {"g", 1ull << 30},
	        {"gib", 1ull << 30},
	        {"gb", 1000000000ull},
	        {"t", 1ull << 40},
	        {"tib", 1ull << 40},
	        {"tb", 1000000000000ull},
	};
	uint64_t whole = 0, frac = 0, frac_den = 1, mul = 1;
	const char *p = s, *u;
	int digits = 0, has_frac = 0;
	size_t n;

	if (!s)
		return "no number";
	while (*p == ' ')
		p++;
	if (*p == '-')
		return "a size is never negative";
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return "too large";
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		has_frac = 1;
		for (p++; isdigit((unsigned char)*p); p++, digits++) {
			if (frac_den == 1000000)
				return "more than 6 decimals";
			frac = frac * 10 + (uint64_t)(*p - '0');
			frac_den *= 10;
		}
	}
	if (!digits)
		return "no number";
	while (*p == ' ')
		p++;
	u = p;
	n = strlen(u);
	while (n && u[n - 1] == ' ')
		n--;
	if (n) {
		size_t i;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (unit_eq(u, n, units[i].unit))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return "unknown unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; K, M, G, T "
			       "are "
			       "binary)";
		mul = units[i].mul;
	}
	if (has_frac && frac && mul == 1)
		return "a fraction of a byte";
	if (whole && mul > UINT64_MAX / whole)
		return "too large";
	whole *= mul;
	if (frac) {
		/* frac / frac_den of mul, to the nearest byte: frac < 10^6 and mul <= 2^40 */
		uint64_t add = (frac * mul + frac_den / 2) / frac_den;
		if (whole > UINT64_MAX - add)
			return "too large";
		whole += add;
	}
	*out = whole;
	return NULL;
}
