//! The eigendecomposition of a small real matrix, unblocked, as LAPACK's `dgeev` takes
//! it below its blocking sizes: Householder reduction to Hessenberg form with the
//! reflectors accumulated (`dgehd2`, `dorghr`), the real Schur form by the Francis
//! double-shift QR iteration (`dlahqr`, with its deflation test of Ahues and Tisseur, its
//! exceptional shifts and its standardised 2 x 2 blocks, `dlanv2`), and each eigenvector
//! by back substitution on the quasi-triangular factor (`dtrevc`'s problem, solved here
//! in complex arithmetic), transformed back by the accumulated orthogonal factor.
//!
//! Why: at small orders faer's blocked solver spends most of its time outside the
//! arithmetic (workspace, dispatch, products sized for large panels), and a batch of
//! small matrices is the common case of `linalg.eig` on a batch. The caller scales each
//! matrix to order one by a power of two before, so that only the tests LAPACK makes
//! against underflow and overflow near the ends of the range are needed here, not its
//! scaling of the whole problem.
//!
//! The eigenvalues come in the order the Schur form leaves them (LAPACK's); a complex
//! conjugate pair is adjacent, the one with positive imaginary part first, with
//! conjugate eigenvectors.

use num_complex::Complex;

use crate::backend::cpu::linalg::qr::QrElem;

/// Up to this order `linalg.eig` of real input runs here; above, through faer's
/// blocked solver where its result passes a backward-error test, else here too.
pub(crate) const SMALL_N: usize = 32;

/// LAPACK's exceptional-shift period and weights (`dlahqr`'s `KEXSH`, `DAT1`, `DAT2`).
const KEXSH: usize = 10;
const DAT1: f64 = 0.75;
const DAT2: f64 = -0.4375;

/// The workspace of one order, reused across a batch.
pub(crate) struct SmallEig<R> {
    n: usize,
    /// The Hessenberg, then quasi-triangular, factor (column-major).
    h: Vec<R>,
    /// The accumulated orthogonal factor (column-major).
    q: Vec<R>,
    wr: Vec<R>,
    wi: Vec<R>,
    /// One eigenvector of the quasi-triangular factor.
    x: Vec<Complex<R>>,
    /// One Householder vector.
    refl: Vec<R>,
    /// A column of scratch.
    acc: Vec<R>,
}

impl<R: QrElem> SmallEig<R> {
    pub(crate) fn new(n: usize) -> Self {
        SmallEig {
            n,
            h: vec![R::ZERO; n * n],
            q: vec![R::ZERO; n * n],
            wr: vec![R::ZERO; n],
            wi: vec![R::ZERO; n],
            x: vec![Complex::new(R::ZERO, R::ZERO); n],
            refl: vec![R::ZERO; n],
            acc: vec![R::ZERO; n],
        }
    }

    /// The eigenvalues of the column-major `a` (finite, of order `n`, `a(r, c)` read as
    /// `at(r, c)`) into `w` and, if `v` is given, its unit eigenvectors (column-major,
    /// not yet in any phase gauge: the caller normalises). False if the QR iteration did
    /// not converge (LAPACK's `info > 0`).
    pub(crate) fn run(
        &mut self,
        at: impl Fn(usize, usize) -> R,
        w: &mut [Complex<R>],
        v: Option<&mut [Complex<R>]>,
    ) -> bool {
        let n = self.n;
        for c in 0..n {
            for r in 0..n {
                self.h[r + c * n] = at(r, c);
            }
        }
        let vectors = v.is_some();
        hessenberg(&mut self.h, &mut self.q, &mut self.refl, &mut self.acc, n, vectors);
        if !schur(&mut self.h, &mut self.q, n, &mut self.wr, &mut self.wi, vectors) {
            return false;
        }
        for ((z, &re), &im) in w.iter_mut().zip(&self.wr).zip(&self.wi) {
            *z = Complex::new(re, im);
        }
        if let Some(v) = v {
            self.vectors(v);
        }
        true
    }

    /// The eigenvectors `Q x` of the Schur form `T = h`, `T x = λ x`, into `v`; the
    /// second of a conjugate pair the conjugate of the first.
    fn vectors(&mut self, v: &mut [Complex<R>]) {
        let n = self.n;
        let mut k = 0;
        while k < n {
            let pair = self.wi[k] != R::ZERO && k + 1 < n;
            let top = if pair { k + 1 } else { k };
            self.triangular_vector(k, pair);
            // Q x, column by column of Q
            let col = &mut v[k * n..(k + 1) * n];
            col.fill(Complex::new(R::ZERO, R::ZERO));
            for (c, x) in self.x[..=top].iter().enumerate() {
                for (d, &qv) in col.iter_mut().zip(&self.q[c * n..(c + 1) * n]) {
                    *d = Complex::new(d.re + qv * x.re, d.im + qv * x.im);
                }
            }
            if pair {
                let (lo, hi) = v.split_at_mut((k + 1) * n);
                for (d, s) in hi[..n].iter_mut().zip(&lo[k * n..]) {
                    *d = Complex::new(s.re, -s.im);
                }
                k += 2;
            } else {
                k += 1;
            }
        }
    }

    /// `x` with `T x = λ_k x` for the quasi-triangular `T = h`, zero below the block of
    /// `λ_k` (a 2 x 2 block at `k, k + 1` if `pair`; `λ_k` then has positive imaginary
    /// part). Back substitution over `T`'s diagonal blocks, each solve perturbed away
    /// from singularity as LAPACK's `dlaln2` (`smin`), rescaled when the entries grow
    /// toward overflow (the scale is free: the caller normalises).
    fn triangular_vector(&mut self, k: usize, pair: bool) {
        let n = self.n;
        let h = &self.h;
        let t = |r: usize, c: usize| h[r + c * n];
        let lam = Complex::new(self.wr[k], self.wi[k]);
        let (ulp, smlnum) = (R::EPSILON, small_number::<R>(n));
        let smin = max(ulp * (lam.re.abs() + lam.im.abs()), smlnum);
        let big = R::ONE / smlnum;
        let zero = Complex::new(R::ZERO, R::ZERO);
        let x = &mut self.x;
        x.fill(zero);
        // the block's own components
        let top = if pair {
            // T's block is [[a, b], [c, a]] with b c < 0 and λ = a + i ω: from its larger
            // off-diagonal entry's row, as LAPACK's dtrevc
            let (b, c) = (t(k, k + 1), t(k + 1, k));
            if b.abs() >= c.abs() {
                x[k] = Complex::new(R::ONE, R::ZERO);
                x[k + 1] = Complex::new(R::ZERO, lam.im / b);
            } else {
                x[k] = Complex::new(R::ZERO, lam.im / c);
                x[k + 1] = Complex::new(R::ONE, R::ZERO);
            }
            k + 1
        } else {
            x[k] = Complex::new(R::ONE, R::ZERO);
            k
        };
        // the right-hand side −T[:k, k..=top] x[k..=top]
        for r in 0..k {
            let mut s = zero;
            for (c, xc) in x.iter().enumerate().take(top + 1).skip(k) {
                s = csub(s, cscale(*xc, t(r, c)));
            }
            x[r] = s;
        }
        // back substitution, one diagonal block at a time; before each block's solve the
        // whole vector is scaled down where the solve could exceed `big` (a bound on
        // |x| ≤ 3 max|b| / smin, with complete pivoting), so that neither x nor the
        // updates of the right-hand side overflow
        let mut j = k;
        while j > 0 {
            let second = j >= 2 && t(j - 1, j - 2) != R::ZERO;
            let lo = if second { j - 2 } else { j - 1 };
            let bmax = x[lo..j].iter().fold(R::ZERO, |m, &z| max(m, cabs1(z)));
            let lim = smin * big / R::of(4.0);
            if bmax > lim {
                let s = lim / bmax;
                x.iter_mut().take(top + 1).for_each(|z| *z = cscale(*z, s));
            }
            if second {
                // the 2 x 2 block at (j − 2, j − 1)
                let (p, q) = (j - 2, j - 1);
                let m = [
                    Complex::new(t(p, p) - lam.re, -lam.im),
                    Complex::new(t(q, p), R::ZERO),
                    Complex::new(t(p, q), R::ZERO),
                    Complex::new(t(q, q) - lam.re, -lam.im),
                ];
                let (xp, xq) = solve2(m, x[p], x[q], smin);
                x[p] = xp;
                x[q] = xq;
            } else {
                let p = j - 1;
                let mut d = Complex::new(t(p, p) - lam.re, -lam.im);
                if cabs1(d) < smin {
                    d = Complex::new(smin, R::ZERO);
                }
                x[p] = cdiv(x[p], d);
            }
            for c in lo..j {
                let xc = x[c];
                for (r, xr) in x.iter_mut().enumerate().take(lo) {
                    *xr = csub(*xr, cscale(xc, t(r, c)));
                }
            }
            j = lo;
        }
    }
}

/// `max(a, b)` of two non-NaN numbers.
fn max<R: QrElem>(a: R, b: R) -> R {
    if a > b {
        a
    } else {
        b
    }
}

/// `|re| + |im|`, LAPACK's cheap modulus.
fn cabs1<R: QrElem>(z: Complex<R>) -> R {
    z.re.abs() + z.im.abs()
}

fn cscale<R: QrElem>(z: Complex<R>, s: R) -> Complex<R> {
    Complex::new(z.re * s, z.im * s)
}

fn csub<R: QrElem>(a: Complex<R>, b: Complex<R>) -> Complex<R> {
    Complex::new(a.re - b.re, a.im - b.im)
}

fn cmul<R: QrElem>(a: Complex<R>, b: Complex<R>) -> Complex<R> {
    Complex::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// `a / b` by Smith's algorithm (no overflow of `|b|²`).
fn cdiv<R: QrElem>(a: Complex<R>, b: Complex<R>) -> Complex<R> {
    if b.re.abs() >= b.im.abs() {
        let r = b.im / b.re;
        let d = b.re + b.im * r;
        Complex::new((a.re + a.im * r) / d, (a.im - a.re * r) / d)
    } else {
        let r = b.re / b.im;
        let d = b.re * r + b.im;
        Complex::new((a.re * r + a.im) / d, (a.im * r - a.re) / d)
    }
}

/// Solves the complex 2 x 2 system `m x = (b0, b1)` (`m` column-major) by Gaussian
/// elimination with complete pivoting, a pivot below `smin` (in `|re| + |im|`) replaced
/// by `smin`, as LAPACK's `dlaln2`.
fn solve2<R: QrElem>(
    m: [Complex<R>; 4],
    b0: Complex<R>,
    b1: Complex<R>,
    smin: R,
) -> (Complex<R>, Complex<R>) {
    // entry (r, c) is m[r + 2 c]
    let mut piv = 0;
    for i in 1..4 {
        if cabs1(m[i]) > cabs1(m[piv]) {
            piv = i;
        }
    }
    let (pr, pc) = (piv % 2, piv / 2);
    let (or, oc) = (1 - pr, 1 - pc);
    let b = [b0, b1];
    let u11 = m[piv];
    if cabs1(u11) < smin {
        // every entry below smin: the perturbed system is smin · I
        let s = Complex::new(smin, R::ZERO);
        return (cdiv(b0, s), cdiv(b1, s));
    }
    let l21 = cdiv(m[or + 2 * pc], u11);
    let u12 = m[pr + 2 * oc];
    let mut u22 = csub(m[or + 2 * oc], cmul(l21, u12));
    if cabs1(u22) < smin {
        u22 = Complex::new(smin, R::ZERO);
    }
    let y = csub(b[or], cmul(l21, b[pr]));
    let xo = cdiv(y, u22);
    let xp = cdiv(csub(b[pr], cmul(u12, xo)), u11);
    let mut x = [Complex::new(R::ZERO, R::ZERO); 2];
    x[pc] = xp;
    x[oc] = xo;
    (x[0], x[1])
}

/// LAPACK's `smlnum` for order `n`: the safe minimum times `n / ulp`.
fn small_number<R: QrElem>(n: usize) -> R {
    R::MIN_POSITIVE * (R::of(n.max(1) as f64) / R::EPSILON)
}

/// LAPACK's `safmn2` of `dlanv2`: `2^e`, `e` half the exponent of `safmin / eps`
/// truncated toward zero: `2^-485` in f64 (`(−1022 + 52) / 2`), `2^-51` in f32
/// (`(−126 + 23) / 2` truncated).
fn scaled_min<R: QrElem>() -> R {
    let e: u64 = if R::EPSILON == R::of(f64::EPSILON) { 1023 - 485 } else { 1023 - 51 };
    R::of(f64::from_bits(e << 52))
}

/// `√(x0² + Σ x_i²)`: directly where the sum of squares neither overflows nor falls
/// below the normal range, else by hypot (slower, exact in range).
fn norm2<R: QrElem>(x0: R, x: &[R]) -> R {
    let ss = x.iter().fold(x0 * x0, |s, &e| s + e * e);
    if ss.is_finite() && ss >= R::MIN_POSITIVE {
        ss.sqrt()
    } else {
        x.iter().fold(x0.abs(), |s, &e| s.hypot(e))
    }
}

/// A Householder reflector `I − τ [1; v] [1; v]ᵀ` taking `(alpha, x)` to `(β, 0)`,
/// as LAPACK's `dlarfg`: `x` overwritten by `v`, `alpha` by `β`; returns `τ` (zero when
/// `x` is already zero).
fn reflector<R: QrElem>(alpha: &mut R, x: &mut [R]) -> R {
    if x.iter().all(|&e| e == R::ZERO) {
        return R::ZERO;
    }
    let mut beta = -norm2(*alpha, x).copysign(*alpha);
    let safmin = R::MIN_POSITIVE / R::EPSILON;
    let mut knt = 0;
    if beta.abs() < safmin {
        // x and alpha so small that β lost accuracy: scale up (at most 20 times)
        let r = R::ONE / safmin;
        while beta.abs() < safmin && knt < 20 {
            knt += 1;
            for e in x.iter_mut() {
                *e *= r;
            }
            beta *= r;
            *alpha *= r;
        }
        beta = -norm2(*alpha, x).copysign(*alpha);
    }
    let tau = (beta - *alpha) / beta;
    let s = R::ONE / (*alpha - beta);
    for e in x.iter_mut() {
        *e *= s;
    }
    for _ in 0..knt {
        beta *= safmin;
    }
    *alpha = beta;
    tau
}

/// Reduces the column-major `h` to upper Hessenberg form `Qᵀ A Q` in place, and `q` to
/// `Q` if `want_q` (`dgehd2` with `dorghr`'s product).
fn hessenberg<R: QrElem>(
    h: &mut [R],
    q: &mut [R],
    v: &mut [R],
    acc: &mut [R],
    n: usize,
    want_q: bool,
) {
    if want_q {
        q.fill(R::ZERO);
        for i in 0..n {
            q[i + i * n] = R::ONE;
        }
    }
    for k in 0..n.saturating_sub(2) {
        // the reflector of column k below the subdiagonal
        let len = n - k - 2;
        let mut alpha = h[k + 1 + k * n];
        v[..len].copy_from_slice(&h[k + 2 + k * n..(k + 1) * n]);
        let tau = reflector(&mut alpha, &mut v[..len]);
        h[k + 1 + k * n] = alpha;
        h[k + 2 + k * n..(k + 1) * n].fill(R::ZERO);
        if tau == R::ZERO {
            continue;
        }
        let v = &v[..len];
        // from the left, columns k + 1..n
        for c in k + 1..n {
            let col = &mut h[c * n..(c + 1) * n];
            let mut s = col[k + 1];
            for (i, &vi) in v.iter().enumerate() {
                s += vi * col[k + 2 + i];
            }
            s *= tau;
            col[k + 1] -= s;
            for (i, &vi) in v.iter().enumerate() {
                col[k + 2 + i] -= s * vi;
            }
        }
        // from the right, every row (and the accumulated Q)
        apply_right(h, acc, v, tau, k + 1, n);
        if want_q {
            apply_right(q, acc, v, tau, k + 1, n);
        }
    }
}

/// `M ← M (I − τ u uᵀ)` for the column-major `n x n` `m`, `u = (1, v)` on columns
/// `c0..c0 + 1 + v.len()`, column by column (`acc`: `n` of scratch).
fn apply_right<R: QrElem>(m: &mut [R], acc: &mut [R], v: &[R], tau: R, c0: usize, n: usize) {
    acc.copy_from_slice(&m[c0 * n..(c0 + 1) * n]);
    for (i, &vi) in v.iter().enumerate() {
        let col = &m[(c0 + 1 + i) * n..(c0 + 2 + i) * n];
        for (a, &x) in acc.iter_mut().zip(col) {
            *a += vi * x;
        }
    }
    for a in acc.iter_mut() {
        *a *= tau;
    }
    for (x, &a) in m[c0 * n..(c0 + 1) * n].iter_mut().zip(acc.iter()) {
        *x -= a;
    }
    for (i, &vi) in v.iter().enumerate() {
        let col = &mut m[(c0 + 1 + i) * n..(c0 + 2 + i) * n];
        for (x, &a) in col.iter_mut().zip(acc.iter()) {
            *x -= a * vi;
        }
    }
}

/// The real Schur form of the upper Hessenberg `h` (in place; `q` updated by the
/// transformations if `want_q`), its eigenvalues into `wr`, `wi` (a conjugate pair
/// adjacent, positive imaginary part first): LAPACK's `dlahqr` with `wantt`. False if
/// some eigenvalue did not converge in `30 max(10, n)` iterations.
fn schur<R: QrElem>(
    h: &mut [R],
    q: &mut [R],
    n: usize,
    wr: &mut [R],
    wi: &mut [R],
    want_q: bool,
) -> bool {
    if n == 0 {
        return true;
    }
    let nn = n as isize;
    let at = move |r: isize, c: isize| (r + c * nn) as usize;
    let ulp = R::EPSILON;
    let smlnum = small_number::<R>(n);
    let itmax = 30 * n.max(10);
    let mut kdefl = 0usize;
    let mut i = nn - 1;
    while i >= 0 {
        let mut l = 0isize;
        let mut converged = false;
        for _ in 0..=itmax {
            // a negligible subdiagonal entry (Ahues and Tisseur's test)
            let mut k = i;
            while k > l {
                let hk = h[at(k, k - 1)].abs();
                if hk <= smlnum {
                    break;
                }
                let mut tst = h[at(k - 1, k - 1)].abs() + h[at(k, k)].abs();
                if tst == R::ZERO {
                    if k >= 2 {
                        tst += h[at(k - 1, k - 2)].abs();
                    }
                    if k + 1 < nn {
                        tst += h[at(k + 1, k)].abs();
                    }
                }
                if hk <= ulp * tst {
                    let hkk = h[at(k, k)].abs();
                    let diff = (h[at(k - 1, k - 1)] - h[at(k, k)]).abs();
                    let up = h[at(k - 1, k)].abs();
                    let (ab, ba) = if hk > up { (hk, up) } else { (up, hk) };
                    let (aa, bb) = if hkk > diff { (hkk, diff) } else { (diff, hkk) };
                    let s = aa + ab;
                    if ba * (ab / s) <= max(smlnum, ulp * (bb * (aa / s))) {
                        break;
                    }
                }
                k -= 1;
            }
            l = k;
            if l > 0 {
                h[at(l, l - 1)] = R::ZERO;
            }
            if l >= i - 1 {
                converged = true;
                break;
            }
            kdefl += 1;
            let [rt1r, rt1i, rt2r, rt2i] = shifts(h, &at, l, i, kdefl);
            // where to start: two consecutive small subdiagonal entries
            let mut m = i - 2;
            let mut v = [R::ZERO; 3];
            loop {
                let hmm = h[at(m, m)];
                let h21 = h[at(m + 1, m)];
                let s = (hmm - rt2r).abs() + rt2i.abs() + h21.abs();
                let h21s = h21 / s;
                v[0] =
                    h21s * h[at(m, m + 1)] + (hmm - rt1r) * ((hmm - rt2r) / s) - rt1i * (rt2i / s);
                v[1] = h21s * (hmm + h[at(m + 1, m + 1)] - rt1r - rt2r);
                v[2] = h21s * h[at(m + 2, m + 1)];
                let s = R::ONE / (v[0].abs() + v[1].abs() + v[2].abs());
                for e in &mut v {
                    *e *= s;
                }
                if m == l {
                    break;
                }
                let h00 = h[at(m, m - 1)].abs() * (v[1].abs() + v[2].abs());
                let h01 = v[0].abs()
                    * (h[at(m - 1, m - 1)].abs() + hmm.abs() + h[at(m + 1, m + 1)].abs());
                if h00 <= ulp * h01 {
                    break;
                }
                m -= 1;
            }
            // the double-shift QR sweep, chasing the bulge from m down to i
            for k in m..i {
                let nr = (i - k + 1).min(3) as usize;
                if k > m {
                    for (r, e) in v.iter_mut().enumerate().take(nr) {
                        *e = h[at(k + r as isize, k - 1)];
                    }
                }
                let mut alpha = v[0];
                let t1 = reflector(&mut alpha, &mut v[1..nr]);
                if k > m {
                    h[at(k, k - 1)] = alpha;
                    h[at(k + 1, k - 1)] = R::ZERO;
                    if k < i - 1 {
                        h[at(k + 2, k - 1)] = R::ZERO;
                    }
                } else if m > l {
                    // LAPACK's form of H(k, k−1) = −H(k, k−1), exact when v underflows
                    h[at(k, k - 1)] *= R::ONE - t1;
                }
                let v2 = v[1];
                let t2 = t1 * v2;
                let v3 = if nr == 3 { v[2] } else { R::ZERO };
                let t3 = t1 * v3;
                // from the left over columns k..n, from the right over rows 0..=min(k+3, i)
                for j in k..nn {
                    let s = h[at(k, j)]
                        + v2 * h[at(k + 1, j)]
                        + if nr == 3 { v3 * h[at(k + 2, j)] } else { R::ZERO };
                    h[at(k, j)] -= s * t1;
                    h[at(k + 1, j)] -= s * t2;
                    if nr == 3 {
                        h[at(k + 2, j)] -= s * t3;
                    }
                }
                let rows = (k + 3).min(i);
                let right = |m: &mut [R], rows: isize| {
                    for j in 0..=rows {
                        let s = m[at(j, k)]
                            + v2 * m[at(j, k + 1)]
                            + if nr == 3 { v3 * m[at(j, k + 2)] } else { R::ZERO };
                        m[at(j, k)] -= s * t1;
                        m[at(j, k + 1)] -= s * t2;
                        if nr == 3 {
                            m[at(j, k + 2)] -= s * t3;
                        }
                    }
                };
                right(h, rows);
                if want_q {
                    right(q, nn - 1);
                }
            }
        }
        if !converged {
            return false;
        }
        let iu = i as usize;
        if l == i {
            wr[iu] = h[at(i, i)];
            wi[iu] = R::ZERO;
        } else {
            // a 2 x 2 block at i − 1, i: standardise it, rotating the rest of T and Q
            let p = i - 1;
            let (blk, cs, sn) =
                standard_block([h[at(p, p)], h[at(p, i)], h[at(i, p)], h[at(i, i)]]);
            h[at(p, p)] = blk[0];
            h[at(p, i)] = blk[1];
            h[at(i, p)] = blk[2];
            h[at(i, i)] = blk[3];
            let (w0, w1) = block_eigenvalues(blk);
            wr[iu - 1] = w0.re;
            wi[iu - 1] = w0.im;
            wr[iu] = w1.re;
            wi[iu] = w1.im;
            for j in i + 1..nn {
                let (x, y) = (h[at(p, j)], h[at(i, j)]);
                h[at(p, j)] = cs * x + sn * y;
                h[at(i, j)] = cs * y - sn * x;
            }
            let cols = |m: &mut [R], rows: isize| {
                for j in 0..rows {
                    let (x, y) = (m[at(j, p)], m[at(j, i)]);
                    m[at(j, p)] = cs * x + sn * y;
                    m[at(j, i)] = cs * y - sn * x;
                }
            };
            cols(h, p);
            if want_q {
                cols(q, nn);
            }
        }
        kdefl = 0;
        i = l - 1;
    }
    true
}

/// The two shifts of a sweep over the active block `l..=i` (`[re1, im1, re2, im2]`): the
/// eigenvalues of its trailing 2 x 2 block, or, every `KEXSH` sweeps without deflation,
/// LAPACK's exceptional shifts (from the bottom, then from the top, alternating).
fn shifts<R: QrElem>(
    h: &[R],
    at: &impl Fn(isize, isize) -> usize,
    l: isize,
    i: isize,
    kdefl: usize,
) -> [R; 4] {
    let (dat1, dat2) = (R::of(DAT1), R::of(DAT2));
    let (mut h11, mut h21, mut h12, mut h22);
    if kdefl.is_multiple_of(2 * KEXSH) {
        let s = h[at(i, i - 1)].abs() + h[at(i - 1, i - 2)].abs();
        h11 = dat1 * s + h[at(i, i)];
        h12 = dat2 * s;
        h21 = s;
        h22 = h11;
    } else if kdefl.is_multiple_of(KEXSH) {
        let s = h[at(l + 1, l)].abs() + h[at(l + 2, l + 1)].abs();
        h11 = dat1 * s + h[at(l, l)];
        h12 = dat2 * s;
        h21 = s;
        h22 = h11;
    } else {
        h11 = h[at(i - 1, i - 1)];
        h21 = h[at(i, i - 1)];
        h12 = h[at(i - 1, i)];
        h22 = h[at(i, i)];
    }
    let s = h11.abs() + h12.abs() + h21.abs() + h22.abs();
    if s == R::ZERO {
        return [R::ZERO; 4];
    }
    let inv = R::ONE / s;
    h11 *= inv;
    h21 *= inv;
    h12 *= inv;
    h22 *= inv;
    let tr = (h11 + h22) / R::of(2.0);
    let det = (h11 - tr) * (h22 - tr) - h12 * h21;
    let rtdisc = det.abs().sqrt();
    if det >= R::ZERO {
        // a complex conjugate pair
        [tr * s, rtdisc * s, tr * s, -rtdisc * s]
    } else {
        // two real shifts: both the one nearer h22
        let (r1, r2) = (tr + rtdisc, tr - rtdisc);
        let r = if (r1 - h22).abs() <= (r2 - h22).abs() { r1 } else { r2 };
        [r * s, R::ZERO, r * s, R::ZERO]
    }
}

/// The eigenvalues of a standardised 2 x 2 block `[a, b, c, d]` (row-major): `a`, `d`
/// if `c = 0`, else the pair `a ± i √|b| √|c|` (positive imaginary part first).
fn block_eigenvalues<R: QrElem>(blk: [R; 4]) -> (Complex<R>, Complex<R>) {
    let [a, b, c, d] = blk;
    if c == R::ZERO {
        (Complex::new(a, R::ZERO), Complex::new(d, R::ZERO))
    } else {
        let im = b.abs().sqrt() * c.abs().sqrt();
        (Complex::new(a, im), Complex::new(d, -im))
    }
}

/// The Schur factorisation of a real 2 x 2 block `[a, b, c, d]` (row-major) in LAPACK's
/// standard form (`dlanv2`): `[a b; c d] = [cs −sn; sn cs] [aa bb; cc dd] [cs sn; −sn cs]`
/// with either `cc = 0` (real eigenvalues `aa`, `dd`) or `aa = dd` and `bb cc < 0` (a
/// complex pair). Returns the standardised block and `(cs, sn)`.
fn standard_block<R: QrElem>(blk: [R; 4]) -> ([R; 4], R, R) {
    let [mut a, mut b, mut c, mut d] = blk;
    let (zero, one, half) = (R::ZERO, R::ONE, R::of(0.5));
    let eps = R::EPSILON;
    let sign = |x: R, s: R| x.abs().copysign(s);
    let (mut cs, mut sn);
    if c == zero {
        cs = one;
        sn = zero;
    } else if b == zero {
        // swap the rows and columns
        cs = zero;
        sn = one;
        std::mem::swap(&mut a, &mut d);
        b = -c;
        c = zero;
    } else if a - d == zero && sign(one, b) != sign(one, c) {
        // already standard
        cs = one;
        sn = zero;
    } else {
        let temp = a - d;
        let mut p = half * temp;
        let bcmax = max(b.abs(), c.abs());
        let bcmis = if b.abs() < c.abs() { b.abs() } else { c.abs() } * sign(one, b) * sign(one, c);
        let scale = max(p.abs(), bcmax);
        let mut z = (p / scale) * p + (bcmax / scale) * bcmis;
        if z >= R::of(4.0) * eps {
            // real eigenvalues: triangularise
            z = p + sign(scale.sqrt() * z.sqrt(), p);
            a = d + z;
            d -= (bcmax / z) * bcmis;
            let tau = z.hypot(c);
            cs = z / tau;
            sn = c / tau;
            b -= c;
            c = zero;
        } else {
            // complex or nearly equal real eigenvalues: make the diagonal equal, the
            // rotation's angle computed with sigma and temp scaled into range
            let safmn2 = scaled_min::<R>();
            let safmx2 = one / safmn2;
            let mut sigma = b + c;
            let mut t = temp;
            for _ in 0..20 {
                let sc = max(t.abs(), sigma.abs());
                if sc >= safmx2 {
                    sigma *= safmn2;
                    t *= safmn2;
                } else if sc <= safmn2 {
                    sigma *= safmx2;
                    t *= safmx2;
                } else {
                    break;
                }
            }
            p = half * t;
            let tau = sigma.hypot(t);
            cs = (half * (one + sigma.abs() / tau)).sqrt();
            sn = -(p / (tau * cs)) * sign(one, sigma);
            // [aa bb; cc dd] = [a b; c d] [cs −sn; sn cs]
            let (aa, bb) = (a * cs + b * sn, -a * sn + b * cs);
            let (cc, dd) = (c * cs + d * sn, -c * sn + d * cs);
            // [a b; c d] = [cs sn; −sn cs] [aa bb; cc dd]
            a = aa * cs + cc * sn;
            b = bb * cs + dd * sn;
            c = -aa * sn + cc * cs;
            d = -bb * sn + dd * cs;
            let mid = half * (a + d);
            a = mid;
            d = mid;
            if c != zero {
                if b == zero {
                    // a lower triangular block: swap
                    b = -c;
                    c = zero;
                    let ncs = -sn;
                    sn = cs;
                    cs = ncs;
                } else if sign(one, b) == sign(one, c) {
                    // real eigenvalues after all: triangularise
                    let (sab, sac) = (b.abs().sqrt(), c.abs().sqrt());
                    let pp = sign(sab * sac, c);
                    let tau = one / (b + c).abs().sqrt();
                    a = mid + pp;
                    d = mid - pp;
                    b -= c;
                    c = zero;
                    let (cs1, sn1) = (sab * tau, sac * tau);
                    let ncs = cs * cs1 - sn * sn1;
                    sn = cs * sn1 + sn * cs1;
                    cs = ncs;
                }
            }
        }
    }
    ([a, b, c, d], cs, sn)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V = V diag(w) to a few ulps of ‖A‖, and V of full rank where it should be.
    fn check(a: &[f64], n: usize) {
        let mut e = SmallEig::<f64>::new(n);
        let mut w = vec![Complex::new(0.0, 0.0); n];
        let mut v = vec![Complex::new(0.0, 0.0); n * n];
        assert!(e.run(|r, c| a[r + c * n], &mut w, Some(&mut v)));
        let anorm = a.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
        for k in 0..n {
            let col = &v[k * n..(k + 1) * n];
            let vnorm = col.iter().map(Complex::norm_sqr).sum::<f64>().sqrt();
            assert!(vnorm > 0.0);
            for r in 0..n {
                let mut s = Complex::new(0.0, 0.0);
                for c in 0..n {
                    s += col[c] * a[r + c * n];
                }
                let res = (s - col[r] * w[k]).norm() / (anorm * vnorm);
                assert!(res < 1e-13 * n as f64, "n {n} k {k} residual {res}");
            }
        }
        // conjugate pairs adjacent, positive imaginary part first
        let mut k = 0;
        while k < n {
            if w[k].im == 0.0 {
                k += 1;
            } else {
                assert!(w[k].im > 0.0 && w[k + 1] == w[k].conj());
                k += 2;
            }
        }
    }

    #[test]
    fn random_matrices_of_every_small_order() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for n in 0..=24 {
            for _ in 0..20 {
                let a: Vec<f64> = (0..n * n).map(|_| next()).collect();
                check(&a, n);
            }
        }
    }

    #[test]
    fn structured_matrices() {
        // a rotation (a pure pair), a Jordan block (defective), zero, a permutation
        check(&[0.0, 1.0, -1.0, 0.0], 2);
        check(&[2.0, 0.0, 1.0, 2.0], 2);
        check(&[0.0; 9], 3);
        for n in [3, 12, 16] {
            check(&vec![1.0; n * n], n);
        }
        let mut p = vec![0.0; 25];
        for i in 0..5 {
            p[(i + 1) % 5 + i * 5] = 1.0;
        }
        check(&p, 5);
        // companion matrix of (x − 1)⁴: a fourfold eigenvalue
        let c = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 4.0, -6.0, 4.0];
        let mut e = SmallEig::<f64>::new(4);
        let mut w = vec![Complex::new(0.0, 0.0); 4];
        assert!(e.run(|r, cc| c[r + cc * 4], &mut w, None));
        for z in w {
            assert!((z - 1.0).norm() < 1e-3, "{z}");
        }
    }
}
