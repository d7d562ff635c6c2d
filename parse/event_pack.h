/*
 * Events kept in order in a compact byte form until they can be handed on. A PyTorch snapshot
 * lists its trace entries before the allocator settings and annotations that a sink must have
 * first, so the reader keeps every event to the end; packed, an event takes about a quarter of
 * struct ms_event's 56 bytes, and so does the memory the kernel has to fault in and the caches
 * have to carry.
 *
 * The form (private to this file, never written to disk): a tag byte (the action, and whether
 * the event's rarely changing fields follow), then LEB128 varints: the address and the time as
 * zigzag differences from the previous event's, the size, the stack id; then, where any of them
 * differs from the previous event's, the stream, device, pool, source, user metadata and compile
 * context. Unpacking gives back exactly the events packed.
 */
#ifndef MEMSNAP_PARSE_EVENT_PACK_H
#define MEMSNAP_PARSE_EVENT_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "common/event.h"
#include "memsnap/memsnap.h"

struct ms_event_pack_chunk;

/* All zero is an empty pack. */
struct ms_event_pack {
	struct ms_event_pack_chunk *head, *tail;
	unsigned char *w, *w_end; /* where the next event goes in tail, and tail's end */
	size_t n;                 /* events packed */
	struct ms_event prev;     /* the last event packed */
};

/* Appends a copy of *e. @return MS_OK or MS_ERR_NOMEM (then the pack is as it was). */
ms_status ms_event_pack_add(struct ms_event_pack *p, const struct ms_event *e);
/* NULL-safe; leaves an empty pack. */
void ms_event_pack_free(struct ms_event_pack *p);

/* Reads a pack from its first event; the pack must not change while it is read. */
struct ms_event_pack_reader {
	const struct ms_event_pack_chunk *c;
	const unsigned char *r;
	size_t left; /* events not yet read */
	struct ms_event prev;
};
void ms_event_pack_read_begin(struct ms_event_pack_reader *rd, const struct ms_event_pack *p);
/* The next events, up to max, into out. @return how many (0 at the end). */
size_t ms_event_pack_read(struct ms_event_pack_reader *rd, struct ms_event *out, size_t max);

#endif
