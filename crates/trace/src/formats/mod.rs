//! One module per trace format. Text formats implement
//! [`crate::text::LineParser`] and a `sniff(lines)` detector; binary formats
//! implement [`crate::RequestSource`] and a `sniff(head_bytes)` detector.

pub mod alibaba;
pub mod blkparse;
pub mod cct;
pub mod csv;
pub mod fio;
pub mod fiu;
pub mod msr;
pub mod systor;
pub mod tencent;
pub mod vscsi;
