//! `btfgen select` with real distributions' identities (their os-release files as shipped,
//! their `uname -r` / `uname -m`) against one BTFHub-layout tree, in every archive format:
//! `batch --dedup --archive` (`.tar.xz`, and the same tar as `.tar` and `.tar.gz`), the
//! `--dedup` output folder, the plain tree as `.tar` / `.tar.gz` / `.tar.xz` (with a BTFHub
//! `.btf.tar.xz` member), and bcc's `btfs/` layout. The expected match of each identity is
//! written by hand: what a careful person picks, `none` where the archive truly has none.

mod batch_common;

use batch_common::{TempDir, batch_with, btfgen, data, pack, stderr};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tree: (path, fixture target). Most kernels share the `fields` fixture, so their
/// outputs are byte-identical (the `series` rule needs that); the arm64 Ubuntu kernel uses
/// `fields_flat`, whose output differs.
const TREE: &[(&str, &str)] = &[
    ("ubuntu/18.04/x86_64/4.15.0-20-generic", "fields"),
    ("ubuntu/20.04/x86_64/5.4.0-100-generic", "fields"),
    ("ubuntu/20.04/x86_64/5.4.0-1036-aws", "fields"),
    ("ubuntu/20.04/x86_64/5.4.0-1040-aws", "fields"),
    ("ubuntu/20.04/arm64/5.4.0-100-generic", "fields_flat"),
    ("ubuntu/22.04/x86_64/5.15.0-25-generic", "fields"),
    ("debian/10/x86_64/4.19.0-20-amd64", "fields"),
    ("centos/7/x86_64/3.10.0-1160.el7.x86_64", "fields"),
    ("rhel/7/x86_64/3.10.0-1160.el7.x86_64", "fields"),
    ("ol/7/x86_64/3.10.0-1160.el7.x86_64", "fields"),
    ("centos/8/x86_64/4.18.0-305.3.1.el8.x86_64", "fields"),
    ("rhel/8/x86_64/4.18.0-372.9.1.el8.x86_64", "fields"),
    ("rhel/8/arm64/4.18.0-372.9.1.el8.aarch64", "fields_flat"),
    ("ol/8/x86_64/5.4.17-2136.300.7.el8uek.x86_64", "fields"),
    ("amzn/1/x86_64/4.14.252-131.483.amzn1.x86_64", "fields"),
    ("amzn/2/x86_64/4.14.252-195.483.amzn2.x86_64", "fields"),
    ("amzn/2/arm64/4.14.252-195.483.amzn2.aarch64", "fields_flat"),
    ("sles/12.5/x86_64/4.12.14-122.103-default", "fields"),
    ("sles/15.3/x86_64/5.3.18-57-default", "fields"),
    ("sles/15.4/x86_64/5.14.21-150400.22-default", "fields"),
];
/// Packed as BTFHub ships kernels (`KERNEL.btf.tar.xz`).
const PACKED: (&str, &str) = ("fedora/34/x86_64/5.11.12-300.fc34.x86_64", "fields_flat");

const UBUNTU_2004: &str = r#"NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
"#;
const UBUNTU_1804: &str = r#"NAME="Ubuntu"
VERSION="18.04.6 LTS (Bionic Beaver)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 18.04.6 LTS"
VERSION_ID="18.04"
VERSION_CODENAME=bionic
UBUNTU_CODENAME=bionic
"#;
const UBUNTU_2204: &str = r#"PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
"#;
const UBUNTU_2404: &str = r#"PRETTY_NAME="Ubuntu 24.04 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"#;
const DEBIAN_10: &str = r#"PRETTY_NAME="Debian GNU/Linux 10 (buster)"
NAME="Debian GNU/Linux"
VERSION_ID="10"
VERSION="10 (buster)"
VERSION_CODENAME=buster
ID=debian
"#;
const DEBIAN_11: &str = r#"PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"
NAME="Debian GNU/Linux"
VERSION_ID="11"
VERSION="11 (bullseye)"
VERSION_CODENAME=bullseye
ID=debian
"#;
const DEBIAN_12: &str = r#"PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
"#;
const RHEL_86: &str = r#"NAME="Red Hat Enterprise Linux"
VERSION="8.6 (Ootpa)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="8.6"
PLATFORM_ID="platform:el8"
PRETTY_NAME="Red Hat Enterprise Linux 8.6 (Ootpa)"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:redhat:enterprise_linux:8::baseos"
"#;
const RHEL_79: &str = r#"NAME="Red Hat Enterprise Linux Server"
VERSION="7.9 (Maipo)"
ID="rhel"
ID_LIKE="fedora"
VARIANT="Server"
VARIANT_ID="server"
VERSION_ID="7.9"
PRETTY_NAME="Red Hat Enterprise Linux Server 7.9 (Maipo)"
"#;
const RHEL_92: &str = r#"NAME="Red Hat Enterprise Linux"
VERSION="9.2 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.2"
PLATFORM_ID="platform:el9"
"#;
const CENTOS_7: &str = r#"NAME="CentOS Linux"
VERSION="7 (Core)"
ID="centos"
ID_LIKE="rhel fedora"
VERSION_ID="7"
PRETTY_NAME="CentOS Linux 7 (Core)"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:centos:centos:7"
"#;
const CENTOS_8: &str = r#"NAME="CentOS Linux"
VERSION="8"
ID="centos"
ID_LIKE="rhel fedora"
VERSION_ID="8"
PLATFORM_ID="platform:el8"
PRETTY_NAME="CentOS Linux 8"
"#;
const ROCKY_86: &str = r#"NAME="Rocky Linux"
VERSION="8.6 (Green Obsidian)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="8.6"
PLATFORM_ID="platform:el8"
PRETTY_NAME="Rocky Linux 8.6 (Green Obsidian)"
"#;
const ALMA_86: &str = r#"NAME="AlmaLinux"
VERSION="8.6 (Sky Tiger)"
ID="almalinux"
ID_LIKE="rhel centos fedora"
VERSION_ID="8.6"
PLATFORM_ID="platform:el8"
"#;
const ORACLE_85: &str = r#"NAME="Oracle Linux Server"
VERSION="8.5"
ID="ol"
ID_LIKE="fedora"
VARIANT="Server"
VARIANT_ID="server"
VERSION_ID="8.5"
PLATFORM_ID="platform:el8"
"#;
const ORACLE_79: &str = r#"NAME="Oracle Linux Server"
VERSION="7.9"
ID="ol"
ID_LIKE="fedora"
VARIANT="Server"
VARIANT_ID="server"
VERSION_ID="7.9"
"#;
const FEDORA_34: &str = r#"NAME=Fedora
VERSION="34 (Container Image)"
ID=fedora
VERSION_ID=34
VERSION_CODENAME=""
PLATFORM_ID="platform:f34"
PRETTY_NAME="Fedora 34 (Container Image)"
"#;
const AMAZON_1: &str = r#"NAME="Amazon Linux AMI"
VERSION="2018.03"
ID="amzn"
ID_LIKE="rhel fedora"
VERSION_ID="2018.03"
PRETTY_NAME="Amazon Linux AMI 2018.03"
ANSI_COLOR="0;33"
CPE_NAME="cpe:/o:amazon:linux:2018.03:ga"
HOME_URL="http://aws.amazon.com/amazon-linux-ami/"
"#;
const AMAZON_2: &str = r#"NAME="Amazon Linux"
VERSION="2"
ID="amzn"
ID_LIKE="centos rhel fedora"
VERSION_ID="2"
PRETTY_NAME="Amazon Linux 2"
ANSI_COLOR="0;33"
CPE_NAME="cpe:2.3:o:amazon:amazon_linux:2"
"#;
const AMAZON_2023: &str = r#"NAME="Amazon Linux"
VERSION="2023"
ID="amzn"
ID_LIKE="fedora"
VERSION_ID="2023"
PLATFORM_ID="platform:al2023"
"#;
const SLES_125: &str = r#"NAME="SLES"
VERSION="12-SP5"
VERSION_ID="12.5"
PRETTY_NAME="SUSE Linux Enterprise Server 12 SP5"
ID="sles"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:suse:sles:12:sp5"
"#;
const SLES_153: &str = r#"NAME="SLES"
VERSION="15-SP3"
VERSION_ID="15.3"
PRETTY_NAME="SUSE Linux Enterprise Server 15 SP3"
ID="sles"
ID_LIKE="suse"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:suse:sles:15:sp3"
DOCUMENTATION_URL="https://documentation.suse.com/"
"#;
const LEAP_153: &str = r#"NAME="openSUSE Leap"
VERSION="15.3"
ID="opensuse-leap"
ID_LIKE="suse opensuse"
VERSION_ID="15.3"
PRETTY_NAME="openSUSE Leap 15.3"
ANSI_COLOR="0;32"
CPE_NAME="cpe:/o:opensuse:leap:15.3"
"#;
const LEAP_152: &str = r#"NAME="openSUSE Leap"
VERSION="15.2"
ID="opensuse-leap"
ID_LIKE="suse opensuse"
VERSION_ID="15.2"
PRETTY_NAME="openSUSE Leap 15.2"
"#;
const MINT_203: &str = r#"NAME="Linux Mint"
VERSION="20.3 (Una)"
ID=linuxmint
ID_LIKE=ubuntu
PRETTY_NAME="Linux Mint 20.3"
VERSION_ID="20.3"
VERSION_CODENAME=una
UBUNTU_CODENAME=focal
"#;
const POP_2204: &str = r#"NAME="Pop!_OS"
VERSION="22.04 LTS"
ID=pop
ID_LIKE="ubuntu debian"
PRETTY_NAME="Pop!_OS 22.04 LTS"
VERSION_ID="22.04"
VERSION_CODENAME=jammy
UBUNTU_CODENAME=jammy
LOGO=distributor-logo-pop-os
"#;
const ELEMENTARY_61: &str = r#"PRETTY_NAME="elementary OS 6.1 Jólnir"
NAME="elementary OS"
VERSION_ID="6.1"
VERSION="6.1 Jólnir"
VERSION_CODENAME=jolnir
ID=elementary
ID_LIKE=ubuntu
UBUNTU_CODENAME=focal
"#;
const ARCH: &str = r#"NAME="Arch Linux"
PRETTY_NAME="Arch Linux"
ID=arch
BUILD_ID=rolling
ANSI_COLOR="38;2;23;147;209"
LOGO=archlinux-logo
"#;

/// One identity and the selection a careful person makes for it.
struct Case {
    name: &'static str,
    os_release: &'static str,
    release: &'static str,
    machine: &'static str,
    /// Match kind and rule (`-` for none).
    kind: &'static str,
    rule: &'static str,
    /// Path of the chosen kernel (without `.btf`), or the nearest entries for `none`.
    entry: &'static str,
    /// For `none`: the nearest entries / kernels of that name, without `.btf`.
    neighbours: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "ubuntu 20.04 x86_64",
        os_release: UBUNTU_2004,
        release: "5.4.0-100-generic",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "ubuntu/20.04/x86_64/5.4.0-100-generic",
        neighbours: &[],
    },
    Case {
        name: "ubuntu 20.04 aarch64",
        os_release: UBUNTU_2004,
        release: "5.4.0-100-generic",
        machine: "aarch64",
        kind: "normalized",
        rule: "arch",
        entry: "ubuntu/20.04/arm64/5.4.0-100-generic",
        neighbours: &[],
    },
    Case {
        name: "ubuntu 18.04",
        os_release: UBUNTU_1804,
        release: "4.15.0-20-generic",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "ubuntu/18.04/x86_64/4.15.0-20-generic",
        neighbours: &[],
    },
    Case {
        name: "ubuntu 22.04",
        os_release: UBUNTU_2204,
        release: "5.15.0-25-generic",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "ubuntu/22.04/x86_64/5.15.0-25-generic",
        neighbours: &[],
    },
    Case {
        name: "ubuntu 24.04 (not archived)",
        os_release: UBUNTU_2404,
        release: "6.8.0-31-generic",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[],
    },
    Case {
        name: "ubuntu 20.04, an aws kernel between two archived ones",
        os_release: UBUNTU_2004,
        release: "5.4.0-1038-aws",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[
            "ubuntu/20.04/x86_64/5.4.0-1036-aws",
            "ubuntu/20.04/x86_64/5.4.0-1040-aws",
        ],
    },
    Case {
        name: "debian 10",
        os_release: DEBIAN_10,
        release: "4.19.0-20-amd64",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "debian/10/x86_64/4.19.0-20-amd64",
        neighbours: &[],
    },
    Case {
        name: "debian 11 (not archived)",
        os_release: DEBIAN_11,
        release: "5.10.0-28-amd64",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[],
    },
    Case {
        name: "rhel 8.6",
        os_release: RHEL_86,
        release: "4.18.0-372.9.1.el8.x86_64",
        machine: "x86_64",
        kind: "normalized",
        rule: "version",
        entry: "rhel/8/x86_64/4.18.0-372.9.1.el8.x86_64",
        neighbours: &[],
    },
    Case {
        name: "rhel 8.6 aarch64",
        os_release: RHEL_86,
        release: "4.18.0-372.9.1.el8.aarch64",
        machine: "aarch64",
        kind: "normalized",
        rule: "version",
        entry: "rhel/8/arm64/4.18.0-372.9.1.el8.aarch64",
        neighbours: &[],
    },
    Case {
        name: "rhel 7.9",
        os_release: RHEL_79,
        release: "3.10.0-1160.el7.x86_64",
        machine: "x86_64",
        kind: "normalized",
        rule: "version",
        entry: "rhel/7/x86_64/3.10.0-1160.el7.x86_64",
        neighbours: &[],
    },
    Case {
        name: "rhel 9.2 (not archived)",
        os_release: RHEL_92,
        release: "5.14.0-284.11.1.el9_2.x86_64",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[],
    },
    Case {
        name: "rocky 8.6 runs rhel's kernel",
        os_release: ROCKY_86,
        release: "4.18.0-372.9.1.el8.x86_64",
        machine: "x86_64",
        kind: "like",
        rule: "id_like",
        entry: "rhel/8/x86_64/4.18.0-372.9.1.el8.x86_64",
        neighbours: &[],
    },
    Case {
        name: "almalinux 8.6",
        os_release: ALMA_86,
        release: "4.18.0-372.9.1.el8.x86_64",
        machine: "x86_64",
        kind: "like",
        rule: "id_like",
        entry: "rhel/8/x86_64/4.18.0-372.9.1.el8.x86_64",
        neighbours: &[],
    },
    Case {
        name: "centos 7",
        os_release: CENTOS_7,
        release: "3.10.0-1160.el7.x86_64",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "centos/7/x86_64/3.10.0-1160.el7.x86_64",
        neighbours: &[],
    },
    Case {
        name: "centos 8",
        os_release: CENTOS_8,
        release: "4.18.0-305.3.1.el8.x86_64",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "centos/8/x86_64/4.18.0-305.3.1.el8.x86_64",
        neighbours: &[],
    },
    Case {
        name: "oracle 8.5 uek",
        os_release: ORACLE_85,
        release: "5.4.17-2136.300.7.el8uek.x86_64",
        machine: "x86_64",
        kind: "normalized",
        rule: "version",
        entry: "ol/8/x86_64/5.4.17-2136.300.7.el8uek.x86_64",
        neighbours: &[],
    },
    Case {
        name: "oracle 7.9 rhck",
        os_release: ORACLE_79,
        release: "3.10.0-1160.el7.x86_64",
        machine: "x86_64",
        kind: "normalized",
        rule: "version",
        entry: "ol/7/x86_64/3.10.0-1160.el7.x86_64",
        neighbours: &[],
    },
    Case {
        name: "fedora 34, unquoted VERSION_ID",
        os_release: FEDORA_34,
        release: "5.11.12-300.fc34.x86_64",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "fedora/34/x86_64/5.11.12-300.fc34.x86_64",
        neighbours: &[],
    },
    Case {
        name: "amazon linux 1 (2018.03)",
        os_release: AMAZON_1,
        release: "4.14.252-131.483.amzn1.x86_64",
        machine: "x86_64",
        kind: "normalized",
        rule: "version",
        entry: "amzn/1/x86_64/4.14.252-131.483.amzn1.x86_64",
        neighbours: &[],
    },
    Case {
        name: "amazon linux 2",
        os_release: AMAZON_2,
        release: "4.14.252-195.483.amzn2.x86_64",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "amzn/2/x86_64/4.14.252-195.483.amzn2.x86_64",
        neighbours: &[],
    },
    Case {
        name: "amazon linux 2 graviton",
        os_release: AMAZON_2,
        release: "4.14.252-195.483.amzn2.aarch64",
        machine: "aarch64",
        kind: "normalized",
        rule: "arch",
        entry: "amzn/2/arm64/4.14.252-195.483.amzn2.aarch64",
        neighbours: &[],
    },
    Case {
        name: "amazon linux 2023 (not archived)",
        os_release: AMAZON_2023,
        release: "6.1.72-96.166.amzn2023.x86_64",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[],
    },
    Case {
        name: "sles 12 sp5",
        os_release: SLES_125,
        release: "4.12.14-122.103-default",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "sles/12.5/x86_64/4.12.14-122.103-default",
        neighbours: &[],
    },
    Case {
        name: "sles 15 sp3",
        os_release: SLES_153,
        release: "5.3.18-57-default",
        machine: "x86_64",
        kind: "exact",
        rule: "-",
        entry: "sles/15.3/x86_64/5.3.18-57-default",
        neighbours: &[],
    },
    Case {
        name: "opensuse leap 15.3 runs sles 15 sp3's kernel",
        os_release: LEAP_153,
        release: "5.3.18-57-default",
        machine: "x86_64",
        kind: "like",
        rule: "leap_on_sles",
        entry: "sles/15.3/x86_64/5.3.18-57-default",
        neighbours: &[],
    },
    Case {
        name: "opensuse leap 15.2 has its own kernels",
        os_release: LEAP_152,
        release: "5.3.18-lp152.19-default",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[],
    },
    Case {
        name: "linux mint 20.3 runs ubuntu focal's kernel",
        os_release: MINT_203,
        release: "5.4.0-100-generic",
        machine: "x86_64",
        kind: "like",
        rule: "ubuntu_codename",
        entry: "ubuntu/20.04/x86_64/5.4.0-100-generic",
        neighbours: &[],
    },
    Case {
        name: "elementary os 6.1",
        os_release: ELEMENTARY_61,
        release: "5.4.0-100-generic",
        machine: "x86_64",
        kind: "like",
        rule: "ubuntu_codename",
        entry: "ubuntu/20.04/x86_64/5.4.0-100-generic",
        neighbours: &[],
    },
    Case {
        name: "pop!_os builds its own kernels",
        os_release: POP_2204,
        release: "6.2.6-76060206-generic",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &["ubuntu/22.04/x86_64/5.15.0-25-generic"],
    },
    Case {
        name: "arch linux (rolling, no VERSION_ID)",
        os_release: ARCH,
        release: "6.7.4-arch1-1",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[],
    },
    Case {
        name: "ubuntu container on a rhel 8 host without the host mounted",
        os_release: UBUNTU_2204,
        release: "4.18.0-372.9.1.el8.x86_64",
        machine: "x86_64",
        kind: "release",
        rule: "-",
        entry: "rhel/8/x86_64/4.18.0-372.9.1.el8.x86_64",
        neighbours: &[],
    },
    Case {
        name: "debian 12 container on amazon linux 2",
        os_release: DEBIAN_12,
        release: "4.14.252-195.483.amzn2.x86_64",
        machine: "x86_64",
        kind: "release",
        rule: "-",
        entry: "amzn/2/x86_64/4.14.252-195.483.amzn2.x86_64",
        neighbours: &[],
    },
    Case {
        name: "ubuntu container on a el7 host: three distros share the name",
        os_release: UBUNTU_2204,
        release: "3.10.0-1160.el7.x86_64",
        machine: "x86_64",
        kind: "none",
        rule: "-",
        entry: "",
        neighbours: &[
            "centos/7/x86_64/3.10.0-1160.el7.x86_64",
            "ol/7/x86_64/3.10.0-1160.el7.x86_64",
            "rhel/7/x86_64/3.10.0-1160.el7.x86_64",
        ],
    },
];

fn fixture(name: &str) -> PathBuf {
    data(&format!("targets/btf__{name}.btf"))
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", stderr(&out));
}

/// Every archive format of the same kernels, by name.
struct Archives {
    formats: Vec<(&'static str, PathBuf)>,
}

fn build(tmp: &Path) -> Archives {
    let tree = tmp.join("tree");
    for (rel, target) in TREE {
        let path = tree.join(format!("{rel}.btf"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(fixture(target), &path).unwrap();
    }
    let (rel, target) = PACKED;
    let (dir, name) = rel.rsplit_once('/').unwrap();
    pack(
        &tree.join(dir),
        name,
        &std::fs::read(fixture(target)).unwrap(),
        6,
    );

    let out = tmp.join("out");
    let archive = tmp.join("min-btfs.tar.xz");
    let o = batch_with(
        &tree,
        &out,
        &["--dedup", "--archive", archive.to_str().unwrap(), "-q"],
        &[data("progs/fields.bpf.o")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tar = tmp.join("min-btfs.tar");
    run(Command::new("sh").arg("-c").arg(format!(
        "xz -dc {0} > {1} && gzip -9c {1} > {1}.gz",
        archive.display(),
        tar.display()
    )));
    let mut formats = vec![
        ("dedup.tar.xz", archive),
        ("dedup.tar", tar.clone()),
        ("dedup.tar.gz", tmp.join("min-btfs.tar.gz")),
        ("dedup folder", out.clone()),
    ];
    for (flag, ext) in [("-cf", "tar"), ("-czf", "tar.gz"), ("-cJf", "tar.xz")] {
        let plain = tmp.join(format!("tree.{ext}"));
        run(Command::new("tar")
            .arg("-C")
            .arg(&tree)
            .arg(flag)
            .arg(&plain)
            .arg("."));
        formats.push((Box::leak(format!("btfhub.{ext}").into_boxed_str()), plain));
    }
    // bcc's libbpf-tools: btfs/ID/VERSION/ARCH/RELEASE.btf, regular files.
    let bcc = tmp.join("bcc");
    std::fs::create_dir_all(&bcc).unwrap();
    run(Command::new("cp")
        .arg("-rL")
        .arg(&out)
        .arg(bcc.join("btfs")));
    std::fs::remove_dir_all(bcc.join("btfs/by-hash")).unwrap();
    std::fs::remove_file(bcc.join("btfs/index.json")).unwrap();
    let bcc_archive = tmp.join("min_core_btfs.tar.gz");
    run(Command::new("tar")
        .arg("-C")
        .arg(&bcc)
        .arg("-czf")
        .arg(&bcc_archive)
        .arg("btfs"));
    formats.push(("bcc.tar.gz", bcc_archive));
    Archives { formats }
}

fn select(archive: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["select", archive.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let o = btfgen(&args);
    let json = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code().unwrap(), json, stderr(&o))
}

/// A kernel path without its archive prefix and `.btf` / `.btf.tar.xz` suffix.
fn kernel_of(path: &str) -> String {
    let path = path.strip_prefix("btfs/").unwrap_or(path);
    let path = path.strip_suffix(".tar.xz").unwrap_or(path);
    path.strip_suffix(".btf").unwrap_or(path).to_string()
}

/// The bytes a kernel's selection must give in `format`: its `batch` output, or for a plain
/// tree the kernel BTF itself.
fn expected_bytes(tmp: &Path, format: &str, kernel: &str) -> Vec<u8> {
    if format.starts_with("btfhub") {
        let target = TREE
            .iter()
            .chain([&PACKED])
            .find(|(rel, _)| *rel == kernel)
            .unwrap()
            .1;
        std::fs::read(fixture(target)).unwrap()
    } else {
        std::fs::read(tmp.join("out").join(format!("{kernel}.btf"))).unwrap()
    }
}

#[test]
fn real_identities_select_the_right_kernel_in_every_format() {
    let tmp = TempDir::new("select");
    let archives = build(&tmp.0);
    let root = tmp.0.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut failures = Vec::new();
    for (format, archive) in &archives.formats {
        for case in CASES {
            let os = tmp.0.join("os-release");
            std::fs::write(&os, case.os_release).unwrap();
            let output = tmp.0.join("selected.btf");
            let _ = std::fs::remove_file(&output);
            let (code, json, err) = select(
                archive,
                &[
                    "--root",
                    root.to_str().unwrap(),
                    "--os-release",
                    os.to_str().unwrap(),
                    "--release",
                    case.release,
                    "--machine",
                    case.machine,
                    "--output",
                    output.to_str().unwrap(),
                ],
            );
            let rule = json["rule"].as_str().unwrap_or("-");
            let entry = json["entry"].as_str().map(kernel_of).unwrap_or_default();
            let neighbours: Vec<String> = json["neighbours"]
                .as_array()
                .map(|n| n.iter().map(|v| kernel_of(v.as_str().unwrap())).collect())
                .unwrap_or_default();
            let mut ok = json["match"] == case.kind
                && rule == case.rule
                && entry == case.entry
                && neighbours == case.neighbours
                && code == i32::from(case.kind == "none");
            if ok && case.kind != "none" {
                let bytes = std::fs::read(&output).unwrap_or_default();
                ok = bytes == expected_bytes(&tmp.0, format, case.entry);
            } else if ok {
                ok = !output.exists() && json["tried"].as_array().is_some_and(|t| !t.is_empty());
            }
            if !ok {
                failures.push(format!("{format}: {}: exit {code} {json} {err}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn series_host_root_native_and_errors() {
    let tmp = TempDir::new("select-series");
    let archives = build(&tmp.0);
    let (_, dedup) = &archives.formats[0];
    let root = tmp.0.join("host");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/os-release"), UBUNTU_2004).unwrap();
    let root_arg = root.to_str().unwrap();

    // --series: 5.4.0-1038-aws between 1036-aws and 1040-aws, which share one output.
    let (code, json, _) = select(
        dedup,
        &[
            "--root",
            root_arg,
            "--release",
            "5.4.0-1038-aws",
            "--machine",
            "x86_64",
            "--series",
        ],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["match"], "series");
    assert_eq!(
        json["neighbours"],
        serde_json::json!([
            "ubuntu/20.04/x86_64/5.4.0-1036-aws.btf",
            "ubuntu/20.04/x86_64/5.4.0-1040-aws.btf"
        ])
    );
    // Not across flavours: 5.4.0-101-generic's neighbours are generic ones, and only one
    // (5.4.0-100-generic) is archived.
    let (code, json, _) = select(
        dedup,
        &[
            "--root",
            root_arg,
            "--release",
            "5.4.0-101-generic",
            "--machine",
            "x86_64",
            "--series",
        ],
    );
    assert_eq!((code, json["match"].as_str()), (1, Some("none")), "{json}");

    // The host's os-release under --root, usr/lib/os-release when etc/ has none.
    let lib_root = tmp.0.join("host2");
    std::fs::create_dir_all(lib_root.join("usr/lib")).unwrap();
    std::fs::write(lib_root.join("usr/lib/os-release"), RHEL_86).unwrap();
    let (code, json, _) = select(
        dedup,
        &[
            "--root",
            lib_root.to_str().unwrap(),
            "--release",
            "4.18.0-372.9.1.el8.x86_64",
            "--machine",
            "x86_64",
        ],
    );
    assert_eq!(
        (code, json["match"].as_str()),
        (0, Some("normalized")),
        "{json}"
    );
    assert_eq!(json["key"]["distro"], "rhel");
    assert_eq!(json["key"]["version"], "8");

    // Native: the root has sys/kernel/btf/vmlinux and the release is the running one.
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    std::fs::create_dir_all(root.join("sys/kernel/btf")).unwrap();
    std::fs::write(root.join("sys/kernel/btf/vmlinux"), b"x").unwrap();
    let out = tmp.0.join("native.btf");
    let (code, json, _) = select(
        dedup,
        &[
            "--root",
            root_arg,
            "--release",
            running.trim(),
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(
        (code, json["match"].as_str()),
        (0, Some("native")),
        "{json}"
    );
    assert!(!out.exists());

    // A truncated archive: an error naming it, nothing written.
    let bytes = std::fs::read(dedup).unwrap();
    let cut = tmp.0.join("cut.tar.xz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = tmp.0.join("never.btf");
    let (code, _, err) = select(
        &cut,
        &[
            "--root",
            root_arg,
            "--release",
            "5.4.0-100-generic",
            "--machine",
            "x86_64",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("cut.tar.xz") && err.contains("truncated"),
        "{err}"
    );
    assert!(!out.exists());

    // Bad os-release: an error naming the file and line.
    let bad = tmp.0.join("bad-os-release");
    std::fs::write(&bad, "ID=\"ubuntu\nVERSION_ID=20.04\n").unwrap();
    let (code, _, err) = select(dedup, &["--os-release", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("bad-os-release") && err.contains("line 1"),
        "{err}"
    );

    // Usage error.
    let o = btfgen(&["select"]);
    assert_eq!(o.status.code(), Some(2));
}
