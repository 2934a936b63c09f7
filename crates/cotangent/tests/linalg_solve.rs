//! `solve`, `solve_ex`, `inv`, `inv_ex`, `det`, `slogdet`, `logdet`: solutions against
//! reconstruction, PyTorch's vector right-hand side rule and batch broadcasting,
//! gradients to second order, singular input (errors, `info`, the determinant's
//! gradient at rank n-1 and n-2, `-inf` log-determinants) and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, randn, rg, well_conditioned};
use cotangent::autograd::{grad, GradOptions};
use cotangent::linalg::{det, inv, inv_ex, logdet, slogdet, solve, solve_ex, Side};
use cotangent::{DType, Error, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec()).unwrap()
}

#[test]
fn solutions_reconstruct_and_broadcast() {
    // A X = B and X A = B, with batch broadcasting both ways and non-contiguous A
    for (ashape, bl, br) in [
        (vec![4, 4], vec![4, 3], vec![3, 4]),
        (vec![2, 1, 3, 3], vec![5, 3, 2], vec![5, 2, 3]),
        (vec![1, 1], vec![1, 1], vec![1, 1]),
        (vec![17, 17], vec![2, 17, 5], vec![5, 17]),
        (vec![64, 64], vec![64, 2], vec![2, 64]),
    ] {
        let a = well_conditioned(&ashape, 1);
        for a in [a.clone(), a.mT().unwrap()] {
            let b = randn(&bl, 2);
            let x = solve(&a, &b, Side::Left).unwrap();
            let want = b.broadcast_to(x.shape().clone()).unwrap();
            assert_close(&a.matmul(&x).unwrap(), &want, 1e-11);
            let b = randn(&br, 3);
            let x = solve(&a, &b, Side::Right).unwrap();
            let want = b.broadcast_to(x.shape().clone()).unwrap();
            assert_close(&x.matmul(&a).unwrap(), &want, 1e-11);
        }
    }
}

#[test]
fn vector_right_hand_sides_follow_pytorch() {
    // b is a vector when 1-d, or when b.shape == a.shape[:-1]
    let a = well_conditioned(&[2, 3, 3], 1);
    let b = randn(&[3], 2);
    let x = solve(&a, &b, Side::Left).unwrap();
    assert_eq!(x.dims(), &[2, 3]);
    assert_close(
        &a.matmul(&x.unsqueeze(-1).unwrap()).unwrap().squeeze_dim(-1).unwrap(),
        &b.broadcast_to((2, 3)).unwrap(),
        1e-12,
    );
    let b = randn(&[2, 3], 3);
    let x = solve(&a, &b, Side::Left).unwrap();
    assert_eq!(x.dims(), &[2, 3]);
    // (3, 3) with (2, 3): not a batch of vectors (shape differs from a.shape[:-1] = (3,)),
    // so a matrix right-hand side of 2 rows: a shape mismatch, as PyTorch
    let e = solve(&well_conditioned(&[3, 3], 1), &randn(&[2, 3], 1), Side::Left).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "linalg.solve", .. }), "{e:?}");
    // left=False refuses vectors (PyTorch)
    let e = solve(&a, &randn(&[3], 1), Side::Right).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    check2("vector rhs", &[rg(well_conditioned(&[3, 3], 4)), rg(randn(&[3], 5))], |x| {
        Ok(vec![solve(&x[0], &x[1], Side::Left)?])
    });
}

#[test]
fn gradients_first_and_second_order() {
    let a = rg(well_conditioned(&[3, 3], 4));
    for side in [Side::Left, Side::Right] {
        let b = rg(randn(&[3, 2], 5).mT().unwrap().contiguous().unwrap());
        let b = if side == Side::Left { rg(randn(&[3, 2], 5)) } else { b };
        check2("solve", &[a.clone(), b], move |x| Ok(vec![solve(&x[0], &x[1], side)?]));
    }
    // broadcast A over a batch of B: A's gradient sums over the batch
    let a1 = rg(well_conditioned(&[1, 3, 3], 6));
    let b = rg(randn(&[2, 3, 2], 7));
    check2("solve broadcast", &[a1, b], |x| Ok(vec![solve(&x[0], &x[1], Side::Left)?]));
    check2("inv", std::slice::from_ref(&a), |x| Ok(vec![inv(&x[0])?]));
    check2("inv batched", &[rg(well_conditioned(&[2, 3, 3], 8))], |x| {
        Ok(vec![inv_ex(&x[0])?.inverse])
    });
    check2("det", std::slice::from_ref(&a), |x| Ok(vec![det(&x[0])?]));
    check2("det batched", &[rg(well_conditioned(&[2, 2, 2], 9))], |x| Ok(vec![det(&x[0])?]));
    check2("slogdet", std::slice::from_ref(&a), |x| Ok(vec![slogdet(&x[0])?.logabsdet]));
    // a matrix with negative determinant: log|det| is still smooth
    let neg = rg(t(&[0., 2., 1., 3., 0., 1., 1., 1., 4.], &[3, 3]));
    check2("slogdet negative", &[neg], |x| Ok(vec![slogdet(&x[0])?.logabsdet]));
    let pos = rg(well_conditioned(&[2, 3, 3], 10));
    check2("logdet", &[pos], |x| Ok(vec![logdet(&x[0])?]));
    check2("solve_ex", &[a.clone(), rg(randn(&[3, 1], 11))], |x| {
        Ok(vec![solve_ex(&x[0], &x[1], Side::Left)?.result])
    });
}

#[test]
fn singular_matrices_error_where_pytorch_does() {
    let z = Tensor::zeros((3, 2, 2), DType::F64).unwrap();
    let e = inv(&z).unwrap_err();
    assert!(matches!(e, Error::Singular { op: "linalg.inv", batch: 0, index: 1 }), "{e:?}");
    let r = inv_ex(&z).unwrap();
    assert_eq!(r.info.to_vec::<i64>().unwrap(), vec![1, 1, 1]);
    let a =
        Tensor::stack(&[&well_conditioned(&[2, 2], 1), &t(&[1., 2., 2., 4.], &[2, 2])], 0).unwrap();
    let e = solve(&a, &randn(&[2, 2, 1], 1), Side::Left).unwrap_err();
    assert!(matches!(e, Error::Singular { op: "linalg.solve", batch: 1, index: 2 }), "{e:?}");
    let r = solve_ex(&a, &randn(&[2, 2, 1], 1), Side::Left).unwrap();
    assert_eq!(r.info.to_vec::<i64>().unwrap(), vec![0, 2]);
    assert_eq!(r.info.dims(), &[2]);
}

#[test]
fn determinants_match_the_definition() {
    let a = t(&[1., 2., 3., 4., 5., 6., 7., 8., 10.], &[3, 3]);
    assert!((det(&a).unwrap().item::<f64>().unwrap() + 3.0).abs() < 1e-12);
    let s = slogdet(&a).unwrap();
    assert_eq!(s.sign.item::<f64>().unwrap(), -1.0);
    assert!((s.logabsdet.item::<f64>().unwrap() - 3f64.ln()).abs() < 1e-12);
    assert!(!s.sign.requires_grad());
    assert!(logdet(&a).unwrap().item::<f64>().unwrap().is_nan());
    // sizes and batches: det(A B) = det A det B
    for n in [0usize, 1, 2, 3, 5, 17, 64] {
        let x = well_conditioned(&[2, n, n], n as u64).div_scalar((n.max(1)) as f64).unwrap();
        let y = well_conditioned(&[2, n, n], 100 + n as u64).div_scalar((n.max(1)) as f64).unwrap();
        let lhs = det(&x.matmul(&y).unwrap()).unwrap();
        let rhs = det(&x).unwrap().mul(&det(&y).unwrap()).unwrap();
        assert_eq!(lhs.dims(), &[2]);
        assert_close(&lhs, &rhs, 1e-10);
    }
    assert_eq!(
        det(&Tensor::zeros((2, 0, 0), DType::F64).unwrap()).unwrap().to_vec_f64(),
        vec![1.0, 1.0]
    );
}

#[test]
fn singular_determinant_gradients_are_the_cofactors() {
    // rank n-1: gA = cofactor matrix, nonzero (PyTorch's SVD branch)
    let a = rg(t(&[1., 2., 2., 4.], &[2, 2]));
    let g = det(&a).unwrap().backward().unwrap();
    assert_close(g.get(&a).unwrap(), &t(&[4., -2., -2., 1.], &[2, 2]), 1e-12);
    let a3 = [1., 2., 3., 2., 4., 6., 1., 1., 1.];
    // cofactors of [[1,2,3],[2,4,6],[1,1,1]]
    let cof = [-2., 4., -2., 1., -2., 1., 0., 0., 0.];
    let a = rg(t(&a3, &[3, 3]));
    let g = det(&a).unwrap().backward().unwrap();
    assert_close(g.get(&a).unwrap(), &t(&cof, &[3, 3]), 1e-12);
    // rank n-2: every (n-1)-minor vanishes, so the gradient is exactly zero
    let a = rg(t(&[1., 2., 3., 2., 4., 6., 3., 6., 9.], &[3, 3]));
    let g = det(&a).unwrap().backward().unwrap();
    assert!(g.get(&a).unwrap().to_vec_f64().iter().all(|v| v.abs() < 1e-12));
    // batched: a singular and a regular matrix together
    let b = Tensor::stack(&[&t(&a3, &[3, 3]), &well_conditioned(&[3, 3], 5)], 0).unwrap();
    let b = rg(b);
    let g = det(&b).unwrap().sum().unwrap().backward().unwrap();
    let gb = g.get(&b).unwrap();
    assert_close(&gb.select(0, 0).unwrap(), &t(&cof, &[3, 3]), 1e-12);
    let w = well_conditioned(&[3, 3], 5);
    let want = inv(&w).unwrap().mT().unwrap().mul(&det(&w).unwrap()).unwrap();
    assert_close(&gb.select(0, 1).unwrap(), &want, 1e-12);
    // a batch that is not one run of memory (its batch dims permuted), each matrix
    // transposed, the singular matrices at the odd places of `mats`: each matrix's
    // gradient is its own cofactor matrix
    let sing = t(&a3, &[3, 3]).mT().unwrap().contiguous().unwrap();
    let reg = well_conditioned(&[3, 3], 9);
    let mats = [&reg, &sing, &w, &sing, &reg, &sing];
    let base = Tensor::stack(&mats, 0).unwrap().reshape(vec![3, 2, 3, 3]).unwrap();
    let x = rg(base.permute(&[1, 0, 3, 2]).unwrap());
    let g = det(&x).unwrap().sum().unwrap().backward().unwrap();
    let gx = g.get(&x).unwrap();
    for i in 0..2 {
        for j in 0..3 {
            let m = mats[j * 2 + i].mT().unwrap();
            let want = if (j * 2 + i) % 2 == 1 {
                t(&cof, &[3, 3])
            } else {
                inv(&m).unwrap().mT().unwrap().mul(&det(&m).unwrap()).unwrap()
            };
            assert_close(
                &gx.select(0, i as isize).unwrap().select(0, j as isize).unwrap(),
                &want,
                1e-11,
            );
        }
    }
    // second order at rank n-1, through the cofactors written with the differentiable
    // SVD. The Hessian of det is known exactly (the cofactor matrix is a polynomial in
    // A): its product with a direction V is the derivative of each 2x2 minor along V.
    // (A finite-difference gradgradcheck is no judge here: next to a singular matrix the
    // gradient is det(A) A⁻ᵀ, whose rounding error, ~ε cond(A), swamps the quotient.)
    let exact_hv = |a: &[f64], v: &[f64]| -> Vec<f64> {
        let mut out = vec![0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                let (r, c) = ([(i + 1) % 3, (i + 2) % 3], [(j + 1) % 3, (j + 2) % 3]);
                let (r, c) = ([r[0].min(r[1]), r[0].max(r[1])], [c[0].min(c[1]), c[0].max(c[1])]);
                let at = |m: &[f64], p: usize, q: usize| m[p * 3 + q];
                let d = at(v, r[0], c[0]) * at(a, r[1], c[1])
                    + at(a, r[0], c[0]) * at(v, r[1], c[1])
                    - at(v, r[0], c[1]) * at(a, r[1], c[0])
                    - at(a, r[0], c[1]) * at(v, r[1], c[0]);
                out[i * 3 + j] = if (i + j) % 2 == 0 { d } else { -d };
            }
        }
        out
    };
    let hv = |a: &Tensor, v: &Tensor| -> Tensor {
        let x = rg(a.clone());
        let opts = GradOptions { create_graph: true, ..Default::default() };
        let g1 = grad(&[&det(&x).unwrap().sum().unwrap()], &[None], &[&x], opts).unwrap()[0]
            .clone()
            .unwrap();
        grad(&[&g1.mul(v).unwrap().sum().unwrap()], &[None], &[&x], GradOptions::default()).unwrap()
            [0]
        .clone()
        .unwrap()
    };
    let v = randn(&[3, 3], 7);
    let want = t(&exact_hv(&a3, &v.to_vec::<f64>().unwrap()), &[3, 3]);
    assert_close(&hv(&t(&a3, &[3, 3]), &v), &want, 1e-10);
    // batched with a regular matrix, whose Hessian is checked the same way
    let w = well_conditioned(&[3, 3], 5);
    let b = Tensor::stack(&[&t(&a3, &[3, 3]), &w], 0).unwrap();
    let vb = randn(&[2, 3, 3], 8);
    let got = hv(&b, &vb);
    assert_close(
        &got.select(0, 0).unwrap(),
        &t(&exact_hv(&a3, &vb.select(0, 0).unwrap().to_vec::<f64>().unwrap()), &[3, 3]),
        1e-10,
    );
    let wv = w.to_vec::<f64>().unwrap();
    let want_w =
        exact_hv(&wv, &vb.select(0, 1).unwrap().contiguous().unwrap().to_vec::<f64>().unwrap());
    assert_close(&got.select(0, 1).unwrap(), &t(&want_w, &[3, 3]), 1e-10);
    // a singular 2x2 [[a, b], [c, d]]: d²det/da dd = 1, d²det/db dc = -1
    let v = t(&[1., 0., 0., 0.], &[2, 2]);
    assert_close(&hv(&t(&[1., 2., 2., 4.], &[2, 2]), &v), &t(&[0., 0., 0., 1.], &[2, 2]), 1e-10);
}

/// The cofactor matrix of a row-major `n x n` matrix from the definition (Laplace
/// expansion of each minor, recursively): an independent reference.
fn cofactors_by_definition(a: &[f64], n: usize) -> Vec<f64> {
    fn det_rec(m: &[f64], n: usize) -> f64 {
        if n == 1 {
            return m[0];
        }
        (0..n)
            .map(|j| {
                let sub: Vec<f64> = (1..n)
                    .flat_map(|r| (0..n).filter(move |&c| c != j).map(move |c| (r, c)))
                    .map(|(r, c)| m[r * n + c])
                    .collect();
                let s = if j % 2 == 0 { 1.0 } else { -1.0 };
                s * m[j] * det_rec(&sub, n - 1)
            })
            .sum()
    }
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let sub: Vec<f64> = (0..n)
                .filter(|&r| r != i)
                .flat_map(|r| (0..n).filter(move |&c| c != j).map(move |c| (r, c)))
                .map(|(r, c)| a[r * n + c])
                .collect();
            let s = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
            out[i * n + j] = if n == 1 { 1.0 } else { s * det_rec(&sub, n - 1) };
        }
    }
    out
}

#[test]
fn small_determinant_gradients_are_the_cofactors_in_every_batch_position() {
    // n <= 4, eleven matrices (lane groups of eight and the rest alone): the first-order
    // gradient (solves with the LU factors where regular, the SVD form near singular) is
    // the cofactor matrix of each, as the definition gives it, regular, of rank n - 1 and
    // of rank n - 2, row-major and in a transposed layout
    for n in 1..=4usize {
        let mut mats = Vec::new();
        for k in 0..11u64 {
            let mut m = randn(&[n, n], 60 + k).to_vec::<f64>().unwrap();
            if k % 3 == 1 && n > 1 {
                // rank n - 1: the last row a combination of the first two (or a copy)
                for c in 0..n {
                    m[(n - 1) * n + c] = 2.0 * m[c] - if n > 2 { m[n + c] } else { 0.0 };
                }
            }
            if k % 3 == 2 && n > 2 {
                // rank n - 2: the last two rows copies of the first
                for r in [n - 2, n - 1] {
                    for c in 0..n {
                        m[r * n + c] = m[c] * (r as f64);
                    }
                }
            }
            mats.push(m);
        }
        let flat: Vec<f64> = mats.concat();
        let a = Tensor::from_vec(flat, vec![11, n, n]).unwrap();
        for (what, x) in [
            ("row-major", a.clone()),
            ("transposed", a.mT().unwrap().contiguous().unwrap().mT().unwrap()),
        ] {
            let x = rg(x);
            let g = det(&x).unwrap().sum().unwrap().backward().unwrap();
            let ga = g.get(&x).unwrap().contiguous().unwrap().to_vec::<f64>().unwrap();
            for (k, m) in mats.iter().enumerate() {
                let want = cofactors_by_definition(m, n);
                let got = &ga[k * n * n..(k + 1) * n * n];
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                        "n {n} {what} matrix {k}: {got:?} vs {want:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn singular_log_determinants_are_minus_infinity() {
    let a = rg(t(&[1., 2., 2., 4.], &[2, 2]));
    let s = slogdet(&a).unwrap();
    assert_eq!(s.logabsdet.item::<f64>().unwrap(), f64::NEG_INFINITY);
    assert_eq!(s.sign.item::<f64>().unwrap(), 0.0);
    assert_eq!(logdet(&a).unwrap().item::<f64>().unwrap(), f64::NEG_INFINITY);
    // the documented gradient: divergent (non-finite), never a silent finite value
    let g = s.logabsdet.backward().unwrap();
    assert!(g.get(&a).unwrap().to_vec_f64().iter().any(|v| !v.is_finite()));
}

#[test]
fn f32_and_bf16() {
    let a = well_conditioned(&[4, 4], 1);
    let b = randn(&[4, 2], 2);
    let x64 = solve(&a, &b, Side::Left).unwrap();
    let d64 = det(&a).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 5e-2)] {
        let x = solve(&a.to_dtype(dt).unwrap(), &b.to_dtype(dt).unwrap(), Side::Left).unwrap();
        assert_eq!(x.dtype(), dt);
        assert_close(&x.to_dtype(DType::F64).unwrap(), &x64, tol);
        let d = det(&a.to_dtype(dt).unwrap()).unwrap();
        assert_close(
            &d.to_dtype(DType::F64).unwrap().div(&d64).unwrap(),
            &Tensor::ones((), DType::F64).unwrap(),
            tol,
        );
    }
}

#[test]
fn errors_name_the_op() {
    let a = well_conditioned(&[3, 3], 1);
    let e = solve(&a, &randn(&[3, 2], 1).to_dtype(DType::F32).unwrap(), Side::Left).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "linalg.solve", .. }), "{e:?}");
    let e = solve(&randn(&[3, 4], 1), &randn(&[3, 2], 1), Side::Left).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.solve", .. }), "{e:?}");
    let e = solve(&a, &randn(&[2, 3, 2], 1).narrow(1, 0, 2).unwrap(), Side::Left).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    let e = solve(&randn(&[2, 3, 3], 1), &randn(&[3, 3, 2], 1), Side::Left).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    for (e, op) in [
        (inv(&randn(&[2, 3], 1)).unwrap_err(), "linalg.inv"),
        (det(&randn(&[2, 3], 1)).unwrap_err(), "linalg.det"),
        (slogdet(&randn(&[3], 1)).unwrap_err(), "linalg.slogdet"),
        (logdet(&randn(&[2, 3], 1)).unwrap_err(), "logdet"),
    ] {
        assert!(e.to_string().starts_with(op), "{e}");
        assert!(matches!(e, Error::BadShape { .. }), "{e:?}");
    }
}

#[test]
fn negative_matrix_powers_tensorinv_and_tensorsolve() {
    use cotangent::linalg::{tensorinv, tensorsolve};
    // A⁻³ A³ = I, batched
    let a = well_conditioned(&[2, 3, 3], 21);
    let p = a.matrix_power(-3).unwrap().matmul(&a.matrix_power(3).unwrap()).unwrap();
    let eye = Tensor::eye(3, DType::F64).unwrap().broadcast_to((2, 3, 3)).unwrap();
    assert_close(&p, &eye, 1e-12);
    check2("matrix_power -2", &[rg(well_conditioned(&[3, 3], 22))], |x| {
        Ok(vec![x[0].matrix_power(-2)?])
    });
    let e = Tensor::zeros((2, 2), DType::F64).unwrap().matrix_power(-1).unwrap_err();
    assert!(matches!(e, Error::Singular { op: "linalg.matrix_power", .. }), "{e:?}");
    // tensorinv: the (6, 6) matrix of a (6, 2, 3) tensor, inverted and reshaped to (2, 3, 6)
    let a = well_conditioned(&[6, 6], 23);
    let x = tensorinv(&a.reshape((6, 2, 3)).unwrap(), 1).unwrap();
    assert_eq!(x.dims(), &[2, 3, 6]);
    assert_close(&x.reshape((6, 6)).unwrap(), &inv(&a).unwrap(), 1e-14);
    check2("tensorinv", &[rg(a.reshape((2, 3, 3, 2)).unwrap())], |x| {
        Ok(vec![tensorinv(&x[0], 2)?])
    });
    assert!(matches!(tensorinv(&a, 0).unwrap_err(), Error::InvalidArgument { .. }));
    assert!(matches!(
        tensorinv(&randn(&[2, 3, 4], 1), 1).unwrap_err(),
        Error::ShapeMismatch { .. }
    ));
    // tensorsolve: tensordot(A, X, 1) = B
    let at = a.reshape((2, 3, 6)).unwrap();
    let b = randn(&[2, 3], 24);
    let x = tensorsolve(&at, &b, None).unwrap();
    assert_eq!(x.dims(), &[6]);
    assert_close(&at.matmul(&x).unwrap(), &b, 1e-12);
    // dims moves A's leading dims to the end: the same system as A permuted
    let ap = at.permute(&[2, 0, 1]).unwrap().contiguous().unwrap();
    let x2 = tensorsolve(&ap, &b, Some(&[0])).unwrap();
    assert_close(&x2, &x, 1e-13);
    check2("tensorsolve", &[rg(at), rg(b)], |x| Ok(vec![tensorsolve(&x[0], &x[1], None)?]));
}

#[test]
fn sliced_inputs_and_nan_give_the_same_or_propagate() {
    // a sliced (non-contiguous, offset) batch gives the results of its contiguous copy
    let big = well_conditioned(&[4, 5, 5], 31);
    let a = big.slice(0, 1, 4, 2).unwrap().narrow(-1, 0, 5).unwrap();
    let ac = a.contiguous().unwrap();
    let b = randn(&[10, 2], 32).slice(0, 0, 10, 2).unwrap();
    let b = b.broadcast_to((2, 5, 2)).unwrap();
    assert_close(
        &solve(&a, &b, Side::Left).unwrap(),
        &solve(&ac, &b.contiguous().unwrap(), Side::Left).unwrap(),
        1e-14,
    );
    assert_close(&inv(&a).unwrap(), &inv(&ac).unwrap(), 1e-14);
    assert_close(&det(&a).unwrap(), &det(&ac).unwrap(), 1e-14);
    // NaN input: no hang, NaN out, and a NaN gradient rather than an SVD of NaN
    let n = rg(t(&[f64::NAN, 1., 2., 3.], &[2, 2]));
    assert!(det(&n).unwrap().item::<f64>().unwrap().is_nan());
    let g = det(&n).unwrap().backward().unwrap();
    assert!(g.get(&n).unwrap().to_vec_f64().iter().any(|v| v.is_nan()));
    let e = inv(&t(&[f64::NAN, 1., 2., 3.], &[2, 2])).unwrap();
    assert!(e.to_vec_f64().iter().any(|v| v.is_nan()));
}

#[test]
fn fused_inverse_paths_agree_with_solves() {
    // inv's forward and the first-order gradients of det and slogdet go through one fused
    // kernel (own loops up to n = 32, faer above); check them against plain solves
    for n in [1usize, 2, 3, 4, 5, 16, 32, 33, 70, 200] {
        let a = well_conditioned(&[2, n, n], 7 + n as u64).div_scalar(n as f64).unwrap();
        let eye = Tensor::eye(n, DType::F64).unwrap().broadcast_to(vec![2, n, n]).unwrap();
        let want = solve(&a, &eye, Side::Left).unwrap();
        assert_close(&inv(&a).unwrap(), &want, 1e-10);
        // d log|det A| = A⁻ᵀ; d det A = det(A) A⁻ᵀ
        let ar = a.with_requires_grad(true).unwrap();
        let s = slogdet(&ar).unwrap().logabsdet.sum().unwrap();
        let g = s.backward().unwrap().get(&ar).unwrap().clone();
        assert_close(&g, &want.mT().unwrap(), 1e-10);
        let d = det(&ar).unwrap();
        let gd = d.sum().unwrap().backward().unwrap().get(&ar).unwrap().clone();
        let scaled =
            want.mT().unwrap().mul(&d.detach().unsqueeze(-1).unwrap().unsqueeze(-1).unwrap());
        assert_close(&gd, &scaled.unwrap(), 1e-9);
    }
}

/// Large inverses from LU factors (inv's forward, det's and slogdet's first-order
/// gradients) go column block by column block, one matrix's columns split across
/// threads: check them against plain solves on matrices that pivot (Gaussian, no
/// diagonal boost, so the column interchanges are exercised), single (split) and
/// batched (not split), contiguous and transposed, and the same bits on 1 and 3 threads.
#[test]
fn large_inverses_with_pivoting_agree_with_solves() {
    for n in [33usize, 64, 130, 200] {
        for batch in [1usize, 2] {
            let a0 = randn(&[batch, n, n], 90 + n as u64);
            for a in [a0.clone(), a0.mT().unwrap()] {
                let eye = Tensor::eye(n, DType::F64).unwrap().broadcast_to(vec![batch, n, n]);
                let want = solve(&a, &eye.unwrap(), Side::Left).unwrap();
                // A X = I holds to the solve's accuracy
                let x = inv(&a).unwrap();
                let r = a.matmul(&x).unwrap().sub(&Tensor::eye(n, DType::F64).unwrap());
                assert!(common::max_abs(&r.unwrap()) < 1e-9, "n {n} batch {batch}");
                assert_close(&x, &want, 1e-8);
                let ar = a.with_requires_grad(true).unwrap();
                let s = slogdet(&ar).unwrap().logabsdet.sum().unwrap();
                let g = s.backward().unwrap().get(&ar).unwrap().clone();
                assert_close(&g, &want.mT().unwrap(), 1e-8);
            }
        }
    }
    let a = randn(&[1, 200, 200], 5);
    let on = |k: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
        pool.install(|| inv(&a).unwrap().to_vec_f64())
    };
    same_bits("threads", &on(3), &on(1));
}

/// The LU kernels write into recycled buffers without clearing them first: a batched
/// solve after a large NaN buffer was freed must still solve exactly.
#[test]
fn solve_into_recycled_buffers() {
    for n in [4, 16] {
        let batch = 8192 / n;
        let a = well_conditioned(&[batch, n, n], 3);
        let b = randn(&[batch, n, 3], 4);
        drop(Tensor::full(vec![batch, n, n], f64::NAN, DType::F64).unwrap());
        drop(Tensor::full(vec![batch, n, 3], f64::NAN, DType::F64).unwrap());
        let x = solve(&a, &b, Side::Left).unwrap();
        assert_close(&a.matmul(&x).unwrap(), &b, 1e-10);
        // batches large enough to be split across threads, lane groups in each task
        let a = well_conditioned(&[65536 / n, n, n], 5);
        let eye = Tensor::eye(n, DType::F64).unwrap().broadcast_to(a.shape().clone()).unwrap();
        assert_close(&a.matmul(&inv(&a).unwrap()).unwrap(), &eye.contiguous().unwrap(), 1e-10);
        let b = randn(&[65536 / n, n, 2], 6);
        assert_close(&a.matmul(&solve(&a, &b, Side::Left).unwrap()).unwrap(), &b, 1e-10);
    }
}

/// `log |det A|` stays exact where `det A` itself overflows or underflows (the
/// logarithm of the product is taken only when the product is a normal number).
#[test]
fn slogdet_beyond_the_range_of_det() {
    for (scale, sign) in [(1e3f64, 1.0), (1e-3, 1.0), (2.0, -1.0)] {
        let n = 200;
        let mut v = vec![0.0; n * n];
        for i in 0..n {
            v[i * n + i] = scale;
        }
        if sign < 0.0 {
            v[0] = -scale;
        }
        let s = slogdet(&Tensor::from_vec(v, (n, n)).unwrap()).unwrap();
        let want = n as f64 * scale.ln();
        assert!((s.logabsdet.item::<f64>().unwrap() - want).abs() <= 1e-12 * want.abs());
        assert_eq!(s.sign.item::<f64>().unwrap(), sign);
    }
}

/// `det`/`slogdet` as LU's factors give them, computed the way the front end did before
/// the backend kernel read them off the factors: `(det, sign, logabsdet)` per matrix, in
/// f64 from `lu_factor`'s factors (of `Aᵀ` for a row-major `A`, as `det` factorises).
fn det_from_factors(a: &Tensor) -> Vec<(f64, f64, f64)> {
    let n = a.dims()[a.rank() - 1];
    let row_major = n > 1 && a.strides()[a.rank() - 1] == 1;
    let at = if row_major { a.mT().unwrap() } else { a.clone() };
    let f = cotangent::linalg::lu_factor_ex(&at, true).unwrap();
    let lu = f.lu.to_vec_f64();
    let piv = f.pivots.to_vec::<i64>().unwrap();
    let count: usize = a.dims()[..a.rank() - 2].iter().product();
    (0..count)
        .map(|b| {
            let swaps = (0..n).filter(|&j| piv[b * n + j] as usize != j + 1).count();
            let mut prod = if swaps % 2 == 1 { -1.0f64 } else { 1.0 };
            let mut sign = prod;
            let diag: Vec<f64> = (0..n).map(|i| lu[b * n * n + i * (n + 1)]).collect();
            for &d in &diag {
                prod *= d;
                sign *= if d.is_nan() {
                    f64::NAN
                } else {
                    f64::from(u8::from(d > 0.0)) - f64::from(u8::from(d < 0.0))
                };
            }
            let log = if prod.abs().is_normal() {
                prod.abs().ln()
            } else {
                diag.iter().map(|d| d.abs().ln()).sum()
            };
            (prod, sign, log)
        })
        .collect()
}

fn same_bits(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{what} {i}: {x} vs {y}");
    }
}

/// `got` within one ulp of `want` (the same infinities and NaN).
fn within_an_ulp(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        let ok = x.to_bits() == y.to_bits()
            || (x.is_nan() && y.is_nan())
            || (x.is_finite() && y.is_finite() && (x - y).abs() <= y.abs() * f64::EPSILON);
        assert!(ok, "{what} {i}: {x} vs {y}");
    }
}

/// A batch with degenerate matrices among regular ones: zero, rank-deficient, NaN, inf,
/// a row interchange in every column, and a tiny pivot.
fn det_batch(batch: usize, n: usize, seed: u64) -> Tensor {
    let mut v = randn(&[batch, n, n], seed).to_vec_f64();
    let m = |b: usize| b * n * n;
    for b in (0..batch).step_by(5).filter(|_| n > 0) {
        match (b / 5) % 6 {
            0 => v[m(b)..m(b + 1)].fill(0.0),
            1 if n > 1 => {
                // the last row a copy of the first (rank n - 1)
                for c in 0..n {
                    v[m(b) + (n - 1) * n + c] = v[m(b) + c];
                }
            }
            2 => v[m(b) + n * n / 2] = f64::NAN,
            3 => v[m(b)] = f64::INFINITY,
            4 => {
                // the anti-diagonal: a swap at every step
                v[m(b)..m(b + 1)].fill(0.0);
                for i in 0..n {
                    v[m(b) + i * n + n - 1 - i] = 1.0 + i as f64;
                }
            }
            _ => v[m(b)..m(b + 1)].iter_mut().for_each(|x| *x *= 1e-200),
        }
    }
    Tensor::from_vec(v, vec![batch, n, n]).unwrap()
}

/// det and slogdet read the determinant off the LU (lane kernel and one-by-one loop) with
/// the bits of the product of the factors' pivots (its logarithm within an ulp of the
/// platform's, and the same in a batch as alone), for every size the lanes take and
/// beyond, batches not a multiple of the lane count, strided input, degenerate matrices,
/// f32, and whatever the number of threads.
#[test]
fn determinants_are_the_products_of_the_pivots() {
    for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 16, 17] {
        for batch in [1usize, 8, 13, 4099] {
            if n > 8 && batch > 100 {
                continue;
            }
            let a = det_batch(batch, n, 40 + n as u64);
            for a in [a.clone(), a.mT().unwrap()] {
                let want = det_from_factors(&a);
                let col = |k: usize| want.iter().map(|w| [w.0, w.1, w.2][k]).collect::<Vec<_>>();
                same_bits("det", &det(&a).unwrap().to_vec_f64(), &col(0));
                let s = slogdet(&a).unwrap();
                same_bits("sign", &s.sign.to_vec_f64(), &col(1));
                // (the kernel's logarithm is its own, within an ulp of the platform's)
                within_an_ulp("logabsdet", &s.logabsdet.to_vec_f64(), &col(2));
                if batch > 1 {
                    // the lanes' and the one-matrix loop's are the same function
                    let one: Vec<f64> = (0..batch)
                        .map(|i| slogdet(&a.narrow(0, i, 1).unwrap()).unwrap().logabsdet)
                        .flat_map(|t| t.to_vec_f64())
                        .collect();
                    same_bits("logabsdet one by one", &s.logabsdet.to_vec_f64(), &one);
                }
                let a32 = a.to_dtype(DType::F32).unwrap();
                let want32 = det_from_factors(&a32);
                let d32 = det(&a32).unwrap().to_vec::<f32>().unwrap();
                let w32: Vec<f32> = want32.iter().map(|w| w.0 as f32).collect();
                for (x, y) in d32.iter().zip(&w32) {
                    assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
                }
            }
        }
    }
    // the same bits on one thread and on three
    let a = det_batch(4099, 4, 7);
    let on = |k: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
        pool.install(|| {
            let s = slogdet(&a).unwrap();
            [det(&a).unwrap(), s.sign, s.logabsdet].map(|t| t.to_vec_f64())
        })
    };
    let (one, three) = (on(1), on(3));
    for k in 0..3 {
        same_bits("threads", &three[k], &one[k]);
    }
}

/// Batches of small matrices are factorised and inverted in one pass per lane group:
/// the same inverses as one matrix at a time (the separate factor-then-invert path), the
/// same `info` as the LU of `Aᵀ`, singular and NaN matrices among regular ones, strided
/// input, batches not a multiple of the lane count, and the same bits on 1 and 3 threads.
#[test]
fn batched_inverses_match_one_at_a_time() {
    for n in [1usize, 2, 3, 4, 5, 8, 16, 17] {
        for batch in [8usize, 13, 1029] {
            if n > 4 && batch > 100 {
                continue;
            }
            let mut v = well_conditioned(&[batch, n, n], 60 + n as u64).to_vec_f64();
            // matrix 3 singular (zero), matrix 6 with a NaN
            v[3 * n * n..4 * n * n].fill(0.0);
            v[6 * n * n + n * n / 2] = f64::NAN;
            let a = Tensor::from_vec(v, vec![batch, n, n]).unwrap();
            for a in [a.clone(), a.mT().unwrap()] {
                let r = inv_ex(&a).unwrap();
                let info = cotangent::linalg::lu_factor_ex(&a.mT().unwrap(), true).unwrap().info;
                assert_eq!(r.info.to_vec::<i64>().unwrap(), info.to_vec::<i64>().unwrap());
                let got = r.inverse.to_vec_f64();
                for b in [0, 1, 2, 3, 6, batch - 1] {
                    let one = inv_ex(&a.narrow(0, b, 1).unwrap()).unwrap().inverse.to_vec_f64();
                    let g = &got[b * n * n..(b + 1) * n * n];
                    if b == 3 || b == 6 {
                        // singular or NaN: infinities or NaN both ways (which ones, at
                        // a zero pivot, depends on the order of the substitutions)
                        assert!(g.iter().any(|x| !x.is_finite()));
                        assert!(one.iter().any(|x| !x.is_finite()));
                        continue;
                    }
                    for (x, y) in g.iter().zip(&one) {
                        assert!(
                            x.to_bits() == y.to_bits()
                                || (x.is_nan() && y.is_nan())
                                || (x - y).abs() <= 1e-13 * (1.0 + y.abs()),
                            "n {n} batch {batch} matrix {b}: {x} vs {y}"
                        );
                    }
                }
                let err = inv(&a).unwrap_err();
                assert!(matches!(err, Error::Singular { batch: 3, .. }), "{err:?}");
            }
        }
    }
    let a = well_conditioned(&[1029, 4, 4], 9);
    let on = |k: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
        pool.install(|| inv(&a).unwrap().to_vec_f64())
    };
    same_bits("threads", &on(3), &on(1));
}

/// Batches of small systems are factorised and solved by the lane kernels: the same
/// solutions as one system at a time (the one-matrix loops), on both sides, for vector and matrix right-hand sides (one broadcast along the batch),
/// singular and NaN matrices among regular ones, strided input, batches not a multiple
/// of the lane count, the same `info`, and the same bits on 1 and 3 threads.
#[test]
fn batched_solves_match_one_at_a_time() {
    for n in [1usize, 2, 4, 5, 16, 17] {
        for batch in [8usize, 13, 1029] {
            if n > 4 && batch > 100 {
                continue;
            }
            let mut v = well_conditioned(&[batch, n, n], 80 + n as u64).to_vec_f64();
            v[3 * n * n..4 * n * n].fill(0.0);
            v[6 * n * n + n * n / 2] = f64::NAN;
            let a = Tensor::from_vec(v, vec![batch, n, n]).unwrap();
            let rhs = [
                (randn(&[batch, n], 81), Side::Left),
                (randn(&[batch, n, 3], 82), Side::Left),
                (randn(&[1, n, 2], 83).broadcast_to(vec![batch, n, 2]).unwrap(), Side::Left),
                (
                    randn(&[batch, 3, n], 84).mT().unwrap().contiguous().unwrap().mT().unwrap(),
                    Side::Right,
                ),
            ];
            for a in [a.clone(), a.mT().unwrap()] {
                for (b, side) in &rhs {
                    let r = solve_ex(&a, b, *side).unwrap();
                    let info =
                        cotangent::linalg::lu_factor_ex(&a.mT().unwrap(), true).unwrap().info;
                    assert_eq!(r.info.to_vec::<i64>().unwrap(), info.to_vec::<i64>().unwrap());
                    let got = r.result;
                    for i in [0, 1, 2, 3, 6, batch - 1] {
                        let one = solve_ex(
                            &a.narrow(0, i, 1).unwrap(),
                            &b.narrow(0, i, 1).unwrap(),
                            *side,
                        )
                        .unwrap()
                        .result
                        .to_vec_f64();
                        let g = got.narrow(0, i, 1).unwrap().to_vec_f64();
                        if i == 3 || i == 6 {
                            assert!(g.iter().any(|x| !x.is_finite()));
                            assert!(one.iter().any(|x| !x.is_finite()));
                            continue;
                        }
                        for (x, y) in g.iter().zip(&one) {
                            assert!(
                                (x - y).abs() <= 1e-13 * (1.0 + y.abs()),
                                "n {n} batch {batch} system {i}: {x} vs {y}"
                            );
                        }
                    }
                    let err = solve(&a, b, *side).unwrap_err();
                    assert!(matches!(err, Error::Singular { batch: 3, .. }), "{err:?}");
                }
            }
        }
    }
    // first-order gradients through the saved factors agree with the recorded ones
    let a = rg(well_conditioned(&[13, 4, 4], 11));
    let b = rg(randn(&[13, 4, 2], 12));
    let x = solve(&a, &b, Side::Left).unwrap().square().unwrap().sum().unwrap();
    let run = |create_graph| {
        grad(&[&x], &[None], &[&a, &b], GradOptions { create_graph, allow_unused: false }).unwrap()
    };
    let (g1, g2) = (run(false), run(true));
    for (p, q) in g1.iter().zip(&g2) {
        assert_close(p.as_ref().unwrap(), q.as_ref().unwrap(), 1e-12);
    }
    let a = well_conditioned(&[1029, 4, 4], 9);
    let b = randn(&[1029, 4], 10);
    let on = |k: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
        pool.install(|| solve(&a, &b, Side::Left).unwrap().to_vec_f64())
    };
    same_bits("threads", &on(3), &on(1));
}

/// `x` and `y` agree to `tol` (relative), with NaN and infinities in the same places.
fn agree(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        let ok = if x.is_finite() && y.is_finite() {
            (x - y).abs() <= tol * (1.0 + y.abs())
        } else {
            x == y || (x.is_nan() && y.is_nan())
        };
        assert!(ok, "{what} {i}: {x} vs {y}");
    }
}

/// The first-order backward of a solve on a batch of small systems (a solve with the
/// factors the fused forward saved as its lanes held them, in the lane kernel, which
/// permutes the cotangent's rows as it loads them): the same gradients as one system at
/// a time (a batch of one has no lane group: its factors are packed), on the left for
/// every size the lanes take and beyond, vector, matrix and broadcast right-hand sides
/// and cotangents, a broadcast `A`, strided input, a singular and a NaN matrix among
/// regular ones, batches not a multiple of the lane count, and on the right; close to
/// the recorded backward's; and the same bits on 1 and 3 threads.
#[test]
fn batched_solve_gradients_match_one_at_a_time() {
    let grads_on = |side: Side, a: &Tensor, b: &Tensor, w: Option<&Tensor>, create_graph: bool| {
        let (a, b) = (rg(a.clone()), rg(b.clone()));
        let x = solve_ex(&a, &b, side).unwrap().result;
        let loss = match w {
            Some(w) => x.mul(w).unwrap().sum().unwrap(),
            None => x.sum().unwrap(),
        };
        let opts = GradOptions { create_graph, allow_unused: false };
        let g = grad(&[&loss], &[None], &[&a, &b], opts).unwrap();
        g.into_iter().map(|t| t.unwrap().detach()).collect::<Vec<_>>()
    };
    let grads = |a: &Tensor, b: &Tensor, w: Option<&Tensor>, create_graph: bool| {
        grads_on(Side::Left, a, b, w, create_graph)
    };
    // the right side's backward (an adjoint solve with the saved factors of Aᵀ), on
    // batches with a partial last lane group and a singular and a NaN matrix
    for n in [1usize, 4, 5, 16] {
        let batch = 13;
        let mut v = well_conditioned(&[batch, n, n], 120 + n as u64).to_vec_f64();
        v[3 * n * n..4 * n * n].fill(0.0);
        v[6 * n * n + n * n / 2] = f64::NAN;
        let a = Tensor::from_vec(v, vec![batch, n, n]).unwrap();
        let b = randn(&[batch, 2, n], 121);
        let w = randn(&[batch, 2, n], 122);
        let all = grads_on(Side::Right, &a, &b, Some(&w), false);
        for i in 0..batch {
            let pick = |t: &Tensor| t.narrow(0, i, 1).unwrap();
            let one = grads_on(Side::Right, &pick(&a), &pick(&b), Some(&pick(&w)), false);
            for (what, (x, y)) in ["gA", "gB"].iter().zip(all.iter().zip(&one)) {
                let what = format!("right n {n} system {i} {what}");
                agree(&what, &pick(x).to_vec_f64(), &y.to_vec_f64(), 1e-13);
            }
        }
    }
    for n in [1usize, 2, 3, 4, 5, 8, 16, 17] {
        for batch in [8usize, 21] {
            let mut v = well_conditioned(&[batch, n, n], 100 + n as u64).to_vec_f64();
            v[3 * n * n..4 * n * n].fill(0.0);
            v[6 * n * n + n * n / 2] = f64::NAN;
            let a = Tensor::from_vec(v, vec![batch, n, n]).unwrap();
            let regular = well_conditioned(&[batch, n, n], 110 + n as u64);
            let regular_t = regular.mT().unwrap();
            let rhs = [
                randn(&[batch, n], 101),
                randn(&[batch, n, 1], 102),
                randn(&[batch, n, 3], 103).mT().unwrap().contiguous().unwrap().mT().unwrap(),
                randn(&[1, n, 2], 104).broadcast_to(vec![batch, n, 2]).unwrap(),
            ];
            for a in [a.clone(), a.mT().unwrap()] {
                for b in &rhs {
                    let w = randn(b.dims(), 105);
                    for w in [None, Some(&w)] {
                        let all = grads(&a, b, w, false);
                        for i in 0..batch {
                            let pick = |t: &Tensor| t.narrow(0, i, 1).unwrap();
                            let one = grads(&pick(&a), &pick(b), w.map(pick).as_ref(), false);
                            for (what, (x, y)) in ["gA", "gB"].iter().zip(all.iter().zip(&one)) {
                                let what = format!("n {n} batch {batch} system {i} {what}");
                                agree(&what, &pick(x).to_vec_f64(), &y.to_vec_f64(), 1e-13);
                            }
                        }
                        // the recorded backward (it refactorises Aᵀ; no singular systems)
                        let reg = if a.is_contiguous() { &regular } else { &regular_t };
                        let (f, r) = (grads(reg, b, w, false), grads(reg, b, w, true));
                        for (x, y) in f.iter().zip(&r) {
                            agree(
                                &format!("n {n} recorded"),
                                &x.to_vec_f64(),
                                &y.to_vec_f64(),
                                1e-10,
                            );
                        }
                    }
                }
            }
        }
    }
    // A broadcast along the batch of b (its factors too)
    let a = well_conditioned(&[1, 4, 4], 106);
    let b = randn(&[11, 4, 2], 107);
    let all = grads(&a, &b, None, false);
    let rec = grads(&a, &b, None, true);
    for (x, y) in all.iter().zip(&rec) {
        assert_eq!(x.dims(), y.dims());
        agree("broadcast A", &x.to_vec_f64(), &y.to_vec_f64(), 1e-10);
    }
    let a = well_conditioned(&[1029, 4, 4], 108);
    let b = randn(&[1029, 4, 1], 109);
    let on = |k: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
        pool.install(|| {
            grads(&a, &b, None, false).iter().flat_map(Tensor::to_vec_f64).collect::<Vec<_>>()
        })
    };
    same_bits("solve backward threads", &on(3), &on(1));
}

/// The first-order backward of `inv` on a batch of small matrices (from the inverse the
/// lane kernel computed; `−Xᵀ G Xᵀ` in one pass per matrix up to order 16, padded from
/// 5 to 8 and from 9 to 16, through row buffers at 8 and 16): the same gradient as one matrix at a time and as the
/// recorded backward (two products and a negation), for every size the lanes and the
/// fused backward take and beyond, strided input, a broadcast, a general and a transposed
/// (strided) cotangent, a singular and a NaN matrix among regular ones, batches not a
/// multiple of the lane count, f32; the same bits on 1 and 3 threads.
#[test]
fn batched_inverse_gradients_match_one_at_a_time() {
    // `w`: the weights of the loss and whether they multiply Xᵀ (then the cotangent
    // reaching inv is a transposed view)
    let grads = |a: &Tensor, w: Option<(&Tensor, bool)>, create_graph: bool| {
        let a = rg(a.clone());
        let x = inv_ex(&a).unwrap().inverse;
        let loss = match w {
            Some((w, true)) => x.mT().unwrap().mul(w).unwrap().sum().unwrap(),
            Some((w, false)) => x.mul(w).unwrap().sum().unwrap(),
            None => x.sum().unwrap(),
        };
        let opts = GradOptions { create_graph, allow_unused: false };
        grad(&[&loss], &[None], &[&a], opts).unwrap()[0].clone().unwrap().detach()
    };
    for n in [1usize, 2, 3, 4, 5, 7, 8, 9, 16, 17] {
        for batch in [7usize, 8, 21] {
            let mut v = well_conditioned(&[batch, n, n], 120 + n as u64).to_vec_f64();
            v[3 * n * n..4 * n * n].fill(0.0);
            v[6 * n * n + n * n / 2] = f64::NAN;
            let a = Tensor::from_vec(v, vec![batch, n, n]).unwrap();
            let regular = well_conditioned(&[batch, n, n], 130 + n as u64);
            let w = randn(&[batch, n, n], 121);
            for (a, reg) in [(a.clone(), regular.clone()), (a.mT().unwrap(), regular.mT().unwrap())]
            {
                for w in [None, Some((&w, false)), Some((&w, true))] {
                    let all = grads(&a, w, false);
                    for i in 0..batch {
                        let pick = |t: &Tensor| t.narrow(0, i, 1).unwrap();
                        let wi = w.map(|(w, tr)| (pick(w), tr));
                        let one = grads(&pick(&a), wi.as_ref().map(|(w, tr)| (w, *tr)), false);
                        let what = format!("n {n} batch {batch} matrix {i}");
                        agree(&what, &pick(&all).to_vec_f64(), &one.to_vec_f64(), 1e-12);
                    }
                    let (f, r) = (grads(&reg, w, false), grads(&reg, w, true));
                    agree(&format!("n {n} recorded"), &f.to_vec_f64(), &r.to_vec_f64(), 1e-10);
                }
            }
        }
    }
    let a = well_conditioned(&[1029, 4, 4], 122);
    let on = |k: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
        pool.install(|| grads(&a, None, false).to_vec_f64())
    };
    same_bits("inverse backward threads", &on(3), &on(1));
    // f32: the fused pass against the recorded products
    for n in [3usize, 4, 6, 8, 12, 16] {
        let a = well_conditioned(&[9, n, n], 123).to_dtype(DType::F32).unwrap();
        let w = randn(&[9, n, n], 124).to_dtype(DType::F32).unwrap();
        for w in [None, Some((&w, false)), Some((&w, true))] {
            let (f, r) = (grads(&a, w, false), grads(&a, w, true));
            assert_eq!(f.dtype(), DType::F32);
            agree(&format!("f32 n {n}"), &f.to_vec_f64(), &r.to_vec_f64(), 1e-4);
        }
    }
}
