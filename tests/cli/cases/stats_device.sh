# stats --device D: one device of a file (the pipeline job's two stages apart), its peak requested
# bytes as PyTorch counted them on that device (the highest of the job's per-step peaks); a file
# with nothing on D is an error (exit 1), and so is a table with such a file: no row is made up.
M=testdata/snapshots/multi_gpu
for d in 0 1; do
	"$MEMSNAP" -q stats --json --device $d $M/pipeline.zst | python3 -c '
import json, sys
j, t, d = json.load(sys.stdin), json.load(open(sys.argv[1])), sys.argv[2]
want = max(sp["by_device"][d]["requested_bytes.all.peak"] for sp in t["step_peaks"])
print("device", j["device"], "peak requested", "as PyTorch counted" if j["peak_requested_bytes"] == want
      else "DIFFERS: %d vs %d" % (j["peak_requested_bytes"], want))' $M/pipeline.truth.json $d
done
"$MEMSNAP" stats --device 0 $M/ddp_rank1.zst
echo "exit $?"
"$MEMSNAP" stats --device 1 $M/ddp_rank0.zst $M/ddp_rank1.zst
echo "exit $?"
"$MEMSNAP" stats --device 70000 $M/ddp_rank1.zst 2>&1 | head -1
