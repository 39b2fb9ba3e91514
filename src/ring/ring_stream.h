/* SPDX-License-Identifier: MIT */
/* ring_stream.h - a big ring's points placed on a thread of their own
 * while its nodes arrive, for the build that follows (internal). */
#ifndef HR_RING_STREAM_H
#define HR_RING_STREAM_H

#include "hashring.h"

typedef struct hr__ring_stream hr__ring_stream;
typedef struct hr__pages_pre hr__pages_pre;

/*
 * Starts placing the points of the ring that will follow `prev` (whose
 * point hash it keeps) with `opts` (may be NULL), from nodes added one by
 * one in id order, about `expect_nodes` of them.  A client's first sync
 * reads a big ring's nodes from etcd a page at a time: the points of a
 * page are placed while etcd serves the next one, and the build that
 * takes them only sorts them.  NULL when there is nothing to gain (a
 * placement whose points depend on other nodes, no node expected) and
 * when out of memory: the build then places every point, as it does when
 * the first nodes in show a ring too small for pages (no thread is
 * started then).  The functions below accept NULL.  One thread adds,
 * takes and frees.
 */
hr__ring_stream *hr__ring_stream_open(const hr_ring *prev, const hr_ring_options *opts,
				      size_t expect_nodes);

/* Adds `node` (valid), whose id sorts after every node added before.
 * What the stream needs of it is copied. */
void hr__ring_stream_add(hr__ring_stream *s, const hr_node *node);

/* The nodes changed otherwise (a node replaced or removed): the stream
 * cannot match them any more and stops placing. */
void hr__ring_stream_spoil(hr__ring_stream *s);

/* Waits until every node added is placed and gives the points placed
 * for `ring` (being built: nodes, vnodes and points set), or NULL unless
 * its nodes are exactly those added, placed the same way.  The caller owns
 * the result; the stream has nothing more to give. */
hr__pages_pre *hr__ring_stream_take(hr__ring_stream *s, const hr_ring *ring);

/* Stops the thread, frees the stream and what it placed. */
void hr__ring_stream_free(hr__ring_stream *s);

#endif
