//! Products and structured ops of the linear-algebra module: values against independent
//! element-by-element computations, first and second derivatives against finite
//! differences, and errors that name the op.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cloned_ref_to_slice_refs,
    missing_docs
)]

use cotangent::autograd::{gradcheck, gradgradcheck, GradcheckOptions};
use cotangent::{DType, Error, Generator, Result, Tensor};

fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn(shape.to_vec(), DType::F64, &mut Generator::new(seed)).unwrap()
}

fn rg(t: Tensor) -> Tensor {
    t.with_requires_grad(true).unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "lengths");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
    }
}

/// gradcheck and gradgradcheck of `f` at `inputs`.
fn check2(name: &str, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy) {
    let o = GradcheckOptions::default();
    let r = gradcheck(f, inputs, &o).unwrap();
    assert!(r.passed, "{name}: {r}");
    let r = gradgradcheck(f, inputs, &o).unwrap();
    assert!(r.passed, "{name} (2nd order): {r}");
}

#[test]
fn product_family_gradients() {
    let (a, b) = (rg(randn(&[2, 3], 1)), rg(randn(&[3, 4], 2)));
    let (u, v, w) = (rg(randn(&[3], 3)), rg(randn(&[3], 4)), rg(randn(&[4], 5)));
    let s = rg(randn(&[1, 4], 6));
    let (b1, b2) = (rg(randn(&[2, 2, 3], 7)), rg(randn(&[2, 3, 2], 8)));
    check2("inner", &[a.clone(), b.mT().unwrap()], |x| Ok(vec![x[0].inner(&x[1])?]));
    check2("outer", &[u.clone(), w.clone()], |x| Ok(vec![x[0].outer(&x[1])?]));
    check2("vecdot", &[a.clone(), u.clone()], |x| Ok(vec![x[0].vecdot(&x[1], -1)?]));
    check2("addmm", &[s.clone(), a.clone(), b.clone()], |x| {
        Ok(vec![x[0].addmm(&x[1], &x[2], 0.5, 2.0)?])
    });
    check2("addmm beta=0", &[s.clone(), a.clone(), b.clone()], |x| {
        Ok(vec![x[0].addmm(&x[1], &x[2], 0.0, 1.0)?])
    });
    check2("baddbmm", &[rg(randn(&[2, 2], 9)), b1.clone(), b2.clone()], |x| {
        Ok(vec![x[0].baddbmm(&x[1], &x[2], 1.5, -1.0)?])
    });
    check2("addbmm", &[rg(randn(&[2, 2], 10)), b1.clone(), b2.clone()], |x| {
        Ok(vec![x[0].addbmm(&x[1], &x[2], 1.0, 1.0)?])
    });
    check2("addmv", &[rg(randn(&[2], 11)), a.clone(), v.clone()], |x| {
        Ok(vec![x[0].addmv(&x[1], &x[2], 1.0, 0.5)?])
    });
    check2("addr", &[rg(randn(&[3, 4], 12)), u.clone(), w.clone()], |x| {
        Ok(vec![x[0].addr(&x[1], &x[2], 2.0, 1.0)?])
    });
    check2(
        "linear",
        &[rg(randn(&[2, 2, 3], 13)), rg(randn(&[4, 3], 14)), rg(randn(&[4], 15))],
        |x| Ok(vec![x[0].linear(&x[1], Some(&x[2]))?]),
    );
    check2(
        "multi_dot",
        &[u.clone(), rg(randn(&[3, 5], 16)), rg(randn(&[5, 2], 17)), rg(randn(&[2], 18))],
        |x| Ok(vec![Tensor::multi_dot(&[&x[0], &x[1], &x[2], &x[3]])?]),
    );
}

#[test]
fn structure_family_gradients() {
    let a = rg(randn(&[3, 4], 1));
    let sq = rg(randn(&[2, 3, 3], 2));
    check2("kron", &[rg(randn(&[2, 3], 3)), rg(randn(&[2, 2], 4))], |x| {
        Ok(vec![x[0].kron(&x[1])?])
    });
    check2("trace", &[a.clone()], |x| Ok(vec![x[0].trace()?]));
    check2("diag 1d", &[rg(randn(&[3], 5))], |x| Ok(vec![x[0].diag(-1)?]));
    check2("diag 2d", &[a.clone()], |x| Ok(vec![x[0].diag(1)?]));
    check2("diag_embed", &[rg(randn(&[2, 3], 6))], |x| Ok(vec![x[0].diag_embed(1, 0, 2)?]));
    check2("tril", &[sq.clone()], |x| Ok(vec![x[0].tril(-1)?]));
    check2("triu", &[sq.clone()], |x| Ok(vec![x[0].triu(1)?]));
    check2("cross", &[rg(randn(&[2, 3], 7)), rg(randn(&[1, 3], 8))], |x| {
        Ok(vec![x[0].cross(&x[1], -1)?])
    });
    check2("vander", &[rg(randn(&[2, 3], 9))], |x| Ok(vec![x[0].vander(Some(4))?]));
    check2("matrix_power 3", &[sq.clone()], |x| Ok(vec![x[0].matrix_power(3)?]));
    check2("matrix_power 0", &[sq.clone()], |x| Ok(vec![x[0].matrix_power(0)?]));
}

#[test]
fn values_against_element_formulas() {
    // kron: out[i*2+k][j*2+l] = a[i][j] * b[k][l]
    let a = randn(&[2, 3], 1);
    let b = randn(&[2, 2], 2);
    let (av, bv) = (a.to_vec_f64(), b.to_vec_f64());
    let k = a.kron(&b).unwrap();
    assert_eq!(k.dims(), &[4, 6]);
    let kv = k.to_vec_f64();
    for i in 0..2 {
        for j in 0..3 {
            for p in 0..2 {
                for q in 0..2 {
                    assert_eq!(kv[(i * 2 + p) * 6 + j * 2 + q], av[i * 3 + j] * bv[p * 2 + q]);
                }
            }
        }
    }
    // cross of the unit vectors: e0 x e1 = e2
    let e0 = Tensor::from_vec(vec![1.0f64, 0.0, 0.0], 3).unwrap();
    let e1 = Tensor::from_vec(vec![0.0f64, 1.0, 0.0], 3).unwrap();
    assert_eq!(e0.cross(&e1, -1).unwrap().to_vec_f64(), vec![0.0, 0.0, 1.0]);
    // tril/triu with offsets on a 3x3 of ones; NaN above the diagonal is zeroed by tril
    let m = Tensor::from_vec(
        vec![1.0f64, f64::NAN, f64::NAN, 1.0, 1.0, f64::NAN, 1.0, 1.0, 1.0],
        (3, 3),
    )
    .unwrap();
    assert_eq!(m.tril(0).unwrap().to_vec_f64(), vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]);
    let ones = Tensor::ones((3, 3), DType::F64).unwrap();
    assert_eq!(
        ones.triu(1).unwrap().to_vec_f64(),
        vec![0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    );
    // vander: columns 1, x, x^2
    let x = Tensor::from_vec(vec![2.0f64, 3.0], 2).unwrap();
    assert_eq!(x.vander(Some(3)).unwrap().to_vec_f64(), vec![1.0, 2.0, 4.0, 1.0, 3.0, 9.0]);
    // matrix_power(5) equals five products
    let s = randn(&[3, 3], 3).mul_scalar(0.5).unwrap();
    let mut p = s.clone();
    for _ in 0..4 {
        p = p.matmul(&s).unwrap();
    }
    close(&s.matrix_power(5).unwrap().to_vec_f64(), &p.to_vec_f64(), 1e-12);
    assert_eq!(
        s.matrix_power(0).unwrap().to_vec_f64(),
        Tensor::eye(3, DType::F64).unwrap().to_vec_f64()
    );
    // addmm with beta = 0 ignores NaN in self
    let nan = Tensor::full((2, 2), f64::NAN, DType::F64).unwrap();
    let i2 = Tensor::eye(2, DType::F64).unwrap();
    assert_eq!(nan.addmm(&i2, &i2, 0.0, 3.0).unwrap().to_vec_f64(), vec![3.0, 0.0, 0.0, 3.0]);
    // multi_dot equals the left-to-right product
    let (m1, m2, m3) = (randn(&[4, 2], 4), randn(&[2, 5], 5), randn(&[5, 3], 6));
    close(
        &Tensor::multi_dot(&[&m1, &m2, &m3]).unwrap().to_vec_f64(),
        &m1.mm(&m2).unwrap().mm(&m3).unwrap().to_vec_f64(),
        1e-12,
    );
    // linear: x Wᵀ + b by hand on one row
    let xs = Tensor::from_vec(vec![1.0f64, 2.0], (1, 2)).unwrap();
    let w = Tensor::from_vec(vec![1.0f64, 0.0, 3.0, -1.0], (2, 2)).unwrap();
    let bias = Tensor::from_vec(vec![0.5f64, 0.25], 2).unwrap();
    assert_eq!(xs.linear(&w, Some(&bias)).unwrap().to_vec_f64(), vec![1.5, 1.25]);
}

#[test]
fn errors_name_the_op() {
    let a = randn(&[2, 3], 1);
    let e = Tensor::ones((3, 3), DType::F64)
        .unwrap()
        .addmm(&a, &randn(&[3, 4], 2), 1.0, 1.0)
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "addmm", .. }), "{e}");
    assert!(a.outer(&a).unwrap_err().to_string().contains("outer"));
    assert!(a.trace().is_ok());
    assert!(randn(&[2], 1).trace().unwrap_err().to_string().contains("trace"));
    let b2 = randn(&[3, 2], 3);
    assert!(b2.cross(&b2, -1).unwrap_err().to_string().contains("linalg.cross"));
    assert!(a.matrix_power(2).unwrap_err().to_string().contains("linalg.matrix_power"));
    assert!(Tensor::zeros((2, 2), DType::F64)
        .unwrap()
        .matrix_power(-1)
        .unwrap_err()
        .to_string()
        .contains("linalg.matrix_power"));
    assert!(Tensor::multi_dot(&[&a]).unwrap_err().to_string().contains("multi_dot"));
    assert!(a.linear(&randn(&[4, 2], 1), None).unwrap_err().to_string().contains("linear"));
    assert!(a.diag_embed(0, 1, 1).unwrap_err().to_string().contains("diag_embed"));
    assert!(a.vander(Some(1)).unwrap_err().to_string().contains("linalg.vander"));
    // a 0-d input is one element: [[1, x, x²]]
    assert_eq!(Tensor::scalar(2.0f64).vander(Some(3)).unwrap().to_vec_f64(), vec![1.0, 2.0, 4.0]);
}

/// The CPU backend reuses large freed buffers without clearing them for kernels that
/// write every element: a product into a recycled buffer full of NaN must still be
/// exact, with an empty inner dimension (all zeros) and through each small kernel.
#[test]
fn products_into_recycled_buffers() {
    for (m, k, n) in [(8, 0, 8), (8, 5, 8), (4, 4, 4), (2, 7, 3)] {
        let batch = 4096;
        // a freed NaN buffer of the result's size (or a little more) goes to the cache
        drop(Tensor::full(vec![batch, m, n], f64::NAN, DType::F64).unwrap());
        let a = randn(&[batch, m, k], 1);
        let b = randn(&[batch, k, n], 2);
        for (x, y) in [
            (a.clone(), b.clone()),
            (a.clone(), b.mT().unwrap().contiguous().unwrap().mT().unwrap()),
        ] {
            let c = x.matmul(&y).unwrap();
            drop(Tensor::full(vec![batch, m, n], f64::NAN, DType::F64).unwrap());
            let (av, bv, cv) = (
                a.to_vec::<f64>().unwrap(),
                b.to_vec::<f64>().unwrap(),
                c.to_vec::<f64>().unwrap(),
            );
            let mut want = vec![0.0; batch * m * n];
            for t in 0..batch {
                for i in 0..m {
                    for j in 0..n {
                        want[(t * m + i) * n + j] =
                            (0..k).map(|p| av[(t * m + i) * k + p] * bv[(t * k + p) * n + j]).sum();
                    }
                }
            }
            close(&cv, &want, 1e-12);
        }
    }
}
