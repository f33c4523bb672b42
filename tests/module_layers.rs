//! The house stays one-way: the module graph of `src/` has no cycle, so every import points to
//! a lower floor (btf → object → core → log → minimize → ffi and the CLI; `dwarf`, beside
//! `btf`, uses it and is used only by ffi and the CLI).
//!
//! Each `.rs` file is one node: its module and the inline modules written in it (test modules
//! and `#[cfg(test)]` items left out: tests may look at any floor). An edge A → B is a path in
//! A that names something of B: a `use`, or a path written inline (`crate::x::f()`,
//! `super::x::T`, `child::f()`, the binary's `btfgen::x`). Paths are followed through the
//! `use`s of the modules on their way, so `crate::core::Spec` is an edge to `core/spec.rs`
//! when `core/mod.rs` re-exports it, and a `use` of an outside crate is no edge. A path to one
//! of the file's own ancestors (its folder's `mod.rs`, the crate root) is no edge either: a
//! folder's `mod.rs` holds what the files of the folder share (`Btf`, `RelocKind`) and is the
//! folder's front door, not a floor above them.
//!
//! The scanner reads Rust tokens (comments, strings and lifetimes skipped), not a full syntax
//! tree: macros and `#[path]` are not followed. The last tests check it on small made-up trees
//! and that it finds the edges it must in the real one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens of a Rust file, without comments, literals and lifetimes.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = at(i);
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && at(i) != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= chars.len() {
                    break;
                } else {
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(c == 'b')), '#' | '"')
            && !(at(i + 1 + usize::from(c == 'b')) == '#'
                && ident_char(at(i + 2 + usize::from(c == 'b'))))
        {
            // A raw string: r"...", r#"..."#, br#"..."#.
            i += 1 + usize::from(c == 'b');
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            while i < chars.len() {
                if at(i) == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if c == '"' || (c == 'b' && at(i + 1) == '"') {
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && at(i) != '"' {
                i += if at(i) == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            i += if c == 'b' { 1 } else { 0 };
            if at(i + 1) == '\\' {
                // An escaped char literal: skip to its closing quote.
                i += 2;
                while i < chars.len() && at(i) != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or label.
                i += 1;
                while ident_char(at(i)) {
                    i += 1;
                }
            }
        } else if ident_char(c) {
            let start = i;
            while ident_char(at(i)) {
                i += 1;
            }
            if c == 'r' && i == start + 1 && at(i) == '#' && ident_char(at(i + 1)) {
                // A raw identifier: r#name.
                i += 1;
                let name_start = i;
                while ident_char(at(i)) {
                    i += 1;
                }
                tokens.push(Token::Ident(chars[name_start..i].iter().collect()));
            } else {
                tokens.push(Token::Ident(chars[start..i].iter().collect()));
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

fn is_ident(token: Option<&Token>, name: &str) -> bool {
    matches!(token, Some(Token::Ident(n)) if n == name)
}

fn is_punct(token: Option<&Token>, c: char) -> bool {
    token == Some(&Token::Punct(c))
}

/// A path as written in a file, with the inline module it was written in.
#[derive(Debug, Clone)]
struct Written {
    /// How many inline modules (`mod private { ... }`) deep it was written.
    inline_depth: usize,
    segments: Vec<String>,
}

/// A name a `use` binds (`*` for a glob), and the path it stands for.
#[derive(Debug, Clone)]
struct Binding {
    name: String,
    path: Written,
}

/// What one file declares and names.
#[derive(Debug, Default)]
struct FileScan {
    /// `mod NAME;` declarations (module files).
    children: Vec<String>,
    /// `#[cfg(test)] mod NAME;` declarations: test-only module files, not scanned.
    test_children: Vec<String>,
    /// Names bound by `use`, at the file's own level or in its inline modules.
    bindings: Vec<Binding>,
    /// Paths of two segments or more written outside `use` (`crate::x::f`, `child::T`,
    /// `bound::f`, and outside crates' `std::fs::read`, told apart when resolved).
    paths: Vec<Written>,
}

/// Index just past the item starting at `i` (its attributes, then up to its `;` or the end of
/// its outermost block).
fn skip_item(tokens: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < tokens.len() {
        match tokens.get(i) {
            Some(Token::Punct('(' | '[' | '{')) => depth += 1,
            Some(Token::Punct(')' | ']')) => depth = depth.saturating_sub(1),
            Some(Token::Punct('}')) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            Some(Token::Punct(';')) if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Parse a `use` tree at `i` under `prefix`; returns the index after it.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    inline_depth: usize,
    out: &mut Vec<Binding>,
) -> usize {
    let bind = |name: String, segments: Vec<String>, out: &mut Vec<Binding>| {
        out.push(Binding {
            name,
            path: Written {
                inline_depth,
                segments,
            },
        })
    };
    loop {
        match tokens.get(i) {
            Some(Token::Ident(name)) if tokens.get(i + 1) == Some(&Token::PathSep) => {
                prefix.push(name.clone());
                i += 2;
            }
            Some(Token::Ident(name)) => {
                let mut path = prefix.clone();
                let mut bound = name.clone();
                if name == "self" {
                    bound = prefix.last().cloned().unwrap_or_default();
                } else {
                    path.push(name.clone());
                }
                i += 1;
                if is_ident(tokens.get(i), "as") {
                    if let Some(Token::Ident(alias)) = tokens.get(i + 1) {
                        bound = alias.clone();
                    }
                    i += 2;
                }
                bind(bound, path, out);
                return i;
            }
            Some(Token::Punct('*')) => {
                bind("*".into(), prefix, out);
                return i + 1;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                while i < tokens.len() && !is_punct(tokens.get(i), '}') {
                    i = use_tree(tokens, i, prefix.clone(), inline_depth, out);
                    if is_punct(tokens.get(i), ',') {
                        i += 1;
                    }
                }
                return i + 1;
            }
            _ => return i + 1,
        }
    }
}

fn scan(text: &str) -> FileScan {
    let tokens = tokenize(text);
    let mut scan = FileScan::default();
    // The brace depth at which each open inline module began.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens.get(i);
        if is_punct(token, '#')
            && tokens.get(i + 1..i + 7)
                == Some(&[
                    Token::Punct('['),
                    Token::Ident("cfg".into()),
                    Token::Punct('('),
                    Token::Ident("test".into()),
                    Token::Punct(')'),
                    Token::Punct(']'),
                ])
        {
            let end = skip_item(&tokens, i + 7);
            if let [Token::Ident(word), Token::Ident(name), Token::Punct(';')] =
                tokens.get(i + 7..end).unwrap_or_default()
                && word == "mod"
                && inline.is_empty()
            {
                scan.test_children.push(name.clone());
            }
            i = end;
            continue;
        }
        match token {
            Some(Token::Punct('{')) => depth += 1,
            Some(Token::Punct('}')) => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Some(Token::Ident(word)) if word == "mod" => {
                if let Some(Token::Ident(name)) = tokens.get(i + 1) {
                    if is_punct(tokens.get(i + 2), ';') && inline.is_empty() {
                        scan.children.push(name.clone());
                    } else if is_punct(tokens.get(i + 2), '{') {
                        inline.push(depth);
                        depth += 1;
                        i += 3;
                        continue;
                    }
                }
            }
            Some(Token::Ident(word)) if word == "use" => {
                let mut j = i + 1;
                // `use ::name` is always an outside crate.
                if tokens.get(j) != Some(&Token::PathSep) {
                    while j < tokens.len() && !is_punct(tokens.get(j), ';') {
                        j = use_tree(&tokens, j, Vec::new(), inline.len(), &mut scan.bindings);
                    }
                }
                i = skip_item(&tokens, i);
                continue;
            }
            Some(Token::Ident(first))
                if tokens.get(i + 1) == Some(&Token::PathSep)
                    && !matches!(
                        i.checked_sub(1).and_then(|p| tokens.get(p)),
                        Some(Token::PathSep | Token::Punct('.' | '$'))
                    ) =>
            {
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep) {
                    let Some(Token::Ident(next)) = tokens.get(j + 1) else {
                        break;
                    };
                    segments.push(next.clone());
                    j += 2;
                }
                scan.paths.push(Written {
                    inline_depth: inline.len(),
                    segments,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// A module file: its crate (library or binary) and path in it.
type ModuleId = (Crate, Vec<String>);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Crate {
    Library,
    Binary,
}

struct Tree {
    src: PathBuf,
    modules: BTreeMap<ModuleId, (PathBuf, FileScan)>,
    /// Files of `#[cfg(test)] mod NAME;` modules: declared, but test code (not scanned).
    test_files: BTreeSet<PathBuf>,
}

impl Tree {
    /// Every module reachable by `mod` declarations from `lib.rs` and `main.rs`.
    fn read(src: &Path) -> Tree {
        let mut tree = Tree {
            src: src.to_path_buf(),
            modules: BTreeMap::new(),
            test_files: BTreeSet::new(),
        };
        let mut todo = vec![
            ((Crate::Library, Vec::new()), src.join("lib.rs")),
            ((Crate::Binary, Vec::new()), src.join("main.rs")),
        ];
        while let Some((id, file)) = todo.pop() {
            let Ok(text) = fs::read_to_string(&file) else {
                continue;
            };
            let scan = scan(&text);
            // A `mod.rs`/crate root's children live beside it; `a/b.rs`'s in `a/b/`.
            let is_dir_root = matches!(
                file.file_name().and_then(|n| n.to_str()),
                Some("mod.rs" | "lib.rs" | "main.rs")
            );
            let dir = if is_dir_root {
                file.parent().unwrap().to_path_buf()
            } else {
                file.with_extension("")
            };
            let child_file = |child: &str| {
                let flat = dir.join(format!("{child}.rs"));
                if flat.exists() {
                    flat
                } else {
                    dir.join(child).join("mod.rs")
                }
            };
            for child in &scan.children {
                let mut path = id.1.clone();
                path.push(child.clone());
                todo.push(((id.0, path), child_file(child)));
            }
            tree.test_files
                .extend(scan.test_children.iter().map(|c| child_file(c)));
            tree.modules.insert(id, (file, scan));
        }
        tree
    }

    fn file(&self, id: &ModuleId) -> String {
        self.modules.get(id).map_or_else(
            || format!("{id:?}"),
            |(file, _)| {
                let rel = file.strip_prefix(&self.src).unwrap_or(file);
                format!("src/{}", rel.display())
            },
        )
    }

    /// The module file whose item a path written in `from` names: `from` itself for an item of
    /// its own or of an outside crate (no edge either way).
    fn resolve(&self, from: &ModuleId, written: &Written, hops: usize) -> Option<ModuleId> {
        let (mut krate, mut at) = from.clone();
        let mut segments = written.segments.iter().peekable();
        // Inside inline modules, the first `super`s stay in the file.
        let mut inline_levels = written.inline_depth;
        match segments.peek().map(|s| s.as_str()) {
            Some("crate") => {
                at.clear();
                segments.next();
            }
            Some("btfgen") if krate == Crate::Binary => {
                krate = Crate::Library;
                at.clear();
                segments.next();
            }
            _ => {}
        }
        while segments.peek().map(|s| s.as_str()) == Some("super") {
            segments.next();
            if inline_levels > 0 {
                inline_levels -= 1;
            } else {
                at.pop()?;
            }
        }
        let rest: Vec<&String> = segments.filter(|s| *s != "self").collect();
        self.walk(krate, at, &rest, hops)
    }

    fn children(&self, id: &ModuleId) -> &[String] {
        self.modules
            .get(id)
            .map_or(&[], |(_, scan)| scan.children.as_slice())
    }

    /// From module `at`, follow `rest` into child modules and through `use` bindings
    /// (`use super::errno; errno::set_errno()` names `errno`'s item).
    fn walk(
        &self,
        krate: Crate,
        mut at: Vec<String>,
        rest: &[&String],
        hops: usize,
    ) -> Option<ModuleId> {
        for (i, segment) in rest.iter().enumerate() {
            let here = (krate, at.clone());
            if self.children(&here).contains(segment) {
                at.push((*segment).clone());
                continue;
            }
            let (_, scan) = self.modules.get(&here)?;
            // A name a `use` binds leads on (globs are not followed: they name no item);
            // any other is an item defined here.
            let binding = scan.bindings.iter().find(|b| &b.name == *segment);
            return match binding {
                Some(binding) if hops < 16 => {
                    let mut path = binding.path.clone();
                    path.segments
                        .extend(rest.iter().skip(i + 1).map(|s| (*s).clone()));
                    self.resolve(&here, &path, hops + 1)
                }
                _ => Some(here),
            };
        }
        Some((krate, at))
    }

    /// Every edge between module files, with one path that makes it (for the message).
    fn edges(&self) -> BTreeMap<ModuleId, BTreeMap<ModuleId, String>> {
        let mut edges: BTreeMap<ModuleId, BTreeMap<ModuleId, String>> = BTreeMap::new();
        for (id, (_, scan)) in &self.modules {
            let out = edges.entry(id.clone()).or_default();
            let written = scan.bindings.iter().map(|b| &b.path).chain(&scan.paths);
            for path in written {
                let Some(target) = self.resolve(id, path, 0) else {
                    continue;
                };
                let is_ancestor = target.0 == id.0 && id.1.starts_with(&target.1);
                if !is_ancestor {
                    out.entry(target)
                        .or_insert_with(|| path.segments.join("::"));
                }
            }
        }
        edges
    }

    /// Each cycle of the module graph, as its files in order, the first repeated at the end,
    /// each step with a path that makes it.
    fn cycles(&self) -> Vec<String> {
        let edges = self.edges();
        let mut messages = Vec::new();
        for component in strongly_connected(&edges) {
            let inside: BTreeSet<&ModuleId> = component.iter().collect();
            let Some(start) = component.iter().min() else {
                continue;
            };
            // A shortest way back to `start` within the component (breadth-first).
            let mut came_from: BTreeMap<&ModuleId, &ModuleId> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut last = None;
            while let Some(node) = queue.pop_front() {
                for next in edges[node].keys().filter(|n| inside.contains(n)) {
                    if next == start {
                        last = Some(node);
                        queue.clear();
                        break;
                    }
                    if !came_from.contains_key(next) {
                        came_from.insert(next, node);
                        queue.push_back(next);
                    }
                }
            }
            let mut back = Vec::new();
            let mut node = last.unwrap_or(start);
            while node != start {
                back.push(node);
                node = came_from[node];
            }
            let mut ring = vec![start];
            ring.extend(back.into_iter().rev());
            ring.push(start);
            let mut text = self.file(start);
            for pair in ring.windows(2) {
                let via = &edges[pair[0]][pair[1]];
                text.push_str(&format!(" → ({via}) {}", self.file(pair[1])));
            }
            let others: Vec<String> = component
                .iter()
                .filter(|m| !ring.contains(m))
                .map(|m| self.file(m))
                .collect();
            if !others.is_empty() {
                text.push_str(&format!(" (in one circle with {})", others.join(", ")));
            }
            messages.push(text);
        }
        messages
    }
}

/// Tarjan's strongly connected components with more than one node.
fn strongly_connected(
    edges: &BTreeMap<ModuleId, BTreeMap<ModuleId, String>>,
) -> Vec<Vec<ModuleId>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModuleId, BTreeMap<ModuleId, String>>,
        index: BTreeMap<&'a ModuleId, usize>,
        low: BTreeMap<&'a ModuleId, usize>,
        stack: Vec<&'a ModuleId>,
        components: Vec<Vec<ModuleId>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a ModuleId) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        let edges = state.edges;
        for next in edges.get(node).into_iter().flat_map(|e| e.keys()) {
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.stack.contains(&next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.reverse();
                state.components.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        components: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.components
}

fn source_tree() -> Tree {
    Tree::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn module_graph_has_no_cycle() {
    let cycles = source_tree().cycles();
    assert!(
        cycles.is_empty(),
        "import cycles between modules (each must point to a lower floor):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn every_source_file_is_scanned() {
    let tree = source_tree();
    let scanned: BTreeSet<PathBuf> = tree.modules.values().map(|(f, _)| f.clone()).collect();
    let mut dirs = vec![tree.src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                assert!(
                    scanned.contains(&path) || tree.test_files.contains(&path),
                    "{} is no module",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn edges_the_real_tree_must_have() {
    let tree = source_tree();
    let edges = tree.edges();
    let edge = |from: &str, to: &str| {
        edges
            .iter()
            .any(|(a, out)| tree.file(a) == from && out.keys().any(|b| tree.file(b) == to))
    };
    // Through `core/mod.rs`'s re-export `pub use candidates::{.., Targets}`.
    assert!(edge("src/minimize/mod.rs", "src/core/candidates.rs"));
    assert!(edge("src/minimize/mod.rs", "src/core/relocate.rs"));
    // The binary's `btfgen::core::relocate::local_type_names`.
    assert!(edge("src/cli/mod.rs", "src/core/relocate.rs"));
    // `crate::Error` is `error.rs`, re-exported by `lib.rs`.
    assert!(edge("src/btf/mod.rs", "src/error.rs"));
    assert!(edge("src/log.rs", "src/core/events.rs"));
    // A file's own folder root is no floor: `super::Btf` from `btf/parse.rs`.
    assert!(!edge("src/btf/parse.rs", "src/btf/mod.rs"));
}

/// The main job's library path (recording relocations, emitting) and `relocate` never reach the
/// load-verdict analysis: each relocation's callers come from the call graph alone
/// (`core::programs`), and the verdicts are a separate pass that only the report and the
/// summary line ask for.
#[test]
fn the_main_job_does_no_value_analysis() {
    let tree = source_tree();
    let edges = tree.edges();
    let reaches_verdict = |from: &str| {
        let start = edges.keys().find(|id| tree.file(id) == from).unwrap();
        let mut seen = BTreeSet::from([start.clone()]);
        let mut work = vec![start.clone()];
        while let Some(id) = work.pop() {
            if tree.file(&id).starts_with("src/core/verdict/") {
                return Some(tree.file(&id));
            }
            for next in edges.get(&id).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(next.clone()) {
                    work.push(next.clone());
                }
            }
        }
        None
    };
    for file in [
        "src/minimize/mod.rs",
        "src/cli/relocate.rs",
        "src/core/programs.rs",
    ] {
        assert_eq!(
            reaches_verdict(file),
            None,
            "{file} reaches the verdict pass"
        );
    }
    // The check can fail: the report does judge programs.
    assert!(reaches_verdict("src/cli/report.rs").is_some());
}

/// `dwarf/` turns DWARF into BTF with `btf/`'s writer; nothing that consumes BTF (`btf/`,
/// `object/`, `core/`, `minimize/`) knows where it came from.
#[test]
fn dwarf_sits_beside_btf() {
    let tree = source_tree();
    let edges = tree.edges();
    let mut dwarf_uses_writer = false;
    for (from, out) in &edges {
        let from = tree.file(from);
        for to in out.keys().map(|to| tree.file(to)) {
            if to.starts_with("src/dwarf/") && !from.starts_with("src/dwarf/") {
                assert!(
                    !["src/btf/", "src/object/", "src/core/", "src/minimize/"]
                        .iter()
                        .any(|floor| from.starts_with(floor)),
                    "{from} knows about DWARF ({to})"
                );
            }
            dwarf_uses_writer |= from.starts_with("src/dwarf/") && to == "src/btf/write.rs";
        }
    }
    assert!(dwarf_uses_writer, "dwarf/ writes its BTF with btf/write.rs");
}

/// A made-up tree of `(file, text)`, read from a fresh directory (removed again: the tree
/// keeps what it read).
fn made_up(name: &str, files: &[(&str, &str)]) -> Tree {
    let dir = std::env::temp_dir().join(format!("module-layers-{}-{name}", std::process::id()));
    let root = dir.join("src");
    for (file, text) in files {
        let path = root.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let tree = Tree::read(&root);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(tree.modules.len(), files.len());
    tree
}

#[test]
fn finds_a_cycle_through_a_re_export() {
    let tree = made_up(
        "reexport",
        &[
            ("lib.rs", "mod low; mod high; pub use low::Thing;"),
            // "// crate::high" and "crate::high" in a string are no paths.
            (
                "low.rs",
                "pub struct Thing; // crate::high\nfn f() { let _ = \"crate::high\"; }",
            ),
            ("high.rs", "pub fn g(_: crate::Thing) {}"),
        ],
    );
    assert!(tree.cycles().is_empty());
    let tree = made_up(
        "reexport-cycle",
        &[
            ("lib.rs", "mod low; mod high; pub use low::Thing;"),
            (
                "low.rs",
                "pub struct Thing; fn f() { crate::high::g(Thing) }",
            ),
            (
                "high.rs",
                "use crate::{Thing as Alias};\npub fn g(_: Alias) {}",
            ),
        ],
    );
    assert_eq!(
        tree.cycles(),
        ["src/high.rs → (crate::Thing) src/low.rs → (crate::high::g) src/high.rs"]
    );
}

#[test]
fn a_folder_root_is_no_floor_but_its_siblings_are() {
    let files = [
        ("lib.rs", "pub mod folder;"),
        (
            "folder/mod.rs",
            "mod a; mod b; pub struct Shared; pub use a::A; fn f(_: b::B) {}",
        ),
        ("folder/a.rs", "use super::Shared; pub struct A(Shared);"),
        ("folder/b.rs", "pub struct B(super::Shared);"),
    ];
    assert!(made_up("folder", &files).cycles().is_empty());
    let mut files = files.to_vec();
    files[3] = ("folder/b.rs", "pub struct B(super::A);");
    files[2] = (
        "folder/a.rs",
        "pub struct A; #[cfg(test)] mod t { use super::super::b::B; }",
    );
    assert!(made_up("folder-test", &files).cycles().is_empty());
    files[2] = (
        "folder/a.rs",
        "pub struct A; fn f() { let _ = super::b::B(A); }",
    );
    assert_eq!(made_up("folder-cycle", &files).cycles().len(), 1);
    // Through a name a `use` binds.
    files[2] = (
        "folder/a.rs",
        "use super::b; pub struct A; fn f() { b::B(A); }",
    );
    assert_eq!(made_up("folder-cycle-bound", &files).cycles().len(), 1);
}
