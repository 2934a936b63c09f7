//! `linalg.qr` and `linalg.householder_product`: reconstruction and orthogonality over a
//! size sweep, LAPACK's sign gauge and its determinism, layouts, gradients against finite
//! differences (first and second order), and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg};
use cotangent::linalg::{householder_product, qr, QrMode};
use cotangent::{DType, Error, Tensor};

const SIZES: [usize; 7] = [0, 1, 2, 3, 5, 17, 64];

/// `QᵀQ − I` is small, `Q R = A`, and `R` is upper triangular.
fn check_factors(a: &Tensor, q: &Tensor, r: &Tensor, what: &str) {
    let kq = q.dims()[q.rank() - 1];
    let scale = 1.0 + max_abs(a);
    let qtq = q.mT().unwrap().matmul(q).unwrap();
    let eye = Tensor::eye(kq, DType::F64).unwrap().broadcast_to(qtq.shape().clone()).unwrap();
    assert!(max_abs(&qtq.sub(&eye).unwrap()) < 1e-13 * (kq as f64 + 1.0), "{what}: QᵀQ = I");
    let back = q.matmul(r).unwrap();
    assert_eq!(back.shape(), a.shape(), "{what}: shape of Q R");
    assert!(
        max_abs(&back.sub(a).unwrap()) < 1e-13 * scale * (a.dims()[a.rank() - 2] as f64 + 1.0),
        "{what}: Q R = A"
    );
    assert_eq!(max_abs(&r.tril(-1).unwrap()), 0.0, "{what}: R upper triangular");
}

#[test]
fn factors_reconstruct_over_a_size_sweep() {
    // Q R = A, QᵀQ = I, R = triu(R) for tall, square and wide matrices, unbatched and
    // batched, in reduced and complete modes; mode R gives reduced mode's R, bit for bit
    for &s in &SIZES {
        for (m, n) in [(s, s), (s + s / 2 + 1, s), (s, s + s / 2 + 1)] {
            for batch in [vec![], vec![3], vec![2, 1]] {
                let mut shape = batch.clone();
                shape.extend([m, n]);
                let a = randn(&shape, (m * 131 + n) as u64);
                let k = m.min(n);
                let what = format!("{shape:?}");
                let f = qr(&a, QrMode::Reduced).unwrap();
                assert_eq!(f.q.dims()[batch.len()..], [m, k], "{what}");
                assert_eq!(f.r.dims()[batch.len()..], [k, n], "{what}");
                check_factors(&a, &f.q, &f.r, &what);
                let c = qr(&a, QrMode::Complete).unwrap();
                assert_eq!(c.q.dims()[batch.len()..], [m, m], "{what}");
                assert_eq!(c.r.dims()[batch.len()..], [m, n], "{what}");
                check_factors(&a, &c.q, &c.r, &format!("{what} complete"));
                let r = qr(&a, QrMode::R).unwrap();
                assert_eq!(r.q.dims(), &[0]);
                assert_eq!(r.r.to_vec_f64(), f.r.to_vec_f64(), "{what}: mode R");
                // the first k columns of the complete Q are the reduced Q
                assert_close(&c.q.narrow(-1, 0, k).unwrap(), &f.q, 1e-12);
            }
        }
    }
}

#[test]
fn large_matrices_use_the_blocked_kernel() {
    // above 48 x 48 entries with both dims > 16: faer's blocked QR, same sign rule
    // from min(m, n) = 128 our panels over faer's kernels (a partial last panel at 150)
    for (m, n) in [(100, 70), (70, 100), (130, 130), (300, 150), (150, 300), (160, 160)] {
        let a = randn(&[m, n], 7);
        let f = qr(&a, QrMode::Reduced).unwrap();
        check_factors(&a, &f.q, &f.r, &format!("{m}x{n}"));
        let c = qr(&a, QrMode::Complete).unwrap();
        check_factors(&a, &c.q, &c.r, &format!("{m}x{n} complete"));
        assert_lapack_signs(&a, &f.r);
    }
}

#[test]
fn large_rank_deficient_matrices_still_factorise() {
    // a column repeated (exactly rank-deficient) or zero: the panels give way to faer's
    // whole-matrix QR, which skips the column; Q R = A and QᵀQ = I all the same
    for (m, n, src, dst) in [(200, 200, 10, 50), (260, 180, 3, 170), (200, 200, 40, 41)] {
        let mut v = randn(&[m, n], 8).to_vec_f64();
        for i in 0..m {
            v[i * n + dst] = if src == dst { 0.0 } else { v[i * n + src] };
        }
        let a = Tensor::from_vec(v, (m, n)).unwrap();
        let f = qr(&a, QrMode::Reduced).unwrap();
        check_factors(&a, &f.q, &f.r, &format!("{m}x{n} col {dst} = col {src}"));
    }
    let mut v = randn(&[200, 200], 9).to_vec_f64();
    for i in 0..200 {
        v[i * 200 + 77] = 0.0;
    }
    let a = Tensor::from_vec(v, (200, 200)).unwrap();
    let f = qr(&a, QrMode::Complete).unwrap();
    check_factors(&a, &f.q, &f.r, "200x200, column 77 zero");
}

/// A plain Householder QR (LAPACK's `geqr2` sign rule: `R_jj = −sign(pivot) ‖x‖`, no
/// reflection when the column is already zero below the diagonal), written out for the
/// test: the reference for the kernels' sign gauge. Returns `R` (`k x n`, row-major).
fn reference_r(a: &Tensor) -> Vec<f64> {
    let (m, n) = (a.dims()[0], a.dims()[1]);
    let k = m.min(n);
    let mut w = a.to_vec_f64(); // row-major
    for j in 0..k {
        let alpha = w[j * n + j];
        let xnorm = (j + 1..m).map(|i| w[i * n + j].powi(2)).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        let mut v = vec![1.0];
        v.extend((j + 1..m).map(|i| w[i * n + j] / (alpha - beta)));
        for c in j..n {
            let s: f64 = (j..m).map(|i| v[i - j] * w[i * n + c]).sum::<f64>() * tau;
            for i in j..m {
                w[i * n + c] -= s * v[i - j];
            }
        }
    }
    let mut r = vec![0.0; k * n];
    for i in 0..k {
        for c in i..n {
            r[i * n + c] = w[i * n + c];
        }
    }
    r
}

/// `R` has LAPACK's signs (and values) for `a`, and `Q = A R⁻¹` follows.
fn assert_lapack_signs(a: &Tensor, r: &Tensor) {
    let want = reference_r(a);
    let got = r.to_vec_f64();
    let n = a.dims()[1];
    for i in 0..a.dims()[0].min(n) {
        assert_eq!(got[i * n + i].signum(), want[i * n + i].signum(), "R[{i}, {i}]");
    }
    common::close(&got, &want, 1e-10);
}

#[test]
fn signs_follow_lapack_and_are_deterministic() {
    // A = [[3, 1], [4, 2]]: the first reflector maps (3, 4) to −5 e₁ (β = −sign(3) · 5),
    // as LAPACK's dgeqrf (and PyTorch): R = [[−5, −2.2], [0, 0.4]]
    let a = Tensor::from_vec(vec![3.0f64, 1.0, 4.0, 2.0], (2, 2)).unwrap();
    let f = qr(&a, QrMode::Reduced).unwrap();
    assert_close(&f.r, &Tensor::from_vec(vec![-5.0f64, -2.2, 0.0, 0.4], (2, 2)).unwrap(), 1e-14);
    assert_close(&f.q, &Tensor::from_vec(vec![-0.6f64, -0.8, -0.8, 0.6], (2, 2)).unwrap(), 1e-14);
    // a column already zero below the diagonal is not reflected: R_jj keeps its sign
    let a = Tensor::from_vec(vec![2.0f64, 1.0, 0.0, -3.0], (2, 2)).unwrap();
    let f = qr(&a, QrMode::Reduced).unwrap();
    assert_eq!(f.r.to_vec_f64(), vec![2.0, 1.0, 0.0, -3.0]);
    assert_eq!(f.q.to_vec_f64(), vec![1.0, 0.0, 0.0, 1.0]);
    for shape in [[6usize, 4], [4, 6], [5, 5], [20, 17], [64, 64]] {
        let a = randn(&shape, 3);
        assert_lapack_signs(&a, &qr(&a, QrMode::Reduced).unwrap().r);
    }
    // the same input gives the same bits, batched (rayon over the batch) or one by one
    let a = randn(&[64, 6, 4], 11);
    let f1 = qr(&a, QrMode::Reduced).unwrap();
    let f2 = qr(&a, QrMode::Reduced).unwrap();
    assert_eq!(f1.q.to_vec_f64(), f2.q.to_vec_f64());
    assert_eq!(f1.r.to_vec_f64(), f2.r.to_vec_f64());
    for i in [0, 17, 63] {
        let g = qr(&a.select(0, i).unwrap(), QrMode::Reduced).unwrap();
        assert_eq!(g.q.to_vec_f64(), f1.q.select(0, i).unwrap().to_vec_f64());
        assert_eq!(g.r.to_vec_f64(), f1.r.select(0, i).unwrap().to_vec_f64());
    }
}

#[test]
fn non_contiguous_inputs_give_the_same_factors() {
    // transposed (mT), sliced with a step, and expanded inputs: the same bits as contiguous
    let base = randn(&[3, 7, 5], 21);
    let views = [
        base.mT().unwrap(),
        base.slice(-2, 0, 7, 2).unwrap(),
        base.slice(-1, 1, 5, 1).unwrap(),
        randn(&[1, 6, 4], 22).broadcast_to(vec![3, 6, 4]).unwrap(),
    ];
    for v in views {
        let c = v.contiguous().unwrap();
        for mode in [QrMode::Reduced, QrMode::Complete, QrMode::R] {
            let (f, g) = (qr(&v, mode).unwrap(), qr(&c, mode).unwrap());
            assert_eq!(f.q.to_vec_f64(), g.q.to_vec_f64());
            assert_eq!(f.r.to_vec_f64(), g.r.to_vec_f64());
        }
    }
}

#[test]
fn empty_and_degenerate() {
    // as PyTorch: (0, 3) → Q (0, 0), R (0, 3); (5, 0) complete → Q = I₅, R (5, 0);
    // a zero batch keeps its shape
    let f = qr(&randn(&[0, 3], 1), QrMode::Reduced).unwrap();
    assert_eq!((f.q.dims(), f.r.dims()), (&[0usize, 0][..], &[0usize, 3][..]));
    let f = qr(&randn(&[2, 5, 0], 1), QrMode::Complete).unwrap();
    assert_eq!((f.q.dims(), f.r.dims()), (&[2usize, 5, 5][..], &[2usize, 5, 0][..]));
    assert_eq!(
        f.q.select(0, 1).unwrap().to_vec_f64(),
        Tensor::eye(5, DType::F64).unwrap().to_vec_f64()
    );
    let f = qr(&randn(&[0, 4, 3], 1), QrMode::Reduced).unwrap();
    assert_eq!((f.q.dims(), f.r.dims()), (&[0usize, 4, 3][..], &[0usize, 3, 3][..]));
    // a zero matrix: Q = I, R = 0 (every reflector is the identity)
    let f = qr(&Tensor::zeros((3, 2), DType::F64).unwrap(), QrMode::Reduced).unwrap();
    assert_eq!(f.r.to_vec_f64(), vec![0.0; 4]);
    assert_eq!(f.q.to_vec_f64(), vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    // NaN propagates (no loop waits on it)
    let a = Tensor::from_vec(vec![f64::NAN, 1.0, 2.0, 3.0], (2, 2)).unwrap();
    assert!(qr(&a, QrMode::Reduced).unwrap().r.to_vec_f64().iter().any(|x| x.is_nan()));
    // huge entries do not overflow the norms
    let a = randn(&[4, 3], 5).mul_scalar(1e200).unwrap();
    let f = qr(&a, QrMode::Reduced).unwrap();
    assert!(max_abs(&f.q.matmul(&f.r).unwrap().sub(&a).unwrap()) < 1e-13 * max_abs(&a));
}

#[test]
fn f32_and_bf16() {
    let a = randn(&[2, 5, 3], 4);
    let f64r = qr(&a, QrMode::Reduced).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 3e-2)] {
        let f = qr(&a.to_dtype(dt).unwrap(), QrMode::Reduced).unwrap();
        assert_eq!((f.q.dtype(), f.r.dtype()), (dt, dt));
        assert_close(&f.q.to_dtype(DType::F64).unwrap(), &f64r.q, tol);
        assert_close(&f.r.to_dtype(DType::F64).unwrap(), &f64r.r, tol);
    }
}

/// Both factors, for the gradient checks (the loss uses both).
fn both(mode: QrMode) -> impl Fn(&[Tensor]) -> cotangent::Result<Vec<Tensor>> + Copy {
    move |x| {
        let f = qr(&x[0], mode)?;
        Ok(vec![f.q, f.r])
    }
}

#[test]
fn gradients_first_and_second_order() {
    // reduced tall, square, wide; complete square and wide (where it equals reduced);
    // batched; each with both outputs, then Q alone and R alone
    for (shape, mode) in [
        (vec![4, 3], QrMode::Reduced),
        (vec![3, 3], QrMode::Reduced),
        (vec![3, 5], QrMode::Reduced),
        (vec![1, 1], QrMode::Reduced),
        (vec![3, 3], QrMode::Complete),
        (vec![2, 4], QrMode::Complete),
        (vec![2, 4, 2], QrMode::Reduced),
        (vec![2, 2, 3], QrMode::Reduced),
    ] {
        let a = rg(randn(&shape, 31));
        let name = format!("{shape:?} {mode:?}");
        check2(&name, std::slice::from_ref(&a), both(mode));
        check2(&format!("{name} Q only"), std::slice::from_ref(&a), move |x| {
            Ok(vec![qr(&x[0], mode)?.q])
        });
        check2(&format!("{name} R only"), &[a], move |x| Ok(vec![qr(&x[0], mode)?.r]));
    }
}

#[test]
fn fused_backward_matches_the_recorded_one() {
    // without create_graph the VJP of a tall or square QR runs fused per matrix; with it,
    // as tensor ops: the same gradient, for Q and R cotangents alone and together, with
    // strided (transposed, expanded) cotangents and an f32 case
    use cotangent::autograd::{grad, GradOptions};
    for (shape, dt) in [
        (vec![5, 3], DType::F64),
        (vec![4, 4], DType::F64),
        (vec![300, 4, 2], DType::F64),
        (vec![2, 6, 6], DType::F32),
        // batches of small square matrices: several at a time, with a remainder
        (vec![19, 4, 4], DType::F64),
        (vec![11, 16, 16], DType::F64),
        (vec![9, 3, 3], DType::F32),
        // faer's products and triangular solve: one thread, split across threads (from
        // order 128), a batch, a partial last column block, f32
        (vec![40, 33], DType::F64),
        (vec![300, 200], DType::F64),
        (vec![3, 150, 130], DType::F64),
        (vec![140, 140], DType::F32),
    ] {
        let a = rg(randn(&shape, 71).to_dtype(dt).unwrap());
        let f = qr(&a, QrMode::Reduced).unwrap();
        let gq = randn(f.q.dims(), 72).to_dtype(dt).unwrap();
        let gr = randn(&[f.r.dims()[f.r.rank() - 1]; 2], 73).to_dtype(dt).unwrap().mT().unwrap();
        let gr = gr.broadcast_to(f.r.shape().clone()).unwrap();
        for (q_used, r_used) in [(true, true), (true, false), (false, true)] {
            let mut outs = vec![];
            let mut cots = vec![];
            if q_used {
                outs.push(&f.q);
                cots.push(Some(&gq));
            }
            if r_used {
                outs.push(&f.r);
                cots.push(Some(&gr));
            }
            let run = |create_graph| {
                let opts = GradOptions { create_graph, allow_unused: false };
                grad(&outs, &cots, &[&a], opts).unwrap()[0].clone().unwrap()
            };
            let tol = if dt == DType::F32 { 1e-4 } else { 1e-12 };
            assert_close(
                &run(false).to_dtype(DType::F64).unwrap(),
                &run(true).to_dtype(DType::F64).unwrap(),
                tol,
            );
        }
    }
}

#[test]
fn batches_of_small_square_matrices_match_one_by_one() {
    // batches of square matrices up to 16 are factorised several at a time (a remainder
    // one by one, and a matrix whose column below the diagonal is zero redone alone):
    // the same factors as one matrix at a time, in both modes, also from a transposed view
    for n in [1, 2, 3, 4, 7, 16, 17] {
        for transposed in [false, true] {
            // matrix 2: its first column zero below the diagonal (H = I, τ = 0)
            let mut v = randn(&[19, n, n], 5 + n as u64).to_vec_f64();
            for i in 1..n {
                v[2 * n * n + i * n] = 0.0;
            }
            let mut a = Tensor::from_vec(v, vec![19, n, n]).unwrap();
            if transposed {
                // the same values through a transposed view
                a = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
            }
            for mode in [QrMode::Reduced, QrMode::R] {
                let f = qr(&a, mode).unwrap();
                for b in 0..19isize {
                    let one = qr(&a.select(0, b).unwrap(), mode).unwrap();
                    let what = format!("n {n}, transposed {transposed}, {mode:?}, matrix {b}");
                    assert_close(&f.r.select(0, b).unwrap(), &one.r, 1e-13);
                    if mode == QrMode::Reduced {
                        assert_close(&f.q.select(0, b).unwrap(), &one.q, 1e-13);
                        check_factors(&a.select(0, b).unwrap(), &one.q, &one.r, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn gradient_through_a_composition() {
    // a loss of Q and R together through later ops: sum(Q² ∘ W) + trace(R)
    let a = rg(randn(&[5, 3], 41));
    let w = randn(&[5, 3], 42);
    let w = &w;
    check2("composition", &[a], move |x| {
        let f = qr(&x[0], QrMode::Reduced)?;
        Ok(vec![f.q.mul(&f.q)?.mul(w)?.sum()?.add(&f.r.diagonal(0, -2, -1)?.sum()?)?])
    });
}

#[test]
fn mode_r_and_complete_tall_are_not_differentiable() {
    // PyTorch raises at backward: mode='r' (the derivative depends on Q) and complete with
    // m > n (Q's completion is arbitrary)
    let a = rg(randn(&[4, 3], 1));
    for mode in [QrMode::R, QrMode::Complete] {
        let f = qr(&a, mode).unwrap();
        let e = f.r.sum().unwrap().backward().unwrap_err();
        assert!(matches!(e, Error::NotDifferentiable { op: "linalg.qr", .. }), "{e:?}");
        assert!(e.to_string().contains("linalg.qr"), "{e}");
    }
    let e = qr(&a, QrMode::R).unwrap().r.sum().unwrap().backward().unwrap_err();
    assert!(e.to_string().contains("mode R"), "{e}");
    // forward works without history, and complete mode is differentiable when m <= n
    let w = rg(randn(&[3, 4], 2));
    let f = qr(&w, QrMode::Complete).unwrap();
    assert!(f.q.sum().unwrap().add(&f.r.sum().unwrap()).unwrap().backward().is_ok());
}

#[test]
fn qr_errors_name_the_op() {
    for (a, is_shape) in [
        (randn(&[3], 1), true),
        (Tensor::scalar(1.0f64), true),
        (randn(&[3, 3], 1).to_dtype(DType::I64).unwrap(), false),
    ] {
        let e = qr(&a, QrMode::Reduced).unwrap_err();
        assert!(e.to_string().starts_with("linalg.qr"), "{e}");
        if is_shape {
            assert!(matches!(e, Error::BadShape { .. }), "{e:?}");
        } else {
            assert!(matches!(e, Error::UnsupportedDType { .. }), "{e:?}");
        }
    }
}

/// `H₁ … H_k` applied to the first `n` columns of `I`, one reflector at a time.
fn reflectors_one_by_one(v: &Tensor, tau: &[f64]) -> Tensor {
    let (m, n) = (v.dims()[0], v.dims()[1]);
    let mut q = Tensor::eye(m, DType::F64).unwrap().narrow(1, 0, n).unwrap();
    let vv = v.to_vec_f64();
    for i in (0..tau.len()).rev() {
        let col: Vec<f64> = (0..m)
            .map(|r| match r.cmp(&i) {
                std::cmp::Ordering::Less => 0.0,
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Greater => vv[r * n + i],
            })
            .collect();
        let vi = Tensor::from_vec(col, (m, 1)).unwrap();
        let h = Tensor::eye(m, DType::F64)
            .unwrap()
            .sub(&vi.matmul(&vi.mT().unwrap()).unwrap().mul_scalar(tau[i]).unwrap())
            .unwrap();
        q = h.matmul(&q).unwrap();
    }
    q
}

#[test]
fn householder_product_is_the_product_of_reflectors() {
    for (m, n, k) in [(4, 3, 2), (5, 5, 5), (3, 3, 0), (6, 2, 1), (1, 1, 1), (17, 9, 9)] {
        let v = randn(&[m, n], (m * 10 + n) as u64);
        let tau_v = randn(&[k], 3).to_vec_f64();
        let tau = Tensor::from_vec(tau_v.clone(), k).unwrap();
        let q = householder_product(&v, &tau).unwrap();
        assert_close(&q, &reflectors_one_by_one(&v, &tau_v), 1e-12);
    }
    // batched, and zero-size
    let v = randn(&[2, 3, 5, 3], 1);
    let tau = randn(&[2, 3, 2], 2);
    let q = householder_product(&v, &tau).unwrap();
    let q1 = householder_product(
        &v.select(0, 1).unwrap().select(0, 2).unwrap(),
        &tau.select(0, 1).unwrap().select(0, 2).unwrap(),
    )
    .unwrap();
    assert_close(&q.select(0, 1).unwrap().select(0, 2).unwrap(), &q1, 0.0);
    let q = householder_product(&randn(&[0, 0], 1), &randn(&[0], 1)).unwrap();
    assert_eq!(q.dims(), &[0, 0]);
    let q = householder_product(&randn(&[0, 4, 3], 1), &randn(&[0, 2], 1)).unwrap();
    assert_eq!(q.dims(), &[0, 4, 3]);
    // with tau = 2 / ‖v_i‖² each H_i is a reflection: the result has orthonormal columns
    let v = randn(&[6, 4], 9);
    let vu = v
        .tril(-1)
        .unwrap()
        .add(&Tensor::eye(6, DType::F64).unwrap().narrow(1, 0, 4).unwrap())
        .unwrap();
    let tau = vu
        .mul(&vu)
        .unwrap()
        .sum_dims(&[0], false)
        .unwrap()
        .reciprocal()
        .unwrap()
        .mul_scalar(2.0)
        .unwrap();
    let q = householder_product(&v, &tau).unwrap();
    let qtq = q.mT().unwrap().matmul(&q).unwrap();
    assert_close(&qtq, &Tensor::eye(4, DType::F64).unwrap(), 1e-13);
}

#[test]
fn householder_product_gradients() {
    let v = rg(randn(&[5, 3], 51));
    let tau = rg(randn(&[2], 52));
    check2("householder_product", &[v.clone(), tau.clone()], |x| {
        Ok(vec![householder_product(&x[0], &x[1])?])
    });
    let vb = rg(randn(&[2, 4, 4], 53));
    let taub = rg(randn(&[2, 4], 54));
    check2("batched", &[vb, taub], |x| Ok(vec![householder_product(&x[0], &x[1])?]));
    // the entries on and above the diagonal, and columns k.., are not read: zero gradient
    let q = householder_product(&v, &tau).unwrap();
    let g = q.mul(&randn(&[5, 3], 55)).unwrap().sum().unwrap().backward().unwrap();
    let gv = g.get(&v).unwrap().to_vec_f64();
    for r in 0..5 {
        for c in 0..3 {
            if r <= c || c >= 2 {
                assert_eq!(gv[r * 3 + c], 0.0, "({r}, {c})");
            }
        }
    }
}

#[test]
fn householder_product_errors_name_the_op() {
    let op = "linalg.householder_product";
    let cases: Vec<(Tensor, Tensor)> = vec![
        (randn(&[3, 4], 1), randn(&[2], 2)),       // m < n
        (randn(&[4, 3], 1), randn(&[4], 2)),       // k > n
        (randn(&[4], 1), randn(&[1], 2)),          // not a matrix
        (randn(&[2, 4, 3], 1), randn(&[3, 2], 2)), // batch dims differ
        (randn(&[2, 4, 3], 1), randn(&[2], 2)),    // tau rank
        (randn(&[2, 4, 3], 1), randn(&[1, 2], 2)), // no broadcasting
        (randn(&[4, 3], 1), randn(&[2], 2).to_dtype(DType::F32).unwrap()), // dtype
        (
            randn(&[4, 3], 1).to_dtype(DType::I64).unwrap(),
            randn(&[2], 2).to_dtype(DType::I64).unwrap(),
        ),
    ];
    for (v, tau) in cases {
        let e = householder_product(&v, &tau).unwrap_err();
        assert!(e.to_string().starts_with(op), "{e}");
        assert!(
            matches!(
                e,
                Error::BadShape { .. }
                    | Error::ShapeMismatch { .. }
                    | Error::DTypeMismatch { .. }
                    | Error::UnsupportedDType { .. }
            ),
            "{e:?}"
        );
    }
}

/// A batch `(b, n, n)` of well-conditioned matrices (`I + N(0, 1/4n)`) with a few odd ones
/// among them (matrices 3, 5, 9 and 12): a zero matrix, a rank-deficient one (two equal
/// columns), one with a NaN and one with an infinity.
fn batch_with_odd_matrices(b: usize, n: usize, seed: u64) -> Tensor {
    let mut v = randn(&[b, n, n], seed).to_vec_f64();
    let m = |k: usize| k * n * n;
    for (k, x) in v.iter_mut().enumerate() {
        *x *= 0.5 / (n as f64).sqrt();
        if (k % (n * n)).is_multiple_of(n + 1) {
            *x += 1.0;
        }
    }
    if b > 12 && n > 1 {
        v[m(3)..m(4)].fill(0.0);
        for i in 0..n {
            v[m(5) + i * n + 1] = v[m(5) + i * n];
        }
        v[m(9) + n + 1] = f64::NAN;
        v[m(12)] = f64::INFINITY;
    }
    Tensor::from_vec(v, vec![b, n, n]).unwrap()
}

/// Equal to `tol` (relative to 1), or both non-finite.
fn close_or_both_nonfinite(x: &[f64], y: &[f64], tol: f64, what: &str) {
    assert_eq!(x.len(), y.len(), "{what}");
    for (k, (a, b)) in x.iter().zip(y).enumerate() {
        let ok = if a.is_finite() || b.is_finite() {
            (a - b).abs() <= tol * (1.0 + a.abs())
        } else {
            a.is_nan() == b.is_nan()
        };
        assert!(ok, "{what}: entry {k}: {a} vs {b}");
    }
}

#[test]
fn lane_kernels_match_one_by_one_with_odd_matrices_strides_and_dtypes() {
    // batches of square matrices are factorised eight at a time (a remainder and the lanes
    // that need care redone one by one): the same factors as one matrix at a time (to
    // rounding; a valid factorisation for the rank-deficient one), with zero,
    // rank-deficient, NaN and infinite matrices among regular ones, from strided views,
    // in f64 and f32
    for n in [2, 4, 5, 6, 7, 13, 16] {
        for b in [8, 21] {
            let base = batch_with_odd_matrices(b, n, 40 + n as u64);
            // the same values through a column-major view and through a step-2 slice
            let t = base.mT().unwrap().contiguous().unwrap().mT().unwrap();
            let wide = Tensor::cat(&[&base, &base], -1).unwrap().contiguous().unwrap();
            let stepped = wide.slice(-1, 0, 2 * n as isize, 2).unwrap();
            for (view, dt) in [
                (base.clone(), DType::F64),
                (t, DType::F64),
                (base.to_dtype(DType::F32).unwrap(), DType::F32),
            ] {
                let f = qr(&view, QrMode::Reduced).unwrap();
                for k in 0..b as isize {
                    let one = qr(&view.select(0, k).unwrap(), QrMode::Reduced).unwrap();
                    let what = format!("n {n}, batch {b}, {dt:?}, matrix {k}");
                    let tol = if dt == DType::F32 { 1e-5 } else { 1e-12 };
                    let get = |t: &Tensor| t.to_dtype(DType::F64).unwrap().to_vec_f64();
                    if k == 5 && b > 12 {
                        // rank-deficient: the direction of Q's null column is set by
                        // rounding (fused multiply-adds in the lanes), so another valid
                        // factorisation; check it is one
                        let f64 = |t: &Tensor| t.to_dtype(DType::F64).unwrap();
                        let (q, r) =
                            (f64(&f.q.select(0, k).unwrap()), f64(&f.r.select(0, k).unwrap()));
                        let a = f64(&view.select(0, k).unwrap());
                        let eye = Tensor::eye(n, DType::F64).unwrap();
                        let qtq = q.mT().unwrap().matmul(&q).unwrap();
                        assert!(max_abs(&qtq.sub(&eye).unwrap()) < 100.0 * tol, "{what}: QᵀQ");
                        let back = q.matmul(&r).unwrap().sub(&a).unwrap();
                        assert!(max_abs(&back) < 100.0 * tol, "{what}: Q R");
                        assert_eq!(max_abs(&r.tril(-1).unwrap()), 0.0, "{what}: R triangular");
                        continue;
                    }
                    close_or_both_nonfinite(
                        &get(&f.q.select(0, k).unwrap()),
                        &get(&one.q),
                        tol,
                        &what,
                    );
                    close_or_both_nonfinite(
                        &get(&f.r.select(0, k).unwrap()),
                        &get(&one.r),
                        tol,
                        &what,
                    );
                }
            }
            // strided input: the same bits as its contiguous copy
            let sf = qr(&stepped, QrMode::Reduced).unwrap();
            let cf = qr(&stepped.contiguous().unwrap(), QrMode::Reduced).unwrap();
            let bits = |t: &Tensor| t.to_vec_f64().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&sf.q), bits(&cf.q), "n {n}, batch {b}: strided Q");
            assert_eq!(bits(&sf.r), bits(&cf.r), "n {n}, batch {b}: strided R");
        }
    }
}

#[test]
fn batched_small_qr_and_its_fused_backward_are_deterministic_across_thread_counts() {
    use cotangent::autograd::{grad, GradOptions};
    for (b, n) in [(1024, 16), (203, 16), (4096, 4), (77, 7), (1, 200), (2, 150), (1, 130)] {
        let a = if n > 16 {
            rg(randn(&[b, n, n], 93))
        } else {
            rg(batch_with_odd_matrices(b, n, 90 + n as u64))
        };
        let gq = randn(&[b, n, n], 91);
        let gr = randn(&[b, n, n], 92);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let f = qr(&a, QrMode::Reduced).unwrap();
                let opts = GradOptions { create_graph: false, allow_unused: false };
                let g = grad(&[&f.q, &f.r], &[Some(&gq), Some(&gr)], &[&a], opts).unwrap()[0]
                    .clone()
                    .unwrap();
                let bits = |t: &Tensor| t.to_vec_f64().iter().map(|x| x.to_bits()).collect();
                (bits(&f.q), bits(&f.r), bits(&g)) as (Vec<u64>, Vec<u64>, Vec<u64>)
            })
        };
        let one = run(1);
        for threads in [2, 3, 4, 7] {
            assert!(run(threads) == one, "{b}x{n}x{n}: {threads} threads");
        }
    }
}

#[test]
fn fused_lane_backward_matches_the_recorded_one_over_orders_and_odd_matrices() {
    // the fused VJP of batches of small square matrices (eight at a time, in blocks of
    // four rows or columns): the recorded tensor-op VJP's gradient for every order (block
    // remainders 1..3), with a remainder batch, strided cotangents, f32, and odd matrices
    // (zero, rank-deficient, NaN, infinite) among regular ones, whose gradients must not
    // change the others'
    use cotangent::autograd::{grad, GradOptions};
    for n in [1, 2, 3, 5, 6, 7, 8, 13, 16] {
        for dt in [DType::F64, DType::F32] {
            let b = 21;
            let a = rg(batch_with_odd_matrices(b, n, 60 + n as u64).to_dtype(dt).unwrap());
            let f = qr(&a, QrMode::Reduced).unwrap();
            let gq = randn(&[b, n, n], 61).to_dtype(dt).unwrap();
            // transposed R cotangent (strided)
            let gr = randn(&[b, n, n], 62).to_dtype(dt).unwrap().mT().unwrap();
            let run = |create_graph| {
                let opts = GradOptions { create_graph, allow_unused: false };
                grad(&[&f.q, &f.r], &[Some(&gq), Some(&gr)], &[&a], opts).unwrap()[0]
                    .clone()
                    .unwrap()
                    .to_dtype(DType::F64)
                    .unwrap()
            };
            let (fused, recorded) = (run(false), run(true));
            let odd = [3, 5, 9, 12];
            let tol = if dt == DType::F32 { 2e-3 } else { 1e-9 };
            for k in 0..b {
                if n > 1 && odd.contains(&k) {
                    continue;
                }
                let what = format!("n {n}, {dt:?}, matrix {k}");
                let x = fused.select(0, k as isize).unwrap();
                let y = recorded.select(0, k as isize).unwrap();
                let scale = 1.0 + max_abs(&y);
                assert!(max_abs(&x.sub(&y).unwrap()) <= tol * scale, "{what}");
            }
        }
    }
}
