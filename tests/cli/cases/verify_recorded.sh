# a trace recorded by memsnap record on an H100 (both sources, expandable segments): the
# model makes PyTorch's segment events; the raw CUDA events are left out of the replay
$MEMSNAP verify testdata/traces/v1.1/recorded_h100_expandable.zst
$MEMSNAP replay testdata/traces/v1.1/recorded_h100_expandable.zst | head -3
