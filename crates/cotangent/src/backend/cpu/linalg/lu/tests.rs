//! The AVX-512 kernels of [`super::wide`] against the portable lane kernels, through the
//! LU's entry points: contiguous batches of 4 x 4 matrices (the wide kernels, where the
//! CPU has AVX-512) give the same bits as the same matrices spaced apart in storage (the
//! lane kernels).

use super::super::lanes::LANES;
use super::{lu_det, lu_factor_solve, lu_inv, lu_inv_t, lu_solve_saved};
use crate::layout::Layout;
use crate::shape::Shape;

/// The groups the wide kernels of [`super::wide`] have written so far, and whether they run
/// here at all (x86-64 with AVX-512). Other tests may add to the count meanwhile, so
/// a test checks that it grew by at least its own share.
fn wide_groups() -> (usize, bool) {
    #[cfg(target_arch = "x86_64")]
    {
        let n = super::wide::WRITTEN.load(std::sync::atomic::Ordering::Relaxed);
        (n, crate::backend::cpu::wide::avx512())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0, false)
    }
}

/// `len` matrices of `size` entries for the wide kernels' tests, from `next` (uniform
/// in `[0, 1)`): entries in `[-1, 1)`, every fifth matrix small integers (ties in the
/// pivot search), and past 20 matrices a singular one (9), one with an infinity (17)
/// and one with a NaN (19).
fn mixed_matrices(next: &mut impl FnMut() -> f64, len: usize, size: usize) -> Vec<f64> {
    let mut a: Vec<f64> = (0..len * size)
        .map(|i| {
            let u = next();
            if (i / size) % 5 == 2 {
                (u * 7.0).floor() - 3.0
            } else {
                2.0 * u - 1.0
            }
        })
        .collect();
    if len > 20 {
        a[9 * size..10 * size].fill(0.0);
        a[17 * size + 5] = f64::INFINITY;
        a[19 * size + 10] = f64::NAN;
    }
    a
}

/// `lu_factor_solve` of a contiguous batch of 4 x 4 matrices (the AVX-512 kernel where
/// the CPU has it) gives the same bits as of the same matrices spaced apart in storage
/// (the lane kernel): factors, interchanges, info and solutions, both ways round,
/// with one to five right-hand sides, with random and tied (small integer) entries,
/// and with singular, infinite and NaN matrices among them (the groups the wide kernel
/// hands back). Whole and partial groups, on one thread and split across threads.
#[test]
#[allow(clippy::float_cmp)]
fn wide_kernel_gives_the_lane_kernels_bits() {
    let mut rng = crate::backend::cpu::XorShift(0x2545_F491_4F6C_DD1D);
    let mut next = || rng.uniform();
    let n = 4;
    for len in [8usize, 16, 24, 40, 37, 4096 + 13] {
        for k in 1..=5usize {
            let (size, xsize) = (n * n, n * k);
            let a = mixed_matrices(&mut next, len, size);
            let b: Vec<f64> = (0..len * xsize).map(|_| 2.0 * next() - 1.0).collect();
            // the same matrices, one element apart
            let spaced = |v: &[f64], m: usize, c: usize| {
                let mut out = vec![f64::NAN; len * (m * c + 1)];
                for i in 0..len {
                    let o = i * (m * c + 1);
                    out[o..o + m * c].copy_from_slice(&v[i * m * c..(i + 1) * m * c]);
                }
                let lay = Layout::new(Shape::of([len, m, c]), vec![m * c + 1, 1, m], 0);
                (out, lay)
            };
            let packed =
                |m: usize, c: usize| Layout::new(Shape::of([len, m, c]), vec![m * c, 1, m], 0);
            let (sa, sal) = spaced(&a, n, n);
            let (sb, sbl) = spaced(&b, n, k);
            for adjoint in [false, true] {
                let wide = lu_factor_solve(&a, &packed(n, n), &b, &packed(n, k), adjoint);
                let lanes = lu_factor_solve(&sa, &sal, &sb, &sbl, adjoint);
                let (Some(w), Some(l)) = (wide, lanes) else { panic!("no lane path") };
                let what = format!("len {len} k {k} adjoint {adjoint}");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&w.factors), bits(&l.factors), "{what}: factors");
                assert_eq!(w.perms, l.perms, "{what}: interchanges");
                assert_eq!(w.info, l.info, "{what}: info");
                assert_eq!(bits(&w.x), bits(&l.x), "{what}: solutions");
                if len > 20 {
                    assert!(w.info[9] > 0, "{what}: the singular matrix's info");
                }
                assert_eq!(w.factors.len(), len.div_ceil(LANES) * LANES * size);
                // the saved factors' solve and outer products: contiguous right-hand
                // sides and operand (the wide kernel) against spaced ones (the lanes')
                let y: Vec<f64> = (0..len * xsize).map(|_| 2.0 * next() - 1.0).collect();
                let (sy, syl) = spaced(&y, n, k);
                for with_outer in [false, true] {
                    let yw = with_outer.then(|| (&y[..], packed(n, k)));
                    let yl = with_outer.then(|| (&sy[..], syl.clone()));
                    let saved = |b: &[f64], bl: &Layout, y: Option<(&[f64], Layout)>| {
                        let y = y.as_ref().map(|(v, l)| (*v, l));
                        lu_solve_saved(&w.factors, &w.perms, n, b, bl, adjoint, y)
                    };
                    let sw = saved(&b, &packed(n, k), yw);
                    let sl = saved(&sb, &sbl, yl);
                    let what = format!("{what} outer {with_outer}");
                    assert_eq!(bits(&sw.x), bits(&sl.x), "{what}: saved solve");
                    let (ow, ol) = (sw.outer.map(|o| bits(&o.0)), sl.outer.map(|o| bits(&o.0)));
                    assert_eq!(ow, ol, "{what}: outer products");
                    assert_eq!(ow.is_some(), with_outer);
                    // one value broadcast (a sum's cotangent) against the same value
                    // in every spaced block
                    let one = [0.375];
                    let splat = Layout::new(Shape::of([len, n, k]), vec![0, 0, 0], 0);
                    let yw = with_outer.then(|| (&y[..], packed(n, k)));
                    let yl = with_outer.then(|| (&sy[..], syl.clone()));
                    let (filled, fl) = spaced(&vec![one[0]; len * xsize], n, k);
                    let (sw, sl) = (saved(&one, &splat, yw), saved(&filled, &fl, yl));
                    assert_eq!(bits(&sw.x), bits(&sl.x), "{what}: broadcast saved solve");
                    let (ow, ol) = (sw.outer.map(|o| bits(&o.0)), sl.outer.map(|o| bits(&o.0)));
                    assert_eq!(ow, ol, "{what}: broadcast outer products");
                }
            }
        }
    }
}

/// `lu_det`, `lu_inv_t` and `lu_inv` of contiguous batches of 4 x 4 matrices (the
/// AVX-512 kernels where the CPU has them) give the same bits as of the same matrices
/// spaced apart in storage (the lane kernels): factors, interchanges, info, each
/// determinant's four outputs, the scaled inverses (both orders) and the inverses.
/// Random and tied entries; singular, infinite and NaN matrices; products of pivots
/// that overflow, underflow or are subnormal (the logarithm's fallback sum); a
/// near-singular matrix (`loose`); whole and partial groups.
#[test]
#[allow(clippy::float_cmp)]
fn wide_det_and_inverse_kernels_give_the_lane_kernels_bits() {
    let mut rng = crate::backend::cpu::XorShift(0x9E37_79B9_7F4A_7C15);
    let mut next = || rng.uniform();
    let (n, size) = (4, 16);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for len in [8usize, 16, 24, 40, 37, 4096 + 13] {
        let mut a = mixed_matrices(&mut next, len, size);
        if len > 20 {
            // diagonal matrices whose pivots' product overflows, underflows, is
            // subnormal; one near-singular (a column nearly twice another)
            for (m, d) in [(3, 1e200), (11, 1e-200), (12, 1e-78)] {
                a[m * size..(m + 1) * size].fill(0.0);
                for i in 0..n {
                    a[m * size + i * (n + 1)] = if i == 1 { -d } else { d };
                }
            }
            for i in 0..n {
                a[13 * size + 4 + i] = 2.0 * a[13 * size + i] * (1.0 + 1e-12);
            }
        }
        let spaced = |v: &[f64]| {
            let mut out = vec![f64::NAN; len * (size + 1)];
            for i in 0..len {
                out[i * (size + 1)..i * (size + 1) + size]
                    .copy_from_slice(&v[i * size..(i + 1) * size]);
            }
            (out, Layout::new(Shape::of([len, n, n]), vec![size + 1, 1, n], 0))
        };
        let packed = Layout::new(Shape::of([len, n, n]), vec![size, 1, n], 0);
        let (sa, sal) = spaced(&a);
        // every whole group by the wide kernels but those with a zero pivot or a
        // factor that is not finite (the singular, infinite and NaN matrices, and
        // singular small-integer ones) and at most one partner of each
        let factors = lu_det(&sa, &sal, false);
        let bad = (0..len / LANES)
            .filter(|g| {
                let (m, blocks) =
                    (g * LANES..(g + 1) * LANES, g * LANES * size..(g + 1) * LANES * size);
                factors.info[m].iter().any(|&i| i > 0)
                    || factors.lu[blocks].iter().any(|x| !x.is_finite())
            })
            .count();
        let share = (len / LANES).saturating_sub(2 * bad);
        for want_log in [false, true] {
            let what = format!("len {len} log {want_log}");
            let before = wide_groups();
            let w = lu_det(&a, &packed, want_log);
            let after = wide_groups();
            let ran = after.0 - before.0;
            assert!(!after.1 || ran >= share, "{what}: wide groups {ran} of {share}");
            let l = lu_det(&sa, &sal, want_log);
            assert_eq!(bits(&w.lu), bits(&l.lu), "{what}: factors");
            assert_eq!(w.piv, l.piv, "{what}: interchanges");
            assert_eq!(w.info, l.info, "{what}: info");
            assert_eq!(bits(&w.det), bits(&l.det), "{what}: det");
            assert_eq!(bits(&w.sign), bits(&l.sign), "{what}: sign");
            assert_eq!(bits(&w.logabs), bits(&l.logabs), "{what}: logabs");
            assert_eq!(w.loose, l.loose, "{what}: loose");
            if len > 20 && want_log {
                assert!(w.info[9] > 0, "{what}: the singular matrix's info");
                assert_eq!(w.det[3], f64::NEG_INFINITY, "{what}: overflowed det");
                let logs = [(3, 1e200f64), (11, 1e-200), (12, 1e-78)];
                for (m, d) in logs {
                    let want = 4.0 * d.ln();
                    assert!((w.logabs[m] - want).abs() <= 1e-12 * want.abs(), "{what} {m}");
                    assert_eq!(w.sign[m], -1.0, "{what}: sign {m}");
                }
                assert!(w.loose[13] && !w.loose[0], "{what}: loose");
            }
            // the scaled inverses from these factors (contiguous against spaced)
            let c: Vec<f64> = (0..len).map(|_| 2.0 * next() - 1.0).collect();
            let (sf, sfl) = spaced(&w.lu);
            for row_major in [false, true] {
                let before = wide_groups();
                let (xw, lw) = lu_inv_t(&w.lu, &w.layout, &w.piv, &c, row_major);
                let after = wide_groups();
                // (every whole group: the interchanges are an LU's)
                assert!(!after.1 || after.0 - before.0 >= len / LANES, "{what}: inv_t ran");
                let (xl, ll) = lu_inv_t(&sf, &sfl, &w.piv, &c, row_major);
                assert_eq!(bits(&xw), bits(&xl), "{what} row-major {row_major}: inverse");
                assert_eq!(lw, ll, "{what}: layout");
            }
        }
        let before = wide_groups();
        let wide = lu_inv(&a, &packed);
        let after = wide_groups();
        assert!(!after.1 || after.0 - before.0 >= share, "len {len}: invert ran");
        let (Some(w), Some(l)) = (wide, lu_inv(&sa, &sal)) else { panic!("no lane path") };
        assert_eq!(bits(&w.0), bits(&l.0), "len {len}: inv");
        assert_eq!(w.2, l.2, "len {len}: inv info");
        // the inverse does invert (a well-conditioned matrix): the layout is that of
        // M = Aᵀ, the result X = A⁻¹ = M⁻ᵀ column-major, so M Xᵀ = I
        let (m, x) = (&a[..size], &w.0[..size]);
        for i in 0..n {
            for j in 0..n {
                let e: f64 = (0..n).map(|q| m[q * n + i] * x[q * n + j]).sum();
                let id = if i == j { 1.0 } else { 0.0 };
                assert!((e - id).abs() < 1e-10, "len {len}: A⁻¹ A at {i} {j}: {e}");
            }
        }
    }
}
