//! Marks the build host's instruction sets for the tests (`cfg(cotangent_test_avx512)`):
//! a kernel test that needs AVX-512F is compiled as ignored, with a reason, on a host
//! without it, so that the test output shows it did not run instead of a silent pass. The
//! library itself never reads these flags: it detects the CPU at run time.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(cotangent_test_avx512)");
    #[cfg(target_arch = "x86_64")]
    {
        let same_arch = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
        if same_arch && std::arch::is_x86_feature_detected!("avx512f") {
            println!("cargo::rustc-cfg=cotangent_test_avx512");
        }
    }
}
