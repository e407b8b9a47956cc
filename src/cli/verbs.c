/* The verb table (names, entry points, help texts) and what verbs share: help, captures, crashes. */
#include "cuscope/capture.h"
#include "cuscope/cli.h"
#include "cuscope/log.h"
#include "cuscope/store.h"
#include "cuscope/ui.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_verb_entry verbs[] = {
    {CLI_ATTACH, "attach", cli_attach, "watch or record a process that is already running",
     "usage: cuscope attach [OPTIONS] PID\n"
     "       cuscope attach --record -o FILE [--duration SECONDS] [OPTIONS] PID\n"
     "       cuscope attach --ssh HOST,... [--job ID] [--record -o 'run-%h.cuscope' [--duration S]]\n"
     "       cuscope attach --hosts FILE | --slurm-nodes [--ssh options as above]\n"
     "\n"
     "Shows PID live (or records it headless) and detaches at the end, leaving it running. A process\n"
     "started under cuscope (or `cuscope run --detached`, or with the collector preloaded and\n"
     "CUSCOPE_ARM=1) is armed: its recent past is shown at once. Any other dynamically linked process\n"
     "gets the collector loaded with ptrace (same user, or root); NVTX ranges of code that already\n"
     "used NVTX and blocking-call tracing are not available then.\n"
     "\n"
     "  -r, --record           record instead of the live view (needs -o)\n"
     "  -o, --output FILE      capture file for --record\n"
     "  -d, --duration SECONDS stop recording after this long (default: until Ctrl-C or the target exits)\n"
     "      --ascii, --window SECONDS, --theme NAME, --memory-mb N, --disk-mb N   as in live mode\n"
     "      --trigger EXPR, --pre, --post, --dump-dir, --dump-max, --dump-max-mb, --dump-keep\n"
     "                         as in record (not with --ssh); the live view pauses on the first\n"
     "                         firing (} { walk them)\n"
     "      --ssh HOST,...     the armed processes of this user on each HOST in one view, through\n"
     "                         `ssh -o BatchMode=yes HOST PATH relay`; --record: one capture per\n"
     "                         host (-o with %h, the name as given); a relay that ends is restarted\n"
     "      --hosts FILE       the hosts from FILE, one per line (# comments), instead of --ssh\n"
     "      --slurm-nodes      the hosts of this Slurm job (SLURM_JOB_NODELIST), instead of --ssh\n"
     "      --remote-cuscope PATH  cuscope on the hosts (default: this binary's absolute path)\n"
     "      --via 'CMD {host}' run the relay with CMD instead of ssh (srun --overlap -w {host})\n"
     "      --job ID           only processes whose environment has SLURM_JOB_ID=ID\n"
     "  -h, --help             this help\n"},
    {CLI_RELAY, "relay", cli_relay, "(run by attach --ssh on each node; not for direct use)",
     "usage: cuscope relay [--job ID]\n"
     "\n"
     "What `cuscope attach --ssh` runs on each node: follows this user's armed processes there\n"
     "(only those of Slurm job ID with --job) and writes their streams to stdout in the relay\n"
     "format, dropping (and counting) what a slow stdout cannot take; ends when stdin closes.\n"},
    {CLI_RUN, "run", cli_run, "start a command armed, with no viewer (attach to it later)",
     "usage: cuscope run [--detached] [OPTIONS] -- COMMAND [ARGS...]\n"
     "\n"
     "Starts COMMAND with the collector loaded, keeping a bounded flight-recorder window while no\n"
     "viewer is connected; `cuscope attach PID` shows the recent past while it runs. Without\n"
     "--detached, cuscope waits for COMMAND (its output stays on this terminal or job log), passes\n"
     "SIGINT on, SIGTERM and SIGHUP on as SIGTERM (SIGKILL 5 s later if it is still there), and\n"
     "exits with COMMAND's exit code: the form for job scripts and `srun`.\n"
     "\n"
     "  --detached   return at once; COMMAND's output goes to a log in its session directory,\n"
     "               drained by a small process that lives as long as COMMAND's output is open\n"
     "  --log-mb N   (--detached) the log keeps the newest N MiB of output (default 64); a note at\n"
     "               its top counts what was dropped\n"
     "  --trigger EXPR --dump-dir DIR [--pre, --post, --dump-max, --dump-max-mb, --dump-keep]\n"
     "               (foreground only) cuscope stays attached, evaluates the triggers and writes\n"
     "               each firing's window into DIR (see cuscope record --help)\n"
     "Collector options as for record (--sample-hz, --follow, ...).\n"},
    {CLI_RECORD, "record", cli_record, "run a command headless and write a capture file",
     "usage: cuscope record -o FILE [--duration SECONDS] [--buffer-mb N] -- COMMAND [ARGS...]\n"
     "\n"
     "Runs COMMAND with the collector injected and writes everything it records to FILE. The\n"
     "capture is complete when COMMAND exits, when cuscope gets SIGINT or SIGTERM (forwarded to\n"
     "COMMAND's process group first), or after SECONDS (COMMAND is then sent SIGTERM). COMMAND's\n"
     "output is not redirected. Exits with COMMAND's exit code (128+N if killed by signal N).\n"
     "\n"
     "  -o, --output FILE      capture file to write (required); FILE may hold %r (rank: RANK,\n"
     "                         OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID), %j (SLURM_JOB_ID),\n"
     "                         %p (COMMAND's pid), %h (short host name), %q{VAR}, %% (a %)\n"
     "  -d, --duration SECONDS stop after this long\n"
     "      --buffer-mb N      per-process flight-recorder bound in MiB (default 64)\n"
     "      --sample-hz N      CPU stack samples per thread CPU-second (default 1000; max 10000; 0 = off)\n"
     "      --osrt-threshold-us N  record blocking calls longer than N us (default 100; off = none)\n"
     "      --counters LIST    per-thread counters (default task-clock,context-switches,page-faults\n"
     "                         from /proc; cycles,instructions,LLC-load-misses or libpfm4 names add\n"
     "                         perf events; default = that set; none = off)\n"
     "      --gpu-metrics on|off|LIST  GPU hardware metrics (SM, warps, tensor pipes, DRAM, PCIe,\n"
     "                         NVLink) by CUPTI PM sampling, one sampler per GPU; LIST names\n"
     "                         metrics (on: the set in README; default off); refused, NVML\n"
     "      --gpu-metrics-hz N GPU metric samples per second (default 50; 1-1000)\n"
     "      --python-perf      start CPython >= 3.12 with perf trampolines (Python frames in stacks)\n"
     "      --torch            PyTorch operators (aten::addmm, ...) as ranges on the thread that\n"
     "                         imports torch and its autograd threads, kernels linked to them\n"
     "                         (live mode, record, run; not attach)\n"
     "      --no-gpu           do not trace GPU activity\n"
     "      --follow WHICH     descendants traced: all (default), none (only COMMAND), or EXE,...\n"
     "                         (COMMAND and descendants with one of these executable base names)\n"
     "      --overhead-budget PCT|off  keep what sampling, counters and blocking-call records add\n"
     "                         to the program's CPU time near PCT % (default 3): lowered in that\n"
     "                         order, raised back when well under, each change a notice; off =\n"
     "                         keep what was asked\n"
     "      --trigger EXPR     (repeatable; live mode, record, attach, run) a stall to catch:\n"
     "                         gpu-idle>DUR, range:[DOMAIN/]NAME>DUR (fires at start + DUR, a hang\n"
     "                         too), range:NAME>pQ*F (F x the Q-th percentile of the last 100, after\n"
     "                         20), gap-explained:CAUSE (gc, sleep, read, write, lock, poll, wait,\n"
     "                         cpu); DUR as 500us, 20ms, 2s. Firings go into the capture (stats\n"
     "                         section triggers); live mode pauses on the first one\n"
     "      --pre DUR, --post DUR  window dumped around each firing (default 5s, 2s); a trigger\n"
     "                         re-arms after --post; firings inside one window share one dump\n"
     "      --dump-dir DIR     write each firing's window there as a capture (made 0700 if missing)\n"
     "      --dump-max N, --dump-max-mb M  at most N dumps (default 20) and M MiB (default 2048)\n"
     "      --dump-keep oldest|newest  at a bound, stop dumping (oldest, the default) or remove\n"
     "                         the oldest dumps (newest)\n"
     "      --gap-ms MS        the GPU gap gap-explained looks at (default 10)\n"
     "  -h, --help             this help\n"},
    {CLI_VIEW, "view", cli_view, "open a capture file in the timeline UI",
     "usage: cuscope view [--ascii] [--window SECONDS] FILE...\n"
     "\n"
     "Shows a capture written by `cuscope record` in the same UI as live mode. A truncated capture\n"
     "(a killed recorder) shows its intact chunks after a warning. Several captures (ranks, hosts)\n"
     "share one time axis, aligned by each capture's CLOCK_REALTIME anchor, refined by matching\n"
     "their NCCL collectives.\n"
     "\n"
     "  --ascii            ASCII glyphs only\n"
     "  --window SECONDS   initial visible span (default: the whole capture)\n"
     "  -h, --help         this help\n"},
    {CLI_STATS, "stats", cli_stats, "print summary statistics of a capture file",
     "usage: cuscope stats [--format=table|csv|json] [--report=SECTIONS] [--step-range NAME] FILE...\n"
     "\n"
     "Prints summary sections: nvtx (per range name, domain and style: count, total, min, p50, p99,\n"
     "max in ns), threads, processes, losses (every loss counter by cause), kernels (per name and\n"
     "device), memcpy, memset, sync, gpus, streams and api (CUDA calls), hot (sampled functions by\n"
     "self samples), hot-inclusive (by inclusive samples; Python functions only on Python threads,\n"
     "as FILE:QUALNAME), osrt, counters, cost, gpu_metrics (per GPU and hardware metric: samples,\n"
     "min, median, max, mean, unit), ranks (per rank: steps, p50/p99 step time, NCCL,\n"
     "compute and GPU idle time in steps, most compute first: the straggler), triggers (each\n"
     "--trigger firing: time_ns when its condition became true, expr, value in ns, pid, its dump\n"
     "file, cause, pre_ns and pre_held_ns: how much of the pre-window the stream held). Table and\n"
     "CSV print each under a heading; JSON is one\n"
     "object with a member per section. Several captures are summed on one time axis (aligned by\n"
     "their CLOCK_REALTIME anchors, refined by matching NCCL collectives); processes then have\n"
     "their host and capture (0 = the first), and clock_alignment says per capture how it was\n"
     "aligned (method, offset, drift, collectives matched, residual).\n"
     "\n"
     "  -f, --format F        table (default), csv or json\n"
     "  -r, --report LIST     only these sections, a comma list (default: all), e.g. nvtx,kernels,api\n"
     "  --step-range NAME     the ranks section's step range (default: per rank, the most frequent\n"
     "                        top-level range of its main thread, not NCCL nor aten::/autograd::)\n"
     "  -h, --help            this help\n"},
    {CLI_EXPORT, "export", cli_export, "write a capture as Chrome Trace JSON (Perfetto, chrome://tracing)",
     "usage: cuscope export [-o OUT] [--from SECONDS] [--to SECONDS] [--format F] FILE...\n"
     "\n"
     "Writes the capture as Chrome Trace Event JSON, which Perfetto UI (ui.perfetto.dev) and\n"
     "chrome://tracing open. Each process is a process track with its threads (NVTX push/pop ranges,\n"
     "marks, CUDA API calls and host syncs), an \"NVTX async\" track for start/end ranges and one\n"
     "track per GPU stream named like the UI (\"GPU0 s7\"): kernels, copies and memsets with their\n"
     "launch parameters, and flow arrows from each launch call (id = correlation id). Timestamps are\n"
     "microseconds since the earliest event (otherData.time_base_ns holds it, CLOCK_MONOTONIC).\n"
     "Memory does not grow with the output: events are written as the capture is walked.\n"
     "Several captures are written on one time axis, aligned by their CLOCK_REALTIME anchors.\n"
     "--format=perfetto writes the same tracks, names, args, flows and counters as a Perfetto\n"
     "protobuf trace (CLOCK_MONOTONIC nanoseconds), about 2.5 times smaller than the JSON.\n"
     "\n"
     "  -o, --output OUT      file to write (default and \"-\": standard output); a name ending\n"
     "                        in .gz is gzip-compressed\n"
     "  -f, --format F        chrome (default, also json) or perfetto\n"
     "      --from SECONDS    only events overlapping the window starting this long after the\n"
     "      --to SECONDS      capture start, and ending at --to\n"
     "  -h, --help            this help\n"},
    {CLI_DIFF, "diff", cli_diff, "compare NVTX ranges and kernels of two captures",
     "usage: cuscope diff [--format=table|json] A B\n"
     "       cuscope diff [--format=table|json] A... -- B...\n"
     "\n"
     "For each NVTX range (name, domain, style) and kernel (name, device) in either capture: count,\n"
     "p50 and total duration in A and in B and the change (absolute and percent), sorted by impact\n"
     "on total time (|total B - total A|, largest first). Rows found on one side only are listed\n"
     "(JSON member \"in\": \"a\", \"b\" or \"both\"; percent null where A has nothing).\n"
     "Two sets (A... -- B..., e.g. every rank's capture of two runs): each set is read onto one\n"
     "time axis as stats reads many files, and its rows are summed over its captures.\n"
     "\n"
     "  -f, --format F   table (default) or json\n"
     "  -h, --help       this help\n"},
    {CLI_DOCTOR, "doctor", cli_doctor, "check what works on this machine (perf, ptrace, CUPTI, GPU, Python)",
     "usage: cuscope doctor [--json]\n"
     "\n"
     "Checks what cuscope can use on this machine and prints one line per item with its status\n"
     "(ok, limited or missing), what it means for cuscope and the fix: the collector and session\n"
     "directory, perf events (kernel.perf_event_paranoid, a software and a hardware event opened),\n"
     "ptrace for attach (kernel.yama.ptrace_scope, capabilities, a real attach), libunwind,\n"
     "libpfm4, python3 on PATH (CPython >= 3.12 with perf trampolines), CUPTI (where the collector\n"
     "finds it and its version), the GPUs NVML sees and the driver's GPU profiling restriction\n"
     "(RmProfilingAdminOnly). Exits 0 after the report; what is missing is a finding.\n"
     "\n"
     "      --json   one JSON object: a \"checks\" array of {check, name, status, detail, fix}\n"
     "  -h, --help   this help\n"},
    {CLI_INFO, "info", cli_info, "print a capture's manifest, size, events and losses",
     "usage: cuscope info FILE\n"
     "\n"
     "Prints the environment manifest recorded with the capture (command line, working directory,\n"
     "relevant environment variables, host, CPU, kernel, GPUs, driver and CUDA versions, Python\n"
     "packages, cuscope version), its size on disk and compression, event counts and losses.\n"},
};

static const char *live_usage =
    "usage: cuscope [--ascii] [--window SECONDS] [--buffer-mb N] [--] COMMAND [ARGS...]\n"
    "       cuscope VERB [OPTIONS] ...   (cuscope VERB --help for details)\n"
    "\n"
    "Runs COMMAND with the cuscope collector injected and shows its CPU threads and NVTX ranges\n"
    "on a live terminal timeline. COMMAND runs in its own process group; its output goes to a\n"
    "log file (l in the UI shows it; it is replayed when cuscope exits). Ctrl-C is forwarded to\n"
    "COMMAND. q quits once COMMAND has exited, or asks whether to detach or stop it. cuscope exits\n"
    "with COMMAND's exit code.\n"
    "\n"
    "  --ascii            ASCII glyphs only (also chosen when the locale is not UTF-8)\n"
    "  --window SECONDS   visible time span (default 10)\n"
    "  --theme NAME|PATH  dark (default), light, mono, high-contrast, or a .theme file; NAME is\n"
    "                     looked up in $XDG_CONFIG_HOME/cuscope/themes, then share/cuscope/themes\n"
    "  --gap-ms MS        shade GPU idle gaps longer than MS (default 10; 0 = off)\n"
    "  --no-mouse         leave the mouse to the terminal (text selection)\n"
    "  --buffer-mb N      per-process flight-recorder bound in MiB (default 64)\n"
    "  --memory-mb N      events kept in memory, MiB (default 512): older ones are dropped and\n"
    "                     their time shows as a \"not in memory\" band; the status line says how far\n"
    "                     back memory reaches. Find and the hot panel cover memory; the NVTX panel\n"
    "                     counts every range received\n"
    "  --disk-mb N        live capture file kept for dumps (d), MiB (default 4096): when it is full\n"
    "                     a new one starts and the old one is deleted; dumps cover the current one\n"
    "  --log-mb N         the output log keeps COMMAND's newest N MiB (default 64); what it drops\n"
    "                     is counted in a note at its top, on the status line and at exit\n"
    "  -h, --help         this help\n"
    "  -V, --version      print the version\n"
    "collector options (live mode, record, attach):\n"
    "  --sample-hz N, --osrt-threshold-us N, --counters LIST, --python-perf, --no-gpu,\n"
    "  --gpu-metrics on|off|LIST, --gpu-metrics-hz N,\n"
    "  --torch (PyTorch operators as ranges; not attach),\n"
    "  --overhead-budget PCT|off (default 3),\n"
    "  --follow all|none|EXE,... (live mode, record and run --detached)\n"
    "  (see cuscope record --help)\n"
    "triggers (live mode, record, attach, run): --trigger EXPR (repeatable), --pre DUR, --post DUR,\n"
    "  --dump-dir DIR, --dump-max N, --dump-max-mb M, --dump-keep oldest|newest: the view pauses at\n"
    "  the first firing, } and { walk the firings (see cuscope record --help)\n"
    "NO_COLOR in the environment turns colour off.\n"
    "\n"
    "verbs:\n";

void cli_usage(const char *verb)
{
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
		if (strcmp(verb, verbs[i].name) == 0) {
			fputs(verbs[i].usage, stdout);
			return;
		}
	}
	fputs(live_usage, stdout);
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		printf("  %-8s %s\n", verbs[i].name, verbs[i].summary);
	printf("\nSee cuscope(1).\n");
}

const struct cli_verb_entry *cli_verb_find(const char *name)
{
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (strcmp(name, verbs[i].name) == 0)
			return &verbs[i];
	return NULL;
}

const char *cli_verb_name(unsigned verb)
{
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (verbs[i].verb == verb)
			return verbs[i].name;
	return "";
}

/* Reads one capture with opts, printing its warnings; the manifest's only with out (info). */
static int cli_load(const char *path, struct store *store, const struct capture_read_options *opts,
                    struct capture_read_result *out, unsigned *sources)
{
	struct capture_read_result res;
	char msg[1024];
	const char *cause = NULL;
	int rc = capture_read_with(path, store, opts, &res, msg, sizeof msg, &cause);
	if (rc) {
		log_error("%s", cause);
		free(res.manifest);
		return CLI_EXIT_USAGE;
	}
	if (res.chunks_corrupt)
		log_warn("%s: %u corrupt chunk%s skipped", path, res.chunks_corrupt,
		         res.chunks_corrupt == 1 ? "" : "s");
	/* Only a caller that shows the manifest cares that part of it was left out. */
	if (out && res.manifest_skipped)
		log_warn("%s: manifest longer than %u bytes: %u chunk%s of it not shown", path,
		         CAPTURE_MANIFEST_MAX, res.manifest_skipped, res.manifest_skipped == 1 ? "" : "s");
	if (res.truncated)
		log_warn("%s is truncated: recovered %u of %u chunks", path, res.chunks_ok, res.chunks_total);
	if (sources)
		*sources = res.sources;
	if (out)
		*out = res;
	else
		free(res.manifest);
	return 0;
}

int cli_load_capture(const char *path, struct store *store, struct capture_read_result *out)
{
	static const struct capture_read_options plain;
	return cli_load(path, store, &plain, out, NULL);
}

int cli_load_capture_with(const char *path, struct store *store, const struct capture_read_options *opts,
                          unsigned *sources)
{
	return cli_load(path, store, opts, NULL, sources);
}

/* A crash must not leave the terminal in curses mode: restore it, then die as the signal would. */
static void cli_on_crash(int sig)
{
	ui_emergency_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

void cli_restore_on_crash(void)
{
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
	struct sigaction sa = {0};
	sa.sa_handler = cli_on_crash;
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		sigaction(fatal[i], &sa, NULL);
}
