/* SPDX-License-Identifier: MIT */
/* version.c - the version of the library actually loaded. */
#include "hashring.h"

/* Compiled into the library, so a program sees the version it runs with,
 * not the one its headers came from. */
const char *hr_version(void)
{
	return HR_VERSION_STRING;
}

int hr_version_number(void)
{
	return HR_VERSION_NUMBER;
}
