//! The accuracy suite's matrices and ratios, in the style of LAPACK's testing (`dlatms`'s
//! prescribed spectra, `dchkbd`/`ddrvbd`/`dchkqr`/`dchkge`/`ddrvst`'s test ratios).
//!
//! Everything here is plain `f64` arithmetic on row-major `Vec`s, independent of the
//! library: the matrices come from a seeded generator, and each ratio is
//! `residual / (norm · order · eps)` of the dtype under test, computed in `f64` on the
//! matrix and factors divided by an exact power of two near the matrix's largest entry
//! (so that matrices scaled near overflow or underflow neither overflow nor lose digits
//! in the test's own arithmetic). LAPACK counts a ratio below 30 as a pass.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use cotangent::{DType, Tensor};

/// LAPACK's pass threshold for a test ratio.
pub const THRESH: f64 = 30.0;

/// splitmix64: a seeded stream of 64-bit integers (the same on every platform).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `(0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box-Muller, one value per pair of uniforms).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    pub fn normals(&mut self, len: usize) -> Vec<f64> {
        (0..len).map(|_| self.normal()).collect()
    }
}

/// A row-major `m x n` matrix in `f64`.
#[derive(Clone, Debug)]
pub struct Mat {
    pub m: usize,
    pub n: usize,
    pub a: Vec<f64>,
}

impl Mat {
    pub fn zeros(m: usize, n: usize) -> Mat {
        Mat { m, n, a: vec![0.0; m * n] }
    }

    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.a[i * self.n + j]
    }

    pub fn set(&mut self, i: usize, j: usize, x: f64) {
        self.a[i * self.n + j] = x;
    }

    /// The `m x n` matrix with entries `f(i, j)`.
    pub fn from_fn(m: usize, n: usize, f: impl Fn(usize, usize) -> f64) -> Mat {
        Mat { m, n, a: (0..m * n).map(|p| f(p / n, p % n)).collect() }
    }

    /// Hilbert's matrix, `1 / (i + j + 1)`.
    pub fn hilbert(m: usize, n: usize) -> Mat {
        Mat::from_fn(m, n, |i, j| 1.0 / (i + j + 1) as f64)
    }

    pub fn eye(n: usize) -> Mat {
        let mut e = Mat::zeros(n, n);
        for i in 0..n {
            e.set(i, i, 1.0);
        }
        e
    }

    pub fn t(&self) -> Mat {
        let mut t = Mat::zeros(self.n, self.m);
        for i in 0..self.m {
            for j in 0..self.n {
                t.set(j, i, self.at(i, j));
            }
        }
        t
    }

    pub fn matmul(&self, b: &Mat) -> Mat {
        assert_eq!(self.n, b.m);
        let mut c = Mat::zeros(self.m, b.n);
        for i in 0..self.m {
            for p in 0..self.n {
                let x = self.at(i, p);
                if x == 0.0 {
                    continue;
                }
                let row = &b.a[p * b.n..(p + 1) * b.n];
                for (y, &z) in c.a[i * b.n..(i + 1) * b.n].iter_mut().zip(row) {
                    *y += x * z;
                }
            }
        }
        c
    }

    pub fn sub(&self, b: &Mat) -> Mat {
        Mat { m: self.m, n: self.n, a: self.a.iter().zip(&b.a).map(|(x, y)| x - y).collect() }
    }

    pub fn scaled(&self, s: f64) -> Mat {
        Mat { m: self.m, n: self.n, a: self.a.iter().map(|x| x * s).collect() }
    }

    /// The 1-norm (largest column sum), as LAPACK's test ratios use.
    pub fn norm1(&self) -> f64 {
        (0..self.n)
            .map(|j| (0..self.m).map(|i| self.at(i, j).abs()).sum::<f64>())
            .fold(0.0, f64::max)
    }

    pub fn amax(&self) -> f64 {
        self.a.iter().fold(0.0f64, |x, y| x.max(y.abs()))
    }

    /// Rounded to `dtype` (and back to `f64`): the matrix a test of that dtype decomposes.
    pub fn rounded(&self, dtype: DType) -> Mat {
        match dtype {
            DType::F32 => Mat {
                m: self.m,
                n: self.n,
                a: self.a.iter().map(|&x| f64::from(x as f32)).collect(),
            },
            _ => self.clone(),
        }
    }

    pub fn tensor(&self, dtype: DType) -> Tensor {
        match dtype {
            DType::F32 => Tensor::from_vec(
                self.a.iter().map(|&x| x as f32).collect::<Vec<f32>>(),
                (self.m, self.n),
            )
            .unwrap(),
            _ => Tensor::from_vec(self.a.clone(), (self.m, self.n)).unwrap(),
        }
    }

    /// A `(*, m, n)` tensor's matrices.
    pub fn of_tensor(t: &Tensor) -> Vec<Mat> {
        let r = t.rank();
        let (m, n) = (t.dims()[r - 2], t.dims()[r - 1]);
        let v = t.contiguous().unwrap().to_vec_f64();
        if m * n == 0 {
            let b: usize = t.dims()[..r - 2].iter().product();
            return vec![Mat::zeros(m, n); b];
        }
        v.chunks_exact(m * n).map(|c| Mat { m, n, a: c.to_vec() }).collect()
    }
}

/// Machine epsilon of a dtype (LAPACK's `ulp` is `eps · base`; its ratios use `eps`
/// as `dlamch('Precision')`, which is this).
pub fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f64::from(f32::EPSILON),
        _ => f64::EPSILON,
    }
}

/// A power of two near `x` (1 for zero): dividing by it is exact.
pub fn pow2_near(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        1.0
    } else {
        2f64.powi(x.log2().floor() as i32)
    }
}

/// Applies a random orthogonal matrix to the rows of `a` from the left (`a <- Q a`):
/// `Q` is the product of `a.m - 1` Householder reflectors of Gaussian vectors of
/// decreasing length, as LAPACK's `dlaror` (Haar-distributed).
pub fn random_orthogonal_left(a: &mut Mat, rng: &mut Rng) {
    let (m, n) = (a.m, a.n);
    for j in (0..m.saturating_sub(1)).rev() {
        let len = m - j;
        let mut v = rng.normals(len);
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v[0] += norm.copysign(v[0]);
        let vv: f64 = v.iter().map(|x| x * x).sum();
        if vv == 0.0 {
            continue;
        }
        for c in 0..n {
            let dot: f64 = (0..len).map(|i| v[i] * a.at(j + i, c)).sum();
            let f = 2.0 * dot / vv;
            for i in 0..len {
                let x = a.at(j + i, c) - f * v[i];
                a.set(j + i, c, x);
            }
        }
    }
}

/// `U diag(sigma) Vᵀ` (`m x n`) with Haar-random orthogonal `U` and `V` (LAPACK's
/// `dlatms` with a prescribed spectrum).
pub fn with_singular_values(m: usize, n: usize, sigma: &[f64], rng: &mut Rng) -> Mat {
    let mut a = Mat::zeros(m, n);
    for (i, &s) in sigma.iter().enumerate() {
        a.set(i, i, s);
    }
    random_orthogonal_left(&mut a, rng);
    let mut t = a.t();
    random_orthogonal_left(&mut t, rng);
    t.t()
}

/// A Haar-random orthogonal `n x n` matrix.
pub fn haar(n: usize, rng: &mut Rng) -> Mat {
    let mut q = Mat::eye(n);
    random_orthogonal_left(&mut q, rng);
    q
}

/// `Q diag(lambda) Qᵀ` (symmetric, `n x n`) with a Haar-random orthogonal `Q`.
pub fn with_eigenvalues(lambda: &[f64], rng: &mut Rng) -> Mat {
    let n = lambda.len();
    let q = haar(n, rng);
    let mut a = Mat::zeros(n, n);
    for i in 0..n {
        for j in 0..n {
            a.set(i, j, (0..n).map(|p| q.at(i, p) * lambda[p] * q.at(j, p)).sum());
        }
    }
    // exactly symmetric
    for i in 0..n {
        for j in 0..i {
            let x = 0.5 * (a.at(i, j) + a.at(j, i));
            a.set(i, j, x);
            a.set(j, i, x);
        }
    }
    a
}

/// The spectra of LAPACK's `dlatms` modes 1-5 for `k` values and condition `cond`, largest
/// 1: 1 one large / rest small, 2 one small / rest large, 3 geometric, 4 arithmetic,
/// 5 random log-uniform; descending (mode 5 sorted).
pub fn spectrum(mode: usize, k: usize, cond: f64, rng: &mut Rng) -> Vec<f64> {
    let small = 1.0 / cond;
    let mut s: Vec<f64> = (0..k)
        .map(|i| match mode {
            1 => {
                if i == 0 {
                    1.0
                } else {
                    small
                }
            }
            2 => {
                if i + 1 < k {
                    1.0
                } else {
                    small
                }
            }
            3 => {
                if k == 1 {
                    1.0
                } else {
                    small.powf(i as f64 / (k - 1) as f64)
                }
            }
            4 => {
                if k == 1 {
                    1.0
                } else {
                    1.0 - (i as f64 / (k - 1) as f64) * (1.0 - small)
                }
            }
            _ => (rng.uniform() * small.ln()).exp(),
        })
        .collect();
    s.sort_by(|a, b| b.total_cmp(a));
    s
}

/// A Gaussian `m x n` matrix.
pub fn gaussian(m: usize, n: usize, rng: &mut Rng) -> Mat {
    Mat { m, n, a: rng.normals(m * n) }
}

/// The product of Gaussian `m x r` and `r x n` factors (rank `r`).
pub fn of_rank(m: usize, n: usize, r: usize, rng: &mut Rng) -> Mat {
    gaussian(m, r, rng).matmul(&gaussian(r, n, rng))
}

/// A test matrix: its family's name, the matrix, its singular values (eigenvalues for the
/// symmetric families) when prescribed, and its op's exact result when known.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub a: Mat,
    pub values: Option<Vec<f64>>,
    /// The exact result of the op the family is built for, where the test knows it
    /// (`exp(A)` of [`exp_cases`]), computed in `f64`.
    pub reference: Option<Mat>,
}

/// The general (rectangular) families at `m x n`: prescribed spectra (modes 1-5 at
/// condition numbers 1e1, 1e8, 1e15), repeated and clustered values, ranks `k / 2` and
/// 1, graded rows and columns, Gaussian matrices scaled toward both ends of the exponent
/// range (and rank-deficient ones scaled too), and the named matrices that are defined
/// at this shape (Hilbert, Kahan, Frank, all-ones, zero, identity).
pub fn general_cases(m: usize, n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed ^ ((m as u64) << 32) ^ (n as u64));
    let k = m.min(n);
    let mut out = Vec::new();
    let mut push = |name: String, a: Mat, values: Option<Vec<f64>>| {
        out.push(Case { name, a, values, reference: None });
    };
    for mode in 1..=5 {
        for cond in [1e1, 1e8, 1e15] {
            if dtype == DType::F32 && cond > 1e8 {
                // (f32 has 7 digits: 1e15 is a rank-deficient matrix there, tested below)
                continue;
            }
            let s = spectrum(mode, k, cond, &mut rng);
            let a = with_singular_values(m, n, &s, &mut rng);
            push(format!("mode{mode}-cond{cond:e}"), a, Some(s));
        }
    }
    if k >= 2 {
        // exactly repeated and clustered
        let rep: Vec<f64> = (0..k).map(|i| if i < k / 2 { 1.0 } else { 0.5 }).collect();
        push("repeated".into(), with_singular_values(m, n, &rep, &mut rng), Some(rep));
        let e = eps(dtype);
        let clu: Vec<f64> = (0..k).map(|i| 1.0 - 4.0 * e * i as f64).collect();
        push("clustered".into(), with_singular_values(m, n, &clu, &mut rng), Some(clu));
        push("rank-half".into(), of_rank(m, n, k / 2, &mut rng), None);
    }
    push("rank-one".into(), of_rank(m, n, 1, &mut rng), None);
    // graded: rows (columns) scaled geometrically over 1e-10 (1e-5 in f32)
    let span: f64 = if dtype == DType::F32 { 1e-5 } else { 1e-10 };
    let g = gaussian(m, n, &mut rng);
    let mut rows = g.clone();
    let mut cols = g.clone();
    for i in 0..m {
        for j in 0..n {
            let fi = if m > 1 { span.powf(i as f64 / (m - 1) as f64) } else { 1.0 };
            let fj = if n > 1 { span.powf(j as f64 / (n - 1) as f64) } else { 1.0 };
            rows.set(i, j, g.at(i, j) * fi);
            cols.set(i, j, g.at(i, j) * fj);
        }
    }
    push("graded-rows".into(), rows, None);
    push("graded-cols".into(), cols, None);
    let scales: &[f64] = if dtype == DType::F32 {
        &[1e-35, 2.5e-32, 4e31, 1e35]
    } else {
        &[1e-300, 2.5e-293, 1e-150, 1e150, 4e292, 1e300]
    };
    let g = gaussian(m, n, &mut rng);
    let r = of_rank(m, n, k.div_ceil(2), &mut rng);
    for &s in scales {
        push(format!("scaled{s:e}"), g.scaled(s), None);
        push(format!("rank-half-scaled{s:e}"), r.scaled(s), None);
    }
    // named matrices
    // Frank: a_ij = n + 1 - max(i, j) (1-based) on and above the subdiagonal
    let frank = Mat::from_fn(m, n, |i, j| if i <= j + 1 { (n - i.max(j)) as f64 } else { 0.0 });
    let eye = Mat::from_fn(m, n, |i, j| if i == j { 1.0 } else { 0.0 });
    push("hilbert".into(), Mat::hilbert(m, n), None);
    push("ones".into(), Mat::from_fn(m, n, |_, _| 1.0), None);
    push("frank".into(), frank, None);
    push("identity".into(), eye, None);
    push("zero".into(), Mat::zeros(m, n), None);
    if m == n {
        // Kahan: diag(1, s, s², ...) times the unit upper triangle with -c above
        let theta: f64 = 1.2;
        let (s, c) = (theta.sin(), theta.cos());
        let mut kahan = Mat::zeros(n, n);
        for i in 0..n {
            let si = s.powi(i as i32);
            kahan.set(i, i, si);
            for j in i + 1..n {
                kahan.set(i, j, -c * si);
            }
        }
        push("kahan".into(), kahan, None);
    }
    out.into_iter().map(|c| Case { a: c.a.rounded(dtype), ..c }).collect()
}

/// The symmetric families at order `n`: prescribed eigenvalues (modes 1-5, both signs
/// for mode 3, at conditions 1e1, 1e8, 1e15), repeated, rank `n / 2`,
/// scaled Gaussian symmetric matrices, Wilkinson's `W⁺`, Hilbert, all-ones, zero,
/// identity.
pub fn symmetric_cases(n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed ^ ((n as u64) << 40) ^ 0x5157);
    let mut out = Vec::new();
    let mut push = |name: String, a: Mat, values: Option<Vec<f64>>| {
        out.push(Case { name, a, values, reference: None });
    };
    for mode in 1..=5 {
        for cond in [1e1, 1e8, 1e15] {
            if dtype == DType::F32 && cond > 1e8 {
                continue;
            }
            let mut l = spectrum(mode, n, cond, &mut rng);
            if mode == 3 {
                for (i, x) in l.iter_mut().enumerate() {
                    if i % 2 == 1 {
                        *x = -*x;
                    }
                }
            }
            let a = with_eigenvalues(&l, &mut rng);
            l.sort_by(f64::total_cmp);
            push(format!("mode{mode}-cond{cond:e}"), a, Some(l));
        }
    }
    if n >= 2 {
        let mut rep: Vec<f64> = (0..n).map(|i| if i < n / 2 { 1.0 } else { -0.5 }).collect();
        let a = with_eigenvalues(&rep, &mut rng);
        rep.sort_by(f64::total_cmp);
        push("repeated".into(), a, Some(rep));
        let x = gaussian(n, n / 2, &mut rng);
        push("rank-half".into(), x.matmul(&x.t()), None);
    }
    let g = gaussian(n, n, &mut rng);
    let sym = g.t().sub(&g.scaled(-1.0)).scaled(0.5);
    let scales: &[f64] =
        if dtype == DType::F32 { &[1e-35, 1e35] } else { &[1e-300, 1e-150, 1e150, 1e300] };
    for &s in scales {
        push(format!("scaled{s:e}"), sym.scaled(s), None);
    }
    // Wilkinson's W⁺: |i − (n − 1)/2| on the diagonal, ones beside it
    let half = (n as f64 - 1.0) / 2.0;
    let wilk = Mat::from_fn(n, n, |i, j| {
        if i == j {
            (i as f64 - half).abs()
        } else if i.abs_diff(j) == 1 {
            1.0
        } else {
            0.0
        }
    });
    push("wilkinson".into(), wilk, None);
    push("hilbert".into(), Mat::hilbert(n, n), None);
    push("ones".into(), Mat::from_fn(n, n, |_, _| 1.0), None);
    push("identity".into(), Mat::eye(n), None);
    push("zero".into(), Mat::zeros(n, n), None);
    out.into_iter().map(|c| Case { a: c.a.rounded(dtype), ..c }).collect()
}

/// `‖I − XᵀX‖₁ / (rows · eps)` for the `rows x cols` `x` (LAPACK's `dort01`).
pub fn orthogonality(x: &Mat, e: f64) -> f64 {
    let g = x.t().matmul(x);
    let d = g.sub(&Mat::eye(x.n));
    d.norm1() / (x.m.max(1) as f64 * e)
}

/// `‖A − B‖₁ / (‖A‖₁ · order · eps)` with both divided by a power of two near `A`'s largest
/// entry first (`B` is given already divided by `unit`); `‖A − B‖₁ / eps`-like when
/// `A = 0` (LAPACK: the residual over `ulp` then).
pub fn backward_ratio(a: &Mat, b_over_unit: &Mat, unit: f64, order: usize, e: f64) -> f64 {
    let an = a.scaled(1.0 / unit);
    let r = an.sub(b_over_unit).norm1();
    let norm = an.norm1();
    let order = order.max(1) as f64;
    if norm == 0.0 {
        if r == 0.0 {
            0.0
        } else {
            r / (order * e)
        }
    } else if r.is_nan() {
        f64::INFINITY
    } else {
        r / norm / (order * e)
    }
}

/// `max |x_i − y_i| / (scale · order · eps)`; infinite for different lengths or a NaN.
pub fn value_ratio(x: &[f64], y: &[f64], scale: f64, order: usize, e: f64) -> f64 {
    if x.len() != y.len() {
        return f64::INFINITY;
    }
    let worst = x.iter().zip(y).map(|(a, b)| (a - b).abs()).fold(0.0f64, |m, d| {
        if d.is_nan() {
            f64::NAN
        } else {
            m.max(d)
        }
    });
    if worst.is_nan() {
        return f64::INFINITY;
    }
    if worst == 0.0 {
        return 0.0;
    }
    worst / (scale * order.max(1) as f64 * e)
}

/// Symmetric positive-definite families at order `n`: positive prescribed spectra (modes
/// 1-5 at conditions 1e1 and 1e6 in f64, 1e1 and 1e3 in f32, so that the matrix stays
/// numerically definite), scaled toward both ends of the exponent range, `XᵀX + n I`,
/// the identity, and Hilbert's matrix while it is numerically definite (order 8 in f64,
/// 4 in f32).
pub fn spd_cases(n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed ^ ((n as u64) << 40) ^ 0x59d);
    let mut out = Vec::new();
    let mut push = |name: String, a: Mat, values: Option<Vec<f64>>| {
        out.push(Case { name, a, values, reference: None });
    };
    let conds: &[f64] = if dtype == DType::F32 { &[1e1, 1e3] } else { &[1e1, 1e6] };
    for mode in 1..=5 {
        for &cond in conds {
            let mut l = spectrum(mode, n, cond, &mut rng);
            let a = with_eigenvalues(&l, &mut rng);
            l.sort_by(f64::total_cmp);
            push(format!("mode{mode}-cond{cond:e}"), a, Some(l));
        }
    }
    let x = gaussian(n, n, &mut rng);
    let mut g = x.t().matmul(&x);
    for i in 0..n {
        g.set(i, i, g.at(i, i) + n as f64);
    }
    let scales: &[f64] =
        if dtype == DType::F32 { &[1e-30, 1e30] } else { &[1e-300, 1e-150, 1e150, 1e300] };
    for &s in scales {
        push(format!("scaled{s:e}"), g.scaled(s), None);
    }
    push("gram".into(), g, None);
    push("identity".into(), Mat::eye(n), None);
    if n <= if dtype == DType::F32 { 4 } else { 8 } {
        push("hilbert".into(), Mat::hilbert(n, n), None);
    }
    out.into_iter().map(|c| Case { a: c.a.rounded(dtype), ..c }).collect()
}

/// The matrix exponential's families at order `n`, each with its exponential computed
/// independently in `f64` from a known decomposition `A = Q D Qᵀ` (`Q` Haar-random
/// orthogonal, `exp(A) = Q exp(D) Qᵀ`): symmetric with prescribed eigenvalues (modes 1, 3,
/// 5 at condition 1e4, alternating in sign, scaled so that the largest is 1, 30, or near
/// the exponent's limit: 700 in f64, 80 in f32); skew-symmetric (`D` of 2 x 2 rotation
/// generators, `exp(D)` their rotations); a Jordan block `J = −I/2 + N` rotated (defective,
/// `exp(J)ᵢⱼ = e^{−1/2} / (j − i)!`); the unrotated shift `2N` (`exp(2N)ᵢⱼ = 2^{j−i} /
/// (j − i)!`); a symmetric Gaussian scaled near underflow (`exp(A) = I + A` to the last
/// bit); zero and the identity.
pub fn exp_cases(n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed ^ ((n as u64) << 40) ^ 0xe4a);
    let mut out = Vec::new();
    let conj = |q: &Mat, d: &Mat| q.matmul(d).matmul(&q.t());
    let mut push = |name: String, a: Mat, e: Mat| {
        out.push(Case { name, a, values: None, reference: Some(e) });
    };
    let big = if dtype == DType::F32 { 80.0 } else { 700.0 };
    for mode in [1, 3, 5] {
        for t in [1.0, 30.0, big] {
            let l: Vec<f64> = spectrum(mode, n, 1e4, &mut rng)
                .iter()
                .enumerate()
                .map(|(i, x)| if i % 2 == 1 { -t * x } else { t * x })
                .collect();
            let q = haar(n, &mut rng);
            let diag = |f: fn(f64) -> f64| {
                let mut d = Mat::zeros(n, n);
                for (i, &x) in l.iter().enumerate() {
                    d.set(i, i, f(x));
                }
                d
            };
            let mut a = conj(&q, &diag(|x| x));
            for i in 0..n {
                for j in 0..i {
                    let x = 0.5 * (a.at(i, j) + a.at(j, i));
                    a.set(i, j, x);
                    a.set(j, i, x);
                }
            }
            push(format!("sym-mode{mode}-norm{t}"), a, conj(&q, &diag(f64::exp)));
        }
    }
    // rotation generators of angles up to 10
    let (mut d, mut e) = (Mat::zeros(n, n), Mat::eye(n));
    for k in 0..n / 2 {
        let th = 10.0 * rng.uniform();
        let (i, j) = (2 * k, 2 * k + 1);
        d.set(i, j, -th);
        d.set(j, i, th);
        e.set(i, i, th.cos());
        e.set(j, j, th.cos());
        e.set(i, j, -th.sin());
        e.set(j, i, th.sin());
    }
    let q = haar(n, &mut rng);
    push("skew".into(), conj(&q, &d), conj(&q, &e));
    let mut fact = vec![1.0f64; n];
    for k in 1..n {
        fact[k] = fact[k - 1] * k as f64;
    }
    let jordan = Mat::from_fn(n, n, |i, j| match j.checked_sub(i) {
        Some(0) => -0.5,
        Some(1) => 1.0,
        _ => 0.0,
    });
    let ej = Mat::from_fn(n, n, |i, j| j.checked_sub(i).map_or(0.0, |k| (-0.5f64).exp() / fact[k]));
    let q = haar(n, &mut rng);
    push("jordan".into(), conj(&q, &jordan), conj(&q, &ej));
    let shift = Mat::from_fn(n, n, |i, j| if j == i + 1 { 2.0 } else { 0.0 });
    let es =
        Mat::from_fn(n, n, |i, j| j.checked_sub(i).map_or(0.0, |k| 2f64.powi(k as i32) / fact[k]));
    push("shift".into(), shift, es);
    let g = gaussian(n, n, &mut rng);
    let tiny = if dtype == DType::F32 { 1e-35 } else { 1e-300 };
    let sym = g.t().sub(&g.scaled(-1.0)).scaled(0.5 * tiny).rounded(dtype);
    let mut e = sym.clone();
    for i in 0..n {
        e.set(i, i, 1.0 + e.at(i, i));
    }
    push("tiny".into(), sym, e);
    push("zero".into(), Mat::zeros(n, n), Mat::eye(n));
    push("identity".into(), Mat::eye(n), Mat::eye(n).scaled(1f64.exp()));
    out.into_iter().map(|c| Case { a: c.a.rounded(dtype), ..c }).collect()
}

/// The nonsymmetric families at order `n` for the general eigenproblem: the general
/// square families of [`general_cases`] (prescribed singular values, rank-deficient,
/// graded, scaled toward both ends of the exponent range, the named matrices), and `Q T
/// Qᵀ` with `Q` Haar-random orthogonal and `T` upper quasi-triangular with prescribed
/// eigenvalues (LAPACK's `dlatme` in spirit): the moduli of modes 1-5 at conditions 1e1,
/// 1e8 (and 1e15 in f64), every other pair of them a complex pair `r e^{±iθ}` (a 2 x 2
/// block), a Gaussian strictly upper part of standard deviation `1 / n`; a Jordan
/// block (defective, a single eigenvalue of multiplicity `n`) and a companion-like
/// shift (all eigenvalues zero), each rotated. `values` holds no eigenvalues (they are
/// ill-conditioned in the nonnormal cases: the ratios are backward errors).
pub fn nonsymmetric_cases(n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    let mut out = general_cases(n, n, dtype, seed);
    let mut rng = Rng::new(seed ^ ((n as u64) << 40) ^ 0xe16);
    let conj = |q: &Mat, t: &Mat| q.matmul(t).matmul(&q.t());
    let mut push = |name: String, a: Mat| {
        out.push(Case { name, a: a.rounded(dtype), values: None, reference: None });
    };
    for mode in 1..=5 {
        for cond in [1e1, 1e8, 1e15] {
            if dtype == DType::F32 && cond > 1e8 {
                continue;
            }
            let r = spectrum(mode, n, cond, &mut rng);
            let mut t = Mat::zeros(n, n);
            let mut i = 0;
            while i < n {
                if i + 1 < n && (i / 2) % 2 == 1 {
                    // a complex pair r e^{±iθ}: [[a, b], [−c, a]], b c = (r sin θ)²
                    let th = 0.1 + 3.0 * rng.uniform();
                    let (re, im) = (r[i] * th.cos(), r[i] * th.sin());
                    let k = 0.5 + rng.uniform();
                    t.set(i, i, re);
                    t.set(i + 1, i + 1, re);
                    t.set(i, i + 1, im * k);
                    t.set(i + 1, i, -im / k);
                    i += 2;
                } else {
                    t.set(i, i, if rng.uniform() < 0.5 { -r[i] } else { r[i] });
                    i += 1;
                }
            }
            for i in 0..n {
                for j in i + 1..n {
                    // (not the off-diagonal entry of a 2 x 2 block)
                    if !(j == i + 1 && t.at(i + 1, i) != 0.0) {
                        t.set(i, j, t.at(i, j) + rng.normal() / n as f64);
                    }
                }
            }
            let q = haar(n, &mut rng);
            push(format!("eig-mode{mode}-cond{cond:e}"), conj(&q, &t));
        }
    }
    let jordan = Mat::from_fn(n, n, |i, j| match j.checked_sub(i) {
        Some(0) => 0.5,
        Some(1) => 1.0,
        _ => 0.0,
    });
    let q = haar(n, &mut rng);
    push("jordan".into(), conj(&q, &jordan));
    let shift = Mat::from_fn(n, n, |i, j| if j == i + 1 { 1.0 } else { 0.0 });
    let q = haar(n, &mut rng);
    push("shift-rotated".into(), conj(&q, &shift));
    out
}
