/* Expansion of `record -o` patterns (see outpattern.h): pure, the environment is passed in. */
#include "cuscope/outpattern.h"
#include "cuscope/wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int outpattern_uses_pid(const char *pattern)
{
	for (const char *c = pattern; *c; c++) {
		if (*c != '%')
			continue;
		if (c[1] == 'p')
			return 1;
		if (c[1])
			c++; /* %% and the letter of any other directive are not the start of one */
	}
	return 0;
}

/* Appends len bytes of text to out at *at; -ENAMETOOLONG when it does not fit with the NUL. */
static int outpattern_put(char *out, size_t size, size_t *at, const char *text, size_t len)
{
	if (len >= size - *at)
		return -ENAMETOOLONG;
	memcpy(out + *at, text, len);
	*at += len;
	out[*at] = '\0';
	return 0;
}

/* The value of a variable a directive names, or NULL with the cause written. */
static const char *outpattern_var(const struct outpattern_vars *v, const char *name, const char *directive,
                                  char *cause, size_t cause_size)
{
	const char *value = v->get(name, v->ctx);
	if (!value || !*value) {
		snprintf(cause, cause_size, "%s: %s is not set", directive, name);
		return NULL;
	}
	for (const char *c = value; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			snprintf(cause, cause_size, "%s: %s holds a control character", directive, name);
			return NULL;
		}
	return value;
}

int outpattern_expand(const char *pattern, const struct outpattern_vars *v, char *out, size_t size,
                      char *cause, size_t cause_size)
{
	size_t at = 0;
	char num[32], name[256];
	if (size == 0)
		return -EINVAL;
	out[0] = '\0';
	for (const char *c = pattern; *c; c++) {
		const char *text = c;
		size_t len = 1;
		if (*c == '%') {
			c++;
			switch (*c) {
			case '%':
				text = "%";
				break;
			case 'p':
				len = (size_t)snprintf(num, sizeof num, "%d", (int)v->pid);
				text = num;
				break;
			case 'h':
				text = v->host ? v->host : "";
				len = strcspn(text, ".");
				if (len == 0) {
					snprintf(cause, cause_size, "%%h: the host name is unknown");
					return -EINVAL;
				}
				break;
			case 'j':
				if (!(text = outpattern_var(v, "SLURM_JOB_ID", "%j", cause, cause_size)))
					return -EINVAL;
				len = strlen(text);
				break;
			case 'r': {
				struct rank_ids ids;
				rank_read(&ids, v->get, v->ctx);
				if (!(ids.ids & WIRE_ID_RANK)) {
					if (ids.bad_name[0] &&
					    strstr("RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID",
					           ids.bad_name))
						snprintf(cause, cause_size,
						         "%%r: %s=%s is not a rank (a decimal 0..2147483647)",
						         ids.bad_name, ids.bad_value);
					else
						snprintf(cause, cause_size,
						         "%%r: none of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, "
						         "SLURM_PROCID is set");
					return -EINVAL;
				}
				len = (size_t)snprintf(num, sizeof num, "%d", (int)ids.rank);
				text = num;
				break;
			}
			case 'q': {
				const char *end = c[1] == '{' ? strchr(c + 2, '}') : NULL;
				if (!end) {
					snprintf(cause, cause_size, "%%q needs {VARIABLE}: %%q{NAME}");
					return -EINVAL;
				}
				size_t n = (size_t)(end - (c + 2));
				if (n == 0 || n >= sizeof name) {
					snprintf(cause, cause_size, "%%q{}: the variable name is %s",
					         n ? "too long" : "empty");
					return -EINVAL;
				}
				memcpy(name, c + 2, n);
				name[n] = '\0';
				char directive[sizeof name + 8];
				snprintf(directive, sizeof directive, "%%q{%s}", name);
				if (!(text = outpattern_var(v, name, directive, cause, cause_size)))
					return -EINVAL;
				len = strlen(text);
				c = end;
				break;
			}
			case '\0':
				snprintf(cause, cause_size,
				         "a lone %% ends the pattern (%%%% is a literal %%)");
				return -EINVAL;
			default:
				if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
					snprintf(cause, cause_size, "unknown pattern %%\\x%02x",
					         (unsigned char)*c);
				else
					snprintf(
					    cause, cause_size,
					    "unknown pattern %%%c (known: %%r %%j %%p %%h %%q{VAR} %%%%)",
					    *c);
				return -EINVAL;
			}
		}
		if (outpattern_put(out, size, &at, text, len) != 0) {
			snprintf(cause, cause_size, "the expanded name is too long");
			return -EINVAL;
		}
	}
	if (at == 0) {
		snprintf(cause, cause_size, "the expanded name is empty");
		return -EINVAL;
	}
	return 0;
}
