/* The end of a verb's text output: a write that failed (full disk, closed pipe) is an error. */
#include "cuscope/cli.h"
#include "cuscope/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int output_finish(FILE *out)
{
	errno = 0;
	int err = 0;
	if (fflush(out) != 0)
		err = errno ? errno : EIO;
	else if (ferror(out))
		err = EIO; /* failed earlier; its errno is gone */
	if (!err)
		return 0;
	log_error("writing output: %s", strerror(err));
	return 1;
}
