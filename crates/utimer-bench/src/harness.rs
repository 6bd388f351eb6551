//! The machinery every group uses and none measures: the counting
//! allocator, the run's metadata, stdout and the progress line, the tables
//! and the JSON file, the SVG charts and the results page.

pub mod alloc;
pub(crate) mod markdown;
pub mod meta;
pub(crate) mod out;
pub mod plot;
pub(crate) mod progress;
pub(crate) mod report;
