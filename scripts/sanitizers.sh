#!/usr/bin/env bash
# The library's unit tests (the kernels: lane kernels at every SIMD level the CPU has,
# the strided row kernels, the buffer cache, the thread runner) under AddressSanitizer,
# and the parts Miri can run (the engine, the tensor views and layouts, the portable
# kernels on small sizes) under Miri. Both need the nightly toolchain with the rust-src
# and miri components; docs/reliability.md records what ran and where.
#
#   scripts/sanitizers.sh asan   # about 15 minutes on 2 cores (std rebuilt with ASan)
#   scripts/sanitizers.sh miri   # about 10 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(rustc -vV | sed -n 's/^host: //p')
what=${1:-all}

if [[ $what == asan || $what == all ]]; then
    # every SIMD level the CPU has: AVX-512 where present, AVX2, and the portable path
    levels=(portable avx2)
    grep -qw avx512f /proc/cpuinfo 2>/dev/null && levels+=(avx512)
    for level in "${levels[@]}"; do
        echo "== AddressSanitizer, COTANGENT_SIMD=$level"
        COTANGENT_SIMD=$level RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
            ASAN_OPTIONS="detect_leaks=1" \
            cargo +nightly test -Zbuild-std --target "$target" --release -p cotangent --lib \
            --target-dir target/asan
    done
fi

if [[ $what == miri || $what == all ]]; then
    echo "== Miri (portable kernels; no SIMD level above the scalar one)"
    # the engine, the tensor views and shapes, the buffer cache and the thread runner,
    # and the portable strided kernels; the lane kernels' SIMD intrinsics and faer's
    # GEMM are out of Miri's reach or too slow under it
    # Tree Borrows: rayon's crossbeam-epoch breaks Stacked Borrows' rules (crossbeam's
    # issue 545; crossbeam's own Miri CI uses Tree Borrows), which stops the run inside
    # rayon before our code; deterministic floats: Miri otherwise adds a random error of
    # an ulp or so to exp and the like, which the exact comparisons of the autograd
    # tests (a kernel's exp against std's) would take for a wrong gradient; ignore
    # leaks: rayon's global pool and the runner's helpers live as long as the process
    # and are never joined (memory leaks are the ASan run's, with detect_leaks=1)
    COTANGENT_SIMD=portable MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows \
        -Zmiri-deterministic-floats -Zmiri-ignore-leaks" \
        cargo +nightly miri test -p cotangent --lib --target-dir target/miri -- \
        autograd:: layout:: shape:: tensor:: backend::cpu::pool backend::cpu::par \
        backend::cpu::strided
fi
