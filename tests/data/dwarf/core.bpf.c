/* A CO-RE object for `min-core-btf` on the DWARF fixtures: field relocations into
 * types.h's `struct list_head` and `struct flags` (a bit-field). */
struct list_head {
	struct list_head *next, *prev;
} __attribute__((preserve_access_index));

struct flags {
	unsigned int b : 3;
	long h;
} __attribute__((preserve_access_index));

__attribute__((section("tp/dwarf"), used)) int prog(struct list_head *head, struct flags *f)
{
	return (head->prev != 0) + f->h + __builtin_preserve_field_info(f->b, 0);
}

char _license[] __attribute__((section("license"), used)) = "GPL";
