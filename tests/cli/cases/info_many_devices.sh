# 20 devices and 20 streams: the text form lists 16 of each and counts the rest (--json has all)
$MEMSNAP info testdata/snapshots/edge/many_devices.json
