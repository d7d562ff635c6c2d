#!/usr/bin/env bash
# The HTML report in headless Chromium: no console message, no request beyond the file itself,
# the timeline and the segment map drawn, and a click on the timeline changes the segment map
# (the page's #selftest clicks through the element a person's click would hit); the
# per-allocation timeline drawn, a band's hover showing its stack and its click selecting it in
# the segment map, zooming drawing a finer level of bands, and all of it in under a second on a
# 10 M-event trace (made with BENCH_PARSE, bench/bench_parse.c).
# Keeps the reports and screenshots in ARTIFACTS. Exit 77 (CTest: skipped) without Chromium.
# Usage: report_test.sh MEMSNAP PROJECT_ROOT ARTIFACTS BENCH_PARSE
set -u
memsnap=$1 root=$2 art=$3 bench_parse=$4
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
	echo "SKIP: no Chromium (apt-get install chromium) to open the HTML report in"
	exit 77
fi
mkdir -p "$art"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
here=$(cd "$(dirname "$0")" && pwd)
chrome() {
	# root needs --no-sandbox; a private profile keeps runs apart; the browser's own
	# background traffic (updates, sign-in, dictionaries) is switched off so that the net log
	# holds only what the page asks for; the window is tall enough to hold the page down to the
	# timeline, whose clicks the selftest makes where they are (a headless page does not scroll)
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--disable-default-apps --disable-features=OptimizationHints,Translate,MediaRouter \
		--disable-domain-reliability --disable-client-side-phishing-detection \
		--disable-spell-checking --no-pings \
		--user-data-dir="$tmp/profile" --window-size=1400,3600 --hide-scrollbars "$@"
}
# the check can fail: a page that asks for two URLs is caught
printf '<img src="http://example.invalid/a.png"><script>fetch("https://example.invalid/b")</script>' >"$tmp/bad.html"
chrome --log-net-log="$tmp/net-bad.json" --dump-dom "file://$tmp/bad.html" >/dev/null 2>&1
if [ "$(python3 "$here/page_requests.py" "$tmp/net-bad.json" | wc -l)" != 2 ]; then
	echo "FAIL: the request check does not see a page's requests"
	exit 1
fi
# gpt_train_with_nccl: a trace with memory outside PyTorch (its own timeline series); graph_pools:
# private pools (theirs)
for name in dynamic_oom gpt_train multistream gpt_train_with_nccl pools/graph_pools \
	explain/forward_frames inference/llama_static inference/train_eval; do
	src=$(ls "$root"/testdata/snapshots/$name.pickle* "$root"/testdata/traces/$name.zst 2>/dev/null | head -1)
	base=${name##*/}
	html="$art/$base.html"
	"$memsnap" render "$src" -o "$html" 2>"$tmp/render.err" || { cat "$tmp/render.err"; exit 1; }
	size=$(stat -c %s "$html")
	chrome --enable-logging=stderr --v=0 --log-net-log="$tmp/net.json" \
		--dump-dom "file://$html#selftest" >"$tmp/dom.html" 2>"$tmp/chrome.err"
	problems=""
	grep -q 'data-timeline="drawn"' "$tmp/dom.html" || problems+=" timeline-not-drawn"
	grep -q 'data-segmap="[0-9]' "$tmp/dom.html" || problems+=" segmap-not-drawn"
	grep -q 'data-selftest="click-updated-segmap"' "$tmp/dom.html" || problems+=" click-did-not-update-segmap"
	# a drag-zoom draws the finer level where the trace has more events than buckets
	grep -qE 'data-selftest-zoom="(finer-level-drawn|no-finer-level)"' "$tmp/dom.html" || problems+=" zoom-did-not-draw-the-finer-level"
	grep -q 'data-bands="drawn"' "$tmp/dom.html" || problems+=" bands-not-drawn"
	grep -q 'data-selftest-bands="hover-shows-stack-click-selects"' "$tmp/dom.html" ||
		problems+=" band-hover-or-click:$(grep -o 'data-selftest-bands="[^"]*"' "$tmp/dom.html")"
	grep -q 'data-selftest-bands-zoom="finer-bands-drawn"' "$tmp/dom.html" || problems+=" zoom-did-not-draw-finer-bands"
	grep -qE 'data-selftest-sites-group="groups-by-file"' "$tmp/dom.html" ||
		! grep -q 'data-sites-group=' "$tmp/dom.html" || problems+=" sites-not-grouped"
	# traces with times (gpt_train, multistream): the same with the x axis in seconds
	if [ "$name" = gpt_train_with_nccl ] && ! grep -q 'outside PyTorch' "$tmp/dom.html"; then
		problems+=" no-outside-pytorch-series"
	fi
	# a snapshot's page, and a .zst trace's (read whole for it), opens with what its peak is
	# made of (memsnap explain's categories)
	if { [ "$name" = gpt_train ] || [ "$name" = gpt_train_with_nccl ]; } &&
		! grep -q '<td>optimizer_state</td>' "$tmp/dom.html"; then
		problems+=" no-diagnosis"
	fi
	# and the steps, as many as memsnap explain finds, with the peak's marked
	if [ "$name" = gpt_train ]; then
		n=$("$memsnap" -q explain --json "$src" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["steps"]))')
		{ grep -q ">$n steps (from " "$tmp/dom.html" && grep -q '<table id="steps">' "$tmp/dom.html" &&
			grep -q ' (the peak)</td>' "$tmp/dom.html"; } || problems+=" no-steps-table"
	fi
	# a backward allocation's hover says where forward made its tensor (forward_frames)
	# coloured by compile context on request, the legend names the compiled regions
	if [ "$name" = inference/llama_static ] &&
		! grep -q 'data-selftest-bands-context="coloured"' "$tmp/dom.html"; then
		problems+=" compile-contexts-not-coloured"
	fi
	# a generation job's page gives its requests, as memsnap explain does, and its weights
	if [ "$name" = inference/llama_static ] &&
		! { grep -q '<table id="requests">' "$tmp/dom.html" &&
			grep -q '<td>weights</td>' "$tmp/dom.html" && grep -q '<td>kv_cache</td>' "$tmp/dom.html"; }; then
		problems+=" no-requests-or-inference-categories"
	fi
	# a training job that evaluates between its optimizer steps: its loops, as memsnap explain
	# finds them
	if [ "$name" = inference/train_eval ]; then
		n=$("$memsnap" -q explain --json "$src" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["eval_loops"]["loops"]))')
		{ grep -q ">$n evaluation loops (" "$tmp/dom.html" &&
			grep -q '<table id="eval-loops">' "$tmp/dom.html"; } || problems+=" no-eval-loops-table"
	fi
	if [ "$name" = explain/forward_frames ] &&
		! grep -q 'data-selftest-bands-forward="shown"' "$tmp/dom.html"; then
		problems+=" forward-frames-not-shown"
	fi
	if [ "$name" = pools/graph_pools ] && ! grep -q 'reserved, private pools' "$tmp/dom.html"; then
		problems+=" no-private-pools-series"
	fi
	if [ "$name" != dynamic_oom ] && ! grep -q 'data-selftest-time="time-axis-click-updated-segmap"' "$tmp/dom.html"; then
		problems+=" time-axis-click-did-not-update-segmap"
	fi
	if grep -q 'CONSOLE' "$tmp/chrome.err"; then
		problems+=" console-messages"
		grep 'CONSOLE' "$tmp/chrome.err" | head -5
	fi
	# every URL the page asked for besides the file itself
	python3 "$here/page_requests.py" "$tmp/net.json" >"$tmp/requests" || problems+=" no-net-log"
	if [ -s "$tmp/requests" ]; then
		problems+=" network-requests"
		head -5 "$tmp/requests"
	fi
	[ "$size" -le 10000000 ] || problems+=" larger-than-10MB"
	chrome --screenshot="$art/$base.png" "file://$html" >/dev/null 2>&1 && [ -s "$art/$base.png" ] ||
		problems+=" no-screenshot"
	if [ -n "$problems" ]; then
		echo "FAIL $name:$problems"
		fail=1
	else
		echo "ok $name ($size bytes; screenshot $art/$base.png)"
	fi
done
# A long trace made of copies of a real one (bench_parse long SNAPSHOT OUT N), rendered and
# self-tested: the bands drawn, hovered and clicked, each drawing under a second; with stacks,
# the hovered band's stack shown and the bands coloured by site.
long_trace() { # NAME SNAPSHOT COPIES STACKS(0/1)
	local name=$1 problems="" ms html="$art/long-$1.html"
	"$bench_parse" long "$2" "$tmp/long.zst" "$3" >/dev/null || { echo "FAIL $name: bench_parse long"; exit 1; }
	"$memsnap" render "$tmp/long.zst" -o "$html" 2>"$tmp/render.err" || { cat "$tmp/render.err"; exit 1; }
	rm -f "$tmp/long.zst"
	chrome --enable-logging=stderr --v=0 --dump-dom "file://$html#selftest" >"$tmp/dom.html" 2>"$tmp/chrome.err"
	grep -q 'data-selftest-bands="hover-shows-stack-click-selects"' "$tmp/dom.html" || problems+=" band-hover-or-click"
	grep -q 'data-selftest-bands-zoom="finer-bands-drawn"' "$tmp/dom.html" || problems+=" zoom-did-not-draw-finer-bands"
	if [ "$4" = 1 ]; then
		grep -q 'data-selftest-bands-stack="shown"' "$tmp/dom.html" ||
			problems+=" stack-$(grep -o 'data-selftest-bands-stack="[^"]*"' "$tmp/dom.html")"
		grep -qE 'data-bands-sites="[1-9]' "$tmp/dom.html" || problems+=" no-sites-to-colour-by"
	fi
	ms=$(grep -o 'data-bands-ms-max="[0-9]*"' "$tmp/dom.html" | grep -o '[0-9]*')
	[ -n "$ms" ] && [ "$ms" -lt 1000 ] || problems+=" bands-draw-took-${ms:-?}-ms"
	grep -q 'CONSOLE' "$tmp/chrome.err" && problems+=" console-messages"
	if [ -n "$problems" ]; then echo "FAIL $name:$problems"; fail=1; else echo "ok $name (the slowest bands drawing ${ms} ms)"; fi
}
# 10.4 M events (150 copies of a real trace); 10.6 M events with Python stacks (17 copies of a
# real 400-step GPT-2 run)
long_trace 10m "$root/testdata/snapshots/dynamic_seq.pickle.zst" 150 0
long_trace 10m-stacks "$root/testdata/bench/hf_gpt2_long.pickle.zst" 17 1
# a snapshot without a trace: the segments as recorded, no timeline, no console message
html="$art/no_trace.html"
"$memsnap" render "$root/testdata/snapshots/real/no_traces.pickle" -o "$html" 2>"$tmp/render.err" || { cat "$tmp/render.err"; exit 1; }
chrome --enable-logging=stderr --v=0 --dump-dom "file://$html" >"$tmp/dom.html" 2>"$tmp/chrome.err"
problems=""
grep -q 'data-segmap="[0-9]' "$tmp/dom.html" || problems+=" segmap-not-drawn"
grep -q 'id="timeline-panel" hidden' "$tmp/dom.html" || problems+=" timeline-shown"
grep -q 'id="bands-panel" hidden' "$tmp/dom.html" || problems+=" bands-shown"
grep -q 'no trace' "$tmp/dom.html" || problems+=" no-trace-not-said"
[ "$(grep -o '<tr><td>[0-9.]* [KMG]iB</td>' "$tmp/dom.html" | wc -l)" -ge 3 ] || problems+=" no-sites-of-blocks"
grep -q 'CONSOLE' "$tmp/chrome.err" && problems+=" console-messages"
if [ -n "$problems" ]; then
	echo "FAIL no_trace:$problems"
	grep 'CONSOLE' "$tmp/chrome.err" | head -5
	fail=1
else
	echo "ok no_trace"
fi
# a stacks="all" snapshot: the OOM's holders and the top sites show their whole stacks (on hover,
# the summary's title; on click, the details), the site's frame marked; the segment map's
# tooltips carry the callers --frames asks for
"$memsnap" render --frames 2 "$root/testdata/snapshots/edge/stacks_all.pickle" -o "$art/stacks_all.html" 2>/dev/null
chrome --dump-dom "file://$art/stacks_all.html#selftest" >"$tmp/dom.html" 2>/dev/null
problems=""
# the stack filter: the user's code only hides the capture's and torch's frames, then all again
grep -q 'data-selftest-stack-filter="hides-and-restores"' "$tmp/dom.html" || problems+=" stack-filter"
[ "$(grep -o '<summary title="  torch::unwind::unwind()' "$tmp/dom.html" | wc -l)" -ge 10 ] || problems+=" no-stacks-in-tables"
grep -q '&gt; forward (/home/ada/proj/model.py:42)' "$tmp/dom.html" || problems+=" site-not-marked"
grep -q '<pre>  torch::unwind::unwind()' "$tmp/dom.html" || problems+=" no-stack-on-click"
if [ -n "$problems" ]; then echo "FAIL stacks_all:$problems"; fail=1; else echo "ok stacks_all"; fi
# a GPT under autocast recorded with stacks="all": the diagnosis names the copies alive at the
# peak (the weights' casts; tests/cli/cases/explain_copies.sh counts them from the pickle)
# its bands come from more sites than there are colours: each coloured site its own colour
# (the self-test), the rest one colour together
"$memsnap" render "$root/testdata/snapshots/real/stacks_all.pickle.zst" -o "$art/copies.html" 2>/dev/null
chrome --dump-dom "file://$art/copies.html#selftest" >"$tmp/dom.html" 2>/dev/null
problems=""
grep -q "Copies alive at the peak (clone, .to(), .contiguous(), autocast's casts): 24.53 MiB in 42" "$tmp/dom.html" ||
	problems+=" the-diagnosis-does-not-name-the-copies"
sites=$(grep -o 'data-bands-sites="[0-9]*"' "$tmp/dom.html" | grep -o '[0-9]*')
[ "${sites:-0}" -gt 14 ] || problems+=" only-${sites:-0}-sites"
grep -q 'data-selftest-bands="hover-shows-stack-click-selects"' "$tmp/dom.html" ||
	problems+=" bands:$(grep -o 'data-selftest-bands="[^"]*"' "$tmp/dom.html")"
if [ -n "$problems" ]; then echo "FAIL copies:$problems"; fail=1; else echo "ok copies ($sites sites)"; fi
# the OOM panel's cause, as explain gives it (explain/verdict.h): fragmentation where the
# recording marks the job's limit, undecided where a snapshot's limit is only inferred, and the
# cache an open use_mem_pool kept; the page opens with the verdict's headline
problems=""
for c in "explain/frag_oom.zst:fragmentation" "edge/stacks_all.pickle:segment_size" "explain/frag_oom.pickle.zst:undecided" \
	"pools/mempool_scope_blocks_retry.zst:cache_kept"; do
	"$memsnap" render "$root/testdata/snapshots/${c%%:*}" -o "$art/verdict.html" 2>/dev/null
	chrome --dump-dom "file://$art/verdict.html" >"$tmp/dom.html" 2>/dev/null
	grep -q "data-oom-verdict=\"${c#*:}\"" "$tmp/dom.html" ||
		problems+=" ${c%%:*}:$(grep -o 'data-oom-verdict="[^"]*"' "$tmp/dom.html")"
	grep -q 'data-verdict="Out of memory' "$tmp/dom.html" ||
		problems+=" ${c%%:*}:no-headline"
done
# the job a setting saves, given its limit: the headline names the setting and says yes
"$memsnap" render --limit 4368367616 "$root/testdata/snapshots/verdicts/frag.pickle.zst" \
	-o "$art/verdict.html" 2>/dev/null
chrome --dump-dom "file://$art/verdict.html" >"$tmp/dom.html" 2>/dev/null
grep -q 'expandable_segments:True would have saved it (survives: yes' "$tmp/dom.html" ||
	problems+=" frag:the-headline-does-not-name-the-setting"
if [ -n "$problems" ]; then echo "FAIL oom verdicts:$problems"; fail=1; else echo "ok oom verdicts"; fi
# the OOM panel's what-if table: whatif --json's rows (json/whatif.h), each drawn, the recorded
# setting marked, and the cause as explain words it
"$memsnap" render "$root/testdata/snapshots/dynamic_oom.pickle" -o "$art/whatif.html" 2>/dev/null
chrome --dump-dom "file://$art/whatif.html" >"$tmp/dom.html" 2>/dev/null
problems=""
rows=$(grep -o '<table id="whatif">.*</table>' "$tmp/dom.html" | grep -o '<tr title="survives: ' | wc -l)
[ "$rows" = 11 ] || problems+=" $rows-rows-not-11"
grep -q '<td>no</td><td>(recorded) </td>' "$tmp/dom.html" || problems+=" no-recorded-row"
grep -q '<td>9.30 GiB</td><td>event 4023</td><td>12.08 GiB</td><td>unknown</td><td>expandable_segments:True</td>' \
	"$tmp/dom.html" || problems+=" no-expandable-row"
grep -q '<p>Cause undecided: allocated plus the request (11.95 GiB)' "$tmp/dom.html" || problems+=" no-cause"
if [ -n "$problems" ]; then echo "FAIL what-if table:$problems"; fail=1; else echo "ok what-if table"; fi
# a trace with two devices: one page, a switch, opening on the device whose replay runs out of
# memory; #device=0 draws the other
html="$art/two_devices.html"
"$memsnap" render "$root/testdata/snapshots/devices/two_devices.pickle.zst" -o "$html" 2>/dev/null || { echo "FAIL two_devices: not written"; exit 1; }
chrome --enable-logging=stderr --v=0 --dump-dom "file://$html" >"$tmp/dom.html" 2>"$tmp/chrome.err"
chrome --dump-dom "file://$html#device=0" >"$tmp/dom0.html" 2>/dev/null
problems=""
grep -q '<button class="on">device 1</button>' "$tmp/dom.html" || problems+=" no-switch-on-device-1"
grep -q '<p id="summary">device 1 ' "$tmp/dom.html" || problems+=" not-opened-on-device-1"
grep -q '<p id="summary">device 0 ' "$tmp/dom0.html" || problems+=" device-0-not-drawn"
grep -q 'data-segmap="[0-9]' "$tmp/dom0.html" || problems+=" segmap-not-drawn"
grep -q 'CONSOLE' "$tmp/chrome.err" && problems+=" console-messages"
if [ -n "$problems" ]; then echo "FAIL two_devices:$problems"; fail=1; else echo "ok two_devices"; fi
# names in the trace that try to close the data block and run a script stay text
"$memsnap" render "$root/testdata/snapshots/hostile/script_in_names.json" -o "$art/hostile.html" 2>/dev/null
title=$(chrome --dump-dom "file://$art/hostile.html" 2>/dev/null | grep -o '<title>[^<]*</title>')
case "$title" in
*pwned*|"") echo "FAIL hostile: the page ran a script from the trace's names ($title)"; fail=1 ;;
*) echo "ok hostile (title: $title)" ;;
esac
exit $fail
