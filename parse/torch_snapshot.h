/*
 * PyTorch memory snapshots (torch.cuda.memory._snapshot / _dump_snapshot) as
 * pickles (protocols 2-5, plain or zstd/gzip-compressed) or as JSON, mapped
 * onto memsnap's model and handed to a sink (torch-allocator.md §8).
 */
#ifndef MEMSNAP_PARSE_TORCH_SNAPSHOT_H
#define MEMSNAP_PARSE_TORCH_SNAPSHOT_H

#include "common/event.h"
#include "parse/input.h"
#include "parse/pickle.h"

struct ms_snapshot_info {
	int pickle_protocol; /* 0 for JSON */
	uint64_t n_entries;  /* trace entries over all devices */
	uint64_t n_segments;
	uint64_t n_annotations;
	int legacy;              /* bare list of segments, or blocks with 'history' */
	uint64_t n_fast_entries; /* trace entries read by the pickle machine's item reader */
	/* pinned host memory (PyTorch 2.14's host_segments, host_traces): counted, not replayed;
	 * -1 where the snapshot has no such key */
	int64_t n_host_segments, n_host_traces;
	int cut_short; /* memsnap's JSON of a trace cut short ("memsnap": {"cut_short": true}) */
};

/*
 * Read a snapshot from in (a pickle or JSON, see ms_input_kind) into sink;
 * string, frame and stack ids refer to syms (caller-owned, initialised).
 * Events are buffered until the end of the file, since PyTorch writes
 * allocator_settings after the traces; nothing else is kept.
 * @return MS_OK, MS_ERR_FORMAT (not a snapshot / bad field, with the entry
 *   number), the unpickler's errors, MS_ERR_NOMEM, or a sink's status.
 */
ms_status ms_torch_snapshot_read(struct ms_input *in, struct ms_symtab *syms,
                                 const struct ms_sink *sink, struct ms_snapshot_info *info,
                                 struct ms_diag *diag);

/* Internal: map an already built snapshot value (the JSON front end). */
/*
 * The pickle half of ms_torch_snapshot_read, from any reader or, if whole is not NULL and not
 * empty, from the whole input in memory, read in place; with the machine's limits (NULL: the
 * defaults) and the trace entries read by its item reader, or all by the opcode loop (fast 0:
 * tests and the fuzzer compare the ways). info must be zeroed by the caller.
 */
ms_status ms__torch_pickle_read(ms_pk_read_fn rd, void *rd_ctx, const struct ms_mapped *whole,
                                const struct ms_pickle_limits *lim, int fast,
                                struct ms_symtab *syms, const struct ms_sink *sink,
                                struct ms_snapshot_info *info, struct ms_diag *diag);

struct ms_snapmap;
ms_status ms__snapmap_new(struct ms_pickle *vm, struct ms_symtab *syms, struct ms_diag *diag,
                          struct ms_snapmap **out);
ms_status ms__snapmap_entry(void *ctx, uint32_t device, uint64_t index,
                            const struct ms_pk_val *item, int64_t offset);
ms_status ms__snapmap_finish(struct ms_snapmap *m, const struct ms_pk_val *root,
                             enum ms_input_kind kind, const struct ms_sink *sink,
                             struct ms_snapshot_info *info);
void ms__snapmap_free(struct ms_snapmap *m);
ms_status ms__json_snapshot_build(struct ms_input *in, struct ms_pickle *vm, struct ms_snapmap *m,
                                  struct ms_pk_val *root, struct ms_diag *diag);

#endif
