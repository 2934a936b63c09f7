//! `linalg.vector_norm`, `linalg.matrix_norm`, `linalg.norm`, `linalg.cond`: values against
//! independent computations (plain loops, faer's SVD), invariants, gradients against
//! finite differences (first and second order) and PyTorch's conventions at the kinks
//! (zero vectors, ties, the 0 "norm"), layouts, dtypes, empty inputs and errors.
//!
//! The spectral orders (matrix_norm `Nuc`/`±2`, cond `None`/`±2`/`Nuc`) go through
//! `svdvals`, which lands on another branch: their tests are ignored until the merge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, close, randn, rg, well_conditioned};
use cotangent::autograd::{self, GradOptions};
use cotangent::linalg::{self, cond, matrix_norm, norm, vector_norm, NormOrd};
use cotangent::{DType, Error, Tensor};

const INF: f64 = f64::INFINITY;

/// The `p`-norm of a list of values, by its definition.
fn naive(xs: &[f64], p: f64) -> f64 {
    if p == INF {
        xs.iter().fold(0.0, |m, x| m.max(x.abs()))
    } else if p == -INF {
        xs.iter().fold(INF, |m, x| m.min(x.abs()))
    } else if p == 0.0 {
        xs.iter().filter(|x| **x != 0.0).count() as f64
    } else {
        xs.iter().map(|x| x.abs().powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

/// Entries away from zero and from each other (no kinks, no ties): `±(0.5 .. 2.5)`.
fn smooth(shape: &[usize], seed: u64) -> Tensor {
    let x = randn(shape, seed);
    let n = x.numel();
    let v: Vec<f64> = x
        .to_vec_f64()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.signum() * (0.5 + 2.0 * (i as f64 + 0.5) / n as f64 + 0.01 * r.abs().min(1.0))
        })
        .collect();
    Tensor::from_vec(v, shape.to_vec()).unwrap()
}

/// The gradient of `sum(f(x))` with respect to `x`.
fn grad_of(x: &Tensor, f: impl Fn(&Tensor) -> cotangent::Result<Tensor>) -> Tensor {
    let x = rg(x.clone());
    let y = f(&x).unwrap().sum().unwrap();
    autograd::grad(&[&y], &[None], &[&x], GradOptions::default()).unwrap().remove(0).unwrap()
}

const ORDS: [f64; 11] = [2.0, 1.0, INF, -INF, 0.0, 3.0, 0.5, -1.0, 1.5, -2.5, 4.0];

#[test]
fn vector_norms_match_their_definition_for_every_order() {
    // ‖x‖_p over all elements, one dim, two dims, with and without keepdim, on a batch
    let x = randn(&[3, 4, 5], 1);
    let v = x.to_vec_f64();
    let at = |i: usize, j: usize, k: usize| v[i * 20 + j * 5 + k];
    for p in ORDS {
        let all = vector_norm(&x, p, None, false).unwrap();
        assert_eq!(all.rank(), 0);
        close(&all.to_vec_f64(), &[naive(&v, p)], 1e-12);
        assert_close(&vector_norm(&x, p, Some(&[]), false).unwrap(), &all, 0.0);
        // dim 1: one norm per (i, k)
        let y = vector_norm(&x, p, Some(&[1]), false).unwrap();
        assert_eq!(y.dims(), &[3, 5]);
        let want: Vec<f64> = (0..3)
            .flat_map(|i| (0..5).map(move |k| (i, k)))
            .map(|(i, k)| naive(&(0..4).map(|j| at(i, j, k)).collect::<Vec<_>>(), p))
            .collect();
        close(&y.to_vec_f64(), &want, 1e-12);
        let yk = vector_norm(&x, p, Some(&[-2]), true).unwrap();
        assert_eq!(yk.dims(), &[3, 1, 5]);
        close(&yk.to_vec_f64(), &want, 1e-12);
        // dims (0, 2): one norm per j
        let y = vector_norm(&x, p, Some(&[2, 0]), false).unwrap();
        let want: Vec<f64> = (0..4)
            .map(|j| {
                naive(
                    &(0..3)
                        .flat_map(|i| (0..5).map(move |k| (i, k)))
                        .map(|(i, k)| at(i, j, k))
                        .collect::<Vec<_>>(),
                    p,
                )
            })
            .collect();
        close(&y.to_vec_f64(), &want, 1e-12);
    }
}

#[test]
fn vector_norm_layouts_agree() {
    // transposed, sliced and expanded inputs give the contiguous input's norms
    let base = randn(&[6, 8], 2);
    let t = base.t().unwrap(); // (8, 6), not contiguous
    let tc = t.contiguous().unwrap();
    let s = base.slice(1, 1, 7, 2).unwrap(); // (6, 3), strided
    let sc = s.contiguous().unwrap();
    let e = randn(&[1, 5], 3).broadcast_to(vec![4, 5]).unwrap();
    let ec = e.contiguous().unwrap();
    for p in ORDS {
        for d in [None, Some(&[0isize][..]), Some(&[1][..]), Some(&[0, 1][..])] {
            for (a, b) in [(&t, &tc), (&s, &sc), (&e, &ec)] {
                assert_close(
                    &vector_norm(a, p, d, true).unwrap(),
                    &vector_norm(b, p, d, true).unwrap(),
                    1e-13,
                );
            }
        }
    }
}

#[test]
fn vector_norm_invariants() {
    // triangle inequality ‖x + y‖ ≤ ‖x‖ + ‖y‖ (p ≥ 1), homogeneity ‖c x‖ = |c| ‖x‖,
    // monotonicity in p (‖x‖_q ≤ ‖x‖_p for q ≥ p > 0), ‖x‖_inf ≤ ‖x‖_p ≤ n^(1/p) ‖x‖_inf
    for n in [1, 2, 3, 5, 17, 64, 1000] {
        let x = randn(&[n], 10 + n as u64);
        let y = randn(&[n], 20 + n as u64);
        let nv =
            |t: &Tensor, p: f64| vector_norm(t, p, None, false).unwrap().item::<f64>().unwrap();
        for p in [1.0, 1.5, 2.0, 3.0, INF] {
            assert!(nv(&x.add(&y).unwrap(), p) <= nv(&x, p) + nv(&y, p) + 1e-12);
        }
        for p in ORDS {
            let c: f64 = -2.5;
            let want = if p == 0.0 { nv(&x, p) } else { c.abs() * nv(&x, p) };
            close(&[nv(&x.mul_scalar(c).unwrap(), p)], &[want], 1e-13);
        }
        let ninf = nv(&x, INF);
        for (p, q) in [(1.0, 1.5), (1.5, 2.0), (2.0, 3.0), (0.5, 1.0), (3.0, 4.0)] {
            assert!(nv(&x, q) <= nv(&x, p) * (1.0 + 1e-12));
            assert!(ninf <= nv(&x, p) * (1.0 + 1e-12));
            assert!(nv(&x, p) <= (n as f64).powf(1.0 / p) * ninf * (1.0 + 1e-12));
        }
    }
}

#[test]
fn vector_norm_is_accurate_at_the_extremes_of_the_exponent_range() {
    // plain accumulation would give inf and 0 here (PyTorch does); the kernel rescales
    let big = Tensor::from_vec(vec![1e200f64, -1e200, 1e200, 1e200], 4).unwrap();
    close(&vector_norm(&big, 2.0, None, false).unwrap().to_vec_f64(), &[2e200], 1e-15);
    close(
        &vector_norm(&big, 3.0, None, false).unwrap().to_vec_f64(),
        &[4f64.cbrt() * 1e200],
        1e-14,
    );
    let tiny = Tensor::from_vec(vec![3e-200f64, 4e-200], 2).unwrap();
    let y = vector_norm(&tiny, 2.0, None, false).unwrap().item::<f64>().unwrap();
    assert!((y / 5e-200 - 1.0).abs() < 1e-15, "{y}");
    let f = Tensor::from_vec(vec![3e30f32, 4e30], 2).unwrap();
    let y = vector_norm(&f, 2.0, None, false).unwrap().item::<f32>().unwrap();
    assert!((y / 5e30 - 1.0).abs() < 1e-6, "{y}");
    // infinities and NaN propagate
    let x = Tensor::from_vec(vec![1.0f64, INF], 2).unwrap();
    assert_eq!(vector_norm(&x, 2.0, None, false).unwrap().item::<f64>().unwrap(), INF);
    assert_eq!(vector_norm(&x, -1.0, None, false).unwrap().item::<f64>().unwrap(), 1.0);
    let x = Tensor::from_vec(vec![1.0f64, f64::NAN, 2.0], 3).unwrap();
    for p in [2.0, 1.0, INF, -INF, 3.0, -1.0] {
        assert!(vector_norm(&x, p, None, false).unwrap().item::<f64>().unwrap().is_nan(), "{p}");
    }
    assert_eq!(vector_norm(&x, 0.0, None, false).unwrap().item::<f64>().unwrap(), 3.0);
}

#[test]
fn vector_norm_gradients_first_and_second_order() {
    let x = rg(smooth(&[3, 4], 4));
    for p in ORDS {
        if p == 0.0 {
            continue;
        }
        check2(&format!("vector_norm p={p}"), std::slice::from_ref(&x), move |t| {
            Ok(vec![vector_norm(&t[0], p, None, false)?])
        });
        check2(&format!("vector_norm p={p} dim"), std::slice::from_ref(&x), move |t| {
            Ok(vec![vector_norm(&t[0], p, Some(&[-1]), false)?])
        });
        check2(&format!("vector_norm p={p} dim0 keepdim"), std::slice::from_ref(&x), move |t| {
            Ok(vec![vector_norm(&t[0], p, Some(&[0]), true)?])
        });
    }
    let b = rg(smooth(&[2, 3, 2], 5));
    for p in [2.0, 3.0, -1.0, INF] {
        check2(&format!("vector_norm p={p} batched dims"), std::slice::from_ref(&b), move |t| {
            Ok(vec![vector_norm(&t[0], p, Some(&[0, 2]), false)?])
        });
    }
    // a 0-d input is a vector of one element: ‖x‖ = |x|
    let s = rg(Tensor::from_vec(vec![-1.5f64], ()).unwrap());
    check2("vector_norm 0-d", &[s], |t| Ok(vec![vector_norm(&t[0], 3.0, None, false)?]));
}

#[test]
fn vector_norm_gradients_at_the_kinks_follow_pytorch() {
    // the 2-norm (and p > 1) at x = 0: gradient 0, not NaN (PyTorch's subgradient)
    let z = Tensor::zeros(3, DType::F64).unwrap();
    for p in [2.0, 3.0, 1.5] {
        let g = grad_of(&z, |t| vector_norm(t, p, None, false));
        assert_eq!(g.to_vec_f64(), vec![0.0; 3], "p={p}");
    }
    // the 1-norm: sgn(x), 0 at 0
    let x = Tensor::from_vec(vec![0.0f64, 1.0, -2.0], 3).unwrap();
    assert_eq!(
        grad_of(&x, |t| vector_norm(t, 1.0, None, false)).to_vec_f64(),
        vec![0.0, 1.0, -1.0]
    );
    // p < 1: 0 on the zero entries, the rest unchanged; p < 0 with a zero entry: all 0
    let x = Tensor::from_vec(vec![0.0f64, 1.0], 2).unwrap();
    assert_eq!(grad_of(&x, |t| vector_norm(t, 0.5, None, false)).to_vec_f64(), vec![0.0, 1.0]);
    assert_eq!(grad_of(&x, |t| vector_norm(t, -1.0, None, false)).to_vec_f64(), vec![0.0, 0.0]);
    // ties of inf / -inf share the gradient evenly, with the sign of each entry
    let x = Tensor::from_vec(vec![3.0f64, -3.0, 1.0], 3).unwrap();
    assert_eq!(
        grad_of(&x, |t| vector_norm(t, INF, None, false)).to_vec_f64(),
        vec![0.5, -0.5, 0.0]
    );
    let x = Tensor::from_vec(vec![1.0f64, -1.0, 3.0, 1.0], (2, 2)).unwrap();
    assert_eq!(
        grad_of(&x, |t| vector_norm(t, -INF, Some(&[1]), false)).to_vec_f64(),
        vec![0.5, -0.5, 0.0, 1.0]
    );
    // the 0 "norm" counts: zero gradient
    let x = Tensor::from_vec(vec![1.0f64, 0.0, 3.0], 3).unwrap();
    assert_eq!(grad_of(&x, |t| vector_norm(t, 0.0, None, false)).to_vec_f64(), vec![0.0; 3]);
    // the second derivative of the 2-norm at 0 is finite too (masked, not 0 · inf)
    let z = rg(Tensor::zeros(2, DType::F64).unwrap());
    let y = vector_norm(&z, 2.0, None, false).unwrap();
    let opts = GradOptions { create_graph: true, ..GradOptions::default() };
    let g = autograd::grad(&[&y], &[None], &[&z], opts).unwrap().remove(0).unwrap();
    let h = autograd::grad(&[&g.sum().unwrap()], &[None], &[&z], GradOptions::default())
        .unwrap()
        .remove(0)
        .unwrap();
    assert!(h.to_vec_f64().iter().all(|v| v.is_finite()));
}

#[test]
fn vector_norm_empty_inputs_and_errors() {
    let e = Tensor::zeros((0, 3), DType::F64).unwrap();
    for p in [2.0, 1.0, 0.0, 3.0] {
        assert_eq!(vector_norm(&e, p, None, false).unwrap().item::<f64>().unwrap(), 0.0);
        assert_eq!(vector_norm(&e, p, Some(&[0]), false).unwrap().to_vec_f64(), vec![0.0; 3]);
    }
    // inf and negative orders have no identity: refused over an empty tensor or dim, as
    // PyTorch, but fine along a non-empty dim of an empty tensor
    for p in [INF, -INF, -1.0] {
        for d in [None, Some(&[][..]), Some(&[0][..]), Some(&[0, 1][..])] {
            assert!(
                matches!(
                    vector_norm(&e, p, d, false),
                    Err(Error::InvalidArgument { arg: "ord", .. })
                ),
                "p={p} dim={d:?}"
            );
        }
        assert_eq!(vector_norm(&e, p, Some(&[1]), false).unwrap().dims(), &[0]);
    }
    let x = randn(&[3, 4], 6);
    assert!(matches!(vector_norm(&x, 2.0, Some(&[2]), false), Err(Error::DimOutOfRange { .. })));
    assert!(matches!(
        vector_norm(&x, 2.0, Some(&[0, -2]), false),
        Err(Error::InvalidArgument { arg: "dim", .. })
    ));
    let i = Tensor::from_vec(vec![1i64, 2], 2).unwrap();
    assert!(matches!(vector_norm(&i, 2.0, None, false), Err(Error::UnsupportedDType { .. })));
    // the matrix orders are not vector orders
    for ord in [NormOrd::Fro, NormOrd::Nuc] {
        assert!(matches!(
            vector_norm(&x, ord, None, false),
            Err(Error::InvalidArgument { op: "linalg.vector_norm", arg: "ord", .. })
        ));
    }
}

#[test]
fn norm_orders_as_an_enum() {
    // NormOrd's constants are the numeric orders; vector_norm takes either spelling
    let x = Tensor::from_vec(vec![3.0f64, -4.0, 1.0, 0.5], (2, 2)).unwrap();
    for (ord, p) in [
        (NormOrd::L1, 1.0),
        (NormOrd::L2, 2.0),
        (NormOrd::INF, INF),
        (NormOrd::NEG_INF, -INF),
        (NormOrd::P(3.0), 3.0),
    ] {
        let by_enum = vector_norm(&x, ord, Some(&[1]), false).unwrap().to_vec_f64();
        let by_f64 = vector_norm(&x, p, Some(&[1]), false).unwrap().to_vec_f64();
        assert_eq!(by_enum, by_f64, "{ord:?}");
        let want: Vec<f64> = [[3.0, -4.0], [1.0, 0.5]].iter().map(|r| naive(r, p)).collect();
        close(&by_enum, &want, 1e-15);
    }
    // and matrix_norm's numeric orders
    let a = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, 4.0], (2, 2)).unwrap();
    let by_const = matrix_norm(&a, NormOrd::INF, [-2, -1], false).unwrap();
    assert_eq!(by_const.item::<f64>().unwrap(), 7.0);
}

#[test]
fn vector_norm_in_f32_and_16_bit_types() {
    let x = randn(&[4, 33], 7);
    for p in ORDS {
        let want = vector_norm(&x, p, Some(&[1]), false).unwrap();
        let f = vector_norm(&x.to_dtype(DType::F32).unwrap(), p, Some(&[1]), false).unwrap();
        assert_eq!(f.dtype(), DType::F32);
        close(&f.to_vec_f64(), &want.to_vec_f64(), 1e-5);
        for dt in [DType::Bf16, DType::F16] {
            let h = vector_norm(&x.to_dtype(dt).unwrap(), p, Some(&[1]), false).unwrap();
            assert_eq!(h.dtype(), dt);
            close(&h.to_vec_f64(), &want.to_vec_f64(), 2e-2);
        }
    }
    // gradients flow back in the input dtype
    let g = grad_of(&x.to_dtype(DType::Bf16).unwrap(), |t| vector_norm(t, 2.0, None, false));
    assert_eq!(g.dtype(), DType::Bf16);
}

#[test]
fn large_reductions_run_in_parallel_and_agree() {
    // one long run (the all-elements norm) and many short ones, above the parallel cutoff
    let x = randn(&[300, 400], 8);
    let v = x.to_vec_f64();
    for p in [2.0, 1.0, INF, 3.0, 0.0] {
        close(&vector_norm(&x, p, None, false).unwrap().to_vec_f64(), &[naive(&v, p)], 1e-12);
        let rows = vector_norm(&x, p, Some(&[1]), false).unwrap().to_vec_f64();
        let cols = vector_norm(&x, p, Some(&[0]), false).unwrap().to_vec_f64();
        for i in [0, 123, 299] {
            close(&[rows[i]], &[naive(&v[i * 400..(i + 1) * 400], p)], 1e-12);
        }
        for j in [0, 250, 399] {
            let c: Vec<f64> = (0..300).map(|i| v[i * 400 + j]).collect();
            close(&[cols[j]], &[naive(&c, p)], 1e-12);
        }
    }
}

/// The max or min over columns (`cols`) or rows of the sums of `|a_ij|`, per matrix of a
/// `(b, m, n)` buffer.
fn sums_extreme(v: &[f64], b: usize, m: usize, n: usize, cols: bool, max: bool) -> Vec<f64> {
    (0..b)
        .map(|k| {
            let a = |i: usize, j: usize| v[k * m * n + i * n + j].abs();
            let sums: Vec<f64> = if cols {
                (0..n).map(|j| (0..m).map(|i| a(i, j)).sum()).collect()
            } else {
                (0..m).map(|i| (0..n).map(|j| a(i, j)).sum()).collect()
            };
            sums.into_iter().fold(if max { 0.0 } else { INF }, |x, s| {
                if max {
                    x.max(s)
                } else {
                    x.min(s)
                }
            })
        })
        .collect()
}

#[test]
fn matrix_norms_match_their_definition() {
    // 1 = max column sum, -1 = min column sum, inf = max row sum, -inf = min row sum,
    // fro = sqrt(Σ a²), for square, tall, wide and batched matrices
    for (b, m, n) in [(1, 1, 1), (1, 3, 3), (2, 5, 3), (3, 2, 7), (2, 17, 17)] {
        let a = randn(&[b, m, n], (m * 10 + n) as u64);
        let v = a.to_vec_f64();
        for (ord, cols, max) in
            [(1.0, true, true), (-1.0, true, false), (INF, false, true), (-INF, false, false)]
        {
            let y = matrix_norm(&a, NormOrd::P(ord), [-2, -1], false).unwrap();
            assert_eq!(y.dims(), &[b]);
            close(&y.to_vec_f64(), &sums_extreme(&v, b, m, n, cols, max), 1e-13);
            // other dims: the transposed problem
            let yt = matrix_norm(&a.mT().unwrap(), NormOrd::P(ord), [-1, -2], true).unwrap();
            assert_eq!(yt.dims(), &[b, 1, 1]);
            close(&yt.to_vec_f64(), &y.to_vec_f64(), 1e-13);
            let ym = matrix_norm(&a.permute(&[1, 0, 2]).unwrap(), NormOrd::P(ord), [0, 2], false)
                .unwrap();
            assert_eq!(ym.dims(), &[b]);
            close(&ym.to_vec_f64(), &y.to_vec_f64(), 1e-13);
        }
        let fro: Vec<f64> = (0..b)
            .map(|k| v[k * m * n..(k + 1) * m * n].iter().map(|x| x * x).sum::<f64>().sqrt())
            .collect();
        close(&matrix_norm(&a, NormOrd::Fro, [-2, -1], false).unwrap().to_vec_f64(), &fro, 1e-13);
    }
    // keepdim over non-adjacent dims keeps both with size 1
    let a = randn(&[2, 3, 4], 9);
    assert_eq!(matrix_norm(&a, NormOrd::P(1.0), [0, 2], true).unwrap().dims(), &[1, 3, 1]);
    assert_eq!(matrix_norm(&a, NormOrd::P(INF), [2, 0], false).unwrap().dims(), &[3]);
    assert_eq!(matrix_norm(&a, NormOrd::Fro, [0, 2], true).unwrap().dims(), &[1, 3, 1]);
}

#[test]
fn matrix_norm_gradients_first_and_second_order() {
    let a = rg(smooth(&[2, 3, 4], 11));
    for ord in [NormOrd::Fro, NormOrd::P(1.0), NormOrd::P(-1.0), NormOrd::P(INF), NormOrd::P(-INF)]
    {
        check2(&format!("matrix_norm {ord:?}"), std::slice::from_ref(&a), move |t| {
            Ok(vec![matrix_norm(&t[0], ord, [-2, -1], false)?])
        });
        check2(
            &format!("matrix_norm {ord:?} dims (0, 2) keepdim"),
            std::slice::from_ref(&a),
            move |t| Ok(vec![matrix_norm(&t[0], ord, [2, 0], true)?]),
        );
    }
    // tied column sums share the gradient evenly (amax's convention, as PyTorch)
    let x = Tensor::from_vec(vec![1.0f64, 2.0, -1.0, 0.0], (2, 2)).unwrap();
    let g = grad_of(&x, |t| matrix_norm(t, NormOrd::P(1.0), [-2, -1], false));
    assert_eq!(g.to_vec_f64(), vec![0.5, 0.5, -0.5, 0.0]);
}

#[test]
fn matrix_norm_empty_inputs_and_errors() {
    // as PyTorch: 0 for the max orders and fro of empty matrices, an error for the min
    // orders over no rows or columns, empty results for an empty batch
    let z = |s: &[usize]| Tensor::zeros(s.to_vec(), DType::F64).unwrap();
    for ord in [NormOrd::Fro, NormOrd::P(1.0), NormOrd::P(INF)] {
        for s in [[0, 3], [3, 0]] {
            assert_eq!(
                matrix_norm(&z(&s), ord, [-2, -1], false).unwrap().item::<f64>().unwrap(),
                0.0
            );
        }
    }
    assert_eq!(
        matrix_norm(&z(&[0, 3]), NormOrd::P(-1.0), [-2, -1], false).unwrap().item::<f64>().unwrap(),
        0.0
    );
    assert_eq!(
        matrix_norm(&z(&[3, 0]), NormOrd::P(-INF), [-2, -1], false).unwrap().item::<f64>().unwrap(),
        0.0
    );
    for (s, ord) in [([3, 0], -1.0), ([0, 3], -INF)] {
        assert!(matches!(
            matrix_norm(&z(&s), NormOrd::P(ord), [-2, -1], false),
            Err(Error::InvalidArgument { arg: "ord", .. })
        ));
    }
    for ord in [NormOrd::Fro, NormOrd::P(1.0), NormOrd::P(-1.0), NormOrd::P(INF), NormOrd::P(-INF)]
    {
        assert_eq!(matrix_norm(&z(&[0, 2, 2]), ord, [-2, -1], false).unwrap().dims(), &[0]);
    }
    let a = randn(&[3, 3], 12);
    for p in [3.0, 0.0, 0.5, f64::NAN] {
        assert!(matches!(
            matrix_norm(&a, NormOrd::P(p), [-2, -1], false),
            Err(Error::InvalidArgument { arg: "ord", .. })
        ));
    }
    assert!(matches!(
        matrix_norm(&a, NormOrd::Fro, [0, -2], false),
        Err(Error::InvalidArgument { arg: "dim", .. })
    ));
    assert!(matches!(
        matrix_norm(&a, NormOrd::Fro, [0, 2], false),
        Err(Error::DimOutOfRange { .. })
    ));
    assert!(matches!(
        matrix_norm(&randn(&[3], 1), NormOrd::Fro, [-2, -1], false),
        Err(Error::BadShape { .. })
    ));
    let i = Tensor::from_vec(vec![1i64, 2, 3, 4], (2, 2)).unwrap();
    assert!(matches!(
        matrix_norm(&i, NormOrd::Fro, [-2, -1], false),
        Err(Error::UnsupportedDType { .. })
    ));
}

#[test]
fn matrix_norm_in_f32_and_16_bit_types() {
    let a = randn(&[2, 5, 4], 13);
    for ord in [NormOrd::Fro, NormOrd::P(1.0), NormOrd::P(-INF)] {
        let want = matrix_norm(&a, ord, [-2, -1], false).unwrap().to_vec_f64();
        for (dt, tol) in [(DType::F32, 1e-6), (DType::Bf16, 2e-2), (DType::F16, 2e-3)] {
            let y = matrix_norm(&a.to_dtype(dt).unwrap(), ord, [-2, -1], false).unwrap();
            assert_eq!(y.dtype(), dt);
            close(&y.to_vec_f64(), &want, tol);
        }
    }
}

#[test]
fn norm_dispatches_as_pytorch() {
    let v = randn(&[5], 14);
    let m = randn(&[3, 4], 15);
    let b = randn(&[2, 3, 4], 16);
    let same = |a: &Tensor, b: &Tensor| assert_close(a, b, 0.0);
    // ord None: the 2-norm of the flattened input, or over dim
    same(&norm(&b, None, None, false).unwrap(), &vector_norm(&b, 2.0, None, false).unwrap());
    same(
        &norm(&m, None, Some(&[1]), true).unwrap(),
        &vector_norm(&m, 2.0, Some(&[1]), true).unwrap(),
    );
    same(
        &norm(&b, None, Some(&[0, 2]), false).unwrap(),
        &vector_norm(&b, 2.0, Some(&[0, 2]), false).unwrap(),
    );
    // numeric ord: vector for 1-D or one dim, matrix for 2-D or two dims
    for p in [1.0, INF, -1.0, -INF] {
        same(
            &norm(&v, Some(NormOrd::P(p)), None, false).unwrap(),
            &vector_norm(&v, p, None, false).unwrap(),
        );
        same(
            &norm(&m, Some(NormOrd::P(p)), None, false).unwrap(),
            &matrix_norm(&m, NormOrd::P(p), [0, 1], false).unwrap(),
        );
        same(
            &norm(&b, Some(NormOrd::P(p)), Some(&[2]), false).unwrap(),
            &vector_norm(&b, p, Some(&[2]), false).unwrap(),
        );
        same(
            &norm(&b, Some(NormOrd::P(p)), Some(&[0, 2]), true).unwrap(),
            &matrix_norm(&b, NormOrd::P(p), [0, 2], true).unwrap(),
        );
    }
    same(
        &norm(&m, Some(NormOrd::P(3.0)), Some(&[0]), false).unwrap(),
        &vector_norm(&m, 3.0, Some(&[0]), false).unwrap(),
    );
    same(
        &norm(&m, Some(NormOrd::Fro), None, false).unwrap(),
        &matrix_norm(&m, NormOrd::Fro, [0, 1], false).unwrap(),
    );
    // errors
    assert!(matches!(norm(&b, Some(NormOrd::P(1.0)), None, false), Err(Error::BadShape { .. })));
    assert!(matches!(
        norm(&b, None, Some(&[0, 1, 2]), false),
        Err(Error::InvalidArgument { arg: "dim", .. })
    ));
    assert!(matches!(
        norm(&b, None, Some(&[]), false),
        Err(Error::InvalidArgument { arg: "dim", .. })
    ));
    assert!(matches!(
        norm(&m, Some(NormOrd::P(3.0)), None, false),
        Err(Error::InvalidArgument { arg: "ord", .. })
    ));
    assert!(matches!(
        norm(&m, Some(NormOrd::P(0.0)), None, false),
        Err(Error::InvalidArgument { arg: "ord", .. })
    ));
    assert!(matches!(norm(&v, Some(NormOrd::Fro), None, false), Err(Error::BadShape { .. })));
    assert!(matches!(
        norm(&m, Some(NormOrd::Fro), Some(&[1]), false),
        Err(Error::InvalidArgument { arg: "dim", .. })
    ));
    // a 0-d input: fine without ord, refused with one
    let s = Tensor::from_vec(vec![-3.0f64], ()).unwrap();
    assert_eq!(norm(&s, None, None, false).unwrap().item::<f64>().unwrap(), 3.0);
    assert!(matches!(norm(&s, Some(NormOrd::P(1.0)), None, false), Err(Error::BadShape { .. })));
}

/// `‖A‖_p ‖A⁻¹‖_p` from an inverse computed by `linalg::inv`, with the norm's definition.
fn cond_by_definition(a: &Tensor, ord: NormOrd) -> Vec<f64> {
    let (b, n) = (a.dims()[0], a.dims()[1]);
    let ai = linalg::inv(a).unwrap();
    let norm_of = |t: &Tensor| -> Vec<f64> {
        let v = t.to_vec_f64();
        match ord {
            NormOrd::Fro => (0..b)
                .map(|k| v[k * n * n..(k + 1) * n * n].iter().map(|x| x * x).sum::<f64>().sqrt())
                .collect(),
            NormOrd::P(p) => sums_extreme(&v, b, n, n, p.abs() == 1.0, p > 0.0),
            NormOrd::Nuc => unreachable!(),
        }
    };
    norm_of(a).iter().zip(norm_of(&ai)).map(|(x, y)| x * y).collect()
}

#[test]
fn cond_through_the_inverse_matches_its_definition_and_differentiates() {
    let a = well_conditioned(&[3, 4, 4], 17);
    for ord in [NormOrd::Fro, NormOrd::P(1.0), NormOrd::P(-1.0), NormOrd::P(INF), NormOrd::P(-INF)]
    {
        let c = cond(&a, Some(ord)).unwrap();
        assert_eq!(c.dims(), &[3]);
        close(&c.to_vec_f64(), &cond_by_definition(&a, ord), 1e-12);
        // PyTorch 2.15 cannot differentiate these (it masks the inverse in place); here
        // they have first and second derivatives
        let x = rg(smooth(&[2, 3, 3], 18)
            .add(&Tensor::eye(3, DType::F64).unwrap().mul_scalar(4.0).unwrap())
            .unwrap());
        check2(&format!("cond {ord:?}"), &[x], move |t| Ok(vec![cond(&t[0], Some(ord))?]));
    }
}

#[test]
fn cond_of_singular_and_empty_matrices_and_errors() {
    // singular (an exactly zero pivot): inf, as PyTorch; zero matrix: inf too
    let s = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0], (2, 2, 2)).unwrap();
    for ord in [NormOrd::Fro, NormOrd::P(1.0), NormOrd::P(-1.0), NormOrd::P(INF), NormOrd::P(-INF)]
    {
        assert_eq!(cond(&s, Some(ord)).unwrap().to_vec_f64(), vec![INF, INF], "{ord:?}");
    }
    // empty matrices: 0 per matrix of the batch; a rectangular empty one is refused by
    // fro and nuc only (they check squareness first, as PyTorch)
    let e = Tensor::zeros((2, 0, 0), DType::F64).unwrap();
    let r = Tensor::zeros((2, 3, 0), DType::F64).unwrap();
    for ord in [NormOrd::P(1.0), NormOrd::P(-INF), NormOrd::P(2.0)] {
        assert_eq!(cond(&e, Some(ord)).unwrap().to_vec_f64(), vec![0.0, 0.0]);
        assert_eq!(cond(&r, Some(ord)).unwrap().to_vec_f64(), vec![0.0, 0.0]);
    }
    assert_eq!(cond(&e, None).unwrap().to_vec_f64(), vec![0.0, 0.0]);
    assert_eq!(cond(&e, Some(NormOrd::Fro)).unwrap().to_vec_f64(), vec![0.0, 0.0]);
    for ord in [NormOrd::Fro, NormOrd::Nuc] {
        assert!(
            matches!(cond(&r, Some(ord)), Err(Error::BadShape { expected, .. }) if expected.contains("square"))
        );
    }
    let w = randn(&[2, 3], 19);
    for ord in [NormOrd::P(1.0), NormOrd::P(-INF), NormOrd::Fro] {
        assert!(
            matches!(cond(&w, Some(ord)), Err(Error::BadShape { expected, .. }) if expected.contains("square"))
        );
    }
    assert!(matches!(
        cond(&randn(&[3, 3], 1), Some(NormOrd::P(3.0))),
        Err(Error::InvalidArgument { arg: "p", .. })
    ));
    assert!(matches!(cond(&randn(&[3], 1), None), Err(Error::BadShape { .. })));
    let i = Tensor::from_vec(vec![1i64, 0, 0, 1], (2, 2)).unwrap();
    assert!(matches!(cond(&i, Some(NormOrd::P(1.0))), Err(Error::UnsupportedDType { .. })));
    // f32 and bf16 (computed in f32)
    let a = well_conditioned(&[4, 4], 20);
    let want = cond(&a, Some(NormOrd::P(1.0))).unwrap().to_vec_f64();
    let y = cond(&a.to_dtype(DType::F32).unwrap(), Some(NormOrd::P(1.0))).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    close(&y.to_vec_f64(), &want, 1e-5);
    let y = cond(&a.to_dtype(DType::Bf16).unwrap(), Some(NormOrd::P(1.0))).unwrap();
    assert_eq!(y.dtype(), DType::Bf16);
    close(&y.to_vec_f64(), &want, 5e-2);
}

// ---------------------------------------------------------------------------------------
// the spectral orders, through svdvals (ignored until the svdvals branch is merged)

/// The singular values of each matrix of a `(b, m, n)` tensor, by faer's SVD.
fn faer_sv(a: &Tensor) -> Vec<Vec<f64>> {
    let (b, m, n) = (a.dims()[0], a.dims()[1], a.dims()[2]);
    let v = a.contiguous().unwrap().to_vec_f64();
    (0..b)
        .map(|k| {
            let mat = faer::Mat::<f64>::from_fn(m, n, |i, j| v[k * m * n + i * n + j]);
            mat.singular_values().unwrap()
        })
        .collect()
}

#[test]
fn spectral_matrix_norms_match_faer() {
    for (b, m, n) in [(1, 1, 1), (2, 3, 3), (2, 5, 3), (3, 2, 7), (1, 17, 17)] {
        let a = randn(&[b, m, n], (100 + m * n) as u64);
        let sv = faer_sv(&a);
        let pick = |f: fn(&[f64]) -> f64| sv.iter().map(|s| f(s)).collect::<Vec<f64>>();
        let nuc = pick(|s| s.iter().sum());
        let two = pick(|s| s[0]);
        let mtwo = pick(|s| s[s.len() - 1]);
        close(&matrix_norm(&a, NormOrd::Nuc, [-2, -1], false).unwrap().to_vec_f64(), &nuc, 1e-12);
        close(
            &matrix_norm(&a, NormOrd::P(2.0), [-2, -1], false).unwrap().to_vec_f64(),
            &two,
            1e-12,
        );
        close(
            &matrix_norm(&a, NormOrd::P(-2.0), [-2, -1], false).unwrap().to_vec_f64(),
            &mtwo,
            1e-12,
        );
        let t =
            matrix_norm(&a.permute(&[2, 0, 1]).unwrap(), NormOrd::P(2.0), [2, 0], true).unwrap();
        assert_eq!(t.dims(), &[1, b, 1]);
        close(&t.to_vec_f64(), &two, 1e-12);
        // cond: σ_max/σ_min, σ_min/σ_max, Σσ Σ1/σ (square)
        let c: Vec<f64> = two.iter().zip(&mtwo).map(|(x, y)| x / y).collect();
        close(&cond(&a, None).unwrap().to_vec_f64(), &c, 1e-10);
        close(&cond(&a, Some(NormOrd::P(2.0))).unwrap().to_vec_f64(), &c, 1e-10);
        let c: Vec<f64> = two.iter().zip(&mtwo).map(|(x, y)| y / x).collect();
        close(&cond(&a, Some(NormOrd::P(-2.0))).unwrap().to_vec_f64(), &c, 1e-10);
        if m == n {
            let c: Vec<f64> = sv
                .iter()
                .map(|s| s.iter().sum::<f64>() * s.iter().map(|x| 1.0 / x).sum::<f64>())
                .collect();
            close(&cond(&a, Some(NormOrd::Nuc)).unwrap().to_vec_f64(), &c, 1e-10);
        }
    }
    // ‖A‖_2 ≤ ‖A‖_F ≤ ‖A‖_nuc, and ‖A‖_2² ≤ ‖A‖_1 ‖A‖_inf
    let a = randn(&[4, 6], 21);
    let n = |o: NormOrd| matrix_norm(&a, o, [-2, -1], false).unwrap().item::<f64>().unwrap();
    assert!(n(NormOrd::P(2.0)) <= n(NormOrd::Fro) && n(NormOrd::Fro) <= n(NormOrd::Nuc));
    assert!(n(NormOrd::P(2.0)).powi(2) <= n(NormOrd::P(1.0)) * n(NormOrd::P(INF)) * (1.0 + 1e-12));
}

#[test]
fn spectral_gradients_first_and_second_order() {
    let a = rg(randn(&[2, 4, 3], 22));
    for ord in [NormOrd::Nuc, NormOrd::P(2.0), NormOrd::P(-2.0)] {
        check2(&format!("matrix_norm {ord:?}"), std::slice::from_ref(&a), move |t| {
            Ok(vec![matrix_norm(&t[0], ord, [-2, -1], false)?])
        });
    }
    let s = rg(well_conditioned(&[2, 3, 3], 23));
    for ord in [None, Some(NormOrd::P(2.0)), Some(NormOrd::P(-2.0)), Some(NormOrd::Nuc)] {
        check2(&format!("cond {ord:?}"), std::slice::from_ref(&s), move |t| {
            Ok(vec![cond(&t[0], ord)?])
        });
    }
    // repeated singular values (the identity): finite gradients, the nuclear norm's is I
    let i = Tensor::eye(3, DType::F64).unwrap();
    let g = grad_of(&i, |t| matrix_norm(t, NormOrd::Nuc, [-2, -1], false));
    assert_close(&g, &i, 1e-12);
}

#[test]
fn spectral_edge_cases() {
    let z = |s: &[usize]| Tensor::zeros(s.to_vec(), DType::F64).unwrap();
    // empty matrices: nuc and 2 give 0, -2 is refused (no singular value), as PyTorch
    for s in [[0, 3], [3, 0]] {
        assert_eq!(
            matrix_norm(&z(&s), NormOrd::Nuc, [-2, -1], false).unwrap().item::<f64>().unwrap(),
            0.0
        );
        assert_eq!(
            matrix_norm(&z(&s), NormOrd::P(2.0), [-2, -1], false).unwrap().item::<f64>().unwrap(),
            0.0
        );
        assert!(matches!(
            matrix_norm(&z(&s), NormOrd::P(-2.0), [-2, -1], false),
            Err(Error::InvalidArgument { .. })
        ));
    }
    // a singular matrix: σ_min = 0 gives cond = inf (or huge); the zero matrix: NaN (0/0)
    let s = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], (2, 2)).unwrap();
    assert!(cond(&s, None).unwrap().item::<f64>().unwrap() > 1e15);
    assert!(cond(&z(&[2, 2]), None).unwrap().item::<f64>().unwrap().is_nan());
}

#[test]
fn matrix_norms_over_the_size_sweep() {
    // sizes {0, 1, 2, 3, 5, 17, 64} x {square, tall, wide} x a batch of 2, against the
    // definitions; the minimum orders of matrices without rows or columns are refused
    for k in [0usize, 1, 2, 3, 5, 17, 64] {
        for (m, n) in [(k, k), (k + 2, k), (k, k + 3)] {
            let a = randn(&[2, m, n], (1000 + 7 * m + n) as u64);
            let v = a.to_vec_f64();
            for (ord, cols, max) in
                [(1.0, true, true), (-1.0, true, false), (INF, false, true), (-INF, false, false)]
            {
                let got = matrix_norm(&a, NormOrd::P(ord), [-2, -1], false);
                let empty_min = !max && ((cols && n == 0) || (!cols && m == 0));
                if empty_min {
                    assert!(matches!(got, Err(Error::InvalidArgument { .. })), "{m}x{n} {ord}");
                    continue;
                }
                let want = if (cols && n == 0) || (!cols && m == 0) {
                    vec![0.0; 2]
                } else {
                    sums_extreme(&v, 2, m, n, cols, max)
                };
                close(&got.unwrap().to_vec_f64(), &want, 1e-13);
            }
            let fro = vector_norm(&a, 2.0, Some(&[-1, -2]), false).unwrap();
            assert_close(&matrix_norm(&a, NormOrd::Fro, [-2, -1], false).unwrap(), &fro, 0.0);
        }
    }
}

#[test]
fn norms_and_their_gradients_do_not_depend_on_the_thread_count() {
    // one long run (split into chunks across threads), many runs over trailing dims
    // (split per thread from 2^17 elements), the elementwise backward: the same bits
    // on 1, 2 and 3 threads, and with the calling thread outside or inside the pool
    let run = || -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        let cases: [(Vec<usize>, Option<Vec<isize>>); 3] = [
            (vec![300_000], Some(vec![-1])),
            (vec![600, 500], None),
            (vec![1024, 16, 16], Some(vec![-2, -1])),
        ];
        for (shape, dims) in cases {
            for p in [2.0, 1.0, 3.0, f64::INFINITY] {
                let x = randn(&shape, 11);
                let y = vector_norm(&x, p, dims.as_deref(), false).unwrap();
                let g = grad_of(&x, |x| vector_norm(x, p, dims.as_deref(), false));
                out.push(y.to_vec::<f64>().unwrap().iter().map(|v| v.to_bits()).collect());
                out.push(g.to_vec::<f64>().unwrap().iter().map(|v| v.to_bits()).collect());
            }
        }
        out
    };
    let outside = run();
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let got = pool.install(run);
        for (i, (a, b)) in got.iter().zip(&outside).enumerate() {
            let first = a.iter().zip(b).position(|(x, y)| x != y);
            assert!(first.is_none(), "{threads} threads: result {i} differs at {first:?}");
        }
    }
}
