# a 1.1 trace with a DROPPED record: the loss is reported, never silent
$MEMSNAP info testdata/traces/v1.1/dropped.zst
