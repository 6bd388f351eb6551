//! utimer: kernel-grade timers for user space.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod wheel;
