/* replay --backend torch: PyTorch's real CUDA caching allocator (replay_torch.c). */
#ifndef MEMSNAP_REPLAY_REPLAY_TORCH_H
#define MEMSNAP_REPLAY_REPLAY_TORCH_H

#include "replay/replay.h"

/*
 * Replay path (trace: the same in memory, or NULL to read path) through the plugin at plugin
 * (libmemsnap_torch_replay.so) on a real GPU, with
 * the settings, limit and empty_cache() placements of model, the sim replay of the same
 * trace. r is filled like ms_replay_run's (backend "torch"; the OOM's text is PyTorch's, in
 * r->backend_message); release it with ms_replay_result_release().
 * @return MS_OK (also when the replay ended in an OOM), MS_ERR_BACKEND (no plugin, no GPU,
 *   no such device), MS_ERR_INVALID_ARG (a limit above the device's free memory), reader
 *   errors.
 */
struct ms_trace;
ms_status ms_replay_torch(const char *path, const struct ms_trace *trace, const char *plugin,
                          const struct ms_replay_opts *o, const struct ms_replay_result *model,
                          struct ms_replay_result *r, struct ms_diag *d);

#endif
