//! # cotangent
//!
//! n-dimensional tensors with reverse-mode automatic differentiation of any order, built
//! for differentiable linear algebra, in pure Rust.
//!
//! ## A tour
//!
//! **Tensors.** A [`Tensor`] is an immutable, cheaply cloned handle to a strided view of a
//! buffer. Its element type is a runtime [`DType`] (`F32`, `F64`, `Bf16`, `F16`, `I64`,
//! `Bool`, and the complex types). Shapes follow PyTorch: dims are `usize`, dim
//! arguments are `isize` and may count from the end.
//!
//! ```
//! use cotangent::{DType, Tensor};
//! let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3))?;
//! let b = a.transpose(0, 1)?;          // a view: no copy
//! assert_eq!(b.dims(), &[3, 2]);
//! let c = a.mul(&Tensor::from_vec(vec![10.0f64, 100.0, 1000.0], 3)?)?; // broadcasting
//! assert_eq!(c.sum_dims(&[-1], false)?.to_vec::<f64>()?, vec![3210.0, 6540.0]);
//! # Ok::<(), cotangent::Error>(())
//! ```
//!
//! **Views** ([`Tensor::reshape`], [`Tensor::permute`], [`Tensor::transpose`],
//! [`Tensor::mT`], [`Tensor::narrow`], [`Tensor::select`], [`Tensor::slice`],
//! [`Tensor::expand`], [`Tensor::diagonal`], [`Tensor::unsqueeze`], ...) share the buffer
//! and change only the [`Layout`]; [`Tensor::contiguous`] copies when needed.
//!
//! **Autograd.** Mark leaves with [`Tensor::with_requires_grad`]; every op on them is
//! recorded. [`Tensor::backward`] returns the gradients of a scalar as [`Gradients`];
//! [`autograd::grad`] is `torch.autograd.grad`, and with `create_graph` it records its own
//! backward pass, so gradients of gradients work to any order. [`autograd::no_grad`]
//! turns recording off. [`autograd::gradcheck`] and [`autograd::gradgradcheck`] compare
//! any function's gradients with finite differences.
//!
//! ```
//! use cotangent::{autograd::{self, GradOptions}, Tensor};
//! let x = Tensor::from_vec(vec![0.5f64, -1.0], 2)?.with_requires_grad(true)?;
//! let y = x.tanh()?.sum()?;
//! let g = autograd::grad(&[&y], &[None], &[&x], GradOptions { create_graph: true, ..Default::default() })?;
//! let g = g[0].clone().unwrap();                 // 1 - tanh²(x)
//! let h = g.sum()?.backward()?;                 // d/dx Σ (1 - tanh² x)
//! assert!(h.get(&x).is_some());
//! # Ok::<(), cotangent::Error>(())
//! ```
//!
//! **Linear algebra.** [`linalg`] follows `torch.linalg`: products
//! ([`Tensor::matmul`] and its family), triangular solves, Cholesky, LU, `solve`, `inv`,
//! `det`, `slogdet`, QR, each batched over leading dims and differentiable to any order.
//! Prefer [`linalg::solve`] to forming [`linalg::inv`], and [`linalg::cholesky`] with
//! [`linalg::solve_triangular`] for symmetric positive-definite systems.
//!
//! ```
//! use cotangent::linalg::{cholesky, solve_triangular, Diag, Side, Uplo};
//! use cotangent::Tensor;
//! // log det A = 2 Σ log Lᵢᵢ, and its gradient A⁻¹, through the factorisation
//! let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 3.0], (2, 2))?.with_requires_grad(true)?;
//! let l = cholesky(&a, Uplo::Lower)?;
//! let logdet = l.diagonal(0, 0, 1)?.log()?.sum()?.mul_scalar(2.0)?;
//! let g = logdet.backward()?;
//! let ainv = g.get(&a).unwrap().to_vec::<f64>()?; // A⁻¹ = [[3, -2], [-2, 4]] / 8
//! assert!((ainv[0] - 0.375).abs() < 1e-12 && (ainv[1] + 0.25).abs() < 1e-12);
//! let x = solve_triangular(&l, &Tensor::from_vec(vec![2.0f64, 1.0], (2, 1))?, Uplo::Lower, Side::Left, Diag::NonUnit)?;
//! assert_eq!(x.dims(), &[2, 1]);
//! # Ok::<(), cotangent::Error>(())
//! ```
//!
//! <a id="complex-numbers"></a>**Complex numbers.** `C64` and `C128` tensors have the
//! elementwise arithmetic (real operands promoted, as `torch.result_type`), the
//! elementary functions on their principal branches, sums, means and products, and their
//! parts: [`Tensor::complex`], [`Tensor::polar`], [`Tensor::real`], [`Tensor::imag`],
//! [`Tensor::abs`], [`Tensor::angle`], [`Tensor::sgn`], [`Tensor::conj`],
//! [`Tensor::view_as_real`], [`Tensor::view_as_complex`]. Gradients follow PyTorch's
//! convention: for a real loss `L` of `z = x + iy`, the gradient is `∂L/∂x + i ∂L/∂y`
//! (the gradient of `|z|²` is `2z`), so gradient descent on complex parameters works as
//! on real ones; a complex output needs its cotangent given (`backward` of a complex
//! scalar is refused, as in PyTorch). The matrix products take complex operands
//! ([`Tensor::matmul`] and its family; [`Tensor::mH`] conjugates, [`Tensor::vdot`] and
//! [`Tensor::vecdot`] conjugate their first argument), and so do the structural ops
//! (`trace`, `diagonal`, `tril`/`triu`, `kron`, `cross`, `matrix_power`), every norm
//! and `cond`, and the linear algebra: the triangular solves, the Cholesky family
//! (Hermitian matrices), the LU family (`solve`, `inv`, `det`, `slogdet` with a complex
//! sign, ...), QR, the Hermitian `eigh`, the SVD, `polar`, `pinv`, `lstsq`, `matrix_exp`,
//! `matrix_sqrth`, and the
//! symmetric and Hermitian `ldl_*`; [`linalg::eig`] and [`linalg::eigvals`] take real or
//! complex input and always answer complex. A cast to a real dtype keeps the real part,
//! with the gradient `g + 0i`, as PyTorch's.
//!
//! ```
//! use cotangent::{DType, Tensor};
//! let z = Tensor::complex(&Tensor::from_vec(vec![3.0f64], 1)?, &Tensor::from_vec(vec![4.0f64], 1)?)?
//!     .with_requires_grad(true)?;
//! let loss = z.abs()?.sum()?;                    // |z| = 5, real
//! let g = loss.backward()?.get(&z).unwrap().view_as_real()?;
//! assert_eq!(g.to_vec::<f64>()?, vec![0.6, 0.8]); // z / |z|
//! # Ok::<(), cotangent::Error>(())
//! ```
//!
//! **Optimisers.** [`optim`] has [`optim::Param`], SGD, Adam and L-BFGS with
//! `torch.optim`'s defaults; a step takes a closure that computes the loss.
//!
//! **Forward mode and the functional API.** Every op has a forward-mode rule beside its
//! backward: [`func`] has `jvp`, `vjp`, `jacrev`, `jacfwd`, `hessian`, `hvp`, `grad`
//! and `grad_and_value` over closures, as `torch.func`; [`autograd::forward`] has dual
//! tensors. [`Tensor::grad_wrt`] is the one-line gradient of a scalar.
//!
//! ```
//! use cotangent::{func, Tensor};
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
//! let h = func::hessian(|p: &[Tensor]| Ok(vec![p[0].pow_scalar(3.0)?.sum()?]), &[x])?;
//! assert_eq!(h[0][0][0].to_vec::<f64>()?, vec![6.0, 0.0, 0.0, 12.0]); // diag(6x)
//! # Ok::<(), cotangent::Error>(())
//! ```
//!
//! **Your own ops.** [`autograd::Function`] defines an op by its forward, backward and
//! forward-mode rule, recorded in the graph like the built-in ones (as
//! `torch.autograd.Function`).
//!
//! **Other crates and files.** Behind cargo features: tensors to and from ndarray,
//! nalgebra and faer arrays, zero-copy where the layouts allow ([`interop`]), and
//! `.npy`/`.npz` and `.safetensors` files ([`io`]).
//!
//! **Errors.** Every function returns [`Result`]; [`Error`] variants name the op and carry
//! shapes, dtypes and indices. The operators `+ - * /` on tensors are sugar that panics on
//! invalid input (see [`ops`](crate#operators)).
//!
//! **Threads.** Kernels split large work (a batch of matrices, a long elementwise pass,
//! a big product) over rayon's global pool; the thread count is the pool's
//! ([`set_num_threads`] before the first parallel computation, `RAYON_NUM_THREADS`, or
//! `rayon::ThreadPoolBuilder::build_global`). A call from outside
//! any rayon pool (a program's `main`) works on its own share too, helped by a pool of
//! cotangent's own with one thread fewer than the global pool (made at the first such
//! call), so that the threads at work are as many as the global pool's. After a parallel
//! region those helpers stay awake, spinning, for 200 us (`COTANGENT_SPIN_US`, in
//! microseconds, read once; `0` turns the helpers off and leaves the work to the global
//! pool's workers), as OpenMP's threads do, because waking a sleeping thread can take as
//! long as a whole batch of small matrices. Batched and elementwise kernels, norms and
//! reductions give the same bits whatever the number of threads (the work is cut the
//! same way and each piece computed the same way, whoever runs it; tested on 1 to 4
//! threads). Large single matrices use faer's parallel kernels, called on a worker of the
//! global pool, so that their many fork-joins do not each put the caller to sleep and
//! wake a worker.
//!
//! **SIMD.** The CPU kernels use the best instruction sets the CPU has (AVX-512F, AVX2 and
//! FMA, or scalar code), chosen at run time. `COTANGENT_SIMD=portable|avx2|avx512` (read
//! once) forces a lower level, so that every path can be run and tested on one host; the
//! results agree to rounding (faer's own kernels choose for themselves). The kernels for
//! small matrices have copies unrolled for a few orders (1 to 4, 8, 16), compiled for
//! AVX2 only; other orders, and CPUs without AVX2, run their any-order copy.
//!
//! **Devices and fused kernels.** Every kernel reaches a device through one seam
//! (`Storage`, one `match` per kernel; only the CPU exists today). A device provides the
//! primitives (elementwise ops, reductions, copies and casts, products, the
//! factorisations' forwards); the fused kernels (most first-order VJPs of the
//! factorisations, fused solves and inverses) are optional, and where one is missing an
//! op composes primitives instead, with the same results to rounding.
//! `COTANGENT_FAST_PATHS=0` (read once) turns every fused kernel off on the CPU, as on a
//! device without them.
//!
//! ## Operators
//! `&a + &b`, `&a - 1.0`, `2.0 / &a`, `a * b`, `-&a`... (owned or borrowed tensors, an
//! `f64` on either side) call the corresponding methods and panic on error, like
//! ndarray's operators. Use the methods in code that handles bad input.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod autocast;
pub mod autograd;
mod backend;
mod complex;
mod device;
pub mod dtype;
mod error;
pub mod func;
mod host;
pub mod interop;
pub mod io;
pub mod layout;
pub mod linalg;
pub mod memory;
mod ops;
pub mod optim;
pub mod shape;
mod tensor;
mod threads;

pub use autocast::{autocast, autocast_dtype};
pub use autograd::Gradients;
pub use device::Device;
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use layout::Layout;
pub use shape::Shape;
pub use tensor::{Generator, Tensor, TensorId};
pub use threads::{num_threads, set_num_threads};
