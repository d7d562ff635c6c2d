/*
 * Reader of .zst traces (docs/FORMAT.md): checks the header, gates on the
 * version, decodes frames and hands records to a struct ms_sink.
 * The input is a byte range the caller keeps mapped during the call.
 */
#ifndef MEMSNAP_FORMAT_TRACE_READ_H
#define MEMSNAP_FORMAT_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "common/event.h"

struct ms_read_opts {
	uint64_t from; /* first event index delivered */
	uint64_t to;   /* one past the last delivered; UINT64_MAX = all */
};
#define MS_READ_OPTS_INIT     \
	{                     \
		0, UINT64_MAX \
	}

/* What the reader learned about the file besides its records. */
struct ms_zst_info {
	uint16_t major, minor;
	uint32_t producer_version;
	uint64_t n_frames;         /* data frames decoded */
	uint64_t n_events;         /* events decoded (all, not just delivered) */
	int has_end;               /* END record found */
	int has_footer;            /* footer found (seekable) */
	int truncated;             /* data ended inside a frame */
	int used_index;            /* the window was found through the index */
	int stopped;               /* reading stopped at the end of the window */
	int source_cut_short;      /* END says its events came from a trace cut short (convert) */
	uint64_t skipped_optional; /* optional records of unknown type */
	uint64_t dropped_events;   /* sum of DROPPED records: events the recorder lost */
	uint64_t first_drop_event; /* events before the first DROPPED record */
	uint64_t end_by_action[MS_ACT_COUNT];
	/* END's events by device (format 1.2; has_end_devices 0 before): the first 64 devices
	 * with any, in device order; more_end_devices when there were more */
	int has_end_devices, more_end_devices;
	uint32_t n_end_devices;
	struct ms_zst_device_count {
		uint32_t device;
		uint64_t events, raw_events; /* of PyTorch's allocator; raw CUDA calls */
	} end_devices[64];
};

/* Does data start like a memsnap trace? */
int ms_zst_sniff(const void *data, size_t len);

/*
 * Decode data[0..len) into sink. Definitions go into syms (initialised by
 * the caller, who owns it). opts may be NULL (everything). info may be NULL.
 * A missing END or a file cut off inside a frame are warnings in diag, not
 * errors: what was complete is delivered and MS_OK is returned.
 * @return MS_OK, MS_ERR_FORMAT (not a trace, corrupt record), MS_ERR_VERSION
 *   (newer major, unknown must-understand flag or mandatory record),
 *   MS_ERR_COMPRESSION (corrupt frame), MS_ERR_LIMIT, MS_ERR_NOMEM, or what
 *   a sink callback returned.
 */
ms_status ms_trace_read_buffer(const void *data, size_t len, const struct ms_read_opts *opts,
                               struct ms_symtab *syms, const struct ms_sink *sink,
                               struct ms_zst_info *info, struct ms_diag *diag);

#endif
