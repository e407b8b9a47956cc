/*
 * Test target for exit status passthrough: three "ec.step" ranges, a 300 ms pause (so a live
 * collector has sent them), then one of:
 *   exit_code CODE        exit(CODE)
 *   exit_code signal SIG  raise(SIG) with the default action (the process dies by SIG)
 * Prints "pid P" and "exit_code: exiting with ..." on stdout first.
 */
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Sleeps for ms milliseconds, restarting after signals. */
static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	int by_signal = argc > 2 && strcmp(argv[1], "signal") == 0;
	int value = argc > 1 ? atoi(argv[by_signal ? 2 : 1]) : 0;

	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("ec.step");
		sleep_ms(2);
		nvtxRangePop();
	}
	printf("pid %d\n", (int)getpid());
	printf("exit_code: exiting with %s %d\n", by_signal ? "signal" : "code", value);
	fflush(stdout);
	sleep_ms(300);
	if (by_signal) {
		signal(value, SIG_DFL);
		raise(value);
		sleep_ms(1000);
		return 99; /* the signal did not kill us */
	}
	exit(value);
}
