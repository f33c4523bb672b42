// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The kernel verifier's verdict on each entry program of a BPF object, for
 * tests/verdict.rs: libbpf opens OBJ with btf_custom_path = BTF (so CO-RE
 * relocates against that kernel's BTF, poisons included) and loads one
 * program at a time into the running kernel (never attaching it). With
 * RODATA=N, each 4-byte .rodata variable is set to N before load, as a
 * skeleton's loader would.
 *
 *   verdict_load OBJ BTF [RODATA]
 *
 * Prints one line per program: `NAME loaded`, `NAME poison` (the verifier
 * refused it at libbpf's poisoned call, `invalid func unknown#195896080`,
 * which libbpf 1.7 rewrites in the log to `<invalid CO-RE relocation>`),
 * `NAME eperm` (bpf() refused) or `NAME other ERRNO`.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char log_text[1 << 20];
static size_t log_len;

static int collect(enum libbpf_print_level level, const char *fmt, va_list args)
{
	int n;

	(void)level;
	if (log_len >= sizeof(log_text) - 1)
		return 0;
	n = vsnprintf(log_text + log_len, sizeof(log_text) - log_len, fmt, args);
	if (n > 0)
		log_len += (size_t)n < sizeof(log_text) - log_len ? (size_t)n : sizeof(log_text) - 1 - log_len;
	return 0;
}

static struct bpf_object *open_obj(const char *path, const char *btf)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = btf);
	struct bpf_object *obj = bpf_object__open_file(path, &opts);

	if (!obj) {
		fprintf(stderr, "verdict_load: cannot open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return obj;
}

static void set_rodata(struct bpf_object *obj, int value)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		size_t size = 0;
		int *data;

		if (strncmp(bpf_map__name(map), ".rodata", 7) != 0 &&
		    !strstr(bpf_map__name(map), ".rodata"))
			continue;
		/* libbpf 1.1 declares it const; the memory is the writable copy libbpf loads. */
		data = (int *)bpf_map__initial_value(map, &size);
		for (size_t i = 0; data && i + sizeof(int) <= size; i += sizeof(int))
			data[i / sizeof(int)] = value;
	}
}

int main(int argc, char **argv)
{
	struct bpf_object *names;
	struct bpf_program *prog;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: verdict_load OBJ BTF [RODATA]\n");
		return 2;
	}
	libbpf_set_print(collect);
	names = open_obj(argv[1], argv[2]);
	bpf_object__for_each_program(prog, names) {
		const char *name = bpf_program__name(prog);
		struct bpf_object *obj = open_obj(argv[1], argv[2]);
		struct bpf_program *p;
		int err;

		bpf_object__for_each_program(p, obj)
			bpf_program__set_autoload(p, strcmp(bpf_program__name(p), name) == 0);
		if (argc == 4)
			set_rodata(obj, atoi(argv[3]));
		log_len = 0;
		log_text[0] = 0;
		err = bpf_object__load(obj);
		if (!err)
			printf("%s loaded\n", name);
		else if (strstr(log_text, "invalid func unknown#195896080") ||
			 strstr(log_text, "<invalid CO-RE relocation>"))
			printf("%s poison\n", name);
		else if (err == -EPERM)
			printf("%s eperm\n", name);
		else
			printf("%s other %d\n", name, -err);
		if (err && getenv("VERDICT_LOAD_LOG"))
			fputs(log_text, stderr);
		bpf_object__close(obj);
	}
	bpf_object__close(names);
	return 0;
}
