// A hot function whose mangled name is longer than 2,048 bytes: a template over a pack of 60
// distinct types in a namespace, the shape of PyTorch's at::native kernel-launch templates.
// Spins in it for argv[1] seconds of CPU (default 1.5), then prints "done deep_template".
// Built with -DPACK120: 120 types, a 4,600-byte name, longer than a frame name may be on the wire.
#include <cstdio>
#include <cstdlib>
#include <ctime>

// clang-format off
namespace at {
namespace native {
namespace detail {
#define F(n) struct VectorizedElementwiseFunctor##n {};
#define F10(d) F(d##0) F(d##1) F(d##2) F(d##3) F(d##4) F(d##5) F(d##6) F(d##7) F(d##8) F(d##9)
F10(00) F10(01) F10(02) F10(03) F10(04) F10(05)
F10(06) F10(07) F10(08) F10(09) F10(10) F10(11)
template <class... Ts> struct Pack {};
} // namespace detail
} // namespace native
} // namespace at
// clang-format on

#define A(n)   at::native::detail::VectorizedElementwiseFunctor##n
#define A10(d) A(d##0), A(d##1), A(d##2), A(d##3), A(d##4), A(d##5), A(d##6), A(d##7), A(d##8), A(d##9)
#ifdef PACK120
typedef at::native::detail::Pack<A10(00), A10(01), A10(02), A10(03), A10(04), A10(05), A10(06), A10(07),
                                 A10(08), A10(09), A10(10), A10(11)>
    LongPack;
#else
typedef at::native::detail::Pack<A10(00), A10(01), A10(02), A10(03), A10(04), A10(05)> LongPack;
#endif

static double cpu_seconds()
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

template <class T> __attribute__((noinline)) unsigned long deep_hot(T, double seconds)
{
	volatile unsigned long x = 1;
	double end = cpu_seconds() + seconds;
	while (cpu_seconds() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.5;
	unsigned long x = deep_hot(LongPack(), seconds);
	printf("done deep_template %lu\n", x & 1);
	return 0;
}
