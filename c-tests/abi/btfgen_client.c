/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The original BTFGen tool's shape, built unchanged against btfgen: it
 * includes libbpf's headers (<bpf/libbpf.h>, <bpf/btf.h>, which btfgen's
 * pkg-config flags resolve to btfgen's), sets a print callback with
 * libbpf_set_print() when -v is given, and writes one minimized BTF per
 * kernel BTF found in the input directory, for the given objects:
 *
 *   btfgen_client [-v] -i INPUTDIR -o OUTPUTDIR OBJECT...
 *
 * Errors are checked with libbpf_get_error() as the original does. The
 * only other headers are the system's directory and argument parsers.
 * Exit status: 0, or 1 on the first error.
 */
#include <bpf/libbpf.h>
#include <bpf/btf.h>

#include <argp.h>
#include <dirent.h>

static struct env {
	bool verbose;
	const char *inputdir;
	const char *outputdir;
	const char *objs[64];
	int obj_cnt;
} env;

static const struct argp_option opts[] = {
	{ "verbose", 'v', NULL, 0, "Print libbpf's debug log", 0 },
	{ "input", 'i', "DIR", 0, "Directory of kernel BTF files", 0 },
	{ "output", 'o', "DIR", 0, "Directory for the minimized BTF files", 0 },
	{ 0 },
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'v':
		env.verbose = true;
		break;
	case 'i':
		env.inputdir = arg;
		break;
	case 'o':
		env.outputdir = arg;
		break;
	case ARGP_KEY_ARG:
		if (env.obj_cnt == (int)(sizeof(env.objs) / sizeof(env.objs[0])) - 1)
			argp_error(state, "too many objects");
		env.objs[env.obj_cnt++] = arg;
		break;
	case ARGP_KEY_END:
		if (!env.inputdir || !env.outputdir || !env.obj_cnt)
			argp_usage(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int verbose_print(enum libbpf_print_level level, const char *format, va_list args)
{
	(void)level;
	return vfprintf(stderr, format, args);
}

static int generate_btf(const char *src_btf, const char *dst_btf, const char *objspaths[])
{
	struct btf_reloc_info *reloc_info;
	struct btf *btf_new = NULL;
	int err;

	reloc_info = bpf_reloc_info__new(src_btf);
	err = libbpf_get_error(reloc_info);
	if (err) {
		fprintf(stderr, "failed to allocate info structure for %s: %s\n", src_btf,
			strerror(-err));
		return err;
	}

	for (int i = 0; objspaths[i] != NULL; i++) {
		struct bpf_object *obj = bpf_object__open(objspaths[i]);

		err = libbpf_get_error(obj);
		if (err) {
			fprintf(stderr, "error opening object %s: %s\n", objspaths[i],
				strerror(-err));
			goto out;
		}
		err = bpf_object__reloc_info_gen(reloc_info, obj);
		bpf_object__close(obj);
		if (err) {
			fprintf(stderr, "failed to generate btf info for object %s: %s\n",
				objspaths[i], strerror(-err));
			goto out;
		}
	}

	btf_new = bpf_reloc_info__get_btf(reloc_info);
	err = libbpf_get_error(btf_new);
	if (err) {
		btf_new = NULL;
		fprintf(stderr, "error generating btf: %s\n", strerror(-err));
		goto out;
	}

	err = btf__save_to_file(btf_new, dst_btf);
	if (err)
		fprintf(stderr, "error saving btf file %s: %s\n", dst_btf, strerror(-err));

out:
	btf__free(btf_new);
	bpf_reloc_info__free(reloc_info);
	return err;
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts,
		.parser = parse_arg,
		.args_doc = "OBJECT...",
		.doc = "Minimize every kernel BTF in a directory for CO-RE objects.",
	};
	struct dirent *dir;
	int err;
	DIR *d;

	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 1;

	/* Set up libbpf errors and debug info callback */
	if (env.verbose)
		libbpf_set_print(verbose_print);

	d = opendir(env.inputdir);
	if (!d) {
		fprintf(stderr, "error opening input dir %s\n", env.inputdir);
		return 1;
	}
	while ((dir = readdir(d)) != NULL) {
		char src_btf[4096], dst_btf[4096];

		if (dir->d_type != DT_REG && dir->d_type != DT_LNK)
			continue;
		if ((size_t)snprintf(src_btf, sizeof(src_btf), "%s/%s", env.inputdir,
				     dir->d_name) >= sizeof(src_btf) ||
		    (size_t)snprintf(dst_btf, sizeof(dst_btf), "%s/%s", env.outputdir,
				     dir->d_name) >= sizeof(dst_btf)) {
			fprintf(stderr, "path too long: %s\n", dir->d_name);
			err = 1;
			break;
		}
		printf("generating BTF for %s\n", src_btf);
		err = generate_btf(src_btf, dst_btf, env.objs);
		if (err)
			break;
	}
	closedir(d);
	return err ? 1 : 0;
}
