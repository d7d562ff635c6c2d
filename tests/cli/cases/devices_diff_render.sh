# diff pairs devices (one each: those two, as two ranks; else device with device); render draws
# one device: --device, else the one whose replay runs out of memory, else the highest peak.
"$MEMSNAP" diff testdata/snapshots/dynamic_oom.pickle testdata/snapshots/devices/rank1_dynamic_oom.pickle.zst 2>/dev/null | head -6
"$MEMSNAP" diff --json testdata/snapshots/devices/two_devices.pickle.zst testdata/snapshots/devices/rank1_dynamic_oom.pickle.zst 2>&1 | grep -E 'warning|"(a|b)_device"'
"$MEMSNAP" render testdata/snapshots/devices/two_devices.pickle.zst --format txt 2>&1 | grep -E 'drawing|^testdata'
"$MEMSNAP" render --device 0 testdata/snapshots/devices/two_devices.pickle.zst --format txt 2>&1 | grep -E 'drawing|^testdata'
