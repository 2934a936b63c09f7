//! The complex Bunch–Kaufman factorisations (`ldl_factor`, `ldl_factor_ex`, `ldl_solve`
//! with `hermitian = false`, complex symmetric, and `true`, Hermitian): reconstruction of
//! `A` from the compact factors by an independent unpacking of LAPACK's format, pivots by
//! `|re| + |im|`, the Hermitian diagonal (real `D`, `A`'s imaginary diagonal not read),
//! solves against `solve`, the zero-pivot info, gradients w.r.t. `B` (first and second
//! order) and the named error through the factors. PyTorch's own factors and pivots are
//! compared in the runner's fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, crandn, max_abs, rg};
use cotangent::linalg::{ldl_factor, ldl_factor_ex, ldl_solve, solve, Side};
use cotangent::{DType, Error, Tensor};

fn cm(re: &[f64], im: &[f64], shape: &[usize]) -> Tensor {
    let r = Tensor::from_vec(re.to_vec(), shape.to_vec()).unwrap();
    let i = Tensor::from_vec(im.to_vec(), shape.to_vec()).unwrap();
    Tensor::complex(&r, &i).unwrap()
}

/// A complex symmetric (`Aᵀ = A`) or Hermitian matrix (batch), indefinite.
fn sym(shape: &[usize], seed: u64, herm: bool) -> Tensor {
    let x = crandn(shape, seed);
    let xt = if herm { x.mH().unwrap() } else { x.mT().unwrap() };
    x.add(&xt).unwrap().mul_scalar(0.5).unwrap()
}

/// `P₁ L₁ P₂ L₂ ⋯ D ⋯ L₂ᴴ P₂ᵀ L₁ᴴ P₁ᵀ` (`ᵀ` for `ᴴ` when not `herm`) of one matrix's
/// compact factors `ld: (n, n)` and pivots, as LAPACK documents the format: each `Lₖ` the
/// identity with the multipliers of block `k` below it, each `Pₖ` one interchange, `D`'s
/// blocks Hermitian (or symmetric) with their lower entries from `ld`.
fn rebuild(ld: &Tensor, piv: &[i64], n: usize, herm: bool) -> Tensor {
    let (re, im) = (ld.real().unwrap().to_vec_f64(), ld.imag().unwrap().to_vec_f64());
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
    let (mut dr, mut di) = (vec![0.0; n * n], vec![0.0; n * n]);
    for &(k, s, _) in &blocks {
        for i in k..k + s {
            for j in k..k + s {
                let src = i.max(j) * n + i.min(j);
                dr[i * n + j] = re[src];
                // the upper entry of a Hermitian block is the conjugate of the lower one
                di[i * n + j] = if herm && i < j { -im[src] } else { im[src] };
            }
        }
    }
    let mut m = cm(&dr, &di, &[n, n]);
    for &(k, s, p) in blocks.iter().rev() {
        let (mut lr, mut li) = (vec![0.0; n * n], vec![0.0; n * n]);
        for i in 0..n {
            lr[i * n + i] = 1.0;
        }
        for c in k..k + s {
            for i in k + s..n {
                lr[i * n + c] = re[i * n + c];
                li[i * n + c] = im[i * n + c];
            }
        }
        let l = cm(&lr, &li, &[n, n]);
        let lt = if herm { l.mH().unwrap() } else { l.mT().unwrap() };
        m = l.matmul(&m).unwrap().matmul(&lt).unwrap();
        // interchange k + s − 1 and p (a real permutation)
        let r = k + s - 1;
        let mut pm = vec![0.0; n * n];
        for i in 0..n {
            let j = if i == r {
                p
            } else if i == p {
                r
            } else {
                i
            };
            pm[i * n + j] = 1.0;
        }
        let pm = cm(&pm, &vec![0.0; n * n], &[n, n]);
        m = pm.matmul(&m).unwrap().matmul(&pm.mT().unwrap()).unwrap();
    }
    m
}

#[test]
fn factors_rebuild_a_over_sizes_batches_and_both_kinds() {
    let mut seed = 0;
    for herm in [false, true] {
        let (mut two_by_two, mut interchanges) = (0, 0);
        for n in [0usize, 1, 2, 3, 4, 5, 8, 17, 40] {
            for batch in [vec![], vec![3]] {
                seed += 1;
                let mut shape = batch.clone();
                shape.extend([n, n]);
                let a = sym(&shape, seed, herm);
                let f = ldl_factor_ex(&a, herm).unwrap();
                let count: usize = batch.iter().product();
                assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![0; count]);
                assert_eq!(f.ld.dtype(), DType::C128);
                let piv = f.pivots.to_vec::<i64>().unwrap();
                let ld = f.ld.reshape(vec![count, n, n]).unwrap();
                let a3 = a.reshape(vec![count, n, n]).unwrap();
                for b in 0..count {
                    let l = ld.select(0, b as isize).unwrap();
                    let p = &piv[b * n..(b + 1) * n];
                    // zeros above the diagonal; a real D diagonal when Hermitian
                    assert_eq!(max_abs(&l.triu(1).unwrap().abs().unwrap()), 0.0);
                    if herm {
                        let d = l.diagonal(0, -2, -1).unwrap().imag().unwrap();
                        assert_eq!(max_abs(&d), 0.0);
                    }
                    two_by_two += p.iter().filter(|&&x| x < 0).count();
                    interchanges += (0..n).filter(|&k| p[k] > 0 && p[k] as usize != k + 1).count();
                    let back = rebuild(&l, p, n, herm);
                    let want = a3.select(0, b as isize).unwrap();
                    let err = max_abs(&back.sub(&want).unwrap().abs().unwrap());
                    assert!(err < 1e-12 * (n as f64 + 1.0), "herm {herm}, n = {n}: {err}");
                }
            }
        }
        // both kinds of pivot, with interchanges, were exercised
        assert!(two_by_two > 10 && interchanges > 5, "{herm}: {two_by_two} {interchanges}");
    }
}

#[test]
fn pivots_rank_entries_by_the_sum_of_their_parts() {
    // column 0 below the diagonal: |3 + 3i| has modulus 4.24 and |re| + |im| 6; |5| has 5.
    // izamax picks row 1 (the larger sum), as LAPACK does; by modulus it would be row 2.
    let re = [0.1, 3.0, 5.0, 3.0, 1.0, 0.0, 5.0, 0.0, 1.0];
    let im = [0.0, 3.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let a = cm(&re, &im, &[3, 3]);
    let f = ldl_factor_ex(&a, false).unwrap();
    // PyTorch 2.15 (LAPACK zsytrf): pivots [-2, -2, 3], a 2 x 2 block with row 2 (1-based)
    assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![-2, -2, 3]);
}

#[test]
fn hermitian_factors_read_the_real_part_of_the_diagonal_only() {
    // PyTorch 2.15: ldl_factor([[1+2j, 3-1j], [3+1j, 0.5j]], hermitian=True) is one 2 x 2
    // block [[1, .], [3+1j, 0]] with pivots [-2, -2]; hermitian=False factors the complex
    // symmetric matrix of the lower triangle, [[1+2j, .], [1-1j, -4+2.5j]], pivots [1, 2]
    let a = cm(&[1.0, 3.0, 3.0, 0.0], &[2.0, -1.0, 1.0, 0.5], &[2, 2]);
    let h = ldl_factor(&a, true).unwrap();
    assert_eq!(h.pivots.to_vec::<i64>().unwrap(), vec![-2, -2]);
    assert_close(&h.ld, &cm(&[1.0, 0.0, 3.0, 0.0], &[0.0, 0.0, 1.0, 0.0], &[2, 2]), 1e-15);
    let s = ldl_factor(&a, false).unwrap();
    assert_eq!(s.pivots.to_vec::<i64>().unwrap(), vec![1, 2]);
    assert_close(&s.ld, &cm(&[1.0, 0.0, 1.0, -4.0], &[2.0, 0.0, -1.0, 2.5], &[2, 2]), 1e-15);
    // the imaginary parts of the diagonal change nothing in the Hermitian factors
    let a2 = cm(&[1.0, 3.0, 3.0, 0.0], &[-7.0, -1.0, 1.0, 9.0], &[2, 2]);
    let h2 = ldl_factor(&a2, true).unwrap();
    assert_close(&h2.ld, &h.ld, 0.0);
}

#[test]
fn solves_match_solve_batched_and_broadcast() {
    for herm in [false, true] {
        for (n, k) in [(1, 1), (3, 2), (6, 4), (33, 3)] {
            let a = sym(&[2, n, n], 40 + n as u64, herm);
            let b = crandn(&[2, n, k], 41);
            let f = ldl_factor(&a, herm).unwrap();
            let x = ldl_solve(&f.ld, &f.pivots, &b, herm).unwrap();
            assert_eq!(x.dims(), &[2, n, k]);
            let want = solve(&a, &b, Side::Left).unwrap();
            assert_close(&x, &want, 1e-9);
            let b2 = crandn(&[3, 1, n, k], 42);
            let x2 = ldl_solve(&f.ld, &f.pivots, &b2, herm).unwrap();
            assert_eq!(x2.dims(), &[3, 2, n, k]);
            let r = a.matmul(&x2).unwrap().sub(&b2).unwrap().abs().unwrap();
            assert!(max_abs(&r) < 1e-9, "herm {herm}, n = {n}");
        }
    }
    // c64 too
    let a = sym(&[5, 5], 7, true).to_dtype(DType::C64).unwrap();
    let b = crandn(&[5, 2], 8).to_dtype(DType::C64).unwrap();
    let f = ldl_factor(&a, true).unwrap();
    let x = ldl_solve(&f.ld, &f.pivots, &b, true).unwrap();
    assert_eq!(x.dtype(), DType::C64);
    let r = a.matmul(&x).unwrap().sub(&b).unwrap().abs().unwrap();
    assert!(max_abs(&r) < 1e-4);
}

#[test]
fn a_zero_pivot_gives_info_and_an_error() {
    for herm in [false, true] {
        let z = Tensor::zeros(vec![2, 2], DType::C64).unwrap();
        let f = ldl_factor_ex(&z, herm).unwrap();
        // PyTorch 2.15: info 1, pivots [1, 2]
        assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![1]);
        assert_eq!(f.pivots.to_vec::<i64>().unwrap(), vec![1, 2]);
        match ldl_factor(&z, herm) {
            Err(Error::Singular { .. }) => {}
            other => panic!("expected Singular, got {other:?}"),
        }
    }
}

#[test]
fn gradients_wrt_b_and_none_through_the_factors() {
    for herm in [false, true] {
        let a = sym(&[2, 4, 4], 60, herm);
        let f = ldl_factor(&a, herm).unwrap();
        check2("ldl_solve", &[rg(crandn(&[2, 4, 3], 61))], move |x| {
            let f = ldl_factor(&sym(&[2, 4, 4], 60, herm), herm)?;
            Ok(vec![ldl_solve(&f.ld, &f.pivots, &x[0], herm)?])
        });
        // gB = A⁻ᴴ G, whatever the factorisation's kind
        let b = rg(crandn(&[2, 4, 3], 62));
        let g = crandn(&[2, 4, 3], 63);
        let x = ldl_solve(&f.ld, &f.pivots, &b, herm).unwrap();
        let loss = x.mul(&g.conj().unwrap()).unwrap().sum().unwrap().real().unwrap();
        let grads = loss.backward().unwrap();
        let want = solve(&a.mH().unwrap(), &g, Side::Left).unwrap();
        assert_close(grads.get(&b).unwrap(), &want, 1e-10);
        // through the factors: a named error, as PyTorch has no derivative there
        let ldr = rg(f.ld.clone());
        let y = ldl_solve(&ldr, &f.pivots, &crandn(&[2, 4, 3], 64), herm).unwrap();
        match y.abs().unwrap().sum().unwrap().backward() {
            Err(Error::NotDifferentiable { op, .. }) => assert_eq!(op, "linalg.ldl_solve"),
            other => panic!("expected NotDifferentiable, got {other:?}"),
        }
        let ar = rg(a.clone());
        let fr = ldl_factor(&ar, herm).unwrap();
        match fr.ld.abs().unwrap().sum().unwrap().backward() {
            Err(Error::NotDifferentiable { op, .. }) => assert_eq!(op, "linalg.ldl_factor"),
            other => panic!("expected NotDifferentiable, got {other:?}"),
        }
    }
}
