//! The parts of the `lro` command that its tests and benchmark drive in process: the proxy, and
//! the sample memory server behind `lro sample --serve`.

pub mod proxy;
pub mod sample_server;
