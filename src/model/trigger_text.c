/* Triggers as text: the --trigger grammar, and firings written into and read back from capture
 * notices (trigger.h). */
#include "cuscope/trigger.h"
#include "cuscope/store.h"
#include "cuscope/wire.h"
#include "cuscope/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

int trigger_parse_duration(const char *text, uint64_t *out_ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	if (!text || !(*text >= '0' && *text <= '9'))
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || !(v > 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		double ns = v * units[i].ns;
		/* Beyond a year is a typo, and must not overflow start + DUR. */
		if (ns < 1 || ns > 3.2e16)
			return -EINVAL;
		*out_ns = (uint64_t)llround(ns);
		return 0;
	}
	return -EINVAL;
}

/* "pQ*F": Q in (0, 100], F > 0; 0 or -EINVAL. */
static int trigger_parse_pct(const char *text, double *q, double *f)
{
	if (text[0] != 'p' || !(text[1] >= '0' && text[1] <= '9'))
		return -EINVAL;
	char *end;
	errno = 0;
	*q = strtod(text + 1, &end);
	if (errno || *end != '*' || !(*q > 0) || *q > 100)
		return -EINVAL;
	const char *fs = end + 1;
	if (!(*fs >= '0' && *fs <= '9'))
		return -EINVAL;
	*f = strtod(fs, &end);
	if (errno || *end || !(*f > 0) || *f > 1e6)
		return -EINVAL;
	return 0;
}

/* The causes trigger_gap_cause names, the only ones gap-explained accepts. */
static const char *const trigger_causes[] = {"gc",   "sleep", "read", "write",   "lock",   "poll",
                                             "wait", "sync",  "cpu",  "blocked", "unknown"};

int trigger_parse(const char *text, struct trigger_spec *out, const char **why)
{
	memset(out, 0, sizeof *out);
	*why = "malformed trigger";
	if (!text || !*text || strlen(text) >= TRIGGER_EXPR_MAX) {
		*why = "empty or too long";
		return -EINVAL;
	}
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			*why = "control character";
			return -EINVAL;
		}
	snprintf(out->expr, sizeof out->expr, "%s", text);
	if (strncmp(text, "gpu-idle>", 9) == 0) {
		out->kind = TRIGGER_GPU_IDLE;
		if (trigger_parse_duration(text + 9, &out->dur_ns) != 0) {
			*why = "bad duration";
			return -EINVAL;
		}
		return 0;
	}
	if (strncmp(text, "gap-explained:", 14) == 0) {
		out->kind = TRIGGER_GAP_CAUSE;
		for (size_t i = 0; i < sizeof trigger_causes / sizeof trigger_causes[0]; i++)
			if (strcmp(text + 14, trigger_causes[i]) == 0) {
				snprintf(out->cause, sizeof out->cause, "%s", trigger_causes[i]);
				return 0;
			}
		*why =
		    "unknown cause (gc, sleep, read, write, lock, poll, wait, sync, cpu, blocked, unknown)";
		return -EINVAL;
	}
	if (strncmp(text, "range:", 6) == 0) {
		const char *body = text + 6;
		/* The threshold follows the last '>': a name may hold one. */
		const char *gt = strrchr(body, '>');
		if (!gt || gt == body) {
			*why = "range needs NAME>DUR or NAME>pQ*F";
			return -EINVAL;
		}
		const char *thr = gt + 1;
		if (*thr == 'p') {
			out->kind = TRIGGER_RANGE_PCT;
			if (trigger_parse_pct(thr, &out->q, &out->factor) != 0) {
				*why = "bad percentile (pQ*F, Q in (0,100], F > 0)";
				return -EINVAL;
			}
		} else {
			out->kind = TRIGGER_RANGE;
			if (trigger_parse_duration(thr, &out->dur_ns) != 0) {
				*why = "bad duration";
				return -EINVAL;
			}
		}
		size_t len = (size_t)(gt - body);
		const char *slash = memchr(body, '/', len);
		if (slash) {
			out->has_domain = 1;
			memcpy(out->domain, body, (size_t)(slash - body));
			body = slash + 1;
			len = (size_t)(gt - body);
		}
		if (!len) {
			*why = "empty range name";
			return -EINVAL;
		}
		memcpy(out->name, body, len);
		return 0;
	}
	*why = "unknown kind";
	return -EINVAL;
}

/* ---- firings as capture notices ---- */

size_t trigger_notice_format(const struct trigger_notice *n, char *buf, size_t size)
{
	/* The file is length-prefixed and the expression last, so both may hold any byte but control
	 * characters (a store turns those into spaces). */
	int len = snprintf(buf, size,
	                   "trigger time_ns=%" PRIu64 " pid=%d value_ns=%" PRIu64 " pre_ns=%" PRIu64
	                   " held_ns=%" PRIu64 " cause=%s file=%zu:%s expr=%s",
	                   n->time_ns, (int)n->pid, n->value_ns, n->pre_ns, n->held_ns,
	                   n->cause[0] ? n->cause : "-", strlen(n->file), n->file, n->expr);
	if (len < 0)
		return 0;
	return (size_t)len < size ? (size_t)len : size ? size - 1 : 0;
}

/* "key=" then an unsigned number and one space at *p: 0 and the value, *p moved past it. */
static int trigger_notice_u64(const char **p, const char *key, uint64_t *out)
{
	size_t k = strlen(key);
	if (strncmp(*p, key, k) != 0 || !(**p && (*p)[k] >= '0' && (*p)[k] <= '9'))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(*p + k, &end, 10);
	if (errno || *end != ' ')
		return -EINVAL;
	*out = v;
	*p = end + 1;
	return 0;
}

int trigger_notice_parse(const char *text, struct trigger_notice *out)
{
	memset(out, 0, sizeof *out);
	const char *p = text;
	uint64_t pid = 0, flen = 0;
	if (strncmp(p, "trigger ", 8) != 0)
		return -EINVAL;
	p += 8;
	if (trigger_notice_u64(&p, "time_ns=", &out->time_ns) || trigger_notice_u64(&p, "pid=", &pid) ||
	    trigger_notice_u64(&p, "value_ns=", &out->value_ns) ||
	    trigger_notice_u64(&p, "pre_ns=", &out->pre_ns) ||
	    trigger_notice_u64(&p, "held_ns=", &out->held_ns) || strncmp(p, "cause=", 6) != 0 ||
	    pid > INT32_MAX)
		return -EINVAL;
	out->pid = (int32_t)pid;
	p += 6;
	size_t clen = strcspn(p, " ");
	if (!p[clen] || clen >= sizeof out->cause)
		return -EINVAL;
	if (!(clen == 1 && *p == '-'))
		memcpy(out->cause, p, clen);
	p += clen + 1;
	if (strncmp(p, "file=", 5) != 0)
		return -EINVAL;
	p += 5;
	char *end;
	errno = 0;
	flen = strtoull(p, &end, 10);
	if (errno || end == p || *end != ':' || flen >= sizeof out->file || strlen(end + 1) < flen)
		return -EINVAL;
	memcpy(out->file, end + 1, flen);
	p = end + 1 + flen;
	if (strncmp(p, " expr=", 6) != 0 || strlen(p + 6) >= sizeof out->expr)
		return -EINVAL;
	snprintf(out->expr, sizeof out->expr, "%s", p + 6);
	return 0;
}

static int trigger_notice_cmp(const void *a, const void *b)
{
	const struct trigger_notice *x = a, *y = b;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

size_t trigger_notices(const struct store *st, struct trigger_notice **out)
{
	struct trigger_notice *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t p = 0; p < store_process_count(st); p++)
		for (size_t i = 0; i < store_notice_count(st, p); i++) {
			struct store_notice_info ni;
			store_notice_get(st, p, i, &ni);
			if (ni.topic != WIRE_NOTICE_TOPIC_TRIGGER)
				continue;
			xgrow((void **)&v, &cap, n + 1, sizeof *v);
			if (trigger_notice_parse(ni.text, &v[n]) == 0)
				n++;
		}
	if (n > 1)
		qsort(v, n, sizeof *v, trigger_notice_cmp);
	*out = v;
	return n;
}
