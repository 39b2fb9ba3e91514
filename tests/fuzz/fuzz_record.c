/* SPDX-License-Identifier: MIT */
/* fuzz_record.c - libFuzzer target for the node record parser: an etcd
 * value under <prefix><id>, which anyone with write access to the prefix
 * controls.  The first byte gives the id's length; the id and the value
 * follow. */
#include "node.h"
#include "record.h"
#include "tokens.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hr__record rec;
	hr_error err = { 0 };
	size_t id_len;

	if (size == 0)
		return 0;
	id_len = data[0];
	data++;
	size--;
	if (id_len > size)
		id_len = size;
	if (hr__record_parse((const char *)data, id_len,
			     (const char *)data + id_len, size - id_len, &rec,
			     &err) == 0) {
		hr_node node = { rec.id, rec.addr, rec.zone, rec.weight, rec.state, NULL, 0 };
		hr_error again = { 0 };

		/* Whatever the parser accepts is a valid node. */
		if (hr__node_validate(&node, &again) != 0)
			__builtin_trap();
		if (strlen(rec.id) != id_len)
			__builtin_trap();
	} else if (!err.message[0] || rec.id || rec.addr || rec.zone) {
		__builtin_trap();
	}
	hr__record_clear(&rec);

	/* The tokens placement's reading: the same verdict on the rest of the
	 * record, and tokens distinct and ascending. */
	{
		hr__tokens t;
		int rc = hr__record_parse_tokens((const char *)data, id_len,
						 (const char *)data + id_len,
						 size - id_len, &rec, &t, &err);

		if (rc == 0) {
			for (size_t i = 1; i < t.n; i++)
				if (t.v[i - 1] >= t.v[i])
					__builtin_trap();
			if (t.n > HR_TOKENS_MAX)
				__builtin_trap();
		} else if (t.n || t.v || rec.id) {
			__builtin_trap();
		}
		hr__record_clear(&rec);
		hr__tokens_clear(&t);
	}
	return 0;
}
