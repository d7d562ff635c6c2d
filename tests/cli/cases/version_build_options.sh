"$MEMSNAP" version --build-options | grep -cE "^  (cuda|graphviz|zstd|msgpack-c|cJSON|zlib) *:"
