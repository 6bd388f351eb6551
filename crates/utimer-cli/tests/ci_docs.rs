//! The docs name what exists. `docs/development.md` lists every step of
//! `.ci/run`, in its order, by the command the step runs, so the page a
//! contributor reads to learn what CI does cannot drift from what it does
//! (as `utimer`'s `tests/layers.rs` keeps the layer rule and the code
//! together); and every file under `crates/` that the README or a `docs/`
//! page names exists.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Collapses every run of whitespace into one space: a command may wrap
/// across lines in the Markdown list.
fn normalized(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The command of each `step NAME; COMMAND` line of `.ci/run`.
fn ci_commands(run: &str) -> Vec<(String, String)> {
    run.lines()
        .filter_map(|l| l.trim().strip_prefix("step "))
        .map(|rest| {
            let (name, cmd) = rest
                .split_once(';')
                .unwrap_or_else(|| panic!(".ci/run: a step without a command: {rest}"));
            (name.trim().to_string(), normalized(cmd))
        })
        .collect()
}

/// The "CI, in order" section of `docs/development.md`.
fn ci_section(doc: &str) -> String {
    let start = doc
        .find("## CI, in order")
        .expect("docs/development.md has a \"CI, in order\" section");
    let rest = &doc[start + 2..];
    let end = rest.find("\n## ").map_or(rest.len(), |i| i + 1);
    normalized(&rest[..end])
}

/// Where each command is first named (as `` `COMMAND` ``) in `section`, or
/// the steps that are missing.
fn positions(section: &str, steps: &[(String, String)]) -> Result<Vec<usize>, Vec<String>> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for (name, cmd) in steps {
        match section.find(&format!("`{cmd}`")) {
            Some(i) => found.push(i),
            None => missing.push(format!("{name}: `{cmd}`")),
        }
    }
    if missing.is_empty() {
        Ok(found)
    } else {
        Err(missing)
    }
}

#[test]
fn development_md_lists_every_ci_step_in_order() {
    let run = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let doc =
        std::fs::read_to_string(root().join("docs/development.md")).expect("docs/development.md");
    let steps = ci_commands(&run);
    assert!(
        steps.len() >= 10,
        ".ci/run: only {} steps parsed",
        steps.len()
    );
    let section = ci_section(&doc);
    let at = positions(&section, &steps).unwrap_or_else(|missing| {
        panic!(
            "docs/development.md (\"CI, in order\") does not name these steps of .ci/run:\n  {}",
            missing.join("\n  ")
        )
    });
    for (w, pair) in at.windows(2).enumerate() {
        assert!(
            pair[0] < pair[1],
            "docs/development.md lists `{}` before `{}`; .ci/run runs them the other way round",
            steps[w + 1].1,
            steps[w].1
        );
    }
}

#[test]
fn a_missing_or_misordered_step_is_reported() {
    let run = "step a;  ci/a.sh 1\nstep b; cargo test -p x\n  --test y\nstep c; ci/c.sh\n";
    let steps = ci_commands(run);
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[1].1, "cargo test -p x");
    let doc =
        "# x\n## CI, in order\n- `ci/a.sh 1`: a\n- `cargo test -p\n  x`: b\n## Next\n- `ci/c.sh`\n";
    let section = ci_section(doc);
    assert_eq!(
        positions(&section, &steps),
        Err(vec!["c: `ci/c.sh`".to_string()])
    );
    let swapped = "## CI, in order\n- `cargo test -p x`\n- `ci/a.sh 1`\n- `ci/c.sh`\n";
    let at = positions(&ci_section(swapped), &steps).expect("all named");
    assert!(at[0] > at[1], "the order is seen");
}

/// Every path of a file in `crates/` that the README or a `docs/` page
/// names (a word such as `crates/utimer/src/wheel/mod.rs`) exists: a
/// moved or renamed file cannot leave a page pointing at nothing.
#[test]
fn every_crate_file_the_docs_name_exists() {
    let mut pages = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let p = e.expect("docs/ entry").path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a page");
        for path in crate_paths(&text) {
            if !root().join(&path).exists() {
                missing.push(format!("{}: {path}", page.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but absent:\n  {}",
        missing.join("\n  ")
    );
}

/// The words of `text` that are paths of files under `crates/` (with an
/// extension), cut at the first character a path does not contain.
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crates/") {
        let word: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "/_-.".contains(*c))
            .collect();
        let word = word.trim_end_matches('.');
        let file = word.rsplit('/').next().unwrap_or("");
        if file.contains('.') {
            out.push(word.to_string());
        }
        rest = &rest[i + "crates/".len()..];
    }
    out
}

#[test]
fn crate_paths_are_cut_where_a_path_ends() {
    let text = "see `crates/a/src/b.rs`, crates/c/d.md. and crates/e/ (a folder)";
    assert_eq!(crate_paths(text), ["crates/a/src/b.rs", "crates/c/d.md"]);
}
