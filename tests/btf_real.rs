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
