/* Windows of a replay (window.h). */
#include "analysis/window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/event.h"

/* "1.5s", "200ms", "1500000us", "20ns": a time with its unit, into out. */
static const char *time_end(const char *s, struct ms_window_end *out)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	size_t num = strspn(s, "0123456789.");
	char *end;
	double v;

	if (!num)
		return "not an event's number, a time (1.5s, 200ms, 1500000us) nor mark:NAME";
	v = strtod(s, &end);
	if ((size_t)(end - s) != num)
		return "not a number before the unit";
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (!strcmp(s + num, units[k].unit)) {
			if (!(v * units[k].ns < 9.2e18))
				return "time too large";
			out->kind = MS_WINDOW_TIME;
			out->t_ns = (uint64_t)(v * units[k].ns + 0.5);
			return NULL;
		}
	if (s[num] == '#')
		return "#N counts an address's allocations: alloc:ADDRESS#N or free:ADDRESS#N";
	return "a time's unit is s, ms, us or ns (1.5s, 200ms, 1500000us)";
}

/* "alloc:ADDRESS[#N]" or "free:ADDRESS[#N]" (kind) past its prefix, into out. */
static const char *alloc_end(const char *s, enum ms_window_end_kind kind, struct ms_window_end *out)
{
	const char *hash = strchr(s, '#');
	size_t len = hash ? (size_t)(hash - s) : strlen(s);
	int hex = len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *digits = hex ? "0123456789abcdefABCDEF" : "0123456789";
	const char *p = hex ? s + 2 : s;
	size_t n = len - (size_t)(p - s);
	uint64_t v = 0;

	if (!n || strspn(p, digits) < n)
		return kind == MS_WINDOW_ALLOC
		               ? "alloc: takes an address, 0x-prefixed hexadecimal "
		                 "or decimal (alloc:0x7f3a00)"
		               : "free: takes an address, 0x-prefixed hexadecimal or "
		                 "decimal (free:0x7f3a00)";
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
		if (v > (UINT64_MAX - d) / (hex ? 16 : 10))
			return "address too large";
		v = v * (hex ? 16 : 10) + d;
	}
	out->nth = 1;
	if (hash) {
		unsigned long long k = 0;
		if (!hash[1] || strspn(hash + 1, "0123456789") != strlen(hash + 1))
			return "ADDRESS#N takes a count N from 1 to 4294967295";
		for (const char *c = hash + 1; *c && k <= UINT32_MAX; c++)
			k = k * 10 + (unsigned)(*c - '0');
		if (!k || k > UINT32_MAX)
			return "ADDRESS#N takes a count N from 1 to 4294967295";
		out->nth = (uint32_t)k;
	}
	out->kind = kind;
	out->addr = v;
	return NULL;
}

const char *ms_window_end_parse(const char *s, struct ms_window_end *out)
{
	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return "empty: an event's number, or mark:NAME";
	if (!strncmp(s, "alloc:", 6))
		return alloc_end(s + 6, MS_WINDOW_ALLOC, out);
	if (!strncmp(s, "free:", 5))
		return alloc_end(s + 5, MS_WINDOW_FREE, out);
	if (!strncmp(s, "mark:", 5)) {
		const char *name = s + 5, *hash = strrchr(name, '#');
		size_t len = strlen(name);
		out->nth = 1;
		/* NAME#N where N is a number; a '#' followed by anything else is the name's */
		if (hash && hash[1] && strspn(hash + 1, "0123456789") == strlen(hash + 1)) {
			unsigned long long n = 0;
			for (const char *c = hash + 1; *c && n <= UINT32_MAX; c++)
				n = n * 10 + (unsigned)(*c - '0');
			/* "#0" or past 2^32: no count, the whole text a name (ProfilerStep#0) */
			if (n && n <= UINT32_MAX && hash > name) {
				out->nth = (uint32_t)n;
				out->mark_whole_len = len;
				len = (size_t)(hash - name);
			}
		}
		if (!len)
			return "mark: without a name";
		out->kind = MS_WINDOW_MARK;
		out->mark = name;
		out->mark_len = len;
		return NULL;
	}
	if (strspn(s, "0123456789.") != strlen(s))
		return time_end(s, out);
	if (strchr(s, '.'))
		return "a time needs its unit (1.5s, 200ms, 1500000us)";
	if (strlen(s) > 19)
		return "event number too large";
	out->kind = MS_WINDOW_EVENT;
	for (const char *c = s; *c; c++)
		out->event = out->event * 10 + (uint64_t)(*c - '0');
	return NULL;
}

const char *ms_window_ends_cross(const struct ms_window_end *from, const struct ms_window_end *to)
{
	if (from->kind == MS_WINDOW_EVENT && to->kind == MS_WINDOW_EVENT && to->event < from->event)
		return "--to comes before --from";
	if (from->kind == MS_WINDOW_TIME && to->kind == MS_WINDOW_TIME && to->t_ns < from->t_ns)
		return "--to is a time before --from's";
	return NULL;
}

void ms_windows_init(struct ms_windows *ws, const struct ms_windows_asked *asked)
{
	memset(ws, 0, sizeof(*ws));
	ws->asked = asked;
}

static ms_status open_window(struct ms_windows *ws, size_t k, uint64_t index,
                             const struct ms_window_now *st)
{
	struct ms_window_figures *w = &ws->w[k];

	if (ms_grow(&ws->open, &ws->cap_open, ws->n_open + 1, sizeof(*ws->open)))
		return MS_ERR_NOMEM;
	ws->open[ws->n_open++] = k;
	w->opened = 1;
	w->at = ws->asked && ws->asked->at;
	w->from = index;
	w->reserved_at_start = st ? st->reserved : 0;
	w->allocated_at_start = st ? st->allocated : 0;
	w->requested_at_start = w->peak_requested = st ? st->requested : 0;
	w->reserved_at_end = w->reserved_at_start;
	w->allocated_at_end = w->allocated_at_start;
	w->requested_at_end = w->requested_at_start;
	/* no event inside yet: the peaks are the start's, the state after the event before */
	w->peak_reserved = w->reserved_at_start;
	w->peak_allocated = w->allocated_at_start;
	w->allocated_at_peak_reserved = w->allocated_at_start;
	w->peak_reserved_event = w->peak_allocated_event = w->fullest_event = index ? index - 1 : 0;
	if (st) {
		ws->last_reserved_peak = st->reserved_peak;
		ws->last_allocated_peak = st->allocated_peak;
		ws->last_requested_peak = st->requested_peak;
	}
	return MS_OK;
}

static void close_window(struct ms_windows *ws, size_t at, uint64_t index)
{
	ws->w[ws->open[at]].closed = 1;
	ws->w[ws->open[at]].to = index;
	memmove(&ws->open[at], &ws->open[at + 1], (ws->n_open - at - 1) * sizeof(*ws->open));
	ws->n_open--;
}

/* The one window's figures (and its candidate's), made the first time they are needed. */
static ms_status one(struct ms_windows *ws)
{
	const struct ms_windows_asked *a = ws->asked;
	size_t n;

	if (ws->n)
		return MS_OK;
	ws->alt = a->from.mark_whole_len || a->to.mark_whole_len;
	n = ws->alt ? 4 : 1; /* each end as NAME#N or as the whole text: candidate bits 1, 2 */
	if (ms_grow(&ws->w, &ws->cap, n, sizeof(*ws->w)))
		return MS_ERR_NOMEM;
	memset(ws->w, 0, n * sizeof(*ws->w));
	ws->n = n;
	return MS_OK;
}

static void close_one(struct ms_windows *ws, size_t k, uint64_t index)
{
	for (size_t i = 0; i < ws->n_open; i++)
		if (ws->open[i] == k) {
			close_window(ws, i, index);
			return;
		}
}

/* The event at index, of time t_ns (0: not one that bounds a time window), is past e. */
static int reached(const struct ms_windows *ws, const struct ms_window_end *e, uint64_t index,
                   int64_t t_ns)
{
	if (e->kind == MS_WINDOW_EVENT)
		return index >= e->event;
	if (e->kind == MS_WINDOW_TIME)
		return t_ns && ws->timed && t_ns >= ws->t0 && (uint64_t)(t_ns - ws->t0) >= e->t_ns;
	return 0;
}

/* Whether e is the allocation (or completed free) end asks for: the nth at its address (*seen
 * counts them). */
static int alloc_reached(const struct ms_window_end *end, const struct ms_event *e, uint32_t *seen)
{
	if (!e || e->addr != end->addr ||
	    !((end->kind == MS_WINDOW_ALLOC && e->action == MS_ACT_ALLOC) ||
	      (end->kind == MS_WINDOW_FREE && e->action == MS_ACT_FREE_COMPLETED)))
		return 0;
	return ++*seen == end->nth;
}

ms_status ms_windows_before_event(struct ms_windows *ws, uint64_t index, int64_t t_ns,
                                  const struct ms_event *e, const struct ms_window_now *st)
{
	const struct ms_windows_asked *a = ws->asked;
	int from_alloc, to_alloc;
	ms_status s;

	if (!a->one)
		return MS_OK;
	if ((s = one(ws)))
		return s;
	/* the moment after one event (--at): its window ends before the next event, of any device
	   (the device's own next one may come much later) */
	if (a->at) {
		for (size_t i = 0; i < ws->n_open;) {
			if (ws->w[ws->open[i]].from < index)
				close_window(ws, i, index);
			else
				i++;
		}
	}
	from_alloc = alloc_reached(&a->from, e, &ws->from_allocs);
	to_alloc = alloc_reached(&a->to, e, &ws->to_allocs);
	for (size_t k = 0; k < ws->n; k++) {
		if (!ws->w[k].opened && !ws->w[k].closed &&
		    ((a->from.kind == MS_WINDOW_EDGE && index == 0) ||
		     (a->from.kind == MS_WINDOW_EVENT && a->from.event == index) ||
		     (a->from.kind == MS_WINDOW_TIME && reached(ws, &a->from, index, t_ns)) ||
		     from_alloc) &&
		    (s = open_window(ws, k, index, st)))
			return s;
		if (ws->w[k].opened && !ws->w[k].closed &&
		    ((a->to.kind == MS_WINDOW_EVENT && a->to.event == index) ||
		     (a->to.kind == MS_WINDOW_TIME && reached(ws, &a->to, index, t_ns)) ||
		     to_alloc))
			close_one(ws, k, index);
	}
	return MS_OK;
}

/* name is e's: its name (whole 0), or the whole text where it ended in "#N" (whole != 0). */
static int named(const struct ms_window_end *e, size_t k, const char *name)
{
	size_t len = k && e->mark_whole_len ? e->mark_whole_len : e->mark_len;

	return e->kind == MS_WINDOW_MARK && strlen(name) == len && !memcmp(name, e->mark, len);
}

/* The Nth of e's marks (whole != 0: the whole text's first, where it is that). */
static uint32_t nth(const struct ms_window_end *e, size_t k)
{
	return k && e->mark_whole_len ? 1 : e->nth;
}

/* name among the first names of marks seen, where it is new and there is room */
static void note_seen(struct ms_windows *ws, const char *name)
{
	size_t len = strlen(name), at = 0;

	if (ws->more_seen || !len)
		return;
	for (size_t k = 0; k < ws->n_seen; k++) { /* "a; b; c": each name once */
		size_t e = strcspn(ws->seen + at, ";");
		if (e == len && !memcmp(ws->seen + at, name, len))
			return;
		at += e + (ws->seen[at + e] ? 2 : 0);
	}
	if (ws->n_seen == 8 || strlen(ws->seen) + len + 3 > sizeof(ws->seen) || strchr(name, ';')) {
		ws->more_seen = 1;
		return;
	}
	if (ws->n_seen)
		strcat(ws->seen, "; ");
	strcat(ws->seen, name);
	ws->n_seen++;
}

ms_status ms_windows_annotation(struct ms_windows *ws, uint64_t index, const char *name,
                                unsigned stage, const struct ms_window_now *st)
{
	const struct ms_windows_asked *a = ws->asked;
	ms_status s;

	if (a->one) {
		if ((s = one(ws)))
			return s;
		note_seen(ws, name);
		for (size_t k = 0; k < ws->n; k++) {
			if (named(&a->from, k & 1, name) && stage != MS_ANN_END &&
			    ++ws->from_seen[k] == nth(&a->from, k & 1) && !ws->w[k].opened &&
			    (s = open_window(ws, k, index, st)))
				return s;
			if (named(&a->to, k & 2, name) && stage != MS_ANN_START &&
			    ++ws->to_seen[k] == nth(&a->to, k & 2) && ws->w[k].opened &&
			    !ws->w[k].closed)
				close_one(ws, k, index);
		}
		return MS_OK;
	}
	if (!a->prefix || strncmp(name, a->prefix, strlen(a->prefix)))
		return MS_OK;
	if (stage == MS_ANN_START) {
		struct ms_window_figures *w;
		if (ms_grow(&ws->w, &ws->cap, ws->n + 1, sizeof(*ws->w)))
			return MS_ERR_NOMEM;
		w = &ws->w[ws->n];
		memset(w, 0, sizeof(*w));
		if (!(w->name = ms_strndup(name, strlen(name))))
			return MS_ERR_NOMEM;
		ws->n++;
		return open_window(ws, ws->n - 1, index, st);
	}
	if (stage == MS_ANN_END) /* the latest open one of the name: phases nest */
		for (size_t i = ws->n_open; i-- > 0;)
			if (!strcmp(ws->w[ws->open[i]].name, name)) {
				close_window(ws, i, index);
				break;
			}
	return MS_OK;
}

void ms_windows_after_event(struct ms_windows *ws, uint64_t index, int64_t t_ns, int recorded_oom,
                            const struct ms_window_now *st)
{
	int timed = t_ns && ws->timed && t_ns >= ws->t0;

	uint64_t res, alloc, req, rpeak = 0, apeak = 0, qpeak = 0;

	if (!st)
		return;
	res = st->reserved;
	alloc = st->allocated;
	req = st->requested;
	/* a peak the model reached inside this event (a request served, then the cache
	   released), not just where it ended */
	if (st->reserved_peak > ws->last_reserved_peak)
		rpeak = ws->last_reserved_peak = st->reserved_peak;
	if (st->allocated_peak > ws->last_allocated_peak)
		apeak = ws->last_allocated_peak = st->allocated_peak;
	if (st->requested_peak > ws->last_requested_peak)
		qpeak = ws->last_requested_peak = st->requested_peak;
	if (qpeak < req)
		qpeak = req;
	if (rpeak < res)
		rpeak = res;
	if (apeak < alloc)
		apeak = alloc;
	for (size_t i = 0; i < ws->n_open; i++) {
		struct ms_window_figures *w = &ws->w[ws->open[i]];
		w->events++;
		w->reserved_at_end = res;
		w->allocated_at_end = alloc;
		w->requested_at_end = req;
		if (timed) {
			w->last_t_ns = (uint64_t)(t_ns - ws->t0);
			if (!w->timed_events)
				w->first_t_ns = w->last_t_ns;
			w->timed_events = 1;
		}
		w->recorded_ooms += recorded_oom != 0;
		/* a peak that the start held: at the first event inside that holds it too */
		if (rpeak > w->peak_reserved ||
		    (rpeak == w->peak_reserved && !w->reserved_peak_inside)) {
			w->peak_reserved = rpeak;
			w->peak_reserved_event = w->fullest_event = index;
			w->allocated_at_peak_reserved = alloc;
			w->reserved_peak_inside = 1;
		} else if (res == w->peak_reserved && alloc > w->allocated_at_peak_reserved) {
			/* the peak stands, with more allocated: the fullest moment of it */
			w->fullest_event = index;
			w->allocated_at_peak_reserved = alloc;
		}
		if (qpeak > w->peak_requested)
			w->peak_requested = qpeak;
		if (apeak > w->peak_allocated ||
		    (apeak == w->peak_allocated && !w->allocated_peak_inside)) {
			w->peak_allocated = apeak;
			w->peak_allocated_event = index;
			w->allocated_peak_inside = 1;
		}
	}
}

void ms_windows_end(struct ms_windows *ws, uint64_t n, int stopped)
{
	if (ws->asked && ws->asked->one && one(ws) == MS_OK)
		for (size_t k = 0; k < ws->n; k++)
			if (!ws->w[k].opened && ws->asked->from.kind == MS_WINDOW_EDGE)
				(void)open_window(ws, k, 0, NULL); /* a trace without events */
	for (size_t i = 0; i < ws->n_open; i++) {
		struct ms_window_figures *w = &ws->w[ws->open[i]];
		w->to = n;
		/* a window that runs to the trace's end closes there, unless the replay stopped */
		/* a time past the last event's: the window runs to the end */
		w->closed = !stopped && ws->asked->one &&
		            (ws->asked->at || ws->asked->to.kind == MS_WINDOW_EDGE ||
		             (ws->asked->to.kind == MS_WINDOW_TIME && ws->timed) ||
		             (ws->asked->to.kind == MS_WINDOW_EVENT && ws->asked->to.event == n));
		w->replay_stopped_inside = stopped;
	}
	ws->n_open = 0;
	if (!ws->asked || !ws->asked->one || !ws->n)
		return;
	/* the one window: each end the whole text as a mark's name where the trace has such a
	   mark (candidate 1 counts the whole from-text, candidate 2 the whole to-text) */
	if (ws->alt) {
		size_t k = (ws->asked->from.mark_whole_len && ws->from_seen[1] ? 1 : 0) |
		           (ws->asked->to.mark_whole_len && ws->to_seen[2] ? 2 : 0);
		struct ms_window_figures keep = ws->w[k];
		for (size_t i = 0; i < ws->n; i++)
			if (i != k)
				ms_free(ws->w[i].name);
		ws->w[0] = keep;
		ws->from_seen[0] = ws->from_seen[k];
		ws->to_seen[0] = ws->to_seen[k];
	}
	ws->n = 1;
	ws->w[0].from_marks = ws->from_seen[0];
	ws->w[0].to_marks = ws->to_seen[0];
	ws->w[0].timed = ws->timed;
}

void ms_windows_take(struct ms_windows *ws, struct ms_window_figures **out, size_t *n, char *seen,
                     size_t cap)
{
	*out = ws->w;
	*n = ws->n;
	snprintf(seen, cap, "%s%s", ws->seen, ws->more_seen ? "; ..." : "");
	ms_free(ws->open);
	memset(ws, 0, sizeof(*ws));
}

void ms_window_figures_free(struct ms_window_figures *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ms_free(w[i].name);
	ms_free(w);
}

int ms_window_missing(const struct ms_windows_asked *a, const char *from_text, const char *to_text,
                      uint64_t events, uint64_t stopped_at, const struct ms_window_figures *w,
                      size_t n, const char *seen, char *msg, size_t cap)
{
	int timed = n && w[0].timed;
	const char *fo = a && a->at ? "--at" : "--from";

	if (!a || !a->one)
		return 0;
	if (!n || !w[0].opened) {
		if (stopped_at != UINT64_MAX)
			snprintf(msg, cap,
			         "%s %s: the replay ran out of memory at event %llu, before it", fo,
			         from_text, (unsigned long long)stopped_at);
		else if (a->from.kind == MS_WINDOW_MARK && n && w[0].from_marks)
			snprintf(msg, cap, "%s %s: the trace has %u such mark%s", fo, from_text,
			         w[0].from_marks, w[0].from_marks == 1 ? "" : "s");
		else if (a->from.kind == MS_WINDOW_MARK)
			snprintf(msg, cap,
			         "%s %s: the trace has no such mark (%s%s; memsnap info lists "
			         "them)",
			         fo, from_text, seen[0] ? "its marks: " : "it has no marks", seen);
		else if (a->from.kind == MS_WINDOW_ALLOC || a->from.kind == MS_WINDOW_FREE)
			snprintf(msg, cap, "%s %s: the device has no such %s (%s)", fo, from_text,
			         a->from.kind == MS_WINDOW_ALLOC ? "allocation" : "completed free",
			         a->from.nth > 1 ? "fewer at that address"
			                         : "none at that address");
		else if (a->from.kind == MS_WINDOW_TIME)
			snprintf(msg, cap, "%s %s: %s", fo, from_text,
			         timed ? "no event of the device that late (memsnap info says the "
			                 "trace's time span)"
			               : "the trace records no times");
		else
			snprintf(msg, cap, "%s %s: the trace has %llu events", fo, from_text,
			         (unsigned long long)events);
		return 1;
	}
	if (!w[0].closed && !w[0].replay_stopped_inside && a->to.kind != MS_WINDOW_EDGE) {
		if (a->to.kind == MS_WINDOW_MARK && w[0].to_marks < a->to.nth && w[0].to_marks)
			snprintf(msg, cap, "--to %s: the trace has %u such mark%s", to_text,
			         w[0].to_marks, w[0].to_marks == 1 ? "" : "s");
		else if (a->to.kind == MS_WINDOW_MARK && !w[0].to_marks)
			snprintf(msg, cap,
			         "--to %s: the trace has no such mark (%s%s; memsnap info lists "
			         "them)",
			         to_text, seen[0] ? "its marks: " : "it has no marks", seen);
		else if (a->to.kind == MS_WINDOW_MARK)
			snprintf(msg, cap, "--to %s: it comes before the window's start", to_text);
		else if (a->to.kind == MS_WINDOW_ALLOC || a->to.kind == MS_WINDOW_FREE)
			snprintf(msg, cap,
			         "--to %s: the device has no such %s after the window's start",
			         to_text,
			         a->to.kind == MS_WINDOW_ALLOC ? "allocation" : "completed free");
		else if (a->to.kind == MS_WINDOW_TIME && !timed)
			snprintf(msg, cap, "--to %s: the trace records no times", to_text);
		else if (a->to.kind == MS_WINDOW_TIME)
			return 0; /* the window runs to the end: later than its last event */
		else
			snprintf(msg, cap, "--to %s: the trace has %llu events", to_text,
			         (unsigned long long)events);
		return 1;
	}
	/* an allocation (or a free) that ends the window at or before its start: the ends cross
	   (a phase between marks, or a stretch of time without events, may be empty) */
	if (w[0].closed && !a->at && w[0].to <= w[0].from &&
	    (a->from.kind == MS_WINDOW_ALLOC || a->from.kind == MS_WINDOW_FREE ||
	     a->to.kind == MS_WINDOW_ALLOC || a->to.kind == MS_WINDOW_FREE)) {
		snprintf(
		        msg, cap,
		        "--to %s: the window holds no event (its end comes at or before its start, "
		        "event %llu)",
		        to_text ? to_text : "", (unsigned long long)w[0].from);
		return 1;
	}
	return 0;
}
