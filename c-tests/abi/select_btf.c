/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The btfgen half of select_tool.c (a separate file because btfgen.h and libbpf's
 * <bpf/libbpf.h> declare the same names): the archive of minimized BTFs that
 * `btfgen batch --dedup --archive min_btfs.tar.xz` wrote, linked into the program with
 * `ld -r -b binary min_btfs.tar.xz`, and the two calls that replace libbpf-tools'
 * ensure_core_btf() / cleanup_core_btf().
 */
#include <btfgen.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "select_btf.h"

/* From `ld -r -b binary min_btfs.tar.xz`. */
extern const unsigned char _binary_min_btfs_tar_xz_start[];
extern const unsigned char _binary_min_btfs_tar_xz_end[];

static size_t archive_size(void)
{
	return (size_t)(_binary_min_btfs_tar_xz_end - _binary_min_btfs_tar_xz_start);
}

static const char *const match_names[] = {
	[BTFGEN_MATCH_NONE] = "none",		[BTFGEN_MATCH_NATIVE] = "native",
	[BTFGEN_MATCH_EXACT] = "exact",		[BTFGEN_MATCH_NORMALIZED] = "normalized",
	[BTFGEN_MATCH_LIKE] = "like",		[BTFGEN_MATCH_RELEASE] = "release",
	[BTFGEN_MATCH_SERIES] = "series",
};

int describe_core_btf(const char *root, const char *release, char *out, size_t out_size)
{
	struct btfgen_select_opts opts;
	struct btfgen_selection *sel;
	const char *entry;
	size_t size = 0;

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.root = root;
	opts.release = release;
	sel = btfgen_select_mem(_binary_min_btfs_tar_xz_start, archive_size(), &opts);
	if (!sel)
		return -errno;
	entry = btfgen_selection__entry(sel);
	btfgen_selection__btf(sel, &size);
	snprintf(out, out_size, "%s %s %s %zu", match_names[btfgen_selection__match(sel)],
		 btfgen_selection__key(sel), entry ? entry : "-", size);
	btfgen_selection__free(sel);
	return 0;
}

int ensure_core_btf(const char *root, const char *release, const char **btf_custom_path)
{
	struct btfgen_select_opts opts;

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.root = root;
	opts.release = release;
	return btfgen_ensure_core_btf(_binary_min_btfs_tar_xz_start, archive_size(), &opts,
				      btf_custom_path);
}

void cleanup_core_btf(const char **btf_custom_path)
{
	btfgen_cleanup_core_btf(btf_custom_path);
}
