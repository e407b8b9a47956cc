/* The log keeper's bounded byte queue: the producer never waits for a slow consumer, every byte
 * is either delivered in order or refused (and so counted by the caller), and close ends the
 * consumer once it has taken everything. */
#include "cuscope/byteq.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct slow_consumer {
	struct byteq *q;
	uint64_t taken;
	uint64_t next; /* the value the next byte must have (bytes are their index mod 251) */
	int out_of_order;
};

/* A consumer as slow as a stalled disk: 20 ms per chunk of at most 4 KiB. */
static void *slow_consume(void *arg)
{
	struct slow_consumer *c = arg;
	unsigned char chunk[4096];
	size_t n;
	struct timespec pause = {0, 20000000};
	while ((n = byteq_take(c->q, chunk, sizeof chunk)) > 0) {
		for (size_t i = 0; i < n; i++)
			if (chunk[i] != (unsigned char)(c->next++ % 251))
				c->out_of_order = 1;
		c->taken += n;
		nanosleep(&pause, NULL);
	}
	return NULL;
}

static void test_producer_never_waits_on_a_slow_consumer(void **state)
{
	(void)state;
	struct byteq q;
	assert_int_equal(byteq_init(&q, 1 << 20), 0);
	struct slow_consumer c = {.q = &q};
	pthread_t consumer;
	assert_int_equal(pthread_create(&consumer, NULL, slow_consume, &c), 0);
	/* 64 MiB offered as fast as possible: most is refused, none of it waits. */
	unsigned char block[65536];
	uint64_t offered = 0, accepted = 0, worst_put_ns = 0;
	uint64_t index = 0;
	for (int i = 0; i < 1024; i++) {
		size_t start = 0;
		for (size_t j = 0; j < sizeof block; j++)
			block[j] = (unsigned char)((index + j) % 251);
		uint64_t t0 = now_ns();
		size_t took = byteq_put(&q, block + start, sizeof block);
		uint64_t dt = now_ns() - t0;
		if (dt > worst_put_ns)
			worst_put_ns = dt;
		offered += sizeof block;
		accepted += took;
		/* Refused bytes are gone: the next block continues right after what was accepted. */
		index += took;
	}
	byteq_close(&q);
	pthread_join(consumer, NULL);
	assert_true(accepted < offered);     /* the consumer could not keep up */
	assert_int_equal(c.taken, accepted); /* every accepted byte delivered */
	assert_false(c.out_of_order);        /* in order, none twice */
	/* A put copies at most a queue's worth and waits for no consumer sleep (20 ms each). */
	if (worst_put_ns > 15000000)
		fail_msg("a put took %llu ns: it waited on the consumer", (unsigned long long)worst_put_ns);
	byteq_fini(&q);
}

static void test_wraps_and_closes(void **state)
{
	(void)state;
	struct byteq q;
	assert_int_equal(byteq_init(&q, 10), 0);
	char out[16];
	assert_int_equal(byteq_put(&q, "abcdefgh", 8), 8);
	assert_int_equal(byteq_take(&q, out, 6), 6);
	assert_memory_equal(out, "abcdef", 6);
	assert_int_equal(byteq_put(&q, "ijklmnopq", 9), 8); /* room for 8: "q" refused */
	assert_int_equal(byteq_take(&q, out, sizeof out), 10);
	assert_memory_equal(out, "ghijklmnop", 10);
	byteq_close(&q);
	assert_int_equal(byteq_take(&q, out, sizeof out), 0);
	byteq_fini(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_producer_never_waits_on_a_slow_consumer),
	    cmocka_unit_test(test_wraps_and_closes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
