//! LU with partial pivoting (`lu_factor`, `lu_factor_ex`, `lu`, `lu_unpack`, `lu_solve`):
//! reconstruction `P L U = A` over a size sweep, PyTorch's pivots and permutation
//! convention, gradients (first and second order) for square, wide and tall input, the
//! solver, singular input and errors; and without pivoting (`pivot = false`): `L U = A`,
//! the trivial pivots, the zero-pivot error and info, gradients.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg, well_conditioned};
use cotangent::linalg::{lu, lu_factor, lu_factor_ex, lu_solve, lu_unpack, Side};
use cotangent::{DType, Error, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec()).unwrap()
}

#[test]
fn three_cycle_pivoting_matches_pytorch() {
    // PyTorch 2.x: lu_factor([[1,2,3],[4,5,6],[7,8,10]]) has pivots [3, 3, 3] and
    // linalg.lu's P = [[0,1,0],[0,0,1],[1,0,0]] (A = P L U): the permutation is a 3-cycle,
    // so P and Pᵀ differ and the convention cannot flip unnoticed.
    let a = t(&[1., 2., 3., 4., 5., 6., 7., 8., 10.], &[3, 3]);
    let f = lu_factor(&a, true).unwrap();
    assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![3, 3, 3]);
    assert_eq!(f.pivots.dtype(), DType::I64);
    let want_lu = [7., 8., 10., 1. / 7., 6. / 7., 11. / 7., 4. / 7., 0.5, -0.5];
    assert_close(&f.lu, &t(&want_lu, &[3, 3]), 1e-14);
    let r = lu(&a, true).unwrap();
    assert_eq!(r.p.to_vec_f64(), vec![0., 1., 0., 0., 0., 1., 1., 0., 0.]);
    assert_close(&r.p.matmul(&r.l).unwrap().matmul(&r.u).unwrap(), &a, 1e-14);
}

#[test]
fn reconstruction_over_sizes_shapes_and_batches() {
    // P L U = A, L unit lower, U upper, P a permutation; square, tall and wide; batched;
    // transposed (non-contiguous) input gives the factors of the transposed matrix
    let mut seed = 0;
    for &k in &[0usize, 1, 2, 3, 5, 17, 64] {
        for (m, n) in [(k, k), (k + 2, k), (k, k + 3)] {
            for batch in [vec![], vec![2, 3]] {
                seed += 1;
                let mut shape = batch.clone();
                shape.extend([m, n]);
                let a = randn(&shape, seed);
                for a in [a.clone(), a.mT().unwrap().contiguous().unwrap().mT().unwrap()] {
                    let r = lu(&a, true).unwrap();
                    let kk = m.min(n);
                    assert_eq!(r.l.dims()[r.l.rank() - 2..], [m, kk]);
                    assert_eq!(r.u.dims()[r.u.rank() - 2..], [kk, n]);
                    let back = r.p.matmul(&r.l).unwrap().matmul(&r.u).unwrap();
                    assert_close(&back, &a, 1e-12 * (1 + k) as f64);
                    assert_eq!(max_abs(&r.l.triu(1).unwrap()), 0.0);
                    assert_eq!(max_abs(&r.u.tril(-1).unwrap()), 0.0);
                    // |L| <= 1 (partial pivoting)
                    assert!(max_abs(&r.l) <= 1.0 + 1e-15);
                    let ptp = r.p.mT().unwrap().matmul(&r.p).unwrap();
                    let eye = Tensor::eye(m, DType::F64)
                        .unwrap()
                        .broadcast_to(ptp.shape().clone())
                        .unwrap();
                    assert_close(&ptp, &eye, 0.0);
                }
            }
        }
    }
}

#[test]
fn blocked_and_unblocked_kernels_agree() {
    // above 48 columns faer's blocked LU runs, and from min(m, n) = 192 one matrix's
    // right-looking LU split by column ranges (panels of 64: a partial last panel, tall
    // and wide); each must give LAPACK's interchanges
    for (m, n) in [(64, 64), (80, 60), (60, 90), (200, 200), (260, 200), (200, 270)] {
        let a = randn(&[m, n], 77);
        let f = lu_factor_ex(&a, true).unwrap();
        let r = lu_unpack(&f.lu, &f.pivots).unwrap();
        assert_close(&r.p.matmul(&r.l).unwrap().matmul(&r.u).unwrap(), &a, 1e-11);
        // the interchanges are those of the row-by-row reference: |L| <= 1
        assert!(max_abs(&r.l) <= 1.0 + 1e-15);
        for (j, p) in f.pivots.to_vec::<i64>().unwrap().into_iter().enumerate() {
            assert!(p as usize > j && p as usize <= m);
        }
    }
}

#[test]
fn singular_input() {
    // lu_factor_ex completes the factorisation and reports LAPACK's info, as PyTorch:
    // zeros(2, 2) -> info 1, pivots [1, 2]; [[0, 1], [0, 1]] -> info 1
    let f = lu_factor_ex(&Tensor::zeros((2, 2), DType::F64).unwrap(), true).unwrap();
    assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![1]);
    assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![1, 2]);
    assert_eq!(f.lu.to_vec_f64(), vec![0.0; 4]);
    let a = t(&[0., 1., 0., 1.], &[2, 2]);
    let f = lu_factor_ex(&a, true).unwrap();
    assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![1]);
    // rank-deficient: finite factors that still reconstruct A (lu does not fail)
    let a = t(&[1., 2., 3., 2., 4., 6., 1., 1., 1.], &[3, 3]);
    let r = lu(&a, true).unwrap();
    assert_close(&r.p.matmul(&r.l).unwrap().matmul(&r.u).unwrap(), &a, 1e-14);
    // lu_factor raises where PyTorch does: U[2,2] = 0 for [[1,2],[2,4]], batch index
    let b =
        Tensor::stack(&[&well_conditioned(&[2, 2], 1), &t(&[1., 2., 2., 4.], &[2, 2])], 0).unwrap();
    match lu_factor(&b, true).unwrap_err() {
        Error::Singular { op, batch, index } => {
            assert_eq!((op, batch, index), ("linalg.lu_factor", 1, 2));
        }
        e => panic!("{e:?}"),
    }
    // rectangular too (PyTorch: U[2,2] is zero for [[1,2,3],[2,4,7]])
    let e = lu_factor(&t(&[1., 2., 3., 2., 4., 7.], &[2, 3]), true).unwrap_err();
    assert!(matches!(e, Error::Singular { index: 2, .. }), "{e:?}");
    // NaN input does not hang and propagates
    let f = lu_factor_ex(&t(&[f64::NAN, 1., 2., 3.], &[2, 2]), true).unwrap();
    assert!(f.lu.to_vec_f64().iter().any(|v| v.is_nan()));
}

#[test]
fn empty() {
    for shape in [vec![0, 0], vec![0, 3], vec![3, 0], vec![0, 4, 4], vec![2, 0, 0]] {
        let a = randn(&shape, 1);
        let f = lu_factor(&a, true).unwrap();
        assert_eq!(f.lu.dims(), a.dims());
        let r = shape.len();
        let mut pdims = shape[..r - 2].to_vec();
        pdims.push(shape[r - 2].min(shape[r - 1]));
        assert_eq!(f.pivots.dims(), pdims.as_slice());
        let u = lu(&a, true).unwrap();
        assert_eq!(u.p.dims()[r - 1], shape[r - 2]);
    }
}

#[test]
fn lu_factor_gradients_square_wide_tall() {
    for (i, shape) in
        [vec![3, 3], vec![2, 4], vec![4, 2], vec![2, 3, 3], vec![1, 1]].iter().enumerate()
    {
        let a = rg(randn(shape, 10 + i as u64));
        check2("lu_factor", std::slice::from_ref(&a), |x| Ok(vec![lu_factor(&x[0], true)?.lu]));
        check2("lu", &[a], |x| {
            let r = lu(&x[0], true)?;
            Ok(vec![r.l, r.u])
        });
    }
}

#[test]
fn lu_unpack_gradient_and_pivots_have_none() {
    let a = randn(&[3, 4], 3);
    let f = lu_factor(&a, true).unwrap();
    let lu_t = rg(f.lu.clone());
    let piv = &f.pivots;
    check2("lu_unpack", std::slice::from_ref(&lu_t), move |x| {
        let r = lu_unpack(&x[0], piv)?;
        Ok(vec![r.l, r.u])
    });
    let r = lu(&rg(a), true).unwrap();
    assert!(!r.p.requires_grad());
    let f = lu_factor(&rg(randn(&[3, 3], 4)), true).unwrap();
    assert!(!f.pivots.requires_grad());
}

#[test]
fn lu_solve_all_modes() {
    let a = well_conditioned(&[2, 4, 4], 5);
    let f = lu_factor(&a, true).unwrap();
    let at = a.mT().unwrap();
    for side in [Side::Left, Side::Right] {
        for adjoint in [false, true] {
            let b = match side {
                Side::Left => randn(&[4, 3], 6),
                Side::Right => randn(&[3, 4], 6),
            };
            let x = lu_solve(&f.lu, &f.pivots, &b, side, adjoint).unwrap();
            let op = if adjoint { &at } else { &a };
            let back = match side {
                Side::Left => op.matmul(&x).unwrap(),
                Side::Right => x.matmul(op).unwrap(),
            };
            assert_close(&back, &b.broadcast_to(back.shape().clone()).unwrap(), 1e-12);
        }
    }
    // larger than the direct-substitution size: faer's triangular solves
    let a = well_conditioned(&[40, 40], 7);
    let f = lu_factor(&a, true).unwrap();
    let b = randn(&[40, 2], 8);
    for adjoint in [false, true] {
        let x = lu_solve(&f.lu, &f.pivots, &b, Side::Left, adjoint).unwrap();
        let op = if adjoint { a.mT().unwrap() } else { a.clone() };
        assert_close(&op.matmul(&x).unwrap(), &b, 1e-11);
    }
}

#[test]
fn lu_solve_gradients() {
    let a = well_conditioned(&[3, 3], 11);
    let f = lu_factor(&a, true).unwrap();
    let lu_t = rg(f.lu.clone());
    for side in [Side::Left, Side::Right] {
        for adjoint in [false, true] {
            let piv = &f.pivots;
            let b = rg(randn(&[3, 3], 12));
            check2("lu_solve", &[lu_t.clone(), b], move |x| {
                Ok(vec![lu_solve(&x[0], piv, &x[1], side, adjoint)?])
            });
        }
    }
    // broadcast: one factorisation, a batch of right-hand sides
    let piv = &f.pivots;
    let b = rg(randn(&[2, 3, 2], 13));
    check2("lu_solve broadcast", &[lu_t, b], move |x| {
        Ok(vec![lu_solve(&x[0], piv, &x[1], Side::Left, false)?])
    });
    // through lu_factor: the composite A -> (LU, pivots) -> X is A⁻¹ B
    let a = rg(well_conditioned(&[3, 3], 14));
    let b = rg(randn(&[3, 2], 15));
    check2("lu_factor + lu_solve", &[a, b], |x| {
        let f = lu_factor(&x[0], true)?;
        Ok(vec![lu_solve(&f.lu, &f.pivots, &x[1], Side::Left, false)?])
    });
}

#[test]
fn f32_and_bf16() {
    let a = well_conditioned(&[4, 4], 1);
    let f64r = lu_factor(&a, true).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 3e-2)] {
        let f = lu_factor(&a.to_dtype(dt).unwrap(), true).unwrap();
        assert_eq!(f.lu.dtype(), dt);
        assert_eq!(f.pivots.to_vec::<i64>().unwrap(), f64r.pivots.to_vec::<i64>().unwrap());
        assert_close(&f.lu.to_dtype(DType::F64).unwrap(), &f64r.lu, tol);
    }
}

#[test]
fn errors_name_the_op() {
    let a = randn(&[3, 3], 1);
    let f = lu_factor(&a, true).unwrap();
    let e = lu_factor(&randn(&[3], 1), true).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.lu_factor", .. }), "{e:?}");
    let e = lu_factor(&a.to_dtype(DType::I64).unwrap(), true).unwrap_err();
    assert!(matches!(e, Error::UnsupportedDType { .. }), "{e:?}");
    let b = randn(&[3, 2], 2);
    for (lu_t, piv, b, want) in [
        (randn(&[3, 4], 1), f.pivots.clone(), b.clone(), "BadShape"),
        (f.lu.clone(), f.pivots.narrow(0, 0, 2).unwrap(), b.clone(), "ShapeMismatch"),
        (f.lu.clone(), f.pivots.clone(), randn(&[4, 2], 2), "ShapeMismatch"),
        (f.lu.clone(), f.pivots.clone(), randn(&[3], 2), "BadShape"),
        (f.lu.clone(), f.pivots.clone(), b.to_dtype(DType::F32).unwrap(), "DTypeMismatch"),
        (
            f.lu.clone(),
            Tensor::from_vec(vec![0i64, 1, 2], 3).unwrap(),
            b.clone(),
            "InvalidArgument",
        ),
        (
            f.lu.clone(),
            Tensor::from_vec(vec![4i64, 1, 2], 3).unwrap(),
            b.clone(),
            "InvalidArgument",
        ),
    ] {
        let e = lu_solve(&lu_t, &piv, &b, Side::Left, false).unwrap_err();
        assert!(e.to_string().starts_with("linalg.lu_solve"), "{e}");
        assert!(format!("{e:?}").starts_with(want), "{e:?} vs {want}");
    }
    let e = lu_unpack(&f.lu, &f.pivots.narrow(0, 0, 2).unwrap()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "lu_unpack", .. }), "{e:?}");
}

#[test]
fn lu_factor_fused_and_graph_gradients_agree() {
    // without create_graph square factors take a fused kernel (own loops up to n = 32,
    // faer above); with it, tensor ops
    use cotangent::autograd::{grad, GradOptions};
    for n in [1, 2, 3, 4, 5, 7, 16, 32, 33, 60, 200] {
        let a = rg(well_conditioned(&[3, n, n], n as u64));
        // a transposed cotangent: a strided read
        let g = randn(&[3, n, n], 1).mT().unwrap();
        let f = lu_factor(&a, true).unwrap();
        let fused = grad(&[&f.lu], &[Some(&g)], &[&a], GradOptions::default()).unwrap();
        let opts = GradOptions { create_graph: true, allow_unused: false };
        let graph = grad(&[&f.lu], &[Some(&g)], &[&a], opts).unwrap();
        let (x, y) = (fused[0].as_ref().unwrap(), graph[0].as_ref().unwrap());
        assert!(!x.requires_grad() && y.requires_grad());
        assert_close(x, &y.detach(), 1e-9);
    }
}

/// Batches of small square matrices are factorised several at a time (one SIMD lane
/// each): the factors, pivots and info must be those of the one-matrix loop, for every
/// order the lane kernel takes, with singular and non-finite matrices among regular ones
/// (they are redone alone) and with transposed input.
#[test]
fn batched_lane_kernel_matches_one_by_one() {
    for n in [1usize, 2, 3, 4, 5, 7, 8, 11, 16, 17] {
        let batch = 19;
        let mut v = randn(&[batch, n, n], 40 + n as u64).to_vec::<f64>().unwrap();
        let nn = n * n;
        // matrix 2: a zero column (zero pivot); 5: a repeated row (zero pivot later, for
        // n > 1); 9: NaN; 12: inf; 13: all zero
        for r in 0..n {
            v[2 * nn + r * n] = 0.0;
        }
        if n > 1 {
            for c in 0..n {
                v[5 * nn + n + c] = v[5 * nn + c];
            }
        }
        v[9 * nn + nn / 2] = f64::NAN;
        v[12 * nn] = f64::INFINITY;
        v[13 * nn..14 * nn].fill(0.0);
        for transposed in [false, true] {
            let a = t(&v, &[batch, n, n]);
            let a =
                if transposed { a.mT().unwrap().contiguous().unwrap().mT().unwrap() } else { a };
            let all = lu_factor_ex(&a, true).unwrap();
            let (lu_all, piv_all, info_all) = (
                all.lu.to_vec::<f64>().unwrap(),
                all.pivots.to_vec::<i64>().unwrap(),
                all.info.to_vec::<i64>().unwrap(),
            );
            for b in 0..batch {
                let one = lu_factor_ex(&t(&v[b * nn..(b + 1) * nn], &[n, n]), true).unwrap();
                let (lu1, piv1, info1) = (
                    one.lu.to_vec::<f64>().unwrap(),
                    one.pivots.to_vec::<i64>().unwrap(),
                    one.info.to_vec::<i64>().unwrap(),
                );
                assert_eq!(&piv_all[b * n..(b + 1) * n], &piv1[..], "n {n} matrix {b} pivots");
                assert_eq!(info_all[b], info1[0], "n {n} matrix {b} info");
                for (x, y) in lu_all[b * nn..(b + 1) * nn].iter().zip(&lu1) {
                    assert!(x == y || (x.is_nan() && y.is_nan()), "n {n} matrix {b}: {x} vs {y}");
                }
            }
        }
    }
}

/// Batched `lu_solve` on small systems runs several at a time (one SIMD lane each): the
/// solutions must be those of the one-system loop, in every mode, for every order the
/// lane kernel takes, with strided factors and right-hand sides.
#[test]
fn batched_lane_solve_matches_one_by_one() {
    for n in [1usize, 2, 3, 4, 5, 8, 13, 16, 17] {
        for k in [1usize, 3] {
            let batch = 21;
            let f = lu_factor(&well_conditioned(&[batch, n, n], 60 + n as u64), true).unwrap();
            let b = randn(&[batch, n, k], 70 + n as u64);
            for (side, adjoint) in
                [(Side::Left, false), (Side::Left, true), (Side::Right, false), (Side::Right, true)]
            {
                let b = if side == Side::Left { b.clone() } else { b.mT().unwrap() };
                for strided in [false, true] {
                    let lu = if strided {
                        f.lu.contiguous().unwrap().mT().unwrap().contiguous().unwrap().mT().unwrap()
                    } else {
                        f.lu.clone()
                    };
                    let bs = if strided {
                        b.mT().unwrap().contiguous().unwrap().mT().unwrap()
                    } else {
                        b.clone()
                    };
                    let all = lu_solve(&lu, &f.pivots, &bs, side, adjoint).unwrap();
                    for i in 0..batch {
                        let pick = |x: &Tensor| x.narrow(0, i, 1).unwrap();
                        let one = lu_solve(&pick(&lu), &pick(&f.pivots), &pick(&bs), side, adjoint)
                            .unwrap();
                        assert_close(&pick(&all), &one, 1e-13);
                    }
                }
            }
        }
    }
}

/// The LU backward and the inverse built from the factors run several small matrices at
/// a time (one SIMD lane each): `inv`, and the gradients of `lu_factor`, `det` and
/// `slogdet`, of a batch must be those of each matrix alone.
#[test]
fn batched_lane_backward_matches_one_by_one() {
    use cotangent::autograd::{grad, GradOptions};
    use cotangent::linalg::{det, inv, slogdet};
    let g = |y: &Tensor, w: &Tensor, x: &Tensor| -> Tensor {
        let loss = y.mul(w).unwrap().sum().unwrap();
        grad(&[&loss], &[None], &[x], GradOptions::default()).unwrap()[0].clone().unwrap()
    };
    for n in [1usize, 2, 3, 4, 6, 8, 16, 17] {
        let batch = 19;
        let a = well_conditioned(&[batch, n, n], 80 + n as u64);
        let w = randn(&[batch, n, n], 90 + n as u64);
        let wb = randn(&[batch], 91 + n as u64);
        for strided in [false, true] {
            let a = if strided {
                a.mT().unwrap().contiguous().unwrap().mT().unwrap()
            } else {
                a.clone()
            };
            let x = rg(a.clone());
            let f = lu_factor(&x, true).unwrap();
            let all = [
                inv(&a).unwrap(),
                g(&f.lu, &w, &x),
                g(&det(&x).unwrap(), &wb, &x),
                g(&slogdet(&x).unwrap().logabsdet, &wb, &x),
            ];
            for i in 0..batch {
                let pick = |t: &Tensor| t.narrow(0, i, 1).unwrap();
                let xi = rg(pick(&a));
                let fi = lu_factor(&xi, true).unwrap();
                let one = [
                    inv(&pick(&a)).unwrap(),
                    g(&fi.lu, &pick(&w), &xi),
                    g(&det(&xi).unwrap(), &pick(&wb), &xi),
                    g(&slogdet(&xi).unwrap().logabsdet, &pick(&wb), &xi),
                ];
                for (x, y) in all.iter().zip(&one) {
                    assert_close(&pick(x), y, 1e-12);
                }
            }
        }
    }
}

#[test]
fn pivots_of_a_reused_buffer_are_all_rewritten() {
    // 4,096 4 x 4 matrices have 128 KiB of pivots, a size the buffer cache keeps: factor
    // one batch, drop it, then factor another (with singular, zero and NaN matrices) into
    // the reused buffer; each matrix's pivots must be its own, as factorised alone
    let count = 4096;
    let first = lu_factor_ex(&randn(&[count, 4, 4], 61), true).unwrap();
    drop(first);
    let mut v = randn(&[count, 4, 4], 62).to_vec_f64();
    for (i, m) in v.chunks_exact_mut(16).enumerate() {
        match i % 5 {
            1 => m.fill(0.0),
            2 => m[..4].fill(0.0),
            3 => m[5] = f64::NAN,
            _ => {}
        }
    }
    let a = t(&v, &[count, 4, 4]);
    let f = lu_factor_ex(&a, true).unwrap();
    let piv = f.pivots.to_vec::<i64>().unwrap();
    for i in (0..count).step_by(7).chain([count - 1]) {
        let one = lu_factor_ex(&a.narrow(0, i, 1).unwrap(), true).unwrap();
        assert_eq!(&piv[i * 4..(i + 1) * 4], &one.pivots.to_vec::<i64>().unwrap()[..], "{i}");
    }
}

/// `a` with `d` added to its diagonal: strictly diagonally dominant for `d` above the
/// largest row sum of `|a|`, so that the LU without pivoting exists and is stable.
fn dominant(shape: &[usize], seed: u64) -> Tensor {
    let a = randn(shape, seed);
    let r = shape.len();
    let (m, n) = (shape[r - 2], shape[r - 1]);
    let eye = Tensor::eye(m, DType::F64).unwrap().narrow(-1, 0, m.min(n)).unwrap();
    let eye = Tensor::cat(&[&eye, &Tensor::zeros((m, n - m.min(n)), DType::F64).unwrap()], -1);
    a.add(&eye.unwrap().mul_scalar(3.0 * n as f64).unwrap()).unwrap()
}

#[test]
fn without_pivoting_factors_a_as_l_u() {
    // A = L U with no interchange: square, tall and wide, batched, across the panel width
    // of the blocked kernel; pivots 1..k, info 0, P empty (PyTorch's CUDA convention)
    let mut seed = 100;
    for &k in &[1usize, 2, 5, 31, 33, 70] {
        for (m, n) in [(k, k), (k + 3, k), (k, k + 2)] {
            for batch in [vec![], vec![3]] {
                seed += 1;
                let mut shape = batch.clone();
                shape.extend([m, n]);
                let a = dominant(&shape, seed);
                let f = lu_factor_ex(&a, false).unwrap();
                let kk = m.min(n);
                let count: usize = batch.iter().product();
                let want: Vec<i64> = (0..count).flat_map(|_| 1..=kk as i64).collect();
                assert_eq!(f.pivots.to_vec::<i64>().unwrap(), want);
                assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![0; count]);
                let r = lu(&a, false).unwrap();
                assert_eq!(r.p.dims(), &[0]);
                assert_eq!(max_abs(&r.l.triu(1).unwrap()), 0.0);
                assert_eq!(max_abs(&r.u.tril(-1).unwrap()), 0.0);
                let back = r.l.matmul(&r.u).unwrap();
                assert_close(&back, &a, 1e-12 * (1 + k) as f64);
                // the same factors as lu_factor's, and as lu_unpack's with the trivial pivots
                let g = lu_factor(&a, false).unwrap();
                assert_close(&g.lu, &f.lu, 0.0);
                let u = lu_unpack(&g.lu, &g.pivots).unwrap();
                assert_close(&u.l, &r.l, 0.0);
                assert_close(
                    &u.p.matmul(&u.l).unwrap().matmul(&u.u).unwrap(),
                    &a,
                    1e-12 * k as f64,
                );
            }
        }
    }
    // a matrix partial pivoting would reorder: without pivoting L may exceed 1
    let a = t(&[1., 2., 4., 3.], &[2, 2]);
    let f = lu_factor(&a, false).unwrap();
    assert_close(&f.lu, &t(&[1., 2., 4., -5.], &[2, 2]), 0.0);
}

#[test]
fn without_pivoting_a_zero_pivot_is_named() {
    // [[0, 1], [1, 0]] is nonsingular but has no LU without interchanges
    let a = t(&[1., 0., 0., 1., 0., 1., 1., 0.], &[2, 2, 2]);
    let f = lu_factor_ex(&a, false).unwrap();
    assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![0, 1]);
    match lu_factor(&a, false).unwrap_err() {
        Error::Singular { op: "linalg.lu_factor", batch: 1, index: 1 } => {}
        e => panic!("{e:?}"),
    }
    // a zero pivot at the last step (a singular matrix), and in a tall matrix's
    let s = t(&[1., 2., 2., 4.], &[2, 2]);
    assert_eq!(lu_factor_ex(&s, false).unwrap().info.to_vec::<i64>().unwrap(), vec![2]);
    let tall = t(&[1., 2., 2., 4., 1., 1.], &[3, 2]);
    assert_eq!(lu_factor_ex(&tall, false).unwrap().info.to_vec::<i64>().unwrap(), vec![2]);
    // lu gives the factors without error, as with pivoting
    assert!(lu(&s, false).is_ok());
}

#[test]
fn without_pivoting_gradients_square_wide_tall() {
    // the pivoted LU's backward with P = I: first and second order against finite
    // differences
    for (i, shape) in [vec![3, 3], vec![2, 4], vec![4, 2], vec![2, 3, 3], vec![1, 1], vec![40, 40]]
        .iter()
        .enumerate()
    {
        let a = rg(dominant(shape, 20 + i as u64));
        check2("lu_factor nopivot", std::slice::from_ref(&a), |x| {
            Ok(vec![lu_factor(&x[0], false)?.lu])
        });
        if shape[0] < 40 {
            check2("lu nopivot", &[a], |x| {
                let r = lu(&x[0], false)?;
                Ok(vec![r.l, r.u])
            });
        }
    }
}

#[test]
fn without_pivoting_in_f32_and_half() {
    let a = dominant(&[2, 6, 6], 33);
    let f64r = lu_factor(&a, false).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 5e-2)] {
        let f = lu_factor(&a.to_dtype(dt).unwrap(), false).unwrap();
        assert_eq!(f.lu.dtype(), dt);
        assert_close(&f.lu.to_dtype(DType::F64).unwrap(), &f64r.lu, tol * 20.0);
    }
}
