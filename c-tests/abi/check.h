/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tiny check helpers shared by the C tests of the btfgen C API. */
#ifndef BTFGEN_ABI_CHECK_H
#define BTFGEN_ABI_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int checks_run;
static int checks_failed;

/* Record one check; on failure print where and why, and carry on. */
#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		checks_run++;                                                \
		if (!(cond)) {                                               \
			checks_failed++;                                     \
			fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__,     \
				__LINE__, #cond);                            \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
		}                                                            \
	} while (0)

/* Print the summary and give the process exit code. */
static inline int checks_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, checks_run, checks_failed);
	return checks_failed ? 1 : 0;
}

/* Read a whole file; NULL on error (errno set). */
static inline unsigned char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (n == cap) {
			unsigned char *bigger;

			cap = cap ? cap * 2 : 1 << 16;
			bigger = realloc(buf, cap);
			if (!bigger) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = bigger;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* Write a whole file; 0 or -1. */
static inline int write_all(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	ok = (fclose(f) == 0) && ok;
	return ok ? 0 : -1;
}

#endif /* BTFGEN_ABI_CHECK_H */
