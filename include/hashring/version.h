/* SPDX-License-Identifier: MIT */
/*
 * hashring/version.h - the version of the hashring headers.
 *
 * hashring.h includes this file; it may also be included on its own, as it
 * holds nothing but macros.  The build reads the three numbers below to
 * name the project, the shared library and the packages, so a release
 * changes the version here and nowhere else.
 *
 * These macros give the version a program was compiled against;
 * hr_version() and hr_version_number() give the version of the library it
 * runs with, which may be a later minor or patch release of the same
 * major version (see docs/abi.md).
 */
#ifndef HASHRING_VERSION_H
#define HASHRING_VERSION_H

#define HR_VERSION_MAJOR 2
#define HR_VERSION_MINOR 0
#define HR_VERSION_PATCH 0

/*
 * One number that grows with every release: major * 10000 + minor * 100 +
 * patch, so 1.2.3 is 10203.  Minor and patch therefore stay below 100.
 * Usable in #if.
 */
#define HR_VERSION_NUMBER \
	(HR_VERSION_MAJOR * 10000 + HR_VERSION_MINOR * 100 + HR_VERSION_PATCH)

/* Non-zero when these headers are version maj.min.patch or later:
 *   #if HR_VERSION_AT_LEAST(2, 1, 0)
 * Usable in #if. */
#define HR_VERSION_AT_LEAST(maj, min, patch) \
	(HR_VERSION_NUMBER >= (maj) * 10000 + (min) * 100 + (patch))

/* Built from the numbers above so that the two can never disagree. */
#define HR_VERSION_STR_(x) #x
#define HR_VERSION_XSTR_(x) HR_VERSION_STR_(x)

/* "major.minor.patch", e.g. "2.0.0". */
#define HR_VERSION_STRING                                        \
	HR_VERSION_XSTR_(HR_VERSION_MAJOR) "."                   \
	HR_VERSION_XSTR_(HR_VERSION_MINOR) "."                   \
	HR_VERSION_XSTR_(HR_VERSION_PATCH)

#endif
