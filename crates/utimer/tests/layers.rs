//! The layer check: no module of `crates/utimer/src` imports one from a
//! higher layer, or from a sibling that stands beside it rather than with
//! it (the wheel timer and the hrtimer).
//!
//! [`LAYERS`] is the one place the order is written; `docs/architecture.md`
//! draws it. A module's test code (a `tests.rs`/`testing.rs` file, a
//! `tests/` folder, or anything after its first `#[cfg(test)]` or
//! `#[cfg(all(test` line) may use any layer, and so may doc comments.

#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bottom up. Each layer is a list of groups; a module may import its own
/// group and any group of a lower layer, nothing else.
const LAYERS: &[&[&[&str]]] = &[
    &[&["error", "sync", "time"]],
    &[&["wheel"]],
    // The wheel timer (`timer_list/`: entry, bases, timer API) beside the
    // hrtimer.
    &[&["timer_list"], &["hrtimer"]],
    &[&["migration"]],
    &[&["nohz"]],
    &[&["system"]],
    // Threads of utimer's own, and the simulator, on top of the facade.
    &[&["runtime"], &["sim"]],
    &[&["posix"]],
];

/// (layer, group) of a top-level module.
fn place(module: &str) -> Option<(usize, usize)> {
    LAYERS.iter().enumerate().find_map(|(l, groups)| {
        groups
            .iter()
            .position(|g| g.contains(&module))
            .map(|g| (l, g))
    })
}

fn may_import(from: &str, to: &str) -> bool {
    match (place(from), place(to)) {
        (Some((lf, gf)), Some((lt, gt))) => lt < lf || (lt == lf && gt == gf),
        _ => false,
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, but test-only ones.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && name != "testing.rs" {
            out.push(path);
        }
    }
}

/// The type or module names that the crate root re-exports, by the
/// module they come from (`pub use system::{TimerSystem, ..}`).
fn reexports() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut map = BTreeMap::new();
    let mut rest = lib.as_str();
    while let Some(i) = rest.find("pub use ") {
        rest = &rest[i + 8..];
        let end = rest.find(';').unwrap();
        let item = &rest[..end];
        let (module, names) = item.split_once("::").unwrap();
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.split("::").last().unwrap().trim();
            if !name.is_empty() {
                map.insert(name.to_owned(), module.trim().to_owned());
            }
        }
        rest = &rest[end..];
    }
    map
}

/// The first path segments after each `crate::` in `code`: `a` for
/// `crate::a::b`, `a` and `B` for `crate::{a::b, B}`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + 7..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `utimer_crate::`, not ours
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        out.push(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(first_segment(&item));
        } else {
            out.push(first_segment(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn first_segment(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The code of `text` that the check covers: up to the first test-only
/// line, without comments.
fn checked_code(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") || t.starts_with("#[cfg(all(test") {
            break;
        }
        let line = line.split("//").next().unwrap();
        code.push_str(line);
        code.push('\n');
    }
    code
}

#[test]
fn no_module_imports_from_above() {
    let root = src();
    let names = reexports();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in files {
        let rel = file.strip_prefix(&root).unwrap();
        let first = rel.components().next().unwrap().as_os_str();
        let module = first.to_str().unwrap().trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        assert!(
            place(module).is_some(),
            "{module} (src/{}) has no layer: add it to LAYERS",
            rel.display()
        );
        checked += 1;
        let code = checked_code(&std::fs::read_to_string(&file).unwrap());
        for seg in crate_paths(&code) {
            let target = match names.get(&seg) {
                Some(m) => m.clone(),
                None => seg.clone(),
            };
            if target == module || place(&target).is_none() && seg.starts_with(char::is_uppercase) {
                continue;
            }
            if !may_import(module, &target) {
                violations.push(format!("src/{}: crate::{seg} ({target})", rel.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} files found");
    assert!(
        violations.is_empty(),
        "imports from a higher layer or a sibling (LAYERS in tests/layers.rs):\n{}",
        violations.join("\n")
    );
}

/// The check itself: it finds what it must.
#[test]
fn the_check_sees_imports() {
    assert_eq!(
        crate_paths("use crate::timer_list::base::{A, B};\nuse crate::{posix::X, TimerError};"),
        ["timer_list", "posix", "TimerError"]
    );
    assert_eq!(crate_paths("utimer_crate::x"), Vec::<String>::new());
    assert!(may_import("system", "nohz"));
    assert!(may_import("timer_list", "timer_list"), "one group");
    assert!(!may_import("system", "posix"), "upward");
    assert!(!may_import("hrtimer", "timer_list"), "siblings stand apart");
    assert!(!may_import("sync", "wheel"));
    assert_eq!(
        reexports().get("TimerSystem").map(String::as_str),
        Some("system")
    );
    assert!(checked_code("use crate::a;\n#[cfg(test)]\nuse crate::b;").contains("crate::a"));
    assert!(!checked_code("use crate::a;\n#[cfg(test)]\nuse crate::b;").contains("crate::b"));
    assert!(!checked_code("// see crate::posix\n").contains("posix"));
}
