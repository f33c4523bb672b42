/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Memory budgets (bpf_reloc_info__new_opts's mem_limit): a sweep of limits from
 * 0 to the peak an unlimited run needs. Each limit must give either exactly the
 * unlimited run's output or ENOMEM from the call that hit it, never a crash or
 * a leak (run.sh runs this under valgrind and ASan), and never use more than the
 * limit. After a failing object the info must still be usable (get_btf gives a
 * BTF or ENOMEM) and freeable. The limits: STEPS coarse steps over [0, peak],
 * then every byte around each limit where the outcome changes.
 *
 * The unlimited run's output is written to OUTPUT (run.sh compares it with
 * `btfgen min-core-btf`).
 *
 * usage: budget [-n STEPS] [-M MODULE_BTF] TARGET OUTPUT OBJECT...
 *   -M  add a kernel module BTF (bpf_reloc_info__add_module_btf), under the budget too
 */
#define _POSIX_C_SOURCE 200809L
#include "btfgen.h"
#include "check.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* How far a run got: the call that failed with ENOMEM, or DONE. */
enum stage { NEW, MODULE, GEN, GET_BTF, DONE };

static const char *const stage_names[] = { "new_opts", "add_module_btf", "reloc_info_gen",
					   "get_btf", "done" };

static const char *target, *module;
static char **objects;
static int n_objects;
static unsigned char *reference;
static uint32_t reference_size;
static long runs;

/* One run with `limit` (0: none). The output goes to *out (malloc'ed) when `out` is set. */
static enum stage run(size_t limit, size_t *peak, unsigned char **out, uint32_t *out_size)
{
	struct bpf_reloc_info_opts opts;
	struct btf_reloc_info *info;
	enum stage stage = DONE;
	struct btf *btf;
	int i, err;

	runs++;
	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.mem_limit = limit;
	info = bpf_reloc_info__new_opts(target, &opts);
	if (!info) {
		CHECK(errno == ENOMEM, "limit %zu: new_opts: %s", limit, strerror(errno));
		return NEW;
	}
	if (module) {
		err = bpf_reloc_info__add_module_btf(info, module);
		if (err) {
			CHECK(err == -ENOMEM && errno == ENOMEM, "limit %zu: add_module_btf: %s",
			      limit, strerror(-err));
			stage = MODULE;
		}
	}
	for (i = 0; i < n_objects && stage == DONE; i++) {
		struct bpf_object *obj = bpf_object__open_file(objects[i], NULL);

		if (!obj) {
			CHECK(0, "open %s: %s", objects[i], strerror(errno));
			break;
		}
		err = bpf_object__reloc_info_gen(info, obj);
		bpf_object__close(obj);
		if (err) {
			CHECK(err == -ENOMEM && errno == ENOMEM, "limit %zu: reloc_info_gen(%s): %s",
			      limit, objects[i], strerror(-err));
			stage = GEN;
		}
	}
	/* After a failed object the info is still usable: a BTF of the objects before, or ENOMEM. */
	btf = bpf_reloc_info__get_btf(info);
	if (!btf) {
		CHECK(errno == ENOMEM, "limit %zu: get_btf: %s", limit, strerror(errno));
		if (stage == DONE)
			stage = GET_BTF;
	} else if (stage == DONE) {
		uint32_t size = 0;
		const void *raw = btf__raw_data(btf, &size);

		if (out && raw) {
			*out = malloc(size);
			if (*out)
				memcpy(*out, raw, size);
			*out_size = size;
		} else {
			CHECK(raw && size == reference_size && memcmp(raw, reference, size) == 0,
			      "limit %zu: output differs from the unlimited run's (%u vs %u bytes)",
			      limit, (unsigned)size, (unsigned)reference_size);
		}
	} else {
		CHECK(btf__type_cnt(btf) >= 1, "limit %zu: BTF after a failed object", limit);
	}
	*peak = bpf_reloc_info__mem_peak(info);
	if (limit)
		CHECK(*peak <= limit, "limit %zu: peak %zu over the limit", limit, *peak);
	btf__free(btf);
	bpf_reloc_info__free(info);
	return stage;
}

/* Every limit in [from, to]: each gives its stage (the checks are in run()). */
static void sweep_bytes(size_t from, size_t to)
{
	size_t limit, peak;

	for (limit = from; limit <= to; limit++)
		run(limit, &peak, NULL, NULL);
}

/* The smallest limit in (lo, hi] whose stage is that of hi, given lo's differs. */
static size_t transition(size_t lo, size_t hi)
{
	size_t peak;
	enum stage want = run(hi, &peak, NULL, NULL);

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (run(mid, &peak, NULL, NULL) == want)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Hooks that must never be installed: the library has allocated before they are offered. */
static void *never_malloc(void *ctx, size_t size)
{
	(void)ctx;
	(void)size;
	abort();
}

static void never_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)ptr;
	(void)size;
	abort();
}

static void api_misuse(void)
{
	struct {
		struct bpf_reloc_info_opts opts;
		uint64_t newer_field;
	} big;
	struct btf_reloc_info *info;

	/* NULL opts: as bpf_reloc_info__new, with the peak counted. */
	info = bpf_reloc_info__new_opts(target, NULL);
	CHECK(info != NULL, "new_opts(NULL opts): %s", strerror(errno));
	CHECK(bpf_reloc_info__mem_peak(info) > 0, "no peak counted");
	bpf_reloc_info__free(info);
	/* libbpf's OPTS_VALID: sz too small, unknown non-zero fields. */
	memset(&big, 0, sizeof(big));
	big.opts.sz = 4;
	errno = 0;
	CHECK(bpf_reloc_info__new_opts(target, &big.opts) == NULL && errno == EINVAL,
	      "sz = 4: %s", strerror(errno));
	big.opts.sz = sizeof(big);
	big.newer_field = 1;
	errno = 0;
	CHECK(bpf_reloc_info__new_opts(target, &big.opts) == NULL && errno == EINVAL,
	      "non-zero unknown field: %s", strerror(errno));
	big.newer_field = 0;
	info = bpf_reloc_info__new_opts(target, &big.opts);
	CHECK(info != NULL, "newer zeroed opts: %s", strerror(errno));
	bpf_reloc_info__free(info);
	errno = 0;
	CHECK(bpf_reloc_info__new_opts(NULL, NULL) == NULL && errno == EINVAL, "NULL path");
	errno = 0;
	CHECK(bpf_reloc_info__mem_peak(NULL) == 0 && errno == EINVAL, "mem_peak(NULL)");
	/* The allocator is decided once the library has allocated. */
	{
		struct btfgen_allocator hooks;

		memset(&hooks, 0, sizeof(hooks));
		hooks.sz = sizeof(hooks);
		hooks.free = never_free;
		CHECK(btfgen_set_allocator(&hooks) == -EINVAL, "set_allocator without malloc");
		hooks.malloc = never_malloc;
		CHECK(btfgen_set_allocator(&hooks) == -EBUSY, "set_allocator after allocating");
	}
}

int main(int argc, char **argv)
{
	long steps = 40, i;
	size_t peak, used, limit, prev_limit = 0;
	enum stage stage, prev_stage = NEW;
	int opt, transitions = 0;

	while ((opt = getopt(argc, argv, "n:M:")) != -1) {
		if (opt == 'n') {
			steps = strtol(optarg, NULL, 10);
		} else if (opt == 'M') {
			module = optarg;
		} else {
			argc = 0; /* usage */
			break;
		}
	}
	if (argc - optind < 3 || steps < 1) {
		fprintf(stderr, "usage: budget [-n STEPS] [-M MODULE_BTF] TARGET OUTPUT OBJECT...\n");
		return 2;
	}
	target = argv[optind];
	objects = argv + optind + 2;
	n_objects = argc - optind - 2;

	stage = run(0, &peak, &reference, &reference_size);
	if (stage != DONE || !reference) {
		fprintf(stderr, "the unlimited run failed (%s)\n", stage_names[stage]);
		return 1;
	}
	CHECK(write_all(argv[optind + 1], reference, reference_size) == 0, "write %s",
	      argv[optind + 1]);
	printf("unlimited: peak %zu bytes, output %u bytes\n", peak, (unsigned)reference_size);

	/* Exactly the peak is enough; one byte less is not. */
	CHECK(run(peak, &used, NULL, NULL) == DONE, "limit = peak %zu fails", peak);
	CHECK(run(peak - 1, &used, NULL, NULL) != DONE, "limit = peak - 1 succeeds");

	for (i = 0; i <= steps; i++) {
		limit = i == 0 ? 1 : (size_t)((double)peak * (double)i / (double)steps);
		stage = run(limit, &used, NULL, NULL);
		if (i > 0 && stage != prev_stage) {
			size_t at = transition(prev_limit, limit);

			printf("%s -> %s at limit %zu\n", stage_names[prev_stage], stage_names[stage],
			       at);
			/* Every byte around the point where the outcome changes. */
			sweep_bytes(at > 64 ? at - 64 : 1, at + 16);
			transitions++;
		}
		prev_stage = stage;
		prev_limit = limit;
	}
	CHECK(prev_stage == DONE, "the sweep did not end in success");
	CHECK(transitions >= 1, "no transition seen");
	api_misuse();
	printf("%ld runs, %d transitions\n", runs, transitions);
	free(reference);
	return checks_done("budget");
}
