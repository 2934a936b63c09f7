//! Complex tensors (issue 47, first slice): elementwise ops, reductions, parts and
//! construction, against closed forms; PyTorch's gradient convention; first- and
//! second-order gradient checks of every complex op (real and imaginary parts perturbed
//! separately); and the errors. The PyTorch fixtures of the same ops are in
//! `cotangent-parity`'s suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use common::{check2, crandn, hpd, randn, rg};
use cotangent::{DType, Error, Tensor};

/// A complex128 tensor from its parts.
fn c(re: &[f64], im: &[f64]) -> Tensor {
    let n = re.len();
    Tensor::complex(
        &Tensor::from_vec(re.to_vec(), n).unwrap(),
        &Tensor::from_vec(im.to_vec(), n).unwrap(),
    )
    .unwrap()
}

/// The real and imaginary parts.
fn parts(t: &Tensor) -> (Vec<f64>, Vec<f64>) {
    (t.real().unwrap().to_vec_f64(), t.imag().unwrap().to_vec_f64())
}

#[track_caller]
fn assert_c(t: &Tensor, re: &[f64], im: &[f64]) {
    assert!(t.dtype().is_complex(), "{t}");
    let (r, i) = parts(t);
    for (k, (a, b)) in r.iter().zip(re).chain(i.iter().zip(im)).enumerate() {
        assert!((a - b).abs() <= 1e-15 * (1.0 + b.abs()), "part {k}: {a} vs {b} in {t}");
    }
    assert_eq!((r.len(), i.len()), (re.len(), im.len()));
}

#[test]
fn arithmetic_matches_closed_forms() {
    let a = c(&[1.0], &[2.0]);
    let b = c(&[3.0], &[4.0]);
    assert_c(&a.add(&b).unwrap(), &[4.0], &[6.0]);
    assert_c(&a.sub(&b).unwrap(), &[-2.0], &[-2.0]);
    // (1 + 2i)(3 + 4i) = -5 + 10i; (1 + 2i)/(3 + 4i) = (11 + 2i)/25
    assert_c(&a.mul(&b).unwrap(), &[-5.0], &[10.0]);
    assert_c(&a.div(&b).unwrap(), &[0.44], &[0.08]);
    assert_c(&a.neg().unwrap(), &[-1.0], &[-2.0]);
    assert_c(&a.conj().unwrap(), &[1.0], &[-2.0]);
    // (1 + i)² = 2i, 1/i = -i
    let w = c(&[1.0], &[1.0]);
    assert_c(&w.square().unwrap(), &[0.0], &[2.0]);
    assert_c(&w.pow_scalar(2.0).unwrap(), &[0.0], &[2.0]);
    assert_c(&c(&[0.0], &[1.0]).reciprocal().unwrap(), &[0.0], &[-1.0]);
    // a real operand is promoted: (1 + 2i) · 2 and 2 - (1 + 2i); scalars as well
    let two = Tensor::full((), 2.0, DType::F64).unwrap();
    assert_c(&a.mul(&two).unwrap(), &[2.0], &[4.0]);
    assert_c(&two.sub(&a).unwrap(), &[1.0], &[-2.0]);
    assert_c(&a.add_scalar(1.5).unwrap(), &[2.5], &[2.0]);
    assert_c(&a.mul_scalar(-2.0).unwrap(), &[-2.0], &[-4.0]);
    assert_c(&a.div_scalar(2.0).unwrap(), &[0.5], &[1.0]);
    // c64 with f64 promotes to c128, as torch.result_type; a 0-d f64 does not widen it
    let a64 = a.to_dtype(DType::C64).unwrap();
    assert_eq!(a64.mul(&two.reshape(1).unwrap()).unwrap().dtype(), DType::C128);
    assert_eq!(a64.mul(&two).unwrap().dtype(), DType::C64);
    assert_eq!(a64.mul(&two.to_dtype(DType::F32).unwrap()).unwrap().dtype(), DType::C64);
}

#[test]
fn elementary_functions_take_principal_branches() {
    // e^(iπ) = -1; ln(-1 + 0i) = iπ; ln(-1 - 0i) = -iπ; √(-4 + 0i) = 2i; 1/√(-4) = -i/2
    let e = c(&[0.0], &[PI]).exp().unwrap();
    let (r, i) = parts(&e);
    assert!((r[0] + 1.0).abs() < 1e-15 && i[0].abs() < 1e-15);
    assert_c(&c(&[-1.0], &[0.0]).log().unwrap(), &[0.0], &[PI]);
    assert_c(&c(&[-1.0], &[-0.0]).log().unwrap(), &[0.0], &[-PI]);
    assert_c(&c(&[-4.0], &[0.0]).sqrt().unwrap(), &[0.0], &[2.0]);
    assert_c(&c(&[-4.0], &[0.0]).rsqrt().unwrap(), &[0.0], &[-0.5]);
    // sin(i) = i sinh 1, cos(i) = cosh 1, tanh(iπ/4) = i
    assert_c(&c(&[0.0], &[1.0]).sin().unwrap(), &[0.0], &[1f64.sinh()]);
    assert_c(&c(&[0.0], &[1.0]).cos().unwrap(), &[1f64.cosh()], &[0.0]);
    let t = c(&[0.0], &[FRAC_PI_4]).tanh().unwrap();
    let (r, i) = parts(&t);
    assert!(r[0].abs() < 1e-16 && (i[0] - 1.0).abs() < 1e-15);
    // i^i = e^(-π/2) (a complex exponent)
    let i_ = c(&[0.0], &[1.0]);
    let p = i_.pow(&i_).unwrap();
    let (r, i) = parts(&p);
    assert!((r[0] - (-FRAC_PI_2).exp()).abs() < 1e-16 && i[0].abs() < 1e-16);
    // far from 1: |3e200 + 4e200 i| = 5e200, and a quotient of huge numbers stays finite
    let big = c(&[3e200], &[4e200]);
    assert!((big.abs().unwrap().item::<f64>().unwrap() / 5e200 - 1.0).abs() < 1e-15);
    assert_c(&big.div(&big).unwrap(), &[1.0], &[0.0]);
}

#[test]
fn parts_modulus_argument_and_construction() {
    let z = c(&[3.0, 0.0, -1.0], &[4.0, 1.0, -0.0]);
    assert_eq!(z.real().unwrap().to_vec::<f64>().unwrap(), vec![3.0, 0.0, -1.0]);
    assert_eq!(z.imag().unwrap().to_vec::<f64>().unwrap(), vec![4.0, 1.0, -0.0]);
    assert_eq!(z.abs().unwrap().to_vec::<f64>().unwrap(), vec![5.0, 1.0, 1.0]);
    assert_eq!(z.abs().unwrap().dtype(), DType::F64);
    assert_eq!(
        z.angle().unwrap().to_vec::<f64>().unwrap(),
        vec![(4f64).atan2(3.0), FRAC_PI_2, -PI]
    );
    assert_c(&z.sgn().unwrap(), &[0.6, 0.0, -1.0], &[0.8, 1.0, -0.0]);
    assert_c(&c(&[0.0], &[0.0]).sgn().unwrap(), &[0.0], &[0.0]);
    // the angle of a real number: π below 0, else 0, NaN kept
    let x = Tensor::from_vec(vec![-2.0f64, 0.0, -0.0, 3.0, f64::NAN], 5).unwrap();
    let a = x.angle().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(&a[..4], &[PI, 0.0, 0.0, 0.0]);
    assert!(a[4].is_nan());
    // polar(2, π/2) = 2i; view_as_real / view_as_complex round trip
    let p = Tensor::polar(
        &Tensor::from_vec(vec![2.0f64], 1).unwrap(),
        &Tensor::from_vec(vec![FRAC_PI_2], 1).unwrap(),
    )
    .unwrap();
    let (r, i) = parts(&p);
    assert!(r[0].abs() < 1e-15 && i[0] == 2.0);
    let v = z.view_as_real().unwrap();
    assert_eq!(v.dims(), &[3, 2]);
    assert_eq!(v.to_vec::<f64>().unwrap(), vec![3.0, 4.0, 0.0, 1.0, -1.0, -0.0]);
    assert_c(&v.view_as_complex().unwrap(), &[3.0, 0.0, -1.0], &[4.0, 1.0, -0.0]);
    // complex broadcasts its parts; f32 parts give c64
    let b = Tensor::complex(
        &Tensor::ones((2, 1), DType::F32).unwrap(),
        &Tensor::zeros(3, DType::F32).unwrap(),
    )
    .unwrap();
    assert_eq!((b.dims(), b.dtype()), (&[2usize, 3][..], DType::C64));
    // real() of a real tensor is the tensor; conj() too
    assert_eq!(x.real().unwrap().id(), x.id());
    assert_eq!(x.conj().unwrap().id(), x.id());
}

#[test]
fn reductions() {
    let z = c(&[1.0, 1.0, 2.0], &[1.0, -1.0, 0.5]);
    assert_c(&z.sum().unwrap(), &[4.0], &[0.5]);
    assert_c(&z.mean().unwrap(), &[4.0 / 3.0], &[0.5 / 3.0]);
    // (1 + i)(1 - i) = 2; times (2 + 0.5i)
    assert_c(&z.prod().unwrap(), &[4.0], &[1.0]);
    let m = crandn(&[3, 4], 1);
    let rows = m.sum_dims(&[1], false).unwrap();
    let (re, im) = parts(&m);
    let (sr, si) = parts(&rows);
    for r in 0..3 {
        let (x, y): (f64, f64) =
            (re[4 * r..4 * r + 4].iter().sum(), im[4 * r..4 * r + 4].iter().sum());
        assert!((sr[r] - x).abs() < 1e-14 && (si[r] - y).abs() < 1e-14);
    }
    assert!(matches!(m.amax(&[], false), Err(Error::UnsupportedDType { op: "amax", .. })));
}

#[test]
fn gradient_convention_is_pytorchs() {
    // L = |z|² = Re(z conj z): PyTorch's z.grad is 2z (∂L/∂x + i ∂L/∂y)
    let z = rg(c(&[1.5, -0.5], &[2.0, 3.0]));
    let l = z.mul(&z.conj().unwrap()).unwrap().real().unwrap().sum().unwrap();
    let g = l.backward().unwrap();
    assert_c(g.get(&z).unwrap(), &[3.0, -1.0], &[4.0, 6.0]);
    // L = Re(w z) for a constant w: ∂L/∂x = Re w, ∂L/∂y = -Im w, so z.grad = conj(w)
    let w = c(&[0.5, 2.0], &[-1.0, 0.25]);
    let l = w.mul(&z).unwrap().real().unwrap().sum().unwrap();
    assert_c(l.backward().unwrap().get(&z).unwrap(), &[0.5, 2.0], &[1.0, -0.25]);
    // L = |z|: z.grad = z / |z|
    let l = z.abs().unwrap().sum().unwrap();
    let g = l.backward().unwrap();
    let n0 = 1.5f64.hypot(2.0);
    let n1 = 0.5f64.hypot(3.0);
    assert_c(g.get(&z).unwrap(), &[1.5 / n0, -0.5 / n1], &[2.0 / n0, 3.0 / n1]);
    // a real leaf mixed into a complex op gets a real gradient
    let x = rg(Tensor::from_vec(vec![2.0f64, -1.0], 2).unwrap());
    let l = x.mul(&w).unwrap().imag().unwrap().sum().unwrap();
    let gx = l.backward().unwrap();
    assert_eq!(gx.get(&x).unwrap().to_vec::<f64>().unwrap(), vec![-1.0, 0.25]);
}

/// gradcheck and gradgradcheck of `f` at complex (and real) inputs.
fn cc(name: &str, inputs: &[Tensor], f: fn(&[Tensor]) -> cotangent::Result<Vec<Tensor>>) {
    check2(name, inputs, f);
}

#[test]
fn gradients_of_unary_ops() {
    let z = || rg(crandn(&[2, 3], 7));
    cc("neg", &[z()], |x| Ok(vec![x[0].neg()?]));
    cc("conj", &[z()], |x| Ok(vec![x[0].conj()?]));
    cc("conj_physical", &[z()], |x| Ok(vec![x[0].conj_physical()?]));
    cc("exp", &[z()], |x| Ok(vec![x[0].exp()?]));
    cc("log", &[z()], |x| Ok(vec![x[0].log()?]));
    cc("sqrt", &[z()], |x| Ok(vec![x[0].sqrt()?]));
    cc("rsqrt", &[z()], |x| Ok(vec![x[0].rsqrt()?]));
    cc("square", &[z()], |x| Ok(vec![x[0].square()?]));
    cc("reciprocal", &[z()], |x| Ok(vec![x[0].reciprocal()?]));
    cc("sin", &[z()], |x| Ok(vec![x[0].sin()?]));
    cc("cos", &[z()], |x| Ok(vec![x[0].cos()?]));
    cc("tanh", &[z()], |x| Ok(vec![x[0].tanh()?]));
    cc("pow_scalar", &[z()], |x| Ok(vec![x[0].pow_scalar(2.5)?]));
    cc("pow_scalar_neg", &[z()], |x| Ok(vec![x[0].pow_scalar(-1.5)?]));
    cc("scalar ops", &[z()], |x| {
        Ok(vec![x[0].add_scalar(1.5)?.mul_scalar(-2.0)?.rsub_scalar(0.5)?])
    });
    cc("abs", &[z()], |x| Ok(vec![x[0].abs()?]));
    cc("angle", &[z()], |x| Ok(vec![x[0].angle()?]));
    cc("sgn", &[z()], |x| Ok(vec![x[0].sgn()?]));
    cc("real", &[z()], |x| Ok(vec![x[0].real()?]));
    cc("imag", &[z()], |x| Ok(vec![x[0].imag()?]));
    cc("view_as_real", &[z()], |x| Ok(vec![x[0].view_as_real()?]));
}

#[test]
fn gradients_of_binary_ops_and_reductions() {
    let z = |s: &[usize], seed| rg(crandn(s, seed));
    cc("add", &[z(&[2, 3], 1), z(&[3], 2)], |x| Ok(vec![x[0].add(&x[1])?]));
    cc("sub", &[z(&[2, 1], 3), z(&[1, 3], 4)], |x| Ok(vec![x[0].sub(&x[1])?]));
    cc("mul", &[z(&[2, 3], 5), z(&[3], 6)], |x| Ok(vec![x[0].mul(&x[1])?]));
    cc("div", &[z(&[2, 3], 7), z(&[2, 3], 8)], |x| Ok(vec![x[0].div(&x[1])?]));
    cc("pow", &[z(&[3], 9), z(&[3], 10)], |x| Ok(vec![x[0].pow(&x[1])?]));
    // a real operand promoted
    let r = rg(randn(&[3], 11));
    cc("mul real", &[z(&[2, 3], 12), r.clone()], |x| Ok(vec![x[0].mul(&x[1])?]));
    cc(
        "div by real",
        &[
            z(&[2, 3], 13),
            r.abs().unwrap().add_scalar(0.5).unwrap().detach().with_requires_grad(true).unwrap(),
        ],
        |x| Ok(vec![x[0].div(&x[1])?]),
    );
    cc("sum", &[z(&[2, 3], 14)], |x| Ok(vec![x[0].sum_dims(&[1], false)?, x[0].sum()?]));
    cc("mean", &[z(&[2, 3], 15)], |x| Ok(vec![x[0].mean_dims(&[0], true)?]));
    cc("prod", &[z(&[2, 3], 16)], |x| Ok(vec![x[0].prod_dims(&[1], false)?, x[0].prod()?]));
    // real inputs, complex outputs
    let (a, b) = (rg(randn(&[2, 3], 17)), rg(randn(&[3], 18)));
    cc("complex", &[a.clone(), b.clone()], |x| Ok(vec![Tensor::complex(&x[0], &x[1])?]));
    cc("polar", &[a.abs().unwrap().detach().with_requires_grad(true).unwrap(), b], |x| {
        Ok(vec![Tensor::polar(&x[0], &x[1])?])
    });
    cc("view_as_complex", &[rg(randn(&[3, 2], 19))], |x| Ok(vec![x[0].view_as_complex()?]));
    // a chain through both: |exp(z) w|² summed, a real loss
    cc("chain", &[z(&[4], 20), z(&[4], 21)], |x| {
        let y = x[0].exp()?.mul(&x[1])?;
        Ok(vec![y.mul(&y.conj()?)?.real()?.sum()?])
    });
}

#[test]
fn errors_name_the_op() {
    let z = c(&[1.0, 2.0], &[0.5, -1.0]);
    let x = Tensor::from_vec(vec![1.0f64, 2.0], 2).unwrap();
    // a complex loss has no implied cotangent
    let s = rg(z.clone()).sum().unwrap();
    assert!(matches!(s.backward(), Err(Error::InvalidArgument { op: "backward", .. })));
    assert!(matches!(x.imag(), Err(Error::UnsupportedDType { op: "imag", .. })));
    assert!(matches!(x.view_as_real(), Err(Error::UnsupportedDType { op: "view_as_real", .. })));
    let x3 = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], 3).unwrap();
    assert!(matches!(x3.view_as_complex(), Err(Error::BadShape { op: "view_as_complex", .. })));
    assert!(matches!(z.relu(), Err(Error::UnsupportedDType { op: "relu", .. })));
    assert!(matches!(z.sign(), Err(Error::UnsupportedDType { op: "sign", .. })));
    assert!(matches!(z.clamp(Some(0.0), None), Err(Error::UnsupportedDType { op: "clamp", .. })));
    assert!(matches!(z.maximum(&z), Err(Error::UnsupportedDType { op: "maximum", .. })));
    assert!(matches!(z.amin(&[], false), Err(Error::UnsupportedDType { op: "amin", .. })));
    assert!(matches!(
        Tensor::complex(&x, &x.to_dtype(DType::F32).unwrap()),
        Err(Error::DTypeMismatch { op: "complex", .. })
    ));
}

#[test]
fn complex_to_real_casts_keep_the_real_part_and_differentiate() {
    // PyTorch 2.15: z.to(float64) warns and keeps the real part; (y * [2, 5]).sum()
    // gives z.grad = [2+0j, 5+0j] (and the same through a cast to float32)
    let z = rg(c(&[1.0, 3.0], &[2.0, -1.0]));
    let y = z.to_dtype(DType::F64).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![1.0, 3.0]);
    let w = Tensor::from_vec(vec![2.0f64, 5.0], 2).unwrap();
    let g = y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    assert_c(g.get(&z).unwrap(), &[2.0, 5.0], &[0.0, 0.0]);
    let y32 = z.to_dtype(DType::F32).unwrap();
    assert_eq!(y32.dtype(), DType::F32);
    let g = y32.sum().unwrap().backward().unwrap();
    assert_c(g.get(&z).unwrap(), &[1.0, 1.0], &[0.0, 0.0]);
}

#[test]
fn products() {
    // [[1, i], [2, 1 - i]] · [[1 + i], [2]] = [[1 + 3i], [4]]
    let a = Tensor::complex(
        &Tensor::from_vec(vec![1.0f64, 0.0, 2.0, 1.0], (2, 2)).unwrap(),
        &Tensor::from_vec(vec![0.0f64, 1.0, 0.0, -1.0], (2, 2)).unwrap(),
    )
    .unwrap();
    let x = Tensor::complex(
        &Tensor::from_vec(vec![1.0f64, 2.0], (2, 1)).unwrap(),
        &Tensor::from_vec(vec![1.0f64, 0.0], (2, 1)).unwrap(),
    )
    .unwrap();
    assert_c(&a.matmul(&x).unwrap(), &[1.0, 4.0], &[3.0, 0.0]);
    // mH conjugates; vdot conjugates its first argument, dot does not
    assert_c(&a.mH().unwrap(), &[1.0, 2.0, 0.0, 1.0], &[0.0, 0.0, -1.0, 1.0]);
    let u = c(&[1.0, 0.0], &[1.0, 2.0]);
    let v = c(&[2.0, 1.0], &[0.0, 1.0]);
    // dot: (1 + i)2 + (2i)(1 + i) = 2 + 2i + 2i - 2 = 4i; vdot: (1 - i)2 + (-2i)(1 + i) = 4 - 4i
    assert_c(&u.dot(&v).unwrap(), &[0.0], &[4.0]);
    assert_c(&u.vdot(&v).unwrap(), &[4.0], &[-4.0]);
    assert_c(&u.vecdot(&v, -1).unwrap(), &[4.0], &[-4.0]);
    // against the real formula on a batch, larger than the small-product threshold
    let (p, q) = (crandn(&[3, 20, 30], 40), crandn(&[3, 30, 25], 41));
    let (pr, pi) = (p.real().unwrap(), p.imag().unwrap());
    let (qr, qi) = (q.real().unwrap(), q.imag().unwrap());
    let re = pr.matmul(&qr).unwrap().sub(&pi.matmul(&qi).unwrap()).unwrap();
    let im = pr.matmul(&qi).unwrap().add(&pi.matmul(&qr).unwrap()).unwrap();
    let got = p.matmul(&q).unwrap();
    common::assert_close(&got.real().unwrap(), &re, 1e-13);
    common::assert_close(&got.imag().unwrap(), &im, 1e-13);
    // gradients: matmul with broadcasting, mv, vdot, a real operand
    let z = |s: &[usize], seed| rg(crandn(s, seed));
    cc("matmul", &[z(&[2, 3, 4], 42), z(&[4, 2], 43)], |x| Ok(vec![x[0].matmul(&x[1])?]));
    cc("mv", &[z(&[3, 4], 44), z(&[4], 45)], |x| Ok(vec![x[0].mv(&x[1])?]));
    cc("vdot", &[z(&[4], 46), z(&[4], 47)], |x| Ok(vec![x[0].vdot(&x[1])?]));
    cc("mH", &[z(&[3, 2], 48)], |x| Ok(vec![x[0].mH()?]));
    cc("matmul real", &[z(&[3, 4], 49), rg(randn(&[4, 2], 50))], |x| {
        Ok(vec![x[0].matmul(&x[1].to_dtype(DType::C128)?)?])
    });
}

#[test]
fn triangular_solves_and_cholesky() {
    use cotangent::linalg::{
        cholesky, cholesky_ex, cholesky_inverse, cholesky_solve, solve_triangular, Diag, Side, Uplo,
    };
    // reconstruction: L Lᴴ = A, U = Lᴴ, and L's diagonal real and positive
    let a = hpd(&[2, 5, 5], 60);
    let l = cholesky(&a, Uplo::Lower).unwrap();
    common::assert_close(
        &l.matmul(&l.mH().unwrap()).unwrap().view_as_real().unwrap(),
        &a.view_as_real().unwrap(),
        1e-13,
    );
    let u = cholesky(&a, Uplo::Upper).unwrap();
    common::assert_close(
        &u.view_as_real().unwrap(),
        &l.mH().unwrap().view_as_real().unwrap(),
        1e-14,
    );
    let d = l.diagonal(0, -2, -1).unwrap();
    assert!(d.imag().unwrap().to_vec_f64().iter().all(|&x| x == 0.0));
    assert!(d.real().unwrap().to_vec_f64().iter().all(|&x| x > 0.0));
    // a solve against the product: A X = B
    let b = crandn(&[2, 5, 3], 61);
    let x = cholesky_solve(&b, &l, Uplo::Lower).unwrap();
    common::assert_close(
        &a.matmul(&x).unwrap().view_as_real().unwrap(),
        &b.view_as_real().unwrap(),
        1e-12,
    );
    let y = solve_triangular(&l, &b, Uplo::Lower, Side::Left, Diag::NonUnit).unwrap();
    common::assert_close(
        &l.matmul(&y).unwrap().view_as_real().unwrap(),
        &b.view_as_real().unwrap(),
        1e-12,
    );
    let ainv = cholesky_inverse(&l, Uplo::Lower).unwrap();
    let eye = Tensor::eye(5, DType::C128).unwrap().broadcast_to((2, 5, 5)).unwrap();
    common::assert_close(
        &a.matmul(&ainv).unwrap().view_as_real().unwrap(),
        &eye.view_as_real().unwrap(),
        1e-12,
    );
    // not positive definite: info names the order of the failing minor
    let m = c(&[1.0, 2.0, 2.0, 1.0], &[0.0, 0.5, -0.5, 0.0]).reshape((2, 2)).unwrap();
    let r = cholesky_ex(&m, Uplo::Lower).unwrap();
    assert_eq!(r.info.to_vec::<i64>().unwrap(), vec![2]);
    assert!(matches!(cholesky(&m, Uplo::Lower), Err(Error::NotPositiveDefinite { .. })));
    // gradients (the input made Hermitian inside, so every perturbation is one the
    // factorisation sees)
    cc("cholesky", &[rg(crandn(&[2, 3, 3], 62))], |x| {
        let n = 3.0;
        let a = x[0]
            .add(&x[0].mH()?)?
            .mul_scalar(0.5)?
            .add(&Tensor::eye(3, DType::C128)?.mul_scalar(n)?)?;
        Ok(vec![cholesky(&a, Uplo::Lower)?])
    });
    cc("cholesky upper", &[rg(crandn(&[3, 3], 63))], |x| {
        let a = x[0]
            .add(&x[0].mH()?)?
            .mul_scalar(0.5)?
            .add(&Tensor::eye(3, DType::C128)?.mul_scalar(3.0)?)?;
        Ok(vec![cholesky(&a, Uplo::Upper)?])
    });
    let tri = |seed| {
        rg(crandn(&[3, 3], seed)
            .add(&Tensor::eye(3, DType::C128).unwrap().mul_scalar(3.0).unwrap())
            .unwrap()
            .detach())
    };
    cc("solve_triangular", &[tri(64), rg(crandn(&[3, 2], 65))], |x| {
        Ok(vec![solve_triangular(&x[0], &x[1], Uplo::Upper, Side::Left, Diag::NonUnit)?])
    });
    cc("solve_triangular right unit", &[tri(66), rg(crandn(&[2, 3], 67))], |x| {
        Ok(vec![solve_triangular(&x[0], &x[1], Uplo::Lower, Side::Right, Diag::Unit)?])
    });
    // (their factor's gradient is PyTorch's full matrix, the gradient for a general
    // factor: checked through the triangle the op reads)
    cc("cholesky_solve", &[rg(crandn(&[3, 2], 68)), tri(69)], |x| {
        Ok(vec![cholesky_solve(&x[0], &x[1].tril(0)?, Uplo::Lower)?])
    });
    cc("cholesky_inverse", &[tri(70)], |x| {
        Ok(vec![cholesky_inverse(&x[0].triu(0)?, Uplo::Upper)?])
    });
}

#[test]
fn structure_and_norms() {
    use cotangent::linalg::{matrix_norm, vector_norm, NormOrd};
    // ‖(3 + 4i, 0, -2i)‖₂ = √29, ‖·‖₁ = 7, ‖·‖∞ = 5
    let v = c(&[3.0, 0.0, 0.0], &[4.0, 0.0, -2.0]);
    assert!(
        (vector_norm(&v, 2.0, None, false).unwrap().item::<f64>().unwrap() - 29f64.sqrt()).abs()
            < 1e-15
    );
    assert_eq!(vector_norm(&v, 1.0, None, false).unwrap().item::<f64>().unwrap(), 7.0);
    assert_eq!(vector_norm(&v, f64::INFINITY, None, false).unwrap().item::<f64>().unwrap(), 5.0);
    // the spectral orders through the complex SVD: ‖diag(3i, -2, 1 + i)‖_* = 5 + √2
    let m = c(
        &[0.0, 0.0, 0.0, 0.0, -2.0, 0.0, 0.0, 0.0, 1.0],
        &[3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    )
    .reshape((3, 3))
    .unwrap();
    let nuc = matrix_norm(&m, NormOrd::Nuc, [-2, -1], false).unwrap().item::<f64>().unwrap();
    assert!((nuc - 5.0 - 2f64.sqrt()).abs() < 1e-14, "{nuc}");
    let z = |s: &[usize], seed| rg(crandn(s, seed));
    cc("trace", &[z(&[3, 4], 81)], |x| Ok(vec![x[0].trace()?]));
    cc("tril", &[z(&[3, 4], 82)], |x| Ok(vec![x[0].tril(-1)?]));
    cc("kron", &[z(&[2, 3], 83), z(&[2, 2], 84)], |x| Ok(vec![x[0].kron(&x[1])?]));
    cc("cross", &[z(&[2, 3], 90), z(&[2, 3], 91)], |x| Ok(vec![x[0].cross(&x[1], -1)?]));
    cc("matrix_power", &[z(&[3, 3], 85)], |x| Ok(vec![x[0].matrix_power(3)?]));
    cc("vector_norm 2", &[z(&[3, 4], 86)], |x| {
        Ok(vec![vector_norm(&x[0], 2.0, Some(&[-1]), false)?])
    });
    cc("vector_norm 3", &[z(&[5], 87)], |x| Ok(vec![vector_norm(&x[0], 3.0, None, false)?]));
    cc("matrix_norm fro", &[z(&[2, 3, 3], 88)], |x| {
        Ok(vec![matrix_norm(&x[0], NormOrd::Fro, [-2, -1], false)?])
    });
    cc("matrix_norm 1", &[z(&[3, 4], 89)], |x| {
        Ok(vec![matrix_norm(&x[0], NormOrd::P(1.0), [-2, -1], false)?])
    });
}

#[test]
fn random_complex_tensors() {
    use cotangent::Generator;
    // torch.randn: independent parts of variance 1/2, so E|z|² = 1
    let z = Tensor::randn(20_000, DType::C128, &mut Generator::new(3)).unwrap();
    let (re, im) = parts(&z);
    let var = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64;
    assert!(
        (var(&re) - 0.5).abs() < 0.03 && (var(&im) - 0.5).abs() < 0.03,
        "{} {}",
        var(&re),
        var(&im)
    );
    let corr = re.iter().zip(&im).map(|(a, b)| a * b).sum::<f64>() / re.len() as f64;
    assert!(corr.abs() < 0.02, "{corr}");
    assert_eq!(
        Tensor::randn((2, 3), DType::C64, &mut Generator::new(0)).unwrap().dtype(),
        DType::C64
    );
    // torch.rand: each part uniform in [0, 1)
    let u = Tensor::rand(1000, DType::C64, &mut Generator::new(4)).unwrap();
    let (re, im) = parts(&u);
    assert!(re.iter().chain(&im).all(|&x| (0.0..1.0).contains(&x)));
}
