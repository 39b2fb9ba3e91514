/* SPDX-License-Identifier: MIT */
/* hrt_vectors.c - see hrt_vectors.h. */
#include "hrt_vectors.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static bool same_owner(const hr_node *got, const cJSON *want)
{
	if (cJSON_IsNull(want))
		return got == NULL;
	return got && strcmp(got->id, want->valuestring) == 0;
}

static const char *id_or_null(const hr_node *n)
{
	return n ? n->id : NULL;
}

static void check_replicas(const hr_ring *ring, const char *set, const char *key,
			   hr_view view, const cJSON *want, int r)
{
	const hr_node *got[8];
	int k = hr_ring_preflist(ring, key, strlen(key), view, got, (size_t)r, NULL);
	int i = 0;
	const cJSON *id;

	if (r > 8)
		ck_abort_msg("set %s: %d replicas asked, at most 8", set, r);
	if (k != cJSON_GetArraySize(want))
		ck_abort_msg("set %s key \"%s\" view %d: %d replicas, want %d",
			     set, key, (int)view, k, cJSON_GetArraySize(want));
	cJSON_ArrayForEach(id, want) {
		if (strcmp(got[i]->id, id->valuestring) != 0)
			ck_abort_msg("set %s key \"%s\" view %d: replica %d is %s, want %s",
				     set, key, (int)view, i, got[i]->id, id->valuestring);
		i++;
	}
}

hr_ring *hrt_vectors_ring(const cJSON *set, const hr_ring_options *opts)
{
	char *members = cJSON_PrintUnformatted(cJSON_GetObjectItem(set, "members"));
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	int rc;

	ck_assert_ptr_nonnull(members);
	rc = hr_ring_from_json(members, strlen(members), opts, &ring, &err);
	cJSON_free(members);
	ck_assert_msg(rc == HR_OK, "set %s: %s",
		      cJSON_GetObjectItem(set, "name")->valuestring, err.message);
	return ring;
}

void hrt_vectors_check_set(const cJSON *set, const hr_ring *ring, int r,
			   bool may_be_empty)
{
	const char *name = cJSON_GetObjectItem(set, "name")->valuestring;
	const cJSON *item, *shares = cJSON_GetObjectItem(set, "share");
	size_t keys = 0;

	ck_assert_msg(hr_ring_digest(ring) ==
		      strtoull(cJSON_GetObjectItem(set, "digest")->valuestring, NULL, 16),
		      "set %s: digest", name);
	ck_assert_uint_eq(hr_ring_point_count(ring),
			  (size_t)cJSON_GetObjectItem(set, "point_count")->valuedouble);
	cJSON_ArrayForEach(item, cJSON_GetObjectItem(set, "vnodes")) {
		const hr_node *nd = hr_ring_find(ring, item->string);

		ck_assert_msg(nd != NULL, "set %s: no node %s", name, item->string);
		ck_assert_msg(hr_ring_node_vnodes(ring, nd) == (unsigned)item->valuedouble,
			      "set %s: points of %s", name, item->string);
	}
	for (int v = 0; v < 2; v++) {
		cJSON_ArrayForEach(item, cJSON_GetObjectItem(shares, v ? "read" : "write")) {
			const hr_node *nd = hr_ring_find(ring, item->string);

			/* exact: both sides round the same integer once */
			ck_assert_msg(hrt_node_share(ring, nd, (hr_view)v) ==
				      item->valuedouble, "set %s: share of %s",
				      name, item->string);
		}
	}
	cJSON_ArrayForEach(item, cJSON_GetObjectItem(set, "keys")) {
		const char *key = cJSON_GetArrayItem(item, 0)->valuestring;
		const cJSON *wn = cJSON_GetArrayItem(item, 1);
		const cJSON *rn = cJSON_GetArrayItem(item, 2);
		hr_lookup lk;
		int rc = hr_ring_lookup(ring, key, strlen(key), &lk, NULL);

		if (!(rc == HR_OK || (may_be_empty && rc == HR_EEMPTY)))
			ck_abort_msg("set %s key \"%s\": rc %d", name, key, rc);
		if (!same_owner(lk.node, wn))
			ck_abort_msg("set %s key \"%s\": node %s, want %s", name,
				     key, id_or_null(lk.node), cJSON_Print(wn));
		if (!same_owner(lk.read_node, rn))
			ck_abort_msg("set %s key \"%s\": read_node %s, want %s",
				     name, key, id_or_null(lk.read_node),
				     cJSON_Print(rn));
		check_replicas(ring, name, key, HR_VIEW_WRITE, cJSON_GetArrayItem(item, 3), r);
		check_replicas(ring, name, key, HR_VIEW_READ, cJSON_GetArrayItem(item, 4), r);
		keys++;
	}
	ck_assert_uint_ge(keys, 1000);
}
