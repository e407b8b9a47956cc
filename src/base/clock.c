#include "cuscope/clock.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void clock_anchor(uint64_t *mono_ns, uint64_t *real_ns)
{
	uint64_t best_gap = UINT64_MAX;
	/* Bracket REALTIME between two MONOTONIC reads; keep the tightest bracket. */
	for (int attempt = 0; attempt < 5; attempt++) {
		uint64_t before = clock_mono_ns();
		uint64_t real = clock_real_ns();
		uint64_t after = clock_mono_ns();
		if (after - before < best_gap) {
			best_gap = after - before;
			*mono_ns = before + (after - before) / 2;
			*real_ns = real;
		}
	}
}

/* Finds a whole word in a NUL-terminated text. */
static int has_word(const char *text, const char *word)
{
	size_t len = strlen(word);
	for (const char *p = text; (p = strstr(p, word)); p += len) {
		int starts = p == text || p[-1] == ' ' || p[-1] == '\t';
		int ends = p[len] == ' ' || p[len] == '\n' || p[len] == '\0';
		if (starts && ends)
			return 1;
	}
	return 0;
}

int clock_ticks_usable_text(char *cpuinfo, const char *clocksource)
{
	char *flags = strstr(cpuinfo, "\nflags");
	if (!flags)
		return 0;
	char *end = strchr(flags + 1, '\n');
	if (end)
		*end = '\0';
	if (!has_word(flags, "constant_tsc") || !has_word(flags, "nonstop_tsc"))
		return 0;
	/* The flags say what the CPU promises; the kernel's own clocksource says whether it still
	 * trusts the TSC (it switches away when it finds the counters skewed across CPUs, as happens
	 * on some virtual machines): only then do ticks from different CPUs agree with MONOTONIC. */
	return strncmp(clocksource, "tsc", 3) == 0 && (clocksource[3] == '\n' || clocksource[3] == '\0');
}

int clock_ticks_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static char text[8192]; /* the first CPU's block holds its flags line */
	char source[32] = "";
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, source, sizeof source - 1);
	close(fd);
	if (n < 0)
		return 0;
	source[n] = '\0';
	return clock_ticks_usable_text(text, source);
#else
	return 0;
#endif
}

/* One (ticks, ns) pair read as close together as possible: the tightest of a few brackets. */
static void tick_pair(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int attempt = 0; attempt < 4; attempt++) {
		uint64_t before = clock_ticks();
		uint64_t mono = clock_mono_ns();
		uint64_t after = clock_ticks();
		if (after - before < best) {
			best = after - before;
			*ticks = before + (after - before) / 2;
			*ns = mono;
		}
	}
}

void clock_tick_map_update(struct clock_tick_map *map)
{
	uint64_t ticks, ns;
	tick_pair(&ticks, &ns);
	if (!map->ready) {
		map->first_ticks = ticks;
		map->first_ns = ns;
		/* A first rate from a short spin; every later anchor refines it. */
		uint64_t t2, n2;
		do
			tick_pair(&t2, &n2);
		while (n2 - ns < 200000);
		map->ns_per_tick = t2 > ticks ? (double)(n2 - ns) / (double)(t2 - ticks) : 1.0;
		map->ticks = t2;
		map->ns = n2;
		map->ready = 1;
		return;
	}
	if (ticks > map->first_ticks && ns - map->first_ns >= 1000000)
		map->ns_per_tick = (double)(ns - map->first_ns) / (double)(ticks - map->first_ticks);
	map->ticks = ticks;
	map->ns = ns;
}

uint64_t clock_tick_map_ns(const struct clock_tick_map *map, uint64_t ticks)
{
	if (ticks <= map->ticks)
		return map->ns - (uint64_t)((double)(map->ticks - ticks) * map->ns_per_tick);
	return map->ns + (uint64_t)((double)(ticks - map->ticks) * map->ns_per_tick);
}
