/* SPDX-License-Identifier: MIT */
/* tsan.h - HR__TSAN: 1 when ThreadSanitizer instruments this build (GCC
 * says so with a macro, Clang with __has_feature), else 0.  For the few
 * places that must show TSan what it cannot see (liburcu's grace periods,
 * publish.c) or keep code it cannot see out of its builds (inline
 * assembly, counters.h). */
#ifndef HR_TSAN_H
#define HR_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define HR__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HR__TSAN 1
#endif
#endif
#ifndef HR__TSAN
#define HR__TSAN 0
#endif

#endif
