//! The functional API of automatic differentiation, as PyTorch's `torch.func`: transforms
//! of functions over tensors ([`grad`], [`grad_and_value`], [`vjp`], [`jvp`], [`jacrev`],
//! [`jacfwd`], [`hessian`], [`hvp`]).
//!
//! A function is a closure from a slice of tensors (the *primals*) to a tensor or a
//! `Vec` of tensors. The transforms compose: each works on tensors that carry the history
//! or the tangents of an enclosing transform, so `jacfwd` of a function that calls
//! [`grad`] is a Hessian (forward-over-reverse, as [`hessian`] computes it), `jacrev` of
//! `jacrev` another one (reverse-over-reverse), and `jvp` of `jvp` a second directional
//! derivative. Reverse mode runs the library's autograd engine; forward mode its dual
//! tensors ([`crate::autograd::forward`]). [`jacfwd`] and [`hessian`] carry several
//! directions through one call of the function, sharing its primal computation (as
//! `torch.func` batches them with `vmap`; [`JacOptions`] sets how many). With grad mode on,
//! forward mode records its tangents for reverse mode (the results stay differentiable,
//! through the primals and through tensors the function captured); called inside
//! [`no_grad`](crate::autograd::no_grad), the transforms still work (they turn grad mode on
//! for their own reverse passes) but compute the tangents unrecorded: faster, and less
//! memory, where the result need not be differentiated again.
//!
//! Shapes follow `torch.func`: the Jacobian of an output `y` with respect to a primal `x`
//! has the shape of `y` followed by the shape of `x`; [`jacrev`] and [`jacfwd`] return,
//! for each output, one Jacobian per primal.
//!
//! ```
//! use cotangent::{func, Tensor};
//! // f(x) = Σ x³: gradient 3x², Hessian diag(6x)
//! let f = |x: &[Tensor]| x[0].pow_scalar(3.0)?.sum();
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
//! let g = func::grad(f, &[x.clone()])?;
//! assert_eq!(g[0].to_vec::<f64>()?, vec![3.0, 12.0]);
//! let h = func::hessian(|x: &[Tensor]| Ok(vec![f(x)?]), &[x])?;
//! assert_eq!(h[0][0][0].to_vec::<f64>()?, vec![6.0, 0.0, 0.0, 12.0]);
//! # Ok::<(), cotangent::Error>(())
//! ```

use crate::autograd::forward::{dual_levels, make_dual_at, unpack_at};
use crate::autograd::{self, enable_grad, is_grad_enabled, GradOptions};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The primals as differentiable leaves of a new reverse pass: each one that already
/// requires grad with grad mode on (it belongs to an enclosing reverse transform, which
/// must see through this one) is used as it is, and the pass is then recorded (`true`);
/// the others become leaves that require grad, keeping their forward-mode tangents. The
/// transforms turn grad mode on while they run, as `torch.func`'s do inside `no_grad`.
fn reverse_inputs(op: &'static str, primals: &[Tensor]) -> Result<(Vec<Tensor>, bool)> {
    let mut outer = false;
    let mut xs = Vec::with_capacity(primals.len());
    for p in primals {
        if !p.dtype().is_differentiable() {
            return Err(Error::UnsupportedDType { op, dtype: p.dtype() });
        }
        if p.requires_grad() && is_grad_enabled() {
            outer = true;
            xs.push(p.clone());
        } else {
            xs.push(p.with_grad_fn(None, true));
        }
    }
    Ok((xs, outer))
}

/// Gradients of `outputs` (cotangents `cots`) with respect to `xs`, zeros for primals
/// the outputs do not depend on; recorded when an enclosing reverse transform needs it.
fn pull_back(
    outputs: &[&Tensor],
    cots: &[Option<&Tensor>],
    xs: &[Tensor],
    outer: bool,
) -> Result<Vec<Tensor>> {
    let reached: Vec<&Tensor> = outputs.iter().copied().filter(|y| y.requires_grad()).collect();
    if reached.is_empty() {
        return xs.iter().map(Tensor::zeros_like).collect();
    }
    let keep: Vec<Option<&Tensor>> =
        outputs.iter().zip(cots).filter(|(y, _)| y.requires_grad()).map(|(_, c)| *c).collect();
    let refs: Vec<&Tensor> = xs.iter().collect();
    let opts = GradOptions { create_graph: outer, allow_unused: true };
    let gs = autograd::grad(&reached, &keep, &refs, opts)?;
    gs.into_iter().zip(xs).map(|(g, x)| g.map_or_else(|| x.zeros_like(), Ok)).collect()
}

/// The gradient of a real scalar function with respect to each primal
/// (`torch.func.grad`): a tensor of each primal's shape.
///
/// Errors: `NonScalarBackward` if `f` returns more than one element; `InvalidArgument` for
/// a complex output; `UnsupportedDType` for a primal without derivatives; those of `f`.
///
/// ```
/// use cotangent::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
/// let g = func::grad(|x: &[Tensor]| x[0].square()?.sum(), &[x])?;
/// assert_eq!(g[0].to_vec::<f64>()?, vec![2.0, 4.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn grad(f: impl Fn(&[Tensor]) -> Result<Tensor>, primals: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(grad_and_value(f, primals)?.0)
}

/// [`grad`] and the function's value (`torch.func.grad_and_value`).
///
/// Errors: as [`grad`].
///
/// ```
/// use cotangent::{func, Tensor};
/// let x = Tensor::from_vec(vec![3.0f64], 1)?;
/// let (g, y) = func::grad_and_value(|x: &[Tensor]| x[0].square()?.sum(), &[x])?;
/// assert_eq!((g[0].to_vec::<f64>()?, y.item::<f64>()?), (vec![6.0], 9.0));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn grad_and_value(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    primals: &[Tensor],
) -> Result<(Vec<Tensor>, Tensor)> {
    const OP: &str = "func.grad";
    let (xs, outer) = reverse_inputs(OP, primals)?;
    let _grad = enable_grad();
    let y = f(&xs)?;
    if y.numel() != 1 {
        return Err(Error::NonScalarBackward { shape: y.shape().clone() });
    }
    if y.dtype().is_complex() {
        return Err(Error::InvalidArgument {
            op: OP,
            arg: "f",
            reason: "the function must return a real scalar (take .real() or .abs() of a \
                     complex one)",
        });
    }
    let g = pull_back(&[&y], &[None], &xs, outer)?;
    Ok((g, y))
}

/// The outputs of `f` and its pullback (`torch.func.vjp`): [`Vjp::apply`] maps
/// cotangents of the outputs to those of the primals (`Σ_k J_kᴴ u_k` per primal).
///
/// Errors: `UnsupportedDType` for a primal without derivatives; those of `f`.
///
/// ```
/// use cotangent::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
/// let (y, pullback) = func::vjp(|x: &[Tensor]| Ok(vec![x[0].mul_scalar(3.0)?]), &[x])?;
/// let u = Tensor::from_vec(vec![1.0f64, -1.0], 2)?;
/// assert_eq!(pullback.apply(&[u])?[0].to_vec::<f64>()?, vec![3.0, -3.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn vjp(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
) -> Result<(Vec<Tensor>, Vjp)> {
    let (xs, outer) = reverse_inputs("func.vjp", primals)?;
    let outputs = {
        let _grad = enable_grad();
        f(&xs)?
    };
    Ok((outputs.clone(), Vjp { outputs, inputs: xs, outer }))
}

/// The pullback returned by [`vjp`]: keeps the graph of the function's application alive
/// until dropped, and may be applied any number of times.
#[derive(Debug, Clone)]
pub struct Vjp {
    outputs: Vec<Tensor>,
    inputs: Vec<Tensor>,
    outer: bool,
}

impl Vjp {
    /// The cotangents of the primals for `cotangents` of the outputs (one per output, of
    /// its shape and dtype): zeros for primals the outputs do not depend on.
    ///
    /// Errors: `InvalidArgument` for a wrong number of cotangents; `ShapeMismatch` for a
    /// cotangent of the wrong shape; `DTypeMismatch` for one of the wrong dtype.
    pub fn apply(&self, cotangents: &[Tensor]) -> Result<Vec<Tensor>> {
        const OP: &str = "func.vjp";
        if cotangents.len() != self.outputs.len() {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "cotangents",
                reason: "needs one cotangent per output",
            });
        }
        for (y, u) in self.outputs.iter().zip(cotangents) {
            if y.dims() != u.dims() {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: y.shape().clone(),
                    rhs: u.shape().clone(),
                });
            }
            if y.dtype() != u.dtype() {
                return Err(Error::DTypeMismatch { op: OP, lhs: y.dtype(), rhs: u.dtype() });
            }
        }
        let outs: Vec<&Tensor> = self.outputs.iter().collect();
        let cots: Vec<Option<&Tensor>> = cotangents.iter().map(Some).collect();
        let _grad = enable_grad();
        pull_back(&outs, &cots, &self.inputs, self.outer)
    }
}

/// The outputs of `f` at `primals` and their directional derivatives along `tangents`
/// (`torch.func.jvp`): `J v` per output, computed in forward mode (dual tensors at a new
/// level), zeros for outputs that do not depend on the primals.
///
/// Errors: `InvalidArgument` for a wrong number of tangents; `ShapeMismatch` or
/// `DTypeMismatch` for a tangent unlike its primal; `NotDifferentiable` from an op without
/// a forward-mode rule; those of `f`.
///
/// ```
/// use cotangent::{func, Tensor};
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], 2)?;
/// let v = Tensor::from_vec(vec![1.0f64, 1.0], 2)?;
/// let (y, dy) = func::jvp(|x: &[Tensor]| Ok(vec![x[0].exp()?]), &[x], &[v])?;
/// assert_eq!(dy[0].to_vec::<f64>()?, y[0].to_vec::<f64>()?); // d eˣ = eˣ dx
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn jvp(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
    tangents: &[Tensor],
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    if tangents.len() != primals.len() {
        return Err(Error::InvalidArgument {
            op: "func.jvp",
            arg: "tangents",
            reason: "needs one tangent per primal",
        });
    }
    let (ys, mut dys) = jvp_many(f, primals, &[tangents])?;
    Ok((ys, dys.pop().unwrap_or_default()))
}

/// [`jvp`] along several directions at once (`sets[d]` holds one tangent per primal):
/// the outputs and, per direction, their tangents. One call of `f` on dual tensors with a
/// sibling level per direction, so the primal computation is shared (`torch.func.jacfwd`
/// shares it by `vmap`). Called with grad mode off, the tangents are computed unrecorded
/// for reverse mode (nothing outside can differentiate them).
fn jvp_many(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
    sets: &[&[Tensor]],
) -> Result<(Vec<Tensor>, Vec<Vec<Tensor>>)> {
    // (under no_grad nothing outside can differentiate the tangents, not even through a
    // tensor the closure captured: they go unrecorded)
    let reverse = is_grad_enabled();
    let levels = dual_levels(sets.len(), reverse);
    let mut duals = primals.to_vec();
    for (d, set) in sets.iter().enumerate() {
        for (x, t) in duals.iter_mut().zip(set.iter()) {
            *x = make_dual_at(levels.level(d), x, t)?;
        }
    }
    let mut ys = f(&duals)?;
    let mut dys = Vec::with_capacity(sets.len());
    for d in 0..sets.len() {
        let mut per_output = Vec::with_capacity(ys.len());
        for y in &mut ys {
            let (p, t) = unpack_at(levels.level(d), y);
            per_output.push(t);
            *y = p;
        }
        dys.push(per_output);
    }
    // an output without a tangent does not depend on the primals: zeros
    let dys = dys
        .into_iter()
        .map(|per_output| {
            per_output
                .into_iter()
                .zip(&ys)
                .map(|(t, y)| t.map_or_else(|| y.zeros_like(), Ok))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((ys, dys))
}

/// Refuses complex primals and outputs in the Jacobian transforms (their Jacobian is not
/// one real matrix).
fn real_only(op: &'static str, ts: &[Tensor]) -> Result<()> {
    match ts.iter().find(|t| t.dtype().is_complex()) {
        Some(t) => Err(Error::UnsupportedDType { op, dtype: t.dtype() }),
        None => Ok(()),
    }
}

/// The shape of `y` followed by the shape of `x`.
fn jac_dims(y: &Tensor, x: &Tensor) -> Vec<usize> {
    y.dims().iter().chain(x.dims()).copied().collect()
}

/// The Jacobians of `f` at `primals` by reverse mode (`torch.func.jacrev`), one backward
/// pass per output element: `J[k][j]` is the Jacobian of output `k` with respect to
/// primal `j`, of shape `y_k.shape + x_j.shape`. Real dtypes only.
///
/// Errors: `UnsupportedDType` for complex or integer primals or outputs; those of `f`.
///
/// ```
/// use cotangent::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
/// let j = func::jacrev(|x: &[Tensor]| Ok(vec![x[0].square()?]), &[x])?;
/// assert_eq!(j[0][0].to_vec::<f64>()?, vec![2.0, 0.0, 0.0, 4.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn jacrev(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
) -> Result<Vec<Vec<Tensor>>> {
    const OP: &str = "func.jacrev";
    real_only(OP, primals)?;
    let (xs, outer) = reverse_inputs(OP, primals)?;
    let _grad = enable_grad();
    let outputs = f(&xs)?;
    real_only(OP, &outputs)?;
    let mut jac = Vec::with_capacity(outputs.len());
    for y in &outputs {
        if !y.dtype().is_differentiable() {
            return Err(Error::UnsupportedDType { op: OP, dtype: y.dtype() });
        }
        let m = y.numel();
        // one row of each Jacobian per element of y (a one-hot cotangent)
        let mut rows: Vec<Vec<Tensor>> = vec![Vec::with_capacity(m); xs.len()];
        for k in 0..m {
            let mut e = vec![0.0; m];
            e[k] = 1.0;
            let u = Tensor::from_vec(e, y.shape().clone())?.to_dtype(y.dtype())?;
            for (r, g) in rows.iter_mut().zip(pull_back(&[y], &[Some(&u)], &xs, outer)?) {
                r.push(g);
            }
        }
        let per_input = rows
            .into_iter()
            .zip(&xs)
            .map(|(r, x)| {
                if m == 0 {
                    return Tensor::zeros(jac_dims(y, x), y.dtype());
                }
                let refs: Vec<&Tensor> = r.iter().collect();
                Tensor::stack(&refs, 0)?.reshape(jac_dims(y, x))
            })
            .collect::<Result<Vec<_>>>()?;
        jac.push(per_input);
    }
    Ok(jac)
}

/// Options of the forward-mode Jacobian transforms ([`jacfwd_with`], [`hessian_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JacOptions {
    /// How many directions (one per primal element) one call of the function carries, as
    /// `torch.func.jacrev`'s `chunk_size`: the directions of a call share its primal
    /// computation, and each keeps its own tangents alive, so the time falls and the
    /// memory grows with it. `None`: all directions in one call (`torch.func`'s `vmap`);
    /// `Some(1)`: one call per direction. Default: `Some(4)`, which takes most of the
    /// saving at a bounded memory.
    pub chunk_size: Option<usize>,
}

impl Default for JacOptions {
    fn default() -> Self {
        Self { chunk_size: Some(4) }
    }
}

/// The Jacobians of `f` at `primals` by forward mode (`torch.func.jacfwd`), one JVP per
/// primal element, with the default [`JacOptions`]: the same layout as [`jacrev`]. Real
/// dtypes only.
///
/// Errors: `UnsupportedDType` for complex or integer primals or outputs;
/// `NotDifferentiable` from an op without a forward-mode rule; those of `f`.
///
/// ```
/// use cotangent::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
/// let j = func::jacfwd(|x: &[Tensor]| Ok(vec![x[0].square()?]), &[x])?;
/// assert_eq!(j[0][0].to_vec::<f64>()?, vec![2.0, 0.0, 0.0, 4.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn jacfwd(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
) -> Result<Vec<Vec<Tensor>>> {
    jacfwd_with(f, primals, JacOptions::default())
}

/// [`jacfwd`] with [`JacOptions`]: `chunk_size` directions per call of `f`.
///
/// Errors: as [`jacfwd`], and `InvalidArgument` for a `chunk_size` of 0.
///
/// ```
/// use cotangent::func::{self, JacOptions};
/// use cotangent::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], 3)?;
/// let opts = JacOptions { chunk_size: None }; // all three directions in one call
/// let j = func::jacfwd_with(|x: &[Tensor]| Ok(vec![x[0].sum()?]), &[x], opts)?;
/// assert_eq!(j[0][0].to_vec::<f64>()?, vec![1.0, 1.0, 1.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn jacfwd_with(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
    opts: JacOptions,
) -> Result<Vec<Vec<Tensor>>> {
    const OP: &str = "func.jacfwd";
    if opts.chunk_size == Some(0) {
        return Err(Error::InvalidArgument {
            op: OP,
            arg: "chunk_size",
            reason: "must be at least 1 (or None for all directions at once)",
        });
    }
    real_only(OP, primals)?;
    for p in primals {
        if !p.dtype().is_differentiable() {
            return Err(Error::UnsupportedDType { op: OP, dtype: p.dtype() });
        }
    }
    let zeros = primals.iter().map(Tensor::zeros_like).collect::<Result<Vec<_>>>()?;
    // one direction per element of each primal: a one-hot tangent there, zeros elsewhere
    let mut sets: Vec<Vec<Tensor>> = Vec::new();
    for (j, x) in primals.iter().enumerate() {
        let n = x.numel();
        for k in 0..n {
            let mut e = vec![0.0; n];
            e[k] = 1.0;
            let mut ts = zeros.clone();
            ts[j] = Tensor::from_vec(e, x.shape().clone())?.to_dtype(x.dtype())?;
            sets.push(ts);
        }
    }
    let chunk = opts.chunk_size.unwrap_or(sets.len()).max(1);
    let mut outputs = None;
    let mut dys = Vec::with_capacity(sets.len());
    for c in sets.chunks(chunk) {
        let refs: Vec<&[Tensor]> = c.iter().map(Vec::as_slice).collect();
        let (ys, d) = jvp_many(&f, primals, &refs)?;
        outputs.get_or_insert(ys);
        dys.extend(d);
    }
    let outputs = match outputs {
        Some(o) => o,
        // no primal has an element: the outputs from one call, for their shapes
        None => jvp_many(&f, primals, &[])?.0,
    };
    // columns[j][k]: the output tangents for the k-th element of primal j
    let mut dys = dys.into_iter();
    let columns: Vec<Vec<Vec<Tensor>>> =
        primals.iter().map(|x| dys.by_ref().take(x.numel()).collect()).collect();
    real_only(OP, &outputs)?;
    let mut jac = Vec::with_capacity(outputs.len());
    for (i, y) in outputs.iter().enumerate() {
        if !y.dtype().is_differentiable() {
            return Err(Error::UnsupportedDType { op: OP, dtype: y.dtype() });
        }
        let mut per_input = Vec::with_capacity(primals.len());
        for (x, cols) in primals.iter().zip(&columns) {
            if cols.is_empty() {
                per_input.push(Tensor::zeros(jac_dims(y, x), y.dtype())?);
                continue;
            }
            // the columns stacked last, then shaped as y.shape + x.shape
            let refs: Vec<&Tensor> = cols.iter().map(|c| &c[i]).collect();
            let stacked = Tensor::stack(&refs, -1)?;
            per_input.push(stacked.reshape(jac_dims(y, x))?);
        }
        jac.push(per_input);
    }
    Ok(jac)
}

/// The Hessians of `f` at `primals` (`torch.func.hessian`), forward-over-reverse
/// ([`jacfwd`] of [`jacrev`]): `H[k][i][j]` is the second derivative of output `k`
/// with respect to primals `i` and `j`, of shape `y_k.shape + x_i.shape + x_j.shape`.
/// Real dtypes only.
///
/// Errors: as [`jacfwd`] and [`jacrev`].
///
/// ```
/// use cotangent::{func, Tensor};
/// // f(x, y) = x² y: ∂²f/∂x² = 2y, ∂²f/∂x∂y = 2x, ∂²f/∂y² = 0
/// let (x, y) = (Tensor::scalar(3.0f64), Tensor::scalar(5.0f64));
/// let h = func::hessian(|p: &[Tensor]| Ok(vec![p[0].square()?.mul(&p[1])?]), &[x, y])?;
/// let at = |i: usize, j: usize| h[0][i][j].item::<f64>();
/// assert_eq!((at(0, 0)?, at(0, 1)?, at(1, 0)?, at(1, 1)?), (10.0, 6.0, 6.0, 0.0));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn hessian(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
) -> Result<Vec<Vec<Vec<Tensor>>>> {
    hessian_with(f, primals, JacOptions::default())
}

/// [`hessian`] with [`JacOptions`] for its forward-mode pass ([`jacfwd_with`]).
///
/// Errors: as [`hessian`], and `InvalidArgument` for a `chunk_size` of 0.
///
/// ```
/// use cotangent::func::{self, JacOptions};
/// use cotangent::Tensor;
/// // f(x) = Σ x³: H = diag(6x)
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
/// let f = |x: &[Tensor]| Ok(vec![x[0].pow_scalar(3.0)?.sum()?]);
/// let h = func::hessian_with(f, &[x], JacOptions { chunk_size: Some(1) })?;
/// assert_eq!(h[0][0][0].to_vec::<f64>()?, vec![6.0, 0.0, 0.0, 12.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn hessian_with(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    primals: &[Tensor],
    opts: JacOptions,
) -> Result<Vec<Vec<Vec<Tensor>>>> {
    let n_in = primals.len();
    // the reverse Jacobians flattened as one output list: (k, i) at k * n_in + i
    let flat = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(jacrev(&f, xs)?.into_iter().flatten().collect())
    };
    let j = jacfwd_with(flat, primals, opts)?;
    let mut out = Vec::with_capacity(j.len() / n_in.max(1));
    let mut it = j.into_iter();
    while let Some(first) = it.next() {
        let mut per_output = vec![first];
        for _ in 1..n_in {
            per_output
                .push(it.next().ok_or(Error::Internal { op: "func.hessian", reason: "arity" })?);
        }
        out.push(per_output);
    }
    Ok(out)
}

/// The value of a real scalar function and its Hessian-vector products with `tangents`
/// (forward-over-reverse: [`jvp`] of [`grad`]), one per primal: `Σ_j H_ij v_j`.
///
/// Errors: as [`grad`] and [`jvp`].
///
/// ```
/// use cotangent::{func, Tensor};
/// // f(x) = Σ x³: H = diag(6x)
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
/// let v = Tensor::from_vec(vec![1.0f64, 1.0], 2)?;
/// let (_, hv) = func::hvp(|x: &[Tensor]| x[0].pow_scalar(3.0)?.sum(), &[x], &[v])?;
/// assert_eq!(hv[0].to_vec::<f64>()?, vec![6.0, 12.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn hvp(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    primals: &[Tensor],
    tangents: &[Tensor],
) -> Result<(Tensor, Vec<Tensor>)> {
    let value = std::cell::RefCell::new(None);
    let (_, hv) = jvp(
        |xs: &[Tensor]| {
            let (g, y) = grad_and_value(&f, xs)?;
            *value.borrow_mut() = Some(y);
            Ok(g)
        },
        primals,
        tangents,
    )?;
    let y = value.into_inner().ok_or(Error::Internal { op: "func.hvp", reason: "no value" })?;
    Ok((y, hv))
}
