//! No circle among the modules of any crate of the workspace (`crates/*/src`).
//!
//! A file's module uses another when its code names a path into it (`use crate::a::b`,
//! `super::c::D`, `self::e` in a `use` or anywhere in the code; paths inside macro calls
//! are not parsed and so not seen). A path names the deepest module file it reaches. A
//! module and its ancestors are not an edge either way: a parent declares its children
//! and re-exports from them, and a child sees its parent's items; that nesting is the
//! language's, not a circle a reader has to untangle. Any other use is an edge between
//! the two children of the modules' nearest common ancestor that hold them, so that
//! `store/read.rs` using `tier/state.rs` makes `store -> tier`, and `tier/a.rs` using
//! `tier/b.rs` makes `tier::a -> tier::b`: a circle is found at the level of the folders
//! (or files) it joins. The test in the Python side (`tests/test_import_graph.py`) does
//! the same for `python/rmq` and `bench`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module's path below its crate's root (`[]` is the root).
type Module = Vec<String>;
/// (from, to) -> where the first use making that edge stands.
type Edges = BTreeMap<(Module, Module), String>;

fn workspace_crates() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found: Vec<PathBuf> = std::fs::read_dir(crates)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("src"))
        .filter(|src| src.join("lib.rs").is_file())
        .collect();
    found.sort();
    found
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// The module a file under `src` is: `lib.rs` the root, `a/mod.rs` and `a.rs` `a`.
fn file_module(src: &Path, file: &Path) -> Module {
    let mut parts: Module = file
        .strip_prefix(src)
        .unwrap()
        .with_extension("")
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The crate-relative paths a file names, each as the module it is named from (the
/// file's module and any inline modules around the path) and its segments.
#[derive(Default)]
struct NamedPaths {
    inline: Vec<String>,
    found: Vec<(Vec<String>, Vec<String>)>,
}

impl NamedPaths {
    fn note(&mut self, segments: Vec<String>) {
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super" | "self")
        ) {
            self.found.push((self.inline.clone(), segments));
        }
    }

    fn use_tree(&mut self, prefix: &[String], tree: &syn::UseTree) {
        let with = |name: String| [prefix, &[name]].concat();
        match tree {
            syn::UseTree::Path(path) => self.use_tree(&with(path.ident.to_string()), &path.tree),
            syn::UseTree::Name(name) => self.note(with(name.ident.to_string())),
            syn::UseTree::Rename(rename) => self.note(with(rename.ident.to_string())),
            syn::UseTree::Glob(_) => self.note(prefix.to_vec()),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for NamedPaths {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.inline.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.inline.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&[], &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.note(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

/// The module file `segments` reach, named from module `from`; None past the crate root.
fn resolve(from: &[String], segments: &[String], files: &BTreeSet<Module>) -> Option<Module> {
    let mut base: Module = from.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().is_some_and(|segment| segment == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    let mut target = base;
    target.extend(rest.iter().cloned());
    while !files.contains(&target) {
        target.pop()?;
    }
    Some(target)
}

fn module_edges(src: &Path) -> Edges {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    let files: BTreeSet<Module> = paths.iter().map(|file| file_module(src, file)).collect();
    let mut edges = Edges::new();
    for file in &paths {
        let module = file_module(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|error| panic!("{file:?}: {error}"));
        let mut named = NamedPaths::default();
        named.visit_file(&parsed);
        for (inline, segments) in named.found {
            let from = [module.clone(), inline].concat();
            let Some(target) = resolve(&from, &segments, &files) else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue;
            }
            let edge = (module[..=common].to_vec(), target[..=common].to_vec());
            edges
                .entry(edge)
                .or_insert_with(|| format!("{} names {}", file.display(), segments.join("::")));
        }
    }
    edges
}

/// The groups of two or more modules that reach each other.
fn circles(edges: &Edges) -> Vec<BTreeSet<Module>> {
    let mut next: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    let reachable = |start: &Module| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(module) = stack.pop() {
            for &after in next.get(module).into_iter().flatten() {
                if seen.insert(after.clone()) {
                    stack.push(after);
                }
            }
        }
        seen
    };
    let mut found: Vec<BTreeSet<Module>> = Vec::new();
    for module in next.keys() {
        if found.iter().any(|circle| circle.contains(*module)) {
            continue;
        }
        let from_here = reachable(module);
        let circle: BTreeSet<Module> = from_here
            .iter()
            .filter(|other| reachable(other).contains(*module))
            .cloned()
            .collect();
        if circle.len() > 1 {
            found.push(circle);
        }
    }
    found
}

#[test]
fn no_crate_has_a_circle_of_modules() {
    let mut report = String::new();
    let crates = workspace_crates();
    assert!(crates.len() >= 4, "found only {crates:?}");
    for src in crates {
        let edges = module_edges(&src);
        for circle in circles(&edges) {
            report.push_str(&format!("{}: a circle of modules:\n", src.display()));
            for ((from, to), place) in &edges {
                if circle.contains(from) && circle.contains(to) {
                    let (from, to) = (from.join("::"), to.join("::"));
                    report.push_str(&format!("  {from} -> {to}: {place}\n"));
                }
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn the_graph_sees_uses_at_every_level() {
    let files: BTreeSet<Module> = [vec![], vec!["a".into()], vec!["a".into(), "b".into()]]
        .into_iter()
        .collect();
    let path = |text: &str| text.split("::").map(String::from).collect::<Vec<_>>();
    let a_b = vec!["a".to_string(), "b".to_string()];
    assert_eq!(
        resolve(&a_b, &path("super::b::X"), &files),
        Some(a_b.clone())
    );
    assert_eq!(
        resolve(&[], &path("crate::a::c::Y"), &files),
        Some(vec!["a".into()])
    );
    assert_eq!(resolve(&[], &path("super::a"), &files), None);
    let mut edges = Edges::new();
    edges.insert((path("a"), path("b")), String::new());
    assert!(circles(&edges).is_empty());
    edges.insert((path("b"), path("c")), String::new());
    edges.insert((path("c"), path("a")), String::new());
    assert_eq!(
        circles(&edges),
        vec![[path("a"), path("b"), path("c")].into()]
    );
}
