//! The parts of the `lro` command that its tests and benchmark drive in process: the proxy.

pub mod proxy;
