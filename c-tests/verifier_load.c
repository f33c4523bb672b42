// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * verifier_load: the running kernel's verifier as the oracle of btfgen's load
 * verdict (check_verdicts.py, tests/verdict.rs).
 *
 * Usage: verifier_load [-r N] OBJECT BTF [BASE_BTF]
 *
 * For every entry program of OBJECT (bpf_object__for_each_program: libbpf
 * lists no sub-program there), the object is opened afresh with
 * btf_custom_path = BTF and loaded with that program alone (autoload off for
 * the other entry programs; sub-programs are appended by libbpf as usual).
 * Nothing is attached: the program is closed right after the verdict. One
 * JSON object per program goes to stdout, in libbpf's program order:
 *
 *   {"program": "p", "section": "kprobe/x", "outcome": "loaded", "detail": ""}
 *
 * outcome is
 *   "loaded"       the verifier accepted the program;
 *   "poison"       the verifier rejected it at a call poisoned by CO-RE
 *                  ("invalid func unknown#195896080", which libbpf rewrites as
 *                  "N: <invalid CO-RE relocation>"); adds "insn", the index of
 *                  the poisoned instruction in the loaded program;
 *   "relo_failed"  libbpf refused at CO-RE relocation, before the verifier;
 *                  adds "relo_program", the (sub-)program the failing
 *                  relocation lives in (libbpf relocates every sub-program,
 *                  called or not, so it may be one this program never calls);
 *   "other"        any other failure: the verifier's last message (an access
 *                  at an offset of the foreign kernel's layout, a helper this
 *                  program type may not call, ...) or libbpf's (an attach
 *                  target missing in the running kernel, map creation, a BTF
 *                  it cannot parse).
 * detail is the verifier's or libbpf's line that says why ("" when loaded).
 *
 * The verifier log is requested the way libbpf does by default: a load
 * without a log first, and on failure one more at log level 1 into this
 * program's buffer (bpf_program__set_log_buf), so a long log never fails a
 * program that loads (ENOSPC) and the kernel's last lines are in the buffer
 * (it keeps the tail of a log that does not fit). libbpf's own messages are
 * captured through its print callback.
 *
 * BASE_BTF: BTF is split on it; they are flattened into one BTF first, as
 * libbpf_relocs does.
 *
 * -r N: before each load, every 4-byte word of the object's .rodata maps
 * (its `const volatile` variables) is set to N, as a skeleton's loader sets
 * them; without it they keep the values compiled into the object. A guard
 * on such a flag is decided by the loader, not by CO-RE (tests/verdict.rs
 * loads guards.bpf.o's rodata_flag as compiled, flag 0, and with -r 1).
 *
 * Exit status: 0 when every program was tried (whatever the outcomes), 77
 * when it cannot run here (BPF syscalls refused, object of foreign byte
 * order), 1 on usage or internal errors. VERIFIER_LOAD_VERBOSE=1 copies
 * libbpf's messages and the verifier logs to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "harness.h"

/* The verifier's log for one program; the kernel keeps its tail if it is longer. */
#define VERIFIER_LOG_SIZE (16u << 20)
/* The call libbpf writes over an instruction whose CO-RE relocation is poisoned. */
#define POISON_CALL "invalid func unknown#195896080"
/* How libbpf's fixup_verifier_log rewrites the line before POISON_CALL. */
#define POISON_FIXED ": <invalid CO-RE relocation>"

static bool verbose;
/* -r N: the value of every 4-byte .rodata word, when rodata_set */
static bool rodata_set;
static int rodata_value;

/* ---------------------------------------------------- libbpf's messages */

/* libbpf's warnings while loading one program, NUL-terminated. */
static char *messages;
static size_t messages_len, messages_cap;

static void messages_reset(void)
{
	messages_len = 0;
	if (messages)
		messages[0] = '\0';
}

static int print_cb(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char *msg = NULL;
	size_t n;

	if (vasprintf(&msg, fmt, args) < 0)
		return 0;
	if (verbose)
		fputs(msg, stderr);
	n = strlen(msg);
	/* libbpf says why it fails at warning level; the rest is chatter */
	if (level == LIBBPF_WARN) {
		if (messages_len + n + 1 > messages_cap) {
			size_t cap = (messages_len + n + 1) * 2;
			char *grown = realloc(messages, cap);

			if (!grown) {
				free(msg);
				return 0;
			}
			messages = grown;
			messages_cap = cap;
		}
		memcpy(messages + messages_len, msg, n + 1);
		messages_len += n;
	}
	free(msg);
	return 0;
}

/* ---------------------------------------------------------- the outcome */

struct outcome {
	const char *kind;	/* "loaded", "poison", "relo_failed", "other" */
	char detail[512];	/* the line that says why */
	long insn;		/* poison: the poisoned instruction, else -1 */
	char relo_program[128]; /* relo_failed: where the failing relocation lives */
};

/* Copy the line of text that contains at into out (without its newline). */
static void copy_line(const char *text, const char *at, char *out, size_t out_sz)
{
	const char *start = at, *end = strchr(at, '\n');
	size_t n;

	while (start > text && start[-1] != '\n')
		start--;
	n = end ? (size_t)(end - start) : strlen(start);
	if (n >= out_sz)
		n = out_sz - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

/*
 * The verifier's reason for a rejection: the last line of its log that is not
 * empty and not one of the statistics it ends every log with ("processed N
 * insns ...", "verification time ..."); "" if there is none.
 */
static void verifier_reason(const char *log, char *out, size_t out_sz)
{
	const char *end = log + strlen(log);

	out[0] = '\0';
	while (end > log) {
		const char *start = end - 1;

		while (start > log && start[-1] != '\n')
			start--;
		if (start < end - 1 && strncmp(start, "processed ", 10) != 0 &&
		    strncmp(start, "verification time", 17) != 0) {
			copy_line(log, start, out, out_sz);
			return;
		}
		end = start;
	}
}

/*
 * libbpf's CO-RE failure ("prog 'NAME': relo #N: failed to relocate: ...",
 * or "failed to patch insn", "failed to record relocation"; not "failed to
 * relocate calls"): fills the outcome and returns true, or returns false if
 * libbpf did not fail there.
 */
static bool relo_failure(struct outcome *out)
{
	static const char *const failures[] = { ": failed to relocate: ", ": failed to patch insn #",
						": failed to record relocation: " };
	const char *line, *next, *name, *quote;
	size_t i, n;

	for (line = messages; line && *line; line = next ? next + 1 : NULL) {
		next = strchr(line, '\n');
		copy_line(messages, line, out->detail, sizeof(out->detail));
		name = strstr(out->detail, "prog '");
		if (!name || !strstr(out->detail, "': relo #"))
			continue;
		for (i = 0; i < sizeof(failures) / sizeof(failures[0]); i++) {
			if (!strstr(out->detail, failures[i]))
				continue;
			out->kind = "relo_failed";
			name += strlen("prog '");
			quote = strchr(name, '\'');
			n = quote ? (size_t)(quote - name) : 0;
			if (n >= sizeof(out->relo_program))
				n = sizeof(out->relo_program) - 1;
			memcpy(out->relo_program, name, n);
			out->relo_program[n] = '\0';
			return true;
		}
	}
	out->detail[0] = '\0';
	return false;
}

/*
 * The verifier stopped at a poisoned call: libbpf rewrote the log's
 * "N: (85) call unknown#195896080" into "N: <invalid CO-RE relocation>",
 * or left the kernel's lines as they were (e.g. when it finds no relocation
 * for N). Fills the outcome and returns true if so.
 */
static bool poison_rejection(const char *log, struct outcome *out)
{
	const char *fixed = strstr(log, POISON_FIXED), *raw = strstr(log, POISON_CALL);
	const char *start;

	if (!fixed && !raw)
		return false;
	out->kind = "poison";
	if (fixed) {
		const char *next = strchr(fixed, '\n');
		char line[256];

		/* "N: <invalid CO-RE relocation>" and libbpf's "failed to resolve ..." */
		copy_line(log, fixed, out->detail, sizeof(out->detail));
		if (next && next[1]) {
			copy_line(log, next + 1, line, sizeof(line));
			snprintf(out->detail + strlen(out->detail),
				 sizeof(out->detail) - strlen(out->detail), "; %s", line);
		}
		start = fixed;
		while (start > log && start[-1] != '\n')
			start--;
		out->insn = strtol(start, NULL, 10);
		return true;
	}
	copy_line(log, raw, out->detail, sizeof(out->detail));
	/* the line before "invalid func" is "N: (85) call unknown#195896080" */
	start = raw;
	if (start > log)
		start--;
	while (start > log && start[-1] != '\n')
		start--;
	if (start < raw)
		out->insn = strtol(start, NULL, 10);
	return true;
}

static void classify(int err, const char *log, struct outcome *out)
{
	out->kind = "other";
	out->detail[0] = '\0';
	out->insn = -1;
	out->relo_program[0] = '\0';
	if (!err) {
		out->kind = "loaded";
		return;
	}
	/* libbpf relocates before it creates maps and loads programs */
	if (relo_failure(out) || poison_rejection(log, out))
		return;
	verifier_reason(log, out->detail, sizeof(out->detail));
	if (out->detail[0])
		return;
	/* no verifier log: libbpf failed first; its first warning says why */
	if (messages && messages[0])
		copy_line(messages, messages, out->detail, sizeof(out->detail));
	else
		snprintf(out->detail, sizeof(out->detail), "bpf_object__load: %s", strerror(-err));
}

/* ------------------------------------------------------------- loading */

static struct bpf_object *open_object(const char *path, const char *btf)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = btf);
	struct bpf_object *obj = bpf_object__open_file(path, &opts);

	if (!obj)
		fprintf(stderr, "verifier_load: opening %s failed: %s\n", path, strerror(errno));
	return obj;
}

/* Set every 4-byte word of each .rodata map to rodata_value, before the load. */
static void set_rodata(struct bpf_object *obj)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		size_t size = 0, i;
		int *words;

		/* libbpf names it "<object prefix>.rodata" (or ".rodata.NAME") */
		if (!strstr(bpf_map__name(map), ".rodata"))
			continue;
		/* libbpf 1.1 declares it const; it is the writable copy libbpf loads */
		words = (int *)bpf_map__initial_value(map, &size);
		for (i = 0; words && i < size / sizeof(*words); i++)
			words[i] = rodata_value;
	}
}

/* Load entry program `name` of a fresh copy of the object alone; 0 or -1 (not found). */
static int load_alone(const char *path, const char *btf, const char *name, char *log,
		      struct outcome *out)
{
	struct bpf_program *prog, *chosen = NULL;
	struct bpf_object *obj = open_object(path, btf);
	int err;

	if (!obj)
		return -1;
	bpf_object__for_each_program(prog, obj) {
		bool me = strcmp(bpf_program__name(prog), name) == 0;

		bpf_program__set_autoload(prog, me);
		if (me)
			chosen = prog;
	}
	if (!chosen) {
		bpf_object__close(obj);
		return -1;
	}
	if (rodata_set)
		set_rodata(obj);
	log[0] = '\0';
	bpf_program__set_log_buf(chosen, log, VERIFIER_LOG_SIZE);
	messages_reset();
	err = bpf_object__load(obj);
	if (verbose && log[0])
		fprintf(stderr, "verifier_load: %s: verifier log:\n%s\n", name, log);
	classify(err, log, out);
	bpf_object__close(obj);
	return 0;
}

static void print_outcome(const char *name, const char *section, const struct outcome *out)
{
	printf("{\"program\": ");
	json_str(name);
	printf(", \"section\": ");
	json_str(section);
	printf(", \"outcome\": \"%s\", \"detail\": ", out->kind);
	json_str(out->detail);
	if (out->insn >= 0)
		printf(", \"insn\": %ld", out->insn);
	if (out->relo_program[0]) {
		printf(", \"relo_program\": ");
		json_str(out->relo_program);
	}
	printf("}\n");
	fflush(stdout);
}

static int usage(void)
{
	fprintf(stderr, "usage: verifier_load [-r N] OBJECT BTF [BASE_BTF]\n");
	return 1;
}

/* text as a whole int (decimal, 0x.. or 0..); false if it is not one */
static bool parse_int(const char *text, int *value)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 0);
	if (errno || end == text || *end || v < INT_MIN || v > INT_MAX)
		return false;
	*value = (int)v;
	return true;
}

int main(int argc, char **argv)
{
	struct bpf_object *listing;
	struct bpf_program *prog;
	const char *btf;
	char *flat = NULL, *log = NULL;
	char **names = NULL, **sections = NULL;
	size_t count = 0, i;
	int native, opt, rc = 0;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r' || !parse_int(optarg, &rodata_value))
			return usage();
		rodata_set = true;
	}
	/* the positional arguments at argv[1..] as before the options */
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 3 || argc > 4)
		return usage();
	btf = argv[2];
	verbose = getenv("VERIFIER_LOAD_VERBOSE") && strcmp(getenv("VERIFIER_LOAD_VERBOSE"), "0") &&
		  *getenv("VERIFIER_LOAD_VERBOSE");

	native = elf_native(argv[1]);
	if (native < 0)
		return 1;
	if (!native) {
		fprintf(stderr, "SKIP: %s: foreign byte order; libbpf refuses to open it\n", argv[1]);
		return EXIT_SKIP;
	}
	if (!bpf_usable())
		return EXIT_SKIP;
	if (argc == 4) {
		flat = flatten_split(btf, argv[3]);
		if (!flat)
			return 1;
		btf = flat;
	}
	libbpf_set_print(print_cb);

	/* the entry programs' names, from one opening (each load reopens the object) */
	listing = open_object(argv[1], btf);
	if (!listing) {
		rc = 1;
		goto out;
	}
	bpf_object__for_each_program(prog, listing) {
		char **n = realloc(names, (count + 1) * sizeof(*names));
		char **s = n ? realloc(sections, (count + 1) * sizeof(*sections)) : NULL;

		if (n)
			names = n;
		if (s)
			sections = s;
		if (!n || !s) {
			rc = 1;
			break;
		}
		names[count] = strdup(bpf_program__name(prog));
		sections[count] = strdup(bpf_program__section_name(prog));
		count++;
		if (!names[count - 1] || !sections[count - 1]) {
			rc = 1;
			break;
		}
	}
	bpf_object__close(listing);
	log = malloc(VERIFIER_LOG_SIZE);
	if (rc || !log) {
		fprintf(stderr, "verifier_load: out of memory\n");
		rc = 1;
		goto out;
	}

	for (i = 0; i < count; i++) {
		struct outcome out;

		if (load_alone(argv[1], btf, names[i], log, &out)) {
			fprintf(stderr, "verifier_load: program %s not found on reopening\n", names[i]);
			rc = 1;
			continue;
		}
		print_outcome(names[i], sections[i], &out);
	}

out:
	for (i = 0; i < count; i++) {
		free(names[i]);
		free(sections[i]);
	}
	free(names);
	free(sections);
	free(log);
	free(messages);
	if (flat)
		unlink(flat);
	return rc;
}
