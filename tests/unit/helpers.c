/* Shared helpers of the unit tests. */
#define _DEFAULT_SOURCE /* scandir, alphasort */
#include "helpers.h"

#include "format/trace_write.h"
#include "parse/input.h"
#include "parse/torch_snapshot.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *th_snapshot_path(const char *name)
{
	static char buf[1024];
	static const char *const exts[] = {".pickle", ".pickle.zst", ".pickle.gz", ".json"};

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		snprintf(buf, sizeof(buf), "%s/snapshots/%s%s", MS_TESTDATA, name, exts[i]);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}

char *th_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = (size_t)n;
	}
	return buf;
}

/* Every file th_write_temp made, removed when the test's process exits. */
static char **temp_paths;
static size_t n_temp_paths;

static void remove_temp_files(void)
{
	for (size_t i = 0; i < n_temp_paths; i++) {
		remove(temp_paths[i]);
		free(temp_paths[i]);
	}
	free(temp_paths);
	temp_paths = NULL;
	n_temp_paths = 0;
}

static void remember_temp(const char *path)
{
	char **grown = realloc(temp_paths, (n_temp_paths + 1) * sizeof(*temp_paths));
	char *copy = strdup(path);

	if (!grown || !copy) {
		free(copy);
		if (grown)
			temp_paths = grown;
		return;
	}
	temp_paths = grown;
	if (n_temp_paths == 0)
		atexit(remove_temp_files);
	temp_paths[n_temp_paths++] = copy;
}

const char *th_write_temp(const void *data, size_t len, const char *suffix)
{
	static char path[256];
	static int seq;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/memsnap-test-%d-%d%s", (int)getpid(), seq++, suffix);
	f = fopen(path, "wb");
	if (!f)
		return NULL;
	remember_temp(path);
	if (len)
		fwrite(data, 1, len, f);
	fclose(f);
	return path;
}

uint64_t th_rand(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int stack_eq(const struct ms_trace *a, uint32_t sa, const struct ms_trace *b, uint32_t sb)
{
	size_t na, nb;
	const uint32_t *fa = ms_symtab_get_stack(&a->syms, sa, &na);
	const uint32_t *fb = ms_symtab_get_stack(&b->syms, sb, &nb);

	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		const struct ms_frame *x = &a->syms.frames[fa[i]], *y = &b->syms.frames[fb[i]];
		if (x->line != y->line ||
		    strcmp(ms_symtab_get_str(&a->syms, x->name)->s,
		           ms_symtab_get_str(&b->syms, y->name)->s) ||
		    strcmp(ms_symtab_get_str(&a->syms, x->file)->s,
		           ms_symtab_get_str(&b->syms, y->file)->s))
			return 0;
	}
	return 1;
}

static int str_eq(const struct ms_trace *a, uint32_t x, const struct ms_trace *b, uint32_t y)
{
	return strcmp(ms_symtab_get_str(&a->syms, x)->s, ms_symtab_get_str(&b->syms, y)->s) == 0;
}

long th_events_diff(const struct ms_trace *a, const struct ms_trace *b)
{
	size_t n = a->n_events < b->n_events ? a->n_events : b->n_events;

	for (size_t i = 0; i < n; i++) {
		const struct ms_event *x = &a->events[i], *y = &b->events[i];
		if (x->addr != y->addr || x->size != y->size || x->stream != y->stream ||
		    x->t_ns != y->t_ns || x->device != y->device || x->action != y->action ||
		    x->source != y->source || x->pool != y->pool ||
		    !stack_eq(a, x->stack, b, y->stack) ||
		    !str_eq(a, x->user_metadata, b, y->user_metadata) ||
		    !str_eq(a, x->compile_context, b, y->compile_context))
			return (long)i;
	}
	if (a->n_events != b->n_events)
		return (long)n;
	if (a->n_anns != b->n_anns)
		return 1000000000L;
	for (size_t i = 0; i < a->n_anns; i++) {
		const struct ms_annotation *x = &a->anns[i], *y = &b->anns[i];
		if (x->t_ns != y->t_ns || x->event_index != y->event_index ||
		    x->stage != y->stage || x->kind != y->kind || x->device != y->device ||
		    !str_eq(a, x->name, b, y->name))
			return 1000000000L + (long)i;
	}
	return -1;
}

struct cJSON *th_truth(const char *name)
{
	char path[1024];
	size_t n;
	char *s;
	cJSON *j;

	snprintf(path, sizeof(path), "%s/snapshots/%s.truth.json", MS_TESTDATA, name);
	s = th_read_file(path, &n);
	if (!s)
		return NULL;
	j = cJSON_Parse(s);
	free(s);
	return j;
}

ms_status th_mem_read(void *ctx, void *buf, size_t cap, size_t *got, struct ms_diag *d)
{
	struct th_mem *m = ctx;
	size_t k = m->n - m->pos;

	(void)d;
	if (k > cap)
		k = cap;
	if (k > m->chunk)
		k = m->chunk;
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	*got = k;
	return MS_OK;
}

ms_status th_pickle_load(const void *data, size_t n, int fast, size_t chunk, struct ms_trace **out,
                         uint64_t *n_fast, struct ms_diag *d)
{
	struct th_mem m = {data, n, 0, chunk};
	struct ms_snapshot_info info;
	struct ms_sink sink;
	ms_status s;

	memset(&info, 0, sizeof(info));
	*out = NULL;
	if ((s = ms_trace_new(out)))
		return s;
	ms_trace_sink(*out, &sink);
	s = ms__torch_pickle_read(th_mem_read, &m, NULL, NULL, fast, &(*out)->syms, &sink, &info,
	                          d);
	if (n_fast)
		*n_fast = info.n_fast_entries;
	return s;
}

char *th_read_decompressed(const char *path, size_t *len)
{
	struct ms_input *in = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (ms_input_open(path, &in, &d))
		return NULL;
	do {
		char *nb = cap - n < 65536 ? realloc(buf, cap = cap * 2 + 65536) : buf;
		if (!nb || ms_input_read(in, nb + n, cap - n, &got, &d)) {
			free(nb ? nb : buf);
			ms_input_close(in);
			return NULL;
		}
		buf = nb;
		n += got;
	} while (got);
	ms_input_close(in);
	*len = n;
	return buf;
}

static int wild_file(const struct dirent *de)
{
	return strstr(de->d_name, ".pickle") || strstr(de->d_name, ".pkl");
}

int th_each_wild(void (*fn)(const char *name, struct ms_trace *t, void *ctx), void *ctx)
{
	struct dirent **list = NULL;
	int n = scandir(MS_SHARED_WILD, &list, wild_file, alphasort);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char path[1024];
		struct ms_trace *t = NULL;
		struct ms_diag d = MS_DIAG_INIT;
		snprintf(path, sizeof(path), "%s/%s", MS_SHARED_WILD, list[i]->d_name);
		cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s: %s",
		             list[i]->d_name, d.msg);
		fn(list[i]->d_name, t, ctx);
		ms_trace_free(t);
	}
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return n;
}

const char *th_write_trace(const struct ms_trace *t, size_t frame_bytes, int level)
{
	const char *path = th_write_temp("", 0, ".zst");
	FILE *f = fopen(path, "wb");
	struct ms_writer *w;
	struct ms_sink sink;
	struct ms_writer_opts o = MS_WRITER_OPTS_INIT;
	struct ms_diag d = MS_DIAG_INIT;

	cr_assert_not_null(f);
	if (frame_bytes)
		o.frame_bytes = frame_bytes;
	if (level)
		o.level = level;
	cr_assert_eq(ms_writer_open(f, &o, &t->syms, &w, &d), MS_OK);
	ms_writer_sink(w, &sink);
	cr_assert_eq(ms_trace_emit(t, &sink), MS_OK);
	cr_assert_eq(ms_writer_close(w, &d), MS_OK, "%s", d.msg);
	ms_writer_free(w);
	fclose(f);
	return path;
}

void th_on_seg(void *ctx, unsigned action, uint64_t addr, uint64_t size, uint64_t stream)
{
	struct th_segs *s = ctx;
	(void)addr;
	(void)stream;
	if (s->n < 64) {
		s->action[s->n] = action;
		s->size[s->n++] = size;
	}
}
