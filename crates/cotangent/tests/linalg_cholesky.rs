//! `linalg.cholesky`, `linalg.cholesky_ex`, `cholesky_solve`, `cholesky_inverse`:
//! reconstruction over a size sweep, the triangle read, gradients against finite
//! differences (first and second order), errors and `info` where LAPACK puts them,
//! empty inputs and dtypes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg, spd};
use cotangent::autograd::{gradcheck, GradcheckOptions};
use cotangent::linalg::{cholesky, cholesky_ex, cholesky_inverse, cholesky_solve, Uplo};
use cotangent::{DType, Error, Result, Tensor};

const SIZES: [usize; 8] = [0, 1, 2, 3, 5, 17, 64, 100];

fn shape(batch: &[usize], n: usize) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend([n, n]);
    s
}

/// `F Fᵀ` (lower) or `Fᵀ F` (upper): the matrix a factor stands for.
fn product(f: &Tensor, uplo: Uplo) -> Tensor {
    match uplo {
        Uplo::Lower => f.matmul(&f.mT().unwrap()).unwrap(),
        Uplo::Upper => f.mT().unwrap().matmul(f).unwrap(),
    }
}

/// The part of a factor outside its triangle (must be zero).
fn off_triangle(f: &Tensor, uplo: Uplo) -> Tensor {
    match uplo {
        Uplo::Lower => f.triu(1).unwrap(),
        Uplo::Upper => f.tril(-1).unwrap(),
    }
}

#[test]
fn factors_reconstruct_over_the_size_sweep() {
    for n in SIZES {
        for batch in [&[][..], &[3], &[2, 2]] {
            let a = spd(&shape(batch, n), n as u64 + 7);
            // contiguous, transposed (A is symmetric: the same matrix) and sliced layouts
            let wide = spd(&shape(batch, n + 1), 3);
            let sliced = wide.narrow(-1, 0, n).unwrap().narrow(-2, 0, n).unwrap();
            for a in [a.clone(), a.mT().unwrap(), sliced] {
                for uplo in [Uplo::Lower, Uplo::Upper] {
                    let f = cholesky(&a, uplo).unwrap();
                    assert_eq!(f.dims(), a.dims());
                    assert_close(&product(&f, uplo), &a, 1e-12);
                    assert_eq!(max_abs(&off_triangle(&f, uplo)), 0.0, "n = {n}");
                    let d = f.diagonal(0, -2, -1).unwrap().to_vec_f64();
                    assert!(d.iter().all(|&x| x > 0.0), "n = {n}: diagonal {d:?}");
                    // the _ex variant agrees and reports success
                    let r = cholesky_ex(&a, uplo).unwrap();
                    assert_eq!(r.l.to_vec_f64(), f.to_vec_f64());
                    assert_eq!(r.info.dims(), batch);
                    assert!(r.info.to_vec::<i64>().unwrap().iter().all(|&k| k == 0));
                }
            }
        }
    }
}

#[test]
fn only_the_triangle_named_is_read() {
    for n in [3, 70] {
        let a = spd(&[n, n], 1);
        let junk = randn(&[n, n], 2).mul_scalar(100.0).unwrap();
        let lower = a.tril(0).unwrap().add(&junk.triu(1).unwrap()).unwrap();
        let upper = a.triu(0).unwrap().add(&junk.tril(-1).unwrap()).unwrap();
        assert_close(
            &cholesky(&lower, Uplo::Lower).unwrap(),
            &cholesky(&a, Uplo::Lower).unwrap(),
            0.0,
        );
        assert_close(
            &cholesky(&upper, Uplo::Upper).unwrap(),
            &cholesky(&a, Uplo::Upper).unwrap(),
            0.0,
        );
        // U = Lᵀ
        assert_close(
            &cholesky(&a, Uplo::Upper).unwrap(),
            &cholesky(&a, Uplo::Lower).unwrap().mT().unwrap(),
            1e-12,
        );
    }
}

/// `(X + Xᵀ)/2 + c I`: symmetric, so finite differences stay on symmetric matrices.
fn sym(x: &Tensor, c: f64) -> Result<Tensor> {
    let n = x.dims()[x.rank() - 1];
    x.add(&x.mT()?)?.mul_scalar(0.5)?.add(&Tensor::eye(n, DType::F64)?.mul_scalar(c)?)
}

#[test]
fn cholesky_gradients_first_and_second_order() {
    for (dims, seed) in [(vec![1, 1], 1), (vec![3, 3], 2), (vec![2, 4, 4], 3)] {
        let x = rg(spd(&dims, seed));
        for uplo in [Uplo::Lower, Uplo::Upper] {
            check2("cholesky", std::slice::from_ref(&x), |x| {
                Ok(vec![cholesky(&sym(&x[0], 0.5)?, uplo)?])
            });
            check2("cholesky_ex", std::slice::from_ref(&x), |x| {
                Ok(vec![cholesky_ex(&sym(&x[0], 0.5)?, uplo)?.l])
            });
        }
    }
    // the faer path (n above the direct loop's limit): first order only (cost)
    let x = rg(spd(&[50, 50], 4));
    let f = |x: &[Tensor]| Ok(vec![cholesky(&sym(&x[0], 0.5)?, Uplo::Lower)?]);
    let r = gradcheck(f, &[x], &GradcheckOptions::default()).unwrap();
    assert!(r.passed, "{r}");
}

#[test]
fn cholesky_gradient_is_symmetric() {
    for uplo in [Uplo::Lower, Uplo::Upper] {
        let a = rg(spd(&[2, 5, 5], 5));
        let f = cholesky(&a, uplo).unwrap();
        let g = f.mul(&randn(&[2, 5, 5], 6)).unwrap().sum().unwrap().backward().unwrap();
        let ga = g.get(&a).unwrap();
        assert_eq!(ga.to_vec_f64(), ga.mT().unwrap().contiguous().unwrap().to_vec_f64());
        assert!(max_abs(ga) > 0.0);
    }
}

#[test]
fn fused_and_graph_gradients_agree() {
    // without create_graph small factors take a fused kernel; with it, tensor ops
    use cotangent::autograd::{grad, GradOptions};
    for n in [1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 48, 49, 80] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            // 11 matrices: a group of eight at once for tiny n, and the rest
            let a = rg(spd(&[11, n, n], n as u64));
            let g = randn(&[11, n, n], 1);
            // a transposed cotangent: a strided read
            let g = g.mT().unwrap();
            let f = cholesky(&a, uplo).unwrap();
            let fused = grad(&[&f], &[Some(&g)], &[&a], GradOptions::default()).unwrap();
            let opts = GradOptions { create_graph: true, allow_unused: false };
            let graph = grad(&[&f], &[Some(&g)], &[&a], opts).unwrap();
            let (x, y) = (fused[0].as_ref().unwrap(), graph[0].as_ref().unwrap());
            assert!(!x.requires_grad() && y.requires_grad());
            assert_close(x, &y.detach(), 1e-10);
        }
    }
}

#[test]
fn logdet_through_the_factor() {
    // log det A = 2 Σ log L_ii, whose gradient is A⁻¹ (symmetric): the VJP, the
    // inverse from the factor and the diagonal agree (the path a logdet of SPD matrices
    // can take), on the direct loop and on faer
    for n in [1, 4, 16, 60] {
        let a = rg(spd(&[2, n, n], n as u64));
        let l = cholesky(&a, Uplo::Lower).unwrap();
        let logdet =
            l.diagonal(0, -2, -1).unwrap().log().unwrap().sum().unwrap().mul_scalar(2.0).unwrap();
        let ga = logdet.backward().unwrap().get(&a).unwrap().clone();
        let inv = cholesky_inverse(&l.detach(), Uplo::Lower).unwrap();
        assert_close(&ga, &inv, 1e-10);
    }
}

#[test]
fn large_batches_of_tiny_matrices_match_one_by_one() {
    // batches factorised several matrices at a time (with a remainder), one matrix not
    // positive definite: every result as if factorised alone
    for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let b = 21;
            let mut m = spd(&[b, n, n], n as u64).to_vec_f64();
            m[10 * n * n + (n - 1) * n + (n - 1)] = -1.0; // matrix 10, minor of order n
            let a = Tensor::from_vec(m, (b, n, n)).unwrap();
            let r = cholesky_ex(&a, uplo).unwrap();
            let info = r.info.to_vec::<i64>().unwrap();
            for (i, &k) in info.iter().enumerate() {
                let ai = a.narrow(0, i, 1).unwrap();
                let one = cholesky_ex(&ai, uplo).unwrap();
                assert_eq!(k, one.info.to_vec::<i64>().unwrap()[0]);
                assert_eq!(k, if i == 10 { n as i64 } else { 0 });
                let got = r.l.narrow(0, i, 1).unwrap();
                assert_close(&got, &one.l, 1e-13);
                if i != 10 {
                    assert_close(&product(&got, uplo), &ai, 1e-12);
                }
            }
            let e = cholesky(&a, uplo).unwrap_err();
            assert!(matches!(e, Error::NotPositiveDefinite { batch: 10, .. }), "{e:?}");
        }
    }
}

/// A batch of two 4 x 4 matrices whose second has a leading minor of order 3 that is not
/// positive definite.
fn batch_failing_at_1() -> Tensor {
    let good = spd(&[4, 4], 1).to_vec_f64();
    #[rustfmt::skip]
    let bad = vec![
        4.0, 2.0, 2.0, 0.0,
        2.0, 2.0, 1.0, 0.0,
        2.0, 1.0, 0.5, 0.0,
        0.0, 0.0, 0.0, 1.0,
    ];
    Tensor::from_vec([good, bad].concat(), (2, 4, 4)).unwrap()
}

#[test]
fn not_positive_definite_names_the_matrix_and_the_minor() {
    let a = batch_failing_at_1();
    for uplo in [Uplo::Lower, Uplo::Upper] {
        let e = cholesky(&a, uplo).unwrap_err();
        assert!(
            matches!(e, Error::NotPositiveDefinite { op: "linalg.cholesky", batch: 1, order: 3 }),
            "{e:?}"
        );
        let r = cholesky_ex(&a, uplo).unwrap();
        assert_eq!(r.info.to_vec::<i64>().unwrap(), vec![0, 3]);
    }
    // the faer path: the order of the first failing minor, in the third matrix
    let n = 80;
    let mut m = spd(&[3, n, n], 2).to_vec_f64();
    m[2 * n * n + 60 * n + 60] = -1.0;
    let a = Tensor::from_vec(m, (3, n, n)).unwrap();
    let e = cholesky(&a, Uplo::Lower).unwrap_err();
    assert!(matches!(e, Error::NotPositiveDefinite { batch: 2, order: 61, .. }), "{e:?}");
    assert_eq!(cholesky_ex(&a, Uplo::Upper).unwrap().info.to_vec::<i64>().unwrap(), vec![0, 0, 61]);
}

#[test]
fn nan_and_inf_give_an_error_not_a_hang() {
    for n in [3, 80] {
        for (at, v) in [((0, 0), f64::NAN), ((n - 1, 1), f64::NAN), ((1, 1), f64::NEG_INFINITY)] {
            let mut m = spd(&[n, n], 3).to_vec_f64();
            m[at.0 * n + at.1] = v;
            m[at.1 * n + at.0] = v;
            let a = Tensor::from_vec(m, (n, n)).unwrap();
            let e = cholesky(&a, Uplo::Lower).unwrap_err();
            assert!(matches!(e, Error::NotPositiveDefinite { batch: 0, .. }), "{e:?}");
            let info = cholesky_ex(&a, Uplo::Upper).unwrap().info.to_vec::<i64>().unwrap();
            assert!(info[0] > 0);
        }
    }
}

#[test]
fn failed_matrices_hold_lapacks_partial_state() {
    // PyTorch (LAPACK potf2) for this matrix: L = [[2, 0, 0], [1, −4, 0], [0.5, 1, 5]],
    // info = 2: column 0 done, the pivot 2² − 1 − ... = −4 on the diagonal, A below
    #[rustfmt::skip]
    let a = Tensor::from_vec(vec![4.0f64, 2.0, 1.0, 2.0, -3.0, 1.0, 1.0, 1.0, 5.0], (3, 3)).unwrap();
    let r = cholesky_ex(&a, Uplo::Lower).unwrap();
    assert_eq!(r.info.to_vec::<i64>().unwrap(), vec![2]);
    assert_eq!(r.l.to_vec_f64(), vec![2.0, 0.0, 0.0, 1.0, -4.0, 0.0, 0.5, 1.0, 5.0]);
    let r = cholesky_ex(&a, Uplo::Upper).unwrap();
    assert_eq!(r.l.to_vec_f64(), vec![2.0, 1.0, 0.5, 0.0, -4.0, 1.0, 0.0, 0.0, 5.0]);
    // the faer path leaves the same state as the direct loop
    let n = 70;
    let mut m = spd(&[n, n], 9).to_vec_f64();
    m[40 * n + 40] = -2.0;
    let big = Tensor::from_vec(m, (n, n)).unwrap();
    let r = cholesky_ex(&big, Uplo::Lower).unwrap();
    assert_eq!(r.info.to_vec::<i64>().unwrap(), vec![41]);
    let lead = big.narrow(-1, 0, 45).unwrap().narrow(-2, 0, 45).unwrap();
    let small = cholesky_ex(&lead, Uplo::Lower).unwrap();
    assert_close(&r.l.narrow(-1, 0, 45).unwrap().narrow(-2, 0, 45).unwrap(), &small.l, 1e-12);
    // columns after the failing one: A's own entries
    let tail = r.l.narrow(-1, 41, n - 41).unwrap().narrow(-2, 41, n - 41).unwrap();
    let want = big.narrow(-1, 41, n - 41).unwrap().narrow(-2, 41, n - 41).unwrap().tril(0).unwrap();
    assert_close(&tail, &want, 0.0);
}

#[test]
fn empty_inputs() {
    for dims in [vec![0, 0], vec![0, 3, 3], vec![2, 0, 0]] {
        let a = Tensor::zeros(dims.clone(), DType::F64).unwrap();
        assert_eq!(cholesky(&a, Uplo::Lower).unwrap().dims(), &dims[..]);
        let r = cholesky_ex(&a, Uplo::Upper).unwrap();
        assert_eq!(r.l.dims(), &dims[..]);
        assert_eq!(r.info.dims(), &dims[..dims.len() - 2]);
        assert_eq!(cholesky_inverse(&a, Uplo::Lower).unwrap().dims(), &dims[..]);
        let mut bd = dims.clone();
        *bd.last_mut().unwrap() = 2;
        let b = Tensor::zeros(bd.clone(), DType::F64).unwrap();
        assert_eq!(cholesky_solve(&b, &a, Uplo::Lower).unwrap().dims(), &bd[..]);
    }
}

#[test]
fn f32_and_bf16_paths() {
    let a = spd(&[2, 4, 4], 1);
    let b = randn(&[2, 4, 3], 2);
    let l64 = cholesky(&a, Uplo::Lower).unwrap();
    let x64 = cholesky_solve(&b, &l64, Uplo::Lower).unwrap();
    let i64_ = cholesky_inverse(&l64, Uplo::Lower).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 3e-2)] {
        let l = cholesky(&a.to_dtype(dt).unwrap(), Uplo::Lower).unwrap();
        assert_eq!(l.dtype(), dt);
        assert_close(&l.to_dtype(DType::F64).unwrap(), &l64, tol);
        let r = cholesky_ex(&a.to_dtype(dt).unwrap(), Uplo::Lower).unwrap();
        assert_eq!((r.l.dtype(), r.info.dtype()), (dt, DType::I64));
        let l = l64.to_dtype(dt).unwrap();
        let x = cholesky_solve(&b.to_dtype(dt).unwrap(), &l, Uplo::Lower).unwrap();
        assert_eq!(x.dtype(), dt);
        assert_close(&x.to_dtype(DType::F64).unwrap(), &x64, 10.0 * tol);
        let inv = cholesky_inverse(&l, Uplo::Lower).unwrap();
        assert_eq!(inv.dtype(), dt);
        assert_close(&inv.to_dtype(DType::F64).unwrap(), &i64_, 10.0 * tol);
    }
    // gradients flow back to a bf16 leaf
    let a16 = rg(a.to_dtype(DType::Bf16).unwrap());
    let g = cholesky(&a16, Uplo::Lower).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(g.get(&a16).unwrap().dtype(), DType::Bf16);
}

#[test]
fn cholesky_solve_solves_with_broadcast_batches() {
    for (ad, bd) in [
        (vec![4, 4], vec![4, 3]),
        (vec![2, 1, 5, 5], vec![3, 5, 2]),
        (vec![1, 1], vec![1, 1]),
        (vec![17, 17], vec![17, 4]),
        (vec![64, 64], vec![2, 64, 3]),
    ] {
        let a = spd(&ad, 1);
        let b = randn(&bd, 2);
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let f = cholesky(&a, uplo).unwrap();
            for f in [f.clone(), f.mT().unwrap().contiguous().unwrap().mT().unwrap()] {
                let x = cholesky_solve(&b, &f, uplo).unwrap();
                let want = b.broadcast_to(x.shape().clone()).unwrap();
                assert_close(&a.matmul(&x).unwrap(), &want, 1e-9);
            }
        }
    }
}

#[test]
fn cholesky_solve_gradients() {
    // the factor through tril/triu: finite differences then see only the triangle read
    for (ad, bd) in
        [(vec![3, 3], vec![3, 2]), (vec![1, 3, 3], vec![2, 3, 1]), (vec![1, 1], vec![1, 2])]
    {
        let a = spd(&ad, 3);
        let b = rg(randn(&bd, 4));
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let f = rg(cholesky(&a, uplo).unwrap());
            check2("cholesky_solve", &[b.clone(), f], |x| {
                let t = match uplo {
                    Uplo::Lower => x[1].tril(0)?,
                    Uplo::Upper => x[1].triu(0)?,
                };
                Ok(vec![cholesky_solve(&x[0], &t, uplo)?])
            });
        }
    }
}

#[test]
fn factor_gradients_are_full_matrices() {
    // PyTorch's convention: gL = −(gB Xᵀ + X gBᵀ) L (solve), −X (G + Gᵀ) X L (inverse),
    // with entries off the triangle read
    let a = spd(&[3, 3], 5);
    let l = rg(cholesky(&a, Uplo::Lower).unwrap());
    let b = randn(&[3, 2], 6);
    let x = cholesky_solve(&b, &l, Uplo::Lower).unwrap();
    let gl = x.sum().unwrap().backward().unwrap().get(&l).unwrap().clone();
    let gb =
        cholesky_solve(&Tensor::full((3, 2), 1.0, DType::F64).unwrap(), &l.detach(), Uplo::Lower)
            .unwrap();
    let c = gb.matmul(&x.detach().mT().unwrap()).unwrap();
    let want = c.add(&c.mT().unwrap()).unwrap().matmul(&l.detach()).unwrap().neg().unwrap();
    assert_close(&gl, &want, 1e-12);
    assert!(max_abs(&gl.triu(1).unwrap()) > 0.0);
    let inv = cholesky_inverse(&l, Uplo::Lower).unwrap();
    let g = randn(&[3, 3], 7);
    let gl = inv.mul(&g).unwrap().sum().unwrap().backward().unwrap().get(&l).unwrap().clone();
    let x = inv.detach();
    let want = x.matmul(&g.add(&g.mT().unwrap()).unwrap()).unwrap().matmul(&x).unwrap();
    let want = want.matmul(&l.detach()).unwrap().neg().unwrap();
    assert_close(&gl, &want, 1e-12);
}

#[test]
fn cholesky_inverse_inverts() {
    for n in SIZES {
        for batch in [&[][..], &[2]] {
            let a = spd(&shape(batch, n), 11);
            for uplo in [Uplo::Lower, Uplo::Upper] {
                let f = cholesky(&a, uplo).unwrap();
                let x = cholesky_inverse(&f, uplo).unwrap();
                assert_eq!(x.to_vec_f64(), x.mT().unwrap().contiguous().unwrap().to_vec_f64());
                let eye =
                    Tensor::eye(n, DType::F64).unwrap().broadcast_to(a.shape().clone()).unwrap();
                assert_close(&x.matmul(&a).unwrap(), &eye, 1e-10);
            }
        }
    }
}

#[test]
fn cholesky_inverse_gradients() {
    for dims in [vec![1, 1], vec![3, 3], vec![2, 3, 3]] {
        let a = spd(&dims, 8);
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let f = rg(cholesky(&a, uplo).unwrap());
            check2("cholesky_inverse", &[f], |x| {
                let t = match uplo {
                    Uplo::Lower => x[0].tril(0)?,
                    Uplo::Upper => x[0].triu(0)?,
                };
                Ok(vec![cholesky_inverse(&t, uplo)?])
            });
        }
    }
}

#[test]
fn errors_name_the_op() {
    let sq = spd(&[3, 3], 1);
    for a in [randn(&[3, 4], 1), randn(&[3], 1), sq.to_dtype(DType::I64).unwrap()] {
        for (op, e) in [
            ("linalg.cholesky", cholesky(&a, Uplo::Lower).unwrap_err()),
            ("linalg.cholesky_ex", cholesky_ex(&a, Uplo::Lower).unwrap_err()),
            ("cholesky_inverse", cholesky_inverse(&a, Uplo::Lower).unwrap_err()),
        ] {
            assert!(e.to_string().starts_with(op), "{e}");
            assert!(matches!(e, Error::BadShape { .. } | Error::UnsupportedDType { .. }), "{e:?}");
        }
    }
    let l = cholesky(&sq, Uplo::Lower).unwrap();
    let cases: Vec<(Tensor, Tensor)> = vec![
        (randn(&[3], 1), l.clone()),                          // b not a matrix
        (randn(&[3, 2], 1), randn(&[3, 4], 2)),               // factor not square
        (randn(&[4, 2], 1), l.clone()),                       // rows
        (randn(&[2, 3, 2], 1), randn(&[3, 3, 3], 2)),         // batches
        (randn(&[3, 2], 1).to_dtype(DType::F32).unwrap(), l), // no promotion
    ];
    for (b, l) in cases {
        let e = cholesky_solve(&b, &l, Uplo::Lower).unwrap_err();
        assert!(e.to_string().starts_with("cholesky_solve"), "{e}");
        assert!(
            matches!(
                e,
                Error::BadShape { .. } | Error::ShapeMismatch { .. } | Error::DTypeMismatch { .. }
            ),
            "{e:?}"
        );
    }
}

/// Timings for comparison with PyTorch (the minimum over repetitions: robust to a loaded
/// machine); run with `--ignored --nocapture` on an optimised build. No assertion.
#[test]
#[ignore = "timing, for a manual comparison with PyTorch"]
fn timing() {
    use std::time::Instant;
    let min_time = |reps: usize, f: &mut dyn FnMut()| {
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    for (b, n, reps) in
        [(4096, 4, 200), (1024, 16, 100), (1, 4, 5000), (1, 16, 2000), (1, 256, 30), (1, 1024, 4)]
    {
        let dims = if b == 1 { vec![n, n] } else { vec![b, n, n] };
        let a = rg(spd(&dims, 1));
        let g = randn(&dims, 2);
        let fwd = min_time(reps, &mut || {
            std::hint::black_box(cholesky(&a.detach(), Uplo::Lower).unwrap());
        });
        let both = min_time(reps, &mut || {
            let l = cholesky(&a, Uplo::Lower).unwrap();
            let gr = l.backward_with(&g).unwrap();
            std::hint::black_box(gr.get(&a).unwrap());
        });
        eprintln!("cholesky {b}x{n}x{n}: fwd {:.1} us, fwd+bwd {:.1} us", fwd * 1e6, both * 1e6);
    }
}
