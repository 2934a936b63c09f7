//! `linalg.solve_triangular`: solutions against reconstruction (`A X = B`), gradients
//! against finite differences (first and second order), batching, layouts and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, randn, rg, well_conditioned};
use cotangent::linalg::{solve_triangular, Diag, Side, Uplo};
use cotangent::{DType, Error, Tensor};

/// The triangle of `a` that a solve reads, with ones on the diagonal if `unit`.
fn tri(a: &Tensor, uplo: Uplo, diag: Diag) -> Tensor {
    let n = a.dims()[a.rank() - 1];
    let k = isize::from(diag == Diag::Unit);
    let t = match uplo {
        Uplo::Lower => a.tril(-k).unwrap(),
        Uplo::Upper => a.triu(k).unwrap(),
    };
    if diag == Diag::Unit {
        t.add(&Tensor::eye(n, DType::F64).unwrap()).unwrap()
    } else {
        t
    }
}

#[test]
fn solutions_reconstruct_the_right_hand_side() {
    // A X = B (left) and X A = B (right), for every triangle and diagonal kind, with
    // batches that broadcast and a transposed (non-contiguous) A.
    for (ashape, bshape_l, bshape_r) in [
        (vec![4, 4], vec![4, 3], vec![3, 4]),
        (vec![2, 1, 5, 5], vec![3, 5, 2], vec![3, 2, 5]),
        (vec![1, 1], vec![1, 1], vec![1, 1]),
        (vec![17, 17], vec![17, 5], vec![5, 17]),
        // from 128³ multiply-adds the right-hand sides are split across threads (a
        // partial last range; a batch whose B broadcasts)
        (vec![130, 130], vec![130, 150], vec![150, 130]),
        (vec![2, 130, 130], vec![130, 70], vec![70, 130]),
    ] {
        let n = ashape[ashape.len() - 1];
        let a = if n > 100 {
            // off-diagonal entries small enough for unit triangles to be well conditioned
            let eye = Tensor::eye(n, DType::F64).unwrap();
            randn(&ashape, 1).div_scalar(n as f64).unwrap().add(&eye).unwrap()
        } else {
            well_conditioned(&ashape, 1)
        };
        for a in [a.clone(), a.mT().unwrap()] {
            for uplo in [Uplo::Lower, Uplo::Upper] {
                for diag in [Diag::NonUnit, Diag::Unit] {
                    let t = tri(&a, uplo, diag);
                    let b = randn(&bshape_l, 2);
                    let x = solve_triangular(&a, &b, uplo, Side::Left, diag).unwrap();
                    let want = b.broadcast_to(x.shape().clone()).unwrap();
                    assert_close(&t.matmul(&x).unwrap(), &want, 1e-10);
                    let b = randn(&bshape_r, 3);
                    let x = solve_triangular(&a, &b, uplo, Side::Right, diag).unwrap();
                    let want = b.broadcast_to(x.shape().clone()).unwrap();
                    assert_close(&x.matmul(&t).unwrap(), &want, 1e-10);
                }
            }
        }
    }
}

#[test]
fn split_solves_give_the_same_bits_on_any_number_of_threads() {
    // one matrix's right-hand sides are solved in column ranges, one per thread
    let a = well_conditioned(&[160, 160], 4);
    let b = randn(&[160, 200], 5);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let l = solve_triangular(&a, &b, Uplo::Lower, Side::Left, Diag::NonUnit).unwrap();
            let r = solve_triangular(&a, &b.mT().unwrap(), Uplo::Upper, Side::Right, Diag::Unit)
                .unwrap();
            let bits = |t: &Tensor| t.to_vec_f64().iter().map(|x| x.to_bits()).collect();
            (bits(&l), bits(&r)) as (Vec<u64>, Vec<u64>)
        })
    };
    let one = run(1);
    for threads in [2, 3, 5] {
        assert!(run(threads) == one, "{threads} threads");
    }
}

#[test]
fn gradients_first_and_second_order() {
    let a = rg(well_conditioned(&[3, 3], 4));
    let bl = rg(randn(&[3, 2], 5));
    let br = rg(randn(&[2, 3], 6));
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for diag in [Diag::NonUnit, Diag::Unit] {
            check2("left", &[a.clone(), bl.clone()], |x| {
                Ok(vec![solve_triangular(&x[0], &x[1], uplo, Side::Left, diag)?])
            });
            check2("right", &[a.clone(), br.clone()], |x| {
                Ok(vec![solve_triangular(&x[0], &x[1], uplo, Side::Right, diag)?])
            });
        }
    }
    // broadcast batch dims: the gradient of a shared A is summed over the batch
    let a = rg(well_conditioned(&[1, 3, 3], 7));
    let b = rg(randn(&[2, 3, 2], 8));
    check2("broadcast", &[a, b], |x| {
        Ok(vec![solve_triangular(&x[0], &x[1], Uplo::Upper, Side::Left, Diag::NonUnit)?])
    });
}

#[test]
fn gradient_is_zero_off_the_triangle_read() {
    // the strictly upper part (and, for a unit diagonal, the diagonal) is not read
    let a = rg(well_conditioned(&[3, 3], 9));
    let b = randn(&[3, 2], 10);
    for (diag, k) in [(Diag::NonUnit, 1), (Diag::Unit, 0)] {
        let x = solve_triangular(&a, &b, Uplo::Lower, Side::Left, diag).unwrap();
        let g = x.sum().unwrap().backward().unwrap();
        let ga = g.get(&a).unwrap();
        assert_eq!(ga.triu(k).unwrap().to_vec_f64(), vec![0.0; 9]);
    }
}

#[test]
fn empty_and_f32_and_bf16() {
    let a = well_conditioned(&[0, 0], 1);
    let b = randn(&[0, 3], 2);
    let x = solve_triangular(&a, &b, Uplo::Lower, Side::Left, Diag::NonUnit).unwrap();
    assert_eq!(x.dims(), &[0, 3]);
    let a = well_conditioned(&[0, 4, 4], 1);
    let x =
        solve_triangular(&a, &randn(&[4, 2], 2), Uplo::Lower, Side::Left, Diag::NonUnit).unwrap();
    assert_eq!(x.dims(), &[0, 4, 2]);
    let a = well_conditioned(&[4, 4], 3);
    let b = randn(&[4, 2], 4);
    let x64 = solve_triangular(&a, &b, Uplo::Upper, Side::Left, Diag::NonUnit).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 2e-2)] {
        let x = solve_triangular(
            &a.to_dtype(dt).unwrap(),
            &b.to_dtype(dt).unwrap(),
            Uplo::Upper,
            Side::Left,
            Diag::NonUnit,
        )
        .unwrap();
        assert_eq!(x.dtype(), dt);
        assert_close(&x.to_dtype(DType::F64).unwrap(), &x64, tol);
    }
}

#[test]
fn mixed_dtypes_take_a_dtype() {
    // as PyTorch 2.15: B is cast to A's dtype (f64 A with f32 B gives f64, f32 A with
    // f64 B gives f32, an integer B is cast too); a complex B with a real A is refused
    // (PyTorch drops its imaginary part)
    let a = well_conditioned(&[3, 3], 1);
    let b = randn(&[3, 2], 2);
    let solve =
        |a: &Tensor, b: &Tensor| solve_triangular(a, b, Uplo::Lower, Side::Left, Diag::NonUnit);
    let b32 = b.to_dtype(DType::F32).unwrap();
    let x = solve(&a, &b32).unwrap();
    assert_eq!(x.dtype(), DType::F64);
    assert_close(&x, &solve(&a, &b32.to_dtype(DType::F64).unwrap()).unwrap(), 0.0);
    let a32 = a.to_dtype(DType::F32).unwrap();
    let x = solve(&a32, &b).unwrap();
    assert_eq!(x.dtype(), DType::F32);
    assert_close(&x, &solve(&a32, &b32).unwrap(), 0.0);
    let bi = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], (3, 2)).unwrap();
    let x = solve(&a, &bi).unwrap();
    assert_eq!(x.dtype(), DType::F64);
    assert_close(&x, &solve(&a, &bi.to_dtype(DType::F64).unwrap()).unwrap(), 0.0);
    let err = solve(&a, &b.to_dtype(DType::C128).unwrap()).unwrap_err();
    assert!(matches!(err, Error::DTypeMismatch { op: "linalg.solve_triangular", .. }), "{err}");
    // a complex A takes a real B, cast to complex
    let ac = a.to_dtype(DType::C128).unwrap();
    let x = solve(&ac, &b).unwrap();
    assert_eq!(x.dtype(), DType::C128);
    assert_close(&x.real().unwrap(), &solve(&a, &b).unwrap(), 1e-15);
}

#[test]
fn errors_name_the_op() {
    let op = "linalg.solve_triangular";
    let a = well_conditioned(&[3, 3], 1);
    let cases: Vec<(Tensor, Tensor)> = vec![
        (randn(&[3, 2], 1), randn(&[3, 2], 2)),
        (a.clone(), randn(&[3], 2)),
        (a.clone(), randn(&[4, 2], 2)),
        (randn(&[2, 3, 3], 1), randn(&[3, 3, 2], 2)),
        (a.to_dtype(DType::I64).unwrap(), randn(&[3, 2], 2)),
    ];
    for (a, b) in cases {
        let e = solve_triangular(&a, &b, Uplo::Lower, Side::Left, Diag::NonUnit).unwrap_err();
        assert!(e.to_string().starts_with(op), "{e}");
        assert!(
            matches!(
                e,
                Error::BadShape { .. }
                    | Error::ShapeMismatch { .. }
                    | Error::UnsupportedDType { .. }
            ),
            "{e:?}"
        );
    }
}
