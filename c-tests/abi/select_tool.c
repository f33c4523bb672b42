/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * A libbpf-tools-style program with its minimized BTFs linked in: at start-up it asks btfgen
 * for the running kernel's BTF (select_btf.c), then libbpf (Debian's libbpf-dev) opens and
 * loads its object with that BTF as btf_custom_path, and the file is cleaned up.
 *
 *   select_tool OBJECT ROOT EXPECT [RELEASE]
 *
 * ROOT is the host's root (/, or a fake one without sys/kernel/btf/vmlinux), EXPECT the
 * selection select_btf.c describes ("MATCH KEY ENTRY BTF_SIZE"; the size is checked to be
 * non-zero unless it is "0"), RELEASE an overriding kernel release ("-": the running one).
 * With a match, libbpf relocates the object against the archived BTF (CO-RE must succeed) and
 * loads it into the kernel; a kernel that refuses BPF_PROG_LOAD of raw_tp programs skips the
 * load (exit 77). EXPECT "none" checks that ensure fails with -ENOENT.
 */
#include <bpf/libbpf.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "select_btf.h"

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	const char *object, *root, *expect, *release = NULL;
	char described[512], custom[4096] = "";
	struct bpf_object *obj;
	struct stat st;
	int err, skipped = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: %s OBJECT ROOT EXPECT [RELEASE]\n", argv[0]);
		return 2;
	}
	object = argv[1];
	root = argv[2];
	expect = argv[3];
	if (argc > 4 && strcmp(argv[4], "-") != 0)
		release = argv[4];

	err = describe_core_btf(root, release, described, sizeof(described));
	CHECK(err == 0, "btfgen_select_mem: %d (%s)", err, strerror(-err));
	printf("selected: %s\n", described);
	CHECK(strncmp(described, expect, strlen(expect)) == 0, "selected '%s', expected '%s'",
	      described, expect);

	err = ensure_core_btf(root, release, &open_opts.btf_custom_path);
	if (strncmp(expect, "none", 4) == 0) {
		CHECK(err == -ENOENT, "btfgen_ensure_core_btf: %d, expected -ENOENT", err);
		CHECK(open_opts.btf_custom_path == NULL, "no path on failure");
		return checks_done("select_tool");
	}
	CHECK(err == 0, "btfgen_ensure_core_btf: %d (%s)", err, strerror(-err));
	if (strncmp(expect, "native", 6) == 0) {
		CHECK(open_opts.btf_custom_path == NULL, "native: btf_custom_path stays NULL");
	} else if (open_opts.btf_custom_path) {
		snprintf(custom, sizeof(custom), "%s", open_opts.btf_custom_path);
		CHECK(stat(custom, &st) == 0, "stat %s: %s", custom, strerror(errno));
		CHECK((st.st_mode & 0777) == 0600, "%s: mode %o, expected 0600", custom,
		      (unsigned)(st.st_mode & 0777));
		CHECK(st.st_size > 0, "%s is empty", custom);
	} else {
		CHECK(0, "a match must set btf_custom_path");
	}

	obj = bpf_object__open_file(object, &open_opts);
	CHECK(obj != NULL, "libbpf bpf_object__open_file(%s): %s", object, strerror(errno));
	if (obj) {
		err = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL);
		if (err <= 0) {
			printf("SKIP load: the kernel refuses BPF_PROG_LOAD of raw_tp programs "
			       "(probe: %d)\n", err);
			skipped = 1;
		} else {
			/* CO-RE relocation against btf_custom_path happens here. */
			err = bpf_object__load(obj);
			CHECK(err == 0, "libbpf bpf_object__load (btf_custom_path=%s): %d (%s)",
			      custom[0] ? custom : "(kernel's own)", err, strerror(-err));
		}
	}
	bpf_object__close(obj);

	cleanup_core_btf(&open_opts.btf_custom_path);
	CHECK(open_opts.btf_custom_path == NULL, "cleanup clears btf_custom_path");
	if (custom[0])
		CHECK(access(custom, F_OK) != 0 && errno == ENOENT, "cleanup removes %s", custom);
	err = checks_done("select_tool");
	return err == 0 && skipped ? 77 : err;
}
