//! Helpers shared by the linear-algebra test files: seeded inputs, well-posed matrices
//! (well conditioned, symmetric positive-definite, triangular), tolerances, and the
//! first-and-second-order gradient check.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cotangent::autograd::{gradcheck, gradgradcheck, GradcheckOptions};
use cotangent::{DType, Generator, Result, Tensor};

/// Standard normal entries, seeded.
pub fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn(shape.to_vec(), DType::F64, &mut Generator::new(seed)).unwrap()
}

/// `t` as a leaf that requires grad.
pub fn rg(t: Tensor) -> Tensor {
    t.with_requires_grad(true).unwrap()
}

/// A well-conditioned matrix (batch): `n I + N(0, 1)` entries, in f64.
pub fn well_conditioned(shape: &[usize], seed: u64) -> Tensor {
    let n = shape[shape.len() - 1];
    let eye = Tensor::eye(n, DType::F64).unwrap().mul_scalar(n as f64).unwrap();
    randn(shape, seed).add(&eye).unwrap()
}

/// A symmetric positive-definite matrix (batch): `X Xᵀ / n + I`.
pub fn spd(shape: &[usize], seed: u64) -> Tensor {
    let n = shape[shape.len() - 1];
    let x = randn(shape, seed);
    let eye = Tensor::eye(n, DType::F64).unwrap();
    x.matmul(&x.mT().unwrap()).unwrap().div_scalar(n as f64).unwrap().add(&eye).unwrap()
}

/// Asserts `|a - b| <= tol (1 + |b|)` elementwise.
pub fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "element {i}: {x} vs {y}");
    }
}

/// Asserts two tensors have the same shape and close values (complex ones part by part).
pub fn assert_close(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.shape(), b.shape(), "shapes");
    assert_eq!(a.dtype().is_complex(), b.dtype().is_complex(), "complex and real");
    if a.dtype().is_complex() {
        let parts = |t: &Tensor| t.view_as_real().unwrap().to_vec_f64();
        close(&parts(a), &parts(b), tol);
    } else {
        close(&a.to_vec_f64(), &b.to_vec_f64(), tol);
    }
}

/// Seeded complex128 entries with standard normal real and imaginary parts.
pub fn crandn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::complex(&randn(shape, seed), &randn(shape, seed + 1000)).unwrap()
}

/// A well-conditioned complex matrix (batch): `n I + ` complex normal entries.
pub fn cwell(shape: &[usize], seed: u64) -> Tensor {
    let n = shape[shape.len() - 1];
    let eye = Tensor::eye(n, DType::C128).unwrap().mul_scalar(n as f64).unwrap();
    crandn(shape, seed).add(&eye).unwrap()
}

/// The complex128 identity of order `n`, broadcast to `batch + [n, n]`.
pub fn ceye(n: usize, batch: &[usize]) -> Tensor {
    let mut dims = batch.to_vec();
    dims.extend([n, n]);
    Tensor::eye(n, DType::C128).unwrap().broadcast_to(dims).unwrap()
}

/// Asserts the phase gauge of complex factors: in each matrix of `v` (`(*, m, c)`), each
/// of the first `k` columns has its entry of largest modulus (the first on ties) real and
/// positive.
pub fn assert_phase_gauge(v: &Tensor, k: usize) {
    let r = v.rank();
    let (m, c) = (v.dims()[r - 2], v.dims()[r - 1]);
    let (vr, vi) = (v.real().unwrap().to_vec_f64(), v.imag().unwrap().to_vec_f64());
    let count = vr.len() / (m * c).max(1);
    for b in 0..count {
        for j in 0..k {
            let at = |x: usize| b * m * c + x * c + j;
            let md = |x: usize| vr[at(x)].hypot(vi[at(x)]);
            let big = (0..m).fold(0, |best, x| if md(x) > md(best) { x } else { best });
            assert!(vr[at(big)] > 0.0 && vi[at(big)] == 0.0, "matrix {b}, column {j}");
        }
    }
}

/// A Hermitian positive-definite complex matrix (batch): `X Xᴴ / n + I`.
pub fn hpd(shape: &[usize], seed: u64) -> Tensor {
    let n = shape[shape.len() - 1];
    let x = crandn(shape, seed);
    let eye = Tensor::eye(n, DType::C128).unwrap();
    x.matmul(&x.mH().unwrap()).unwrap().div_scalar(n as f64).unwrap().add(&eye).unwrap()
}

/// The largest absolute entry of `t`.
pub fn max_abs(t: &Tensor) -> f64 {
    t.to_vec_f64().iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// gradcheck, gradgradcheck and the forward-mode check of `f` at `inputs` (f64, finite
/// differences; JVPs also against the VJPs).
pub fn check2(name: &str, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy) {
    let o = GradcheckOptions::default();
    let r = gradcheck(f, inputs, &o).unwrap();
    assert!(r.passed, "{name}: {r}");
    let r = gradgradcheck(f, inputs, &o).unwrap();
    assert!(r.passed, "{name} (2nd order): {r}");
    check_fwd_only_reverse(name, inputs, f);
}

/// Forward mode of `f` (its JVPs against finite differences and against its VJPs), the
/// part of [`check2`] that checks every row in forward mode too.
fn check_fwd_only_reverse(
    name: &str,
    inputs: &[Tensor],
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy,
) {
    let r = cotangent::autograd::gradcheck_forward(f, inputs, &GradcheckOptions::default());
    let r = r.unwrap();
    assert!(r.passed, "{name} (forward): {r}");
}

/// Forward mode of `f` at `inputs` (f64) against finite differences only: for outputs
/// whose reverse mode refuses general cotangents (complex eigenvectors, whose phases a
/// loss must not see), checked through their tangents, which follow the forward's gauge.
pub fn check_fwd_only(
    name: &str,
    inputs: &[Tensor],
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy,
) {
    let o = GradcheckOptions { check_reverse: false, ..GradcheckOptions::default() };
    let r = cotangent::autograd::gradcheck_forward(f, inputs, &o).unwrap();
    assert!(r.passed, "{name} (forward): {r}");
}

/// Forward mode of `f` at `inputs` (f64): its JVPs against finite differences and
/// against its VJPs (`gradcheck_forward`), and forward-over-reverse: the same check of
/// the function `(x, u) ↦ Σ_k J_kᵀ u_k` (the VJP, recorded), whose JVPs are the rules
/// a Hessian-vector product runs.
pub fn check_fwd(
    name: &str,
    inputs: &[Tensor],
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy,
) {
    use cotangent::autograd::{grad, gradcheck_forward, GradOptions};
    let o = GradcheckOptions::default();
    let r = gradcheck_forward(f, inputs, &o).unwrap();
    assert!(r.passed, "{name} (forward): {r}");
    // the VJP as a function of the inputs and fixed cotangents
    let ys = f(inputs).unwrap();
    let us: Vec<Tensor> = ys
        .iter()
        .enumerate()
        .map(|(k, y)| {
            let u = randn(y.dims(), 900 + k as u64);
            if y.dtype().is_complex() {
                let v = randn(y.dims(), 950 + k as u64);
                Tensor::complex(&u, &v).unwrap()
            } else {
                u.to_dtype(y.dtype()).unwrap()
            }
        })
        .collect();
    let vjp = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let ys = f(xs)?;
        let (mut outs, mut cots) = (vec![], vec![]);
        for (y, u) in ys.iter().zip(&us) {
            if y.requires_grad() && y.dtype().is_differentiable() {
                outs.push(y);
                cots.push(Some(u));
            }
        }
        let targets: Vec<&Tensor> = xs.iter().filter(|x| x.requires_grad()).collect();
        let opts = GradOptions { create_graph: true, allow_unused: true };
        let gs = grad(&outs, &cots, &targets, opts)?;
        gs.into_iter().zip(&targets).map(|(g, x)| g.map_or_else(|| x.zeros_like(), Ok)).collect()
    };
    let r = gradcheck_forward(vjp, inputs, &o).unwrap();
    assert!(r.passed, "{name} (forward over reverse): {r}");
}

/// The gradient of `outs` (with cotangents `cots`) at `a`, with and without recording the
/// backward pass: `(fused, recorded)` (the fused first-order kernels run where the pass
/// is not recorded; the tensor-op VJP where it is).
pub fn both_paths(
    outs: &[&Tensor],
    cots: &[Option<&Tensor>],
    a: &Tensor,
) -> (cotangent::Result<Tensor>, cotangent::Result<Tensor>) {
    use cotangent::autograd::{grad, GradOptions};
    let run = |create_graph| {
        let opts = GradOptions { create_graph, allow_unused: false };
        grad(outs, cots, &[a], opts).map(|g| g[0].clone().unwrap())
    };
    (run(false), run(true))
}
