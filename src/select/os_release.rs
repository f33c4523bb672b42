//! os-release(5) text: `KEY=VALUE` lines, values unquoted, in double quotes (with `\"`, `\\`,
//! `` \` ``, `\$` escapes) or in single quotes (taken literally), `#` comments and blank lines.
//! Only the keys that identify a distribution release are kept; every line is still checked,
//! so a file that is not os-release at all (binary junk, a 1 MB line) is an error rather than
//! an identity made of whatever parsed.

use crate::error::{Error, Result};
use crate::fallible;
use alloc::string::String;

/// Largest os-release text accepted (real files are under 1 KiB).
pub const MAX_TEXT: usize = 64 * 1024;
/// Longest line accepted.
pub const MAX_LINE: usize = 4096;

/// The identifying fields of an os-release file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsRelease {
    /// `ID`: the distribution (`ubuntu`, `rhel`, `amzn`, ...).
    pub id: String,
    /// `ID_LIKE`: space-separated distributions this one derives from, closest first.
    pub id_like: String,
    /// `VERSION_ID` (`20.04`, `8.6`, `2018.03`), empty on rolling distributions.
    pub version_id: String,
    /// `VERSION_CODENAME` (`focal`, `bookworm`).
    pub version_codename: String,
    /// `UBUNTU_CODENAME`: the Ubuntu release an Ubuntu derivative is built on.
    pub ubuntu_codename: String,
}

impl OsRelease {
    /// Parse os-release text. `ID` is required (the distribution cannot be told otherwise).
    pub fn parse(text: &[u8]) -> Result<OsRelease> {
        if text.len() > MAX_TEXT {
            return Err(bad(0, "longer than 64 KiB"));
        }
        let text = core::str::from_utf8(text).map_err(|_| bad(0, "not UTF-8 text"))?;
        let mut os = OsRelease::default();
        for (index, line) in text.split('\n').enumerate() {
            let number = index.saturating_add(1);
            if line.len() > MAX_LINE {
                return Err(bad(number, "line longer than 4096 bytes"));
            }
            let line = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, raw) = line
                .split_once('=')
                .ok_or_else(|| bad(number, "not a KEY=VALUE line"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(bad(number, "invalid key"));
            }
            let field = match key {
                "ID" => &mut os.id,
                "ID_LIKE" => &mut os.id_like,
                "VERSION_ID" => &mut os.version_id,
                "VERSION_CODENAME" => &mut os.version_codename,
                "UBUNTU_CODENAME" => &mut os.ubuntu_codename,
                _ => {
                    // Checked, not kept.
                    unquote(raw, number, &mut String::new())?;
                    continue;
                }
            };
            // A later assignment wins, as when the file is sourced by a shell.
            field.clear();
            unquote(raw, number, field)?;
        }
        if os.id.is_empty() {
            return Err(bad(0, "no ID"));
        }
        Ok(os)
    }

    /// The `ID_LIKE` entries, closest first.
    pub fn like(&self) -> impl Iterator<Item = &str> {
        self.id_like.split_ascii_whitespace()
    }
}

fn bad(line: usize, reason: &'static str) -> Error {
    Error::BadOsRelease { line, reason }
}

/// Append the shell-unquoted value `raw` to `out`.
fn unquote(raw: &str, line: usize, out: &mut String) -> Result<()> {
    let mut chars = raw.chars();
    let push = |out: &mut String, c: char| {
        out.try_reserve(c.len_utf8())?;
        out.push(c);
        Ok::<(), Error>(())
    };
    // Bounded by the line's length: each turn consumes at least one character.
    while let Some(c) = chars.next() {
        match c {
            '"' => loop {
                match chars.next() {
                    None => return Err(bad(line, "unterminated double quote")),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(e @ ('"' | '\\' | '`' | '$')) => push(out, e)?,
                        Some(other) => {
                            push(out, '\\')?;
                            push(out, other)?;
                        }
                        None => return Err(bad(line, "unterminated double quote")),
                    },
                    Some(other) => push(out, other)?,
                }
            },
            '\'' => {
                let rest = chars.as_str();
                let end = rest
                    .find('\'')
                    .ok_or_else(|| bad(line, "unterminated single quote"))?;
                let literal = rest.get(..end).unwrap_or_default();
                fallible::extend_str(out, literal)?;
                chars = rest
                    .get(end.saturating_add(1)..)
                    .unwrap_or_default()
                    .chars();
            }
            '\\' => match chars.next() {
                Some(e) => push(out, e)?,
                None => return Err(bad(line, "backslash at end of line")),
            },
            ' ' | '\t' => {
                // Whitespace ends the value; only a comment may follow.
                let rest = chars.as_str().trim_start_matches([' ', '\t']);
                if rest.is_empty() || rest.starts_with('#') {
                    return Ok(());
                }
                return Err(bad(line, "unquoted whitespace in value"));
            }
            '`' | '$' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => {
                return Err(bad(line, "unquoted shell metacharacter in value"));
            }
            c if c.is_control() => return Err(bad(line, "control character in value")),
            other => push(out, other)?,
        }
    }
    if out.chars().any(char::is_control) {
        return Err(bad(line, "control character in value"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_styles_and_escapes() {
        let os = OsRelease::parse(
            b"# comment\n\nID=fedora\nVERSION_ID=34\nID_LIKE='rhel centos'\n\
              VERSION_CODENAME=\"a\\\"b\\\\c\"\nUBUNTU_CODENAME=x\\ y\nNAME=\"Fedora Linux\"\n",
        )
        .unwrap();
        assert_eq!(os.id, "fedora");
        assert_eq!(os.version_id, "34");
        assert_eq!(os.id_like, "rhel centos");
        assert_eq!(os.version_codename, "a\"b\\c");
        assert_eq!(os.ubuntu_codename, "x y");
        assert_eq!(
            os.like().collect::<alloc::vec::Vec<_>>(),
            ["rhel", "centos"]
        );
    }

    #[test]
    fn crlf_and_later_assignment_wins() {
        let os = OsRelease::parse(b"ID=\"a\"\r\nID=b\r\n").unwrap();
        assert_eq!(os.id, "b");
    }

    #[test]
    fn bad_input_is_an_error_with_its_line() {
        assert_eq!(
            OsRelease::parse(b"ID=x\nVERSION_ID=\"8\n"),
            Err(bad(2, "unterminated double quote"))
        );
        assert_eq!(OsRelease::parse(b"NAME=x\n"), Err(bad(0, "no ID")));
        assert_eq!(
            OsRelease::parse(b"ID=x\njunk\n"),
            Err(bad(2, "not a KEY=VALUE line"))
        );
        assert_eq!(
            OsRelease::parse(b"ID=\xff\n"),
            Err(bad(0, "not UTF-8 text"))
        );
        assert_eq!(
            OsRelease::parse(b"ID=a b\n"),
            Err(bad(1, "unquoted whitespace in value"))
        );
        let long = alloc::vec![b'a'; MAX_LINE + 10];
        let mut text = b"ID=".to_vec();
        text.extend_from_slice(&long);
        assert_eq!(
            OsRelease::parse(&text),
            Err(bad(1, "line longer than 4096 bytes"))
        );
        assert_eq!(
            OsRelease::parse(&alloc::vec![b'\n'; MAX_TEXT + 1]),
            Err(bad(0, "longer than 64 KiB"))
        );
        assert_eq!(
            OsRelease::parse(b"ID=\"a\x01\"\n"),
            Err(bad(1, "control character in value"))
        );
    }
}
