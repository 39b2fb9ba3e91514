/* SPDX-License-Identifier: MIT */
/* hrt_check.h - how every Check suite of the project runs (tests only). */
#ifndef HRT_CHECK_H
#define HRT_CHECK_H

#include <check.h>
#include <stdlib.h>

/* Check records every passing assertion, which costs a system call in its
 * fork mode: loops over many inputs assert only on failure. */
#define EXPECT(cond)                                                   \
	do {                                                           \
		if (!(cond))                                           \
			ck_assert(cond);                               \
	} while (0)

/* An error message must be one printable line: not empty, no control byte
 * (bad input is shown escaped). */
static inline void hrt_assert_clean_message(const char *msg)
{
	ck_assert_msg(msg[0] != '\0', "empty error message");
	for (const char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			ck_abort_msg("control byte 0x%02x in \"%s\"", (unsigned char)*p, msg);
}

/* Runs `s` (taking it over) and gives main()'s exit status. */
static inline int hrt_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
