// SPDX-License-Identifier: GPL-2.0

//! Regression: every file of the committed fuzz seed corpus
//! (fuzz/seeds/parse/) and any saved crash input (fuzz/regressions/, if
//! present) runs through the fuzz harness and its oracles.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::PathBuf;

#[test]
fn seed_corpus_through_the_harness() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let (mut n, mut accepted) = (0, 0);
    for sub in ["seeds/parse", "regressions"] {
        let Ok(dir) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        for e in dir {
            let path = e.unwrap().path();
            if path.is_file() {
                if harness::run(&std::fs::read(&path).unwrap()) {
                    accepted += 1;
                }
                n += 1;
            }
        }
    }
    assert!(n >= 20, "only {n} corpus files");
    // The seeds are valid packets (they exist to start the fuzzer on the
    // accepting path): all of them parse.
    assert_eq!(accepted, n, "{accepted} of {n} seeds accepted");
}
