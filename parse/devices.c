/* Which devices a trace is about: one streaming pass, counts per device. */
#include "parse/devices.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/event.h"
#include "common/status.h"
#include "parse/source.h"
#include "parse/trace.h"

#define N_DEV (UINT16_MAX + 1) /* events and segments carry 16-bit device indexes */

struct counts {
	struct ms_device_use *by_dev; /* N_DEV entries, indexed by device */
};

static ms_status c_event(void *ctx, const struct ms_event *e)
{
	struct ms_device_use *u = &((struct counts *)ctx)->by_dev[e->device];

	if (e->source == MS_SRC_TORCH) {
		u->events++;
		u->allocs += e->action == MS_ACT_ALLOC;
		u->snapshot_marks += ms_event_is_snapshot_mark(e);
	} else
		u->raw_events++;
	u->ooms += e->action == MS_ACT_OOM;
	return MS_OK;
}

static ms_status c_events(void *ctx, const struct ms_event *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c_event(ctx, &e[i]);
	return MS_OK;
}

static ms_status c_segment(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	struct ms_device_use *u = &((struct counts *)ctx)->by_dev[s->device];

	(void)b;
	u->segments++;
	u->reserved += s->total_size;
	return MS_OK;
}

int ms_devices_is_trace(const char *path)
{
	struct ms_input *in;
	struct ms_diag d = MS_DIAG_INIT;
	int yes;

	if (ms_input_open(path, &in, &d))
		return 0;
	yes = ms_input_kind(in) == MS_FILE_TRACE;
	ms_input_close(in);
	return yes;
}

/* The devices with something, in order, into out (which takes c's array). */
static void compact(struct counts *c, struct ms_devices *out)
{
	size_t n = 0;

	for (uint32_t i = 0; i < N_DEV; i++) {
		struct ms_device_use *u = &c->by_dev[i];
		/* snapshot marks alone: a device the process never used */
		if (u->events == u->snapshot_marks && !u->raw_events && !u->segments)
			continue;
		u->device = i;
		c->by_dev[n++] = *u; /* n <= i: compacted in place */
	}
	out->n = n;
	out->d = c->by_dev; /* the first n entries */
}

/* The devices of src, read (devices_read_source counts the pass). */
static ms_status count_devices(const struct ms_source *src, struct ms_devices *out,
                               struct ms_diag *diag)
{
	struct counts c;
	struct ms_symtab syms;
	struct ms_sink sink = {.event = c_event, .events = c_events, .segment = c_segment};
	ms_status s;

	memset(out, 0, sizeof(*out));
	if (src->whole) /* read whole already: counted from memory */
		return ms_devices_of(src->whole, out);
	if (!(c.by_dev = ms_calloc(N_DEV, sizeof(*c.by_dev))))
		return MS_ERR_NOMEM;
	if (ms_symtab_init(&syms)) {
		ms_free(c.by_dev);
		return MS_ERR_NOMEM;
	}
	sink.ctx = &c;
	s = MS_ERR_UNSUPPORTED;
	if (src->kind == MS_FILE_TRACE) {
		/*
		 * A memsnap trace with a trailer counts its events by device in its END record
		 * (format 1.2): read that and the end state, not every frame
		 */
		struct ms_read_opts end_only = {UINT64_MAX, UINT64_MAX};
		struct ms_source_info si;
		struct ms_diag quiet = MS_DIAG_INIT;
		s = ms_source_stream(src, MS_PASS_COUNT, &end_only, &syms, &sink, &si, &quiet);
		/* END counts events, not allocations, by device: with one device the trace's
		   allocations are its own; with several, every frame is read */
		if (!s && si.zst.has_end_devices && !si.zst.more_end_devices && si.zst.has_footer &&
		    si.zst.n_end_devices <= 1) {
			for (uint32_t i = 0; i < si.zst.n_end_devices; i++) {
				const struct ms_zst_device_count *dc = &si.zst.end_devices[i];
				if (dc->device < N_DEV) {
					c.by_dev[dc->device].events = dc->events;
					c.by_dev[dc->device].raw_events = dc->raw_events;
					/* by device, END counts events, not actions: with any
					   allocation in the trace, each device is taken to have
					   some */
					c.by_dev[dc->device].allocs =
					        si.zst.end_by_action[MS_ACT_ALLOC] ? dc->events : 0;
				}
			}
		} else {
			memset(c.by_dev, 0, N_DEV * sizeof(*c.by_dev));
			s = MS_ERR_UNSUPPORTED;
		}
	}
	if (s)
		s = ms_source_stream(src, MS_PASS_COUNT, NULL, &syms, &sink, NULL, diag);
	ms_symtab_release(&syms);
	if (s) {
		ms_free(c.by_dev);
		return s;
	}
	compact(&c, out);
	return MS_OK;
}

ms_status ms_devices_read_source(const struct ms_source *src, struct ms_devices *out,
                                 struct ms_diag *diag)
{
	/* the count is kept in the source: a cache, not what a reader sees of it */
	struct ms_source *s = (struct ms_source *)(uintptr_t)src;
	ms_status st = MS_OK;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->mu);
	if (!s->devices_known) {
		if (!s->whole)
			ms_source_count(s, MS_PASS_DEVICES);
		if (!(st = count_devices(s, &s->devices, diag)))
			s->devices_known = 1;
	}
	if (!st && (out->n = s->devices.n) && !(out->d = ms_malloc(s->devices.n * sizeof(*out->d))))
		st = MS_ERR_NOMEM;
	if (!st && out->n)
		memcpy(out->d, s->devices.d, out->n * sizeof(*out->d));
	pthread_mutex_unlock(&s->mu);
	if (st)
		memset(out, 0, sizeof(*out));
	return st;
}

ms_status ms_devices_read(const char *path, struct ms_devices *out, struct ms_diag *diag)
{
	struct ms_source *src;
	ms_status s;

	memset(out, 0, sizeof(*out));
	if ((s = ms_source_open(path, &src, diag)))
		return s;
	s = ms_devices_read_source(src, out, diag);
	ms_source_close(src);
	return s;
}

ms_status ms_devices_of(const struct ms_trace *t, struct ms_devices *out)
{
	struct counts c;

	memset(out, 0, sizeof(*out));
	if (!(c.by_dev = ms_calloc(N_DEV, sizeof(*c.by_dev))))
		return MS_ERR_NOMEM;
	c_events(&c, t->events, t->n_events);
	for (size_t i = 0; i < t->n_segs; i++)
		c_segment(&c, &t->segs[i], NULL);
	compact(&c, out);
	return MS_OK;
}

const struct ms_device_use *ms_devices_find(const struct ms_devices *ds, uint32_t dev)
{
	for (size_t i = 0; i < ds->n; i++)
		if (ds->d[i].device == dev)
			return &ds->d[i];
	return NULL;
}

void ms_devices_describe(const struct ms_devices *ds, char *buf, size_t cap)
{
	size_t len = 0, shown = 0;
	int any_events = 0;

	size_t count = 0;
	uint64_t n;
	int k;

	buf[0] = 0;
	for (size_t i = 0; i < ds->n; i++)
		any_events |= ds->d[i].events > 0;
	for (size_t i = 0; i < ds->n; i++)
		count += any_events ? ds->d[i].events > 0 : ds->d[i].segments > 0;
	if (!count) {
		snprintf(buf, cap, "no device");
		return;
	}
	k = snprintf(buf, cap, "device%s ", count > 1 ? "s" : "");
	len = k > 0 ? (size_t)k : 0;
	for (size_t i = 0; i < ds->n && len < cap; i++) {
		const struct ms_device_use *u = &ds->d[i];
		if (any_events ? !u->events : !u->segments)
			continue;
		if (shown == 8) {
			k = snprintf(buf + len, cap - len, ", ...");
			len += k > 0 ? (size_t)k : 0;
			break;
		}
		n = any_events ? u->events : u->segments;
		k = snprintf(buf + len, cap - len, "%s%u (%llu %s%s%s)",
		             !shown               ? ""
		             : shown + 1 == count ? " and "
		                                  : ", ",
		             u->device, (unsigned long long)n, any_events ? "event" : "segment",
		             n == 1 ? "" : "s", any_events ? " of PyTorch's allocator" : "");
		len += k > 0 ? (size_t)k : 0;
		shown++;
	}
}

void ms_devices_release(struct ms_devices *ds)
{
	ms_free(ds->d);
	memset(ds, 0, sizeof(*ds));
}
