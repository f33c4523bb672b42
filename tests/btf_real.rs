//! Parse, validate and round-trip the running kernel's BTF.

use btfgen::btf::{Btf, write::BtfWriter};

fn vmlinux() -> Option<Vec<u8>> {
    match std::fs::read("/sys/kernel/btf/vmlinux") {
        Ok(data) => Some(data),
        Err(e) => {
            eprintln!("SKIP: /sys/kernel/btf/vmlinux unreadable: {e}");
            None
        }
    }
}

#[test]
fn vmlinux_parses_and_round_trips() {
    let Some(data) = vmlinux() else { return };
    let btf = Btf::parse(&data).expect("vmlinux BTF parses");
    assert!(btf.type_cnt() > 1000);
    let mut writer = BtfWriter::new(btf.endian()).unwrap();
    for ty in btf.types() {
        let ty = ty.unwrap();
        writer.copy_type(&btf, &ty, Ok, |_| true).unwrap();
    }
    let out = writer.finish().unwrap();
    let again = Btf::parse(&out).expect("written BTF parses");
    assert_eq!(again.type_cnt(), btf.type_cnt());
    for id in 1..btf.type_cnt() {
        let (a, b) = (btf.type_by_id(id).unwrap(), again.type_by_id(id).unwrap());
        assert_eq!(
            btf.name(a.name_off).unwrap(),
            again.name(b.name_off).unwrap()
        );
        assert_eq!(a.kind(), b.kind());
    }
}

/// The scan done by the parse's own pass finds exactly what a scan of the parsed BTF finds,
/// and that is every type of the kinds asked for whose name was asked for.
#[test]
fn parse_filtered_finds_what_a_scan_finds() {
    use btfgen::btf::{Kind, KindSet, NameFilter, Validation};
    let Some(data) = vmlinux() else { return };
    let mut filter = NameFilter::new().unwrap();
    let structs = KindSet::EMPTY.with(Kind::Struct).with(Kind::Union);
    for name in ["task_struct", "mm_struct", "file", "sk_buff", "a"] {
        filter.add(name.as_bytes(), structs);
    }
    filter.add(b"pid_t", KindSet::EMPTY.with(Kind::Typedef));
    for validation in [Validation::OnUse, Validation::Full] {
        let (btf, ids) = Btf::parse_filtered(&data, None, validation, &filter).unwrap();
        assert_eq!(ids, btf.filtered(&filter).unwrap());
        let names: Vec<&str> = ids
            .iter()
            .map(|&id| btf.type_name(&btf.type_by_id(id).unwrap()).unwrap())
            .collect();
        for wanted in ["task_struct", "mm_struct", "file", "sk_buff", "pid_t"] {
            assert!(names.contains(&wanted), "{wanted} not found");
        }
        // Nothing of another kind, and every struct or union of a wanted name is there.
        let mut expected = Vec::new();
        for id in 1..btf.type_cnt() {
            let ty = btf.type_by_id(id).unwrap();
            let name = btf.type_name(&ty).unwrap();
            let kind = ty.kind().unwrap();
            if ids.contains(&id) {
                assert!(
                    kind == Kind::Typedef || structs.contains(kind),
                    "{name}: {kind:?}"
                );
            }
            if structs.contains(kind) && ["task_struct", "file", "sk_buff"].contains(&name) {
                expected.push(id);
            }
        }
        assert!(expected.iter().all(|id| ids.contains(id)));
    }
}
