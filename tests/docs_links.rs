//! The documentation holds together: every relative link of `README.md` and `docs/*.md` names a
//! file that exists and, with `#anchor`, a heading of that file (GitHub's anchors: lower case,
//! punctuation dropped, spaces as `-`). The README stays short enough to read in five minutes,
//! and each topic file starts by saying what it covers.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// GitHub's anchor for a heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut in_code = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                in_code = !in_code;
                return false;
            }
            !in_code
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|l| {
            l.trim_start_matches('#')
                .strip_prefix(' ')
                .filter(|_| l.starts_with('#'))
        })
        .map(slug)
        .collect()
}

/// Every `](target)` of the file's prose that is not a URL.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for link in relative_links(&text) {
            checked += 1;
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", file.display()));
                continue;
            }
            if !anchor.is_empty() {
                let heads = anchors(&fs::read_to_string(&target).unwrap());
                if !heads.contains(anchor) {
                    broken.push(format!("{}: {link}: no such heading", file.display()));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: the scanner is broken"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checker_finds_a_broken_anchor() {
    let text = "# Title\n\n## Batch at scale\n\nsee [x](#batch-at-scale) and [y](#nowhere)\n";
    let heads = anchors(text);
    let links = relative_links(text);
    assert_eq!(links, ["#batch-at-scale", "#nowhere"]);
    assert!(heads.contains("batch-at-scale"));
    assert!(!heads.contains("nowhere"));
    assert_eq!(slug("bpftool's spellings"), "bpftools-spellings");
}

/// The README is read in five minutes, and points to every topic file; each topic file starts
/// with its title and a paragraph saying what it covers.
#[test]
fn the_readme_is_short_and_every_topic_is_reachable() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md has {lines} lines (at most 250)");
    for file in markdown_files().iter().skip(1) {
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            readme.contains(&format!("](docs/{name}")),
            "README.md does not link docs/{name}"
        );
        let text = fs::read_to_string(file).unwrap();
        let mut head = text.lines();
        assert!(
            head.next().is_some_and(|l| l.starts_with("# ")),
            "{name}: no title"
        );
        assert_eq!(
            head.next(),
            Some(""),
            "{name}: no blank line after the title"
        );
        let covers = head.next().unwrap_or_default();
        assert!(
            covers.len() > 40 && !covers.starts_with('#'),
            "{name}: does not start by saying what it covers"
        );
    }
}
