/*
 * Test target for the blocking-call stack budget: N nanosleep calls of US microseconds each on the
 * main thread (each over the default 100 µs threshold when US >= 100). Prints "done N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	if (argc != 3 || atol(argv[1]) <= 0 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: blocky N US\n");
		return 2;
	}
	long n = atol(argv[1]), us = atol(argv[2]);
	for (long i = 0; i < n; i++) {
		struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
		nanosleep(&ts, NULL);
	}
	printf("done %ld\n", n);
	return 0;
}
