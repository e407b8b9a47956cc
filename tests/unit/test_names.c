/* C++ names in the store: long template names (over libstdc++'s 1024-byte demangling guard). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cuscope/store.h"
#include "cuscope/strtab.h"
#include "cuscope/wire.h"

/*
 * "void hot<at::native::detail::Pack<F000, ..., F(n-1)>>(at::native::detail::Pack<...>)" where
 * each Fk is at::native::detail::VectorizedElementwiseFunctorKKK, as g++ mangles it: the shape
 * of PyTorch's kernel-launch templates, 2,319 bytes for n = 60.
 */
static void long_template(int n, char *mangled, size_t msize, char *want, size_t wsize)
{
	size_t m = (size_t)snprintf(mangled, msize, "_Z3hotIN2at6native6detail4PackIJ");
	size_t w = (size_t)snprintf(want, wsize, "void hot<at::native::detail::Pack<");
	for (int k = 0; k < n; k++) {
		m += (size_t)snprintf(mangled + m, msize - m, "NS2_31VectorizedElementwiseFunctor%03dE", k);
		w += (size_t)snprintf(want + w, wsize - w,
		                      "%sat::native::detail::VectorizedElementwiseFunctor%03d", k ? ", " : "",
		                      k);
	}
	snprintf(mangled + m, msize - m, "EEEEvT_");
	snprintf(want + w, wsize - w, "> >(at::native::detail::Pack<");
	w = strlen(want);
	for (int k = 0; k < n; k++)
		w += (size_t)snprintf(want + w, wsize - w,
		                      "%sat::native::detail::VectorizedElementwiseFunctor%03d", k ? ", " : "",
		                      k);
	snprintf(want + w, wsize - w, ">)");
}

static void test_long_template_demangled(void **state)
{
	(void)state;
	static char mangled[8192], want[32768], buf[16384];
	long_template(60, mangled, sizeof mangled, want, sizeof want);
	assert_true(strlen(mangled) > 2048);
	assert_non_null(store_demangle(mangled, buf, sizeof buf));
	assert_string_equal(buf, want);
	/* Just past the old guard, and short ones still work. */
	long_template(30, mangled, sizeof mangled, want, sizeof want);
	assert_true(strlen(mangled) > 1024);
	assert_non_null(store_demangle(mangled, buf, sizeof buf));
	assert_string_equal(buf, want);
	/* Near the longest the collector sends: the demangler's stack use grows with the length. */
	long_template(105, mangled, sizeof mangled, want, sizeof want);
	assert_true(strlen(mangled) > 4000 && strlen(mangled) <= WIRE_MAX_STRING);
	static char big[32768];
	assert_non_null(store_demangle(mangled, big, sizeof big));
	assert_string_equal(big, want);
	assert_non_null(store_demangle("_Z3foov.cold", buf, sizeof buf));
	assert_string_equal(buf, "foo() [clone .cold]");
}

/* nvcc's name of a file-local kernel (NCCL's one-rank reduction) demangles past its prefix; a
 * prefix whose length does not fit is left alone. */
static void test_nv_static_demangled(void **state)
{
	(void)state;
	char buf[256];
	assert_non_null(
	    store_demangle("__nv_static_32__b4148644_10_onerank_cu_fdf47990__ZN43_GLOBAL__N__"
	                   "b4148644_10_onerank_cu_fdf4799013oneRankReduceI13FuncPreMulSumIfEEEvPvS3_mmb",
	                   buf, sizeof buf));
	assert_string_equal(buf,
	                    "void (anonymous namespace)::oneRankReduce<FuncPreMulSum<float> >(void*, void*, "
	                    "unsigned long, unsigned long, bool)");
	assert_null(store_demangle("__nv_static_99__abc__Z3foov", buf, sizeof buf));
	assert_null(store_demangle("__nv_static_3__ab_Z3foov", buf, sizeof buf));
	assert_non_null(store_demangle("__nv_static_3__abc_Z3foov", buf, sizeof buf));
	assert_string_equal(buf, "foo()");
}

static void test_too_long_left_alone(void **state)
{
	(void)state;
	/* A name longer than the collector ever sends is not handed to the demangler. */
	static char mangled[3 * WIRE_MAX_STRING], want[6 * WIRE_MAX_STRING], buf[64];
	long_template(150, mangled, sizeof mangled, want, sizeof want);
	assert_true(strlen(mangled) > WIRE_MAX_STRING);
	assert_null(store_demangle(mangled, buf, sizeof buf));
	assert_null(store_demangle("_Z", buf, sizeof buf));
	assert_null(store_demangle("_Zgarbage(", buf, sizeof buf));
}

/* A CUDA kernel's mangled name longer than a wire string is cut when interned, so its string
 * frame is one the viewer accepts (a longer one made it drop the connection). */
static void test_long_kernel_name_interned_cut(void **state)
{
	(void)state;
	static char mangled[3 * WIRE_MAX_STRING], want[6 * WIRE_MAX_STRING];
	long_template(150, mangled, sizeof mangled, want, sizeof want);
	struct strtab tab;
	assert_int_equal(strtab_init(&tab, 100, 1 << 20), 0);
	int is_new;
	uint32_t id = strtab_intern(&tab, mangled, strlen(mangled), &is_new);
	assert_true(is_new);
	size_t len;
	const char *text = strtab_text(&tab, id, &len);
	assert_int_equal(len, WIRE_MAX_STRING);
	assert_memory_equal(text, mangled, len);
	static uint8_t frame[sizeof(struct wire_string) + 3 * WIRE_MAX_STRING];
	struct wire_string ws = {id, (uint32_t)len};
	memcpy(frame, &ws, sizeof ws);
	memcpy(frame + sizeof ws, text, len);
	const char *cause = NULL;
	assert_int_equal(wire_frame_check(WIRE_FRAME_STRING, frame, (uint32_t)(sizeof ws + len), &cause), 0);
	strtab_fini(&tab);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_long_template_demangled),
	    cmocka_unit_test(test_nv_static_demangled),
	    cmocka_unit_test(test_too_long_left_alone),
	    cmocka_unit_test(test_long_kernel_name_interned_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
