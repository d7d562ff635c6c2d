# a trace memsnap record wrote on an H100 (both sources): every raw CUDA event is PyTorch's own
# segment call, so the raw calls show nothing outside PyTorch's allocator; the trace (1.1) has no
# cudaMemGetInfo marks, so the memory outside it is not measured, and stats says so (no 0 bytes)
$MEMSNAP stats testdata/traces/v1.1/recorded_h100_expandable.zst | head -4
