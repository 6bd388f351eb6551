//! The benchmark cases (being written).

use super::Runner;

pub fn run_all(_r: &mut Runner) {}
