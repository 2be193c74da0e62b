//! The cloudcache server: a user-space daemon that gives each VM disk an NBD
//! export transparently cached on the host's flash. It carries out the
//! decisions of the `engine` crate (the same code the simulator runs)
//! against a flash store with crash-consistent metadata and a backend (a
//! local file or a remote NBD export), and runs the `demand` controller in
//! wall-clock windows to share the flash among volumes.

pub mod admin;
pub mod backend;
pub mod config;
pub mod core;
mod held;
pub mod lanes;
pub mod nbd;
pub mod server;
pub mod store;
pub mod volume;
pub mod workers;
