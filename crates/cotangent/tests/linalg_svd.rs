//! `linalg.svd` and `linalg.svdvals`: reconstruction and orthogonality over a size sweep,
//! the sign gauge and its determinism, layouts, empty and non-finite input, gradients
//! against finite differences (first and second order, gauge-invariant losses), the
//! degenerate cases (finite where defined, `NotDifferentiable` where not), and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg};
use cotangent::autograd::{gradcheck, GradcheckOptions};
use cotangent::linalg::{qr, svd, svdvals, QrMode};
use cotangent::{DType, Error, Tensor};

const SIZES: [usize; 7] = [0, 1, 2, 3, 5, 17, 64];

/// `U diag(S) Vh = A`, `UᵀU = I`, `V Vᵀ = I`, `S` descending and non-negative, and the
/// gauge: the largest-magnitude entry of each column of `U` is positive.
fn check_factors(a: &Tensor, u: &Tensor, s: &Tensor, vh: &Tensor, what: &str) {
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let k = m.min(n);
    let (ku, kv) = (u.dims()[r - 1], vh.dims()[r - 2]);
    let tol = 1e-13 * (m.max(n) as f64 + 1.0);
    let scale = 1.0 + max_abs(a);
    for (q, c) in [(u.clone(), ku), (vh.mT().unwrap(), kv)] {
        let qtq = q.mT().unwrap().matmul(&q).unwrap();
        let eye = Tensor::eye(c, DType::F64).unwrap().broadcast_to(qtq.shape().clone()).unwrap();
        assert!(max_abs(&qtq.sub(&eye).unwrap()) < tol, "{what}: orthonormal columns");
    }
    let back = u
        .narrow(-1, 0, k)
        .unwrap()
        .mul(&s.unsqueeze(-2).unwrap())
        .unwrap()
        .matmul(&vh.narrow(-2, 0, k).unwrap())
        .unwrap();
    assert_eq!(back.shape(), a.shape(), "{what}");
    assert!(max_abs(&back.sub(a).unwrap()) < tol * scale, "{what}: U diag(S) Vh = A");
    let sv = s.to_vec_f64();
    for c in sv.chunks(k.max(1)) {
        assert!(c.windows(2).all(|w| w[0] >= w[1]) && c.iter().all(|&x| x >= 0.0), "{what}");
    }
    // gauge of every column of U
    let uv = u.contiguous().unwrap().to_vec_f64();
    if m > 0 && ku > 0 {
        for mat in uv.chunks(m * ku) {
            for j in 0..ku {
                let col: Vec<f64> = (0..m).map(|i| mat[i * ku + j]).collect();
                let mut best = 0.0f64;
                let mut sign = 1.0;
                for x in col {
                    if x.abs() > best {
                        best = x.abs();
                        sign = x.signum();
                    }
                }
                assert_eq!(sign, 1.0, "{what}: gauge of column {j}");
            }
        }
    }
}

#[test]
fn factors_reconstruct_over_a_size_sweep() {
    for &s in &SIZES {
        for (m, n) in [(s, s), (s + s / 2 + 1, s), (s, s + s / 2 + 1)] {
            for batch in [vec![], vec![3], vec![2, 1]] {
                let mut shape = batch.clone();
                shape.extend([m, n]);
                let a = randn(&shape, (m * 131 + n) as u64);
                let k = m.min(n);
                let what = format!("{shape:?}");
                let f = svd(&a, false).unwrap();
                assert_eq!(f.u.dims()[batch.len()..], [m, k], "{what}");
                assert_eq!(f.s.dims()[batch.len()..], [k], "{what}");
                assert_eq!(f.vh.dims()[batch.len()..], [k, n], "{what}");
                check_factors(&a, &f.u, &f.s, &f.vh, &what);
                let c = svd(&a, true).unwrap();
                assert_eq!(c.u.dims()[batch.len()..], [m, m], "{what}");
                assert_eq!(c.vh.dims()[batch.len()..], [n, n], "{what}");
                check_factors(&a, &c.u, &c.s, &c.vh, &format!("{what} full"));
                assert_close(&c.s, &f.s, 1e-13);
                let vals = svdvals(&a).unwrap();
                assert_close(&vals, &f.s, 1e-12);
            }
        }
    }
}

#[test]
fn deterministic_and_layout_independent() {
    let a = randn(&[3, 6, 4], 5);
    let f1 = svd(&a, true).unwrap();
    let f2 = svd(&a, true).unwrap();
    assert_eq!(f1.u.to_vec_f64(), f2.u.to_vec_f64());
    assert_eq!(f1.vh.to_vec_f64(), f2.vh.to_vec_f64());
    // a transposed view and a sliced view give the same factors
    let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
    let g = svd(&at, true).unwrap();
    assert_close(&g.u, &f1.u, 1e-13);
    assert_close(&g.vh, &f1.vh, 1e-13);
    let big = randn(&[3, 8, 9], 6);
    let sl = big.narrow(-2, 1, 6).unwrap().narrow(-1, 2, 4).unwrap();
    let h = svd(&sl, false).unwrap();
    let hc = svd(&sl.contiguous().unwrap(), false).unwrap();
    assert_close(&h.u, &hc.u, 1e-13);
    assert_close(&h.s, &hc.s, 1e-13);
    // the example of the docs: the gauge flips U's columns to a positive largest entry
    let d = Tensor::from_vec(vec![3.0f64, 0.0, 0.0, -4.0], (2, 2)).unwrap();
    let f = svd(&d, false).unwrap();
    assert_eq!(f.u.to_vec_f64(), vec![0.0, 1.0, 1.0, 0.0]);
    assert_eq!(f.vh.to_vec_f64(), vec![0.0, -1.0, 1.0, 0.0]);
}

#[test]
fn empty_matrices_as_pytorch() {
    // PyTorch: (0, 3) full -> U (0, 0), Vh = I3; (3, 0) full -> U = I3, Vh (0, 0)
    let f = svd(&Tensor::zeros((0, 3), DType::F64).unwrap(), true).unwrap();
    assert_eq!((f.u.dims(), f.s.dims(), f.vh.dims()), (&[0, 0][..], &[0][..], &[3, 3][..]));
    assert_eq!(f.vh.to_vec_f64(), Tensor::eye(3, DType::F64).unwrap().to_vec_f64());
    let f = svd(&Tensor::zeros((3, 0), DType::F64).unwrap(), true).unwrap();
    assert_eq!(f.u.to_vec_f64(), Tensor::eye(3, DType::F64).unwrap().to_vec_f64());
    let f = svd(&Tensor::zeros((2, 0, 3), DType::F64).unwrap(), false).unwrap();
    assert_eq!(
        (f.u.dims(), f.s.dims(), f.vh.dims()),
        (&[2, 0, 0][..], &[2, 0][..], &[2, 0, 3][..])
    );
    let f = svd(&Tensor::zeros((0, 4, 3), DType::F64).unwrap(), true).unwrap();
    assert_eq!(
        (f.u.dims(), f.s.dims(), f.vh.dims()),
        (&[0, 4, 4][..], &[0, 3][..], &[0, 3, 3][..])
    );
    assert_eq!(svdvals(&Tensor::zeros((5, 0), DType::F32).unwrap()).unwrap().dims(), &[0]);
    // the gradient of an empty factorisation is zero
    let a = rg(Tensor::zeros((3, 0), DType::F64).unwrap());
    let f = svd(&a, true).unwrap();
    let g = f.u.sum().unwrap().backward().unwrap();
    assert_eq!(g.get(&a).unwrap().dims(), &[3, 0]);
}

#[test]
fn non_finite_input_is_an_error_not_a_hang() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut v = randn(&[2, 4, 3], 1).to_vec_f64();
        v[15] = bad;
        let a = Tensor::from_vec(v, (2, 4, 3)).unwrap();
        for r in [svd(&a, false).map(|f| f.s), svdvals(&a), svd(&a, true).map(|f| f.u)] {
            let e = r.unwrap_err();
            assert!(matches!(e, Error::NoConvergence { op: "linalg.svd", batch: 1 }), "{e:?}");
        }
    }
}

#[test]
fn errors_name_the_op() {
    for (a, is_shape) in [
        (randn(&[3], 1), true),
        (Tensor::scalar(1.0f64), true),
        (randn(&[3, 3], 1).to_dtype(DType::I64).unwrap(), false),
    ] {
        let e = svd(&a, true).unwrap_err();
        assert!(e.to_string().starts_with("linalg.svd"), "{e}");
        let e2 = svdvals(&a).unwrap_err();
        assert!(e2.to_string().starts_with("linalg.svdvals"), "{e2}");
        if is_shape {
            assert!(matches!(e, Error::BadShape { .. }), "{e:?}");
        } else {
            assert!(matches!(e, Error::UnsupportedDType { .. }), "{e:?}");
        }
    }
}

#[test]
fn f32_and_bf16() {
    let a = randn(&[2, 5, 3], 3);
    let s64 = svdvals(&a).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 3e-2), (DType::F16, 3e-3)] {
        let f = svd(&a.to_dtype(dt).unwrap(), false).unwrap();
        assert_eq!((f.u.dtype(), f.s.dtype(), f.vh.dtype()), (dt, dt, dt));
        assert_close(&f.s.to_dtype(DType::F64).unwrap(), &s64, tol);
        let v = svdvals(&a.to_dtype(dt).unwrap()).unwrap();
        assert_close(&v.to_dtype(DType::F64).unwrap(), &s64, tol);
    }
    let f = svd(&a.to_dtype(DType::F32).unwrap(), true).unwrap();
    let back = f.u.narrow(-1, 0, 3).unwrap().mul(&f.s.unsqueeze(-2).unwrap()).unwrap();
    let back = back.matmul(&f.vh).unwrap().to_dtype(DType::F64).unwrap();
    assert_close(&back, &a, 1e-5);
    // gradients flow back to a bf16 leaf
    let a16 = rg(a.to_dtype(DType::Bf16).unwrap());
    let g = svdvals(&a16).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(g.get(&a16).unwrap().dtype(), DType::Bf16);
}

/// Gauge-invariant losses of the factors: the reconstruction weighted by `W`, `U f(S) Vh`,
/// the projectors `U Uᵀ` and `V Vᵀ`, the polar factor `U Vh`, and `S` alone.
#[test]
fn gradients_first_and_second_order() {
    for (shape, full) in [
        (vec![4, 3], false),
        (vec![3, 4], false),
        (vec![3, 3], false),
        (vec![2, 4, 3], true),
        (vec![2, 3, 5], true),
        (vec![1, 1], false),
    ] {
        let a = rg(randn(&shape, 11));
        let r = shape.len();
        let (m, n) = (shape[r - 2], shape[r - 1]);
        let w = randn(&shape, 12);
        let wm = randn(&[m, m], 13);
        let wn = randn(&[n, n], 14);
        let (w, wm, wn) = (&w, &wm, &wn);
        let name = format!("{shape:?} full={full}");
        check2(&format!("reconstruction {name}"), std::slice::from_ref(&a), move |x| {
            let f = svd(&x[0], full)?;
            let k = f.s.dims()[f.s.rank() - 1];
            let u = f.u.narrow(-1, 0, k)?;
            let vh = f.vh.narrow(-2, 0, k)?;
            Ok(vec![u.mul(&f.s.mul(&f.s)?.unsqueeze(-2)?)?.matmul(&vh)?.mul(w)?.sum()?])
        });
        check2(&format!("projectors {name}"), std::slice::from_ref(&a), move |x| {
            let f = svd(&x[0], false)?;
            let pu = f.u.matmul(&f.u.mT()?)?.mul(wm)?.sum()?;
            let pv = f.vh.mT()?.matmul(&f.vh)?.mul(wn)?.sum()?;
            Ok(vec![pu.add(&pv)?])
        });
        check2(&format!("polar {name}"), std::slice::from_ref(&a), move |x| {
            let f = svd(&x[0], false)?;
            Ok(vec![f.u.matmul(&f.vh)?])
        });
        check2(&format!("svdvals {name}"), std::slice::from_ref(&a), |x| Ok(vec![svdvals(&x[0])?]));
        check2(&format!("S of svd {name}"), std::slice::from_ref(&a), move |x| {
            Ok(vec![svd(&x[0], full)?.s])
        });
    }
}

/// `Q₁ diag(s) Q₂ᵀ` with orthogonal `Q₁` (`m x k`) and `Q₂` (`n x k`) from QR.
fn with_singular_values(m: usize, n: usize, s: &[f64], seed: u64) -> Tensor {
    let k = s.len();
    let q1 = qr(&randn(&[m, k], seed), QrMode::Reduced).unwrap().q;
    let q2 = qr(&randn(&[n, k], seed + 1), QrMode::Reduced).unwrap().q;
    let d = Tensor::from_vec(s.to_vec(), k).unwrap();
    q1.mul(&d.unsqueeze(0).unwrap()).unwrap().matmul(&q2.mT().unwrap()).unwrap()
}

fn gradcheck1(name: &str, a: &Tensor, f: impl Fn(&[Tensor]) -> cotangent::Result<Vec<Tensor>>) {
    let r = gradcheck(f, &[rg(a.clone())], &GradcheckOptions::default()).unwrap();
    assert!(r.passed, "{name}: {r}");
}

#[test]
fn svdvals_gradient_is_finite_at_repeated_singular_values() {
    // s = (2, 2, 1, 1): the loss depends on S only, symmetrically; the VJP U diag(gS) Vh
    // divides by no gap
    for (m, n) in [(4, 4), (6, 4), (4, 6)] {
        let a = with_singular_values(m, n, &[2.0, 2.0, 1.0, 1.0], 3);
        gradcheck1("svdvals squares", &a, |x| Ok(vec![svdvals(&x[0])?.pow_scalar(3.0)?.sum()?]));
        gradcheck1("svd S sum", &a, |x| Ok(vec![svd(&x[0], true)?.s.sum()?]));
        let g = svdvals(&rg(a.clone())).unwrap().sum().unwrap();
        assert!(g.backward().is_ok());
    }
}

#[test]
fn rotation_invariant_losses_are_finite_at_repeated_singular_values() {
    // the polar factor U Vh and the projector U Uᵀ are smooth at s = (3, 3, 1): the
    // degenerate pair contributes its rotation part only; checked against finite
    // differences
    for (m, n) in [(3, 3), (5, 3), (3, 5)] {
        let a = with_singular_values(m, n, &[3.0, 3.0, 1.0], 7);
        gradcheck1(&format!("polar {m}x{n}"), &a, |x| {
            let f = svd(&x[0], false)?;
            Ok(vec![f.u.matmul(&f.vh)?])
        });
        let w = randn(&[m, m], 8);
        let w = &w;
        gradcheck1(&format!("projector {m}x{n}"), &a, move |x| {
            let f = svd(&x[0], false)?;
            Ok(vec![f.u.matmul(&f.u.mT()?)?.mul(w)?.sum()?, f.s.sum()?])
        });
    }
    // a rank-deficient tall matrix: the projector onto the column space through U
    // (whose dependence on A is through the non-zero singular values only)
    let a = with_singular_values(5, 3, &[2.0, 1.0], 9);
    let w = randn(&[5, 5], 10);
    let w = &w;
    gradcheck1("projector rank 2", &a, move |x| {
        let f = svd(&x[0], false)?;
        let u = f.u.narrow(-1, 0, 2)?;
        Ok(vec![u.matmul(&u.mT()?)?.mul(w)?.sum()?])
    });
}

#[test]
fn basis_dependent_losses_at_repeated_singular_values_are_not_differentiable() {
    // sum(U ∘ W) depends on the basis of the repeated pair's subspace: PyTorch returns
    // inf/NaN, we refuse
    let a = rg(with_singular_values(4, 3, &[2.0, 2.0, 1.0], 11));
    let w = randn(&[4, 3], 12);
    let f = svd(&a, false).unwrap();
    let e = f.u.mul(&w).unwrap().sum().unwrap().backward().unwrap_err();
    assert!(matches!(e, Error::NotDifferentiable { op: "linalg.svd", .. }), "{e:?}");
    assert!(e.to_string().contains("linalg.svd"), "{e}");
    // the same loss is fine with distinct singular values
    let b = rg(with_singular_values(4, 3, &[3.0, 2.0, 1.0], 11));
    let f = svd(&b, false).unwrap();
    assert!(f.u.mul(&w).unwrap().sum().unwrap().backward().is_ok());
    // a tall rank-deficient matrix with a cotangent of U outside its column space
    let c = rg(with_singular_values(5, 3, &[2.0, 1.0], 13));
    let f = svd(&c, false).unwrap();
    let w = randn(&[5, 3], 14);
    let e = f.u.mul(&w).unwrap().sum().unwrap().backward().unwrap_err();
    assert!(matches!(e, Error::NotDifferentiable { op: "linalg.svd", .. }), "{e:?}");
}

#[test]
fn full_matrices_completion_gets_no_gradient() {
    // PyTorch narrows U and Vh to k columns / rows in the backward
    for shape in [[5, 3], [3, 5]] {
        let a = rg(randn(&shape, 21));
        let f = svd(&a, true).unwrap();
        let g1 = f.u.sum().unwrap().add(&f.vh.sum().unwrap()).unwrap().backward().unwrap();
        let f2 = svd(&a, false).unwrap();
        let g2 = f2.u.sum().unwrap().add(&f2.vh.sum().unwrap()).unwrap().backward().unwrap();
        assert_close(g1.get(&a).unwrap(), g2.get(&a).unwrap(), 1e-12);
    }
}

#[test]
fn small_kernel_edge_cases() {
    // matrices up to 16 x 16 take the one-sided Jacobi kernel: known singular values,
    // extreme scales, repeated and zero singular values (the latter fall back to faer
    // for the singular vectors), f32
    for (m, n) in [(4, 4), (16, 16), (16, 5), (3, 16), (2, 2)] {
        let k = m.min(n);
        let sv: Vec<f64> = (0..k).map(|i| 10f64.powi(-(i as i32) / 2)).collect();
        for scale in [1.0, 1e150, 1e-150] {
            let sv: Vec<f64> = sv.iter().map(|x| x * scale).collect();
            let a = with_singular_values(m, n, &sv, (m * n) as u64);
            let f = svd(&a, false).unwrap();
            let what = format!("{m}x{n} scale {scale:e}");
            common::close(
                &f.s.to_vec_f64().iter().map(|x| x / scale).collect::<Vec<_>>(),
                &sv.iter().map(|x| x / scale).collect::<Vec<_>>(),
                1e-13,
            );
            check_factors(
                &a.div_scalar(scale).unwrap(),
                &f.u,
                &f.s.div_scalar(scale).unwrap(),
                &f.vh,
                &what,
            );
        }
        // repeated, and rank-deficient (zero singular values)
        let rep: Vec<f64> = (0..k).map(|i| if i < k / 2 { 2.0 } else { 1.0 }).collect();
        let zero: Vec<f64> = (0..k).map(|i| if i + 1 < k { 1.0 + i as f64 } else { 0.0 }).collect();
        for s in [rep, zero] {
            let a = with_singular_values(m, n, &s, 5);
            for full in [false, true] {
                let f = svd(&a, full).unwrap();
                check_factors(&a, &f.u, &f.s, &f.vh, &format!("{m}x{n} {s:?} full={full}"));
            }
        }
        let a32 = randn(&[3, m, n], 9);
        let f = svd(&a32.to_dtype(DType::F32).unwrap(), false).unwrap();
        assert_close(&f.s.to_dtype(DType::F64).unwrap(), &svdvals(&a32).unwrap(), 1e-5);
    }
    // a zero matrix
    let f = svd(&Tensor::zeros((3, 3), DType::F64).unwrap(), false).unwrap();
    assert_eq!(f.s.to_vec_f64(), vec![0.0; 3]);
    assert_eq!(
        svdvals(&Tensor::zeros((2, 3), DType::F64).unwrap()).unwrap().to_vec_f64(),
        vec![0.0; 2]
    );
}

/// The bits of each matrix's factors of a batched SVD (thin), as f64.
fn bits(f: &cotangent::linalg::Svd) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    (f.u.to_vec_f64(), f.s.to_vec_f64(), f.vh.to_vec_f64())
}

#[test]
fn batches_in_lanes_match_one_matrix_at_a_time() {
    // batches of matrices up to 16 are decomposed several at a time by the one-sided
    // Jacobi lane kernel; up to 8 x 8 each lane gets the bits of the one-matrix Jacobi
    // kernel (beyond, f64 lanes start in f32). A batch of 17 whose last matrix repeats
    // matrix 3 (the last one in a partial lane group, padded): the same bits.
    // Zero, rank-deficient and repeated-value matrices among regular ones; transposed views;
    // f32; tall, wide and square
    for dt in [DType::F64, DType::F32] {
        for (m, n) in [(2, 2), (3, 3), (4, 4), (5, 5), (8, 8), (9, 9), (16, 16), (16, 5), (7, 12)] {
            let k = m.min(n);
            let mut v = randn(&[17, m, n], (m * 31 + n) as u64).to_vec_f64();
            let sz = m * n;
            // matrix 5: zero; matrix 6: rank-deficient; matrix 7: repeated singular values
            v[5 * sz..6 * sz].fill(0.0);
            let zero: Vec<f64> =
                (0..k).map(|i| if i + 1 < k { 1.0 + i as f64 } else { 0.0 }).collect();
            let rep: Vec<f64> = (0..k).map(|i| if i < k / 2 { 2.0 } else { 1.0 }).collect();
            v[6 * sz..7 * sz].copy_from_slice(&with_singular_values(m, n, &zero, 3).to_vec_f64());
            v[7 * sz..8 * sz].copy_from_slice(&with_singular_values(m, n, &rep, 4).to_vec_f64());
            let v3 = v[3 * sz..4 * sz].to_vec();
            v[16 * sz..17 * sz].copy_from_slice(&v3);
            let a = Tensor::from_vec(v, vec![17, m, n]).unwrap().to_dtype(dt).unwrap();
            let what = format!("{dt:?} {m}x{n}");
            let f = svd(&a, false).unwrap();
            let a64 = a.to_dtype(DType::F64).unwrap();
            if dt == DType::F64 {
                check_factors(&a64, &f.u, &f.s, &f.vh, &what);
            }
            let (u, s, vh) = bits(&f);
            let (us, ss, vs) = (m * k, k, k * n);
            assert_eq!(u[3 * us..4 * us], u[16 * us..], "{what}");
            assert_eq!(s[3 * ss..4 * ss], s[16 * ss..], "{what}");
            assert_eq!(vh[3 * vs..4 * vs], vh[16 * vs..], "{what}");
            assert_eq!(s[5 * ss..6 * ss], vec![0.0; k], "{what}");
            // up to 8 x 8 every matrix alone runs the same kernel: the same bits
            let tol = if dt == DType::F32 { 1e-5 } else { 1e-13 };
            for i in [0, 3, 6, 7, 9, 15] {
                let g = svd(&a.narrow(0, i, 1).unwrap(), false).unwrap();
                let (gu, gs, gv) = bits(&g);
                if m.max(n) <= 8 {
                    assert_eq!(gs, s[i * ss..(i + 1) * ss], "{what} {i}");
                    if i != 6 {
                        assert_eq!(gu, u[i * us..(i + 1) * us], "{what} {i}");
                        assert_eq!(gv, vh[i * vs..(i + 1) * vs], "{what} {i}");
                    }
                }
                common::close(&gs, &s[i * ss..(i + 1) * ss], tol * 4.0);
            }
            // svdvals (no vectors), and a transposed view of the same values
            // (matrix 6 has a zero singular value: its vectors come from faer)
            let vals = svdvals(&a).unwrap().to_vec_f64();
            assert_eq!(vals[..6 * ss], s[..6 * ss], "{what} svdvals");
            assert_eq!(vals[7 * ss..], s[7 * ss..], "{what} svdvals");
            common::close(&vals[6 * ss..7 * ss], &s[6 * ss..7 * ss], tol * 4.0);
            let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
            assert_eq!(bits(&svd(&at, false).unwrap()), (u, s, vh), "{what} transposed");
        }
    }
}

#[test]
fn batches_in_lanes_are_deterministic_over_thread_counts_and_fail_on_non_finite() {
    let a = randn(&[1000, 16, 16], 41);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let f1 = one.install(|| bits(&svd(&a, false).unwrap()));
    let f2 = bits(&svd(&a, false).unwrap());
    assert_eq!(f1, f2);
    let b = randn(&[203, 4, 4], 42);
    let g1 = one.install(|| bits(&svd(&b, false).unwrap()));
    assert_eq!(g1, bits(&svd(&b, false).unwrap()));
    // a NaN or an infinity in matrix 13 of 19: the batch fails, naming it
    for bad in [f64::NAN, f64::INFINITY] {
        for (m, n) in [(4, 4), (16, 16), (12, 5)] {
            let mut v = randn(&[19, m, n], 43).to_vec_f64();
            v[13 * m * n + 2] = bad;
            let a = Tensor::from_vec(v, vec![19, m, n]).unwrap();
            for r in [svd(&a, false).map(|f| f.s), svdvals(&a)] {
                let e = r.unwrap_err();
                assert!(matches!(e, Error::NoConvergence { op: "linalg.svd", batch: 13 }), "{e:?}");
            }
        }
    }
}

#[test]
fn fused_backward_matches_the_recorded_one() {
    // without create_graph the VJP runs fused per matrix; with it, as tensor ops: the
    // same gradient for every combination of cotangents, tall, wide, square, batched,
    // f32, full matrices, strided cotangents; and the same errors at degenerate input
    use cotangent::autograd::{grad, GradOptions};
    let run = |a: &Tensor, full: bool, used: [bool; 3], seed: u64, create_graph: bool| {
        let f = svd(a, full).unwrap();
        let dt = a.dtype();
        let outs = [&f.u, &f.s, &f.vh];
        let cots: Vec<Tensor> = outs
            .iter()
            .enumerate()
            .map(|(i, o)| randn(o.dims(), seed + i as u64).to_dtype(dt).unwrap())
            .collect();
        // U's cotangent through a transposed view (strided)
        let cu = cots[0].mT().unwrap().contiguous().unwrap().mT().unwrap();
        let cots = [cu, cots[1].clone(), cots[2].clone()];
        let (mut o, mut c) = (vec![], vec![]);
        for i in 0..3 {
            if used[i] {
                o.push(outs[i]);
                c.push(Some(&cots[i]));
            }
        }
        let opts = GradOptions { create_graph, allow_unused: false };
        grad(&o, &c, &[a], opts).map(|g| g[0].clone().unwrap().to_dtype(DType::F64).unwrap())
    };
    for (shape, dt) in [
        (vec![4, 4], DType::F64),
        (vec![6, 4], DType::F64),
        (vec![4, 6], DType::F64),
        (vec![19, 4, 4], DType::F64),
        (vec![11, 16, 16], DType::F64),
        (vec![3, 16, 7], DType::F64),
        (vec![3, 7, 16], DType::F64),
        (vec![9, 5, 5], DType::F32),
        (vec![2, 6, 3], DType::F32),
    ] {
        let a = rg(randn(&shape, 71).to_dtype(dt).unwrap());
        let tol = if dt == DType::F32 { 2e-3 } else { 1e-9 };
        for full in [false, true] {
            for used in [
                [true, true, true],
                [true, false, false],
                [false, true, false],
                [false, false, true],
                [true, true, false],
            ] {
                let x = run(&a, full, used, 80, false).unwrap();
                let y = run(&a, full, used, 80, true).unwrap();
                let scale = 1.0 + max_abs(&y);
                assert!(max_abs(&x.sub(&y).unwrap()) <= tol * scale, "{shape:?} {dt:?} {used:?}");
            }
        }
    }
    // degenerate: repeated values with an invariant loss (the same finite gradient),
    // a basis-dependent one (both fail), a rank-deficient tall matrix with a cotangent of
    // U outside its span (both fail), S only at repeated values (both finite)
    for (m, n) in [(4, 3), (3, 4), (3, 3)] {
        let a = rg(with_singular_values(m, n, &[2.0, 2.0, 1.0], 11));
        for create_graph in [false, true] {
            let opts = GradOptions { create_graph, allow_unused: false };
            let f = svd(&a, false).unwrap();
            let polar = f.u.matmul(&f.vh).unwrap().sum().unwrap();
            let g = grad(&[&polar], &[None], &[&a], opts).unwrap()[0].clone().unwrap();
            let f2 = svd(&a, false).unwrap();
            let p2 = f2.u.matmul(&f2.vh).unwrap().sum().unwrap();
            let o2 = GradOptions { create_graph: !create_graph, allow_unused: false };
            let g2 = grad(&[&p2], &[None], &[&a], o2).unwrap()[0].clone().unwrap();
            assert_close(&g, &g2, 1e-10);
            let w = randn(&[m, 3], 12);
            let bad = f.u.mul(&w).unwrap().sum().unwrap();
            let e = grad(&[&bad], &[None], &[&a], opts).unwrap_err();
            assert!(matches!(e, Error::NotDifferentiable { op: "linalg.svd", .. }), "{e:?}");
            let e2 = run(&a, false, [false, false, true], 5, create_graph).unwrap_err();
            assert!(matches!(e2, Error::NotDifferentiable { .. }), "{e2:?}");
            let s = run(&a, false, [false, true, false], 5, create_graph).unwrap();
            assert!(s.to_vec_f64().iter().all(|x| x.is_finite()));
        }
    }
    let c = rg(with_singular_values(5, 3, &[2.0, 1.0], 13));
    let w = randn(&[5, 3], 14);
    let mut msgs = vec![];
    for create_graph in [false, true] {
        let f = svd(&c, false).unwrap();
        let loss = f.u.mul(&w).unwrap().sum().unwrap();
        let opts = GradOptions { create_graph, allow_unused: false };
        let e = grad(&[&loss], &[None], &[&c], opts).unwrap_err();
        assert!(matches!(e, Error::NotDifferentiable { op: "linalg.svd", .. }), "{e:?}");
        msgs.push(e.to_string());
        // the projector onto the column space is fine
        let u = f.u.narrow(-1, 0, 2).unwrap();
        let p =
            u.matmul(&u.mT().unwrap()).unwrap().mul(&randn(&[5, 5], 15)).unwrap().sum().unwrap();
        assert!(grad(&[&p], &[None], &[&c], opts).is_ok());
    }
    assert_eq!(msgs[0], msgs[1]);
}

#[test]
fn lane_kernel_on_hard_matrices_matches_the_one_matrix_paths() {
    // the Jacobi lane kernel (round-robin pairs, cached column norms, the f32 start beyond
    // 8 columns) against the matrix alone (faer beyond 8 x 8, the scalar Jacobi kernel up
    // to 8): values to rounding,
    // reconstruction and orthogonality, on well-conditioned, ill-conditioned (cond 1e12),
    // rank-deficient, repeated-value, zero and extremely scaled matrices, tall, wide and
    // square, in a batch of 19 (not a multiple of 8) whose last three matrices (a partial
    // lane group, padded) repeat three in whole groups: the same bits
    for (m, n) in [(16, 16), (12, 12), (16, 5), (7, 12), (9, 16), (6, 6)] {
        let k = m.min(n);
        let sz = m * n;
        let geo: Vec<f64> = (0..k).map(|i| 10f64.powf(-12.0 * i as f64 / (k - 1) as f64)).collect();
        let def: Vec<f64> = (0..k).map(|i| if i + 2 < k { 1.0 + i as f64 } else { 0.0 }).collect();
        let rep: Vec<f64> = (0..k).map(|i| if i % 3 == 0 { 3.0 } else { 1.0 }).collect();
        let mut v = randn(&[19, m, n], (m * 7 + n) as u64).to_vec_f64();
        let mut put = |i: usize, x: Vec<f64>| v[i * sz..(i + 1) * sz].copy_from_slice(&x);
        put(1, with_singular_values(m, n, &geo, 11).to_vec_f64());
        put(2, with_singular_values(m, n, &def, 12).to_vec_f64());
        put(3, with_singular_values(m, n, &rep, 13).to_vec_f64());
        put(4, vec![0.0; sz]);
        let tiny: Vec<f64> = geo.iter().map(|x| x * 1e-150).collect();
        put(5, with_singular_values(m, n, &tiny, 14).to_vec_f64());
        put(9, with_singular_values(m, n, &geo, 15).mul_scalar(1e150).unwrap().to_vec_f64());
        put(10, with_singular_values(m, n, &vec![1.0; k], 16).to_vec_f64());
        for (dst, src) in [(16, 3), (17, 2), (18, 1)] {
            v.copy_within(src * sz..(src + 1) * sz, dst * sz);
        }
        let a = Tensor::from_vec(v, vec![19, m, n]).unwrap();
        let what = format!("{m}x{n}");
        let f = svd(&a, false).unwrap();
        let (u, s, vh) = bits(&f);
        let (us, ss, vs) = (m * k, k, k * n);
        for (x, y) in [(16, 3), (17, 2), (18, 1)] {
            assert_eq!(u[x * us..(x + 1) * us], u[y * us..(y + 1) * us], "{what} {x}");
            assert_eq!(s[x * ss..(x + 1) * ss], s[y * ss..(y + 1) * ss], "{what} {x}");
            assert_eq!(vh[x * vs..(x + 1) * vs], vh[y * vs..(y + 1) * vs], "{what} {x}");
        }
        let vals = svdvals(&a).unwrap().to_vec_f64();
        for i in 0..19 {
            let ai = a.narrow(0, i, 1).unwrap();
            let fi = svd(&ai, false).unwrap();
            let scale = if i == 5 {
                1e-150
            } else if i == 9 {
                1e150
            } else {
                1.0
            };
            let ai_s = ai.div_scalar(scale).unwrap();
            let whati = format!("{what} matrix {i}");
            check_factors(
                &ai_s,
                &f.u.narrow(0, i, 1).unwrap(),
                &f.s.narrow(0, i, 1).unwrap().div_scalar(scale).unwrap(),
                &f.vh.narrow(0, i, 1).unwrap(),
                &whati,
            );
            let alone = fi.s.to_vec_f64();
            let smax = alone[0].max(f64::MIN_POSITIVE);
            for (j, (&x, &y)) in s[i * ss..(i + 1) * ss].iter().zip(&alone).enumerate() {
                assert!((x - y).abs() <= 1e-14 * k as f64 * smax, "{whati} value {j}: {x} {y}");
                // values only: the same values as with vectors, to rounding
                let z = vals[i * ss + j];
                assert!((x - z).abs() <= 1e-14 * k as f64 * smax, "{whati} svdvals {j}");
            }
            // the graded values (down to 1e-10 of the largest: the construction's rounding
            // bounds the rest)
            if i == 1 || i == 5 || i == 9 {
                for (j, &x) in s[i * ss..(i + 1) * ss].iter().enumerate() {
                    if geo[j] >= 1e-10 {
                        let want = geo[j] * scale;
                        assert!((x / want - 1.0).abs() < 1e-4, "{whati} graded value {j}: {x}");
                    }
                }
            }
        }
        assert_eq!(s[4 * ss..5 * ss], vec![0.0; k], "{what} zero matrix");
    }
}

#[test]
fn f32_start_keeps_values_to_eps_sigma_max_on_badly_scaled_columns() {
    // f64 batches of 9 to 16 columns start in f32 (five sweeps), then go on in f64 from the
    // rotation found, made orthonormal: the values are accurate to about ε σ_max (as faer's
    // and gesdd's), the factors orthonormal and reconstructing A. Matrices whose columns
    // are scaled down to 1e-12 (the f32 sweeps see the small ones as noise), against faer
    // on each matrix alone; tall and square, with a partial lane group
    for (m, n) in [(16, 16), (16, 10), (12, 12)] {
        let b = 11;
        let mut v = randn(&[b, m, n], (m * 3 + n) as u64).to_vec_f64();
        for i in 0..b {
            for c in 0..n {
                let f = 10f64.powf(-12.0 * (c * i) as f64 / ((n - 1) * (b - 1)) as f64);
                for r in 0..m {
                    v[(i * m + r) * n + c] *= f;
                }
            }
        }
        let a = Tensor::from_vec(v, vec![b, m, n]).unwrap();
        let what = format!("column-scaled {m}x{n}");
        let f = svd(&a, false).unwrap();
        check_factors(&a, &f.u, &f.s, &f.vh, &what);
        let s = f.s.to_vec_f64();
        let k = n.min(m);
        for i in 0..b {
            let alone = svdvals(&a.narrow(0, i, 1).unwrap()).unwrap().to_vec_f64();
            for (j, (&x, &y)) in s[i * k..(i + 1) * k].iter().zip(&alone).enumerate() {
                let tol = 4.0 * k as f64 * f64::EPSILON * alone[0];
                assert!((x - y).abs() <= tol, "{what} matrix {i} value {j}: {x} {y}");
            }
        }
    }
}

#[test]
fn divide_and_conquer_on_hard_matrices_matches_known_singular_values() {
    // beyond the Jacobi kernels a matrix goes to faer's bidiagonal divide and conquer, with
    // leaves of 32 (faer's QR iteration below): known values (graded to 1e-12, rank
    // deficient, heavily repeated, a tight cluster, all equal; the all-ones bidiagonal,
    // whose values are 2 cos(jπ / (2n + 1))), reconstruction, orthogonality and the gauge,
    // with and without vectors, tall, wide and square, at sizes that split once, twice and
    // three times
    for (m, n) in [(33, 33), (64, 64), (100, 70), (70, 100), (200, 200), (260, 260)] {
        let k = m.min(n);
        let graded: Vec<f64> =
            (0..k).map(|i| 10f64.powf(-12.0 * i as f64 / (k - 1) as f64)).collect();
        let deficient: Vec<f64> =
            (0..k).map(|i| if i + 5 < k { (k - i) as f64 } else { 0.0 }).collect();
        let repeated: Vec<f64> = (0..k).map(|i| [3.0, 2.0, 1.0][i * 3 / k]).collect();
        let cluster: Vec<f64> = (0..k).map(|i| 1.0 + 1e-10 * (k - i) as f64).collect();
        let equal = vec![1.0; k];
        let mut cases: Vec<(&str, Tensor, Vec<f64>)> = Vec::new();
        for (name, s, seed) in [
            ("graded", &graded, 21),
            ("deficient", &deficient, 22),
            ("repeated", &repeated, 23),
            ("cluster", &cluster, 24),
            ("equal", &equal, 25),
        ] {
            cases.push((name, with_singular_values(m, n, s, seed), s.clone()));
        }
        let mut bidiag = vec![0.0; m * n];
        for i in 0..k {
            bidiag[i * n + i] = 1.0;
            if i + 1 < n {
                bidiag[i * n + i + 1] = 1.0;
            }
        }
        if m >= n {
            // square or tall (the extra rows are zero): the n x n all-ones bidiagonal
            let pi = std::f64::consts::PI;
            let want: Vec<f64> =
                (1..=k).map(|j| 2.0 * (j as f64 * pi / (2 * k + 1) as f64).cos()).collect();
            cases.push(("ones bidiagonal", Tensor::from_vec(bidiag, vec![m, n]).unwrap(), want));
        }
        for (name, a, want) in cases {
            let what = format!("{m}x{n} {name}");
            let f = svd(&a, false).unwrap();
            check_factors(&a, &f.u, &f.s, &f.vh, &what);
            let smax = want[0];
            let tol = 1e-14 * k as f64 * smax;
            let got = f.s.to_vec_f64();
            let vals = svdvals(&a).unwrap().to_vec_f64();
            for j in 0..k {
                assert!(
                    (got[j] - want[j]).abs() <= tol,
                    "{what} value {j}: {} {}",
                    got[j],
                    want[j]
                );
                assert!((vals[j] - want[j]).abs() <= tol, "{what} svdvals {j}: {}", vals[j]);
            }
            let c = svd(&a, true).unwrap();
            check_factors(&a, &c.u, &c.s, &c.vh, &format!("{what} full"));
        }
    }
}

#[test]
fn jacobi_takes_tiny_column_pairs_through_zeta() {
    // columns e0, ε(0, 2, 1, 0), ε(0, 1, 2, 0), e3: the pair of tiny columns has equal
    // squared norms (β − α = 0) and 2γ = 8ε² below √(min positive) (ε = 1e-82 in f64,
    // 1e-13 in f32), where the squares in the rotation's tangent vanish (a division by
    // zero), and it is taken through ζ = (β − α) / 2γ: singular values 1, 1, 3ε and ε
    // (those of [[2, 1], [1, 2]] times ε), to full relative accuracy, in the lanes of a
    // batch and alone. The pair's test of orthogonality, |γ| <= tol √α √β, must not
    // take √(α β): α β underflows to zero, the pair never converged, and faer's SVD
    // took over (its values are accurate to ε σ_max only: √5 ε twice here). (Values
    // only: with vectors, values this far below the largest go to faer.)
    for (dt, eps, tol) in [(DType::F64, 1e-82, 1e-14), (DType::F32, 1e-13, 1e-6)] {
        let one = [
            1.0,
            0.0,
            0.0,
            0.0,
            0.0,
            2.0 * eps,
            eps,
            0.0,
            0.0,
            eps,
            2.0 * eps,
            0.0,
            0.0,
            0.0,
            0.0,
            1.0,
        ];
        // (row-major: those columns are the rows; the transpose has the same values)
        let v: Vec<f64> = [one, one.map(|x| -x), one].concat();
        let a = Tensor::from_vec(v, (3, 4, 4)).unwrap().to_dtype(dt).unwrap();
        let expect = [1.0, 1.0, 3.0 * eps, eps];
        let batch = svdvals(&a).unwrap().to_vec_f64();
        let alone = svdvals(&a.narrow(0, 0, 1).unwrap()).unwrap().to_vec_f64();
        assert_eq!(batch[..4], alone[..], "{dt:?}");
        assert_eq!(batch[8..], alone[..], "{dt:?}");
        for (x, y) in alone.iter().zip(expect) {
            assert!((x - y).abs() <= tol * y, "{dt:?}: {alone:?}");
        }
    }
}
