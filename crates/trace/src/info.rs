//! PLACEHOLDER: trace info report.
