/* PyTorch's per-call NVTX suffix ("aten::addmm, seq = 12, op_id = 345") taken off exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/collector/nvtxname.h"

/* The name nvtxname_op_length keeps of text, as a string. */
static const char *op_of(const char *text)
{
	static char out[4200];
	size_t n = nvtxname_op_length(text, strlen(text));
	assert_true(n <= strlen(text));
	memcpy(out, text, n);
	out[n] = '\0';
	return out;
}

/* What torch's getNvtxStr writes (torch/csrc/profiler/util.cpp), each form it takes. */
static void test_torch_forms(void **state)
{
	(void)state;
	assert_string_equal(op_of("aten::addmm, seq = 12, op_id = 345"), "aten::addmm");
	assert_string_equal(op_of("aten::empty, op_id = 7"), "aten::empty"); /* seq -1 */
	assert_string_equal(op_of("aten::relu, seq = 0"), "aten::relu");     /* op_id 0 */
	assert_string_equal(op_of("aten::mm, seq = 3, op_id = 18446744073709551615"), "aten::mm");
	assert_string_equal(op_of("autograd::engine::evaluate_function: AddmmBackward0, seq = 12, "
	                          "op_id = 400"),
	                    "autograd::engine::evaluate_function: AddmmBackward0");
	/* record_shapes=True: sizes and the input edges. */
	assert_string_equal(op_of("aten::addmm, seq = 12, op_id = 345, sizes = [[256], [32, 256], "
	                          "[256, 256], [], []], input_op_ids = [(343,0), (0,-1), (344,0)]"),
	                    "aten::addmm");
	assert_string_equal(op_of("aten::cat, op_id = 9, sizes = [[2, 3], [2, 3]]"), "aten::cat");
	assert_string_equal(op_of("aten::zeros, seq = 1, sizes = [[], [], []]"), "aten::zeros");
	/* A name that holds ", " itself keeps it: only the suffix goes. */
	assert_string_equal(op_of("step 3, phase a, seq = 4, op_id = 5"), "step 3, phase a");
	/* The same name always, whatever the numbers: one string, not one per call. */
	char buf[128];
	for (unsigned i = 0; i < 1000; i += 7) {
		snprintf(buf, sizeof buf, "aten::add_, seq = %u, op_id = %u", i, i * 13 + 1);
		assert_int_equal(nvtxname_op_length(buf, strlen(buf)), strlen("aten::add_"));
	}
}

/* Anything that is not exactly torch's suffix stays whole. */
static void test_other_messages_whole(void **state)
{
	(void)state;
	static const char *const whole[] = {
	    "",
	    "step",
	    "step 12",
	    "forward, backward",
	    "epoch 3, seq 4",   /* no " = " */
	    "x, seq = ",        /* no number */
	    "x, seq = 1a",      /* not a number to the end */
	    "x, seq = -1",      /* torch writes seq only when >= 0 */
	    "x, op_id = 3 ",    /* trailing space */
	    "x,seq = 3",        /* no space after the comma */
	    "x, sizes = [1, 2", /* unclosed */
	    "x, sizes = 1, 2]", /* unopened */
	    "x, sizes = [[a]]", /* not numbers */
	    "x, input_op_ids = [(1,0)] tail",
	    ", seq = 3", /* nothing would be left of the name */
	    ", seq = 3, op_id = 4",
	    "[1, 2]",
	    "]",
	    "a]",
	    "5",
	};
	for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
		assert_string_equal(op_of(whole[i]), whole[i]);
}

/* Parts out of torch's order: only the run that is in order at the end is taken. */
static void test_order(void **state)
{
	(void)state;
	assert_string_equal(op_of("x, op_id = 3, seq = 1"), "x, op_id = 3");
	assert_string_equal(op_of("x, sizes = [[1]], seq = 1"), "x, sizes = [[1]]");
	assert_string_equal(op_of("x, seq = 1, seq = 2"), "x, seq = 1");
	assert_string_equal(op_of("x, input_op_ids = [(1,0)], sizes = [[1]]"), "x, input_op_ids = [(1,0)]");
}

/* The length bounds the read: bytes after it are never looked at. */
static void test_length_bounds(void **state)
{
	(void)state;
	const char *text = "aten::mul, seq = 5, op_id = 6XXXX";
	size_t len = strlen(text) - 4;
	assert_int_equal(nvtxname_op_length(text, len), strlen("aten::mul"));
	assert_int_equal(nvtxname_op_length(text, 0), 0);
	/* Deeply nested brackets and a long list stay linear and exact. */
	static char deep[4097];
	size_t n = 0;
	n += (size_t)snprintf(deep, sizeof deep, "aten::cat, sizes = ");
	while (n < 2000)
		deep[n++] = '[';
	while (n < 4096 - 19)
		deep[n++] = ']';
	deep[n] = '\0';
	assert_string_equal(op_of(deep), deep); /* unbalanced: whole */
	n = (size_t)snprintf(deep, sizeof deep, "aten::cat, sizes = ");
	for (int i = 0; i < 1000; i++)
		deep[n++] = '[';
	for (int i = 0; i < 1000; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	assert_string_equal(op_of(deep), "aten::cat");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_torch_forms),
	    cmocka_unit_test(test_other_messages_whole),
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_length_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
