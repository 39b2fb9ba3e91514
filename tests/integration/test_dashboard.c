/* SPDX-License-Identifier: MIT */
/*
 * test_dashboard.c - the dashboard in a real headless Chromium.
 *
 * A real etcd, three nodes of which one is warming, `hashring serve` on a
 * free loopback port; tests/integration/dashboard_cdp.py then drives
 * Debian's chromium over the DevTools protocol: the page renders and lists
 * every node with the warming one's takeover arcs, and after an `etcdctl
 * put` of a fourth node it shows the new ring without a reload.  etcd is
 * down when serve starts: the page first says there is no ring yet, and
 * draws it once etcd is up, without a reload.  Then a ring of 10,000
 * nodes: the page stays small and cheap and finds a node by its id.  Both
 * in a 1280x900 window, where every column must fit.  The screenshots and
 * DOMs stay in HR_TEST_OUTPUT_DIR (build/tests/dashboard/).
 *
 * The suite runs in a network namespace of its own with only loopback up
 * (where it may: as root), so that nothing the browser does can reach
 * beyond this machine: Chromium probes IPv6 reachability with a UDP
 * connect() to a public address even with background networking off.
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"
#include "serve_http.h"

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HR_CHROMIUM
#define HR_CHROMIUM "chromium"
#endif

#define PREFIX "/dash/nodes/"

static hrt_etcd_cluster *etcd;

static void put(const char *id, const char *value)
{
	char key[256];

	snprintf(key, sizeof key, PREFIX "%s", id);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), key, value), 0);
}

START_TEST(page_in_chromium)
{
	char url[64], ready[512];
	hrt_serve s;
	pid_t pid;
	int status, restarted = 0;

	ck_assert_msg(access(HR_CHROMIUM, X_OK) == 0,
		      "%s not found: apt-get install chromium (deploy/install-deps.sh --tests)",
		      HR_CHROMIUM);
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	put("cache-a", "{\"addr\":\"127.0.0.1:11211\",\"zone\":\"z1\"}");
	put("cache-b", "{\"addr\":\"127.0.0.1:11212\",\"zone\":\"z2\"}");
	put("cache-c", "{\"addr\":\"127.0.0.1:11213\",\"zone\":\"z3\",\"state\":\"warming\"}");
	/* Down until the page has said so (the script makes `ready`). */
	ck_assert_int_eq(hrt_etcd_stop_member(etcd, 0), 0);
	snprintf(ready, sizeof ready, "%s/no-ring-seen", HR_TEST_OUTPUT_DIR);
	unlink(ready);
	hrt_serve_start(&s, hrt_etcd_endpoints(etcd), PREFIX, NULL);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", s.port);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", HR_TEST_DATA_DIR "/integration/dashboard_cdp.py",
		      "--chromium", HR_CHROMIUM, "--url", url, "--out", HR_TEST_OUTPUT_DIR,
		      "--nodes", "cache-a,cache-b,cache-c", "--etcdctl", "/usr/bin/etcdctl",
		      "--endpoints", hrt_etcd_endpoints(etcd),
		      "--put", PREFIX "cache-d", "{\"addr\":\"127.0.0.1:11214\",\"zone\":\"z1\"}",
		      "--new-node", "cache-d", "--no-ring-file", ready, (char *)NULL);
		_exit(127);
	}
	for (int64_t end = hrt_now_ms() + 170000; waitpid(pid, &status, WNOHANG) == 0;) {
		if (!restarted && access(ready, F_OK) == 0) {
			ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
			restarted = 1;
		}
		ck_assert_msg(hrt_now_ms() < end, "the page's script hangs");
		hrt_sleep_ms(100);
	}
	ck_assert_msg(restarted, "the page never said there was no ring yet; see %s",
		      HR_TEST_OUTPUT_DIR);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the page failed in chromium (status %d); see %s", status, HR_TEST_OUTPUT_DIR);
	hrt_serve_stop(&s);
	hrt_etcd_destroy(etcd);
}
END_TEST

/* A ring of 10,000 nodes, one warming. */
START_TEST(big_ring_in_chromium)
{
	char url[64];
	hrt_serve s;
	pid_t pid;
	int status;

	ck_assert_msg(access(HR_CHROMIUM, X_OK) == 0,
		      "%s not found: apt-get install chromium (deploy/install-deps.sh --tests)",
		      HR_CHROMIUM);
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_serve_put_nodes(hrt_etcd_client_url(etcd, 0), PREFIX, 10000, 5);
	hrt_serve_start(&s, hrt_etcd_endpoints(etcd), PREFIX, NULL);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", s.port);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", HR_TEST_DATA_DIR "/integration/dashboard_cdp.py",
		      "--chromium", HR_CHROMIUM, "--url", url, "--out", HR_TEST_OUTPUT_DIR,
		      "--big", "10000", "--etcdctl", "/usr/bin/etcdctl",
		      "--endpoints", hrt_etcd_endpoints(etcd),
		      "--put", PREFIX "node-new", "{\"addr\":\"127.0.0.1:11299\"}",
		      "--new-node", "node-new", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the page of 10,000 nodes failed in chromium (status %d); see %s", status,
		      HR_TEST_OUTPUT_DIR);
	hrt_serve_stop(&s);
	hrt_etcd_destroy(etcd);
}
END_TEST

/* A new network namespace has lo down and nothing else: bring lo up. */
static void loopback_only(void)
{
	struct ifreq ifr;
	int fd;

	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "test_dashboard: unshare(CLONE_NEWNET): %s; "
			"running in the host's network namespace\n", strerror(errno));
		return;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr)) != 0) {
		fprintf(stderr, "test_dashboard: cannot bring lo up: %s\n", strerror(errno));
		exit(1);
	}
	close(fd);
}

int main(void)
{
	loopback_only();
	Suite *s = suite_create("dashboard");
	TCase *tc = tcase_create("chromium");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, page_in_chromium);
	tcase_add_test(tc, big_ring_in_chromium);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
