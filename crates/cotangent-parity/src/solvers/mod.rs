//! Handlers of the solvers and factorisations (`linalg.solve_triangular`, cholesky, LU,
//! QR and the ops built on them): one file per family, listed in [`crate::dispatch::OPS`].

mod qr;
mod triangular;

pub(crate) use qr::{householder_product, qr};
pub(crate) use triangular::solve_triangular;
