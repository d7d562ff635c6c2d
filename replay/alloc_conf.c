/* PYTORCH_CUDA_ALLOC_CONF parsing, following PyTorch 2.11's tokenizer and key rules (§6). */
#include "replay/alloc_conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

void ms_alloc_conf_init(struct ms_alloc_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->max_split_size = UINT64_MAX;
	c->max_non_split_rounding = 20 * MS_MIB;
	c->large_segment_size = 20 * MS_MIB;
	c->per_process_memory_fraction = 1.0;
	c->native_backend = 1;
}

#define MAX_TOKENS 256

struct toks {
	char t[MAX_TOKENS][64];
	int n, i;
};

/* Split at , : [ ] (each its own token); whitespace is dropped. */
static int tokenize(const char *s, struct toks *k)
{
	size_t len = 0;

	k->n = k->i = 0;
	for (; *s; s++) {
		if (isspace((unsigned char)*s))
			continue;
		if (strchr(",:[]", *s)) {
			if (len) {
				k->t[k->n++][len] = 0;
				len = 0;
				if (k->n >= MAX_TOKENS)
					return -1;
			}
			k->t[k->n][0] = *s;
			k->t[k->n++][1] = 0;
			if (k->n >= MAX_TOKENS)
				return -1;
			continue;
		}
		if (len + 1 >= sizeof(k->t[0]))
			return -1;
		k->t[k->n][len++] = *s;
	}
	if (len)
		k->t[k->n++][len] = 0;
	return 0;
}

static const char *next(struct toks *k)
{
	return k->i < k->n ? k->t[k->i++] : "";
}

static int expect(struct toks *k, const char *what)
{
	return strcmp(next(k), what) == 0 ? 0 : -1;
}

static int to_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int to_f64(const char *s, double *v)
{
	char *end;

	if (!*s)
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	return errno || *end ? -1 : 0;
}

static int to_bool(const char *s, uint8_t *v)
{
	if (strcmp(s, "True") == 0)
		*v = 1;
	else if (strcmp(s, "False") == 0)
		*v = 0;
	else
		return -1;
	return 0;
}

static int is_pow2_or_0(uint64_t v)
{
	return (v & (v - 1)) == 0;
}

static int log2_floor(uint64_t v)
{
	int i = 0;

	while (v >>= 1)
		i++;
	return i;
}

static ms_status bad(struct ms_diag *d, const char *fmt, const char *what)
{
	return ms__diag_set(d, MS_ERR_INVALID_ARG, -1, -1, fmt, what);
}

static ms_status parse_roundup(struct ms_alloc_conf *c, struct toks *k, struct ms_diag *d)
{
	const char *t = next(k);
	uint64_t v;
	int last = -1, first = 1;

	if (strcmp(t, "[") != 0) {
		if (to_u64(t, &v) || !is_pow2_or_0(v) || v > UINT32_MAX)
			return bad(d, "roundup_power2_divisions: '%s' is not a power of two", t);
		for (int i = 0; i < 16; i++)
			c->roundup_power2_divisions[i] = (uint32_t)v;
		return MS_OK;
	}
	for (;;) {
		const char *key = next(k);
		uint64_t mb;
		if (strcmp(key, "]") == 0)
			break;
		if (expect(k, ":"))
			return bad(d, "roundup_power2_divisions: expected ':' after '%s'", key);
		t = next(k);
		if (to_u64(t, &v) || !is_pow2_or_0(v) || v > UINT32_MAX)
			return bad(d, "roundup_power2_divisions: '%s' is not a power of two", t);
		if (strcmp(key, ">") == 0) {
			/* fills every entry after the last explicit one */
			for (int i = last + 1; i < 16; i++)
				c->roundup_power2_divisions[i] = (uint32_t)v;
		} else {
			int idx;
			if (to_u64(key, &mb) || mb == 0 || !is_pow2_or_0(mb))
				return bad(
				        d,
				        "roundup_power2_divisions: '%s' MiB is not a power of two",
				        key);
			idx = log2_floor(mb);
			if (idx > 15)
				idx = 15;
			if (first) /* the first pair also fills every entry below it */
				for (int i = 0; i < idx; i++)
					c->roundup_power2_divisions[i] = (uint32_t)v;
			c->roundup_power2_divisions[idx] = (uint32_t)v;
			last = idx;
			first = 0;
		}
		t = next(k);
		if (strcmp(t, "]") == 0)
			break;
		if (strcmp(t, ",") != 0)
			return bad(d, "roundup_power2_divisions: expected ',' or ']' before '%s'",
			           t);
	}
	return MS_OK;
}

ms_status ms_alloc_conf_parse(struct ms_alloc_conf *c, const char *s, struct ms_diag *d)
{
	struct toks
	        k; /* 16 KiB: fine on any thread's stack; no static state (whatif is threaded) */
	struct ms_alloc_conf n = *c;

	if (!s)
		return MS_OK;
	if (tokenize(s, &k))
		return bad(d, "allocator config too long or a token too long: '%s'", s);
	/* every parse resets these three to their defaults unless given (PyTorch 2.11) */
	n.max_split_size = UINT64_MAX;
	memset(n.roundup_power2_divisions, 0, sizeof(n.roundup_power2_divisions));
	n.garbage_collection_threshold = 0;
	while (k.i < k.n) {
		const char *key = next(&k), *val;
		uint64_t u;
		double f;
		if (strcmp(key, ",") == 0)
			continue;
		if (expect(&k, ":"))
			return bad(d, "expected ':' after '%s' in the allocator config", key);
		if (strcmp(key, "roundup_power2_divisions") == 0) {
			MS_TRY(parse_roundup(&n, &k, d));
			continue;
		}
		val = next(&k);
		if (strcmp(key, "max_split_size_mb") == 0) {
			if (to_u64(val, &u))
				return bad(d, "max_split_size_mb: '%s' is not a number", val);
			if (u * MS_MIB < n.large_segment_size)
				return bad(d,
				           "max_split_size_mb: '%s' is below large_segment_size_mb",
				           val);
			n.max_split_size = u * MS_MIB;
		} else if (strcmp(key, "max_non_split_rounding_mb") == 0) {
			if (to_u64(val, &u))
				return bad(d, "max_non_split_rounding_mb: '%s' is not a number",
				           val);
			n.max_non_split_rounding = u * MS_MIB;
		} else if (strcmp(key, "large_segment_size_mb") == 0) {
			if (to_u64(val, &u) || u <= 10)
				return bad(d,
				           "large_segment_size_mb: '%s' must be a number above 10",
				           val);
			n.large_segment_size = u * MS_MIB;
		} else if (strcmp(key, "garbage_collection_threshold") == 0) {
			if (to_f64(val, &f) || f <= 0 || f >= 1)
				return bad(d,
				           "garbage_collection_threshold: '%s' must be in (0, 1)",
				           val);
			n.garbage_collection_threshold = f;
		} else if (strcmp(key, "per_process_memory_fraction") == 0) {
			if (to_f64(val, &f) || f < 0 || f > 1)
				return bad(d, "per_process_memory_fraction: '%s' must be in [0, 1]",
				           val);
			n.per_process_memory_fraction = f;
		} else if (strcmp(key, "expandable_segments") == 0) {
			if (to_bool(val, &n.expandable_segments))
				return bad(d, "expandable_segments: '%s' must be True or False",
				           val);
		} else if (strcmp(key, "release_lock_on_cudamalloc") == 0 ||
		           strcmp(key, "release_lock_on_hipmalloc") == 0) {
			if (to_bool(val, &n.release_lock_on_cudamalloc))
				return bad(d, "%s must be True or False", key);
		} else if (strcmp(key, "backend") == 0) {
			if (strcmp(val, "native") == 0)
				n.native_backend = 1;
			else if (strcmp(val, "cudaMallocAsync") == 0)
				n.native_backend = 0;
			else
				return bad(d, "backend: '%s' must be native or cudaMallocAsync",
				           val);
		} else if (strcmp(key, "pinned_use_background_threads") == 0 ||
		           strcmp(key, "pinned_use_cuda_host_register") == 0 ||
		           strcmp(key, "pinned_use_hip_host_register") == 0) {
			uint8_t b;
			if (to_bool(val, &b))
				return bad(d, "%s must be True or False", key);
		} else if (strcmp(key, "graph_capture_record_stream_reuse") == 0) {
			if (to_bool(val, &n.graph_capture_record_stream_reuse))
				return bad(d, "%s must be True or False", key);
		} else if (strcmp(key, "pinned_num_register_threads") == 0 ||
		           strcmp(key, "pinned_reserve_segment_size_mb") == 0) {
			if (to_u64(val, &u))
				return bad(d, "%s: expected a number", key);
		} else {
			return bad(d, "Unrecognized key '%s' in CUDA allocator config", key);
		}
	}
	*c = n;
	return MS_OK;
}

void ms_alloc_conf_from_settings(struct ms_alloc_conf *c, const struct ms_settings *s)
{
	ms_alloc_conf_init(c);
	if (s && !s->present)
		c->expandable_segments = s->expandable_seen;
	if (!s || !s->present)
		return;
	c->max_split_size = s->max_split_size < 0 ? UINT64_MAX : (uint64_t)s->max_split_size;
	c->garbage_collection_threshold = s->garbage_collection_threshold;
	c->expandable_segments = s->expandable_segments;
	c->release_lock_on_cudamalloc = s->release_lock_on_cudamalloc;
	c->graph_capture_record_stream_reuse = s->graph_capture_record_stream_reuse;
	memcpy(c->roundup_power2_divisions, s->roundup_power2_divisions,
	       sizeof(c->roundup_power2_divisions));
}

const char *ms_settings_alloc_conf(const struct ms_settings *s)
{
	if (s->present)
		return s->alloc_conf ? s->alloc_conf : "";
	return s->expandable_seen ? "expandable_segments:True" : "";
}
