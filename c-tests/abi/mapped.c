/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * A regular target file is mapped, not copied (bpf_reloc_info__new's docs): the
 * library's heap for OBJECTs against TARGET (a regular file; run.sh copies the
 * kernel's BTF to one) stays a small share of TARGET's size, and changes to a
 * mapped target are caught:
 *   - written in place after the relocations: get_btf fails with EIO;
 *   - truncated: no crash (the library's SIGBUS guard), get_btf fails with EIO;
 *   - replaced (renamed over): no effect, the same output.
 * The program installs its own SIGBUS handler first, as a host may: a SIGBUS
 * that is not a fault in a mapped target must reach it (chained), one that is
 * must not, and the library's handler must stay installed.
 *
 * The first run's output is written to OUTPUT (run.sh compares it with
 * `btfgen min-core-btf`).
 *
 * usage: mapped [-p PERCENT] TARGET OUTPUT OBJECT...
 *   -p  the peak heap (bpf_reloc_info__mem_peak) must be at most PERCENT % of TARGET's size
 */
#define _GNU_SOURCE
#include "btfgen.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t host_sigbus_calls;

static void host_sigbus(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)info;
	(void)ctx;
	host_sigbus_calls++;
}

static char **objects;
static int n_objects;

/* A session on `target` with every object added; NULL (checked) on failure. */
static struct btf_reloc_info *relocate(const char *target)
{
	struct btf_reloc_info *info = bpf_reloc_info__new(target);
	int i;

	CHECK(info != NULL, "new(%s): %s", target, strerror(errno));
	for (i = 0; info && i < n_objects; i++) {
		struct bpf_object *obj = bpf_object__open_file(objects[i], NULL);

		CHECK(obj != NULL, "open %s: %s", objects[i], strerror(errno));
		CHECK(!obj || bpf_object__reloc_info_gen(info, obj) == 0, "reloc_info_gen(%s): %s",
		      objects[i], strerror(errno));
		bpf_object__close(obj);
	}
	return info;
}

int main(int argc, char **argv)
{
	struct sigaction host, now;
	long percent = -1;
	const char *target, *output;
	char scratch[4096], replacement[4096];
	unsigned char *reference, *bytes;
	size_t target_size;
	uint32_t reference_size;
	struct btf_reloc_info *info;
	struct btf *btf;
	size_t peak;
	int opt, fd;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p')
			goto usage;
		percent = strtol(optarg, NULL, 10);
	}
	if (argc - optind < 3) {
usage:
		fprintf(stderr, "usage: mapped [-p PERCENT] TARGET OUTPUT OBJECT...\n");
		return 2;
	}
	target = argv[optind];
	output = argv[optind + 1];
	objects = argv + optind + 2;
	n_objects = argc - optind - 2;
	snprintf(scratch, sizeof(scratch), "%s.target", output);
	snprintf(replacement, sizeof(replacement), "%s.replacement", output);
	bytes = read_all(target, &target_size);
	if (!bytes) {
		fprintf(stderr, "read %s: %s\n", target, strerror(errno));
		return 1;
	}

	memset(&host, 0, sizeof(host));
	host.sa_sigaction = host_sigbus;
	host.sa_flags = SA_SIGINFO;
	sigemptyset(&host.sa_mask);
	CHECK(sigaction(SIGBUS, &host, NULL) == 0, "sigaction: %s", strerror(errno));

	/* The heap: a small share of the mapped target. */
	info = relocate(target);
	if (!info)
		return checks_done("mapped");
	btf = bpf_reloc_info__get_btf(info);
	CHECK(btf != NULL, "get_btf: %s", strerror(errno));
	if (!btf)
		return checks_done("mapped");
	reference = (unsigned char *)btf__raw_data(btf, &reference_size);
	CHECK(write_all(output, reference, reference_size) == 0, "write %s", output);
	peak = bpf_reloc_info__mem_peak(info);
	printf("target %zu bytes, output %u bytes, peak heap %zu bytes (%.1f%% of the "
	       "target)\n",
	       target_size, (unsigned)reference_size, peak, 100.0 * (double)peak / (double)target_size);
	if (percent >= 0)
		CHECK(peak * 100 <= (size_t)percent * target_size, "peak %zu over %ld%% of %zu", peak,
		      percent, target_size);
	bpf_reloc_info__free(info);

	/* The library's handler is in place now; a SIGBUS sent to the process goes to ours. */
	CHECK(sigaction(SIGBUS, NULL, &now) == 0 && now.sa_sigaction != host_sigbus,
	      "the library did not install its SIGBUS guard");
	raise(SIGBUS);
	CHECK(host_sigbus_calls == 1, "a foreign SIGBUS reached the host %d times",
	      (int)host_sigbus_calls);
	CHECK(sigaction(SIGBUS, NULL, &now) == 0 && now.sa_sigaction != host_sigbus,
	      "the library's SIGBUS guard was removed by a foreign signal");

	/* Written in place after the relocations (the same bytes: only the times tell). */
	CHECK(write_all(scratch, bytes, target_size) == 0, "write %s", scratch);
	info = relocate(scratch);
	{
		struct timespec pause = { 0, 20 * 1000 * 1000 };

		nanosleep(&pause, NULL);
	}
	fd = open(scratch, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, bytes, 1, 0) == 1, "rewrite %s: %s", scratch, strerror(errno));
	if (fd >= 0)
		close(fd);
	errno = 0;
	CHECK(bpf_reloc_info__get_btf(info) == NULL && errno == EIO,
	      "get_btf after a write in place: %s", strerror(errno));
	bpf_reloc_info__free(info);

	/* Truncated under the mapping: no crash, EIO, and the host never sees those faults. */
	CHECK(write_all(scratch, bytes, target_size) == 0, "write %s", scratch);
	info = relocate(scratch);
	CHECK(truncate(scratch, 0) == 0, "truncate %s: %s", scratch, strerror(errno));
	errno = 0;
	CHECK(bpf_reloc_info__get_btf(info) == NULL && errno == EIO,
	      "get_btf after a truncation: %s", strerror(errno));
	CHECK(host_sigbus_calls == 1, "a fault in a mapped target reached the host");
	bpf_reloc_info__free(info);

	/* Replaced: the session keeps the file it mapped. */
	CHECK(write_all(scratch, bytes, target_size) == 0, "write %s", scratch);
	info = relocate(scratch);
	CHECK(write_all(replacement, "junk", 4) == 0 && rename(replacement, scratch) == 0,
	      "replace %s: %s", scratch, strerror(errno));
	{
		struct btf *again = bpf_reloc_info__get_btf(info);
		uint32_t size = 0;
		const void *raw = again ? btf__raw_data(again, &size) : NULL;

		CHECK(raw && size == reference_size && memcmp(raw, reference, size) == 0,
		      "output after a replacement differs: %s", strerror(errno));
		btf__free(again);
	}
	bpf_reloc_info__free(info);

	unlink(scratch);
	btf__free(btf);
	free(bytes);
	return checks_done("mapped");
}
