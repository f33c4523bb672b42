// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * libbpf_relocs: reference side of btfgen's differential CO-RE test.
 *
 * Usage: libbpf_relocs OBJECT TARGET_BTF [BASE_BTF]
 *
 * Opens OBJECT with libbpf (the system's libbpf, 1.1 on Debian 12), points
 * btf_custom_path at TARGET_BTF, loads the object with libbpf's log at debug
 * level and turns libbpf's own account of every CO-RE relocation into one
 * JSON object per line on stdout, sorted by (program, relo):
 *
 *   {"program": "p", "relo": 0, "insn": 3, "kind": "byte_off",
 *    "poison": false, "poison_reason": null, "orig": 16, "new": 24,
 *    "target": "[12] struct foo"}             (+ "error": "..." on failure)
 *
 * libbpf does not say why it poisons; "poison_reason" is read from its log:
 * "size_not_adjustable" after its "accesses field incorrectly" warning,
 * "no_candidate" when it tried no candidate type at all, else "no_match".
 *
 * Loading the programs may fail after relocation (the fixtures are not all
 * meant to pass the verifier); that is reported on stderr and ignored.
 *
 * libbpf 1.1 only takes a plain (non-split) BTF as btf_custom_path, so with
 * BASE_BTF the split TARGET_BTF is first flattened into one BTF holding the
 * base types followed by the split types; type IDs are unchanged by that.
 *
 * "insn" comes from the object's own .BTF.ext record (libbpf does not print
 * it for relocations that fail), cross-checked against every instruction
 * number libbpf does print.
 *
 * Exit status: 0 on success (even if libbpf failed a relocation), 77 when the
 * test cannot run here (BPF syscalls refused, object of foreign byte order),
 * 1 on usage or internal errors.
 *
 * Set LIBBPF_RELOCS_VERBOSE=1 to copy libbpf's raw log to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "harness.h"

/* ---------------------------------------------------------------- utils */

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fprintf(stderr, "libbpf_relocs: out of memory\n");
		exit(1);
	}
	return q;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xrealloc(NULL, n), s, n);
}

static char *xstrndup(const char *s, size_t n)
{
	char *d = xrealloc(NULL, n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* --------------------------------------------------------- libbpf's log */

struct log_line {
	enum libbpf_print_level level;
	char *text; /* without trailing newline */
};

static struct log_line *log_lines;
static size_t log_cnt, log_cap;
static bool log_verbose;

static void log_push(enum libbpf_print_level level, const char *s, size_t n)
{
	if (log_cnt == log_cap) {
		log_cap = log_cap ? log_cap * 2 : 256;
		log_lines = xrealloc(log_lines, log_cap * sizeof(*log_lines));
	}
	log_lines[log_cnt].level = level;
	log_lines[log_cnt].text = xstrndup(s, n);
	log_cnt++;
}

static int log_cb(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char *msg = NULL, *p, *nl;
	va_list copy;

	va_copy(copy, args);
	if (vasprintf(&msg, fmt, copy) < 0) {
		va_end(copy);
		return 0;
	}
	va_end(copy);
	if (log_verbose)
		fputs(msg, stderr);
	/* one call normally is one line, but split defensively */
	for (p = msg; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl) {
			log_push(level, p, strlen(p));
			break;
		}
		log_push(level, p, (size_t)(nl - p));
	}
	free(msg);
	return 0;
}

/* -------------------------------------------------- .BTF.ext core relos */

struct core_rec {
	char *sec;	/* ELF section the record belongs to */
	unsigned idx;	/* index within that section's records = libbpf's relo #N */
	unsigned insn;	/* instruction index within the section */
	unsigned kind;
	char *prog;	/* function (libbpf program) containing the insn */
	unsigned prog_insn; /* insn relative to the program's first insn */
};

static struct core_rec *recs;
static size_t rec_cnt;

struct func_sym {
	char *name;
	size_t shndx;
	uint64_t start, end; /* byte offsets within the section */
};

static const char *const kind_names[] = {
	"byte_off",	  "byte_sz",	    "field_exists",   "signed",
	"lshift_u64",	  "rshift_u64",	    "local_type_id",  "target_type_id",
	"type_exists",	  "type_size",	    "enumval_exists", "enumval_value",
	"type_matches",
};

static const char *kind_name(unsigned kind)
{
	if (kind < sizeof(kind_names) / sizeof(kind_names[0]))
		return kind_names[kind];
	return "unknown";
}

/*
 * Read the CO-RE records of .BTF.ext and attribute each to the function
 * symbol (libbpf program) covering its instruction. Only host byte order is
 * handled: libbpf 1.1 refuses other objects anyway (checked earlier).
 */
static int read_core_recs(const char *path, const struct btf *obj_btf)
{
	struct func_sym *funcs = NULL;
	size_t func_cnt = 0, shstrndx, i;
	Elf_Data *ext = NULL;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd, err = -1;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		goto out;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			goto out;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".BTF.ext") == 0) {
			ext = elf_getdata(scn, NULL);
		} else if (sh.sh_type == SHT_SYMTAB) {
			Elf_Data *d = elf_getdata(scn, NULL);
			size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;

			for (i = 0; d && i < n; i++) {
				GElf_Sym sym;

				if (!gelf_getsym(d, (int)i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
					continue;
				funcs = xrealloc(funcs, (func_cnt + 1) * sizeof(*funcs));
				funcs[func_cnt].name = xstrdup(elf_strptr(elf, sh.sh_link, sym.st_name));
				funcs[func_cnt].shndx = sym.st_shndx;
				funcs[func_cnt].start = sym.st_value;
				funcs[func_cnt].end = sym.st_value + sym.st_size;
				func_cnt++;
			}
		}
	}
	if (!ext) {
		err = 0; /* no .BTF.ext: no CO-RE relocations */
		goto out;
	}

	{
		const uint8_t *b = ext->d_buf;
		size_t len = ext->d_size;
		uint32_t hdr_len, core_off, core_len, rec_size;
		size_t pos, end;

		if (len < 8)
			goto bad;
		memcpy(&hdr_len, b + 4, 4);
		/* core_relo_{off,len} exist only in the 32-byte header */
		if (hdr_len < 32 || hdr_len > len) {
			err = 0;
			goto out;
		}
		memcpy(&core_off, b + 24, 4);
		memcpy(&core_len, b + 28, 4);
		if (core_len == 0) {
			err = 0;
			goto out;
		}
		pos = (size_t)hdr_len + core_off;
		end = pos + core_len;
		if (end > len || core_len < 4)
			goto bad;
		memcpy(&rec_size, b + pos, 4);
		pos += 4;
		if (rec_size < 16)
			goto bad;
		while (pos + 8 <= end) {
			uint32_t sec_off, num;
			const char *sec;
			size_t shndx = 0;
			Elf_Scn *s = NULL;

			memcpy(&sec_off, b + pos, 4);
			memcpy(&num, b + pos + 4, 4);
			pos += 8;
			sec = btf__name_by_offset(obj_btf, sec_off);
			if (!sec || (uint64_t)num * rec_size > end - pos)
				goto bad;
			while ((s = elf_nextscn(elf, s))) {
				GElf_Shdr sh;
				const char *n;

				if (!gelf_getshdr(s, &sh))
					continue;
				n = elf_strptr(elf, shstrndx, sh.sh_name);
				if (n && strcmp(n, sec) == 0) {
					shndx = elf_ndxscn(s);
					break;
				}
			}
			for (uint32_t r = 0; r < num; r++, pos += rec_size) {
				struct core_rec *rec;
				uint32_t insn_off, kind;

				memcpy(&insn_off, b + pos, 4);
				memcpy(&kind, b + pos + 12, 4);
				recs = xrealloc(recs, (rec_cnt + 1) * sizeof(*recs));
				rec = &recs[rec_cnt++];
				rec->sec = xstrdup(sec);
				rec->idx = r;
				rec->insn = insn_off / 8;
				rec->kind = kind;
				rec->prog = NULL;
				rec->prog_insn = 0;
				for (i = 0; i < func_cnt; i++) {
					if (funcs[i].shndx == shndx && funcs[i].start <= insn_off &&
					    insn_off < funcs[i].end) {
						rec->prog = xstrdup(funcs[i].name);
						rec->prog_insn = (unsigned)((insn_off - funcs[i].start) / 8);
						break;
					}
				}
			}
		}
	}
	err = 0;
	goto out;
bad:
	fprintf(stderr, "libbpf_relocs: %s: malformed .BTF.ext\n", path);
out:
	for (i = 0; i < func_cnt; i++)
		free(funcs[i].name);
	free(funcs);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* ---------------------------------------------------- relocation result */

struct relo {
	char *prog;
	int idx;
	const char *kind;
	bool poison;
	bool saw_cand;	  /* libbpf tried at least one candidate type */
	bool memsz_warn;  /* libbpf refused to resize a load/store */
	bool has_vals;
	unsigned long long orig, new_val;
	char *target;
	char *first_warn; /* first warning libbpf gave for this relocation */
	char *fail;	  /* libbpf's "failed to ..." line, if any */
	long insn_seen;	  /* insn # libbpf printed (lowest), -1 if none */
	const struct core_rec *rec;
};

static struct relo *relos;
static size_t relo_cnt;

static struct relo *relo_get(const char *prog, size_t prog_len, int idx)
{
	struct relo *r;
	size_t i;

	for (i = 0; i < relo_cnt; i++) {
		if (relos[i].idx == idx && strlen(relos[i].prog) == prog_len &&
		    strncmp(relos[i].prog, prog, prog_len) == 0)
			return &relos[i];
	}
	relos = xrealloc(relos, (relo_cnt + 1) * sizeof(*relos));
	r = &relos[relo_cnt++];
	memset(r, 0, sizeof(*r));
	r->prog = xstrndup(prog, prog_len);
	r->idx = idx;
	r->insn_seen = -1;
	return r;
}

/* unattributed warning since the last relocation started, see below */
static char *pending_warn;

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "[ID] kind name" at the start of s (name may be "<anon>"), or NULL */
static char *parse_type_ref(const char *s)
{
	const char *p = s;

	if (*p != '[')
		return NULL;
	p++;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p != ']' || p[1] != ' ')
		return NULL;
	p += 2;
	while (*p && *p != ' ')
		p++; /* kind */
	if (*p != ' ')
		return NULL;
	p++;
	if (starts_with(p, "<anon>"))
		p += 6;
	else
		while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || *p == '_')
			p++;
	return xstrndup(s, (size_t)(p - s));
}

static void note_insn(struct relo *r, long insn)
{
	if (r->insn_seen < 0 || insn < r->insn_seen)
		r->insn_seen = insn;
}

/* Interpret one "prog 'P': relo #N: MSG" line. */
static void parse_relo_line(enum libbpf_print_level level, const char *line)
{
	const char *prog, *q, *msg;
	struct relo *r;
	char *end;
	long idx;

	if (starts_with(line, "libbpf: "))
		line += strlen("libbpf: ");
	if (!starts_with(line, "prog '"))
		return;
	prog = line + 6;
	q = strstr(prog, "': relo #");
	if (!q) {
		/* a warning of the relocation in progress that does not name
		 * it, e.g. "prog 'p': relo 0 at insn #70 can't be satisfied
		 * for bitfield" (0 is the kind there) */
		q = strstr(prog, "': ");
		if (q && level == LIBBPF_WARN && !pending_warn)
			pending_warn = xstrdup(q + 3);
		return;
	}
	idx = strtol(q + 9, &end, 10);
	if (end == q + 9 || !starts_with(end, ": "))
		return;
	msg = end + 2;
	r = relo_get(prog, (size_t)(q - prog), (int)idx);

	if (level == LIBBPF_WARN && !r->first_warn && !starts_with(msg, "failed to "))
		r->first_warn = xstrdup(msg);

	if (msg[0] == '<') {
		/* local spec "<kind> [id] ...": a new relocation starts */
		const char *k = msg + 1, *ke = strchr(k, '>');

		free(pending_warn);
		pending_warn = NULL;

		if (ke && !r->kind) {
			char *name = xstrndup(k, (size_t)(ke - k));

			for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
				if (strcmp(name, kind_names[i]) == 0)
					r->kind = kind_names[i];
			free(name);
		}
	} else if (starts_with(msg, "non-matching candidate #")) {
		r->saw_cand = true;
	} else if (starts_with(msg, "matching candidate #")) {
		const char *p = msg + strlen("matching candidate #");

		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == ' ')
			p++;
		if (*p == '<') {
			p = strchr(p, '>');
			if (p && p[1] == ' ')
				p += 2;
		}
		r->saw_cand = true;
		if (p && !r->target)
			r->target = parse_type_ref(p);
	} else if (starts_with(msg, "patched insn #")) {
		const char *p = msg + strlen("patched insn #"), *v;
		long insn = strtol(p, &end, 10);
		unsigned long long a, b;

		note_insn(r, insn);
		/* "(CLASS) off|imm|imm64 A -> B"; "mem_sz A -> B" is a follow-up */
		v = strchr(end, ')');
		if (!v || !v[1])
			return;
		v += 2;
		if ((starts_with(v, "off ") || starts_with(v, "imm ") || starts_with(v, "imm64 ")) &&
		    sscanf(strchr(v, ' ') + 1, "%llu -> %llu", &a, &b) == 2 && !r->has_vals) {
			r->has_vals = true;
			r->orig = a;
			r->new_val = b;
		}
	} else if (strstr(msg, "accesses field incorrectly")) {
		r->memsz_warn = true;
	} else if (starts_with(msg, "substituting insn #")) {
		r->poison = true;
		note_insn(r, strtol(msg + strlen("substituting insn #"), NULL, 10));
	} else if (starts_with(msg, "failed to relocate") || starts_with(msg, "failed to patch insn")) {
		if (!r->fail)
			r->fail = xstrdup(msg);
		if (!r->first_warn && pending_warn) {
			r->first_warn = pending_warn;
			pending_warn = NULL;
		}
		if (starts_with(msg, "failed to patch insn #"))
			note_insn(r, strtol(msg + strlen("failed to patch insn #"), NULL, 10));
	}
}

static int cmp_relo(const void *a, const void *b)
{
	const struct relo *x = a, *y = b;
	int c = strcmp(x->prog, y->prog);

	if (c)
		return c;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	const char *obj_path, *target;
	char *flat = NULL;
	struct bpf_object *obj;
	size_t i, unprocessed = 0;
	int err, native, rc = 0;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s OBJECT TARGET_BTF [BASE_BTF]\n", argv[0]);
		return 1;
	}
	obj_path = argv[1];
	target = argv[2];
	log_verbose = getenv("LIBBPF_RELOCS_VERBOSE") && *getenv("LIBBPF_RELOCS_VERBOSE") &&
		      strcmp(getenv("LIBBPF_RELOCS_VERBOSE"), "0") != 0;

	native = elf_native(obj_path);
	if (native < 0)
		return 1;
	if (!native) {
		fprintf(stderr, "SKIP: %s: foreign byte order; libbpf refuses to open it\n",
			obj_path);
		return EXIT_SKIP;
	}
	if (!bpf_usable())
		return EXIT_SKIP;

	if (argc == 4) {
		flat = flatten_split(target, argv[3]);
		if (!flat)
			return 1;
		target = flat;
	}

	libbpf_set_print(log_cb);
	{
		LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = target);

		obj = bpf_object__open_file(obj_path, &opts);
	}
	if (!obj) {
		fprintf(stderr, "libbpf_relocs: opening %s failed: %s\n", obj_path, strerror(errno));
		rc = 1;
		goto out;
	}
	if (read_core_recs(obj_path, bpf_object__btf(obj))) {
		rc = 1;
		goto out;
	}
	err = bpf_object__load(obj);
	if (err)
		fprintf(stderr, "libbpf_relocs: note: loading %s failed (%d), after relocation\n",
			obj_path, err);
	/* read by check_relocs.py: the kernel accepted every program (or not) */
	fprintf(stderr, "libbpf_relocs: load %s\n", err ? "failed" : "ok");

	for (i = 0; i < log_cnt; i++)
		parse_relo_line(log_lines[i].level, log_lines[i].text);
	if (rec_cnt > 0 && relo_cnt == 0) {
		/* e.g. a split TARGET_BTF given without its base */
		fprintf(stderr, "libbpf_relocs: libbpf relocated nothing (target BTF unusable?)\n");
		for (i = 0; i < log_cnt; i++)
			if (log_lines[i].level == LIBBPF_WARN)
				fprintf(stderr, "  %s\n", log_lines[i].text);
		rc = 1;
		goto out;
	}

	/* attach .BTF.ext records and cross-check what libbpf printed */
	for (i = 0; i < relo_cnt; i++) {
		struct relo *r = &relos[i];

		for (size_t j = 0; j < rec_cnt; j++) {
			if (recs[j].prog && strcmp(recs[j].prog, r->prog) == 0 &&
			    recs[j].idx == (unsigned)r->idx) {
				r->rec = &recs[j];
				break;
			}
		}
		if (!r->rec) {
			fprintf(stderr, "libbpf_relocs: prog '%s' relo #%d: no such .BTF.ext record\n",
				r->prog, r->idx);
			rc = 1;
			continue;
		}
		if (!r->kind)
			r->kind = kind_name(r->rec->kind);
		if (strcmp(r->kind, kind_name(r->rec->kind)) != 0 ||
		    (r->insn_seen >= 0 && r->insn_seen != (long)r->rec->prog_insn)) {
			fprintf(stderr,
				"libbpf_relocs: prog '%s' relo #%d: log says %s insn #%ld, .BTF.ext says %s insn #%u\n",
				r->prog, r->idx, r->kind, r->insn_seen, kind_name(r->rec->kind),
				r->rec->prog_insn);
			rc = 1;
		}
	}
	for (i = 0; i < rec_cnt; i++) {
		bool seen = false;

		for (size_t j = 0; j < relo_cnt && !seen; j++)
			seen = relos[j].rec == &recs[i];
		unprocessed += !seen;
	}
	if (unprocessed)
		fprintf(stderr, "libbpf_relocs: note: libbpf did not process %zu of %zu CO-RE records\n",
			unprocessed, rec_cnt);

	qsort(relos, relo_cnt, sizeof(*relos), cmp_relo);
	for (i = 0; i < relo_cnt; i++) {
		const struct relo *r = &relos[i];

		if (!r->rec)
			continue;
		printf("{\"program\": ");
		json_str(r->prog);
		printf(", \"relo\": %d, \"insn\": %u, \"kind\": \"%s\", \"poison\": %s, ", r->idx,
		       r->rec->prog_insn, r->kind, r->poison ? "true" : "false");
		if (!r->poison)
			printf("\"poison_reason\": null, ");
		else
			printf("\"poison_reason\": \"%s\", ",
			       r->memsz_warn ? "size_not_adjustable" :
			       r->saw_cand   ? "no_match" : "no_candidate");
		if (r->has_vals && !r->poison)
			printf("\"orig\": %llu, \"new\": %llu, ", r->orig, r->new_val);
		else
			printf("\"orig\": null, \"new\": null, ");
		printf("\"target\": ");
		if (r->target)
			json_str(r->target);
		else
			printf("null");
		if (r->fail) {
			printf(", \"error\": ");
			json_str(r->first_warn ? r->first_warn : r->fail);
		}
		printf("}\n");
	}

out:
	bpf_object__close(obj);
	if (flat)
		unlink(flat);
	return rc;
}
