/* A CO-RE object whose relocations start from a type of the base (kbase.h's struct
 * kb_list), never one of a module: libbpf finds its candidates in the base and looks in no
 * module, so a module that names kb_list need not be read for it. */
struct kb_list {
	struct kb_list *next, *prev;
} __attribute__((preserve_access_index));

__attribute__((section("tp/kbase"), used)) int prog(struct kb_list *l)
{
	return l->next->prev != l;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
