/* SPDX-License-Identifier: MIT */
/*
 * node.c - one node's validity: the rules of hr_node (docs/placement.md
 * section 2) and what a ring's placement needs of a node.  Every way in
 * (records, members files, hr_ring_build, registrars through
 * hr_node_check) checks a node here, once.  The state names are state.c's.
 */
#include "node.h"

#include "error.h"
#include "placements.h"
#include "ring_options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the rules of hr_node ------------------------------------------------ */

/* Bytes of an unvalidated string shown; the rest is cut ("..."). */
#define SHOWN 64

const char *hr__show(char *buf, size_t size, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == SHOWN) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return buf;
}

_Static_assert(HR__SHOW_SIZE >= SHOWN * 4 + 8, "room for hr__show()");

int hr__id_validate(const char *id, size_t len, hr_error *err)
{
	char shown[HR__SHOW_SIZE];

	if (!id)
		return hr__error_set(err, HR_EINVAL, "node id is NULL");
	if (len == 0)
		return hr__error_set(err, HR_EINVAL, "node id is empty");
	if (len > HR_ID_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": id is longer than %d bytes",
				     hr__show(shown, sizeof shown, id, len), HR_ID_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)id[i];

		if (c == '/')
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": id must not contain '/'",
					     hr__show(shown, sizeof shown, id, len));
		if (c < 0x21 || c > 0x7e)
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": id must be printable ASCII without blanks (byte 0x%02x at offset %zu)",
					     hr__show(shown, sizeof shown, id, len), c, i);
	}
	return HR_OK;
}

/* Checks a text field of `len` bytes: no control byte, at most max bytes,
 * at least one byte unless empty_ok. */
static int text_validate(const char *id, const char *field, const char *s,
			 size_t len, size_t max, bool empty_ok, hr_error *err)
{
	if (!empty_ok && len == 0)
		return hr__error_set(err, HR_EINVAL, "node \"%s\": %s is empty",
				     id, field);
	if (len > max)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": %s is longer than %zu bytes",
				     id, field, max);
	for (size_t i = 0; i < len; i++)
		if (hr__is_control((unsigned char)s[i]))
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": %s contains a control character (byte 0x%02x at offset %zu)",
					     id, field, (unsigned char)s[i], i);
	return HR_OK;
}

int hr__addr_validate(const char *id, const char *addr, size_t len,
		      hr_error *err)
{
	return text_validate(id, "addr", addr, len, HR_ADDR_MAX, false, err);
}

int hr__node_validate(const hr_node *node, hr_error *err)
{
	size_t len;
	int rc;

	if (!node)
		return hr__error_set(err, HR_EINVAL, "node is NULL");
	if (!node->id)
		return hr__error_set(err, HR_EINVAL, "node id is NULL");
	len = strnlen(node->id, HR_ID_MAX + 1);
	rc = hr__id_validate(node->id, len, err);
	if (rc)
		return rc;
	/* From here on the id is printable and short: show it as it is. */
	if (!node->addr)
		return hr__error_set(err, HR_EINVAL, "node \"%s\": addr is missing",
				     node->id);
	rc = hr__addr_validate(node->id, node->addr,
			       strnlen(node->addr, HR_ADDR_MAX + 1), err);
	if (rc)
		return rc;
	if (node->zone) {
		rc = text_validate(node->id, "zone", node->zone,
				   strnlen(node->zone, HR_ZONE_MAX + 1),
				   HR_ZONE_MAX, true, err);
		if (rc)
			return rc;
	}
	if (!isfinite(node->weight) || !(node->weight > 0))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%s\": weight must be a finite number > 0, not %g",
				     node->id, node->weight);
	if (!hr_state_name(node->state))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%s\": invalid state %d", node->id,
				     (int)node->state);
	return HR_OK;
}

int hr__record_weight_validate(const hr_node *node, hr_error *err)
{
	if (!(node->weight >= HR_RECORD_WEIGHT_MIN &&
	      node->weight <= HR_RECORD_WEIGHT_MAX))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%s\": weight %g is outside a record's range, %g to %g",
				     node->id, node->weight, HR_RECORD_WEIGHT_MIN,
				     HR_RECORD_WEIGHT_MAX);
	return HR_OK;
}

/* ---- what a ring's placement needs --------------------------------------- */

unsigned hr__vnodes_per_weight(const hr_ring_options *opts)
{
	return opts && opts->vnodes_per_weight ? opts->vnodes_per_weight :
		HR_VNODES_PER_WEIGHT_DEFAULT;
}

int hr__node_points(const hr_node *node, const hr_ring_options *opts,
		    unsigned *points, hr_error *err)
{
	const hr__placement *pl;
	int rc;

	*points = 0;
	rc = hr__placement_get(opts, &pl, err);
	if (rc)
		return rc;
	return pl->node_points(node, hr__vnodes_per_weight(opts), points, err);
}
