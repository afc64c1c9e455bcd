// SPDX-License-Identifier: GPL-2.0

//! Fuzz target `parse`: parse-and-validate over arbitrary frames, with the
//! oracles of `harness.rs` (shared with the corpus regression test).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| {
    let _accepted = harness::run(data);
});
