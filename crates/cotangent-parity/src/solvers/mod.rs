//! Handlers of the solvers and factorisations (`linalg.solve_triangular`, cholesky, LU,
//! QR and the ops built on them): one file per family, listed in [`crate::dispatch::OPS`].

mod cholesky;
mod triangular;

pub(crate) use cholesky::{cholesky, cholesky_ex, cholesky_inverse, cholesky_solve};
pub(crate) use triangular::solve_triangular;
