//! `btfgen::object` against every compiled BPF object under `tests/data/`: structural
//! invariants on the real thing, and truncated or corrupted copies fail without panicking.

use btfgen::btf::Btf;
use btfgen::object::{BpfObject, Endianness, INSN_SIZE};
use std::path::{Path, PathBuf};

/// Every `*.o` under `tests/data/`, sorted by path.
fn fixtures() -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "o") {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
        &mut paths,
    );
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Every accessor, on an object that parsed; must not panic whatever the input was.
fn exercise(obj: &BpfObject<'_>) {
    for section in obj.sections() {
        let _ = obj.relocations(section.index);
        for idx in [
            0,
            section.insn_count().saturating_sub(1),
            section.insn_count(),
        ] {
            let _ = section.insn(idx);
        }
        for off in [0, 8, u32::MAX] {
            let _ = obj.program_at(section.name, off);
        }
    }
    if let Some(ext) = obj.btf_ext() {
        let count = ext
            .func_info()
            .sections()
            .map(|s| s.records().count())
            .sum::<usize>()
            + ext
                .line_info()
                .sections()
                .map(|s| s.records().count())
                .sum::<usize>()
            + ext
                .core_relos()
                .sections()
                .map(|s| s.indexed().count())
                .sum::<usize>();
        assert!(count * 8 <= ext.raw().len());
    }
    if let Some(btf) = obj.btf_bytes().and_then(|b| Btf::parse(b).ok()) {
        for section in obj.core_relo_sections(&btf) {
            let _ = section.map(|s| s.records.records().count());
        }
    }
}

#[test]
fn every_fixture_reads_consistently() {
    let fixtures = fixtures();
    eprintln!("{} BPF objects under tests/data", fixtures.len());
    for (path, bytes) in &fixtures {
        let name = path.display();
        let obj = BpfObject::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let endian = if bytes[5] == 1 {
            Endianness::Little
        } else {
            Endianness::Big
        };
        assert_eq!(obj.endian(), endian, "{name}");

        // Sections: ELF order, non-empty, whole instructions, looked up by name and index.
        let sections = obj.sections();
        assert!(
            sections.windows(2).all(|w| w[0].index < w[1].index),
            "{name}"
        );
        for s in sections {
            assert!(
                !s.data.is_empty() && s.data.len() % INSN_SIZE == 0,
                "{name}: {}",
                s.name
            );
            assert_eq!(s.insn_count() * INSN_SIZE, s.data.len());
            assert!(s.insn(s.insn_count() - 1).is_some() && s.insn(s.insn_count()).is_none());
            let first: [u8; 8] = s.data[..8].try_into().unwrap();
            assert_eq!(
                s.insn(0).unwrap().encode(endian),
                first,
                "{name}: {}",
                s.name
            );
            assert_eq!(obj.section_by_name(s.name).map(|x| x.index), Some(s.index));
            assert_eq!(obj.section_by_index(s.index).map(|x| x.name), Some(s.name));
        }

        // Programs: sorted, inside their section, found again by offset.
        let programs = obj.programs();
        assert!(!programs.is_empty(), "{name}: no programs");
        assert!(
            programs
                .windows(2)
                .all(|w| (w[0].section_index, w[0].offset) < (w[1].section_index, w[1].offset)),
            "{name}: programs not sorted or overlapping starts"
        );
        for p in programs {
            let s = obj.section_by_index(p.section_index).unwrap();
            assert_eq!(p.section_name, s.name);
            assert!(
                p.size > 0 && (p.offset + p.size) as usize <= s.data.len(),
                "{name}: {}",
                p.name
            );
            assert_eq!(
                obj.program_at(s.name, p.offset),
                Some(p),
                "{name}: {}",
                p.name
            );
            assert_eq!(
                obj.program_at(s.name, p.offset + p.size - 1),
                Some(p),
                "{name}: {}",
                p.name
            );
            assert!(
                p.global || s.name == ".text",
                "{name}: static program {} outside .text",
                p.name
            );
        }
        // Every instruction of a program section belongs to a program (clang leaves no gaps).
        for s in sections {
            let covered: u32 = programs
                .iter()
                .filter(|p| p.section_index == s.index)
                .map(|p| p.size)
                .sum();
            assert_eq!(covered as usize, s.data.len(), "{name}: {}", s.name);
        }

        // ELF relocations sit on instructions of their section.
        for s in sections {
            for r in obj
                .relocations(s.index)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
            {
                assert!((r.offset as usize) < s.data.len() && r.offset % 8 == 0);
            }
        }

        // .BTF.ext against .BTF and the code.
        let Some(btf_bytes) = obj.btf_bytes() else {
            continue;
        };
        let btf = Btf::parse(btf_bytes).unwrap_or_else(|e| panic!("{name}: .BTF: {e}"));
        let Some(ext) = obj.btf_ext() else { continue };
        for group in obj.ext_sections(ext.func_info(), &btf) {
            let group = group.unwrap();
            let s = group
                .section
                .unwrap_or_else(|| panic!("{name}: func_info for {}", group.name));
            for f in group.records.records() {
                let p = obj.program_in(s.index, f.insn_off).unwrap();
                assert_eq!(
                    p.offset, f.insn_off,
                    "{name}: func_info not at a program start"
                );
                assert!(f.type_id < btf.type_cnt());
            }
            assert_eq!(
                group.records.len(),
                programs
                    .iter()
                    .filter(|p| p.section_index == s.index)
                    .count(),
                "{name}: one func_info per program of {}",
                s.name
            );
        }
        for group in obj.ext_sections(ext.line_info(), &btf) {
            let group = group.unwrap();
            let s = group.section.unwrap();
            for l in group.records.records() {
                assert!((l.insn_off as usize) < s.data.len() && l.insn_off % 8 == 0);
                btf.name(l.file_name_off).unwrap();
            }
        }
        let mut core_relos = 0;
        for group in obj.core_relo_sections(&btf) {
            let group = group.unwrap_or_else(|e| panic!("{name}: {e}"));
            let s = group
                .section
                .unwrap_or_else(|| panic!("{name}: core_relo for {}", group.name));
            for (i, r) in group.records.indexed() {
                assert!((r.insn_off as usize) < s.data.len() && r.insn_off % 8 == 0);
                assert!(
                    obj.program_in(s.index, r.insn_off).is_some(),
                    "{name}: relo #{i}"
                );
                assert!(
                    r.type_id < btf.type_cnt() && r.kind <= 13,
                    "{name}: relo #{i}"
                );
                btf.name(r.access_str_off).unwrap();
                assert_eq!(group.records.get(i as usize), Some(r));
                core_relos += 1;
            }
        }
        eprintln!(
            "{name}: {:?}, {} sections, {} programs, {} insns, {} CO-RE relocations",
            obj.endian(),
            sections.len(),
            programs.len(),
            sections.iter().map(|s| s.insn_count()).sum::<usize>(),
            core_relos,
        );
        exercise(&obj);
    }
}

#[test]
fn truncated_fixtures_are_errors() {
    for (path, bytes) in fixtures() {
        let len = bytes.len();
        let cuts = (0..len)
            .step_by(61)
            .chain([1, 63, 64, len / 2, len - 8, len - 1]);
        for cut in cuts.filter(|&c| c < len) {
            assert!(
                BpfObject::parse(&bytes[..cut]).is_err(),
                "{}: truncated to {cut} bytes parsed",
                path.display()
            );
        }
    }
}

#[test]
fn corrupted_fixtures_never_panic() {
    for (_, bytes) in fixtures() {
        for pos in (0..bytes.len()).step_by(13) {
            for flip in [0x01, 0x80, 0xff] {
                let mut copy = bytes.clone();
                copy[pos] ^= flip;
                if let Ok(obj) = BpfObject::parse(&copy) {
                    exercise(&obj);
                }
            }
        }
    }
}
