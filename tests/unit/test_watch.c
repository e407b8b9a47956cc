/* The session supervision rules shared by live mode, record and attach (target/watch.c): when a
 * session leaves, when an ignored stop becomes SIGKILL, what a caught signal does under each
 * verb's rules, and the exit status that is passed through. */
#include "cuscope/watch.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define S 1000000000ull

static struct watch_state launched_running(void)
{
	return (struct watch_state){.alive = 1, .connections = 1, .connected_once = 1, .start_ns = 100 * S};
}

/* A stop is followed by SIGKILL only once kill_after_ns has passed, then again each period. */
static void test_escalation_timing(void **unused)
{
	(void)unused;
	const struct watch_policy *policies[] = {&watch_live_policy, &watch_record_policy};
	for (size_t i = 0; i < 2; i++) {
		const struct watch_policy *p = policies[i];
		assert_int_equal(p->kill_after_ns, 5 * S);
		struct watch_state s = launched_running();
		s.stop_sent = 1;
		s.stop_sent_ns = 200 * S;
		struct watch_verdict v = watch_decide(p, &s, 200 * S);
		assert_int_equal(v.send, 0);
		v = watch_decide(p, &s, 205 * S); /* exactly the period: still waiting */
		assert_int_equal(v.send, 0);
		assert_int_equal(v.leave, WATCH_STAY);
		v = watch_decide(p, &s, 205 * S + 1);
		assert_int_equal(v.send, SIGKILL);
		assert_int_equal(v.stop, 1); /* re-arms: the next SIGKILL is another period away */
		assert_int_equal(v.leave, WATCH_STAY);
		/* No stop, no kill, however long the session runs. */
		s.stop_sent = 0;
		v = watch_decide(p, &s, 10000 * S);
		assert_int_equal(v.send, 0);
		/* Once the target is gone nothing is sent any more. */
		s.stop_sent = 1;
		s.alive = 0;
		s.exited_ns = 201 * S;
		v = watch_decide(p, &s, 300 * S);
		assert_int_equal(v.send, 0);
	}
}

/* A recording ends with its target once its streams closed, or after the drain time. */
static void test_record_leaves_after_drain(void **unused)
{
	(void)unused;
	const struct watch_policy *p = &watch_record_policy;
	struct watch_state s = launched_running();
	s.alive = 0;
	s.exited_ns = 200 * S;
	assert_int_equal(watch_decide(p, &s, 200 * S).leave, WATCH_STAY);
	assert_int_equal(watch_decide(p, &s, 200 * S + p->drain_ns - 1).leave, WATCH_STAY);
	assert_int_equal(watch_decide(p, &s, 200 * S + p->drain_ns).leave, WATCH_LEAVE_EXITED);
	s.connections = 0;
	assert_int_equal(watch_decide(p, &s, 200 * S).leave, WATCH_LEAVE_EXITED);
}

/* The live view stays after its target ends (the user quits), unless the user stopped it. */
static void test_live_stays_until_quit(void **unused)
{
	(void)unused;
	const struct watch_policy *p = &watch_live_policy;
	struct watch_state s = launched_running();
	s.alive = 0;
	s.exited_ns = 200 * S;
	s.connections = 0;
	assert_int_equal(watch_decide(p, &s, 10000 * S).leave, WATCH_STAY);
	s.stop_sent = 1;
	s.connections = 2; /* descendants still stream: the stop the user asked for is done anyway */
	assert_int_equal(watch_decide(p, &s, 200 * S).leave, WATCH_LEAVE_EXITED);
}

/* --duration stops a launched target once (SIGTERM) and leaves an attached one unsignalled. */
static void test_duration(void **unused)
{
	(void)unused;
	struct watch_policy p = watch_record_policy;
	p.duration_ns = 2 * S;
	struct watch_state s = launched_running();
	assert_int_equal(watch_decide(&p, &s, 101 * S).send, 0);
	struct watch_verdict v = watch_decide(&p, &s, 102 * S);
	assert_int_equal(v.send, SIGTERM);
	assert_int_equal(v.stop, 1);
	assert_int_equal(v.leave, WATCH_STAY);
	s.stop_sent = 1;
	s.stop_sent_ns = 102 * S;
	assert_int_equal(watch_decide(&p, &s, 103 * S).send, 0); /* not again */
	s = launched_running();
	s.attached = 1;
	v = watch_decide(&p, &s, 102 * S);
	assert_int_equal(v.send, 0);
	assert_int_equal(v.leave, WATCH_LEAVE_DETACHED);
	/* The live view has no duration. */
	s = launched_running();
	assert_int_equal(watch_decide(&watch_live_policy, &s, 1000000 * S).leave, WATCH_STAY);
}

/* A refusal ends every session at once; a recording of an attached target ends with its streams. */
static void test_refused_and_streams_end(void **unused)
{
	(void)unused;
	struct watch_state s = launched_running();
	s.attached = 1;
	s.refused = 1;
	assert_int_equal(watch_decide(&watch_live_policy, &s, 100 * S).leave, WATCH_LEAVE_REFUSED);
	assert_int_equal(watch_decide(&watch_record_policy, &s, 100 * S).leave, WATCH_LEAVE_REFUSED);
	s.refused = 0;
	s.connections = 0;
	assert_int_equal(watch_decide(&watch_record_policy, &s, 100 * S).leave, WATCH_LEAVE_STREAMS_ENDED);
	assert_int_equal(watch_decide(&watch_live_policy, &s, 100 * S).leave, WATCH_STAY);
	s.connected_once = 0; /* not connected yet: the handshake is still under way */
	assert_int_equal(watch_decide(&watch_record_policy, &s, 100 * S).leave, WATCH_STAY);
}

/* Each verb's signal rules: live forwards Ctrl-C and leaves on TERM/HUP; record stops once. */
static void test_signal_rules(void **unused)
{
	(void)unused;
	const struct watch_policy *live = &watch_live_policy, *rec = &watch_record_policy;
	struct watch_state s = launched_running();
	struct watch_verdict v = watch_on_signal(live->rules[WATCH_SIGINT], SIGINT, &s);
	assert_int_equal(v.send, SIGINT);
	assert_int_equal(v.stop, 0); /* a Ctrl-C is the target's to handle: no SIGKILL follows */
	assert_int_equal(v.leave, WATCH_STAY);
	for (int i = WATCH_SIGTERM; i <= WATCH_SIGHUP; i++) {
		v = watch_on_signal(live->rules[i], i == WATCH_SIGTERM ? SIGTERM : SIGHUP, &s);
		assert_int_equal(v.send, 0);
		assert_int_equal(v.leave, WATCH_LEAVE_DETACHED);
	}
	v = watch_on_signal(rec->rules[WATCH_SIGINT], SIGINT, &s);
	assert_int_equal(v.send, SIGINT);
	assert_int_equal(v.stop, 1);
	v = watch_on_signal(rec->rules[WATCH_SIGHUP], SIGHUP, &s);
	assert_int_equal(v.send, SIGTERM); /* our hangup is not the target's */
	assert_int_equal(v.stop, 1);
	s.stop_sent = 1;
	assert_int_equal(watch_on_signal(rec->rules[WATCH_SIGTERM], SIGTERM, &s).send, 0);
	s.stop_sent = 0;
	s.alive = 0; /* ended: its streams drain, a signal changes nothing */
	v = watch_on_signal(rec->rules[WATCH_SIGTERM], SIGTERM, &s);
	assert_int_equal(v.send, 0);
	assert_int_equal(v.leave, WATCH_STAY);
	/* An attached target is never signalled on our own account: the session ends instead. */
	s = launched_running();
	s.attached = 1;
	for (int i = 0; i < WATCH_SIGNALS; i++) {
		int sig = i == WATCH_SIGINT ? SIGINT : i == WATCH_SIGTERM ? SIGTERM : SIGHUP;
		v = watch_on_signal(live->rules[i], sig, &s);
		assert_int_equal(v.send, 0);
		assert_int_equal(v.leave, WATCH_LEAVE_DETACHED);
		v = watch_on_signal(rec->rules[i], sig, &s);
		assert_int_equal(v.send, 0);
		assert_int_equal(v.leave, WATCH_LEAVE_DETACHED);
	}
}

/* The target's exit code passes through exactly; our own failures are told apart. */
static void test_exit_code(void **unused)
{
	(void)unused;
	static const int codes[] = {0, 1, 3, 42, 126, 127, 130, 137, 143, 255};
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		struct watch_end e = {.target_code = codes[i]};
		assert_int_equal(watch_exit_code(&e), codes[i]);
		/* A bad stream (live) only turns a success into 2; the target's failure stands. */
		e.stream_error = 1;
		assert_int_equal(watch_exit_code(&e), codes[i] ? codes[i] : WATCH_EXIT_BAD_INPUT);
		/* An incomplete capture (record) fails whatever the target did. */
		e.stream_error = 0;
		e.output_error = 1;
		assert_int_equal(watch_exit_code(&e), WATCH_EXIT_BAD_INPUT);
		/* Left running (live detach): nothing to pass on yet. */
		e = (struct watch_end){.target_code = codes[i], .runs_on = 1};
		assert_int_equal(watch_exit_code(&e), 0);
		/* An attached target's status is not ours. */
		e = (struct watch_end){.target_code = codes[i], .attached = 1};
		assert_int_equal(watch_exit_code(&e), 0);
	}
	assert_int_equal(watch_exit_code(&(struct watch_end){.attached = 1, .refused = 1}), 1);
	assert_int_equal(watch_exit_code(&(struct watch_end){.attached = 1, .never_connected = 1}), 1);
	assert_int_equal(watch_exit_code(&(struct watch_end){.attached = 1, .output_error = 1}), 1);
	assert_int_equal(watch_exit_code(&(struct watch_end){.attached = 1, .stream_error = 1}),
	                 WATCH_EXIT_BAD_INPUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escalation_timing),
	    cmocka_unit_test(test_record_leaves_after_drain),
	    cmocka_unit_test(test_live_stays_until_quit),
	    cmocka_unit_test(test_duration),
	    cmocka_unit_test(test_refused_and_streams_end),
	    cmocka_unit_test(test_signal_rules),
	    cmocka_unit_test(test_exit_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
