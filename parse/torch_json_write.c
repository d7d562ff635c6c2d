/* A trace as PyTorch's snapshot layout in JSON (torch-allocator.md §8), plus a "memsnap" key. */
#include "parse/torch_json_write.h"

#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "memsnap/format.h"

static const char *state_name(unsigned s)
{
	return s == MS_BLOCK_ACTIVE_ALLOCATED      ? "active_allocated"
	       : s == MS_BLOCK_ACTIVE_PENDING_FREE ? "active_pending_free"
	                                           : "inactive";
}

static void str_id(struct ms_jsonw *w, const struct ms_symtab *y, uint32_t id)
{
	const struct ms_str *s = ms_symtab_get_str(y, id);
	ms_jsonw_str(w, s->s, s->len);
}

static void frames(struct ms_jsonw *w, const struct ms_symtab *y, uint32_t stack)
{
	size_t n;
	const uint32_t *fr = ms_symtab_get_stack(y, stack, &n);

	ms_jsonw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct ms_frame *f = &y->frames[fr[i]];
		ms_jsonw_obj_begin(w);
		ms_jsonw_key(w, "name");
		str_id(w, y, f->name);
		ms_jsonw_key(w, "filename");
		str_id(w, y, f->file);
		ms_jsonw_key(w, "line");
		ms_jsonw_u64(w, f->line);
		ms_jsonw_obj_end(w);
	}
	ms_jsonw_arr_end(w);
}

static void settings(struct ms_jsonw *w, const struct ms_settings *s)
{
	static const char *const keys[16] = {"1",    "2",    "4",     "8",    "16",   "32",
	                                     "64",   "128",  "256",   "512",  "1024", "2048",
	                                     "4096", "8192", "16384", "32768"};

	ms_jsonw_obj_begin(w);
	ms_jsonw_key(w, "PYTORCH_CUDA_ALLOC_CONF");
	ms_jsonw_cstr(w, s->alloc_conf ? s->alloc_conf : "");
	ms_jsonw_key(w, "max_split_size");
	ms_jsonw_i64(w, s->max_split_size);
	ms_jsonw_key(w, "garbage_collection_threshold");
	ms_jsonw_f64(w, s->garbage_collection_threshold);
	ms_jsonw_key(w, "expandable_segments");
	ms_jsonw_bool(w, s->expandable_segments);
	ms_jsonw_key(w, "pinned_num_register_threads");
	ms_jsonw_i64(w, s->pinned_num_register_threads);
	ms_jsonw_key(w, "release_lock_on_cudamalloc");
	ms_jsonw_bool(w, s->release_lock_on_cudamalloc);
	ms_jsonw_key(w, "pinned_use_cuda_host_register");
	ms_jsonw_bool(w, s->pinned_use_cuda_host_register);
	ms_jsonw_key(w, "graph_capture_record_stream_reuse");
	ms_jsonw_bool(w, s->graph_capture_record_stream_reuse);
	ms_jsonw_key(w, "roundup_power2_divisions");
	ms_jsonw_obj_begin(w);
	for (int i = 0; i < 16; i++) {
		ms_jsonw_key(w, keys[i]);
		ms_jsonw_u64(w, s->roundup_power2_divisions[i]);
	}
	ms_jsonw_obj_end(w);
	ms_jsonw_obj_end(w);
}

/* Nanosecond times exceed 2^53, where JSON readers that use doubles (cJSON) round: a string. */
static void i64_str(struct ms_jsonw *w, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%lld", (long long)v);
	ms_jsonw_cstr(w, b);
}

static void event(struct ms_jsonw *w, const struct ms_symtab *y, const struct ms_event *e)
{
	ms_jsonw_obj_begin(w);
	ms_jsonw_key(w, "action");
	if (e->source == MS_SRC_CUDA) {
		/* a raw CUDA call: an action PyTorch's tools pass over, not one of its segments */
		char name[64];
		snprintf(name, sizeof(name), "%s%s", MS_RAW_CUDA_ACTION_PREFIX,
		         ms_action_name(e->action));
		ms_jsonw_cstr(w, name);
	} else {
		ms_jsonw_cstr(w, ms_action_name(e->action));
	}
	ms_jsonw_key(w, e->action == MS_ACT_OOM ? "device_free" : "addr");
	ms_jsonw_u64(w, e->addr);
	ms_jsonw_key(w, "size");
	ms_jsonw_u64(w, e->size);
	ms_jsonw_key(w, "stream");
	ms_jsonw_u64(w, e->stream);
	ms_jsonw_key(w, "time_us");
	ms_jsonw_i64(w, e->t_ns / 1000);
	if (e->t_ns % 1000) {
		ms_jsonw_key(w, "time_ns");
		i64_str(w, e->t_ns);
	}
	ms_jsonw_key(w, "compile_context");
	if (e->compile_context)
		str_id(w, y, e->compile_context);
	else
		ms_jsonw_cstr(w, "N/A");
	ms_jsonw_key(w, "user_metadata");
	str_id(w, y, e->user_metadata);
	if (e->source && e->source != MS_SRC_CUDA) {
		ms_jsonw_key(w, "source");
		ms_jsonw_u64(w, e->source);
	}
	if (e->pool != MS_POOL_UNKNOWN) {
		/* as PyTorch 2.12 writes it; left out where the pool is not known */
		uint64_t id[2];
		ms_pool_id(e->pool, id);
		ms_jsonw_key(w, "pool_id");
		ms_jsonw_arr_begin(w);
		ms_jsonw_u64(w, id[0]);
		ms_jsonw_u64(w, id[1]);
		ms_jsonw_arr_end(w);
	}
	if (e->stack) {
		ms_jsonw_key(w, "frames");
		frames(w, y, e->stack);
	}
	if (e->fwd_stack) { /* as PyTorch's main branch writes it: a list of strings */
		size_t n;
		const uint32_t *fr = ms_symtab_get_stack(y, e->fwd_stack, &n);
		ms_jsonw_key(w, "forward_frames");
		ms_jsonw_arr_begin(w);
		for (size_t i = 0; i < n; i++) {
			const struct ms_frame *f = &y->frames[fr[i]];
			const char *file = ms_symtab_get_str(y, f->file)->s;
			char line[16];
			const char *parts[5] = {file, ":", line, ":",
			                        ms_symtab_get_str(y, f->name)->s};
			if (!file[0]) {
				str_id(w, y, f->name);
				continue;
			}
			/* "FILE:LINE:NAME", as the string was read */
			snprintf(line, sizeof(line), "%u", f->line);
			ms_jsonw_str_parts(w, parts, 5);
		}
		ms_jsonw_arr_end(w);
	}
	ms_jsonw_obj_end(w);
}

ms_status ms_torch_json_write(const struct ms_trace *t, FILE *f, int pretty)
{
	struct ms_jsonw w;
	const struct ms_symtab *y = &t->syms;
	uint32_t ndev = t->meta.n_devices;

	for (size_t i = 0; i < t->n_events; i++)
		if (t->events[i].device + 1u > ndev)
			ndev = t->events[i].device + 1u;
	ms_jsonw_init(&w, f, pretty);
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "segments");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < t->n_segs; i++) {
		const struct ms_segment *g = &t->segs[i];
		const struct ms_block *b = t->blocks + t->seg_block0[i];
		ms_jsonw_obj_begin(&w);
		ms_jsonw_key(&w, "device");
		ms_jsonw_u64(&w, g->device);
		ms_jsonw_key(&w, "address");
		ms_jsonw_u64(&w, g->addr);
		ms_jsonw_key(&w, "total_size");
		ms_jsonw_u64(&w, g->total_size);
		ms_jsonw_key(&w, "allocated_size");
		ms_jsonw_u64(&w, g->allocated_size);
		ms_jsonw_key(&w, "active_size");
		ms_jsonw_u64(&w, g->active_size);
		ms_jsonw_key(&w, "requested_size");
		ms_jsonw_u64(&w, g->requested_size);
		ms_jsonw_key(&w, "stream");
		ms_jsonw_u64(&w, g->stream);
		ms_jsonw_key(&w, "segment_type");
		ms_jsonw_cstr(&w, g->is_small ? "small" : "large");
		ms_jsonw_key(&w, "segment_pool_id");
		ms_jsonw_arr_begin(&w);
		ms_jsonw_u64(&w, g->pool_id[0]);
		ms_jsonw_u64(&w, g->pool_id[1]);
		ms_jsonw_arr_end(&w);
		ms_jsonw_key(&w, "is_expandable");
		ms_jsonw_bool(&w, g->is_expandable);
		ms_jsonw_key(&w, "frames");
		frames(&w, y, g->stack);
		ms_jsonw_key(&w, "blocks");
		ms_jsonw_arr_begin(&w);
		for (uint32_t k = 0; k < g->n_blocks; k++) {
			ms_jsonw_obj_begin(&w);
			ms_jsonw_key(&w, "address");
			ms_jsonw_u64(&w, b[k].addr);
			ms_jsonw_key(&w, "size");
			ms_jsonw_u64(&w, b[k].size);
			ms_jsonw_key(&w, "requested_size");
			ms_jsonw_u64(&w, b[k].requested_size);
			ms_jsonw_key(&w, "state");
			ms_jsonw_cstr(&w, state_name(b[k].state));
			ms_jsonw_key(&w, "frames");
			frames(&w, y, b[k].stack);
			ms_jsonw_obj_end(&w);
		}
		ms_jsonw_arr_end(&w);
		ms_jsonw_obj_end(&w);
	}
	ms_jsonw_arr_end(&w);

	ms_jsonw_key(&w, "device_traces");
	ms_jsonw_arr_begin(&w);
	for (uint32_t d = 0; d < ndev; d++) {
		ms_jsonw_arr_begin(&w);
		for (size_t i = 0; i < t->n_events; i++)
			if (t->events[i].device == d)
				event(&w, y, &t->events[i]);
		ms_jsonw_arr_end(&w);
	}
	ms_jsonw_arr_end(&w);

	ms_jsonw_key(&w, "allocator_settings");
	if (t->meta.settings.present)
		settings(&w, &t->meta.settings);
	else
		ms_jsonw_null(&w);

	ms_jsonw_key(&w, "external_annotations");
	ms_jsonw_arr_begin(&w);
	for (size_t i = 0; i < t->n_anns; i++) {
		const struct ms_annotation *a = &t->anns[i];
		ms_jsonw_obj_begin(&w);
		ms_jsonw_key(&w, "stage");
		ms_jsonw_cstr(&w, a->stage == MS_ANN_START ? "START"
		                  : a->stage == MS_ANN_END ? "END"
		                                           : "MARK");
		ms_jsonw_key(&w, "name");
		str_id(&w, y, a->name);
		ms_jsonw_key(&w, "device");
		ms_jsonw_u64(&w, a->device);
		ms_jsonw_key(&w, "time_us");
		ms_jsonw_i64(&w, a->t_ns / 1000);
		if (a->kind != MS_ANN_TORCH) {
			ms_jsonw_key(&w, "kind");
			ms_jsonw_cstr(&w, a->kind == MS_ANN_STEP ? "step" : "phase");
		}
		ms_jsonw_obj_end(&w);
	}
	ms_jsonw_arr_end(&w);

	ms_jsonw_key(&w, "memsnap");
	ms_jsonw_obj_begin(&w);
	ms_jsonw_key(&w, "format");
	ms_jsonw_cstr(&w, "1.0");
	ms_jsonw_key(&w, "producer");
	ms_jsonw_cstr(&w, t->meta.producer ? t->meta.producer : "");
	ms_jsonw_key(&w, "producer_version");
	ms_jsonw_cstr(&w, t->meta.producer_version ? t->meta.producer_version : "");
	ms_jsonw_key(&w, "torch_version");
	ms_jsonw_cstr(&w, t->meta.torch_version ? t->meta.torch_version : "");
	ms_jsonw_key(&w, "hostname");
	ms_jsonw_cstr(&w, t->meta.hostname ? t->meta.hostname : "");
	ms_jsonw_key(&w, "start_time_ns");
	i64_str(&w, t->meta.start_t_ns);
	ms_jsonw_key(&w, "limit_bytes");
	ms_jsonw_i64(&w, t->meta.limit_bytes);
	if (t->cut_short) { /* the run went on after the events: readers say so */
		ms_jsonw_key(&w, "cut_short");
		ms_jsonw_u64(&w, 1);
	}
	ms_jsonw_key(&w, "devices");
	ms_jsonw_arr_begin(&w);
	for (uint32_t i = 0; i < t->meta.n_devices; i++) {
		ms_jsonw_obj_begin(&w);
		ms_jsonw_key(&w, "index");
		ms_jsonw_u64(&w, t->meta.devices[i].index);
		ms_jsonw_key(&w, "name");
		ms_jsonw_cstr(&w, t->meta.devices[i].name);
		ms_jsonw_key(&w, "total_memory");
		ms_jsonw_u64(&w, t->meta.devices[i].total_memory);
		ms_jsonw_obj_end(&w);
	}
	ms_jsonw_arr_end(&w);
	ms_jsonw_obj_end(&w);
	ms_jsonw_obj_end(&w);
	fputc('\n', f);
	return ferror(f) ? MS_ERR_IO : MS_OK;
}
