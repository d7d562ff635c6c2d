/*
 * A minimal streaming JSON writer to a FILE: for outputs too large to build
 * as a cJSON tree first (converted traces, arrays embedded in HTML).
 * Commas are placed automatically; nesting is limited to 32 levels.
 */
#ifndef MEMSNAP_COMMON_JSONW_H
#define MEMSNAP_COMMON_JSONW_H

#include <stdint.h>
#include <stdio.h>

struct ms_jsonw {
	FILE *f;
	int depth;
	unsigned char first[32]; /* no item written yet at this level */
	int pretty;
};

void ms_jsonw_init(struct ms_jsonw *w, FILE *f, int pretty);
void ms_jsonw_obj_begin(struct ms_jsonw *w);
void ms_jsonw_obj_end(struct ms_jsonw *w);
void ms_jsonw_arr_begin(struct ms_jsonw *w);
void ms_jsonw_arr_end(struct ms_jsonw *w);
/* Key of the next value inside an object. */
void ms_jsonw_key(struct ms_jsonw *w, const char *k);
void ms_jsonw_str(struct ms_jsonw *w, const char *s, size_t n);
void ms_jsonw_cstr(struct ms_jsonw *w, const char *s);
/* One string, the parts one after the other. */
void ms_jsonw_str_parts(struct ms_jsonw *w, const char *const *parts, size_t n);
void ms_jsonw_u64(struct ms_jsonw *w, uint64_t v);
void ms_jsonw_i64(struct ms_jsonw *w, int64_t v);
void ms_jsonw_f64(struct ms_jsonw *w, double v);
void ms_jsonw_bool(struct ms_jsonw *w, int v);
void ms_jsonw_null(struct ms_jsonw *w);
/* A value already written as JSON (another serializer's, one line), as it is but for '<'. */
void ms_jsonw_value(struct ms_jsonw *w, const char *json);

#endif
