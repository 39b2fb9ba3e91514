/* SPDX-License-Identifier: MIT */
/* update.c - in-place edits of a node's record: the fields an
 * hr_record_update names are changed, every other field and the lease are
 * kept, and nothing the clients would refuse is written. */
#include "update.h"
#include "client_config.h"
#include "cluster_config.h"
#include "error.h"
#include "node.h"
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tries of an edit whose record keeps changing in between. */
#define ATTEMPTS 5

int hr__record_update(hr__etcd *e, const char *key, const char *id,
		      const hr_ring_options *opts, const hr_record_update *upd,
		      const hr__record_writer *w, char **written, hr_error *err)
{
	if (upd->fields & HR_UPDATE_HEIRS)
		return hr__record_hand_over(e, key, id, opts, upd, w, NULL, NULL, written, err);
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		hr__kv kv;
		int found, done, rc;
		char *v;

		rc = hr__etcd_get(e, key, &kv, &found, err);
		if (rc)
			return rc;
		if (!found)
			return hr__error_set(err, HR_ENOTFOUND, "node \"%s\" is not registered (no key %s)",
					     id, key);
		rc = w->claim ? w->claim(w->userdata, &kv, err) : 0;
		if (rc) {
			hr__kv_clear(&kv);
			return rc;
		}
		v = hr__record_modify(id, kv.value, kv.value_len, upd, err);
		rc = v ? hr__record_check(opts, id, v, err) : err ? err->code : HR_EPARSE;
		if (!rc)
			rc = hr__etcd_put_if(e, key, v, kv.mod_revision, kv.lease, w->lease,
					     w->lease == 0, &done, err);
		hr__kv_clear(&kv);
		if (!rc && done) {
			if (written)
				*written = v;
			else
				free(v);
			return 0;
		}
		free(v);
		if (rc)
			return rc;
	}
	return hr__error_set(err, HR_EETCD, "node \"%s\": record keeps changing; try again", id);
}

int hr_node_update(const hr_etcd_config *etcd, const char *id,
		   const hr_record_update *upd, hr_error *err)
{
	hr__record_writer by_operator = { 0 };
	hr_record_update u;
	hr__conn conn;
	hr__etcd *e = NULL;
	char *key;
	int rc = hr__conn_read(etcd, &conn, err);

	if (!rc)
		rc = hr__record_update_read(upd, &u, err);
	if (rc)
		return rc;
	if (!id)
		return hr__error_set(err, HR_EINVAL, "id must not be NULL");
	rc = hr__id_validate(id, strlen(id), err);
	if (rc)
		return rc;
	key = hr__record_key(conn.prefix, id);
	if (!key)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(key);
		return hr__error_set(err, HR_ENOMEM, "libcurl initialisation failed");
	}
	by_operator.log = &conn.log;
	rc = hr__etcd_new(&conn.etcd, &e, err);
	if (!rc)
		rc = hr__record_update(e, key, id, &conn.ring, &u, &by_operator, NULL, err);
	hr__etcd_free(e);
	curl_global_cleanup();
	free(key);
	return rc;
}
