/* Starting a target under the collector: session directory, environment contract, process group. */
#ifndef CUSCOPE_LAUNCH_H
#define CUSCOPE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct launch_options {
	int log_output;          /* send the target's stdout/stderr to a log file in the session */
	unsigned buffer_mb;      /* flight-recorder bound per process, 0 = collector default */
	unsigned wait_viewer_ms; /* how long an exiting process waits for a first viewer */
	const char *sample_hz;   /* CPU sampling rate per thread CPU-second ("0" = off), NULL = default */
	const char *osrt_threshold_us; /* blocking calls shorter than this are not recorded ("off") */
	const char *counters;          /* counter list ("none" = off), NULL = default set */
	int python_perf;               /* start CPython with perf trampolines (PYTHONPERFSUPPORT=1) */
	int torch;                     /* PyTorch operators as NVTX ranges (CUSCOPE_TORCH=1) */
	int no_gpu;                    /* do not trace GPU activity */
	const char *follow;            /* descendants traced: "all", "none" or EXE,... (NULL = all) */
	unsigned log_mb;               /* output log cap in MiB (log_output), 0 = LAUNCH_LOG_MB_DEFAULT */
	const char *overhead_budget;   /* CPU-side overhead the collector keeps to: "PCT" or "off" */
	const char *gpu_metrics;       /* GPU hardware metrics: "on", "off" or a metric list; NULL = on */
	const char *gpu_metrics_hz;    /* their samples per second, NULL = default */
};

#define LAUNCH_LOG_MB_DEFAULT 64u

/*
 * What the log keeper (the small process that drains the target's stdout/stderr pipe into the
 * output log) has seen, in memory shared with the viewer; written by the keeper only.
 */
struct launch_log_stats {
	uint64_t bytes_in;      /* read from the pipe */
	uint64_t bytes_dropped; /* not in the log: older output past the cap, or a failed write */
	uint32_t capped;        /* the cap was reached: the log holds the newest output */
	uint32_t write_errno;   /* last write error (ENOSPC: full disk), 0 = none */
};

struct launch {
	char session_dir[512];
	char log_path[600];
	char collector[4096];
	pid_t pid;         /* target pid (also its process group id when launched) */
	int attached;      /* not our child: found running, watched with kill(pid, 0) */
	uid_t session_uid; /* attached: owner of session_dir (the target's user when root attaches) */
	int running;
	int status;                         /* waitpid status once !running */
	int log_done_fd;                    /* readable (EOF) once the log keeper ended; 0 or -1 = none */
	struct launch_log_stats *log_stats; /* shared with the log keeper, NULL without a log */
	unsigned log_mb;                    /* the log's cap */
	int perf_maps_ours;                 /* --python-perf turned perf maps on: remove them (perfmap.h) */
};

/* Finds libcuscope.so relative to the running binary (or $CUSCOPE_COLLECTOR); 0 or -ENOENT. */
int launch_find_collector(char *out, size_t size);
/*
 * Creates a session, starts argv[0] with the collector injected in its own process group. On
 * failure returns the exit status cuscope should use (126, 127, 1 or 2) and writes one line to
 * msg; 0 on success.
 */
int launch_start(struct launch *launch, char *const argv[], const struct launch_options *options, char *msg,
                 size_t msg_size);
/* Reaps the target if it ended; returns 1 while it runs. */
int launch_poll(struct launch *launch);
/* Exit code to pass through: the target's code, or 128+signal. */
int launch_exit_code(const struct launch *launch);
/* Sends sig to the target's process group. */
void launch_signal(const struct launch *launch, int sig);
/* Removes the session directory and its files (only once the target is gone). */
void launch_cleanup(struct launch *launch);
/*
 * Copies the log file to fd (the target's output, replayed after the UI closes), once the log
 * keeper has drained the pipe (or after 2 s, when a descendant still holds it), then says on
 * stderr what the log lost, if anything.
 */
void launch_replay_log(struct launch *launch, int fd);
/* One short line on what the output log dropped ("" when nothing): for the status line. */
void launch_log_note(const struct launch *launch, char *buf, size_t size);

#endif
