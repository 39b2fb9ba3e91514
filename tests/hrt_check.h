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
