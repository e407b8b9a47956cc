/*
 * One GPU metrics sampler per physical GPU across the processes of a user (private to the
 * collector and its unit test): the process that holds the GPU's lock file in the user's private
 * session root samples it for everyone; the others leave the counters to it.
 */
#ifndef CUSCOPE_COLLECTOR_GPULOCK_H
#define CUSCOPE_COLLECTOR_GPULOCK_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Tries to take the lock of the GPU with this UUID in the verified directory dir: creates
 * "gpu-UUID.lock" (0600, never through a link) if missing and locks it without waiting. Returns
 * the lock's fd (close-on-exec; closing it releases the lock), -EBUSY when another process (or
 * another open of the file) holds it, with *holder set to the pid written there (0 unknown), or
 * -errno.
 */
int gpulock_take(int dir, const uint8_t uuid[16], pid_t *holder);
/* The lock file's name for a UUID ("gpu-" and 32 hex digits, ".lock"). */
void gpulock_name(const uint8_t uuid[16], char out[48]);

#endif
