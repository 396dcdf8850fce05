//! One module per `lro` command.

pub mod bench;
pub mod component;
pub mod demo;
pub mod extract;
pub mod offload;
pub mod proxy;
pub mod query;
pub mod recipes;
pub mod sample;
pub mod sweep;
