/*
 * A replay command's decisions, in one call: the backend that replays (the model on a simulated
 * device, the model over a real GPU, PyTorch's own allocator through its plugin), the model's
 * replay first for the GPU backends, a trace that starts mid-run replayed again from the state
 * rebuilt before its first event, the device's size taken from a recorded OOM and the trace
 * replayed again under it, and a per-process limit inferred from recorded OOMs that the device
 * had room for. Nothing is printed: what the caller should tell comes back as notes.
 *
 * Ownership: the outcome owns its rebuilt state, the model's replay and the CUDA device until
 * ms_replay_outcome_release(). Not thread-safe for one outcome.
 */
#ifndef MEMSNAP_REPLAY_RUN_H
#define MEMSNAP_REPLAY_RUN_H

#include "replay/device_cuda.h"
#include "replay/replay.h"

enum ms_replay_backend {
	MS_REPLAY_SIM = 0,   /* the model on a simulated device */
	MS_REPLAY_CUDA = 1,  /* the model over a real GPU (device_cuda.h) */
	MS_REPLAY_TORCH = 2, /* PyTorch's own allocator through its plugin (replay_torch.h) */
};

struct ms_replay_request {
	const char *path; /* the trace */
	/* the same trace already in memory, or NULL: every pass then reads path (a snapshot is
	 * best read once by the caller and passed here; a .zst trace streams in bounded memory) */
	const struct ms_trace *trace;
	/* or the input opened once (parse/source.h) that the passes read, or NULL: path is opened
	 * by each */
	const struct ms_source *src;
	struct ms_replay_opts o; /* the settings asked for */
	unsigned backend;        /* enum ms_replay_backend */
	/* MS_REPLAY_TORCH: the folder of memsnap's plugins (libmemsnap_torch_replay.so), or NULL
	 * when it was not found */
	const char *libdir;
};

/*
 * A per-process limit inferred from the recorded OOMs: the range that reproduces them, and
 * the value the replay used (its middle). The range never starts below what the trace proves
 * PyTorch held at once (held: its recorded segments' bytes at their highest); where the replays
 * alone would have put it lower, raised says so (the lower limits reproduce the OOMs only by
 * giving back cached segments that the job kept).
 */
struct ms_limit_range {
	int inferred;
	uint64_t lo, hi, used;
	uint64_t held;
	int raised;
};

/*
 * The most reserved bytes the trace proves device held at once: its recorded segment events
 * (segment_alloc and segment_map add, segment_free and segment_unmap take away) at their highest,
 * counted from the lowest point (a trace that starts mid-run held at least that much before);
 * where the trace has end-state segments, what they hold less the events' sum at the end is what
 * was held before the first event. 0 where it records none.
 */
uint64_t ms_trace_held_reserved(const struct ms_trace *t, uint32_t device);

/* What a note is about; the caller words it. */
enum ms_replay_note_kind {
	/* warning: n frees of blocks allocated before the trace, and no end-state segments to
	 * rebuild them from: the replay starts from an empty allocator */
	MS_REPLAY_NOTE_NO_SEGMENTS = 1,
	/* warning: the trace may start mid-run and its state cannot be rebuilt (why) */
	MS_REPLAY_NOTE_NOT_REBUILT = 2,
	/* warning: the end-state segments do not fit the recorded events (n of them did not): the
	 * replay starts from an empty allocator */
	MS_REPLAY_NOTE_MISMATCH = 3,
	/* note: the trace starts mid-run; the state before its first event was rebuilt (segments,
	 * blocks live then; n frees of blocks the trace never allocated; inconsistent: some
	 * recorded events did not fit it) */
	MS_REPLAY_NOTE_REBUILT = 4,
	/* note: n recorded OOMs while the device had room: a limit inferred (lim) */
	MS_REPLAY_NOTE_LIMIT_INFERRED = 5,
	/* warning: no limit reproduces the recorded OOMs (why) */
	MS_REPLAY_NOTE_NO_LIMIT = 6,
	/* note: the trace starts mid-run and its state cannot be rebuilt (inconsistent: n
	 * end-state blocks or events did not fit; else no end state): the blocks live before it
	 * (blocks, bytes) were placed by the model at its start */
	MS_REPLAY_NOTE_PLACED = 7,
	/* warning: as PLACED, but they do not fit under the recorded limit or in the device's size
	 * from a recorded OOM (why): the replay starts from an empty allocator */
	MS_REPLAY_NOTE_NOT_PLACED = 8,
	/* note: n recorded OOMs found the device itself full (bytes: the first one's free bytes,
	 * blocks: the segment it needed): no per-process limit is inferred */
	MS_REPLAY_NOTE_DEVICE_FULL = 9,
};

struct ms_replay_note {
	unsigned kind; /* enum ms_replay_note_kind */
	uint64_t n;
	size_t segments;
	uint64_t blocks, bytes;
	int inconsistent;
	struct ms_limit_range lim;
	char why[512];
};

/* At most two a replay (its start, its limit), and the GPU backends add none of their own. */
#define MS_REPLAY_NOTES_MAX 4

struct ms_replay_outcome {
	/*
	 * The options that reproduce the replay: the request's, with the limit inferred, the
	 * device's size inferred from a recorded OOM, and o.init (the rebuilt state) where the
	 * replay started from one. A later replay of the same trace and device passes them on.
	 */
	struct ms_replay_opts o;
	struct ms_initial_state *init; /* a mid-run trace's rebuilt state, or NULL */
	struct ms_limit_range lim;
	/* MS_REPLAY_CUDA, MS_REPLAY_TORCH: the model's replay of the same trace on the simulated
	 * device (settings, limit, empty_cache() placements) */
	struct ms_replay_result model;
	struct ms_cuda_dev *dev; /* MS_REPLAY_CUDA: the device (its timings), or NULL */
	struct ms_replay_note notes[MS_REPLAY_NOTES_MAX];
	size_t n_notes;
};

/*
 * Replay q->path as q asks, into r (release it with ms_replay_result_release()) and out
 * (release it with ms_replay_outcome_release(), also after an error: it may hold notes and a
 * device). The notes are filled on error too, for what happened before it. MS_REPLAY_CUDA
 * catches SIGINT while the real device replays (the next device call fails, everything is
 * freed, MS_ERR_BACKEND) and restores the previous handler.
 * @return MS_OK (also when the replay ended in an OOM: r->ended_by_oom), MS_ERR_UNSUPPORTED
 *   (a GPU backend asked for a trace that starts mid-run; settings the model lacks),
 *   MS_ERR_BACKEND (no plugin, no GPU, interrupted), MS_ERR_INVALID_ARG (a bad --alloc-conf, a
 *   limit above the device's free memory), MS_ERR_NOMEM, reader errors.
 */
ms_status ms_replay_request_run(const struct ms_replay_request *q, struct ms_replay_outcome *out,
                                struct ms_replay_result *r, struct ms_diag *diag);
/* Free what out holds and close its device; out can take another run. */
void ms_replay_outcome_release(struct ms_replay_outcome *out);

#endif
