/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Bad input through every function of the btfgen C API: NULL arguments,
 * missing files, directories, empty files, truncated and corrupted BTF and
 * objects (made here from the fixtures, in TMPDIR), invalid opts, failing
 * relocations, misuse of the API. Each must give the documented NULL + errno
 * or negative errno, agree with libbpf_get_error(), and leave nothing behind.
 *
 * usage: badinput TMPDIR DATA_DIR     (DATA_DIR: the repo's tests/data)
 */
#define _POSIX_C_SOURCE 200809L
#include "btfgen.h"
#include "check.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

static const char *tmpdir, *datadir;

/* A pointer-returning call: expect NULL, errno `want`, libbpf_get_error() == -want. */
#define EXPECT_NULL(call, want)                                                       \
	do {                                                                          \
		void *p_;                                                             \
		long g_;                                                              \
		int e_;                                                               \
		errno = 0;                                                            \
		p_ = (void *)(call);                                                  \
		g_ = libbpf_get_error(p_);                                            \
		e_ = errno;                                                           \
		CHECK(p_ == NULL && e_ == (want) && g_ == -(long)(want),              \
		      "%s: got %p, errno %d (%s), libbpf_get_error %ld; want NULL, %d (%s)", \
		      #call, p_, e_, strerror(e_), g_, (want), strerror(want));       \
	} while (0)

/* An int call: expect -want, with errno == want. */
#define EXPECT_ERR(call, want)                                                        \
	do {                                                                          \
		int r_, e_;                                                           \
		errno = 0;                                                            \
		r_ = (call);                                                          \
		e_ = errno;                                                           \
		CHECK(r_ == -(want) && e_ == (want), "%s: got %d (errno %d); want %d (%s)", \
		      #call, r_, e_, -(want), strerror(want));                        \
	} while (0)

static char path_buf[32][4096];
static int path_next;

/* A path under DIR, in a ring of buffers: valid for the next 31 calls. */
static const char *in(const char *dir, const char *name)
{
	char *p = path_buf[path_next++ % 32];

	snprintf(p, sizeof(path_buf[0]), "%s/%s", dir, name);
	return p;
}

static unsigned char *fixture(const char *name, size_t *len)
{
	unsigned char *data = read_all(in(datadir, name), len);

	if (!data) {
		fprintf(stderr, "cannot read fixture %s\n", name);
		exit(2);
	}
	return data;
}

/* Write `len` bytes of `data` to TMPDIR/name and return the path. */
static const char *make(const char *name, const void *data, size_t len)
{
	const char *path = in(tmpdir, name);

	if (write_all(path, data, len)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	return path;
}

/* The section header of the section named `name` in a little-endian ELF64 image. */
static Elf64_Shdr *section(unsigned char *elf, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(elf + eh->e_shoff);
	const char *names = (const char *)elf + sh[eh->e_shstrndx].sh_offset;
	int i;

	for (i = 0; i < eh->e_shnum; i++)
		if (strcmp(names + sh[i].sh_name, name) == 0)
			return &sh[i];
	fprintf(stderr, "no section %s\n", name);
	exit(2);
}

/* Rename a section in place (same length), so readers no longer find it. */
static void rename_section(unsigned char *elf, const char *from, const char *to)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
	Elf64_Shdr *sh = section(elf, from);
	Elf64_Shdr *shstr = (Elf64_Shdr *)(elf + eh->e_shoff) + eh->e_shstrndx;

	memcpy(elf + shstr->sh_offset + sh->sh_name, to, strlen(to));
}

/* The raw bytes of a BTF `struct btf` as libbpf would return them. */
static int same_raw(struct btf *a, struct btf *b)
{
	uint32_t la = 0, lb = 0;
	const void *ra = btf__raw_data(a, &la), *rb = btf__raw_data(b, &lb);

	return ra && rb && la == lb && memcmp(ra, rb, la) == 0;
}

/* Whether TMPDIR holds a file whose name contains ".tmp." (a leftover temporary file). */
static int leftover_tmp_files(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".tmp."))
			found++;
	closedir(d);
	return found;
}

static void null_arguments(const char *good_btf, const char *good_obj)
{
	struct btf_reloc_info *info = bpf_reloc_info__new(good_btf);
	struct bpf_object *obj = bpf_object__open_file(good_obj, NULL);
	struct btf *btf = btf__parse(good_btf, NULL);
	uint32_t size = 12345;
	char one = 1;

	CHECK(info && obj && btf, "good inputs must open");
	EXPECT_NULL(bpf_reloc_info__new(NULL), EINVAL);
	EXPECT_NULL(bpf_reloc_info__get_btf(NULL), EINVAL);
	EXPECT_ERR(bpf_reloc_info__add_module_btf(NULL, good_btf), EINVAL);
	EXPECT_ERR(bpf_reloc_info__add_module_btf(info, NULL), EINVAL);
	EXPECT_ERR(bpf_object__reloc_info_gen(NULL, obj), EINVAL);
	EXPECT_ERR(bpf_object__reloc_info_gen(info, NULL), EINVAL);
	EXPECT_ERR(bpf_object__reloc_info_gen(NULL, NULL), EINVAL);
	EXPECT_NULL(bpf_object__open_file(NULL, NULL), EINVAL);
	EXPECT_NULL(bpf_object__open(NULL), EINVAL);
	EXPECT_NULL(bpf_object__open_mem(NULL, 100, NULL), EINVAL);
	EXPECT_NULL(bpf_object__open_mem(&one, 0, NULL), EINVAL);
	EXPECT_NULL(btf__parse(NULL, NULL), EINVAL);
	EXPECT_NULL(btf__parse_split(NULL, btf), EINVAL);
	EXPECT_NULL(btf__parse_split(NULL, NULL), EINVAL);
	EXPECT_NULL(btf__raw_data(NULL, &size), EINVAL);
	CHECK(size == 12345, "raw_data(NULL) must not write *size");
	errno = 0;
	CHECK(btf__type_cnt(NULL) == 0 && errno == EINVAL, "type_cnt(NULL): errno %d", errno);
	EXPECT_ERR(btf__save_to_file(NULL, in(tmpdir, "never")), EINVAL);
	EXPECT_ERR(btf__save_to_file(btf, NULL), EINVAL);
	CHECK(btf__raw_data(btf, NULL) != NULL, "raw_data with NULL size");
	CHECK(libbpf_get_error(btf) == 0, "libbpf_get_error(valid) != 0");

	/* Free functions accept NULL. */
	bpf_reloc_info__free(NULL);
	bpf_object__close(NULL);
	btf__free(NULL);

	btf__free(btf);
	bpf_object__close(obj);
	bpf_reloc_info__free(info);
}

/* Missing files, directories, empty files: for every function taking a path. */
static void bad_paths(const char *good_btf)
{
	const char *missing = in(tmpdir, "does-not-exist");
	const char *empty = make("empty", "", 0);
	struct btf_reloc_info *info = bpf_reloc_info__new(good_btf);
	struct btf *base = btf__parse(good_btf, NULL);
	const char *paths[3];
	int want[3] = {ENOENT, EISDIR, EINVAL}, i;

	paths[0] = missing;
	paths[1] = tmpdir;
	paths[2] = empty;
	for (i = 0; i < 3; i++) {
		EXPECT_NULL(bpf_reloc_info__new(paths[i]), want[i]);
		EXPECT_NULL(bpf_object__open_file(paths[i], NULL), want[i]);
		EXPECT_NULL(bpf_object__open(paths[i]), want[i]);
		EXPECT_NULL(btf__parse(paths[i], NULL), want[i]);
		EXPECT_NULL(btf__parse_split(paths[i], base), want[i]);
		EXPECT_ERR(bpf_reloc_info__add_module_btf(info, paths[i]), want[i]);
	}
	EXPECT_NULL(bpf_reloc_info__new(""), ENOENT);
	btf__free(base);
	bpf_reloc_info__free(info);
}

static void corrupt_btf(void)
{
	size_t len;
	unsigned char *good = fixture("targets/btf__fields.btf", &len);
	unsigned char *bad = malloc(len);
	uint32_t hdr_len, type_off;
	const char *paths[6];
	int i;

	memcpy(bad, good, len);
	paths[0] = make("btf-trunc-header", good, 20);
	paths[1] = make("btf-trunc-half", good, len / 2);
	bad[0] ^= 0xff; /* magic */
	paths[2] = make("btf-bad-magic", bad, len);
	memcpy(bad, good, len);
	bad[20] = 0xff; /* str_len (header offset 20) far beyond the file */
	bad[21] = 0xff;
	bad[22] = 0xff;
	paths[3] = make("btf-bad-strlen", bad, len);
	memcpy(bad, good, len);
	memcpy(&hdr_len, good + 4, 4);
	memcpy(&type_off, good + 8, 4);
	bad[hdr_len + type_off + 7] = 0x1f; /* first type: kind 31 (unknown) */
	paths[4] = make("btf-bad-kind", bad, len);
	for (i = 0; i < (int)len; i++)
		bad[i] = (unsigned char)(i * 7 + 3);
	memcpy(bad, good, 24); /* a valid-looking header over garbage */
	paths[5] = make("btf-garbage", bad, len);

	for (i = 0; i < 6; i++) {
		EXPECT_NULL(bpf_reloc_info__new(paths[i]), EINVAL);
		EXPECT_NULL(btf__parse(paths[i], NULL), EINVAL);
		EXPECT_NULL(bpf_object__open_file(paths[i], NULL), EINVAL);
	}
	free(bad);
	free(good);
}

/* Corrupted objects; and objects without .BTF.ext / .BTF. */
static void corrupt_objects(const char *target)
{
	size_t len;
	unsigned char *good = fixture("progs/fields.bpf.o", &len);
	unsigned char *bad = malloc(len);
	struct btf_reloc_info *info = bpf_reloc_info__new(target);
	struct btf *before, *after;
	struct bpf_object *obj;
	Elf64_Shdr *sh;
	const char *paths[6];
	int i;

	paths[0] = make("obj-trunc-ehdr", good, sizeof(Elf64_Ehdr));
	paths[1] = make("obj-trunc-half", good, len / 2);
	memcpy(bad, good, len);
	((Elf64_Ehdr *)bad)->e_machine = EM_X86_64;
	paths[2] = make("obj-x86", bad, len);
	memcpy(bad, good, len);
	sh = section(bad, ".BTF");
	bad[sh->sh_offset] ^= 0xff;
	paths[3] = make("obj-bad-btf", bad, len);
	memcpy(bad, good, len);
	sh = section(bad, ".BTF.ext");
	bad[sh->sh_offset] ^= 0xff;
	paths[4] = make("obj-bad-btf-ext", bad, len);
	memcpy(bad, good, len);
	((Elf64_Ehdr *)bad)->e_shoff = len * 2; /* section headers past the end */
	paths[5] = make("obj-bad-shoff", bad, len);
	for (i = 0; i < 6; i++) {
		EXPECT_NULL(bpf_object__open_file(paths[i], NULL), EINVAL);
		EXPECT_NULL(bpf_object__open(paths[i]), EINVAL);
	}
	EXPECT_NULL(bpf_object__open_mem(good, len / 2, NULL), EINVAL);
	/* A BTF file is not an object. */
	EXPECT_NULL(bpf_object__open_file(target, NULL), EINVAL);

	/* No .BTF.ext: no CO-RE relocations; it opens, adds nothing, succeeds (as libbpf). */
	before = bpf_reloc_info__get_btf(info);
	memcpy(bad, good, len);
	rename_section(bad, ".BTF.ext", ".BTF.exx");
	obj = bpf_object__open_file(make("obj-no-btf-ext", bad, len), NULL);
	CHECK(obj != NULL, "object without .BTF.ext: %s", strerror(errno));
	CHECK(bpf_object__reloc_info_gen(info, obj) == 0, "gen on object without .BTF.ext");
	bpf_object__close(obj);
	after = bpf_reloc_info__get_btf(info);
	CHECK(before && after && same_raw(before, after), "object without .BTF.ext added types");
	btf__free(after);

	/* No .BTF (nor .BTF.ext): opens, but cannot be relocated; btf__parse finds no .BTF. */
	rename_section(bad, ".BTF", ".BTX");
	obj = bpf_object__open_file(make("obj-no-btf", bad, len), NULL);
	CHECK(obj != NULL, "object without .BTF: %s", strerror(errno));
	EXPECT_ERR(bpf_object__reloc_info_gen(info, obj), ENODATA);
	bpf_object__close(obj);
	EXPECT_NULL(btf__parse(in(tmpdir, "obj-no-btf"), NULL), ENODATA);
	after = bpf_reloc_info__get_btf(info);
	CHECK(before && after && same_raw(before, after), "failed object added types");
	btf__free(after);
	btf__free(before);

	bpf_reloc_info__free(info);
	free(bad);
	free(good);
}

/* libbpf's OPTS_VALID rules for struct bpf_object_open_opts. */
static void open_opts(void)
{
	struct {
		struct bpf_object_open_opts opts;
		uint64_t newer_field;
	} big;
	struct bpf_object_open_opts opts;
	const char *obj_path = in(datadir, "progs/fields.bpf.o");
	struct bpf_object *obj;
	unsigned char *buf;
	size_t len;

	memset(&opts, 0, sizeof(opts));
	opts.sz = 4; /* smaller than sizeof(size_t) */
	EXPECT_NULL(bpf_object__open_file(obj_path, &opts), EINVAL);

	memset(&big, 0, sizeof(big));
	big.opts.sz = sizeof(big);
	big.newer_field = 1; /* a field this library does not know, set */
	EXPECT_NULL(bpf_object__open_file(obj_path, &big.opts), EINVAL);

	big.newer_field = 0; /* ... and left zero: fine */
	big.opts.object_name = "named";
	obj = bpf_object__open_file(obj_path, &big.opts);
	CHECK(obj != NULL, "zero-extended opts: %s", strerror(errno));
	bpf_object__close(obj);

	memset(&opts, 0, sizeof(opts));
	opts.sz = offsetof(struct bpf_object_open_opts, object_name); /* an older, shorter struct */
	obj = bpf_object__open_file(obj_path, &opts);
	CHECK(obj != NULL, "short opts: %s", strerror(errno));
	bpf_object__close(obj);

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.object_name = "from-memory";
	opts.btf_custom_path = "/ignored"; /* documented as ignored */
	buf = fixture("progs/fields.bpf.o", &len);
	obj = bpf_object__open_mem(buf, len, &opts);
	CHECK(obj != NULL, "open_mem with opts: %s", strerror(errno));
	bpf_object__close(obj);
	opts.sz = 2;
	EXPECT_NULL(bpf_object__open_mem(buf, len, &opts), EINVAL);
	free(buf);
}

/* A relocation libbpf fails (ambiguous candidates) fails the object and records nothing. */
static void failing_relocation(void)
{
	struct btf_reloc_info *info = bpf_reloc_info__new(in(datadir, "targets/btf__ambiguous_off.btf"));
	struct bpf_object *obj = bpf_object__open_file(in(datadir, "progs/ambiguous.bpf.o"), NULL);
	struct btf *before, *after;

	CHECK(info && obj, "ambiguous fixtures must open");
	before = bpf_reloc_info__get_btf(info);
	EXPECT_ERR(bpf_object__reloc_info_gen(info, obj), EINVAL);
	EXPECT_ERR(bpf_object__reloc_info_gen(info, obj), EINVAL);
	after = bpf_reloc_info__get_btf(info);
	CHECK(before && after && same_raw(before, after), "failed object recorded types");
	CHECK(btf__type_cnt(after) == 1, "nothing recorded: type_cnt %u",
	      (unsigned)btf__type_cnt(after));
	btf__free(before);
	btf__free(after);
	bpf_object__close(obj);
	bpf_reloc_info__free(info);
}

/* Module BTFs: only before the first object; must be split BTF on the target. */
static void modules(void)
{
	const char *base_path = in(datadir, "targets/base.btf");
	const char *module_path = in(datadir, "targets/module.btf");
	struct btf_reloc_info *info = bpf_reloc_info__new(base_path);
	struct bpf_object *obj = bpf_object__open_file(in(datadir, "progs/module.bpf.o"), NULL);
	struct btf *base, *split;
	unsigned char *module, *ko;
	uint32_t size = 0;
	size_t len, ko_len;

	CHECK(info && obj, "module fixtures must open");
	module = fixture("targets/module.btf", &len);
	EXPECT_ERR(bpf_reloc_info__add_module_btf(info, make("module-trunc", module, len / 2)),
		   EINVAL);
	CHECK(bpf_reloc_info__add_module_btf(info, module_path) == 0, "add module");
	CHECK(bpf_object__reloc_info_gen(info, obj) == 0, "gen with module");
	EXPECT_ERR(bpf_reloc_info__add_module_btf(info, module_path), EBUSY);
	bpf_object__close(obj);
	bpf_reloc_info__free(info);

	/* A module's debug .ko (DWARF, no .BTF) is converted over the target (converted from
	 * DWARF too): a truncated one, or one of another kernel, is invalid. */
	info = bpf_reloc_info__new(in(datadir, "dwarf/kbase-gcc-dwarf5.so"));
	CHECK(info, "debug target: %s", strerror(errno));
	ko = fixture("dwarf/kmod-gcc-dwarf5-rel.ko", &ko_len);
	EXPECT_ERR(bpf_reloc_info__add_module_btf(info, make("kmod-trunc.ko", ko, ko_len / 2)),
		   EINVAL);
	EXPECT_ERR(bpf_reloc_info__add_module_btf(info, in(datadir, "dwarf/gcc-dwarf5-rel.ko")),
		   EINVAL);
	CHECK(bpf_reloc_info__add_module_btf(info, in(datadir, "dwarf/kmod-gcc-dwarf5-rel.ko")) == 0,
	      "add debug module");
	free(ko);
	bpf_reloc_info__free(info);

	/* Split BTF is not a valid target on its own. */
	EXPECT_NULL(bpf_reloc_info__new(module_path), EINVAL);
	EXPECT_NULL(btf__parse(module_path, NULL), EINVAL);
	EXPECT_NULL(btf__parse_split(module_path, NULL), EINVAL);

	/* btf__parse_split: raw data is the split part; the base may be freed first. */
	base = btf__parse(base_path, NULL);
	split = btf__parse_split(module_path, base);
	CHECK(base && split, "parse_split: %s", strerror(errno));
	CHECK(btf__type_cnt(split) > btf__type_cnt(base), "split type_cnt %u, base %u",
	      (unsigned)btf__type_cnt(split), (unsigned)btf__type_cnt(base));
	btf__free(base);
	CHECK(btf__raw_data(split, &size) && size == len &&
		      memcmp(btf__raw_data(split, NULL), module, len) == 0,
	      "split raw data");
	btf__free(split);
	free(module);
}

static void parse_elf_and_save(const char *good_btf)
{
	struct btf_ext *ext = (struct btf_ext *)&ext;
	struct btf *btf = btf__parse(in(datadir, "progs/fields.bpf.o"), &ext);
	struct btf *back;
	char dst[4096];

	CHECK(btf != NULL, "btf__parse(ELF object): %s", strerror(errno));
	CHECK(ext == NULL, "btf_ext must be set to NULL");
	btf__free(btf);

	btf = btf__parse(good_btf, NULL);
	snprintf(dst, sizeof(dst), "%s/saved.btf", tmpdir);
	CHECK(btf__save_to_file(btf, dst) == 0, "save: %s", strerror(errno));
	CHECK(btf__save_to_file(btf, dst) == 0, "save over an existing file");
	back = btf__parse(dst, NULL);
	CHECK(back && same_raw(btf, back), "saved file differs");
	btf__free(back);
	EXPECT_ERR(btf__save_to_file(btf, in(tmpdir, "no/such/dir/x.btf")), ENOENT);
	EXPECT_ERR(btf__save_to_file(btf, tmpdir), EISDIR);
	EXPECT_ERR(btf__save_to_file(btf, ""), EINVAL);
	CHECK(leftover_tmp_files() == 0, "temporary files left in %s", tmpdir);
	btf__free(btf);
}

int main(int argc, char **argv)
{
	static char good_btf[4096], good_obj[4096];

	if (argc != 3) {
		fprintf(stderr, "usage: badinput TMPDIR DATA_DIR\n");
		return 2;
	}
	tmpdir = argv[1];
	datadir = argv[2];
	snprintf(good_btf, sizeof(good_btf), "%s/targets/btf__fields.btf", datadir);
	snprintf(good_obj, sizeof(good_obj), "%s/progs/fields.bpf.o", datadir);

	null_arguments(good_btf, good_obj);
	bad_paths(good_btf);
	corrupt_btf();
	corrupt_objects(good_btf);
	open_opts();
	failing_relocation();
	modules();
	parse_elf_and_save(good_btf);
	return checks_done("badinput");
}
