//! PLACEHOLDER: synthetic workload generator.
