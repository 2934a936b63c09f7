//! Determinants from the LU: each matrix's determinant, sign, `log |det|` and whether its
//! gradient needs the SVD path ([`lu_det`]), read off its factors while they are in
//! cache (in the lane kernel, over the lanes); the logarithm they use, in operations that
//! vectorise ([`ln_normal`]); and the cofactor matrix that `det`'s gradient needs at
//! singular matrices, from an SVD ([`cofactor`]).

use faer::MatRef;

use super::super::{Batch, LinalgElem};
use super::factor::{lu_factor_impl, lu_unblocked};
use crate::layout::Layout;
use crate::shape::Shape;

/// What [`lu_det`] computes besides the factors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DetSpec {
    pub(super) want_log: bool,
    /// The dtype's machine epsilon (the `loose` threshold is `√eps`).
    pub(super) eps: f64,
}

/// One matrix's determinant from its LU (see [`LuDet`](crate::backend::LuDet)).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DetOne {
    det: f64,
    sign: f64,
    logabs: f64,
    loose: bool,
}

/// Where [`DetOne`]s go: the per-matrix outputs of [`lu_det`], entry `i` of each for
/// matrix `i` (written straight into them: a vector of `DetOne`s, filled with defaults
/// and then copied out, showed in a batched 4 x 4 slogdet's profile).
pub(crate) struct DetOut<'a, T> {
    pub(super) det: &'a mut [T],
    pub(super) sign: &'a mut [T],
    pub(super) logabs: &'a mut [T],
    pub(super) loose: &'a mut [bool],
}

impl<T: LinalgElem> DetOut<'_, T> {
    /// The number of matrices.
    pub(super) fn len(&self) -> usize {
        self.loose.len()
    }

    /// Matrix `i`'s determinant.
    #[inline(always)]
    pub(super) fn set(&mut self, i: usize, d: DetOne) {
        self.det[i] = T::from_f64(d.det);
        self.sign[i] = T::from_f64(d.sign);
        self.logabs[i] = T::from_f64(d.logabs);
        self.loose[i] = d.loose;
    }

    /// Entries `r` of each.
    pub(super) fn sub(&mut self, r: std::ops::Range<usize>) -> DetOut<'_, T> {
        DetOut {
            det: &mut self.det[r.clone()],
            sign: &mut self.sign[r.clone()],
            logabs: &mut self.logabs[r.clone()],
            loose: &mut self.loose[r],
        }
    }
}

/// 1, -1, 0 for a zero pivot, NaN for NaN.
#[inline(always)]
fn sign_of(d: f64) -> f64 {
    if d.is_nan() {
        f64::NAN
    } else {
        f64::from(u8::from(d > 0.0)) - f64::from(u8::from(d < 0.0))
    }
}

/// `log |det|` from the product `prod` of the pivots `diag`: one logarithm of the
/// product when it is a normal number ([`ln_normal`]; its rounding, n ε relative, is that
/// of the sum of n logarithms), else the sum (no overflow or underflow, -inf at a zero
/// pivot, NaN kept).
#[inline(always)]
pub(super) fn logabs_of(prod: f64, diag: impl Iterator<Item = f64>) -> f64 {
    let abs = prod.abs();
    if is_normal(abs) {
        ln_normal(abs)
    } else {
        diag.map(|d| d.abs().ln()).sum()
    }
}

/// `x` is a positive normal number (not NaN, infinite, zero or subnormal), in
/// comparisons (which vectorise).
#[inline(always)]
pub(super) fn is_normal(x: f64) -> bool {
    (f64::MIN_POSITIVE..f64::INFINITY).contains(&x)
}

// [`ln_normal`]'s constants (the shortest decimals of fdlibm's bit patterns: ln2_hi
// 0x3FE62E42FEE00000, ln2_lo 0x3DEA39EF35793C76, Lg1..7 0x3FE5555555555593 …
// 0x3FC2F112DF3E5244), shared with its AVX-512 form in [`super::wide`].
/// `ln 2`'s leading bits (with trailing zeros: `k ln2_hi` is exact).
pub(super) const LN2_HI: f64 = 0.693_147_180_369_123_8;
/// `ln 2 − ln2_hi`.
pub(super) const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// The minimax coefficients of `R(s²)`.
pub(super) const LG: [f64; 7] = [
    0.666_666_666_666_673_5,
    0.399_999_999_994_094_2,
    0.285_714_287_436_623_9,
    0.222_221_984_321_497_84,
    0.181_835_721_616_180_5,
    0.153_138_376_992_093_73,
    0.147_981_986_051_165_86,
];
/// The bits of 1.0 and 0.5.
pub(super) const ONE_BITS: u64 = 0x3FF0_0000_0000_0000;
pub(super) const HALF_BITS: u64 = 0x3FE0_0000_0000_0000;

/// `ln x` for a positive normal `x` (any other input gives a meaningless value), within
/// one ulp, in arithmetic and bit operations only, so that a loop over lanes vectorises
/// (a libm call per matrix was a visible share of a batched 4 x 4 `slogdet`'s forward and
/// backward). The classic reduction and minimax rational form (as in fdlibm's `log`):
/// `x = 2^k (1 + f)` with `√2/2 <= 1 + f < √2`, `s = f / (2 + f)`,
/// `ln(1 + f) = 2 atanh s = f − f²/2 + s (f²/2 + R(s²))`, `R` a degree-7 polynomial in
/// `s²` (minimax coefficients for `|s| <= 0.1716`, near the series' `2/3, 2/5, 2/7, …`),
/// and `k ln 2` in two parts (`ln2_hi` has trailing zero bits, so `k ln2_hi` is exact).
#[inline(always)]
pub(super) fn ln_normal(x: f64) -> f64 {
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = x.to_bits();
    // the mantissa as m in [1, 2), halved when at least √2 (its bits compared: the same
    // exponent), the exponent raised to match
    let frac = bits & MANTISSA;
    let high = frac >= (std::f64::consts::SQRT_2.to_bits() & MANTISSA);
    let m = f64::from_bits(frac | if high { HALF_BITS } else { ONE_BITS });
    let k = f64::from((bits >> 52) as i32 - 1023 + i32::from(high));
    // (exact: m is within a factor 2 of 1)
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f)
}

/// The determinant of `A = P L U` from its packed factors `lu` (column-major `n x n`)
/// and interchanges `ipiv`: `sign(P) ∏ U_ii` in f64, the pivots in order.
pub(super) fn det_one<T: LinalgElem>(lu: &[T], ipiv: &[i64], n: usize, spec: DetSpec) -> DetOne {
    let swaps = ipiv[..n].iter().enumerate().filter(|&(j, &q)| q as usize != j + 1).count();
    let mut prod = if swaps % 2 == 1 { -1.0 } else { 1.0 };
    let mut sign = prod;
    let (mut max, mut min) = (0.0f64, f64::INFINITY);
    let mut finite = true;
    let diag = |i: usize| lu[i * (n + 1)].to_f64();
    for i in 0..n {
        let d = diag(i);
        prod *= d;
        sign *= sign_of(d);
        max = max.max(d.abs());
        min = min.min(d.abs());
        finite &= d.is_finite();
    }
    let logabs = if spec.want_log { logabs_of(prod, (0..n).map(diag)) } else { 0.0 };
    // non-finite factors (NaN or inf input) are never loose: their gradient is
    // non-finite anyway, and the SVD behind the loose branch must not see NaN
    let loose = finite && n > 0 && min <= spec.eps.sqrt() * max;
    DetOne { det: prod, sign, logabs, loose }
}

/// [`lu_factor`](super::lu_factor) of square matrices with each one's determinant, read off
/// its factors while they are in cache (in the lane kernel, over the lanes).
pub(crate) fn lu_det<T: LinalgElem>(
    a: &[T],
    al: &Layout,
    want_log: bool,
) -> crate::backend::LuDet<Vec<T>, Vec<i64>, Vec<bool>> {
    let eps = T::EPSILON.to_f64();
    let len = Batch::of(al).len();
    // (every entry is written, by the lanes or one by one)
    let mut det = crate::backend::cpu::pool::overwritten(len, T::ZERO);
    let mut sign = crate::backend::cpu::pool::overwritten(len, T::ZERO);
    let mut logabs = crate::backend::cpu::pool::overwritten(len, T::ZERO);
    let mut loose = vec![false; len];
    let out = DetOut { det: &mut det, sign: &mut sign, logabs: &mut logabs, loose: &mut loose };
    let (lu, layout, piv, info) = lu_factor_impl(a, al, Some((out, DetSpec { want_log, eps })));
    crate::backend::LuDet { lu, layout, piv, info, det, sign, logabs, loose }
}

impl<T> crate::backend::LuDet<Vec<T>, Vec<i64>, Vec<bool>> {
    /// The same result with its float buffers wrapped by `f` (the integer ones as `I64`,
    /// the boolean one as `Bool`).
    pub(crate) fn map(
        self,
        f: impl Fn(Vec<T>) -> crate::backend::CpuStorage,
    ) -> crate::backend::LuDet<crate::backend::CpuStorage> {
        use crate::backend::CpuStorage;
        crate::backend::LuDet {
            lu: f(self.lu),
            layout: self.layout,
            piv: CpuStorage::I64(self.piv),
            info: CpuStorage::I64(self.info),
            det: f(self.det),
            sign: f(self.sign),
            logabs: f(self.logabs),
            loose: CpuStorage::Bool(self.loose),
        }
    }
}

/// The cofactor matrix `C` (`C_ij = (-1)^(i+j) M_ij`, so `d det A = <C, dA>`) of each
/// square `a: (*, n, n)`, computed from an SVD `A = U S Vᵀ` as
/// `C = det(U) det(V) U diag(prod_{j != i} s_j) Vᵀ`, which stays exact at singular
/// matrices. Row-major result. `Err(batch index)` if the SVD does not converge (our own:
/// [`svd`](super::super::svd::svd), not faer's, which is wrong on hard matrices).
pub(crate) fn cofactor<T: super::super::svd::JacobiElem>(
    a: &[T],
    al: &Layout,
) -> Result<Vec<T>, usize> {
    let ba = Batch::of(al);
    let n = ba.n;
    let size = n * n;
    let mut out = vec![T::ZERO; ba.len() * size];
    if n == 0 {
        return Ok(out);
    }
    let f = super::super::svd::svd(a, al, true, false)?;
    let (Some((uo, _)), (so, _), Some((vo, _))) = (f.u, f.s, f.vh) else {
        unreachable!("the vectors were asked")
    };
    for (i, dst) in out.chunks_exact_mut(size).enumerate() {
        // U and V column-major (V's columns are Vh's rows)
        let u = MatRef::from_column_major_slice(&uo[i * size..(i + 1) * size], n, n);
        let v = MatRef::from_column_major_slice(&vo[i * size..(i + 1) * size], n, n);
        let s = &so[i * n..(i + 1) * n];
        let sign = det_sign(u) * det_sign(v);
        // prod_{j != i} s_j without division (exact with zeros)
        let mut d = vec![T::ONE; n];
        let mut acc = T::ONE;
        for j in 0..n {
            d[j] = acc;
            acc *= s[j];
        }
        acc = T::ONE;
        for j in (0..n).rev() {
            d[j] *= acc;
            acc *= s[j];
        }
        for r in 0..n {
            for c in 0..n {
                let t: T =
                    d.iter().enumerate().map(|(j, &dj)| *u.get(r, j) * dj * *v.get(c, j)).sum();
                dst[r * n + c] = sign * t;
            }
        }
    }
    Ok(out)
}

/// [`cofactor`] of the matrices of `a: (*, n, n)` flagged in `only` (one flag per matrix,
/// in row-major order of the batch dims), zeros for the others; `Ok(None)` when none is
/// flagged, so that a batch of regular matrices costs a scan of its flags only.
/// Row-major result. `Err(batch index)` if an SVD does not converge.
pub(crate) fn cofactor_flagged<T: super::super::svd::JacobiElem>(
    a: &[T],
    al: &Layout,
    only: &[bool],
) -> Result<Option<Vec<T>>, usize> {
    let picked: Vec<usize> = (0..only.len()).filter(|&b| only[b]).collect();
    if picked.is_empty() {
        return Ok(None);
    }
    let ba = Batch::of(al);
    let n = ba.n;
    let size = n * n;
    // the flagged matrices, row-major, one after another
    let mut sub = Vec::with_capacity(picked.len() * size);
    for &b in &picked {
        let o = ba.offset(b);
        for r in 0..n {
            sub.extend((0..n).map(|c| a[o + r * ba.rs + c * ba.cs]));
        }
    }
    let sub_l = Layout::contiguous(Shape::of(&[picked.len(), n, n][..]));
    let c = cofactor(&sub, &sub_l).map_err(|j| picked[j])?;
    let mut out = vec![T::ZERO; ba.len() * size];
    for (j, &b) in picked.iter().enumerate() {
        out[b * size..(b + 1) * size].copy_from_slice(&c[j * size..(j + 1) * size]);
    }
    Ok(Some(out))
}

/// The sign (±1) of the determinant of an orthogonal matrix, from its LU.
fn det_sign<T: LinalgElem>(q: MatRef<'_, T>) -> T {
    let n = q.nrows();
    let mut a = vec![T::ZERO; n * n];
    for j in 0..n {
        for i in 0..n {
            a[j * n + i] = *q.get(i, j);
        }
    }
    let mut ipiv = vec![0i64; n];
    lu_unblocked(&mut a, n, n, &mut ipiv);
    let mut neg = false;
    for (j, &p) in ipiv.iter().enumerate() {
        neg ^= p as usize != j + 1;
        neg ^= a[j * n + j] < T::ZERO;
    }
    if neg {
        -T::ONE
    } else {
        T::ONE
    }
}

#[cfg(test)]
mod tests {
    use super::{is_normal, ln_normal};

    /// The distance between two finite doubles of one sign, in units in the last place.
    fn ulps(a: f64, b: f64) -> u64 {
        let (x, y) = (a.to_bits() as i64, b.to_bits() as i64);
        if (x < 0) != (y < 0) {
            return a.to_bits().max(b.to_bits()) - a.to_bits().min(b.to_bits());
        }
        x.abs_diff(y)
    }

    /// `ln_normal` is within one ulp of the platform's `ln` over the normal range: random
    /// mantissas at every exponent, around 1 (where the result is tiny), on either side
    /// of the √2 reduction boundary, and the extremes; exact at 1 and at powers of 2
    /// within an ulp of k ln 2.
    #[test]
    #[allow(clippy::float_cmp)]
    fn ln_normal_is_within_an_ulp_of_ln() {
        let mut rng = crate::backend::cpu::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut next = || rng.next_u64();
        let mut xs = vec![f64::MIN_POSITIVE, f64::MAX, 1.0, 2.0, 0.5];
        for e in 1..2047u64 {
            for _ in 0..64 {
                xs.push(f64::from_bits((e << 52) | (next() >> 12)));
            }
        }
        for _ in 0..20_000 {
            let t = (next() >> 11) as f64 / (1u64 << 53) as f64;
            xs.push(1.0 + (t - 0.5) * 1e-3);
            xs.push(1.0 + (t - 0.5) * 1e-12);
        }
        let root = std::f64::consts::SQRT_2;
        for d in -1000i64..1000 {
            let r = f64::from_bits((root.to_bits() as i64 + d) as u64);
            xs.extend([r, r * 0.5, r * 1024.0]);
        }
        let mut off = 0usize;
        for &x in &xs {
            assert!(is_normal(x), "{x}");
            let (got, want) = (ln_normal(x), x.ln());
            let d = ulps(got, want);
            assert!(d <= 1, "ln {x:e}: {got:e} vs {want:e} ({d} ulps)");
            off += usize::from(d > 0);
        }
        // (the rounding differs from the platform's on a small share of the inputs)
        // (705 of 176949 when written)
        assert!(off * 100 < xs.len(), "{off} of {} off by an ulp", xs.len());
        assert_eq!(ln_normal(1.0), 0.0);
        for k in -1022i32..1024 {
            let x = 2f64.powi(k);
            assert!(ulps(ln_normal(x), f64::from(k) * std::f64::consts::LN_2) <= 1, "2^{k}");
        }
        for x in [0.0, -1.0, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE / 2.0] {
            assert!(!is_normal(x), "{x}");
        }
    }
}
