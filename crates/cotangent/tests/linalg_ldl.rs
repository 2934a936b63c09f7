//! The Bunch–Kaufman factorisation (`ldl_factor`, `ldl_factor_ex`, `ldl_solve`):
//! reconstruction of `A` from the compact factors by an independent unpacking of LAPACK's
//! format, 1 x 1 and 2 x 2 pivots with interchanges, batches, the solver's residual, the
//! zero-pivot info and error, gradients (w.r.t. `B`; named errors for the factors) and
//! errors. PyTorch's own factors and pivots are compared in the runner's fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, randn, rg};
use cotangent::linalg::{ldl_factor, ldl_factor_ex, ldl_solve};
use cotangent::{DType, Error, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec()).unwrap()
}

/// A symmetric matrix (batch) `(X + Xᵀ) / 2`: indefinite.
fn sym(shape: &[usize], seed: u64) -> Tensor {
    let x = randn(shape, seed);
    x.add(&x.mT().unwrap()).unwrap().mul_scalar(0.5).unwrap()
}

/// `P L D Lᵀ Pᵀ` of one matrix's compact factors (row-major `n x n`) and pivots, built
/// as LAPACK documents the format: `A = P₁ L₁ P₂ L₂ ⋯ D ⋯ L₂ᵀ P₂ᵀ L₁ᵀ P₁ᵀ`, each `Lₖ` the
/// identity with the multipliers of block `k` below it, each `Pₖ` one interchange.
fn rebuild(ld: &[f64], piv: &[i64], n: usize) -> Vec<f64> {
    let at = |i: usize, j: usize| ld[i * n + j];
    // the blocks, in order: (start, size, interchanged row)
    let mut blocks = Vec::new();
    let mut k = 0;
    while k < n {
        if piv[k] > 0 {
            blocks.push((k, 1, piv[k] as usize - 1));
            k += 1;
        } else {
            blocks.push((k, 2, (-piv[k]) as usize - 1));
            k += 2;
        }
    }
    let mut m = vec![0.0; n * n];
    for &(k, s, _) in &blocks {
        for i in k..k + s {
            for j in k..k + s {
                m[i * n + j] = at(i.max(j), i.min(j));
            }
        }
    }
    for &(k, s, p) in blocks.iter().rev() {
        // M ← Lₖ M Lₖᵀ
        let mut l = vec![0.0; n * n];
        for i in 0..n {
            l[i * n + i] = 1.0;
        }
        for c in k..k + s {
            for i in k + s..n {
                l[i * n + c] = at(i, c);
            }
        }
        let lm: Vec<f64> = (0..n * n)
            .map(|ij| (0..n).map(|q| l[(ij / n) * n + q] * m[q * n + ij % n]).sum())
            .collect();
        m = (0..n * n)
            .map(|ij| (0..n).map(|q| lm[(ij / n) * n + q] * l[(ij % n) * n + q]).sum())
            .collect();
        // M ← Pₖ M Pₖᵀ: interchange k + s − 1 and p
        let r = k + s - 1;
        for c in 0..n {
            m.swap(r * n + c, p * n + c);
        }
        for i in 0..n {
            m.swap(i * n + r, i * n + p);
        }
    }
    m
}

#[test]
fn factors_rebuild_a_over_sizes_and_batches() {
    let mut seed = 0;
    let mut two_by_two = 0;
    let mut interchanges = 0;
    for n in [0usize, 1, 2, 3, 4, 5, 8, 17, 40, 70] {
        for batch in [vec![], vec![3]] {
            seed += 1;
            let mut shape = batch.clone();
            shape.extend([n, n]);
            let a = sym(&shape, seed);
            let f = ldl_factor_ex(&a, false).unwrap();
            let count: usize = batch.iter().product();
            assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![0; count]);
            assert_eq!(f.pivots.dims(), &shape[..shape.len() - 1]);
            let (ld, piv, av) =
                (f.ld.to_vec_f64(), f.pivots.to_vec::<i64>().unwrap(), a.to_vec_f64());
            for b in 0..count {
                let (l, p) = (&ld[b * n * n..(b + 1) * n * n], &piv[b * n..(b + 1) * n]);
                // zeros above the diagonal, as PyTorch returns them
                assert!((0..n).all(|i| (i + 1..n).all(|j| l[i * n + j] == 0.0)));
                two_by_two += p.iter().filter(|&&x| x < 0).count();
                interchanges += (0..n).filter(|&k| p[k] > 0 && p[k] as usize != k + 1).count();
                let back = rebuild(l, p, n);
                let want = &av[b * n * n..(b + 1) * n * n];
                let err = back.iter().zip(want).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
                assert!(err < 1e-12 * (n as f64 + 1.0), "n = {n}, matrix {b}: {err}");
            }
        }
    }
    // both kinds of pivot, with interchanges, were exercised
    assert!(two_by_two > 10 && interchanges > 5, "{two_by_two} {interchanges}");
}

#[test]
fn only_the_lower_triangle_is_read() {
    // PyTorch 2.15: ldl_factor_ex([[1, 2], [3, 4]]) factors [[1, 3], [3, 4]]: a 1 x 1
    // pivot after interchanging rows 1 and 2 (|4| >= α |3|), pivots [2, 2]
    let f = ldl_factor_ex(&t(&[1., 2., 3., 4.], &[2, 2]), false).unwrap();
    assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![2, 2]);
    assert_close(&f.ld, &t(&[4., 0., 0.75, -1.25], &[2, 2]), 1e-15);
    // hermitian is the same for real input
    let g = ldl_factor_ex(&t(&[1., 2., 3., 4.], &[2, 2]), true).unwrap();
    assert_eq!(g.ld.to_vec_f64(), f.ld.to_vec_f64());
}

#[test]
fn solve_residuals_batched_and_broadcast() {
    for (n, k) in [(1, 1), (3, 2), (6, 4), (33, 3), (70, 5)] {
        let a = sym(&[2, n, n], 40 + n as u64);
        let b = randn(&[2, n, k], 41);
        let f = ldl_factor(&a, false).unwrap();
        let x = ldl_solve(&f.ld, &f.pivots, &b, false).unwrap();
        assert_eq!(x.dims(), &[2, n, k]);
        let want = cotangent::linalg::solve(&a, &b, cotangent::linalg::Side::Left).unwrap();
        assert_close(&x, &want, 1e-9);
        // the factors' batch broadcasts against B's
        let b2 = randn(&[3, 1, n, k], 42);
        let x2 = ldl_solve(&f.ld, &f.pivots, &b2, false).unwrap();
        assert_eq!(x2.dims(), &[3, 2, n, k]);
        let r = a.matmul(&x2).unwrap().sub(&b2).unwrap();
        assert!(common::max_abs(&r) < 1e-9, "n = {n}");
    }
}

#[test]
fn a_zero_pivot_is_info_and_singular() {
    // diag(1, 0, 2): the second 1 x 1 block is zero (PyTorch: info 2, pivots [1, 2, 3])
    let s = t(&[1., 0., 0., 0., 0., 0., 0., 0., 2.], &[3, 3]);
    let a = Tensor::stack(&[&Tensor::eye(3, DType::F64).unwrap(), &s], 0).unwrap();
    let f = ldl_factor_ex(&a, false).unwrap();
    assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![0, 2]);
    assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![1, 2, 3, 1, 2, 3]);
    match ldl_factor(&a, false).unwrap_err() {
        Error::Singular { op: "linalg.ldl_factor", batch: 1, index: 2 } => {}
        e => panic!("{e:?}"),
    }
    // the solve divides by the zero block without error: inf and NaN, as PyTorch's
    // ([nan, inf, 0.5] for B = ones)
    let x = ldl_solve(
        &f.ld.narrow(0, 1, 1).unwrap(),
        &f.pivots.narrow(0, 1, 1).unwrap(),
        &Tensor::ones((1, 3, 1), DType::F64).unwrap(),
        false,
    )
    .unwrap()
    .to_vec_f64();
    assert!(x[0].is_nan() && x[1] == f64::INFINITY && x[2] == 0.5, "{x:?}");
    // NaN input neither panics nor errors (PyTorch: a 2 x 2 block, info 0)
    let f = ldl_factor_ex(&t(&[f64::NAN; 4], &[2, 2]), false).unwrap();
    assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![-2, -2]);
}

#[test]
fn gradient_with_respect_to_b_and_named_errors_for_the_factors() {
    let a = sym(&[2, 5, 5], 7);
    let f = ldl_factor(&a, false).unwrap();
    let (ld, piv) = (&f.ld, &f.pivots);
    let b = rg(randn(&[2, 5, 3], 8));
    check2("ldl_solve B", std::slice::from_ref(&b), move |x| {
        Ok(vec![ldl_solve(ld, piv, &x[0], false)?])
    });
    // through the factors: named errors, never a silent zero
    let ar = rg(a.clone());
    let g = ldl_factor(&ar, false).unwrap();
    assert!(g.ld.requires_grad() && !g.pivots.requires_grad());
    let loss = ldl_solve(&g.ld, &g.pivots, &b, false).unwrap().sum().unwrap();
    match loss.backward().unwrap_err() {
        Error::NotDifferentiable { op: "linalg.ldl_solve", .. } => {}
        e => panic!("{e:?}"),
    }
    match g.ld.sum().unwrap().backward().unwrap_err() {
        Error::NotDifferentiable { op: "linalg.ldl_factor", .. } => {}
        e => panic!("{e:?}"),
    }
}

#[test]
fn dtypes() {
    let a = sym(&[2, 6, 6], 9);
    let b = randn(&[2, 6, 2], 10);
    let f64f = ldl_factor(&a, false).unwrap();
    let x64 = ldl_solve(&f64f.ld, &f64f.pivots, &b, false).unwrap();
    for (dt, tol) in [(DType::F32, 1e-3), (DType::Bf16, 0.3)] {
        let f = ldl_factor(&a.to_dtype(dt).unwrap(), false).unwrap();
        assert_eq!(f.ld.dtype(), dt);
        let x = ldl_solve(&f.ld, &f.pivots, &b.to_dtype(dt).unwrap(), false).unwrap();
        assert_eq!(x.dtype(), dt);
        if dt == DType::F32 {
            assert_eq!(f.pivots.to_vec::<i64>().unwrap(), f64f.pivots.to_vec::<i64>().unwrap());
            assert_close(&x.to_dtype(DType::F64).unwrap(), &x64, tol);
        }
    }
}

#[test]
fn errors_name_the_op() {
    let a = sym(&[4, 4], 1);
    let f = ldl_factor(&a, false).unwrap();
    let op = |e: &Error| match e {
        Error::BadShape { op, .. }
        | Error::ShapeMismatch { op, .. }
        | Error::DTypeMismatch { op, .. }
        | Error::UnsupportedDType { op, .. }
        | Error::InvalidArgument { op, .. } => *op,
        e => panic!("{e:?}"),
    };
    let e = ldl_factor(&randn(&[3, 4], 1), false).unwrap_err();
    assert!(matches!(e, Error::BadShape { .. }) && op(&e) == "linalg.ldl_factor", "{e:?}");
    let e = ldl_factor_ex(&randn(&[3], 1), false).unwrap_err();
    assert!(matches!(e, Error::BadShape { .. }) && op(&e) == "linalg.ldl_factor_ex", "{e:?}");
    let e = ldl_factor(&a.to_dtype(DType::I64).unwrap(), false).unwrap_err();
    assert!(matches!(e, Error::UnsupportedDType { .. }), "{e:?}");
    let b = randn(&[4, 2], 2);
    for (ld, piv, b) in [
        (&f.ld, &f.pivots.narrow(0, 0, 3).unwrap(), &b),
        (&f.ld, &f.pivots, &randn(&[3, 2], 2)),
        (&f.ld, &f.pivots, &randn(&[4], 2)),
        (&f.ld, &f.pivots, &b.to_dtype(DType::F32).unwrap()),
        (&f.ld, &f.pivots.to_dtype(DType::F64).unwrap(), &b),
        (&f.ld, &t(&[1.0, 5.0, 3.0, 4.0], &[4]).to_dtype(DType::I64).unwrap(), &b),
        (&f.ld, &t(&[-2.0, 1.0, 3.0, 4.0], &[4]).to_dtype(DType::I64).unwrap(), &b),
        (&f.ld, &t(&[2.0, 1.0, 3.0, 4.0], &[4]).to_dtype(DType::I64).unwrap(), &b),
    ] {
        let e = ldl_solve(ld, piv, b, false).unwrap_err();
        assert_eq!(op(&e), "linalg.ldl_solve", "{e:?}");
    }
}

/// Found by fuzzing (issue 49): a NaN on the diagonal of the last column took the 2 x 2
/// pivot branch past the matrix's end (an index out of bounds). As the LAPACK behind
/// PyTorch: a NaN diagonal beside a zero column is a zero 1 x 1 block (`info` set); one
/// beside a non-zero column pivots. Values, pivots and `info` from PyTorch 2.15's
/// `ldl_factor_ex`.
#[test]
fn nan_diagonals_are_one_by_one_blocks() {
    let nan = f64::NAN;
    // (A row-major, n, LD, pivots, info)
    type Case = (Vec<f64>, usize, Vec<f64>, Vec<i64>, i64);
    let cases: [Case; 4] = [
        (vec![nan, 1.0, 1.0, 2.0], 2, vec![2.0, 0.0, 0.5, nan], vec![2, 2], 2),
        (vec![nan, 0.0, 0.0, nan], 2, vec![nan, 0.0, 0.0, nan], vec![1, 2], 1),
        (vec![2.0, 1.0, 1.0, nan], 2, vec![2.0, 0.0, 0.5, nan], vec![1, 2], 2),
        (
            vec![4.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, nan],
            3,
            vec![4.0, 0.0, 0.0, 0.25, 2.75, 0.0, 0.0, 0.36363636363636365, nan],
            vec![1, 2, 3],
            3,
        ),
    ];
    for (a, n, ld, pivots, info) in cases {
        for dt in [DType::F64, DType::F32, DType::C128] {
            let t = Tensor::from_vec(a.clone(), (n, n)).unwrap().to_dtype(dt).unwrap();
            let f = ldl_factor_ex(&t, false).unwrap();
            let got = f.ld.to_dtype(DType::F64).unwrap_or_else(|_| f.ld.real().unwrap());
            let got = got.to_vec::<f64>().unwrap();
            for (g, w) in got.iter().zip(&ld) {
                let tol = if dt == DType::F32 { 1e-6 } else { 1e-15 };
                assert!(
                    (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol,
                    "{dt:?}: {got:?} vs {ld:?}"
                );
            }
            assert_eq!(f.pivots.to_vec::<i64>().unwrap(), pivots, "{dt:?}");
            assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![info], "{dt:?}");
        }
    }
}
