/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * bpf_reloc_info__prog_verdict(): each entry program's load verdict against
 * TARGET must be the one given on the command line (run.sh passes the
 * verdicts tests/verdict.rs checks against the kernel's verifier, and those of
 * `btfgen min-core-btf --report` for the same pair), with evidence where a
 * poisoned instruction is guarded or reached; asking records nothing (the
 * minimized BTF is the same with and without the queries); bad arguments are
 * refused with libbpf's errno conventions.
 *
 * usage: verdict TARGET OBJECT SUBPROGRAM PROGRAM=VERDICT...
 *   VERDICT: loads, rejected, unknown or failed; SUBPROGRAM: a .text function
 *   of OBJECT (it has no verdict of its own: ENOENT).
 */
#define _POSIX_C_SOURCE 200809L
#include "btfgen.h"
#include "check.h"

#include <errno.h>
#include <string.h>

static const char *const names[] = { "loads", "rejected", "unknown", "failed" };

static int verdict_of(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

/* The minimized BTF of OBJECT against TARGET, asking every verdict first if
 * `ask`; NULL on failure. */
static void *minimized(const char *target, const char *object, int ask,
		       char **progs, int n, uint32_t *size)
{
	struct btf_reloc_info *info = bpf_reloc_info__new(target);
	struct bpf_object *obj = bpf_object__open_file(object, NULL);
	struct btf *btf = NULL;
	void *copy = NULL;

	if (!info || !obj)
		goto out;
	for (int i = 0; ask && i < n; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(progs[i], "="), progs[i]);
		CHECK(bpf_reloc_info__prog_verdict(info, obj, name, NULL, 0) >= 0, "%s", name);
	}
	if (bpf_object__reloc_info_gen(info, obj))
		goto out;
	btf = bpf_reloc_info__get_btf(info);
	if (btf) {
		const void *raw = btf__raw_data(btf, size);

		copy = malloc(*size);
		if (copy)
			memcpy(copy, raw, *size);
	}
out:
	btf__free(btf);
	bpf_object__close(obj);
	bpf_reloc_info__free(info);
	return copy;
}

int main(int argc, char **argv)
{
	struct btf_reloc_info *info;
	struct bpf_object *obj;
	char evidence[4096], tiny[8];
	int guarded = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: verdict TARGET OBJECT SUBPROGRAM PROGRAM=VERDICT...\n");
		return 2;
	}
	info = bpf_reloc_info__new(argv[1]);
	obj = bpf_object__open_file(argv[2], NULL);
	CHECK(info && obj, "open: %s", strerror(errno));
	if (!info || !obj)
		return checks_done("verdict");

	for (int i = 4; i < argc; i++) {
		char name[64];
		const char *want = strchr(argv[i], '=');
		int got;

		CHECK(want && verdict_of(want + 1) >= 0, "bad argument %s", argv[i]);
		if (!want || verdict_of(want + 1) < 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(want - argv[i]), argv[i]);
		evidence[0] = 'x';
		got = bpf_reloc_info__prog_verdict(info, obj, name, evidence, sizeof(evidence));
		CHECK(got == verdict_of(want + 1), "%s: %d (%s), want %s", name, got,
		      got >= 0 && got < 4 ? names[got] : strerror(-got), want + 1);
		/* Anything but a clean load of unpoisoned code says why. */
		if (got == BTFGEN_VERDICT_REJECTED || got == BTFGEN_VERDICT_UNKNOWN ||
		    got == BTFGEN_VERDICT_FAILED)
			CHECK(evidence[0] && strchr(evidence, '\n'), "%s: no evidence", name);
		if (got == BTFGEN_VERDICT_LOADS && evidence[0]) {
			CHECK(strstr(evidence, "dead") != NULL, "%s: %s", name, evidence);
			guarded++;
		}
		/* A short buffer gets the start of the same text, NUL-terminated. */
		memset(tiny, 'x', sizeof(tiny));
		CHECK(bpf_reloc_info__prog_verdict(info, obj, name, tiny, sizeof(tiny)) == got,
		      "%s again", name);
		CHECK(!memchr(tiny, 'x', sizeof(tiny)) || strlen(tiny) < sizeof(tiny),
		      "%s: not terminated", name);
		CHECK(!strncmp(tiny, evidence, strlen(tiny)), "%s: %s vs %s", name, tiny, evidence);
	}
	printf("%d guarded program(s) with evidence\n", guarded);

	/* Sub-programs have no verdict of their own; neither has a missing name. */
	CHECK(bpf_reloc_info__prog_verdict(info, obj, argv[3], NULL, 0) == -ENOENT &&
		      errno == ENOENT, "sub-program %s", argv[3]);
	CHECK(bpf_reloc_info__prog_verdict(info, obj, "no_such_program", NULL, 0) == -ENOENT,
	      "missing program");
	CHECK(bpf_reloc_info__prog_verdict(NULL, obj, "x", NULL, 0) == -EINVAL && errno == EINVAL,
	      "NULL info");
	CHECK(bpf_reloc_info__prog_verdict(info, NULL, "x", NULL, 0) == -EINVAL, "NULL object");
	CHECK(bpf_reloc_info__prog_verdict(info, obj, NULL, NULL, 0) == -EINVAL, "NULL name");
	bpf_object__close(obj);
	bpf_reloc_info__free(info);

	/* Asking records nothing: the output is the same either way. */
	{
		uint32_t plain_size = 0, asked_size = 0;
		void *plain = minimized(argv[1], argv[2], 0, argv + 4, argc - 4, &plain_size);
		void *asked = minimized(argv[1], argv[2], 1, argv + 4, argc - 4, &asked_size);

		CHECK(plain && asked && plain_size == asked_size &&
			      !memcmp(plain, asked, plain_size),
		      "minimized BTF differs after the verdict queries (%u vs %u bytes)",
		      plain_size, asked_size);
		free(plain);
		free(asked);
	}
	return checks_done("verdict");
}
