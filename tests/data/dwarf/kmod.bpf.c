/* A CO-RE object for the split BTF fixtures: relocations into kmod.c's module-only struct
 * kmod_priv (found only in the module's BTF), into struct kb_device (in the base), into
 * the module's struct kb_conf (whose name the base has too, laid out otherwise), and
 * type and enum value relocations on module types. */
struct kb_device {
	unsigned int id;
} __attribute__((preserve_access_index));

struct kb_conf {
	long x;
} __attribute__((preserve_access_index));

struct kmod_priv {
	struct kb_device dev;
	struct kb_conf conf;
	unsigned int level : 3;
	struct kmod_priv *next;
} __attribute__((preserve_access_index));

enum kmod_mode { KMOD_AUTO = 7 };

__attribute__((section("tp/kmod"), used)) int prog(struct kmod_priv *p)
{
	return p->dev.id + p->next->conf.x + __builtin_preserve_field_info(p->level, 0) +
	       __builtin_preserve_type_info(*p, 1) +
	       __builtin_preserve_enum_value(*(enum kmod_mode *)KMOD_AUTO, 1);
}

char _license[] __attribute__((section("license"), used)) = "GPL";
