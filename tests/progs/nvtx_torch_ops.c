/*
 * Test target that names NVTX ranges as PyTorch's emit_nvtx does (torch/csrc/profiler/util.cpp,
 * getNvtxStr): "OP, seq = N, op_id = M" with numbers new on every call, each message a fresh
 * heap string freed after the push (a std::string's c_str()), on the main thread and on a second
 * thread standing for autograd's engine. Prints "pid P", "tid NAME TID" and "steps N".
 *
 * usage: nvtx_torch_ops [STEPS]   (default 3000)
 *
 * Expected per step, in the default domain:
 *   main thread: aten::linear (push/pop) holding aten::t and aten::addmm, then aten::relu, then
 *     aten::cat with record_shapes' sizes and input_op_ids, then "load, batch, seq = 2" (a
 *     program's own name with commas: named "load, batch"), then a start/end range aten::copy_
 *     and a mark aten::zero_;
 *   engine thread: autograd::engine::evaluate_function: AddmmBackward0 holding aten::mm.
 * Plus once, untouched: "plain" and "epoch 3, seq 4".
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long next_op_id = 1;
static pthread_mutex_t op_id_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long op_id(void)
{
	pthread_mutex_lock(&op_id_lock);
	unsigned long id = next_op_id++;
	pthread_mutex_unlock(&op_id_lock);
	return id;
}

/* A heap copy of the formatted message, as torch's std::string: freed once NVTX has it. */
static char *msg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *out = NULL;
	if (vasprintf(&out, fmt, ap) < 0)
		abort();
	va_end(ap);
	return out;
}

static void push(char *m)
{
	nvtxRangePushA(m);
	free(m);
}

static int steps = 3000;

static void *engine_main(void *arg)
{
	(void)arg;
	printf("tid engine %ld\n", (long)syscall(SYS_gettid));
	for (int i = 0; i < steps; i++) {
		push(msg("autograd::engine::evaluate_function: AddmmBackward0, seq = %d, op_id = %lu", i,
		         op_id()));
		push(msg("aten::mm, op_id = %lu", op_id()));
		nvtxRangePop();
		nvtxRangePop();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		steps = atoi(argv[1]);
	printf("pid %d\ntid main %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	pthread_t engine;
	if (pthread_create(&engine, NULL, engine_main, NULL) != 0)
		return 1;
	nvtxRangePushA("plain");
	nvtxRangePop();
	nvtxRangePushA("epoch 3, seq 4");
	nvtxRangePop();
	for (int i = 0; i < steps; i++) {
		push(msg("aten::linear, seq = %d, op_id = %lu", 3 * i, op_id()));
		push(msg("aten::t, op_id = %lu", op_id()));
		nvtxRangePop();
		push(msg("aten::addmm, seq = %d, op_id = %lu", 3 * i + 1, op_id()));
		nvtxRangePop();
		nvtxRangePop();
		push(msg("aten::relu, seq = %d, op_id = %lu", 3 * i + 2, op_id()));
		nvtxRangePop();
		push(msg(
		    "aten::cat, op_id = %lu, sizes = [[%d, 256], [%d, 256]], input_op_ids = [(%d,0), (0,-1)]",
		    op_id(), i, i + 1, i));
		nvtxRangePop();
		push(msg("load, batch, seq = %d", i));
		nvtxRangePop();
		char *m = msg("aten::copy_, seq = %d, op_id = %lu", i, op_id());
		nvtxRangeId_t id = nvtxRangeStartA(m);
		free(m);
		nvtxRangeEnd(id);
		m = msg("aten::zero_, op_id = %lu", op_id());
		nvtxMarkA(m);
		free(m);
	}
	pthread_join(engine, NULL);
	printf("steps %d\n", steps);
	return 0;
}
