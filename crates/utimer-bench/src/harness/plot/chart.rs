//! The declaration of what to chart of a case, made where the case is
//! registered with the [`Runner`](crate::Runner) and carried in each of its
//! [`Record`](crate::Record)s.

/// What `--plot` draws of a case, declared where the case is registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    /// A horizontal bar per row.
    Bars,
    /// The bars, and a line per row against the N in the case's name
    /// across the group's cases of the same family.
    Scaling,
    /// p50 and p99 per implementation, from rows `NAME p50`, `NAME p99`
    /// (rows of other statistics are left out).
    Percentiles,
    /// Shares in % of cases `WORKLOAD/SHARE`: one chart per workload, a
    /// series per row and one per row's `reference` numbers.
    Shares(Shares),
}

/// The words of a [`Chart::Shares`] chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shares {
    /// What is shared out, in the title: `re-arms of pending timers`.
    pub of: &'static str,
    /// The value axis: `% of re-arms`.
    pub axis: &'static str,
    /// Whose numbers the rows' references are, in the legend:
    /// `Linux patch` gives the series `before (Linux patch)`.
    pub reference: &'static str,
}
