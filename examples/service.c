/* SPDX-License-Identifier: MIT */
/*
 * service.c - a service instance that is a member of its cluster: it
 * registers itself (warming), goes active, answers where keys go while it
 * logs every ring change, and on SIGTERM drains, deregisters and closes.
 * docs/embedding.md walks through it.
 *
 *   HASHRING_ENDPOINTS=127.0.0.1:2379 ./service cache-7 127.0.0.7:11211
 *
 * Each line on stdin is a key; each answer is one line on stdout,
 *   KEY  WRITE_NODE  WRITE_ADDR  READ_NODE  READ_ADDR   (tab-separated)
 * HASHRING_PREFIX (default /hashring/nodes/) names the records,
 * DRAIN_SECONDS (default 5) how long the node drains before it leaves.
 */
#define _POSIX_C_SOURCE 200809L

#include <hashring.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by SIGTERM and SIGINT, and when another process takes our id. */
static atomic_int stopping;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stopping, 1);
}

/* On the client's watcher thread, after each new ring. */
static void ring_changed(void *userdata, const hr_ring *old_ring, const hr_ring *new_ring)
{
	(void)userdata;
	fprintf(stderr, "service: ring revision %llu: %zu nodes, %.1f%% of the keys moved\n",
		(unsigned long long)hr_ring_revision(new_ring), hr_ring_node_count(new_ring),
		100 * hr_ring_moved_share(old_ring, new_ring, HR_VIEW_WRITE));
}

/* On the registrar's thread, if another process registered our id. */
static void id_lost(void *userdata, hr_registrar *r, const hr_error *why)
{
	(void)userdata;
	(void)r;
	fprintf(stderr, "service: %s\n", why->message);
	atomic_store(&stopping, 1);
}

static int set_state(hr_registrar *me, hr_state state)
{
	hr_record_update upd;
	hr_error err = { 0 };

	hr_record_update_init(&upd);
	upd.fields = HR_UPDATE_STATE;
	upd.state = state;
	if (hr_registrar_update(me, &upd, &err) != 0) {
		fprintf(stderr, "service: %s\n", err.message);
		return -1;
	}
	return 0;
}

/* Answers the keys on stdin until a signal or the end of the input. */
static void serve(hr_client *client)
{
	struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	/* Unbuffered, so that poll() sees every line stdio has not read. */
	setvbuf(stdin, NULL, _IONBF, 0);
	while (!atomic_load(&stopping)) {
		hr_owner o;

		if (poll(&in, 1, 1000) <= 0)    /* a signal (EINTR), or a second passed */
			continue;
		if ((len = getline(&line, &cap, stdin)) < 0)
			break;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (hr_client_lookup(client, line, (size_t)len, &o, NULL) != 0) /* HR_EEMPTY */
			printf("%s\t-\t-\t-\t-\n", line);
		else
			printf("%s\t%s\t%s\t%s\t%s\n", line, o.node, o.addr, o.read_node, o.read_addr);
		fflush(stdout);
	}
	free(line);
}

int main(int argc, char **argv)
{
	const char *prefix = getenv("HASHRING_PREFIX"), *drain = getenv("DRAIN_SECONDS");
	int drain_s = drain ? atoi(drain) : 5, status = 0;
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: poll() returns */
	sigset_t stop_signals, old_mask;
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_registration reg;
	hr_client *client;
	hr_registrar *me;
	hr_error err = { 0 };

	if (argc != 3) {
		fprintf(stderr, "usage: service NODE_ID NODE_ADDR\n");
		return 2;
	}
	/* The library's threads inherit this mask: SIGTERM and SIGINT come
	 * to this thread alone, and interrupt its poll(). */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);

	hr_etcd_config_init(&etcd);
	etcd.endpoints = getenv("HASHRING_ENDPOINTS");  /* NULL: http://127.0.0.1:2379 */
	etcd.prefix = prefix ? prefix : "/hashring/nodes/";
	hr_client_config_init(&cfg);
	cfg.on_change = ring_changed;
	if (hr_client_open(&etcd, &cfg, &client, &err) != 0) {
		fprintf(stderr, "service: %s\n", err.message);
		return 1;
	}
	hr_registration_init(&reg);                     /* warming, weight 1, TTL 10 s */
	reg.id = argv[1];
	reg.addr = argv[2];
	reg.on_lost = id_lost;
	if (hr_registrar_open(&etcd, &reg, &me, &err) != 0) { /* HR_EEXIST: the id is taken */
		fprintf(stderr, "service: %s\n", err.message);
		hr_client_close(client);
		return 1;
	}
	/* Warming: writes to our arcs come here, reads still go to their
	 * previous owners.  A cache would copy its keys now (docs/handoff.md). */
	if (set_state(me, HR_STATE_ACTIVE) != 0) {
		status = 1;
	} else {
		fprintf(stderr, "service: %s active at %s, lease %016llx\n", reg.id, reg.addr,
			(unsigned long long)hr_registrar_lease(me));
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
		serve(client);
	}
	/* Leaving: draining keeps the reads of our keys here while their
	 * writes go to the next owners.  A second signal cuts the drain short. */
	if (hr_registrar_status(me, &err) != 0) {      /* HR_EEXIST: our id was taken */
		status = 1;
	} else if (status == 0 && set_state(me, HR_STATE_DRAINING) == 0 && drain_s > 0) {
		fprintf(stderr, "service: draining for %d s\n", drain_s);
		sleep((unsigned)drain_s);
	}
	if (hr_registrar_deregister(me, &err) != 0) {  /* revokes the lease: the node leaves */
		fprintf(stderr, "service: %s\n", err.message);
		status = 1;
	}
	hr_registrar_close(me);
	hr_client_close(client);
	fprintf(stderr, "service: stopped\n");
	return status;
}
