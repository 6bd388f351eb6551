//! [`Error`]: `tokio::time::error::Error`, the timer's error, with its
//! constructors, predicates and messages. Exported as `error::Error`.

use std::fmt;

/// An error of the timer: `tokio::time::error::Error`, with its three
/// kinds and their messages.
///
/// * [`shutdown`](Error::shutdown): the timer system is gone, and the
///   operation can never succeed (permanent).
/// * [`at_capacity`](Error::at_capacity): the timer cannot take another
///   entry now (transient: shed load and retry).
/// * [`invalid`](Error::invalid): the timer was misconfigured (a
///   duration beyond the maximum).
///
/// This crate's futures panic where tokio's would (see the crate docs'
/// shutdown rules); the type is here so that code naming
/// `tokio::time::error::Error` compiles against `utimer_async::error::Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error(Kind);

/// Which error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shutdown,
    AtCapacity,
    Invalid,
}

impl Error {
    /// An error saying the timer is shut down
    /// (`tokio::time::error::Error::shutdown`).
    pub fn shutdown() -> Error {
        Error(Kind::Shutdown)
    }

    /// Whether the timer was shut down
    /// (`tokio::time::error::Error::is_shutdown`).
    pub fn is_shutdown(&self) -> bool {
        self.0 == Kind::Shutdown
    }

    /// An error saying the timer is at capacity
    /// (`tokio::time::error::Error::at_capacity`).
    pub fn at_capacity() -> Error {
        Error(Kind::AtCapacity)
    }

    /// Whether the timer was at capacity
    /// (`tokio::time::error::Error::is_at_capacity`).
    pub fn is_at_capacity(&self) -> bool {
        self.0 == Kind::AtCapacity
    }

    /// An error saying the timer is misconfigured
    /// (`tokio::time::error::Error::invalid`).
    pub fn invalid() -> Error {
        Error(Kind::Invalid)
    }

    /// Whether the timer was misconfigured
    /// (`tokio::time::error::Error::is_invalid`).
    pub fn is_invalid(&self) -> bool {
        self.0 == Kind::Invalid
    }
}

impl fmt::Display for Error {
    /// tokio's messages, word for word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Kind::Shutdown => {
                "the timer is shutdown, must be called from the context of Tokio runtime"
            }
            Kind::AtCapacity => "timer is at capacity and cannot create a new entry",
            Kind::Invalid => "timer duration exceeds maximum duration",
        })
    }
}

impl std::error::Error for Error {}
