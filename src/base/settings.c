/* SPDX-License-Identifier: MIT */
/* settings.c - the size protocol of the public settings structs: the
 * defaults a caller's struct starts from, and the check of its size
 * (settings.h; hashring.h, "Structs that grow"; docs/abi.md). */
#include "settings.h"

#include "error.h"

#include <string.h>

/* No struct of ours will ever be this big: a larger size is garbage. */
#define SIZE_LIMIT 4096

void hr__settings_init(void *p, size_t size, const void *defaults, size_t known)
{
	if (!p || size < sizeof(size_t))
		return;
	memcpy(p, defaults, size < known ? size : known);
	if (size > known)
		memset((char *)p + known, 0, size - known);
	memcpy(p, &size, sizeof size);
}

int hr__settings_check(const void *p, size_t known, size_t first_end,
		       const char *type, hr_error *err)
{
	const unsigned char *b = p;
	size_t size;

	memcpy(&size, p, sizeof size);
	if (size == 0)
		return hr__error_set(err, HR_EINVAL,
				     "%s: size is 0: set it up with %s_init()", type, type);
	if (size < first_end || size > SIZE_LIMIT)
		return hr__error_set(err, HR_EINVAL,
				     "%s: size %zu is not that of an initialised struct:"
				     " set it up with %s_init()", type, size, type);
	for (size_t i = known; i < size; i++) {
		if (b[i])
			return hr__error_set(err, HR_EINVAL,
					     "%s: byte %zu is set, past the %zu bytes hashring %s"
					     " knows: the program sets a field of a later release",
					     type, i, known, HR_VERSION_STRING);
	}
	return 0;
}
