//! Forward mode of the linear algebra (issue 48): each op's JVP against finite
//! differences and against its VJP, and forward-over-reverse (the JVPs of its VJP), in
//! f64, real and complex (`common::check_fwd`); gauge-dependent outputs (eigenvectors)
//! are checked directly, as their tangents follow the forward's gauge.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{check_fwd, check_fwd_only, crandn, rg};
use cotangent::autograd::forward::{dual_level, make_dual, unpack_dual};
use cotangent::linalg::{self, Diag, Side, Uplo};
use cotangent::{DType, Result, Tensor};

fn r(shape: &[usize], seed: u64) -> Tensor {
    rg(common::randn(shape, seed))
}

fn c(shape: &[usize], seed: u64) -> Tensor {
    rg(crandn(shape, seed))
}

/// `X Xᴴ + I`: Hermitian positive definite.
fn hpd(x: &Tensor) -> Result<Tensor> {
    let n = x.dims()[x.rank() - 1];
    let eye = Tensor::eye(n, DType::F64)?.to_dtype(x.dtype())?;
    x.matmul(&x.mH()?)?.add(&eye)
}

#[test]
fn cholesky_and_its_solvers() {
    for uplo in [Uplo::Lower, Uplo::Upper] {
        check_fwd("cholesky", &[r(&[2, 3, 3], 1)], |x| {
            Ok(vec![linalg::cholesky(&hpd(&x[0])?, uplo)?])
        });
        check_fwd("cholesky c", &[c(&[3, 3], 2)], |x| {
            Ok(vec![linalg::cholesky(&hpd(&x[0])?, uplo)?])
        });
        check_fwd("cholesky_solve", &[r(&[2, 3, 2], 3), r(&[2, 3, 3], 4)], |x| {
            let l = linalg::cholesky(&hpd(&x[1])?, uplo)?;
            Ok(vec![linalg::cholesky_solve(&x[0], &l, uplo)?])
        });
        // a triangular factor as a function of a full matrix (only its triangle is read;
        // the rules take the factor's tangent as a full matrix, as PyTorch's)
        let tri = move |x: &Tensor| -> Result<Tensor> {
            let t = if uplo == Uplo::Lower { x.tril(0)? } else { x.triu(0)? };
            let eye = Tensor::eye(3, DType::F64)?.mul_scalar(3.0)?.to_dtype(x.dtype())?;
            t.add(&eye)
        };
        check_fwd("cholesky_solve, factor", &[r(&[3, 2], 5), r(&[3, 3], 6)], |x| {
            let l = tri(&x[1])?;
            Ok(vec![linalg::cholesky_solve(&x[0], &l, uplo)?])
        });
        check_fwd("cholesky_inverse", &[r(&[3, 3], 7)], |x| {
            Ok(vec![linalg::cholesky_inverse(&tri(&x[0])?, uplo)?])
        });
        check_fwd("cholesky_inverse c", &[c(&[3, 3], 8)], |x| {
            Ok(vec![linalg::cholesky_inverse(&tri(&x[0])?, uplo)?])
        });
    }
}

#[test]
fn solves_and_inverses() {
    let well = |x: &Tensor| -> Result<Tensor> {
        let n = x.dims()[x.rank() - 1];
        x.add(&Tensor::eye(n, DType::F64)?.mul_scalar(3.0)?.to_dtype(x.dtype())?)
    };
    for side in [Side::Left, Side::Right] {
        check_fwd("solve", &[r(&[2, 3, 3], 11), r(&[2, 3, 3], 12)], |x| {
            Ok(vec![linalg::solve(&well(&x[0])?, &x[1], side)?])
        });
        check_fwd("solve c", &[c(&[3, 3], 13), c(&[3, 3], 14)], |x| {
            Ok(vec![linalg::solve(&well(&x[0])?, &x[1], side)?])
        });
    }
    check_fwd("solve vector, broadcast", &[r(&[2, 3, 3], 15), r(&[3], 16)], |x| {
        Ok(vec![linalg::solve(&well(&x[0])?, &x[1], Side::Left)?])
    });
    check_fwd("inv", &[r(&[2, 3, 3], 17)], |x| Ok(vec![linalg::inv(&well(&x[0])?)?]));
    check_fwd("inv c", &[c(&[3, 3], 18)], |x| Ok(vec![linalg::inv(&well(&x[0])?)?]));
    for (uplo, side, diag) in [
        (Uplo::Lower, Side::Left, Diag::NonUnit),
        (Uplo::Upper, Side::Left, Diag::Unit),
        (Uplo::Upper, Side::Right, Diag::NonUnit),
        (Uplo::Lower, Side::Right, Diag::Unit),
    ] {
        check_fwd("solve_triangular", &[r(&[2, 3, 3], 19), r(&[2, 3, 3], 20)], |x| {
            Ok(vec![linalg::solve_triangular(&well(&x[0])?, &x[1], uplo, side, diag)?])
        });
    }
    check_fwd("solve_triangular c", &[c(&[3, 3], 21), c(&[3, 2], 22)], |x| {
        Ok(vec![linalg::solve_triangular(
            &well(&x[0])?,
            &x[1],
            Uplo::Upper,
            Side::Left,
            Diag::NonUnit,
        )?])
    });
}

#[test]
fn determinants() {
    check_fwd("det", &[r(&[2, 3, 3], 31)], |x| Ok(vec![linalg::det(&x[0])?]));
    check_fwd("det c", &[c(&[3, 3], 32)], |x| Ok(vec![linalg::det(&x[0])?]));
    check_fwd("slogdet", &[r(&[2, 3, 3], 33)], |x| {
        let s = linalg::slogdet(&x[0])?;
        Ok(vec![s.sign, s.logabsdet])
    });
    check_fwd("slogdet c", &[c(&[3, 3], 34)], |x| {
        let s = linalg::slogdet(&x[0])?;
        Ok(vec![s.sign, s.logabsdet])
    });
    // the tangent of det at a singular matrix is finite: Σ C_ij dA_ij with C the
    // cofactors (here rank 2 of 3: C = adj(A)ᵀ ≠ 0)
    let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0], (3, 3)).unwrap();
    let da = common::randn(&[3, 3], 35);
    let _level = dual_level();
    let d = linalg::det(&make_dual(&a, &da).unwrap()).unwrap();
    let got = unpack_dual(&d).unwrap().1.unwrap().item::<f64>().unwrap();
    // the cofactors of a by hand
    let m = a.to_vec::<f64>().unwrap();
    let at = |i: usize, j: usize| m[i * 3 + j];
    let mut want = 0.0;
    let dv = da.to_vec::<f64>().unwrap();
    for i in 0..3 {
        for j in 0..3 {
            let (r0, r1) = ((i + 1) % 3, (i + 2) % 3);
            let (c0, c1) = ((j + 1) % 3, (j + 2) % 3);
            let cof = at(r0, c0) * at(r1, c1) - at(r0, c1) * at(r1, c0);
            want += cof * dv[i * 3 + j];
        }
    }
    assert!((got - want).abs() < 1e-12 * (1.0 + want.abs()), "{got} {want}");
}

#[test]
fn eigendecompositions_in_their_gauge() {
    let sym = |x: &Tensor| -> Result<Tensor> { x.add(&x.mH()?) };
    check_fwd("eigh", &[r(&[2, 4, 4], 41)], |x| {
        let e = linalg::eigh(&sym(&x[0])?, Uplo::Lower)?;
        Ok(vec![e.eigenvalues, e.eigenvectors])
    });
    // complex eigenvectors directly (forward mode follows the gauge), and a
    // phase-invariant function of them through forward-over-reverse
    check_fwd_only("eigh c", &[c(&[4, 4], 42)], |x| {
        let e = linalg::eigh(&sym(&x[0])?, Uplo::Lower)?;
        Ok(vec![e.eigenvalues, e.eigenvectors])
    });
    check_fwd("eigh c |V|²", &[c(&[4, 4], 42)], |x| {
        let e = linalg::eigh(&sym(&x[0])?, Uplo::Lower)?;
        Ok(vec![e.eigenvalues, e.eigenvectors.abs()?.square()?])
    });
    check_fwd("eigvalsh", &[r(&[3, 3], 43)], |x| {
        Ok(vec![linalg::eigvalsh(&sym(&x[0])?, Uplo::Upper)?])
    });
    for (name, x) in [("eig", r(&[2, 4, 4], 44)), ("eig c", c(&[4, 4], 45))] {
        check_fwd_only(name, std::slice::from_ref(&x), |x| {
            let e = linalg::eig(&x[0])?;
            Ok(vec![e.eigenvalues, e.eigenvectors])
        });
        check_fwd(name, &[x], |x| {
            let e = linalg::eig(&x[0])?;
            Ok(vec![e.eigenvalues, e.eigenvectors.abs()?.square()?])
        });
    }
    check_fwd("eigvals", &[r(&[3, 3], 46)], |x| Ok(vec![linalg::eigvals(&x[0])?]));
    // at a repeated eigenvalue the eigenvalues' tangent is diag(Vᵀ dA V) for the forward's
    // V (PyTorch's; the sorted eigenvalues are only directionally differentiable there, but
    // every symmetric function of them is differentiable: Σ dw = tr dA); the eigenvectors'
    // tangent is NaN exactly where the perturbation splits the repeated eigenvalue
    let a = Tensor::eye(3, DType::F64).unwrap();
    let da = sym(&common::randn(&[3, 3], 47)).unwrap();
    let _level = dual_level();
    let e = linalg::eigh(&make_dual(&a, &da).unwrap(), Uplo::Lower).unwrap();
    let dw = unpack_dual(&e.eigenvalues).unwrap().1.unwrap();
    let v = unpack_dual(&e.eigenvectors).unwrap().0;
    let want =
        v.mT().unwrap().matmul(&da).unwrap().matmul(&v).unwrap().diagonal(0, -2, -1).unwrap();
    common::assert_close(&dw, &want, 1e-14);
    let tr = da.diagonal(0, -2, -1).unwrap().sum().unwrap().item::<f64>().unwrap();
    assert!((dw.sum().unwrap().item::<f64>().unwrap() - tr).abs() < 1e-13);
    let dv = unpack_dual(&e.eigenvectors).unwrap().1.unwrap();
    assert!(dv.to_vec::<f64>().unwrap().iter().any(|x| x.is_nan()));
}

#[test]
fn svd_in_its_gauge() {
    for (shape, full) in
        [(vec![2, 4, 3], false), (vec![3, 5], false), (vec![4, 4], true), (vec![4, 2], true)]
    {
        // (with full matrices and m ≠ n the completion's tangent is zero, as PyTorch's:
        // it is not a function of A, so only the first k vectors are compared)
        check_fwd_only("svd", &[r(&shape, 51)], |x| {
            let f = linalg::svd(&x[0], full)?;
            let k = f.s.dims()[f.s.rank() - 1];
            Ok(vec![f.u.narrow(-1, 0, k)?, f.s, f.vh.narrow(-2, 0, k)?])
        });
        // the reconstruction (gauge-free) through forward-over-reverse too
        check_fwd("svd U S Vh", &[r(&shape, 52)], |x| {
            let f = linalg::svd(&x[0], false)?;
            Ok(vec![f.u.mul(&f.s.unsqueeze(-2)?)?.matmul(&f.vh)?, f.s])
        });
    }
    for shape in [vec![4, 3], vec![3, 4], vec![2, 3, 3]] {
        check_fwd_only("svd c", &[c(&shape, 53)], |x| {
            let f = linalg::svd(&x[0], false)?;
            Ok(vec![f.u, f.s, f.vh])
        });
        check_fwd("svd c |U|², S, |Vh|²", &[c(&shape, 54)], |x| {
            let f = linalg::svd(&x[0], false)?;
            Ok(vec![f.u.abs()?.square()?, f.s, f.vh.abs()?.square()?])
        });
    }
    check_fwd("svdvals", &[r(&[3, 4], 55)], |x| Ok(vec![linalg::svdvals(&x[0])?]));
    // svdvals without requires_grad still carries the tangent (it used to take the
    // values-only kernel, which records nothing)
    let a = common::randn(&[3, 3], 56);
    let da = common::randn(&[3, 3], 57);
    let _level = dual_level();
    let s = linalg::svdvals(&make_dual(&a, &da).unwrap()).unwrap();
    let f = linalg::svd(&a, false).unwrap();
    let want = f.u.mT().unwrap().matmul(&da).unwrap().matmul(&f.vh.mT().unwrap()).unwrap();
    common::assert_close(
        &unpack_dual(&s).unwrap().1.unwrap(),
        &want.diagonal(0, -2, -1).unwrap(),
        1e-13,
    );
}

#[test]
fn qr_and_lu() {
    for shape in [vec![2, 4, 3], vec![3, 3], vec![3, 5]] {
        check_fwd("qr", &[r(&shape, 61)], |x| {
            let f = linalg::qr(&x[0], linalg::QrMode::Reduced)?;
            Ok(vec![f.q, f.r])
        });
        check_fwd("qr c", &[c(&shape, 62)], |x| {
            let f = linalg::qr(&x[0], linalg::QrMode::Reduced)?;
            Ok(vec![f.q, f.r])
        });
        check_fwd("lu_factor", &[r(&shape, 63)], |x| Ok(vec![linalg::lu_factor(&x[0], true)?.lu]));
        check_fwd("lu_factor c", &[c(&shape, 64)], |x| {
            Ok(vec![linalg::lu_factor(&x[0], true)?.lu])
        });
    }
    let well = |x: &Tensor| -> Result<Tensor> {
        x.add(&Tensor::eye(3, DType::F64)?.mul_scalar(3.0)?.to_dtype(x.dtype())?)
    };
    for adjoint in [false, true] {
        check_fwd("lu_solve", &[r(&[2, 3, 3], 65), r(&[2, 3, 2], 66)], |x| {
            let f = linalg::lu_factor(&well(&x[0])?, true)?;
            Ok(vec![linalg::lu_solve(&f.lu, &f.pivots, &x[1], Side::Left, adjoint)?])
        });
        check_fwd("lu_solve c", &[c(&[3, 3], 67), c(&[3, 2], 68)], |x| {
            let f = linalg::lu_factor(&well(&x[0])?, true)?;
            Ok(vec![linalg::lu_solve(&f.lu, &f.pivots, &x[1], Side::Left, adjoint)?])
        });
    }
}

#[test]
fn least_squares_pinv_and_ldl() {
    for (a, b) in [([5, 3], [5, 2]), ([3, 5], [3, 2])] {
        for driver in [linalg::LstsqDriver::Gelsd, linalg::LstsqDriver::Gels] {
            check_fwd("lstsq", &[r(&a, 71), r(&b, 72)], |x| {
                let l = linalg::lstsq(&x[0], &x[1], driver)?;
                let mut out = vec![l.solution];
                if l.residuals.numel() > 0 {
                    out.push(l.residuals);
                }
                Ok(out)
            });
        }
    }
    check_fwd("lstsq c", &[c(&[5, 3], 73), c(&[5, 2], 74)], |x| {
        let l = linalg::lstsq(&x[0], &x[1], linalg::LstsqOptions::default())?;
        Ok(vec![l.solution, l.residuals])
    });
    for shape in [vec![4, 3], vec![3, 4], vec![2, 3, 3]] {
        check_fwd("pinv", &[r(&shape, 75)], |x| {
            Ok(vec![linalg::pinv(&x[0], linalg::PinvOptions::default())?])
        });
        check_fwd("pinv c", &[c(&shape, 76)], |x| {
            Ok(vec![linalg::pinv(&x[0], linalg::PinvOptions::default())?])
        });
    }
    // rank-deficient (constant rank 2 along the perturbation: A = X Y)
    check_fwd("pinv rank 2", &[r(&[4, 2], 77), r(&[2, 5], 78)], |x| {
        Ok(vec![linalg::pinv(&x[0].matmul(&x[1])?, linalg::PinvOptions::default())?])
    });
    // hermitian: of a symmetric matrix (the rules' convention, as PyTorch's: the tangent
    // of a symmetric input is symmetric)
    check_fwd("pinv hermitian", &[r(&[3, 3], 79)], |x| {
        Ok(vec![linalg::pinv(
            &x[0].add(&x[0].mT()?)?,
            linalg::PinvOptions { hermitian: true, ..Default::default() },
        )?])
    });
    // ldl_solve: differentiable in B only (as PyTorch)
    let a = r(&[3, 3], 80).detach();
    let a = a.add(&a.mT().unwrap()).unwrap();
    let f = linalg::ldl_factor(&a, false).unwrap();
    let (ld, piv) = (f.ld.clone(), f.pivots.clone());
    let (ld, piv) = (&ld, &piv);
    check_fwd("ldl_solve", &[r(&[3, 2], 81)], |x| {
        Ok(vec![linalg::ldl_solve(ld, piv, &x[0], false)?])
    });
    let _level = dual_level();
    let d = make_dual(&a, &a).unwrap();
    match linalg::ldl_factor(&d, false) {
        Err(cotangent::Error::NotDifferentiable { op: "linalg.ldl_factor", .. }) => {}
        other => panic!("expected NotDifferentiable, got {other:?}"),
    }
}

#[test]
fn matrix_functions_and_norms() {
    check_fwd("matrix_exp", &[r(&[2, 3, 3], 91)], |x| Ok(vec![linalg::matrix_exp(&x[0])?]));
    check_fwd("matrix_exp c", &[c(&[3, 3], 92)], |x| Ok(vec![linalg::matrix_exp(&x[0])?]));
    for p in [1.0, 2.0, 3.0, 0.5, f64::INFINITY] {
        check_fwd("vector_norm", &[r(&[3, 4], 93)], |x| {
            Ok(vec![linalg::vector_norm(&x[0], p, Some(&[-1]), false)?])
        });
    }
    check_fwd("vector_norm c", &[c(&[3, 4], 94)], |x| {
        Ok(vec![linalg::vector_norm(&x[0], 2.0, None, false)?])
    });
    for ord in [
        linalg::NormOrd::Fro,
        linalg::NormOrd::Nuc,
        linalg::NormOrd::P(2.0),
        linalg::NormOrd::P(1.0),
    ] {
        check_fwd("matrix_norm", &[r(&[2, 3, 4], 95)], |x| {
            Ok(vec![linalg::matrix_norm(&x[0], ord, [-2, -1], false)?])
        });
    }
    check_fwd("cond", &[r(&[3, 3], 96)], |x| Ok(vec![linalg::cond(&x[0], None)?]));
    check_fwd("logdet of an spd", &[r(&[3, 3], 97)], |x| {
        let a = x[0].matmul(&x[0].mT()?)?.add(&Tensor::eye(3, DType::F64)?)?;
        Ok(vec![linalg::logdet(&a)?])
    });
    check_fwd("matrix_power -2", &[r(&[3, 3], 98)], |x| {
        Ok(vec![x[0].add(&Tensor::eye(3, DType::F64)?.mul_scalar(3.0)?)?.matrix_power(-2)?])
    });
    check_fwd("multi_dot", &[r(&[2, 3], 99), r(&[3, 4], 100), r(&[4, 2], 101)], |x| {
        Ok(vec![Tensor::multi_dot(&[&x[0], &x[1], &x[2]])?])
    });
    check_fwd("householder_product", &[r(&[4, 3], 102), r(&[3], 103)], |x| {
        Ok(vec![linalg::householder_product(&x[0], &x[1])?])
    });
}

#[test]
fn jacfwd_equals_jacrev_on_every_linalg_op() {
    // the whole Jacobian both ways, f64, for each op of the linear algebra (gauge-free
    // outputs of the spectral ones, real input: jacrev/jacfwd are real transforms)
    type F = fn(&[Tensor]) -> Result<Vec<Tensor>>;
    let rows: Vec<(&str, Vec<Tensor>, F)> = vec![
        ("cholesky", vec![r(&[3, 3], 111)], |x| {
            let a = x[0].matmul(&x[0].mT()?)?.add(&Tensor::eye(3, DType::F64)?)?;
            Ok(vec![linalg::cholesky(&a, Uplo::Lower)?])
        }),
        ("solve", vec![r(&[3, 3], 112), r(&[3, 2], 113)], |x| {
            let a = x[0].add(&Tensor::eye(3, DType::F64)?.mul_scalar(3.0)?)?;
            Ok(vec![linalg::solve(&a, &x[1], Side::Left)?])
        }),
        ("inv", vec![r(&[3, 3], 114)], |x| {
            Ok(vec![linalg::inv(&x[0].add(&Tensor::eye(3, DType::F64)?.mul_scalar(3.0)?)?)?])
        }),
        ("det, slogdet", vec![r(&[3, 3], 115)], |x| {
            Ok(vec![linalg::det(&x[0])?, linalg::slogdet(&x[0])?.logabsdet])
        }),
        ("qr", vec![r(&[4, 3], 116)], |x| {
            let f = linalg::qr(&x[0], linalg::QrMode::Reduced)?;
            Ok(vec![f.q, f.r])
        }),
        ("lu_factor", vec![r(&[3, 3], 117)], |x| Ok(vec![linalg::lu_factor(&x[0], true)?.lu])),
        ("eigh", vec![r(&[3, 3], 118)], |x| {
            let e = linalg::eigh(&x[0].add(&x[0].mT()?)?, Uplo::Lower)?;
            Ok(vec![e.eigenvalues, e.eigenvectors])
        }),
        ("svd", vec![r(&[4, 3], 119)], |x| {
            let f = linalg::svd(&x[0], false)?;
            Ok(vec![f.u, f.s, f.vh])
        }),
        ("eig |V|²", vec![r(&[3, 3], 120)], |x| {
            let e = linalg::eig(&x[0])?;
            Ok(vec![e.eigenvalues.real()?, e.eigenvectors.abs()?.square()?])
        }),
        ("pinv, lstsq", vec![r(&[4, 3], 121), r(&[4, 2], 122)], |x| {
            Ok(vec![
                linalg::pinv(&x[0], linalg::PinvOptions::default())?,
                linalg::lstsq(&x[0], &x[1], linalg::LstsqOptions::default())?.solution,
            ])
        }),
        ("matrix_exp, norms", vec![r(&[3, 3], 123)], |x| {
            Ok(vec![
                linalg::matrix_exp(&x[0])?,
                linalg::matrix_norm(&x[0], linalg::NormOrd::Nuc, [-2, -1], false)?,
                linalg::vector_norm(&x[0], 3.0, None, false)?,
            ])
        }),
        ("solve_triangular, cholesky_inverse", vec![r(&[3, 3], 124)], |x| {
            let t = x[0].tril(0)?.add(&Tensor::eye(3, DType::F64)?.mul_scalar(3.0)?)?;
            Ok(vec![
                linalg::solve_triangular(&t, &x[0], Uplo::Lower, Side::Left, Diag::NonUnit)?,
                linalg::cholesky_inverse(&t, Uplo::Lower)?,
            ])
        }),
    ];
    for (name, xs, f) in rows {
        let jf = cotangent::func::jacfwd(f, &xs).unwrap();
        let jr = cotangent::func::jacrev(f, &xs).unwrap();
        for (a, b) in jf.iter().flatten().zip(jr.iter().flatten()) {
            assert_eq!(a.dims(), b.dims(), "{name}");
            let scale = 1.0 + common::max_abs(b);
            let d = common::max_abs(&a.sub(b).unwrap());
            assert!(d <= 1e-10 * scale, "{name}: jacfwd and jacrev differ by {d}");
        }
    }
}

/// The tangent of `cholesky(a)` along `da`, with `a` requiring grad or not: recorded, the
/// JVP is the tensor-op rule; unrecorded with a symmetric `da`, the fused kernel.
fn cholesky_tangent(a: &Tensor, da: &Tensor, uplo: Uplo, recorded: bool) -> Result<Tensor> {
    let a = if recorded { a.with_requires_grad(true)? } else { a.clone() };
    let _level = dual_level();
    let y = linalg::cholesky(&make_dual(&a, da)?, uplo)?;
    Ok(unpack_dual(&y)?.1.expect("a tangent").detach())
}

/// The fused JVP of the Cholesky factorisation against the tensor-op rule and against
/// its defining equation `dL Lᵀ + L dLᵀ = dA` (with `dL` lower triangular), at orders of
/// each of its paths (the recurrence up to 16, in lane groups and alone; the blocked sweep
/// above, with blocks of 16 and 32 columns and a last block of one column and of
/// several), lower and upper, f64 and f32, batched.
#[test]
fn cholesky_fused_jvp_matches_the_tensor_rule() -> Result<()> {
    let cases = [(5, 1), (9, 2), (17, 4), (9, 16), (3, 7), (2, 17), (2, 47), (1, 97), (1, 300)];
    for (seed, &(batch, n)) in (100u64..).zip(&cases) {
        let a = hpd(&common::randn(&[batch, n, n], seed))?;
        let d = common::randn(&[batch, n, n], seed + 50);
        let da = d.add(&d.mT()?)?;
        for uplo in [Uplo::Lower, Uplo::Upper] {
            for (dt, tol) in [(DType::F64, 1e-11), (DType::F32, 2e-4)] {
                let (a, da) = (a.to_dtype(dt)?, da.to_dtype(dt)?);
                let fused = cholesky_tangent(&a, &da, uplo, false)?;
                let rule = cholesky_tangent(&a, &da, uplo, true)?;
                let scale = 1.0 + common::max_abs(&rule);
                let diff = common::max_abs(&fused.sub(&rule)?);
                assert!(diff <= tol * scale, "n = {n}, {uplo:?}, {dt:?}: {diff} vs scale {scale}");
                // dL L^T + L dL^T = dA, dL lower triangular
                let l = linalg::cholesky(&a, Uplo::Lower)?;
                let dl = if uplo == Uplo::Lower { fused.clone() } else { fused.mT()? };
                assert_eq!(common::max_abs(&dl.triu(1)?), 0.0, "n = {n}: dL not lower");
                let back = dl.matmul(&l.mT()?)?.add(&l.matmul(&dl.mT()?)?)?;
                let err = common::max_abs(&back.sub(&da)?);
                assert!(err <= tol * (1.0 + common::max_abs(&da)) * n as f64, "n = {n}: {err}");
            }
        }
    }
    // empty matrices and empty batches
    for shape in [[9usize, 0, 0], [0, 3, 3]] {
        let e = Tensor::zeros(shape.to_vec(), DType::F64)?;
        let t = cholesky_tangent(&e, &e, Uplo::Lower, false)?;
        assert_eq!(t.dims(), &shape[..]);
    }
    // a tangent that is not symmetric: the tensor-op rule, L Φ(L⁻¹ dA L⁻ᵀ), as PyTorch's
    let a = hpd(&common::randn(&[6, 6], 7))?;
    let da = common::randn(&[6, 6], 8);
    let got = cholesky_tangent(&a, &da, Uplo::Lower, false)?;
    let l = linalg::cholesky(&a, Uplo::Lower)?;
    let x = linalg::solve_triangular(&l, &da, Uplo::Lower, Side::Left, Diag::NonUnit)?;
    let x = linalg::solve_triangular(&l.mT()?, &x, Uplo::Upper, Side::Right, Diag::NonUnit)?;
    let phi = x.tril(-1)?.add(&x.diagonal(0, 0, 1)?.mul_scalar(0.5)?.diag_embed(0, 0, 1)?)?;
    common::assert_close(&got, &l.matmul(&phi)?, 1e-12);
    Ok(())
}

/// The fused tangent of a batched product (`dA B + A dB` in one pass, for the shapes with
/// unrolled kernels) gives the bits of the two products and their sum computed as tensor
/// ops, for every such shape, f64 and f32, with transposed, expanded and offset tangents,
/// one tangent only, and a batch of one and an empty batch.
#[test]
fn matmul_fused_jvp_gives_the_bits_of_the_tensor_rule() -> Result<()> {
    let shapes =
        [(1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4), (2, 1, 2), (4, 1, 4), (3, 3, 1), (4, 4, 1)];
    let tangent = |x: &Tensor, da: &Tensor, y: &Tensor, db: Option<&Tensor>| -> Result<Tensor> {
        let _level = dual_level();
        let y = match db {
            Some(db) => make_dual(y, db)?,
            None => y.clone(),
        };
        let c = make_dual(x, da)?.matmul(&y)?;
        Ok(unpack_dual(&c)?.1.expect("a tangent"))
    };
    for (seed, &(m, k, n)) in (300u64..).zip(&shapes) {
        for batch in [1usize, 7, 1100] {
            for dt in [DType::F64, DType::F32] {
                let r = |shape: &[usize], s: u64| common::randn(shape, s).to_dtype(dt);
                let (a, b) = (r(&[batch, m, k], seed)?, r(&[batch, k, n], seed + 1)?);
                // a transposed tangent of A, and a tangent of B expanded over the batch
                let da = r(&[batch, k, m], seed + 2)?.mT()?;
                let db =
                    r(&[1, k, n], seed + 3)?.expand(&[batch as isize, k as isize, n as isize])?;
                let want = da.matmul(&b)?.add(&a.matmul(&db)?)?;
                let got = tangent(&a, &da, &b, Some(&db))?;
                assert_eq!(got.dims(), want.dims());
                assert_eq!(
                    got.to_vec_f64(),
                    want.to_vec_f64(),
                    "{m}x{k}x{n}, batch {batch}, {dt:?}"
                );
                // one tangent: one product
                let got = tangent(&a, &da, &b, None)?;
                assert_eq!(got.to_vec_f64(), da.matmul(&b)?.to_vec_f64());
                // an operand at an offset (a slice of a larger batch)
                let big = r(&[batch + 2, m, k], seed + 4)?;
                let a2 = big.narrow(0, 2, batch)?;
                let want = da.matmul(&b)?.add(&a2.matmul(&db)?)?;
                assert_eq!(tangent(&a2, &da, &b, Some(&db))?.to_vec_f64(), want.to_vec_f64());
            }
        }
    }
    let e = Tensor::zeros(vec![0, 4, 4], DType::F64)?;
    assert_eq!(tangent(&e, &e, &e, Some(&e))?.dims(), &[0, 4, 4]);
    Ok(())
}
