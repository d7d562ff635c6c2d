/*
 * Snapshots in JSON form (json.dump of the snapshot dict): parsed with cJSON,
 * then turned into the unpickler's values so one mapping serves both forms.
 * Integers above 2^53 lose precision in cJSON (doubles); see README.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/status.h"
#include "parse/torch_snapshot.h"

static ms_status conv(struct ms_pickle *vm, const cJSON *j, struct ms_pk_val *out)
{
	const cJSON *c;

	memset(out, 0, sizeof(*out));
	if (cJSON_IsNull(j)) {
		out->type = MS_PK_NONE;
	} else if (cJSON_IsBool(j)) {
		out->type = MS_PK_BOOL;
		out->v.i = cJSON_IsTrue(j);
	} else if (cJSON_IsNumber(j)) {
		double d = j->valuedouble;
		if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
			out->type = MS_PK_INT;
			out->v.i = (int64_t)d;
		} else {
			out->type = MS_PK_FLOAT;
			out->v.f = d;
		}
	} else if (cJSON_IsString(j)) {
		return ms__pk_str(vm, j->valuestring, strlen(j->valuestring), out);
	} else if (cJSON_IsArray(j)) {
		MS_TRY(ms__pk_new(vm, MS_PK_LIST, out));
		cJSON_ArrayForEach(c, j)
		{
			struct ms_pk_val v;
			MS_TRY(conv(vm, c, &v));
			MS_TRY(ms__pk_add(vm, out, &v));
		}
	} else if (cJSON_IsObject(j)) {
		MS_TRY(ms__pk_new(vm, MS_PK_DICT, out));
		cJSON_ArrayForEach(c, j)
		{
			struct ms_pk_val k, v;
			MS_TRY(ms__pk_str(vm, c->string, strlen(c->string), &k));
			MS_TRY(conv(vm, c, &v));
			MS_TRY(ms__pk_add(vm, out, &k));
			MS_TRY(ms__pk_add(vm, out, &v));
		}
	} else {
		return MS_ERR_FORMAT;
	}
	return MS_OK;
}

ms_status ms__json_snapshot_build(struct ms_input *in, struct ms_pickle *vm, struct ms_snapmap *m,
                                  struct ms_pk_val *root, struct ms_diag *diag)
{
	struct ms_buf b = MS_BUF_INIT;
	cJSON *j;
	ms_status s;

	(void)m;
	for (;;) {
		size_t got;
		if (ms_buf_reserve(&b, 1u << 20)) {
			ms_buf_release(&b);
			return MS_ERR_NOMEM;
		}
		s = ms_input_read(in, b.data + b.len, b.cap - b.len - 1, &got, diag);
		if (s) {
			ms_buf_release(&b);
			return s;
		}
		if (got == 0)
			break;
		b.len += got;
	}
	j = cJSON_ParseWithLength(b.data, b.len);
	if (!j) {
		const char *e = cJSON_GetErrorPtr();
		long long off =
		        e && e >= b.data && e <= b.data + b.len ? (long long)(e - b.data) : -1;
		ms_buf_release(&b);
		return ms__diag_set(diag, MS_ERR_FORMAT, off, -1, "invalid JSON at offset %lld",
		                    off);
	}
	ms_buf_release(&b);
	s = conv(vm, j, root);
	cJSON_Delete(j);
	if (s == MS_ERR_FORMAT)
		ms__diag_set(diag, s, -1, -1, "unexpected JSON value");
	return s;
}
