/*
 * Benchmark target for the collector's thread scan: N threads (default 200) blocked on a condition
 * variable that is never signalled (no event, no blocking-call record until the end) for SECONDS
 * (default 10), then prints the CPU time the collector's sender thread used meanwhile as
 * "sender_cpu_ms N" (-1: no sender thread).
 *   sleepers [N [SECONDS]]
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int done;

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (!done)
		pthread_cond_wait(&never, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* utime+stime of the thread named cuscope-sender, in ms; -1 if there is none. */
static long sender_cpu_ms(void)
{
	DIR *d = opendir("/proc/self/task");
	long ms = -1;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char path[300], buf[1024];
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *p = strrchr(buf, ')');
		unsigned long utime = 0, stime = 0;
		if (strstr(buf, "(cuscope-sender)") && p &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
			ms = (long)((utime + stime) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
	}
	if (d)
		closedir(d);
	return ms;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	unsigned seconds = argc > 2 ? (unsigned)atoi(argv[2]) : 10;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	int made = 0;
	while (t && made < n && pthread_create(&t[made], NULL, sleeper, NULL) == 0)
		made++;
	/* The collector starts its sender a little after the program: measured from then on. */
	long before = -1;
	for (int i = 0; i < 200 && before < 0; i++) {
		usleep(10000);
		before = sender_cpu_ms();
	}
	sleep(seconds);
	long after = sender_cpu_ms();
	printf("threads %d\n", made);
	printf("sender_cpu_ms %ld\n", before < 0 || after < 0 ? -1 : after - before);
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&never);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
