/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * btfgen embedded with its own memory: linked statically (libbtfgen.a), given a
 * fixed arena through btfgen_set_allocator(), it minimizes OBJECTs against
 * TARGET and writes OUTPUT (run.sh compares it with `btfgen min-core-btf`).
 *
 * The program interposes the C library's allocator (malloc, calloc, realloc,
 * free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc) and counts
 * the calls made while a btfgen function runs: there must be none, so every
 * byte the library used came from the arena. It also checks that every arena
 * block was given back by the end (nothing leaked), that the hooks cannot be
 * replaced once set (-EBUSY), and with -p that the info's peak memory is at
 * most twice TARGET's size (the bound for a kernel BTF, where the target
 * dominates; a small fixture target is outweighed by the object's own BTF).
 * With -s ARCHIVE it also selects, from that archive of minimized BTFs held in
 * memory (btfgen_select_mem, the no_std xz decoder), Ubuntu 20.04's
 * 5.4.0-100-generic: on the arena too, with no C allocator call.
 *
 * usage: arena [-p] [-s ARCHIVE] TARGET OUTPUT OBJECT...
 */
#define _GNU_SOURCE
#include "btfgen.h"
#include "check.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- the arena: first fit over a static buffer, blocks never split off the end --- */

#define ARENA_SIZE (48u << 20)
#define ALIGN 16u

/* Each block starts with this header; free blocks form a list in address order. */
struct block {
	size_t size; /* whole block, header included, a multiple of ALIGN */
	struct block *next_free;
	size_t used; /* 1 when allocated */
	size_t pad;
};

static _Alignas(16) unsigned char arena[ARENA_SIZE];
static size_t arena_top;           /* bytes of `arena` ever handed out */
static struct block *free_list;    /* freed blocks, reused first fit */
static size_t arena_live_blocks, arena_live_bytes, arena_calls;

static void *arena_malloc(void *ctx, size_t size)
{
	size_t need = sizeof(struct block) + ((size + ALIGN - 1) & ~(size_t)(ALIGN - 1));
	struct block **link, *b;

	(void)ctx;
	arena_calls++;
	for (link = &free_list; (b = *link); link = &b->next_free) {
		if (b->size >= need) {
			*link = b->next_free;
			goto found;
		}
	}
	if (need > ARENA_SIZE - arena_top)
		return NULL;
	b = (struct block *)(arena + arena_top);
	b->size = need;
	arena_top += need;
found:
	b->used = 1;
	arena_live_blocks++;
	arena_live_bytes += size;
	return b + 1;
}

static void arena_free(void *ctx, void *ptr, size_t size)
{
	struct block *b = (struct block *)ptr - 1, **link;

	(void)ctx;
	arena_calls++;
	CHECK(b->used == 1, "free of a block not allocated: %p", ptr);
	b->used = 0;
	arena_live_blocks--;
	arena_live_bytes -= size;
	if ((unsigned char *)b + b->size == arena + arena_top) {
		arena_top -= b->size; /* the last block: give it back to the top */
		return;
	}
	for (link = &free_list; *link && *link < b; link = &(*link)->next_free)
		;
	b->next_free = *link;
	*link = b;
}

static void *arena_realloc(void *ctx, void *ptr, size_t old_size, size_t new_size)
{
	struct block *b = (struct block *)ptr - 1;
	void *moved;

	/* Grow in place when the block is the last one of the arena. */
	if ((unsigned char *)b + b->size == arena + arena_top) {
		size_t need = sizeof(struct block) +
			      ((new_size + ALIGN - 1) & ~(size_t)(ALIGN - 1));

		if (need <= ARENA_SIZE - (arena_top - b->size)) {
			arena_calls++;
			arena_top = arena_top - b->size + need;
			b->size = need;
			arena_live_bytes = arena_live_bytes - old_size + new_size;
			return ptr;
		}
	}
	moved = arena_malloc(ctx, new_size);
	if (!moved)
		return NULL;
	memcpy(moved, ptr, old_size < new_size ? old_size : new_size);
	arena_free(ctx, ptr, old_size);
	return moved;
}

/* --- the C library's allocator, interposed --- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static volatile int in_btfgen; /* a btfgen function is running */
static size_t libc_calls; /* C allocator calls made meanwhile */

#define COUNT() (libc_calls += in_btfgen != 0)

void *malloc(size_t size)
{
	COUNT();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	COUNT();
	return __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
	COUNT();
	return __libc_realloc(ptr, size);
}

void free(void *ptr)
{
	if (ptr)
		COUNT();
	__libc_free(ptr);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	COUNT();
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	COUNT();
	return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size)
{
	COUNT();
	return __libc_memalign(align, size);
}

void *valloc(size_t size)
{
	COUNT();
	return __libc_memalign(4096, size);
}

void *pvalloc(size_t size)
{
	COUNT();
	return __libc_memalign(4096, (size + 4095) & ~(size_t)4095);
}

/* Run a btfgen call with the interposer counting. */
#define BTFGEN(call) (in_btfgen = 1, (call)); in_btfgen = 0

int main(int argc, char **argv)
{
	void *volatile probe; /* volatile: the compiler may not elide the pair */
	struct btfgen_allocator hooks, bad;
	struct bpf_reloc_info_opts opts;
	struct btf_reloc_info *info;
	struct btf *btf;
	struct stat st;
	const void *raw;
	uint32_t size = 0;
	int i, err, bound_peak = 0;
	size_t peak;
	const char *select_archive = NULL;

	while ((i = getopt(argc, argv, "ps:")) != -1) {
		if (i == 's') {
			select_archive = optarg;
			continue;
		}
		if (i != 'p') {
			fprintf(stderr, "usage: arena [-p] [-s ARCHIVE] TARGET OUTPUT OBJECT...\n");
			return 2;
		}
		bound_peak = 1;
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 4) {
		fprintf(stderr, "usage: arena [-p] TARGET OUTPUT OBJECT...\n");
		return 2;
	}

	/* The interposer sees the C library's allocator (so zero below means zero). */
	in_btfgen = 1;
	probe = malloc(1);
	free(probe);
	in_btfgen = 0;
	CHECK(libc_calls == 2, "interposer counted %zu of 2 calls", libc_calls);
	libc_calls = 0;

	/* Invalid hooks are refused and leave the allocator undecided. */
	memset(&bad, 0, sizeof(bad));
	err = BTFGEN(btfgen_set_allocator(NULL));
	CHECK(err == -EINVAL, "set_allocator(NULL) = %d", err);
	err = BTFGEN(btfgen_set_allocator(&bad));
	CHECK(err == -EINVAL, "set_allocator(sz = 0) = %d", err);
	bad.sz = sizeof(bad);
	bad.malloc = arena_malloc;
	err = BTFGEN(btfgen_set_allocator(&bad));
	CHECK(err == -EINVAL, "set_allocator(no free) = %d", err);

	memset(&hooks, 0, sizeof(hooks));
	hooks.sz = sizeof(hooks);
	hooks.malloc = arena_malloc;
	hooks.realloc = arena_realloc;
	hooks.free = arena_free;
	err = BTFGEN(btfgen_set_allocator(&hooks));
	CHECK(err == 0, "set_allocator = %d", err);
	err = BTFGEN(btfgen_set_allocator(&hooks));
	CHECK(err == -EBUSY, "second set_allocator = %d", err);

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	info = BTFGEN(bpf_reloc_info__new_opts(argv[1], &opts));
	if (!info) {
		fprintf(stderr, "bpf_reloc_info__new_opts(%s): %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 3; i < argc; i++) {
		struct bpf_object *obj = BTFGEN(bpf_object__open_file(argv[i], NULL));

		CHECK(obj != NULL, "open %s: %s", argv[i], strerror(errno));
		err = BTFGEN(bpf_object__reloc_info_gen(info, obj));
		CHECK(err == 0, "reloc_info_gen(%s): %s", argv[i], strerror(-err));
		BTFGEN(bpf_object__close(obj));
	}
	btf = BTFGEN(bpf_reloc_info__get_btf(info));
	CHECK(btf != NULL, "get_btf: %s", strerror(errno));
	raw = NULL;
	if (btf) {
		raw = BTFGEN(btf__raw_data(btf, &size));
		CHECK(raw != NULL, "raw_data: %s", strerror(errno));
	}
	/* Written with btf__save_to_file, inside the library too. */
	if (raw) {
		err = BTFGEN(btf__save_to_file(btf, argv[2]));
		CHECK(err == 0, "btf__save_to_file(%s): %s", argv[2], strerror(-err));
	}
	peak = BTFGEN(bpf_reloc_info__mem_peak(info));
	BTFGEN(btf__free(btf));
	BTFGEN(bpf_reloc_info__free(info));

	if (select_archive) {
		struct btfgen_select_opts sopts;
		struct btfgen_selection *sel;
		enum btfgen_match kind;
		const char *entry;
		size_t archive_len = 0, btf_len = 0;
		unsigned char *archive = read_all(select_archive, &archive_len);

		CHECK(archive != NULL, "read %s: %s", select_archive, strerror(errno));
		memset(&sopts, 0, sizeof(sopts));
		sopts.sz = sizeof(sopts);
		sopts.root = "/nonexistent/btfgen-arena-root";
		sopts.os_release = "ID=ubuntu\nVERSION_ID=\"20.04\"\n";
		sopts.release = "5.4.0-100-generic";
		sopts.machine = "x86_64";
		sel = BTFGEN(btfgen_select_mem(archive, archive_len, &sopts));
		CHECK(sel != NULL, "btfgen_select_mem: %s", strerror(errno));
		kind = BTFGEN(btfgen_selection__match(sel));
		CHECK(kind == BTFGEN_MATCH_EXACT, "match %d, not exact", (int)kind);
		raw = BTFGEN(btfgen_selection__btf(sel, &btf_len));
		CHECK(raw != NULL && btf_len > 0, "no BTF selected");
		entry = BTFGEN(btfgen_selection__entry(sel));
		printf("selected %s from %s: %zu bytes\n", entry ? entry : "(none)",
		       select_archive, btf_len);
		BTFGEN(btfgen_selection__free(sel));
		free(archive);
	}

	CHECK(stat(argv[1], &st) == 0, "stat %s", argv[1]);
	printf("target %lld bytes, output %u bytes, peak library memory %zu bytes (%.2fx the "
	       "target)\n",
	       (long long)st.st_size, (unsigned)size, peak, (double)peak / (double)st.st_size);
	printf("arena: %zu hook calls, %zu bytes at the top, %zu blocks / %zu bytes live at exit;"
	       " C library allocator calls from btfgen: %zu\n",
	       arena_calls, arena_top, arena_live_blocks, arena_live_bytes, libc_calls);
	CHECK(peak > 0, "no peak counted");
	if (bound_peak)
		CHECK(peak <= 2 * (size_t)st.st_size, "peak %zu over twice the target's %lld bytes",
		      peak, (long long)st.st_size);
	CHECK(arena_calls > 0, "the arena was never used");
	CHECK(libc_calls == 0, "btfgen called the C library's allocator %zu times", libc_calls);
	CHECK(arena_live_blocks == 0 && arena_live_bytes == 0,
	      "leaked into the arena: %zu blocks, %zu bytes", arena_live_blocks, arena_live_bytes);
	return checks_done("arena");
}
