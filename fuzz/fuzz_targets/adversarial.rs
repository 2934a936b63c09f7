//! The structure-aware target: fuzz bytes read as choices of an op of the runner, its
//! attributes and adversarial tensors (NaN, infinities, subnormals, extremes, empty and
//! singular ones), run forward, with cotangents and with tangents
//! (`cotangent_parity::fuzz::adversarial`); every answer must pass the oracle (a result
//! or a named error, never an internal error), and nothing may panic or run away.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = cotangent_parity::fuzz::adversarial(data) {
        panic!("{e}");
    }
});
