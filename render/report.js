/* memsnap's HTML report: draws the data memsnap wrote into #memsnap-data (render/html.c). */
(function () {
	'use strict';
	/* one data block per device: the page opens on the first (or the #device=N asked for) */
	var blocks = document.querySelectorAll('script.memsnap-data');
	var want = /device=(\d+)/.exec(location.hash), block = blocks[0];
	for (var bi = 0; bi < blocks.length; bi++)
		if (blocks[bi].dataset.first) block = blocks[bi];
	for (bi = 0; want && bi < blocks.length; bi++)
		if (blocks[bi].dataset.device === want[1]) block = blocks[bi];
	var D = JSON.parse(block.textContent);
	var T = D.timeline, N = T.first.length;
	/* a snapshot without a trace: the end state as recorded, no timeline (html.c) */
	var NOTRACE = !!D.no_trace;
	var STATE_COLOR = ['#4e79a7', '#a0cbe8', '#f28e2b', '#e8e8e8'];
	var STATE_WORD = ['allocated', 'slack', 'pending free', 'free'];

	/* PyTorch's format_size */
	function fmt(n) {
		if (n === null || n === undefined) return '-';
		if (Math.abs(n) < 1024) return n + ' bytes';
		var u = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = -1;
		do { n /= 1024; i++; } while (Math.abs(n) >= 1024 && i < u.length - 1);
		return n.toFixed(2) + ' ' + u[i];
	}
	function $(id) { return document.getElementById(id); }
	function text(node, s) { node.textContent = s; return node; }
	/* A table of text: its id, its column heads and its rows (arrays of strings). */
	function textTable(id, heads, rows) {
		var t = document.createElement('table'), head = document.createElement('tr');
		var body = document.createElement('tbody');
		t.id = id;
		heads.forEach(function (h) { head.appendChild(text(document.createElement('th'), h)); });
		t.appendChild(document.createElement('thead')).appendChild(head);
		rows.forEach(function (r) {
			var tr = body.appendChild(document.createElement('tr'));
			r.forEach(function (c) { tr.appendChild(text(document.createElement('td'), c)); });
		});
		t.appendChild(body);
		return t;
	}
	function site(i) { return i >= 0 ? D.sites[i] : ''; }
	/* frame i of D.frames as memsnap prints it: "name (file:line)", "name (file)", "name" */
	function frameLabel(i) {
		var f = D.frames[i], name = f[0] || '??', file = f[1];
		if (!file || file === '??') return name;
		return name + ' (' + file + (f[2] ? ':' + f[2] : '') + ')';
	}
	/*
	 * The page's stack filter (#stack-filter): every frame; without torch's own (its Python,
	 * the standard library's, and its C++ plumbing: roughly as memsnap's site rule tells them,
	 * docs/REPLAY.md); or the user's code alone. The site's frame is always shown.
	 */
	var stackFilter = 'all';
	function frameKind(i) {
		var name = D.frames[i][0] || '', file = D.frames[i][1] || '';
		var py = name.indexOf('::') < 0 && (file.charAt(0) === '<' || /\.pyx?$/.test(file));
		if (!py) return /^(c10::|at::_ops::|at::detail::|torch::unwind|torch::CapturedTraceback|std::)/.test(name) ||
			name.indexOf('::') < 0 ? 'plumbing' : 'native';
		if (file.charAt(0) === '<')
			return /^<(stdin|string|console|ipython-input-)/.test(file) ? 'user' : 'python';
		var pkg = /(?:^|[\/])(?:site|dist)-packages[\/](.*)$/.exec(file);
		if (pkg) return /^(torch|functorch)[\/]/.test(pkg[1]) ? 'python' : 'library';
		if (/(^|[\/])(torch|functorch)[\/]/.test(file) || file.indexOf('torchinductor_') >= 0 ||
			/(^|[\/])lib(64)?[\/]py(thon|py)3/.test(file))
			return 'python';
		return 'user';
	}
	function frameShown(i) {
		var k = frameKind(i);
		return stackFilter === 'all' || k === 'user' ||
			(stackFilter === 'no-torch' && (k === 'library' || k === 'native'));
	}
	/* a stack ([frames, the site's position, the positions --frames shows or null for all]):
	   its frames the filter shows, innermost first, the site's marked '> ' */
	function stackText(st) {
		var hidden = 0, lines = [];
		st[0].forEach(function (f, i) {
			if (i !== st[1] && !frameShown(f)) { hidden++; return; }
			lines.push((i === st[1] ? '> ' : '  ') + frameLabel(f));
		});
		if (hidden) lines.push('  (' + hidden + ' frame' + (hidden > 1 ? 's' : '') + ' hidden: ' +
			(stackFilter === 'user' ? 'not the user\'s code' : 'torch\'s own') + ')');
		return lines.join('\n');
	}
	/* the tables' stacks, written again when the filter changes */
	var stackCells = [];
	/* the lines --frames adds below a site in a tooltip: the whole stack, or the site's callers */
	function shownText(st) {
		if (!st) return '';
		if (st[2] === null) return '\n' + stackText(st);
		return st[2].slice(1).map(function (p) { return '\n  ' + frameLabel(st[0][p]); }).join('');
	}
	/* a table cell with a site: its whole stack on hover (title) and on click (details) */
	function siteCell(label, st) {
		var td = document.createElement('td');
		if (!st) return text(td, label);
		var d = document.createElement('details'), sum = document.createElement('summary');
		var full = stackText(st), pre = document.createElement('pre');
		text(sum, label);
		sum.title = full;
		d.appendChild(sum);
		d.appendChild(text(pre, full));
		stackCells.push({ sum: sum, pre: pre, st: st });
		td.appendChild(d);
		return td;
	}

	/* the bucket holding event x */
	function bucketOf(x) {
		var lo = 0, hi = N - 1;
		while (lo < hi) {
			var mid = (lo + hi + 1) >> 1;
			if (T.first[mid] <= x) lo = mid; else hi = mid - 1;
		}
		return lo;
	}

	$('stack-filter').addEventListener('change', function () {
		stackFilter = $('stack-filter').value;
		stackCells.forEach(function (c) {
			var full = stackText(c.st);
			c.sum.title = full;
			text(c.pre, full);
		});
		document.body.dataset.stackFilter = stackFilter;
	});

	/* ---- header and OOM panel ---- */
	/* the allocator settings, or that the snapshot did not record them */
	function settingsText() {
		if (D.settings_recorded === false)
			return D.expandable_segments_seen ? 'settings not recorded ("' + D.alloc_conf +
				'", as the trace\'s segments show; the rest the defaults)'
				: 'settings not recorded (the defaults: "' + D.alloc_conf + '")';
		return D.alloc_conf ? 'settings "' + D.alloc_conf + '"' : 'settings: the defaults (recorded)';
	}
	text($('source'), D.source);
	var least = D.mid_run ? 'at least ' : '';
	var sum = 'device ' + D.device + ' \u00b7 ' + D.events + ' events (' + D.replayed +
		' replayed) \u00b7 peak allocated ' + least + fmt(D.peak.allocated) + ' at event ' + D.peak.index +
		' \u00b7 peak reserved ' + least + fmt(D.peak.reserved) + ' \u00b7 ' + settingsText();
	if (D.cut_short)
		sum += ' \u00b7 the file is cut short (no END record: the recording was killed): it holds the start of the run, and its peaks are those of that part';
	if (D.mid_run && D.mid_run.placed)
		sum += ' \u00b7 the trace starts mid-run: ' + D.mid_run.live_blocks + ' blocks were live ' +
			'before its first event, which its end state cannot place; the replay allocated them first (' +
			fmt(D.mid_run.reserved) + ' reserved); the job\'s peaks may have been higher before';
	else if (D.mid_run)
		sum += ' \u00b7 the trace starts mid-run: ' + D.mid_run.segments + ' segments (' +
			fmt(D.mid_run.reserved) + ') and ' + D.mid_run.live_blocks + ' live blocks were there ' +
			'before its first event, rebuilt from its end state; the job\'s peaks may have been higher before';
	if (D.window[0] > 0 || D.window[1] < D.events)
		sum += ' \u00b7 showing events ' + D.window[0] + '\u2013' + (D.window[1] - 1);
	if (D.limit) sum += ' \u00b7 limit ' + fmt(D.limit) + (D.limit_inferred ? ' (inferred from the ' +
		'recorded OOM: between ' + fmt(D.limit_inferred[0]) + ' and ' + fmt(D.limit_inferred[1]) + ')' : '');
	if (D.device_memory !== null)
		sum += D.device_memory_source === 'inferred_from_oom' ? ' \u00b7 device: at least ' +
			fmt(D.device_memory) + ' (its size is not recorded; what PyTorch could use at the recorded OOM)' :
			' \u00b7 device ' + fmt(D.device_memory);
	if (NOTRACE)
		sum = 'device ' + D.device + ' \u00b7 no trace (taken with history off or enabled="state"): ' +
			'the segments as the snapshot recorded them, nothing earlier \u00b7 ' + fmt(D.peak.allocated) +
			' allocated of ' + fmt(D.peak.reserved) + ' reserved \u00b7 ' + settingsText();
	text($('summary'), sum);
	/* the verdict first: what died where, why, the change that helps, how sure */
	if (D.verdict) {
		$('verdict').hidden = false;
		text($('verdict'), D.verdict.headline);
		$('verdict').className = /^Out of memory/.test(D.verdict.headline) ? 'verdict' : 'verdict ok';
		document.body.dataset.verdict = D.verdict.headline.split(':')[0];
	} else {
		$('verdict').hidden = true;
	}
	/* the device switch: each device's page is drawn afresh from its own data */
	if (blocks.length > 1) {
		var nav = document.createElement('p');
		nav.id = 'devices';
		nav.appendChild(document.createTextNode('devices: '));
		Array.prototype.forEach.call(blocks, function (b) {
			var btn = document.createElement('button');
			text(btn, 'device ' + b.dataset.device);
			if (b === block) btn.className = 'on';
			btn.addEventListener('click', function () {
				location.hash = 'device=' + b.dataset.device;
				location.reload();
			});
			nav.appendChild(btn);
		});
		$('summary').parentNode.insertBefore(nav, $('summary').nextSibling);
	}
	if (!D.diagnosis && !NOTRACE && D.window[0] === 0 && D.window[1] === D.events) {
		$('diagnosis-panel').hidden = false;
		$('diagnosis').appendChild(text(document.createElement('p'), 'memsnap explain ' +
			'gives what the peak is made of (a .zst trace of more than 4 million events is ' +
			'streamed for this page, not read whole).'));
	}
	if (D.diagnosis) {
		var g = D.diagnosis, dg = $('diagnosis');
		$('diagnosis-panel').hidden = false;
		var rules = {
			parameters: g.has_stacks ? 'kept from before the first optimizer step through the last, made by torch.nn, a gradient of its size'
				: 'kept from before the first optimizer step through the last, a gradient of its size (no stacks to tell torch.nn\'s)',
			gradients: 'alive at an optimizer step\'s start, the size of a parameter',
			optimizer_state: 'made in an optimizer step, kept through the later ones, a parameter\'s size',
			activations: 'an iteration\'s own: freed before the next optimizer step, or held when it ran out',
			other: g.model ? 'kept across optimizer steps: workspaces, inputs, caches, leaks'
				: 'kept across optimizer steps or to the end: workspaces, inputs, caches, leaks, and gradients and optimizer state (no parameters to tell them by)',
			unplaced: g.job === 'inference' ? 'allocated before the trace began'
				: 'not placed: from before the trace, or no optimizer steps to place it by',
			weights: 'made before the first forward, alive at the last forward\'s start',
			kv_cache: 'grows by concatenation token by token, or kept across forwards and released (a static or paged cache), or made by code that names a cache'
		};
		if (g.job === 'inference') {
			rules.activations = 'made in a forward, alive at fewer than two forwards\' starts';
			rules.other = 'kept across forwards or to the end: workspaces, inputs, what the job keeps';
		}
		var told = {weights: 1, kv_cache: 1, activations: 1, other: 1};
		dg.appendChild(text(document.createElement('p'), 'At event ' + g.event + ', the most ' +
			'allocated while reserved memory stood at its peak (' + (D.mid_run ? 'at least ' : '') +
			fmt(g.reserved) + '): ' +
			fmt(g.allocated) + ' allocated. Each byte placed by the rule beside it ' +
			'(memsnap explain gives the settings that lower the peak, each replayed).'));
		var dt = document.createElement('table');
		dt.id = 'categories';
		dt.innerHTML = '<thead><tr><th>bytes</th><th>allocations</th><th>category</th><th>rule</th></tr></thead>';
		var db = document.createElement('tbody');
		var row = function (cells) {
			var tr = document.createElement('tr');
			cells.forEach(function (c) { tr.appendChild(text(document.createElement('td'), c)); });
			db.appendChild(tr);
		};
		var state = {parameters: 1, gradients: 1, optimizer_state: 1};
		(g.user_categories || []).forEach(function (c) {
			row([fmt(c[1]), String(c[2]), c[0], 'yours: a frame matches ' + c[3] +
				' (before memsnap\'s rules)']);
		});
		g.categories.forEach(function (c) {
			/* optimizer steps but no parameters found: the three are not told (not 0) */
			if (g.optimizer_steps && !g.model && state[c[0]])
				row(['-', '', c[0], 'not told: no parameters found; what there is of it ' +
					'is in other or unplaced']);
			else if (c[1] || (g.optimizer_steps && (state[c[0]] || c[0] === 'activations' ||
				c[0] === 'other')) || (g.job === 'inference' && told[c[0]]))
				row([fmt(c[1]), String(c[2]), c[0], rules[c[0]]]);
		});
		if (g.rounding >= 0)
			row([fmt(g.rounding), '', 'rounding', 'allocated beyond the bytes asked for']);
		else if (-g.rounding <= g.allocated / 100)
			row([fmt(-g.rounding), '', 'pending', 'asked for beyond the allocated bytes: ' +
				'frees waiting for their streams']);
		else
			row(['-', '', 'rounding', 'the categories hold ' + fmt(-g.rounding) + ' more than ' +
				'the replay had allocated here: the file counts blocks the replay did not ' +
				'have (an inconsistent or cut trace); the categories are not to be trusted']);
		if (g.oom_request)
			row([fmt(g.oom_request), '', 'oom_request', 'the request the recorded run failed ' +
				'on (its OOM), served by the replay and given back right after']);
		row([fmt(g.reserved - g.allocated), '', 'cached_free', 'reserved but not allocated']);
		dt.appendChild(db);
		dg.appendChild(dt);
		if (g.note) dg.appendChild(text(document.createElement('p'), 'Note: ' + g.note));
		if (g.model)
			dg.appendChild(text(document.createElement('p'), 'Model and optimizer (' +
				(g.optimizer || '?') + '): parameters ' + fmt(g.model[0]) + ', gradients ' +
				fmt(g.model[1]) + ', optimizer state ' + fmt(g.model[2]) + '.'));
		if (g.copies)
			dg.appendChild(text(document.createElement('p'), g.copies[0] ?
				'Copies alive at the peak (clone, .to(), .contiguous(), autocast\'s casts): ' +
				fmt(g.copies[0]) + ' in ' + g.copies[1] + ' allocations, the most at ' +
				g.copies[2] + '.' : 'No copies alive at the peak.'));
		if (g.growth_steps > 0)
			dg.appendChild(text(document.createElement('p'), g.growth.length ?
				'Growing from step to step: ' + g.growth.map(function (x) {
					return '+' + fmt(x[1]) + ' a step over ' + x[2] + ' steps at ' + x[0] +
						(x[4] > x[3] ? ' (' + x[3] + ' to ' + x[4] + ' allocations: more kept ' +
						'each step)' : ' (as many allocations each step, larger: growing ' +
						'shapes)');
				}).join('; ') + '.' + (g.growth_by_repetition ? ' The steps are from ' +
					'repetition: where they are a model\'s layers in one pass, growth is what ' +
					'the pass keeps, such as activations for its backward, not a leak.' : '')
				: 'Nothing grows from step to step.'));
		if (g.requests && g.requests.length) {
			/* a generation job: its requests in the steps' place, as memsnap explain gives them */
			dg.appendChild(text(document.createElement('p'), g.requests.length + ' request' +
				(g.requests.length === 1 ? '' : 's') + ' (each a span in which the KV cache holds ' +
				'bytes; the prompt is its first forward)' + (g.eager_forwards_only ? '; the job ' +
				'captured CUDA graphs: a forward replayed from one allocates nothing, so the ' +
				'forwards counted are the eager ones' : '') + ':'));
			dg.appendChild(textTable('requests', ['request', 'first event', 'forwards',
				'prompt peak', 'decode peak', 'KV cache', 'KV added a token'],
				g.requests.map(function (q, k) {
					return [String(k + 1) + (q[6] ? '' : ' (held at the end)') +
						(q[7] ? ' (one request or several: its cache was made in its first ' +
							'forward and kept, not grown, through every other)' : '') +
						(q[8] ? ' (begun before the trace: its prompt not in it)' : ''),
						String(q[0]), String(q[1]),
						q[2] === null ? '-' : fmt(q[2]), q[3] === null ? '-' : fmt(q[3]), fmt(q[4]),
						q[5] === null ? '-' : (q[5] < 0 ? '-' + fmt(-q[5]) : fmt(q[5]))];
				})));
		} else if (g.steps.length) {
			/* the steps as memsnap explain lists them: all where few, else the first, the
			   last, the peak's and the highest peaks */
			var SP = g.steps, stepShown = {}, peakStep = -1;
			SP.forEach(function (s, k) { if (s[0] <= g.event) peakStep = k; });
			if (SP.length <= 12) SP.forEach(function (s, k) { stepShown[k] = 1; });
			else {
				stepShown[0] = stepShown[SP.length - 1] = 1;
				if (peakStep >= 0) stepShown[peakStep] = 1;
				SP.map(function (s, k) { return k; }).sort(function (a, b) {
					return SP[b][1] - SP[a][1] || a - b;
				}).slice(0, 6).forEach(function (k) { stepShown[k] = 1; });
			}
			dg.appendChild(text(document.createElement('p'), SP.length + ' step' +
				(SP.length === 1 ? '' : 's') + ' (from ' + g.steps_from +
				(g.steps_scope ? ' "' + g.steps_scope + '"' : '') + ')' +
				(g.steps_from === 'repetition' ? '; what repeats may be a loop\'s iterations or, in one pass, a model\'s layers' : '') +
				(SP.length > 12 ? '; the first, the last, the peak\'s and the highest shown' : '') +
				': the most the trace\'s allocations asked for at once in each.'));
			dg.appendChild(textTable('steps', ['step', 'first event', 'peak requested',
				'at event'], SP.map(function (s, k) {
					return [String(k + 1 + g.steps_before_trace) + (k === peakStep ? ' (the peak)' : ''),
						String(s[0]), fmt(s[1]), String(s[2])];
				}).filter(function (r, k) { return stepShown[k]; })));
		}
		if (g.eval_loops && g.eval_loops.length) {
			/* a training job's evaluation loops, as memsnap explain gives them */
			dg.appendChild(text(document.createElement('p'), g.eval_loops.length +
				' evaluation loop' + (g.eval_loops.length === 1 ? '' : 's') + ' (forwards with ' +
				'no backward after them and nothing kept for one; their KV cache by the ' +
				'generation rules; memsnap explain lists their requests):'));
			dg.appendChild(textTable('eval-loops', ['loop', 'events', 'forwards',
				'peak requested', 'requests', 'largest KV cache'],
				g.eval_loops.map(function (l, k) {
					return [String(k + 1), l[0] + ' to ' + l[1], String(l[2]), fmt(l[3]),
						String(l[4]), l[4] ? fmt(l[5]) : '-'];
				})));
		}
	}
	if (D.oom) {
		var o = D.oom, p = $('oom');
		$('oom-panel').hidden = false;
		var h = document.createElement('p');
		text(h, 'At event ' + o.index + (o.recorded ? ' (recorded there too)' :
			' (the recorded run succeeded here)') + ': ' + fmt(o.requested) +
			' requested on stream ' + o.stream + ', while ' + fmt(o.free_in_reserved) +
			' was free inside reserved segments; the largest free block was ' +
			fmt(o.largest_free) + '.');
		p.appendChild(h);
		/* the cause, as memsnap explain gives it (explain/verdict.h): the page words none */
		var V = D.verdict && D.verdict.oom, verdict;
		if (!D.verdict)
			verdict = 'The cause: memsnap explain gives it (this trace is too long to read whole for ' +
				'the page).';
		else if (!V)
			verdict = 'Cause: not judged (the verdict above has no OOM to judge).';
		else if (V.cause)
			verdict = 'Cause: ' + V.cause.replace('_', ' ') + (V.causes.length > 1 ? ' (also ' +
				V.causes.slice(1).map(function (c) { return c.cause.replace('_', ' ') + ' ' + fmt(c.bytes); })
					.join(', ') + ')' : '') + '.' + (V.device_full ? ' The device itself was full' +
				(V.outside_pytorch_bytes !== null ? ': ' + fmt(V.outside_pytorch_bytes) + ' of it was ' +
					'held outside PyTorch (one figure at the OOM, assumed constant).' : '.') : '');
		else
			verdict = 'Cause undecided: ' + V.undecided_because + '.';
		p.appendChild(text(document.createElement('p'), verdict));
		document.body.dataset.oomVerdict = V ? (V.cause || 'undecided') : 'none';
		p.appendChild(text(document.createElement('pre'), o.message));
		var t = document.createElement('table');
		t.innerHTML = '<thead><tr><th>bytes</th><th>event</th><th>who holds the memory</th></tr></thead>';
		var tb = document.createElement('tbody');
		o.holders.forEach(function (w) {
			var tr = document.createElement('tr');
			[fmt(w[0]), w[1] < 0 ? 'before the trace' : String(w[1])].forEach(function (c) {
				tr.appendChild(text(document.createElement('td'), c));
			});
			tr.appendChild(siteCell(w[2], w[3]));
			tb.appendChild(tr);
		});
		t.appendChild(tb);
		p.appendChild(t);
		if (D.whatif) {
			p.appendChild(text(document.createElement('h3'),
				'Would another setting have avoided it? (the same device and limit, replayed)'));
			if (D.limit_inferred || D.device_memory_source === 'inferred_from_oom')
				p.appendChild(text(document.createElement('p'), 'These replays rest on ' +
					(D.limit_inferred ? 'a limit inferred from the recorded OOM (' + fmt(D.limit) + ')' :
						'the memory PyTorch could use at the recorded OOM (' + fmt(D.device_memory) +
						'; the device\'s size is not recorded)') + ', not on a recorded figure.'));
			var wt = document.createElement('table');
			wt.id = 'whatif';
			wt.innerHTML = '<thead><tr><th>peak reserved</th><th>first OOM</th>' +
				'<th>least memory that completes</th><th>survives</th><th>setting</th></tr></thead>';
			var wb = document.createElement('tbody');
			D.whatif.forEach(function (r) {
				var tr = document.createElement('tr');
				/* past the failed request is not the job finishing: survives says that */
				var cells = r.error !== undefined ? ['-', '-', '-', '-', r.alloc_conf + ': ' + r.error] :
					[fmt(r.peak_reserved_bytes),
						r.first_oom_index === null ? 'got past it' : 'event ' + r.first_oom_index,
						r.min_memory_bytes === null ? 'never' : fmt(r.min_memory_bytes),
						r.survives === null ? '-' : r.survives,
						(r.recorded ? '(recorded) ' : '') + r.alloc_conf];
				cells.forEach(function (c) { tr.appendChild(text(document.createElement('td'), c)); });
				if (r.survives_why) tr.title = 'survives: ' + r.survives + ': ' + r.survives_why;
				if (r.survives === 'yes') tr.className = 'avoided';
				wb.appendChild(tr);
			});
			wt.appendChild(wb);
			p.appendChild(wt);
		}
	}

	/* ---- the timeline (none without a trace) ---- */
	var timeline, frag, zoomed, byTime = false, hasTime = false, rowBucket = null, NF = 0;
	/* the allocation selected in the per-allocation timeline (an index of D.bands), its redraw */
	var selectedBand = -1, drawBands = null, bandsSelftest = null;
	function xOf(b) { return byTime ? (T.t_ms[b] - T.t_ms[0]) / 1000 : T.first[b]; }
	function eventAt(x) {
		if (!byTime) return x;
		var lo = 0, hi = N - 1;
		while (lo < hi) {
			var mid = (lo + hi + 1) >> 1;
			if (xOf(mid) <= x) lo = mid; else hi = mid - 1;
		}
		return T.first[lo];
	}
	if (NOTRACE) {
		$('timeline-panel').hidden = true;
		$('frag-panel').hidden = true;
		$('bands-panel').hidden = true;
	} else {
		/* ---- the timeline ---- */
		/* the x axis: trace events, or seconds since the window's first bucket */
		hasTime = N > 1 && T.t_ms[N - 1] > T.t_ms[0];
		var rows = [], frows = [];
		var SA = T.stream_alloc, streamLabels = [];
		D.streams.forEach(function (s) { streamLabels.push('allocated, stream ' + s); });
		if (SA.length > D.streams.length && SA[SA.length - 1].some(function (v) { return v !== 0; }))
			streamLabels.push('allocated, other streams');
		/* memory outside PyTorch's allocator (raw CUDA calls the recorder saw), when there was any */
		var hasExt = T.ext && T.ext.some(function (v) { return v !== 0; });
		/* private pools (CUDA graphs, MemPools): their share of allocated and reserved */
		var hasPriv = T.priv_res && T.priv_res.some(function (v) { return v !== 0; });
		for (var i = 0; i < N; i++) {
			var row = [T.first[i], [T.alloc_min[i], T.alloc[i], T.alloc_max[i]],
				[T.res_min[i], T.res[i], T.res_max[i]],
				[T.active_max[i], T.active_max[i], T.active_max[i]],
				[T.small_res[i], T.small_res[i], T.small_res[i]],
				[T.large_res[i], T.large_res[i], T.large_res[i]]];
			for (var k = 0; k < streamLabels.length; k++) row.push([SA[k][i], SA[k][i], SA[k][i]]);
			if (hasExt) row.push([T.ext[i], T.ext[i], T.ext[i]]);
			if (hasPriv) {
				row.push([T.priv_alloc[i], T.priv_alloc[i], T.priv_alloc[i]]);
				row.push([T.priv_res[i], T.priv_res[i], T.priv_res[i]]);
			}
			rows.push(row);
			var fr = T.free_in_reserved[i];
			frows.push([T.first[i], T.res[i] - T.alloc[i], T.inactive_split[i], T.largest_free[i],
				fr ? 1 - T.largest_free[i] / fr : 0]);
		}
		function buildRows() {
			for (var i = 0; i < N; i++) {
				rows[i][0] = xOf(i);
				frows[i][0] = xOf(i);
			}
		}
		function marks(canvas, area, g) {
			function line(index, color, label, dy) {
				var px = g.toDomXCoord(xOf(bucketOf(index)));
				if (px < area.x || px > area.x + area.w) return;
				canvas.fillStyle = color;
				canvas.fillRect(px - 1, area.y, 2, area.h);
				canvas.fillText(label, px + 4, area.y + 12 + dy);
			}
			line(D.peak.index, '#59a14f', 'peak', 0);
			if (D.oom) line(D.oom.index, '#e15759', 'OOM', 14);
			if (selectedBand >= 0) {
				line(D.bands.first[selectedBand], '#222', 'allocated', 28);
				if (D.bands.last[selectedBand] >= 0)
					line(D.bands.last[selectedBand], '#222', 'freed', 42);
			}
		}
		var axes = { y: { valueFormatter: fmt, axisLabelFormatter: fmt, axisLabelWidth: 80,
			labelsKMG2: true } }; // ticks at binary multiples, as fmt labels them
		var PALETTE = ['#4e79a7', '#e15759', '#76b7b2', '#b07aa1', '#9c755f', '#edc948', '#59a14f',
			'#ff9da7', '#bab0ac', '#8cd17d', '#f1ce63', '#499894', '#d37295', '#86bcb6'];
		var seriesLabels = ['allocated', 'reserved', 'active (most)', 'reserved, small pool',
			'reserved, large pool'].concat(streamLabels);
		if (hasExt) seriesLabels.push('outside PyTorch (raw CUDA)');
		if (hasPriv) seriesLabels.push('allocated, private pools', 'reserved, private pools');
		var visible = seriesLabels.map(function (l, k) {
			return k < 3 || l === 'outside PyTorch (raw CUDA)' || l.indexOf('private pools') > 0;
		});
		timeline = new Dygraph($('timeline'), rows, {
			labels: ['event'].concat(seriesLabels),
			customBars: true, visibility: visible, includeZero: true,
			colors: seriesLabels.map(function (l, k) { return PALETTE[k % PALETTE.length]; }),
			xlabel: 'event', axes: axes, legend: 'always', labelsDiv: $('timeline-legend'),
			underlayCallback: marks,
			zoomCallback: function (x0, x1) { zoomed(x0, x1); },
			highlightCallback: function (e, x, pts, row) {
				var b = rowBucket ? rowBucket[row] : row, s = 'events ' + T.first[b] + '\u2013' + T.last[b] + ', t = ' +
					(T.t_ms[b] / 1000).toFixed(3) + ' s\n' +
					'allocated ' + fmt(T.alloc_min[b]) + ' \u2013 ' + fmt(T.alloc_max[b]) +
					', reserved ' + fmt(T.res_min[b]) + ' \u2013 ' + fmt(T.res_max[b]) +
					(T.ann[b] >= 0 && D.strings[T.ann[b]] ? '\nin ' + D.strings[T.ann[b]] : '') +
					(T.big_size[b] ? '\nlargest allocation: ' + fmt(T.big_size[b]) + ' at event ' +
						T.big_index[b] + (T.big_site[b] >= 0 ? ', ' + site(T.big_site[b]) : '') : '');
				text($('hover'), s);
			},
			clickCallback: function (e, x) { showNearest(eventAt(x)); }
		});
		/*
		 * Zoomed in to less than half of the window, the timeline draws the finer level (D.fine:
		 * eight times the buckets, extremes of allocated and reserved), over the visible range and
		 * as much again on each side for panning; the other series keep their coarse buckets.
		 */
		var FD = D.fine;
		NF = FD.first.length;
		function fineX(j) { return byTime ? (FD.t_ms[j] - T.t_ms[0]) / 1000 : FD.first[j]; }
		zoomed = function (x0, x1) {
			var full = xOf(N - 1) - xOf(0), w = x1 - x0;
			if (!(w < full / 2) || NF <= N) {
				if (rowBucket) {
					rowBucket = null;
					timeline.updateOptions({ file: rows, dateWindow: [x0, x1] });
				}
				return;
			}
			var lo = x0 - w, hi = x1 + w, out = [], map = [];
			for (var j = 0; j < NF; j++) {
				var x = fineX(j);
				if ((j + 1 < NF && fineX(j + 1) < lo) || (x > hi && out.length)) continue;
				var b = bucketOf(FD.first[j]), row = rows[b].slice();
				row[0] = x;
				row[1] = [FD.alloc_min[j], FD.alloc_max[j], FD.alloc_max[j]];
				row[2] = [FD.res_min[j], FD.res_max[j], FD.res_max[j]];
				out.push(row);
				map.push(b);
			}
			rowBucket = map;
			timeline.updateOptions({ file: out, dateWindow: [x0, x1] });
			document.body.dataset.fineRows = String(out.length);
		};
		/* a switch per series */
		seriesLabels.forEach(function (l, k) {
			var lab = document.createElement('label'), box = document.createElement('input');
			box.type = 'checkbox';
			box.checked = visible[k];
			box.addEventListener('change', function () { timeline.setVisibility(k, box.checked); });
			lab.appendChild(box);
			lab.appendChild(document.createTextNode(l + ' '));
			$('series').appendChild(lab);
		});
		frag = new Dygraph($('frag'), frows, {
			labels: ['event', 'reserved \u2212 allocated', 'inactive split', 'largest free block',
				'fragmentation'],
			colors: ['#e15759', '#f28e2b', '#59a14f', '#555'],
			series: { fragmentation: { axis: 'y2' } },
			axes: { y: axes.y, y2: { valueRange: [0, 1.05], axisLabelWidth: 40 } },
			xlabel: 'event', legend: 'always', labelsDiv: $('frag-legend'), underlayCallback: marks,
			clickCallback: function (e, x) { showNearest(eventAt(x)); }
		});
		/* events or seconds along x */
		if (hasTime) {
			var lab = document.createElement('label'), box = document.createElement('input');
			box.type = 'checkbox';
			box.id = 'by-time';
			box.addEventListener('change', function () {
				byTime = box.checked;
				buildRows();
				rowBucket = null;
				var name = byTime ? 'seconds' : 'event';
				timeline.updateOptions({ file: rows, xlabel: name, dateWindow: null });
				frag.updateOptions({ file: frows, xlabel: name, dateWindow: null });
			});
			lab.appendChild(box);
			lab.appendChild(document.createTextNode('x axis in seconds '));
			$('series').insertBefore(lab, $('series').firstChild);
		}
		/* the two charts zoom and pan together */
		var syncing = false;
		function follow(from, to) {
			from.updateOptions({ drawCallback: function (g, initial) {
				if (from === timeline) document.body.dataset.timeline = 'drawn';
				if (from === timeline && drawBands) drawBands(g.xAxisRange());
				if (initial || syncing) return;
				syncing = true;
				to.updateOptions({ dateWindow: g.xAxisRange() });
				syncing = false;
			} });
		}
		follow(timeline, frag);
		follow(frag, timeline);
		bandsChart();
	}

	/*
	 * ---- the allocations, a band each (as PyTorch's memory_viz draws its active memory) ----
	 * The largest allocations of the range shown (D.band_parts: of the window, of its eighths,
	 * of its 64ths) are stacked in the order they were made, from the event that made each to
	 * the one that freed it: when one is freed, those above it drop. Under them, one grey band
	 * holds every other allocated byte (the timeline's most allocated per column, less the
	 * bands). Drawn per pixel column, so the cost follows the bands and the width, not the
	 * trace's length.
	 */
	function bandsChart() {
		var B = D.bands, BP = D.band_parts;
		if (!B || !B.first.length || !BP || !BP.length) {
			$('bands-panel').hidden = true;
			return;
		}
		var NB = B.first.length, WFROM = D.window[0], WTO = D.window[1], FD = D.fine;
		var CAT_NAMES = ['parameters', 'gradients', 'optimizer state', 'activations', 'other',
			'unplaced', 'weights', 'KV cache'];
		var CAT_COLOR = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#b07aa1', '#9c755f',
			'#59a14f', '#edc948'];
		/* the user's categories follow memsnap's (band categories 8 + i) */
		var USER_COLOR = ['#ff9da7', '#499894', '#d37295', '#86bcb6', '#8cd17d', '#f1ce63',
			'#a0cbe8', '#ffbe7d'];
		((D.diagnosis && D.diagnosis.user_categories) || []).forEach(function (c, i) {
			CAT_NAMES.push(c[0]);
			CAT_COLOR.push(USER_COLOR[i % USER_COLOR.length]);
		});
		var SITE_COLOR = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948',
			'#b07aa1', '#ff9da7', '#9c755f', '#499894', '#d37295', '#86bcb6', '#8cd17d', '#f1ce63'];
		var hasCat = B.cat.some(function (c) { return c >= 0; });
		var colourBy = hasCat ? 'category' : 'site', bc = $('bands'), last = null;
		function endOf(i) { return B.last[i] < 0 ? WTO : B.last[i]; }
		/*
		 * By site: the sites holding the most bytes among the bands get a colour each, the
		 * rest one colour together, so that no two sites look alike
		 */
		var OTHER_SITES = '#a0a0a0', siteBytes = {}, siteColour = {}, nOtherSites = 0;
		for (var bi0 = 0; bi0 < NB; bi0++)
			if (B.site[bi0] >= 0) siteBytes[B.site[bi0]] = (siteBytes[B.site[bi0]] || 0) + B.size[bi0];
		var sitesByBytes = Object.keys(siteBytes).sort(function (a, b) {
			return siteBytes[b] - siteBytes[a] || a - b;
		});
		document.body.dataset.bandsSites = String(sitesByBytes.length);
		sitesByBytes.forEach(function (st, r) {
			if (r < SITE_COLOR.length) siteColour[st] = SITE_COLOR[r];
			else nOtherSites++;
		});
		var CTX = D.band_compile_contexts;
		function colourOf(i) {
			if (colourBy === 'category') return B.cat[i] >= 0 ? CAT_COLOR[B.cat[i]] : '#999';
			if (colourBy === 'context')
				return B.ctx[i] < 0 ? '#999' : CTX[B.ctx[i]] === 'N/A' ? '#c7c7c7'
					: SITE_COLOR[B.ctx[i] % SITE_COLOR.length];
			if (B.site[i] >= 0) return siteColour[B.site[i]] || OTHER_SITES;
			/* without a site (no stacks recorded): a colour per allocation, as memory_viz */
			return SITE_COLOR[i % SITE_COLOR.length];
		}
		/* the bands of events [e0, e1): the finest level whose parts are at least half the range */
		function bandsIn(e0, e1) {
			var n = WTO - WFROM, level = 0;
			for (var l = BP.length - 1; l > 0; l--)
				if (e1 - e0 <= 2 * Math.ceil(n / BP[l].length)) { level = l; break; }
			var w = Math.ceil(n / BP[level].length), parts = BP[level];
			var p0 = Math.max(0, Math.floor((e0 - WFROM) / w));
			var p1 = Math.min(parts.length - 1, Math.floor((e1 - 1 - WFROM) / w));
			var seen = new Uint8Array(NB), out = [];
			for (var p = p0; p <= p1; p++)
				parts[p].forEach(function (i) { if (!seen[i]) { seen[i] = 1; out.push(i); } });
			if (selectedBand >= 0 && !seen[selectedBand]) out.push(selectedBand);
			out.sort(function (a, b) { return a - b; });
			return { level: level, idx: out };
		}
		function legend() {
			var box = $('bands-legend');
			box.textContent = '';
			var items = [];
			if (colourBy === 'category') {
				var have = {};
				B.cat.forEach(function (c) { have[c] = 1; });
				CAT_NAMES.forEach(function (n, k) { if (have[k]) items.push([CAT_COLOR[k], n]); });
			} else if (colourBy === 'context') {
				var seenCtx = {};
				B.ctx.forEach(function (c) { seenCtx[c] = 1; });
				CTX.forEach(function (n, k) {
					if (seenCtx[k]) items.push([n === 'N/A' ? '#c7c7c7' : SITE_COLOR[k % SITE_COLOR.length],
						n === 'N/A' ? 'outside compiled regions' : n]);
				});
			} else {
				/* the sites with a colour, most bytes first, and the others together */
				sitesByBytes.slice(0, SITE_COLOR.length).forEach(function (st) {
					items.push([siteColour[st], site(+st)]);
				});
				if (nOtherSites)
					items.push([OTHER_SITES, nOtherSites + ' other site' + (nOtherSites > 1 ? 's' : '')]);
			}
			items.push(['#d9d9d9', 'every other allocation']);
			items.forEach(function (it) {
				var sw = document.createElement('span');
				sw.className = 'sw';
				sw.style.background = it[0];
				box.appendChild(sw);
				box.appendChild(document.createTextNode(it[1] + ' '));
			});
		}
		drawBands = function (range) {
			var t0 = performance.now();
			var e0 = Math.max(WFROM, Math.floor(eventAt(range[0])));
			var e1 = Math.min(WTO, Math.ceil(eventAt(range[1])) + 1);
			if (e1 <= e0) e1 = e0 + 1;
			var dpr = window.devicePixelRatio || 1, cssW = $('timeline').clientWidth || 900, H = 300;
			var area = timeline.getArea(), X0 = area.x, W = Math.max(10, Math.floor(area.w));
			bc.width = cssW * dpr;
			bc.height = H * dpr;
			bc.style.width = cssW + 'px';
			bc.style.height = H + 'px';
			var c = bc.getContext('2d');
			c.setTransform(dpr, 0, 0, dpr, 0, 0);
			c.clearRect(0, 0, cssW, H);
			/*
			 * Column c shows the state after sample[c], the last event of the last bucket of
			 * the finer level that ends in it (or the column before's, where none does), whose
			 * allocated bytes the data has: the grey band is what the bands drawn leave of them.
			 * An allocation made and freed between two samples is in the grey band until
			 * zooming in draws it.
			 */
			var got = bandsIn(e0, e1), idx = got.idx, span = (e1 - e0) / W, NFD = FD.first.length;
			/*
			 * and colMax[c], the most allocated within the buckets that end in it: a spike
			 * shorter than a column, drawn by no band, still shows as the line on top
			 */
			var sample = new Float64Array(W), alloc = new Float64Array(W), x, k;
			var colMax = new Float64Array(W);
			var j = 0, endOfFine = function (j) { return (j + 1 < NFD ? FD.first[j + 1] : WTO) - 1; };
			while (j + 1 < NFD && FD.first[j + 1] <= e0) j++; /* the bucket holding e0 */
			var sj = j;
			for (x = 0; x < W; x++) {
				var colLast = e0 + Math.floor((x + 1) * span) - 1;
				colMax[x] = 0;
				while (j < NFD && endOfFine(j) <= colLast) {
					colMax[x] = Math.max(colMax[x], FD.alloc_max[j]);
					sj = j;
					j++;
				}
				sample[x] = endOfFine(sj);
				alloc[x] = FD.alloc[sj];
				colMax[x] = Math.max(colMax[x], alloc[x]);
			}
			/* the columns whose sample falls in [first, end) */
			function firstCol(ev) { /* the first column whose sample is at least ev */
				var lo = 0, hi = W;
				while (lo < hi) { var mid = (lo + hi) >> 1; if (sample[mid] >= ev) hi = mid; else lo = mid + 1; }
				return lo;
			}
			var cs = new Int32Array(idx.length), ce = new Int32Array(idx.length);
			var drawn = new Float64Array(W);
			for (k = 0; k < idx.length; k++) {
				var i = idx[k];
				cs[k] = firstCol(B.first[i]);
				ce[k] = firstCol(endOf(i)) - 1;
				for (x = cs[k]; x <= ce[k]; x++) drawn[x] += B.size[i];
			}
			var base = new Float64Array(W), ymax = 1;
			for (x = 0; x < W; x++) {
				base[x] = Math.max(0, alloc[x] - drawn[x]);
				ymax = Math.max(ymax, base[x] + drawn[x], colMax[x]);
			}
			var PT = 8, PB = 4, ph = H - PT - PB;
			var yOf = function (v) { return PT + ph - ph * v / ymax; };
			/* the y axis: lines at a binary step (a power of two, or three times one), four or
			   fewer of them, as fmt labels in binary units */
			c.font = '11px system-ui, sans-serif';
			c.fillStyle = '#666';
			c.strokeStyle = '#eee';
			var step = 1;
			while (step * 4 < ymax)
				step *= 2;
			if (step * 3 / 4 * 4 >= ymax && step % 4 === 0)
				step = step * 3 / 4;
			for (var v = 0; v <= ymax; v += step) {
				var yy = yOf(v);
				c.beginPath(); c.moveTo(X0, yy); c.lineTo(X0 + W, yy); c.stroke();
				c.fillText(fmt(v), 2, yy + (v ? 4 : -2));
			}
			/* a band between lo[x] and lo[x] + size over columns [a, z], as steps */
			function path(lo, size, a, z) {
				c.beginPath();
				var py = yOf(lo[a] + size);
				c.moveTo(X0 + a, py);
				for (var x = a + 1; x <= z; x++) {
					var ny = yOf(lo[x] + size);
					if (ny !== py) { c.lineTo(X0 + x, py); c.lineTo(X0 + x, ny); py = ny; }
				}
				c.lineTo(X0 + z + 1, py);
				py = yOf(lo[z]);
				c.lineTo(X0 + z + 1, py);
				for (x = z - 1; x >= a; x--) {
					var ly = yOf(lo[x]);
					if (ly !== py) { c.lineTo(X0 + x + 1, py); c.lineTo(X0 + x + 1, ly); py = ly; }
				}
				c.lineTo(X0 + a, py);
				c.closePath();
			}
			var acc = new Float64Array(W), selK = -1;
			for (k = 0; k < idx.length; k++) {
				var bi = idx[k];
				if (cs[k] > ce[k]) continue;
				c.fillStyle = colourOf(bi);
				path(acc, B.size[bi], cs[k], ce[k]);
				c.fill();
				if (bi === selectedBand) {
					selK = k;
					c.strokeStyle = '#000';
					c.lineWidth = 2;
					c.stroke();
					c.lineWidth = 1;
				}
				for (x = cs[k]; x <= ce[k]; x++) acc[x] += B.size[bi];
			}
			/* the grey band on top: up to the allocated bytes, so the bands below stay put */
			c.fillStyle = '#d9d9d9';
			c.beginPath();
			c.moveTo(X0, yOf(acc[0]));
			for (x = 0; x < W; x++) { c.lineTo(X0 + x, yOf(acc[x] + base[x])); c.lineTo(X0 + x + 1, yOf(acc[x] + base[x])); }
			for (x = W - 1; x >= 0; x--) { c.lineTo(X0 + x + 1, yOf(acc[x])); c.lineTo(X0 + x, yOf(acc[x])); }
			c.closePath();
			c.fill();
			/* the line: the most allocated within each column, where it is above what is drawn */
			c.strokeStyle = '#555';
			c.beginPath();
			var spikes = 0;
			for (x = 0; x < W; x++) {
				if (colMax[x] <= acc[x] + base[x]) continue;
				spikes++;
				c.moveTo(X0 + x, yOf(colMax[x]));
				c.lineTo(X0 + x + 1, yOf(colMax[x]));
				c.moveTo(X0 + x + 0.5, yOf(colMax[x]));
				c.lineTo(X0 + x + 0.5, yOf(acc[x] + base[x]));
			}
			c.stroke();
			last = { idx: idx, cs: cs, ce: ce, base: base, yOf: yOf, X0: X0, W: W, PT: PT, ph: ph,
				ymax: ymax, e0: e0, e1: e1, span: span, colMax: colMax, acc: acc };
			document.body.dataset.bandsSpikes = String(spikes);
			var ms = performance.now() - t0;
			document.body.dataset.bands = 'drawn';
			document.body.dataset.bandsDrawn = String(idx.length);
			document.body.dataset.bandsLevel = String(got.level);
			document.body.dataset.bandsMs = String(Math.round(ms));
			document.body.dataset.bandsMsMax = String(Math.max(Math.round(ms),
				Number(document.body.dataset.bandsMsMax || 0)));
			return selK;
		};
		/* the band under the pointer: its index in D.bands, or -1 */
		function bandAt(e) {
			if (!last) return -1;
			var r = bc.getBoundingClientRect(), x = Math.floor(e.clientX - r.left - last.X0);
			var v = (last.PT + last.ph - (e.clientY - r.top)) / last.ph * last.ymax;
			if (x < 0 || x >= last.W || v < 0) return -1;
			var acc = 0;
			for (var k = 0; k < last.idx.length; k++) {
				if (last.cs[k] > x || last.ce[k] < x) continue;
				var i = last.idx[k];
				if (v < acc + B.size[i]) return i;
				acc += B.size[i];
			}
			return -1;
		}
		function bandText(i) {
			var st = B.stack[i] >= 0 ? D.band_stacks[B.stack[i]] : null;
			return fmt(B.size[i]) + ', allocated at event ' + B.first[i] +
				(B.last[i] >= 0 ? ', freed at event ' + B.last[i] : ', not freed in the window') +
				(B.cat[i] >= 0 ? ' (' + CAT_NAMES[B.cat[i]] + ')' : '') +
				'\naddress 0x' + B.addr[i].toString(16) +
				(st ? '\n' + stackText(st) : B.site[i] >= 0 ? '\n' + site(B.site[i]) : '\nno stack recorded') +
				(B.fwd && B.fwd[i] >= 0 ? '\nmade in backward; forward made its tensor at:\n' +
					stackText(D.band_stacks[B.fwd[i]]) : '');
		}
		bc.addEventListener('mousemove', function (e) {
			var i = bandAt(e);
			tip.hidden = i < 0;
			if (i < 0) return;
			text(tip, bandText(i));
			tip.style.left = (e.clientX + 12) + 'px';
			tip.style.top = (e.clientY + 12) + 'px';
			document.body.dataset.bandsHover = String(i);
		});
		bc.addEventListener('mouseleave', function () { tip.hidden = true; });
		/* a click selects the allocation everywhere: outlined here, its life marked on the
		   timeline, the segment map at the moment nearest its making while it lived */
		bc.addEventListener('click', function (e) {
			var i = bandAt(e);
			selectedBand = i;
			text($('bands-hover'), i >= 0 ? bandText(i) : '');
			timeline.updateOptions({}); /* the marks, and this chart again */
			if (i < 0) return;
			var best = -1;
			M.forEach(function (m, k) {
				if (m.index >= B.first[i] && m.index < endOf(i) &&
					(best < 0 || m.index < M[best].index)) best = k;
			});
			if (best >= 0) show(best); else showNearest(B.first[i]);
		});
		var sel = $('bands-colour');
		if (!hasCat) sel.querySelector('option[value=category]').disabled = true;
		if (!CTX) sel.querySelector('option[value=context]').disabled = true;
		sel.value = colourBy;
		sel.addEventListener('change', function () {
			colourBy = sel.value;
			legend();
			drawBands(timeline.xAxisRange());
		});
		legend();
		drawBands(timeline.xAxisRange());
		/* #selftest: hover the tallest band where it is tallest, and click it */
		bandsSelftest = function () {
			if (!last) return 'not-drawn';
			/* the chart reaches the most allocated of every bucket wholly in the range shown */
			var top = 0, want = 0, NF = FD.first.length;
			for (var q = 0; q < last.W; q++) top = Math.max(top, last.colMax[q]);
			for (var jj = 0; jj < NF; jj++) {
				var end = (jj + 1 < NF ? FD.first[jj + 1] : WTO) - 1;
				if (FD.first[jj] >= last.e0 && end < last.e1) want = Math.max(want, FD.alloc_max[jj]);
			}
			if (top < want) return 'peak-missed';
			/* coloured by site, no two sites share a colour (but the others' together) */
			var was = colourBy, owner = {};
			colourBy = 'site';
			for (var bi1 = 0; bi1 < NB; bi1++) {
				if (B.site[bi1] < 0) continue;
				var col = colourOf(bi1);
				if (col === OTHER_SITES) continue;
				if (owner[col] !== undefined && owner[col] !== B.site[bi1]) { colourBy = was; return 'sites-share-a-colour'; }
				owner[col] = B.site[bi1];
			}
			colourBy = was;
			bc.scrollIntoView();
			var acc = new Float64Array(last.W), pick = -1, vy = 0, x = 0, best = 0;
			for (var k = 0; k < last.idx.length; k++) {
				var i = last.idx[k], h = last.yOf(0) - last.yOf(B.size[i]);
				for (var c = last.cs[k]; c <= last.ce[k]; c++) {
					if (h > best) {
						best = h;
						pick = i;
						x = c;
						vy = (last.yOf(acc[c]) + last.yOf(acc[c] + B.size[i])) / 2;
					}
					acc[c] += B.size[i];
				}
			}
			if (pick < 0) return 'no-band-to-hover';
			var r = bc.getBoundingClientRect(), px = r.left + last.X0 + x + 0.5, py = r.top + vy;
			var target = document.elementFromPoint(px, py);
			['mousemove', 'click'].forEach(function (type) {
				target.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true,
					clientX: px, clientY: py, view: window }));
			});
			var said = tip.hidden ? '' : tip.textContent;
			/* the segment map shows it, where a moment falls in its life */
			/* (where a moment in its life has a segment at its recorded address: a replay may
			   place blocks elsewhere than the recording did) */
			var lives = M.some(function (m) {
				return m.index >= B.first[pick] && m.index < endOf(pick) &&
					m.segments.some(function (g) {
						var a = parseInt(g[0], 16);
						return B.addr[pick] >= a && B.addr[pick] < a + g[1];
					});
			});
			if (lives && document.body.dataset.segmapSelected !== String(pick)) return 'segmap-not-selected';
			var stack = B.stack[pick] < 0 || said.split('\n').length > 3;
			/* whether the hovered band had a stack to show, and showed it */
			document.body.dataset.selftestBandsStack = B.stack[pick] < 0 ? 'none' :
				said.split('\n').length > 3 ? 'shown' : 'missing';
			/* a band made in backward shows where forward made its tensor (forward_frames) */
			var fw = B.fwd ? B.fwd.findIndex(function (v) { return v >= 0; }) : -1;
			document.body.dataset.selftestBandsForward = fw < 0 ? 'none' :
				bandText(fw).indexOf('forward made its tensor at:') > 0 ? 'shown' : 'missing';
			/* coloured by compile context, the legend names the compiled regions */
			if (CTX) {
				var was2 = colourBy;
				colourBy = 'context';
				legend();
				var lg = $('bands-legend').textContent;
				colourBy = was2;
				legend();
				document.body.dataset.selftestBandsContext = CTX.some(function (n) {
					return n !== 'N/A' && lg.indexOf(n) >= 0;
				}) ? 'coloured' : 'missing';
			} else {
				document.body.dataset.selftestBandsContext = 'none';
			}
			return said.indexOf(', allocated at event ' + B.first[pick] + ',') > 0 && stack &&
				selectedBand === pick ? 'hover-shows-stack-click-selects' : 'hover-or-click-failed';
		};
	}

	/* ---- the segment map ---- */
	var M = D.moments, shown = -1, hit = [];
	var canvas = $('segmap'), tip = $('tip');
	var ROW = 18, LABEL = 330, WIDTH = 900;

	function momentName(m) {
		return m.label === 'peak' ? 'at the peak' : m.label === 'oom' ? 'at the OOM' :
			m.label === 'snapshot' ? 'as the snapshot recorded them' : 'after event ' + m.index;
	}
	function showNearest(x) {
		var best = 0;
		for (var i = 1; i < M.length; i++)
			if (Math.abs(M[i].index - x) < Math.abs(M[best].index - x)) best = i;
		show(best);
	}
	function show(k) {
		var m = M[k];
		if (!m) return;
		shown = k;
		text($('moment-label'), momentName(m) + ': ' + m.segments.length + ' segments, ' +
			fmt(m.allocated) + ' allocated of ' + fmt(m.reserved) + ' reserved');
		var fail = m.label === 'oom' && D.oom ? D.oom : null;
		var segs = m.segments, maxSize = 1;
		segs.forEach(function (g) { maxSize = Math.max(maxSize, g[1]); });
		if (fail) maxSize = Math.max(maxSize, fail.alloc_size);
		var rowsN = segs.length + (fail ? 1 : 0);
		var labels = segs.map(function (g) {
			return g[0] + ' ' + fmt(g[1]) + ' stream ' + g[2] + (g[3] ? ' small' : ' large') +
				(g[4] ? ' exp' : '') + (g[6] ? ' pool ' + g[6] : '');
		});
		/* the bars start after the longest label */
		var mc = canvas.getContext('2d');
		mc.font = '11px ui-monospace, monospace';
		LABEL = 330;
		labels.forEach(function (l) { LABEL = Math.max(LABEL, Math.ceil(mc.measureText(l).width) + 16); });
		var dpr = window.devicePixelRatio || 1;
		canvas.width = (LABEL + WIDTH + 10) * dpr;
		canvas.height = (rowsN * ROW + 4) * dpr;
		canvas.style.width = (LABEL + WIDTH + 10) + 'px';
		canvas.style.height = (rowsN * ROW + 4) + 'px';
		var c = canvas.getContext('2d');
		c.setTransform(dpr, 0, 0, dpr, 0, 0);
		c.font = '11px ui-monospace, monospace';
		c.textBaseline = 'middle';
		hit = [];
		var y = 2, holeSeg = -1;
		if (fail) {
			var w = Math.max(4, WIDTH * fail.alloc_size / maxSize);
			c.fillStyle = '#e15759';
			c.fillRect(LABEL, y + 2, w, ROW - 4);
			c.fillStyle = '#222';
			c.fillText('failed request ' + fmt(fail.requested), 4, y + ROW / 2);
			hit.push({ y: y, x0: LABEL, x1: LABEL + w, text: 'the request that failed: ' +
				fmt(fail.requested) + ' (a ' + fmt(fail.alloc_size) + ' segment)\nlargest free block ' +
				fmt(fail.largest_free) });
			y += ROW;
			if (fail.holes.length) {
				var ha = BigInt(fail.holes[0][0]);
				segs.forEach(function (g, i) {
					var a = BigInt(g[0]);
					if (a <= ha && ha < a + BigInt(g[1])) holeSeg = i;
				});
			}
		}
		/* the allocation selected in the per-allocation timeline, if alive at this moment */
		var selAddr = -1, SB = D.bands;
		if (selectedBand >= 0 && SB.first[selectedBand] <= m.index &&
			(SB.last[selectedBand] < 0 || m.index < SB.last[selectedBand]))
			selAddr = SB.addr[selectedBand];
		segs.forEach(function (g, i) {
			var w = Math.max(60, WIDTH * g[1] / maxSize), x = LABEL, cells = g[5];
			var cellAddr = parseInt(g[0], 16);
			c.fillStyle = '#222';
			c.fillText(labels[i], 4, y + ROW / 2);
			for (var j = 0; j < cells.length; j += 5) {
				var size = cells[j], st = cells[j + 1], req = cells[j + 2], s = cells[j + 3];
				var n = cells[j + 4], cw = w * size / g[1];
				c.fillStyle = STATE_COLOR[st];
				c.fillRect(x, y + 2, cw, ROW - 4);
				if (st === 0 && req < size && n === 1) {
					var sw = cw * (size - req) / size;
					c.fillStyle = STATE_COLOR[1];
					c.fillRect(x + cw - sw, y + 2, sw, ROW - 4);
				}
				if (selAddr >= cellAddr && selAddr < cellAddr + size) {
					c.strokeStyle = '#000';
					c.lineWidth = 2;
					c.strokeRect(x, y + 1, Math.max(cw, 2), ROW - 2);
					c.lineWidth = 1;
					document.body.dataset.segmapSelected = String(selectedBand);
				}
				cellAddr += size;
				hit.push({ y: y, x0: x, x1: x + cw, text: (n > 1 ? n + ' blocks, mostly ' : '') +
					STATE_WORD[st] + ' ' + fmt(size) + (st === 0 && n === 1 && req < size ?
					' (requested ' + fmt(req) + ')' : '') +
					(s >= 0 ? '\n' + site(s) + shownText(D.site_stacks[s]) : '') });
				x += cw;
			}
			c.strokeStyle = i === holeSeg ? '#e15759' : '#888';
			c.lineWidth = i === holeSeg ? 2 : 1;
			c.strokeRect(LABEL, y + 2, w, ROW - 4);
			y += ROW;
		});
		var bs = $('moment-buttons').children;
		for (var b = 0; b < bs.length; b++)
			bs[b].className = Number(bs[b].dataset.k) === k ? 'on' : '';
		document.body.dataset.segmap = String(m.index);
	}
	/* the box of boxes() (rows of height rowH on canvas el) under the pointer of event e */
	function boxAt(el, boxes, rowH, e) {
		var r = el.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
		for (var i = 0; i < boxes.length; i++) {
			var h = boxes[i];
			if (y >= h.y && y < h.y + rowH && x >= h.x0 && x < h.x1) return h;
		}
		return null;
	}
	/* hovering a box of canvas el shows textOf(box) in the tooltip */
	function tooltip(el, boxes, rowH, textOf) {
		el.addEventListener('mousemove', function (e) {
			var h = boxAt(el, boxes(), rowH, e);
			tip.hidden = !h;
			if (!h) return;
			text(tip, textOf(h));
			tip.style.left = (e.clientX + 12) + 'px';
			tip.style.top = (e.clientY + 12) + 'px';
		});
		el.addEventListener('mouseleave', function () { tip.hidden = true; });
	}
	tooltip(canvas, function () { return hit; }, ROW, function (h) { return h.text; });

	/* buttons: the named moments, then the end */
	M.forEach(function (m, k) {
		if (m.label || k === M.length - 1) {
			var b = document.createElement('button');
			b.dataset.k = String(k);
			text(b, m.label === 'peak' ? 'peak' : m.label === 'oom' ? 'OOM' :
				m.label === 'snapshot' ? 'recorded' : 'end');
			b.addEventListener('click', function () { show(k); });
			$('moment-buttons').appendChild(b);
		}
	});
	var first = 0;
	M.forEach(function (m, k) { if (m.label === 'oom' || (m.label === 'peak' && M[first].label !== 'oom')) first = k; });
	show(first);

	/* ---- top sites ---- */
	var tb = document.querySelector('#sites tbody');
	var sitesTitle = NOTRACE ? 'Top allocation sites of the allocated blocks, as recorded' :
		'Top allocation sites at the peak';
	text($('sites-panel').querySelector('h2'), sitesTitle);
	if (NOTRACE)
		text($('footer'), 'Written by memsnap from the segments the snapshot recorded (no trace, ' +
			'no replay). Charts: dygraphs (MIT).');
	if (!D.top_sites_at_peak || !D.top_sites_at_peak.length || !D.sites.length) {
		text($('sites-panel').querySelector('h2'), sitesTitle + ': ' +
			(NOTRACE ? 'the snapshot' : 'the trace') + ' recorded no stacks');
		$('sites').hidden = true;
	} else {
		/* by site, or by the site frame's file or function (the sites' rows added up) */
		var drawSites = function (by) {
			var rows = [], at = {};
			D.top_sites_at_peak.forEach(function (r) {
				var st = r[2] >= 0 ? D.site_stacks[r[2]] : null, key = r[2], label;
				if (by !== 'site' && st) {
					var f = D.frames[st[0][st[1]]];
					key = by === 'file' ? f[1] || '??' : (f[0] || '??') + ' (' + (f[1] || '??') + ')';
				}
				label = by === 'site' || !st ? (r[2] >= 0 ? site(r[2]) : '(no stack recorded)') : key;
				if (at[key] === undefined) {
					at[key] = rows.length;
					rows.push([0, 0, label, by === 'site' ? st : null, 0]);
				}
				var w = rows[at[key]];
				w[0] += r[0];
				w[1] += r[1];
				w[4]++;
			});
			rows.sort(function (a, b) { return b[0] - a[0]; });
			tb.textContent = '';
			rows.forEach(function (w) {
				var tr = document.createElement('tr');
				[fmt(w[0]), String(w[1])].forEach(function (s) {
					tr.appendChild(text(document.createElement('td'), s));
				});
				tr.appendChild(w[3] ? siteCell(w[2], w[3]) : text(document.createElement('td'),
					w[2] + (by !== 'site' && w[4] > 1 ? '  (' + w[4] + ' sites)' : '')));
				tb.appendChild(tr);
			});
			document.body.dataset.sitesGroup = by + ':' + rows.length;
		};
		drawSites('site');
		$('sites-group').addEventListener('change', function () { drawSites($('sites-group').value); });
	}

	/* ---- the flame graph of the stacks at the peak (drawn here: a few rows of boxes) ---- */
	var flame = $('flame'), F = D.flame_at_peak, fhit = [];
	function drawFlame(root) {
		var FW = 1300, FH = 17, depth = 0;
		(function walk(n, d) { depth = Math.max(depth, d); n[2].forEach(function (c) { walk(c, d + 1); }); })(root, 1);
		var dpr = window.devicePixelRatio || 1;
		flame.width = FW * dpr;
		flame.height = depth * FH * dpr;
		flame.style.width = FW + 'px';
		flame.style.height = depth * FH + 'px';
		var c = flame.getContext('2d');
		c.setTransform(dpr, 0, 0, dpr, 0, 0);
		c.font = '11px ui-monospace, monospace';
		c.textBaseline = 'middle';
		fhit = [];
		(function draw(n, x, w, d) {
			var hue = 20 + (n[0].length * 37) % 40;
			c.fillStyle = 'hsl(' + hue + ', 80%, ' + (62 + (d % 2) * 6) + '%)';
			c.fillRect(x, d * FH, Math.max(w - 1, 1), FH - 1);
			if (w > 40) {
				c.save();
				c.beginPath();
				c.rect(x, d * FH, w - 2, FH);
				c.clip();
				c.fillStyle = '#222';
				c.fillText(n[0], x + 3, d * FH + FH / 2);
				c.restore();
			}
			fhit.push({ x0: x, x1: x + w, y: d * FH, node: n });
			var cx = x;
			n[2].forEach(function (ch) {
				var cw = w * ch[1] / n[1];
				draw(ch, cx, cw, d + 1);
				cx += cw;
			});
		})(root, 0, FW, 0);
		flame.dataset.root = root[0];
	}
	if (F) {
		drawFlame(F);
		tooltip(flame, function () { return fhit; }, 17, function (h) {
			return h.node[0] + '\n' + fmt(h.node[1]) + ' (' +
				(100 * h.node[1] / F[1]).toFixed(1) + '% of the stacked bytes)';
		});
		flame.addEventListener('click', function (e) {
			var h = boxAt(flame, fhit, 17, e);
			if (h) drawFlame(h.y === 0 ? F : h.node);
		});
	} else {
		flame.hidden = true;
		$('flame-help').hidden = true;
	}

	/* everything drawn: for the benchmark's time to first paint */
	document.body.dataset.readyMs = String(Math.round(performance.now()));

	/* #selftest: grouping the top sites by file adds their rows up, the bytes unchanged */
	if (/selftest/.test(location.hash) && D.top_sites_at_peak && D.top_sites_at_peak.length &&
		D.sites.length) {
		var sg = $('sites-group'), rowsNow = function () {
			return document.querySelectorAll('#sites tbody tr').length;
		};
		var nSite = rowsNow(), bytes = D.top_sites_at_peak.reduce(function (a, r) { return a + r[0]; }, 0);
		sg.value = 'file';
		sg.dispatchEvent(new Event('change'));
		var nFile = rowsNow(), first = document.querySelector('#sites tbody tr td');
		sg.value = 'site';
		sg.dispatchEvent(new Event('change'));
		document.body.dataset.selftestSitesGroup = nFile >= 1 && nFile <= nSite &&
			rowsNow() === nSite && bytes > 0 && first ? 'groups-by-file' : 'failed';
	}
	/* #selftest: the stack filter hides frames from the tables' stacks, and gives them back */
	if (/selftest/.test(location.hash) && stackCells.length) {
		var sf = $('stack-filter'), c0 = stackCells[0], all0 = c0.pre.textContent;
		sf.value = 'user';
		sf.dispatchEvent(new Event('change'));
		var user0 = c0.pre.textContent;
		sf.value = 'all';
		sf.dispatchEvent(new Event('change'));
		document.body.dataset.selftestStackFilter =
			user0.length < all0.length && / hidden: /.test(user0) && c0.pre.textContent === all0 ?
				'hides-and-restores' : user0 === all0 ? 'nothing-to-hide' : 'failed';
	}
	/* #selftest: click the timeline as a person would (at the middle, then with the x axis
	   in seconds at three quarters); say what happened */
	if (/selftest/.test(location.hash) && !NOTRACE) {
		var clickAt = function (frac) {
			$('timeline').scrollIntoView();
			var area = timeline.getArea(), rect = $('timeline').getBoundingClientRect();
			var px = rect.left + area.x + area.w * frac, py = rect.top + area.y + area.h * 0.5;
			var target = document.elementFromPoint(px, py); /* what a person's click would hit */
			['mousemove', 'mousedown', 'mouseup', 'click'].forEach(function (type) {
				target.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true,
					clientX: px, clientY: py, view: window }));
			});
		};
		var before = document.body.dataset.segmap;
		clickAt(0.5);
		var after = document.body.dataset.segmap;
		document.body.dataset.selftest = before !== after ? 'click-updated-segmap' :
			'click-did-not-update';
		/* a drag over a twentieth of the chart zooms in: the finer level is drawn */
		(function () {
			$('timeline').scrollIntoView();
			var area = timeline.getArea(), rect = $('timeline').getBoundingClientRect();
			var y = rect.top + area.y + area.h * 0.5, xa = rect.left + area.x + area.w * 0.40;
			var xb = rect.left + area.x + area.w * 0.45, target = document.elementFromPoint(xa, y);
			target.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, cancelable: true, clientX: xa, clientY: y, view: window }));
			target.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, cancelable: true, clientX: xb, clientY: y, view: window }));
			document.dispatchEvent(new MouseEvent('mouseup', { bubbles: true, cancelable: true, clientX: xb, clientY: y, view: window }));
			document.body.dataset.selftestZoom = NF <= N ? 'no-finer-level' :
				rowBucket ? 'finer-level-drawn' : 'finer-level-not-drawn';
			/* the bands of the zoomed range come from a finer level of parts */
			if (drawBands)
				document.body.dataset.selftestBandsZoom = document.body.dataset.bandsLevel !== '0' ?
					'finer-bands-drawn' : 'bands-of-the-whole-window';
			timeline.resetZoom();
			zoomed(xOf(0), xOf(N - 1));
		})();
		if (bandsSelftest) document.body.dataset.selftestBands = bandsSelftest();
		if (hasTime) {
			$('by-time').click();
			clickAt(0.75);
			document.body.dataset.selftestTime = document.body.dataset.segmap !== after &&
				document.querySelector('#timeline .dygraph-xlabel').textContent === 'seconds' ?
				'time-axis-click-updated-segmap' : 'time-axis-click-did-not-update';
		}
	}
})();
