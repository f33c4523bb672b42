//! Archives of per-kernel BTFs, read without inflating more than a lookup needs.
//!
//! One reader serves every layout, because each names its kernels by path:
//! - `btfgen batch --dedup --archive`: `by-hash/SHA256.btf` members, `index.json`, then the
//!   tree `DISTRO/VERSION/ARCH/KERNEL.btf` as links to them (the links are the index's
//!   `kernels`, and their targets say which kernels share an output);
//! - a plain BTFHub tree: `DISTRO/VERSION/ARCH/KERNEL.btf` or `KERNEL.btf.tar.xz`;
//! - bcc's libbpf-tools: `btfs/DISTRO/VERSION/ARCH/KERNEL.btf` (a kernel's key is the last
//!   four components of its path, so any prefix works);
//!
//! each as `.tar`, `.tar.gz` or `.tar.xz` (told by magic bytes). A lookup makes two passes
//! over the stream: the first keeps only the kernels' paths ([`Catalogue`]: the index), the
//! second copies out the one member chosen. The decoders are `no_std` (`xz4rust`,
//! `miniz_oxide`); their buffers are allocated fallibly: the xz dictionary is sized by the
//! stream's own header, the deflate window is 32 KiB.

use crate::error::{Error, Result};
use crate::fallible;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

/// Largest member copied out (the largest full kernel BTFs are well under 16 MiB).
pub const MAX_MEMBER: u64 = 64 << 20;
/// Largest xz dictionary allocated (xz -9 uses 64 MiB).
pub const MAX_DICTIONARY: u64 = 64 << 20;
/// Most entries an archive may hold (BTFHub has about 8,000 kernels).
pub const MAX_ENTRIES: usize = 1 << 20;
/// Longest path accepted in a tar header or a long-name record.
pub const MAX_PATH: usize = 4096;
/// Suffix of a kernel's BTF.
pub const BTF_SUFFIX: &str = ".btf";
/// Suffix of BTFHub's packed kernel BTF (a `.tar.xz` holding one `.btf`).
pub const PACKED_SUFFIX: &str = ".btf.tar.xz";

const XZ_MAGIC: &[u8] = b"\xfd7zXZ\0";
const GZIP_MAGIC: &[u8] = b"\x1f\x8b";
const BLOCK: usize = 512;
const DEFLATE_WINDOW: usize = 32 * 1024;
const BTF_MAGIC: [u8; 2] = 0xeb9f_u16.to_le_bytes();

fn bad(offset: u64, reason: &'static str) -> Error {
    Error::BadArchive { offset, reason }
}

/// One kernel of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path in the archive, normalized (no `./`, no leading `/`).
    pub path: String,
    /// The member that holds its bytes: the path itself, or a link's target (two kernels
    /// with the same `content` have byte-identical outputs).
    pub content: String,
    distro: Range<usize>,
    version: Range<usize>,
    arch: Range<usize>,
    release: Range<usize>,
}

impl Entry {
    fn part(&self, range: &Range<usize>) -> &str {
        self.path.get(range.clone()).unwrap_or_default()
    }
    /// Distribution folder.
    pub fn distro(&self) -> &str {
        self.part(&self.distro)
    }
    /// Version folder.
    pub fn version(&self) -> &str {
        self.part(&self.version)
    }
    /// Machine folder.
    pub fn arch(&self) -> &str {
        self.part(&self.arch)
    }
    /// Kernel release (the file name without `.btf` / `.btf.tar.xz`).
    pub fn release(&self) -> &str {
        self.part(&self.release)
    }

    /// An entry for `path` (already normalized) stored in `content`, if `path` names a
    /// kernel: `.../DISTRO/VERSION/ARCH/RELEASE.btf[.tar.xz]`.
    pub fn new(path: String, content: String) -> Option<Entry> {
        let name_end = path
            .strip_suffix(PACKED_SUFFIX)
            .or_else(|| path.strip_suffix(BTF_SUFFIX))?
            .len();
        let mut end = name_end;
        let mut ranges: [Range<usize>; 4] = [0..0, 0..0, 0..0, 0..0];
        for (i, range) in ranges.iter_mut().enumerate().rev() {
            let head = path.get(..end)?;
            let start = head.rfind('/').map_or(0, |s| s.saturating_add(1));
            if start == end || (start == 0 && i > 0) {
                return None;
            }
            *range = start..end;
            end = start.saturating_sub(1);
        }
        let [distro, version, arch, release] = ranges;
        if path.get(distro.clone()) == Some(by_hash_dir()) {
            return None;
        }
        Some(Entry {
            path,
            content,
            distro,
            version,
            arch,
            release,
        })
    }
}

fn by_hash_dir() -> &'static str {
    "by-hash"
}

/// The kernels of an archive: its index.
#[derive(Debug, Default, Clone)]
pub struct Catalogue {
    /// Every kernel, in archive order.
    pub entries: Vec<Entry>,
}

impl Catalogue {
    /// Read the kernels of an archive held in memory (first pass).
    pub fn read(archive: &[u8]) -> Result<Catalogue> {
        let mut entries = Vec::new();
        with_tar(archive, |tar| {
            while let Some(header) = tar.next()? {
                let entry = match header.kind {
                    Kind::File => Entry::new(fallible::to_string(&header.name)?, header.name),
                    Kind::Symlink => {
                        let target = resolve(&header.name, &header.link)?;
                        Entry::new(header.name, target)
                    }
                    Kind::Hardlink => Entry::new(header.name, header.link),
                    Kind::Other => None,
                };
                tar.skip_data()?;
                if let Some(entry) = entry {
                    if entries.len() >= MAX_ENTRIES {
                        return Err(Error::Limit {
                            what: "kernels in a BTF archive",
                            limit: MAX_ENTRIES,
                        });
                    }
                    fallible::push(&mut entries, entry)?;
                }
            }
            Ok(())
        })?;
        Ok(Catalogue { entries })
    }

    /// Copy out the BTF of `entry` (second pass): its member's bytes, unpacked when it is a
    /// BTFHub `.btf.tar.xz`; validated as BTF.
    pub fn extract(archive: &[u8], entry: &Entry) -> Result<Vec<u8>> {
        let member = member(archive, |name| name == entry.content)?
            .ok_or(bad(0, "the archive lost the member its index names"))?;
        unpack_member(&entry.content, member)
    }
}

/// A member's bytes as a BTF: unpacked from BTFHub's `.btf.tar.xz`, validated.
pub fn unpack_member(name: &str, bytes: Vec<u8>) -> Result<Vec<u8>> {
    let btf = if name.ends_with(PACKED_SUFFIX) {
        member(&bytes, |inner| inner.ends_with(BTF_SUFFIX))?
            .ok_or(bad(0, "packed kernel BTF holds no .btf file"))?
    } else {
        bytes
    };
    if !btf.starts_with(&BTF_MAGIC) {
        return Err(bad(0, "member is not BTF (bad magic)"));
    }
    // Validated as any target BTF: a member damaged where the container has no checksum
    // (gzip's CRC is not checked) is an error here, not a surprise for libbpf.
    crate::btf::Btf::parse(&btf)?;
    Ok(btf)
}

/// The bytes of the first regular file whose name satisfies `wanted`.
fn member(archive: &[u8], wanted: impl Fn(&str) -> bool) -> Result<Option<Vec<u8>>> {
    with_tar(archive, |tar| {
        while let Some(header) = tar.next()? {
            if header.kind == Kind::File && wanted(&header.name) {
                return tar.read_data(header.size).map(Some);
            }
            tar.skip_data()?;
        }
        Ok(None)
    })
}

/// A link's target as an archive path: `../../../by-hash/X.btf` from `a/b/c/k.btf` is
/// `by-hash/X.btf`.
fn resolve(link: &str, target: &str) -> Result<String> {
    let mut parts: Vec<&str> = Vec::new();
    let base = if target.starts_with('/') {
        ""
    } else {
        link.rsplit_once('/').map_or("", |(dir, _)| dir)
    };
    for part in base.split('/').chain(target.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => fallible::push(&mut parts, other)?,
        }
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            fallible::extend_str(&mut out, "/")?;
        }
        fallible::extend_str(&mut out, part)?;
    }
    Ok(out)
}

/// A decompressed byte stream.
trait Stream {
    /// Fill `buf` as far as the stream goes; 0 only at its end.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

struct Plain<'a> {
    data: &'a [u8],
}

impl Stream for Plain<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        buf.get_mut(..n)
            .ok_or(bad(0, "read"))?
            .copy_from_slice(head);
        self.data = rest;
        Ok(n)
    }
}

/// gzip (RFC 1952): one member, header fields skipped, raw deflate through `miniz_oxide`.
struct Gzip<'a> {
    input: &'a [u8],
    consumed: usize,
    state: miniz_oxide::inflate::core::DecompressorOxide,
    window: Vec<u8>,
    /// Inflated bytes not yet handed out: `window[start..end]` (never wrapping).
    start: usize,
    end: usize,
    done: bool,
}

impl<'a> Gzip<'a> {
    fn new(data: &'a [u8]) -> Result<Self> {
        const FHCRC: u8 = 2;
        const FEXTRA: u8 = 4;
        const FNAME: u8 = 8;
        const FCOMMENT: u8 = 16;
        let short = || bad(0, "truncated gzip header");
        let flags = *data.get(3).ok_or_else(short)?;
        if data.get(2) != Some(&8) {
            return Err(bad(2, "gzip: not deflate"));
        }
        let mut pos = 10usize;
        if flags & FEXTRA != 0 {
            let len = data.get(pos..pos.saturating_add(2)).ok_or_else(short)?;
            let len = usize::from(u16::from_le_bytes([
                *len.first().ok_or_else(short)?,
                *len.get(1).ok_or_else(short)?,
            ]));
            pos = pos.saturating_add(2).saturating_add(len);
        }
        for flag in [FNAME, FCOMMENT] {
            if flags & flag != 0 {
                let rest = data.get(pos..).ok_or_else(short)?;
                let nul = rest.iter().position(|&b| b == 0).ok_or_else(short)?;
                pos = pos.saturating_add(nul).saturating_add(1);
            }
        }
        if flags & FHCRC != 0 {
            pos = pos.saturating_add(2);
        }
        let input = data.get(pos..).ok_or_else(short)?;
        let mut window = Vec::new();
        window.try_reserve_exact(DEFLATE_WINDOW)?;
        window.resize(DEFLATE_WINDOW, 0);
        Ok(Gzip {
            input,
            consumed: pos,
            state: miniz_oxide::inflate::core::DecompressorOxide::new(),
            window,
            start: 0,
            end: 0,
            done: false,
        })
    }
}

impl Stream for Gzip<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        use miniz_oxide::inflate::TINFLStatus;
        let mut filled = 0usize;
        // Each turn hands out bytes or inflates more; inflation ends at Done or an error.
        while filled < buf.len() {
            if self.start < self.end {
                let ready = self.window.get(self.start..self.end).unwrap_or_default();
                let dest = buf.get_mut(filled..).unwrap_or_default();
                let n = ready.len().min(dest.len());
                dest.get_mut(..n)
                    .unwrap_or_default()
                    .copy_from_slice(ready.get(..n).unwrap_or_default());
                self.start = self.start.saturating_add(n);
                filled = filled.saturating_add(n);
                continue;
            }
            if self.done {
                break;
            }
            // The window wraps: start again at 0 when it is full.
            let pos = if self.end == DEFLATE_WINDOW {
                0
            } else {
                self.end
            };
            let (status, used, written) = miniz_oxide::inflate::core::decompress(
                &mut self.state,
                self.input,
                &mut self.window,
                pos,
                0,
            );
            self.input = self.input.get(used..).unwrap_or_default();
            self.consumed = self.consumed.saturating_add(used);
            self.start = pos;
            self.end = pos.saturating_add(written);
            match status {
                TINFLStatus::Done => self.done = true,
                TINFLStatus::HasMoreOutput => {}
                TINFLStatus::NeedsMoreInput => {
                    return Err(bad(self.consumed as u64, "truncated gzip stream"));
                }
                _ => return Err(bad(self.consumed as u64, "corrupt gzip stream")),
            }
            if written == 0 && !self.done && status != TINFLStatus::HasMoreOutput {
                return Err(bad(self.consumed as u64, "gzip stream makes no progress"));
            }
        }
        Ok(filled)
    }
}

/// xz through `xz4rust`, into a dictionary the caller allocated.
struct Xz<'a, 'd> {
    input: &'a [u8],
    consumed: usize,
    decoder: xz4rust::XzDecoder<'d>,
    done: bool,
}

/// The dictionary size an xz stream's first block asks for (0: it fits the smallest).
fn xz_dictionary_size(data: &[u8]) -> Result<u64> {
    let mut probe_dict = [0u8; xz4rust::DICT_SIZE_MIN];
    let mut decoder = xz4rust::XzDecoder::with_fixed_size_dict(&mut probe_dict);
    let mut out = [0u8; 64];
    let mut input = data;
    // The dictionary is sized in the block header, before any output: a few calls suffice,
    // and each consumes input or stops.
    for _ in 0..16 {
        match decoder.decode(input, &mut out) {
            Err(xz4rust::XzError::DictionaryTooLarge(size)) => return Ok(size),
            Err(_) => return Err(bad(0, "corrupt xz stream")),
            Ok(result) if result.is_end_of_stream() || result.output_produced() > 0 => {
                return Ok(0);
            }
            Ok(result) if result.input_consumed() == 0 => {
                return Err(bad(0, "truncated xz stream"));
            }
            Ok(result) => input = input.get(result.input_consumed()..).unwrap_or_default(),
        }
    }
    Ok(0)
}

impl Stream for Xz<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut filled = 0usize;
        while filled < buf.len() && !self.done {
            let dest = buf.get_mut(filled..).unwrap_or_default();
            let result = self.decoder.decode(self.input, dest).map_err(|e| match e {
                xz4rust::XzError::NeedsLargerInputBuffer => {
                    bad(self.consumed as u64, "truncated xz stream")
                }
                xz4rust::XzError::DictionaryTooLarge(_) => bad(
                    self.consumed as u64,
                    "xz block needs a larger dictionary than the first",
                ),
                _ => bad(self.consumed as u64, "corrupt xz stream"),
            })?;
            let used = result.input_consumed();
            self.input = self.input.get(used..).unwrap_or_default();
            self.consumed = self.consumed.saturating_add(used);
            filled = filled.saturating_add(result.output_produced());
            if result.is_end_of_stream() {
                self.done = true;
            } else if !result.made_progress() {
                return Err(bad(self.consumed as u64, "truncated xz stream"));
            }
        }
        Ok(filled)
    }
}

/// Run `body` over the tar inside `archive`, decompressing as it reads.
fn with_tar<R>(archive: &[u8], body: impl FnOnce(&mut Tar<'_>) -> Result<R>) -> Result<R> {
    if archive.starts_with(XZ_MAGIC) {
        let size = xz_dictionary_size(archive)?;
        if size > MAX_DICTIONARY {
            return Err(Error::Limit {
                what: "xz dictionary of a BTF archive",
                limit: MAX_DICTIONARY as usize,
            });
        }
        let size = usize::try_from(size)
            .unwrap_or(usize::MAX)
            .max(xz4rust::DICT_SIZE_MIN);
        let mut dictionary = Vec::new();
        dictionary.try_reserve_exact(size)?;
        dictionary.resize(size, 0);
        let mut xz = Xz {
            input: archive,
            consumed: 0,
            decoder: xz4rust::XzDecoder::with_fixed_size_dict(&mut dictionary),
            done: false,
        };
        body(&mut Tar::new(&mut xz))
    } else if archive.starts_with(GZIP_MAGIC) {
        let mut gzip = Gzip::new(archive)?;
        body(&mut Tar::new(&mut gzip))
    } else {
        let mut plain = Plain { data: archive };
        body(&mut Tar::new(&mut plain))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Symlink,
    Hardlink,
    Other,
}

struct Header {
    name: String,
    link: String,
    kind: Kind,
    size: u64,
}

/// A streaming reader of tar headers (ustar, GNU long names, pax `path`/`linkpath`).
struct Tar<'s> {
    stream: &'s mut dyn Stream,
    /// Bytes of the tar stream read so far.
    offset: u64,
    /// Data bytes (with padding) of the current entry not yet read.
    pending: u64,
}

impl<'s> Tar<'s> {
    fn new(stream: &'s mut dyn Stream) -> Self {
        Tar {
            stream,
            offset: 0,
            pending: 0,
        }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        let n = self.stream.read(buf)?;
        self.offset = self.offset.saturating_add(n as u64);
        if n < buf.len() {
            return Err(bad(self.offset, "truncated tar stream"));
        }
        Ok(())
    }

    /// Skip what is left of the current entry's data.
    fn skip_data(&mut self) -> Result<()> {
        let mut scratch = [0u8; BLOCK];
        // Each turn reads a block or fails.
        while self.pending > 0 {
            let n = usize::try_from(self.pending.min(BLOCK as u64)).unwrap_or(BLOCK);
            self.read_exact(scratch.get_mut(..n).unwrap_or_default())?;
            self.pending = self.pending.saturating_sub(n as u64);
        }
        Ok(())
    }

    /// The current entry's data (`size` bytes), allocated fallibly.
    fn read_data(&mut self, size: u64) -> Result<Vec<u8>> {
        if size > MAX_MEMBER {
            return Err(Error::Limit {
                what: "archive member size",
                limit: MAX_MEMBER as usize,
            });
        }
        let len = usize::try_from(size).map_err(|_| Error::OutOfMemory)?;
        let mut data = fallible::vec_with_capacity(len)?;
        data.resize(len, 0);
        self.read_exact(&mut data)?;
        self.pending = self.pending.saturating_sub(size);
        self.skip_data()?;
        Ok(data)
    }

    /// The next entry's header (its data is then [`Tar::read_data`] or [`Tar::skip_data`]).
    fn next(&mut self) -> Result<Option<Header>> {
        self.skip_data()?;
        let mut long_name: Option<String> = None;
        let mut long_link: Option<String> = None;
        // Extension records (GNU long names, pax) precede their entry; a handful at most.
        for _ in 0..8 {
            let start = self.offset;
            let mut block = [0u8; BLOCK];
            let n = self.stream.read(&mut block)?;
            self.offset = self.offset.saturating_add(n as u64);
            if n == 0 {
                // No end-of-archive blocks: accepted, as GNU tar does.
                return Ok(None);
            }
            if n < BLOCK {
                return Err(bad(self.offset, "truncated tar header"));
            }
            if block.iter().all(|&b| b == 0) {
                return Ok(None);
            }
            check_sum(&block, start)?;
            let size = number(field(&block, 124, 12), start)?;
            self.pending = size.div_ceil(BLOCK as u64).saturating_mul(BLOCK as u64);
            let typeflag = block.get(156).copied().unwrap_or(0);
            match typeflag {
                b'L' | b'K' => {
                    if size > MAX_PATH as u64 {
                        return Err(bad(start, "long name record too long"));
                    }
                    let data = self.read_data(size)?;
                    let text = text(trim_nul(&data), start)?;
                    *(if typeflag == b'L' {
                        &mut long_name
                    } else {
                        &mut long_link
                    }) = Some(text);
                }
                b'x' => {
                    if size > MAX_PATH as u64 * 4 {
                        return Err(bad(start, "pax record too long"));
                    }
                    let data = self.read_data(size)?;
                    pax(&data, start, &mut long_name, &mut long_link)?;
                }
                _ => {
                    let kind = match typeflag {
                        b'0' | 0 | b'7' => Kind::File,
                        b'2' => Kind::Symlink,
                        b'1' => Kind::Hardlink,
                        _ => Kind::Other,
                    };
                    let name = match long_name {
                        Some(name) => name,
                        None => ustar_name(&block, start)?,
                    };
                    let link = match long_link {
                        Some(link) => link,
                        None => text(trim_nul(field(&block, 157, 100)), start)?,
                    };
                    return Ok(Some(Header {
                        name: normalize(name)?,
                        link: normalize(link)?,
                        kind,
                        size,
                    }));
                }
            }
        }
        Err(bad(
            self.offset,
            "too many extension records before an entry",
        ))
    }
}

fn field(block: &[u8; BLOCK], start: usize, len: usize) -> &[u8] {
    block
        .get(start..start.saturating_add(len))
        .unwrap_or_default()
}

fn trim_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    bytes.get(..end).unwrap_or_default()
}

fn text(bytes: &[u8], offset: u64) -> Result<String> {
    let s = core::str::from_utf8(bytes).map_err(|_| bad(offset, "path is not UTF-8"))?;
    fallible::to_string(s)
}

/// `prefix/name` of a ustar header, `name` alone otherwise.
fn ustar_name(block: &[u8; BLOCK], offset: u64) -> Result<String> {
    let name = trim_nul(field(block, 0, 100));
    let prefix = trim_nul(field(block, 345, 155));
    if field(block, 257, 5) == b"ustar" && field(block, 262, 1) == b"\0" && !prefix.is_empty() {
        let mut out = text(prefix, offset)?;
        fallible::extend_str(&mut out, "/")?;
        fallible::extend_str(&mut out, &text(name, offset)?)?;
        return Ok(out);
    }
    text(name, offset)
}

/// Drop `./` and leading `/` components.
fn normalize(path: String) -> Result<String> {
    let trimmed = path.trim_start_matches("./").trim_start_matches('/');
    if trimmed.len() == path.len() {
        return Ok(path);
    }
    fallible::to_string(trimmed)
}

/// The header checksum: the unsigned sum of the header with its checksum field as spaces.
fn check_sum(block: &[u8; BLOCK], offset: u64) -> Result<()> {
    let stored = number(field(block, 148, 8), offset)?;
    let sum: u64 = block
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                u64::from(b' ')
            } else {
                u64::from(b)
            }
        })
        .sum();
    if sum != stored {
        return Err(bad(offset, "tar header checksum mismatch"));
    }
    Ok(())
}

/// A numeric header field: octal (NUL/space padded), or GNU's base-256 (high bit set).
fn number(bytes: &[u8], offset: u64) -> Result<u64> {
    if let Some((&first, rest)) = bytes.split_first()
        && first & 0x80 != 0
    {
        let mut value = u64::from(first & 0x7f);
        for &b in rest {
            value = value
                .checked_mul(256)
                .and_then(|v| v.checked_add(u64::from(b)))
                .ok_or(bad(offset, "tar number overflows"))?;
        }
        return Ok(value);
    }
    let mut value = 0u64;
    for &b in bytes {
        match b {
            b'0'..=b'7' => {
                value = value
                    .checked_mul(8)
                    .and_then(|v| v.checked_add(u64::from(b - b'0')))
                    .ok_or(bad(offset, "tar number overflows"))?;
            }
            b' ' | 0 if value == 0 => {}
            b' ' | 0 => break,
            _ => return Err(bad(offset, "invalid tar number")),
        }
    }
    Ok(value)
}

/// The `path` and `linkpath` records of a pax extended header (`LEN key=value\n`).
fn pax(
    data: &[u8],
    offset: u64,
    name: &mut Option<String>,
    link: &mut Option<String>,
) -> Result<()> {
    let mut rest = data;
    // Each record consumes at least its length prefix.
    while !rest.is_empty() && rest.first() != Some(&0) {
        let space = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or(bad(offset, "invalid pax record"))?;
        let len: usize = core::str::from_utf8(rest.get(..space).unwrap_or_default())
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(bad(offset, "invalid pax record length"))?;
        let record = rest
            .get(space.saturating_add(1)..len)
            .ok_or(bad(offset, "invalid pax record length"))?;
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(value) = record.strip_prefix(b"path=") {
            *name = Some(text(value, offset)?);
        } else if let Some(value) = record.strip_prefix(b"linkpath=") {
            *link = Some(text(value, offset)?);
        }
        rest = rest.get(len..).unwrap_or_default();
    }
    Ok(())
}

/// The kernels of an archive that is a directory (a `batch --dedup` output folder, or a
/// BTFHub tree), read with `std::fs`: links are followed to say which kernels share a file.
#[cfg(feature = "std")]
pub fn read_dir(root: &std::path::Path) -> std::io::Result<Catalogue> {
    use std::io;
    /// BTFHub's depth plus a prefix or two.
    const MAX_DEPTH: usize = 8;
    let mut entries = Vec::new();
    let mut stack = alloc::vec![(root.to_path_buf(), 0usize)];
    let relative = |p: &std::path::Path| -> io::Result<String> {
        p.strip_prefix(root)
            .ok()
            .and_then(|r| r.to_str())
            .map(String::from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "path is not UTF-8"))
    };
    while let Some((dir, depth)) = stack.pop() {
        let mut names: Vec<_> = std::fs::read_dir(&dir)?.collect::<io::Result<_>>()?;
        names.sort_by_key(std::fs::DirEntry::file_name);
        for item in names {
            let path = item.path();
            let file_type = item.file_type()?;
            // Hidden files: batch's temporaries (`.NAME.tmp.PID.N`), editors' leftovers.
            if item.file_name().as_encoded_bytes().starts_with(b".") {
                continue;
            }
            if file_type.is_dir() {
                if depth < MAX_DEPTH && item.file_name() != by_hash_dir() {
                    stack.push((path, depth.saturating_add(1)));
                }
                continue;
            }
            let rel = relative(&path)?;
            let content = if file_type.is_symlink() {
                let target = std::fs::canonicalize(&path)?;
                let root = std::fs::canonicalize(root)?;
                target
                    .strip_prefix(&root)
                    .ok()
                    .and_then(|r| r.to_str())
                    .map(String::from)
                    .ok_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidData, "link leaves the folder")
                    })?
            } else {
                rel.clone()
            };
            if let Some(entry) = Entry::new(rel, content) {
                entries.push(entry);
            }
        }
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Catalogue { entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_take_the_last_four_components() {
        let e = Entry::new(
            "btfs/ubuntu/20.04/x86_64/5.4.0-1-generic.btf".into(),
            String::new(),
        )
        .unwrap();
        assert_eq!(
            (e.distro(), e.version(), e.arch(), e.release()),
            ("ubuntu", "20.04", "x86_64", "5.4.0-1-generic")
        );
        let e = Entry::new(
            "rhel/8/arm64/4.18.0-80.el8.aarch64.btf.tar.xz".into(),
            String::new(),
        )
        .unwrap();
        assert_eq!(e.release(), "4.18.0-80.el8.aarch64");
        assert_eq!(e.distro(), "rhel");
        assert!(Entry::new("by-hash/ab.btf".into(), String::new()).is_none());
        assert!(Entry::new("x86_64/k.btf".into(), String::new()).is_none());
        assert!(Entry::new("a/b/c/.btf".into(), String::new()).is_none());
        assert!(Entry::new("index.json".into(), String::new()).is_none());
    }

    #[test]
    fn links_resolve_against_their_directory() {
        assert_eq!(
            resolve("ubuntu/20.04/x86_64/k.btf", "../../../by-hash/ab.btf").unwrap(),
            "by-hash/ab.btf"
        );
        assert_eq!(resolve("a/k.btf", "/x/y.btf").unwrap(), "x/y.btf");
    }

    #[test]
    fn numbers_octal_and_base256() {
        assert_eq!(number(b"0000644\0", 0).unwrap(), 0o644);
        assert_eq!(number(b"   12 \0", 0).unwrap(), 0o12);
        assert_eq!(number(&[0x80, 0, 0, 1, 0], 0).unwrap(), 256);
        assert!(number(b"9", 0).is_err());
    }

    #[test]
    fn junk_is_an_error_not_a_panic() {
        assert!(Catalogue::read(b"\xfd7zXZ\0junk").is_err());
        assert!(Catalogue::read(b"\x1f\x8b\x08\0\0\0\0\0\0\x03junk").is_err());
        assert!(Catalogue::read(&[1u8; 700]).is_err());
        assert!(Catalogue::read(&[0u8; 1024]).unwrap().entries.is_empty());
    }
}
