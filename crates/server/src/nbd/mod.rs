//! The NBD protocol: wire constants, the server side that clients such as
//! qemu, nbdcopy and fio speak to, and the client side used to reach a
//! remote backend.

pub mod client;
pub mod handshake;
pub mod proto;
pub mod stream;
pub mod transmission;
pub mod uri;
