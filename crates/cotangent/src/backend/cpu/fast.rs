//! The CPU's optional kernels ([`FastPaths`]): the fused first-order VJPs of the
//! factorisations and the fused solves and inverses, each dispatched on the dtype once
//! through the `real!` macro of the CPU backend.

use super::{in_place, linalg, matmul, norm, pool, typed, typed_opt, CpuStorage};
use crate::backend::{FastPaths, Flagged, LuSolved, SavedSolve, SvdGradFail, Undefined};
use crate::complex::ComplexFloat;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::Layout;
use num_complex::Complex;

/// The `I64` buffer of an integer operand (pivots), or `UnsupportedDType` naming `op`.
fn ints<'a>(op: &'static str, x: &'a CpuStorage) -> Result<&'a [i64]> {
    match x {
        CpuStorage::I64(p) => Ok(p),
        _ => Err(Error::UnsupportedDType { op, dtype: x.dtype() }),
    }
}

impl FastPaths for CpuStorage {
    fn vector_norm_backward(
        &self,
        l: &Layout,
        dims: &[usize],
        ord: f64,
        (y, yl): (&CpuStorage, &Layout),
        (g, gl): (&CpuStorage, &Layout),
    ) -> Result<Option<CpuStorage>> {
        let op = ("linalg.vector_norm", self.dtype());
        Ok(Some(real!(op.0, self, [g, y], |x: T| {
            let (y, g) = (in_place(typed::<T>(op, y)?, yl), in_place(typed::<T>(op, g)?, gl));
            T::into_host(norm::vector_norm_backward(x, l, dims, ord, &y, &g))
        })))
    }

    fn matmul_jvp(
        &self,
        l: &Layout,
        (b, bl): (&CpuStorage, &Layout),
        (da, dal): (&CpuStorage, &Layout),
        (db, dbl): (&CpuStorage, &Layout),
    ) -> Result<Option<CpuStorage>> {
        let op = ("matmul", self.dtype());
        Ok(real!(op.0, self, [b, da, db], |a: T| {
            let (b, da, db) = (typed::<T>(op, b)?, typed::<T>(op, da)?, typed::<T>(op, db)?);
            matmul::matmul_jvp((a, l), (b, bl), (da, dal), (db, dbl)).map(T::into_host)
        }))
    }

    fn inv_sandwich(
        &self,
        l: &Layout,
        g: &CpuStorage,
        gl: &Layout,
        alpha: f64,
    ) -> Result<Option<CpuStorage>> {
        let op = ("linalg.inv", self.dtype());
        Ok(real!(op.0, self, [g], |x: T| {
            matmul::sandwich_t(x, l, typed::<T>(op, g)?, gl, T::from_f64(alpha)).map(T::into_host)
        }))
    }

    fn cholesky_backward(
        &self,
        l: &Layout,
        g: &CpuStorage,
        gl: &Layout,
        upper: bool,
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.cholesky", self.dtype());
        Ok(Some(real!(op.0, self, [g], |f: T| {
            let g = typed::<T>(op, g)?;
            let (x, xl) = linalg::cholesky::cholesky_backward(f, l, g, gl, upper);
            (T::into_host(x), xl)
        })))
    }

    fn cholesky_jvp(
        &self,
        l: &Layout,
        da: &CpuStorage,
        dal: &Layout,
        upper: bool,
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.cholesky", self.dtype());
        Ok(real!(op.0, self, [da], |f: T| {
            let da = typed::<T>(op, da)?;
            linalg::cholesky_jvp::cholesky_jvp(f, l, da, dal, upper)
                .map(|(x, xl)| (T::into_host(x), xl))
        }))
    }

    fn lu_inv(&self, l: &Layout) -> Result<Option<(CpuStorage, Layout, CpuStorage)>> {
        Ok(real!("linalg.inv", self, [], |a: T| {
            linalg::lu::lu_inv(a, l).map(|(x, xl, i)| (T::into_host(x), xl, CpuStorage::I64(i)))
        }))
    }

    fn lu_factor_solve(
        &self,
        l: &Layout,
        b: &CpuStorage,
        bl: &Layout,
        adjoint: bool,
    ) -> Result<Option<LuSolved<CpuStorage>>> {
        let op = ("linalg.solve", self.dtype());
        Ok(real!(op.0, self, [b], |a: T| {
            let b = typed::<T>(op, b)?;
            linalg::lu::lu_factor_solve(a, l, b, bl, adjoint).map(|r| r.map(T::into_host))
        }))
    }

    fn lu_solve_saved(
        &self,
        perms: &CpuStorage,
        n: usize,
        b: &CpuStorage,
        bl: &Layout,
        adjoint: bool,
        outer: Option<(&CpuStorage, &Layout)>,
    ) -> Result<Option<SavedSolve<CpuStorage>>> {
        let op = ("linalg.solve", self.dtype());
        let p = ints(op.0, perms)?;
        let y = outer.map(|(y, _)| y);
        Ok(Some(real!(op.0, self, [b, y.unwrap_or(b)], |f: T| {
            let (b, outer) = (typed::<T>(op, b)?, typed_opt::<T>(op, outer)?);
            linalg::lu::lu_solve_saved(f, p, n, b, bl, adjoint, outer).map(T::into_host)
        })))
    }

    fn lu_factor_backward(
        &self,
        l: &Layout,
        piv: &CpuStorage,
        g: &CpuStorage,
        gl: &Layout,
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.lu_factor", self.dtype());
        let p = ints(op.0, piv)?;
        Ok(Some(real!(op.0, self, [g], |a: T| {
            let (x, xl) = linalg::lu::lu_factor_backward(a, l, p, typed::<T>(op, g)?, gl);
            (T::into_host(x), xl)
        })))
    }

    fn lu_inv_t(
        &self,
        l: &Layout,
        piv: &CpuStorage,
        c: &CpuStorage,
        row_major: bool,
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.inv", self.dtype());
        let p = ints(op.0, piv)?;
        Ok(Some(real!(op.0, self, [c], |a: T| {
            let (x, xl) = linalg::lu::lu_inv_t(a, l, p, typed::<T>(op, c)?, row_major);
            (T::into_host(x), xl)
        })))
    }

    fn cofactor(&self, l: &Layout, only: &CpuStorage) -> Result<Option<Flagged<CpuStorage>>> {
        const OP: &str = "linalg.det";
        let fail = |batch| Error::NoConvergence { op: OP, batch };
        let CpuStorage::Bool(only) = only else {
            return Err(Error::UnsupportedDType { op: OP, dtype: only.dtype() });
        };
        let c = real!(OP, self, [], |a: T| {
            match linalg::lu::cofactor_flagged(a, l, only).map_err(fail)? {
                Some(c) => Flagged::Computed(T::into_host(c)),
                None => Flagged::NoneFlagged,
            }
        });
        Ok(Some(c))
    }

    fn qr_backward(
        &self,
        l: &Layout,
        r: (&CpuStorage, &Layout),
        gq: Option<(&CpuStorage, &Layout)>,
        gr: Option<(&CpuStorage, &Layout)>,
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.qr", self.dtype());
        Ok(Some(real!(op.0, self, [], |a: T| {
            let rr = (typed::<T>(op, r.0)?, r.1);
            let (gq, gr) = (typed_opt::<T>(op, gq)?, typed_opt::<T>(op, gr)?);
            let (g, gl) = linalg::qr::qr_backward((a, l), rr, gq, gr);
            (T::into_host(g), gl)
        })))
    }

    fn svd_backward(
        &self,
        l: &Layout,
        s: &CpuStorage,
        vh: (&CpuStorage, &Layout),
        gu: Option<(&CpuStorage, &Layout)>,
        gs: Option<&CpuStorage>,
        gvh: Option<(&CpuStorage, &Layout)>,
    ) -> Result<Option<std::result::Result<(CpuStorage, Layout), SvdGradFail>>> {
        let op = ("linalg.svd", self.dtype());
        complex!(self, |a: T| {
            let re = |x| typed::<<T as ComplexFloat>::Real>(op, x);
            let gs = gs.map(re).transpose()?;
            let r = linalg::complex::svd_backward::svd_backward(
                (a, l),
                re(s)?,
                (typed::<T>(op, vh.0)?, vh.1),
                typed_opt::<T>(op, gu)?,
                gs,
                typed_opt::<T>(op, gvh)?,
            );
            Some(r.map(|(g, gl)| (T::into_host(g), gl)))
        });
        Ok(Some(real!(op.0, self, [], |a: T| {
            let gs = gs.map(|d| typed::<T>(op, d)).transpose()?;
            let r = linalg::svd::svd_backward(
                (a, l),
                typed::<T>(op, s)?,
                (typed::<T>(op, vh.0)?, vh.1),
                typed_opt::<T>(op, gu)?,
                gs,
                typed_opt::<T>(op, gvh)?,
            );
            r.map(|(g, gl)| (T::into_host(g), gl))
        })))
    }

    fn eigh_backward(
        &self,
        l: &Layout,
        w: (&CpuStorage, &Layout),
        gw: Option<(&CpuStorage, &Layout)>,
        gv: Option<(&CpuStorage, &Layout)>,
    ) -> Result<Option<std::result::Result<(CpuStorage, Layout), Undefined>>> {
        let op = ("linalg.eigh", self.dtype());
        Ok(Some(real!(op.0, self, [], |v: T| {
            let ww = (typed::<T>(op, w.0)?, w.1);
            let (gw, gv) = (typed_opt::<T>(op, gw)?, typed_opt::<T>(op, gv)?);
            linalg::eigh::eigh_backward(ww, (v, l), gw, gv)
                .map(|(g, gl)| (T::into_host(g), gl))
                .ok_or(Undefined)
        })))
    }

    fn eigh_inner(
        &self,
        l: &Layout,
        w: (&CpuStorage, &Layout),
        gw: Option<(&CpuStorage, &Layout)>,
    ) -> Result<Option<std::result::Result<CpuStorage, Undefined>>> {
        let dtype = self.dtype();
        let eps = match dtype {
            DType::F64 => f64::EPSILON,
            DType::F32 => f64::from(f32::EPSILON),
            _ => return Err(Error::UnsupportedDType { op: "linalg.eigh", dtype }),
        };
        let (x, w) = (self.to_f64_vec(l), w.0.to_f64_vec(w.1));
        let gw = gw.map(|(g, gl)| g.to_f64_vec(gl));
        let n = l.dims()[l.rank() - 1];
        let out = linalg::eigh::inner::inner_first_order(&w, &x, gw.as_deref(), n, eps);
        pool::give(x);
        Ok(Some(out.map(|o| CpuStorage::from_f64_vec(o, dtype)).ok_or(Undefined)))
    }

    fn eig_backward(
        &self,
        l: &Layout,
        w: (&CpuStorage, &Layout),
        gw: Option<(&CpuStorage, &Layout)>,
        gv: Option<(&CpuStorage, &Layout)>,
        real: bool,
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.eig", self.dtype());
        complex!(self, |v: T| {
            let ww = (typed::<T>(op, w.0)?, w.1);
            let (gw, gv) = (typed_opt(op, gw)?, typed_opt(op, gv)?);
            linalg::complex::eig_backward::eig_backward(ww, (v, l), gw, gv).map(|(g, gl)| {
                let g = if real {
                    let re: Vec<<T as ComplexFloat>::Real> = g.iter().map(|z| z.re()).collect();
                    Element::into_host(re)
                } else {
                    T::into_host(g)
                };
                (g, gl)
            })
        });
        Ok(None)
    }

    fn matrix_exp_frechet(
        &self,
        l: &Layout,
        e: (&CpuStorage, &Layout),
    ) -> Result<Option<(CpuStorage, Layout)>> {
        let op = ("linalg.matrix_exp", self.dtype());
        Ok(Some(real!(op.0, self, [e.0], |a: T| {
            let ee = typed::<T>(op, e.0)?;
            let (x, xl) = linalg::matrix_exp::matrix_exp_frechet(a, l, ee, e.1);
            (T::into_host(x), xl)
        })))
    }
}
