/* Runs the no_std build of btfgen (libno_std_check.a), whose memory is a 4 MiB arena: exit 0
 * when it round-trips a tiny BTF, minimizes OBJECT against TARGET exactly as REFERENCE
 * (`btfgen min-core-btf`'s output), fails with out-of-memory, and nothing else, one byte under
 * the budget it needed, cannot allocate past its arena, and (with KERNEL_BTF, e.g.
 * /sys/kernel/btf/vmlinux) minimizes OBJECT against a whole kernel BTF within the arena (the
 * core borrows its input: the arena holds only the index and results).
 *
 * usage: run TARGET OBJECT REFERENCE [KERNEL_BTF] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int btfgen_no_std_check(void);
int btfgen_no_std_arena_bounded(void);
ssize_t btfgen_no_std_minimize(const unsigned char *target, size_t target_len,
			       const unsigned char *obj, size_t obj_len, unsigned char *out,
			       size_t out_cap, size_t limit, size_t *peak);

/* The precompiled `core`/`alloc` carry unwind tables that name Rust's personality routine;
 * with panic = "abort" nothing unwinds, so it is never called. */
void rust_eh_personality(void)
{
	abort();
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long size;

	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		perror(path);
		exit(1);
	}
	buf = malloc(size ? size : 1);
	if (!buf || fread(buf, 1, size, f) != (size_t)size) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*len = size;
	return buf;
}

int main(int argc, char **argv)
{
	static unsigned char out[1 << 20];
	size_t target_len, obj_len, ref_len, kernel_len, peak = 0, tight_peak = 0, kernel_peak = 0;
	unsigned char *target, *obj, *ref, *kernel;
	ssize_t len, tight, exact, kernel_out = 1;
	int count, ok, bounded;

	if (argc < 4) {
		fprintf(stderr, "usage: run TARGET OBJECT REFERENCE [KERNEL_BTF]\n");
		return 2;
	}
	target = slurp(argv[1], &target_len);
	obj = slurp(argv[2], &obj_len);
	ref = slurp(argv[3], &ref_len);

	count = btfgen_no_std_check();
	len = btfgen_no_std_minimize(target, target_len, obj, obj_len, out, sizeof(out), SIZE_MAX,
				     &peak);
	ok = len == (ssize_t)ref_len && memcmp(out, ref, ref_len) == 0;
	tight = btfgen_no_std_minimize(target, target_len, obj, obj_len, out, sizeof(out),
				       peak - 1, &tight_peak);
	exact = btfgen_no_std_minimize(target, target_len, obj, obj_len, out, sizeof(out), peak,
				       &tight_peak);
	ok = ok && exact == len && memcmp(out, ref, ref_len) == 0;
	bounded = btfgen_no_std_arena_bounded();
	if (argc > 4) {
		kernel = slurp(argv[4], &kernel_len);
		kernel_out = btfgen_no_std_minimize(kernel, kernel_len, obj, obj_len, out,
						    sizeof(out), SIZE_MAX, &kernel_peak);
		printf("no_std btfgen: %s (%zu bytes) in the 4 MiB arena: %zd bytes out (want > 0), "
		       "peak %zu bytes\n", argv[4], kernel_len, kernel_out, kernel_peak);
		free(kernel);
	}

	printf("no_std btfgen: type_cnt=%d (want 3); minimized %s: %zd bytes, %s the reference, "
	       "peak %zu bytes; budget peak-1: %zd (want -2, out of memory), budget peak: %zd "
	       "(want %zd); the whole arena refused: %d (want 1)\n",
	       count, argv[2], len, ok ? "identical to" : "DIFFERENT from", peak, tight, exact,
	       len, bounded);
	free(target);
	free(obj);
	free(ref);
	return count == 3 && ok && tight == -2 && bounded == 1 && kernel_out > 0 ? 0 : 1;
}
