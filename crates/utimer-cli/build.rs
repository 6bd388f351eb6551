//! Embeds the git revision the tool is built from as
//! `UTIMER_GIT_REVISION`, for `utimer --version` and the JSON file of
//! `utimer bench`: the full commit hash when the sources are a git
//! checkout and `git` runs, else `unknown` (a build from a source archive
//! never fails for it). `UTIMER_GIT_REVISION` in the build's environment
//! takes precedence, for packagers who know the revision. Uncommitted
//! changes are not marked.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=UTIMER_GIT_REVISION");
    println!("cargo:rerun-if-env-changed=GIT_DIR");
    let revision = match std::env::var("UTIMER_GIT_REVISION") {
        Ok(r) if !r.trim().is_empty() => r.trim().to_string(),
        _ => git_revision().unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=UTIMER_GIT_REVISION={revision}");
}

/// `git rev-parse HEAD` in the crate's directory; also asks Cargo to run
/// this script again when HEAD moves (a commit, a checkout).
fn git_revision() -> Option<String> {
    let rev = git(&["rev-parse", "HEAD"])?;
    if rev.len() < 7 || !rev.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // HEAD names a branch (or a commit); the branch's ref lives in the
    // common directory (a worktree's own directory holds only HEAD and its
    // log), loose or packed. HEAD's log changes with every commit,
    // checkout or reset, also when the branch's ref is packed.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        rerun_if_changed(&dir.join("HEAD"));
        rerun_if_changed(&dir.join("logs").join("HEAD"));
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        let common = absolute(PathBuf::from(common));
        rerun_if_changed(&common.join("packed-refs"));
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            rerun_if_changed(&common.join(head_ref));
        }
    }
    Some(rev)
}

/// Cargo reruns the script when `path` changes; a missing path is left
/// out (Cargo would rerun the script on every build).
fn rerun_if_changed(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `p` against the crate's directory, where `git` ran.
fn absolute(p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        p
    } else {
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join(p)
    }
}

/// The trimmed stdout of a successful `git ARGS` run in the crate's
/// directory.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}
