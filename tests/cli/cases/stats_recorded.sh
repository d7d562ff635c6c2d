# a trace memsnap record wrote on an H100 (both sources): every raw CUDA event is PyTorch's own
# segment call, so nothing is outside PyTorch's allocator
$MEMSNAP stats testdata/traces/v1.1/recorded_h100_expandable.zst | head -4
