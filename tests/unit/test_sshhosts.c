/* The host lists of attach --hosts FILE and --slurm-nodes: a file of names, a Slurm node list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "cuscope/ssh.h"

static char cause[512];

/* The expansion of list, or "ERR: cause". */
static char *expand(const char *list)
{
	static char text[4096];
	char *out = ssh_slurm_nodelist(list, cause, sizeof cause);
	snprintf(text, sizeof text, "%s", out ? out : "ERR");
	free(out);
	return text;
}

static void test_slurm_nodelist(void **state)
{
	(void)state;
	assert_string_equal(expand("login1"), "login1");
	assert_string_equal(expand("gpu[01-03,07],login1"), "gpu01,gpu02,gpu03,gpu07,login1");
	assert_string_equal(expand("n[8-11]"), "n8,n9,n10,n11");
	assert_string_equal(expand("rack2-n[1-2]-ib"), "rack2-n1-ib,rack2-n2-ib");
	assert_string_equal(expand("a,b[5],c"), "a,b5,c");
	assert_string_equal(expand("n[3-1]"), "ERR");
	assert_string_equal(expand("n[1-x]"), "ERR");
	assert_string_equal(expand("n[1-2"), "ERR");
	assert_string_equal(expand("r[1-2]n[1-2]"), "ERR"); /* two bracket groups: scontrol's job */
	assert_non_null(strstr(cause, "--hosts"));
	assert_string_equal(expand("[1-2]"), "ERR");
	assert_string_equal(expand(""), "ERR");
	assert_string_equal(expand("n[0-99999]"), "ERR"); /* bounded */
	/* Every expanded name still goes through ssh_parse_hosts. */
	char **hosts;
	char *list = ssh_slurm_nodelist("gpu[1-2]", cause, sizeof cause);
	assert_int_equal(ssh_parse_hosts(list, &hosts, cause, sizeof cause), 2);
	assert_string_equal(hosts[1], "gpu2");
	free(hosts[0]);
	free(hosts[1]);
	free(hosts);
	free(list);
}

/* Writes text to a new file and returns its ssh_hosts_file list, or "ERR". */
static char *from_file(const char *text)
{
	static char out_text[4096];
	char path[] = "/tmp/cuscope-test-hosts-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char *out = ssh_hosts_file(path, cause, sizeof cause);
	unlink(path);
	snprintf(out_text, sizeof out_text, "%s", out ? out : "ERR");
	free(out);
	return out_text;
}

static void test_hosts_file(void **state)
{
	(void)state;
	assert_string_equal(from_file("node1\nnode2\n"), "node1,node2");
	assert_string_equal(from_file("# the job's nodes\n  node1  \n\nnode2 # second\r\nnode3"),
	                    "node1,node2,node3");
	assert_string_equal(from_file("node1 node2\n"), "ERR"); /* one per line */
	assert_string_equal(from_file("# nothing\n\n"), "ERR");
	assert_null(ssh_hosts_file("/nonexistent/hosts", cause, sizeof cause));
	assert_null(ssh_hosts_file("/dev/null", cause, sizeof cause)); /* not a regular file */
	assert_null(ssh_hosts_file("/tmp", cause, sizeof cause));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurm_nodelist),
	    cmocka_unit_test(test_hosts_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
