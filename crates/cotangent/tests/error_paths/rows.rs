//! The rows: one call of a public function with bad input per error path, the variant it
//! must return and the op its message must name.

use cotangent::autograd::forward::{dual_level, make_dual, unpack_dual};
use cotangent::autograd::{self, gradcheck, gradcheck_forward, GradOptions, GradcheckOptions};
use cotangent::func::{self, JacOptions};
use cotangent::linalg::{self, Diag, LstsqDriver, NormOrd, QrMode, Side, Uplo};
use cotangent::optim::{Adam, Lbfgs, Optimizer, Param, Sgd};
use cotangent::{autocast, DType, Generator, Result, Shape, Tensor};

/// One error path: `call` must fail with `variant` (the start of the error's `Debug`),
/// with a message that starts with `op`. `site` names the construction it covers when
/// the op comes from a parameter (`path.rs::fn`, as the census names it).
#[derive(Clone, Copy)]
pub struct Row {
    /// The variant's name.
    pub variant: &'static str,
    /// The op the message must name.
    pub op: &'static str,
    /// The parameter-op site covered, if any.
    pub site: Option<&'static str>,
    /// The call.
    pub call: fn() -> Result<()>,
}

/// `row!(Variant, "op", expr)` or `row!(Variant, "op" @ "path.rs::fn", expr)`; `expr` is
/// any `Result` (its value is dropped).
macro_rules! row {
    ($variant:ident, $op:literal, $body:expr) => {
        Row { variant: stringify!($variant), op: $op, site: None, call: || ($body).map(drop) }
    };
    ($variant:ident, $op:literal @ $site:literal, $body:expr) => {
        Row {
            variant: stringify!($variant),
            op: $op,
            site: Some($site),
            call: || ($body).map(drop),
        }
    };
}

fn t(v: &[f64], shape: impl Into<Shape>) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape.to_vec(), DType::F64).unwrap()
}

fn ones_as(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::ones(shape.to_vec(), dtype).unwrap()
}

fn zeros(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape.to_vec(), DType::F64).unwrap()
}

fn eye(n: usize) -> Tensor {
    Tensor::eye(n, DType::F64).unwrap()
}

fn scalar() -> Tensor {
    Tensor::scalar(1.0f64)
}

fn index(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), v.len()).unwrap()
}

fn leaf(x: &Tensor) -> Tensor {
    x.with_requires_grad(true).unwrap()
}

/// A complex `n x n` matrix (`C128`): the identity.
fn ceye(n: usize) -> Tensor {
    Tensor::eye(n, DType::C128).unwrap()
}

/// A matrix with a NaN: no factorisation converges on it.
fn nan_matrix() -> Tensor {
    t(&[1.0, f64::NAN, f64::NAN, 1.0], (2, 2))
}

/// A matrix no rotation leaves a loss `Σ w_ij x_ij` invariant under.
fn weights() -> Tensor {
    t(&[1.0, 2.0, 3.0, 4.0], (2, 2))
}

fn param(shape: &[usize]) -> Param {
    Param::new(&ones(shape)).unwrap()
}

/// The rows of the shape and view ops, reductions, elementwise ops, indexing, creation
/// and conversion.
pub fn tensor_rows() -> Vec<Row> {
    vec![
        // creation
        row!(DataLength, "from_vec", Tensor::from_vec(vec![1.0f64, 2.0, 3.0], (2, 2))),
        row!(
            SizeOverflow,
            "zeros" @ "shape.rs::checked_numel",
            Tensor::zeros(vec![usize::MAX, 2], DType::F64)
        ),
        row!(SizeOverflow, "eye" @ "shape.rs::checked_numel", Tensor::eye(usize::MAX, DType::F64)),
        row!(InvalidArgument, "arange", Tensor::arange(0.0, 1.0, 0.0, DType::F64)),
        row!(InvalidArgument, "arange", Tensor::arange(0.0, f64::NAN, 1.0, DType::F64)),
        row!(InvalidArgument, "arange", Tensor::arange(1.0, 0.0, 1.0, DType::F64)),
        row!(SizeOverflow, "arange", Tensor::arange(0.0, 1e300, 1.0, DType::F64)),
        row!(
            UnsupportedDType,
            "rand" @ "tensor/create.rs::float_only",
            Tensor::rand(2, DType::I64, &mut Generator::new(0))
        ),
        row!(
            UnsupportedDType,
            "randn" @ "tensor/create.rs::float_only",
            Tensor::randn(2, DType::Bool, &mut Generator::new(0))
        ),
        // reading back
        row!(DTypeMismatch, "to_vec", ones(&[2]).to_vec::<f32>()),
        row!(DTypeMismatch, "item", scalar().item::<i64>()),
        row!(BadShape, "item", ones(&[2]).item::<f64>()),
        row!(UnsupportedDType, "requires_grad", ones_as(&[2], DType::I64).with_requires_grad(true)),
        row!(
            NotDifferentiable,
            "requires_grad",
            leaf(&ones(&[2])).exp()?.with_requires_grad(false)
        ),
        // views and shapes
        row!(ShapeMismatch, "reshape", ones(&[2, 3]).reshape(5)),
        row!(
            SizeOverflow,
            "reshape" @ "shape.rs::checked_numel",
            ones(&[2]).reshape(vec![usize::MAX, 2])
        ),
        row!(InvalidArgument, "reshape", ones(&[2, 3]).reshape_infer(&[-1, -1])),
        row!(InvalidArgument, "reshape", ones(&[2, 3]).reshape_infer(&[-2, 3])),
        row!(ShapeMismatch, "reshape", ones(&[2, 3]).reshape_infer(&[-1, 4])),
        row!(SizeOverflow, "reshape", ones(&[2, 3]).reshape_infer(&[isize::MAX, 4, -1])),
        row!(ShapeMismatch, "view", ones(&[2, 3]).view((3, 3))),
        row!(BadShape, "view", ones(&[2, 3]).t()?.view(6)),
        row!(InvalidArgument, "permute", ones(&[2, 3]).permute(&[0])),
        row!(InvalidArgument, "permute" @ "shape.rs::resolve_dims", ones(&[2, 3]).permute(&[1, 1])),
        row!(DimOutOfRange, "transpose" @ "shape.rs::resolve_dim", ones(&[2, 3]).transpose(0, 2)),
        row!(DimOutOfRange, "size" @ "shape.rs::resolve_dim", ones(&[2, 3]).size(-3)),
        row!(BadShape, "t", ones(&[2, 2, 2]).t()),
        row!(BadShape, "mT", ones(&[2]).mT()),
        row!(BadShape, "mH", ones(&[2]).mH()),
        row!(ShapeMismatch, "expand", ones(&[3]).broadcast_to(vec![2, 2])),
        row!(
            SizeOverflow,
            "expand" @ "shape.rs::checked_numel",
            ones(&[1]).broadcast_to(vec![usize::MAX, 2])
        ),
        row!(InvalidArgument, "expand", ones(&[2, 3]).expand(&[3])),
        row!(InvalidArgument, "expand", ones(&[3]).expand(&[-1, 3])),
        row!(InvalidArgument, "expand", ones(&[3]).expand(&[-2])),
        row!(InvalidArgument, "set_num_threads", cotangent::set_num_threads(0)),
        row!(BadShape, "narrow", scalar().narrow(0, 0, 1)),
        row!(IndexOutOfRange, "narrow", ones(&[3, 2]).narrow(0, 2, 2)),
        row!(InvalidArgument, "slice", ones(&[3]).slice(0, 0, 3, 0)),
        row!(BadShape, "slice", scalar().slice(0, 0, 1, 1)),
        row!(BadShape, "select", scalar().select(0, 0)),
        row!(IndexOutOfRange, "select", ones(&[3, 2]).select(0, 3)),
        row!(DimOutOfRange, "unsqueeze" @ "shape.rs::resolve_dim", ones(&[2, 3]).unsqueeze(3)),
        row!(InvalidArgument, "flatten", ones(&[2, 3, 4]).flatten(2, 1)),
        row!(BadShape, "diagonal", ones(&[3]).diagonal(0, 0, 1)),
        row!(InvalidArgument, "diagonal", ones(&[3, 3]).diagonal(0, 1, -1)),
        row!(ShapeMismatch, "sum_to", ones(&[2, 3]).sum_to(&Shape::from(4))),
        row!(ShapeMismatch, "sum_to", ones(&[3]).sum_to(&Shape::from((1, 1, 3)))),
        row!(InvalidArgument, "cat", Tensor::cat(&[], 0)),
        row!(BadShape, "cat", Tensor::cat(&[&scalar(), &scalar()], 0)),
        row!(ShapeMismatch, "cat", Tensor::cat(&[&ones(&[2, 3]), &ones(&[3, 2])], 0)),
        row!(InvalidArgument, "stack", Tensor::stack(&[], 0)),
        row!(ShapeMismatch, "stack", Tensor::stack(&[&ones(&[2]), &ones(&[3])], 0)),
        row!(BadShape, "split", scalar().split(1, 0)),
        row!(InvalidArgument, "split", ones(&[3]).split(0, 0)),
        row!(InvalidArgument, "split", ones(&[3]).split_with_sizes(&[1, 1], 0)),
        row!(InvalidArgument, "chunk", ones(&[3]).chunk(0, 0)),
        row!(BadShape, "chunk", scalar().chunk(1, 0)),
        row!(BadShape, "unbind", scalar().unbind(0)),
        row!(InvalidArgument, "flip" @ "shape.rs::resolve_dims", ones(&[2, 2]).flip(&[0, -2])),
        row!(InvalidArgument, "nn.functional.pad", ones(&[2]).pad(&[1])),
        row!(InvalidArgument, "nn.functional.pad", ones(&[2]).pad(&[-2, -1])),
        row!(SizeOverflow, "nn.functional.pad", ones(&[2]).pad(&[isize::MAX, isize::MAX])),
        row!(InvalidArgument, "repeat", ones(&[2, 2]).repeat(&[2])),
        row!(SizeOverflow, "repeat", ones(&[2]).repeat(&[usize::MAX])),
        // reductions
        row!(DimOutOfRange, "sum" @ "shape.rs::resolve_dim", ones(&[2, 3]).sum_dims(&[2], false)),
        row!(
            UnsupportedDType,
            "amax" @ "ops/reduce.rs::reduce",
            Tensor::zeros(2, DType::C64)?.amax(&[], false)
        ),
        row!(BadShape, "amin" @ "ops/reduce.rs::reduce", zeros(&[0, 2]).amin(&[0], false)),
        row!(UnsupportedDType, "mean", ones_as(&[2], DType::I64).mean()),
        row!(UnsupportedDType, "logsumexp", ones_as(&[2], DType::C128).logsumexp(&[0], false)),
        row!(UnsupportedDType, "var", ones_as(&[2], DType::I64).var(&[], 1.0, false)),
        row!(UnsupportedDType, "std", Tensor::ones(2, DType::C128)?.std(&[], 1.0, false)),
        row!(UnsupportedDType, "norm", ones_as(&[2], DType::I64).norm()),
        // elementwise
        row!(ShapeMismatch, "add" @ "shape.rs::broadcast_shapes", ones(&[2, 3]).add(&ones(&[4]))),
        row!(
            UnsupportedDType,
            "add" @ "ops/binary.rs::compute",
            ones_as(&[2], DType::I64).add(&ones_as(&[2], DType::I64))
        ),
        row!(UnsupportedDType, "neg" @ "ops/unary.rs::apply_with", ones_as(&[2], DType::I64).neg()),
        row!(InvalidArgument, "clamp", ones(&[2]).clamp(None, None)),
        row!(UnsupportedDType, "compare" @ "backend/cpu/mod.rs::unsupported", {
            let z = Tensor::ones(2, DType::C128)?;
            z.lt(&z)
        }),
        row!(DTypeMismatch, "where", Tensor::where_cond(&ones(&[2]), &ones(&[2]), &ones(&[2]))),
        row!(
            DTypeMismatch,
            "logical_and",
            ones_as(&[2], DType::Bool).logical_and(&ones_as(&[2], DType::I64))
        ),
        row!(
            DTypeMismatch,
            "isclose",
            ones(&[2]).isclose(&ones_as(&[2], DType::F32), 1e-5, 1e-8, false)
        ),
        row!(InvalidArgument, "isclose", ones(&[2]).isclose(&ones(&[2]), -1.0, 1e-8, false)),
        // complex
        row!(UnsupportedDType, "imag", ones(&[2]).imag()),
        row!(DTypeMismatch, "complex", Tensor::complex(&ones(&[2]), &ones_as(&[2], DType::F32))),
        row!(
            DTypeMismatch,
            "polar",
            Tensor::polar(&ones_as(&[2], DType::I64), &ones_as(&[2], DType::I64))
        ),
        row!(UnsupportedDType, "view_as_real", ones(&[2]).view_as_real()),
        row!(UnsupportedDType, "view_as_complex", ones_as(&[2], DType::I64).view_as_complex()),
        row!(BadShape, "view_as_complex", ones(&[2, 3]).view_as_complex()),
        // indexing
        row!(
            DTypeMismatch,
            "gather" @ "ops/index.rs::check_index",
            ones(&[2, 3]).gather(1, &ones(&[2, 1]))
        ),
        row!(ShapeMismatch, "gather", ones(&[2, 3]).gather(1, &index(&[0]))),
        row!(ShapeMismatch, "gather", ones(&[2, 3]).gather(1, &Tensor::zeros((3, 1), DType::I64)?)),
        row!(
            IndexOutOfRange,
            "gather",
            ones(&[3, 2]).gather(1, &Tensor::from_vec(vec![0i64, 2], (1, 2))?)
        ),
        row!(DTypeMismatch, "scatter_add", {
            let ix = Tensor::zeros((1, 1), DType::I64)?;
            ones(&[2, 3]).scatter_add(0, &ix, &ones_as(&[1, 1], DType::F32))
        }),
        row!(ShapeMismatch, "scatter_add", ones(&[2, 3]).scatter_add(0, &index(&[0]), &ones(&[1]))),
        row!(ShapeMismatch, "scatter_add", {
            let ix = Tensor::zeros((2, 2), DType::I64)?;
            ones(&[2, 3]).scatter_add(0, &ix, &ones(&[1, 1]))
        }),
        row!(IndexOutOfRange, "scatter_add", {
            let ix = Tensor::from_vec(vec![0i64, 2], (1, 2))?;
            ones(&[3, 2]).scatter_add(1, &ix, &ones(&[1, 2]))
        }),
        row!(
            BadShape,
            "index_select",
            ones(&[3]).index_select(0, &Tensor::zeros((1, 1), DType::I64)?)
        ),
        row!(BadShape, "index_select", scalar().index_select(0, &index(&[0, 0]))),
        row!(IndexOutOfRange, "index_select", ones(&[3, 2]).index_select(0, &index(&[0, 5]))),
    ]
}

/// The rows of the linear algebra ops.
pub fn linalg_rows() -> Vec<Row> {
    vec![
        // products
        row!(
            DTypeMismatch,
            "matmul" @ "linalg/matmul.rs::check_dtypes",
            ones(&[2, 2]).matmul(&ones_as(&[2, 2], DType::F32))
        ),
        row!(
            UnsupportedDType,
            "matmul" @ "linalg/matmul.rs::check_dtypes",
            ones_as(&[2, 2], DType::I64).matmul(&ones_as(&[2, 2], DType::I64))
        ),
        row!(BadShape, "matmul", scalar().matmul(&ones(&[2]))),
        row!(ShapeMismatch, "matmul", ones(&[2, 3]).matmul(&ones(&[2, 3]))),
        row!(ShapeMismatch, "matmul", ones(&[2, 2, 2]).matmul(&ones(&[3, 2, 2]))),
        row!(BadShape, "mm", ones(&[2]).mm(&ones(&[2, 2]))),
        row!(BadShape, "bmm", ones(&[2, 2]).bmm(&ones(&[2, 2, 2]))),
        row!(ShapeMismatch, "bmm", ones(&[2, 2, 2]).bmm(&ones(&[3, 2, 2]))),
        row!(BadShape, "mv", ones(&[2, 2]).mv(&ones(&[2, 2]))),
        row!(BadShape, "dot", ones(&[2, 2]).dot(&ones(&[2]))),
        row!(ShapeMismatch, "dot", ones(&[2]).dot(&ones(&[3]))),
        row!(ShapeMismatch, "inner", ones(&[2, 3]).inner(&ones(&[2]))),
        row!(BadShape, "outer" @ "linalg/products.rs::need_rank", ones(&[2, 2]).outer(&ones(&[2]))),
        row!(DTypeMismatch, "linalg.vecdot", ones(&[2]).vecdot(&ones_as(&[2], DType::F32), -1)),
        row!(
            DTypeMismatch,
            "addmm" @ "linalg/products.rs::affine",
            ones_as(&[2, 2], DType::F32).addmm(&ones(&[2, 2]), &ones(&[2, 2]), 1.0, 1.0)
        ),
        row!(
            ShapeMismatch,
            "addmm" @ "linalg/products.rs::affine",
            ones(&[3, 2, 2]).addmm(&ones(&[2, 2]), &ones(&[2, 2]), 1.0, 1.0)
        ),
        row!(BadShape, "nn.functional.linear", ones(&[2, 3]).linear(&ones(&[2, 2, 3]), None)),
        row!(BadShape, "nn.functional.linear", scalar().linear(&ones(&[2, 1]), None)),
        row!(ShapeMismatch, "nn.functional.linear", ones(&[2, 3]).linear(&ones(&[4, 2]), None)),
        row!(
            DTypeMismatch,
            "nn.functional.linear",
            ones(&[1, 2]).linear(&ones(&[3, 2]), Some(&ones_as(&[3], DType::F32)))
        ),
        row!(
            ShapeMismatch,
            "nn.functional.linear",
            ones(&[1, 2]).linear(&ones(&[3, 2]), Some(&ones(&[2, 3])))
        ),
        row!(InvalidArgument, "linalg.multi_dot", Tensor::multi_dot(&[&ones(&[2, 2])])),
        row!(BadShape, "linalg.multi_dot", Tensor::multi_dot(&[&ones(&[2, 2, 2]), &ones(&[2, 2])])),
        row!(
            DTypeMismatch,
            "linalg.multi_dot",
            Tensor::multi_dot(&[&ones(&[2, 2]), &ones_as(&[2, 2], DType::F32)])
        ),
        row!(
            ShapeMismatch,
            "linalg.multi_dot",
            Tensor::multi_dot(&[&ones(&[2, 3]), &ones(&[2, 2])])
        ),
        // structure
        row!(BadShape, "tril" @ "linalg/structure.rs::tri", ones(&[2]).tril(0)),
        row!(BadShape, "trace", ones(&[2]).trace()),
        row!(BadShape, "diag", ones(&[2, 2, 2]).diag(0)),
        row!(BadShape, "diag_embed", scalar().diag_embed(0, -2, -1)),
        row!(InvalidArgument, "diag_embed", ones(&[2]).diag_embed(0, 0, -2)),
        row!(DTypeMismatch, "linalg.cross", ones(&[3]).cross(&ones_as(&[3], DType::F32), -1)),
        row!(ShapeMismatch, "linalg.cross", ones(&[3]).cross(&ones(&[1, 3]), -1)),
        row!(BadShape, "linalg.cross", ones(&[2]).cross(&ones(&[2]), -1)),
        row!(InvalidArgument, "linalg.vander", ones(&[3]).vander(Some(1))),
        row!(BadShape, "linalg.matrix_power", ones(&[2, 3]).matrix_power(2)),
        row!(Singular, "linalg.matrix_power", zeros(&[2, 2]).matrix_power(-1)),
        row!(
            UnsupportedDType,
            "linalg.matrix_power",
            ones_as(&[2, 2], DType::I64).matrix_power(-1)
        ),
        row!(InvalidArgument, "linalg.matrix_power", eye(2).matrix_power(i64::MIN)),
        // argument checks shared by the factorisations
        row!(
            BadShape,
            "linalg.qr" @ "linalg/util.rs::check_matrix",
            linalg::qr(&ones(&[2]), QrMode::Reduced)
        ),
        row!(BadShape, "linalg.det" @ "linalg/util.rs::check_square", linalg::det(&ones(&[2, 3]))),
        row!(
            UnsupportedDType,
            "linalg.cholesky" @ "linalg/util.rs::check_float",
            linalg::cholesky(&ones_as(&[2, 2], DType::I64), Uplo::Lower)
        ),
        row!(
            DTypeMismatch,
            "linalg.solve" @ "linalg/util.rs::check_same_dtype",
            linalg::solve(&eye(2), &ones_as(&[2, 1], DType::F32), Side::Left)
        ),
        row!(
            ShapeMismatch,
            "linalg.solve" @ "linalg/util.rs::broadcast_batch",
            linalg::solve(&ones(&[2, 2, 2]), &ones(&[3, 2, 1]), Side::Left)
        ),
        // cholesky
        row!(
            NotPositiveDefinite,
            "linalg.cholesky" @ "linalg/cholesky.rs::check_info",
            linalg::cholesky(&eye(2).neg()?, Uplo::Lower)
        ),
        row!(BadShape, "cholesky_solve", linalg::cholesky_solve(&ones(&[2]), &eye(2), Uplo::Lower)),
        row!(
            ShapeMismatch,
            "cholesky_solve",
            linalg::cholesky_solve(&ones(&[3, 1]), &eye(2), Uplo::Lower)
        ),
        // lu
        row!(
            Singular,
            "linalg.lu_factor" @ "linalg/lu.rs::check_info",
            linalg::lu_factor(&zeros(&[2, 2]), true)
        ),
        row!(Singular, "linalg.inv" @ "linalg/lu.rs::check_info", linalg::inv(&zeros(&[2, 2]))),
        row!(
            Singular,
            "linalg.solve" @ "linalg/lu.rs::check_info",
            linalg::solve(&zeros(&[2, 2]), &ones(&[2, 1]), Side::Left)
        ),
        row!(
            Singular,
            "linalg.ldl_factor" @ "linalg/lu.rs::check_info",
            linalg::ldl_factor(&zeros(&[2, 2]), false)
        ),
        row!(UnsupportedDType, "lu_unpack", {
            let f = linalg::lu_factor(&eye(2), true)?;
            linalg::lu_unpack(&f.lu, &f.pivots.to_dtype(DType::F64)?)
        }),
        row!(ShapeMismatch, "lu_unpack", linalg::lu_unpack(&eye(2), &index(&[1]))),
        row!(
            InvalidArgument,
            "lu_unpack" @ "backend/cpu/mod.rs::permutation",
            linalg::lu_unpack(&eye(2), &index(&[0, 3]))
        ),
        row!(
            UnsupportedDType,
            "linalg.lu_solve" @ "linalg/lu.rs::check_factored",
            linalg::lu_solve(&eye(2), &ones(&[2]), &ones(&[2, 1]), Side::Left, false)
        ),
        row!(
            ShapeMismatch,
            "linalg.lu_solve" @ "linalg/lu.rs::check_factored",
            linalg::lu_solve(&eye(2), &index(&[1]), &ones(&[2, 1]), Side::Left, false)
        ),
        row!(
            BadShape,
            "linalg.lu_solve" @ "linalg/lu.rs::check_factored",
            linalg::lu_solve(&eye(2), &index(&[1, 2]), &ones(&[2]), Side::Left, false)
        ),
        row!(
            ShapeMismatch,
            "linalg.lu_solve",
            linalg::lu_solve(&eye(2), &index(&[1, 2]), &ones(&[3, 1]), Side::Left, false)
        ),
        row!(
            InvalidArgument,
            "linalg.lu_solve",
            linalg::lu_solve(&eye(2), &index(&[0, 3]), &ones(&[2, 1]), Side::Left, false)
        ),
        // ldl
        row!(NotDifferentiable, "linalg.ldl_factor", {
            let a = leaf(&eye(2));
            linalg::ldl_factor(&a, false)?.ld.sum()?.backward()
        }),
        row!(
            ShapeMismatch,
            "linalg.ldl_solve",
            linalg::ldl_solve(&eye(2), &index(&[1, 2]), &ones(&[3, 1]), false)
        ),
        row!(
            InvalidArgument,
            "linalg.ldl_solve",
            linalg::ldl_solve(&eye(2), &index(&[0, 0]), &ones(&[2, 1]), false)
        ),
        row!(NotDifferentiable, "linalg.ldl_solve", {
            let f = linalg::ldl_factor(&eye(2), false)?;
            linalg::ldl_solve(&leaf(&f.ld), &f.pivots, &ones(&[2, 1]), false)?.sum()?.backward()
        }),
        // solve, inverse
        row!(
            ShapeMismatch,
            "linalg.solve" @ "linalg/solve.rs::solve_impl",
            linalg::solve(&eye(2), &ones(&[3, 1]), Side::Left)
        ),
        row!(
            BadShape,
            "linalg.solve" @ "linalg/solve.rs::solve_impl",
            linalg::solve(&eye(2), &scalar(), Side::Left)
        ),
        row!(InvalidArgument, "linalg.tensorinv", linalg::tensorinv(&eye(2), 0)),
        row!(ShapeMismatch, "linalg.tensorinv", linalg::tensorinv(&ones(&[2, 3]), 1)),
        row!(
            InvalidArgument,
            "linalg.tensorsolve",
            linalg::tensorsolve(&eye(2), &ones(&[2]), Some(&[0, 0]))
        ),
        row!(
            ShapeMismatch,
            "linalg.tensorsolve",
            linalg::tensorsolve(&eye(2), &ones(&[2, 2, 2]), None)
        ),
        row!(
            BadShape,
            "linalg.solve_triangular",
            linalg::solve_triangular(&eye(2), &ones(&[2]), Uplo::Lower, Side::Left, Diag::NonUnit)
        ),
        row!(
            ShapeMismatch,
            "linalg.solve_triangular",
            linalg::solve_triangular(
                &eye(2),
                &ones(&[3, 1]),
                Uplo::Lower,
                Side::Left,
                Diag::NonUnit
            )
        ),
        row!(
            DTypeMismatch,
            "linalg.solve_triangular",
            linalg::solve_triangular(
                &eye(2),
                &ones_as(&[2, 1], DType::C128),
                Uplo::Lower,
                Side::Left,
                Diag::NonUnit
            )
        ),
        row!(InvalidArgument, "linalg.polar", linalg::polar(&ones(&[2, 3]))),
        row!(
            BadShape,
            "linalg.lstsq",
            linalg::lstsq(&ones(&[2]), &ones(&[2]), linalg::LstsqOptions::default())
        ),
        row!(
            ShapeMismatch,
            "linalg.lstsq",
            linalg::lstsq(&eye(2), &ones(&[3, 1]), LstsqDriver::Gelsd)
        ),
        // qr, svd, eigen
        row!(NotDifferentiable, "linalg.qr", {
            let a = leaf(&eye(2));
            linalg::qr(&a, QrMode::R)?.r.sum()?.backward()
        }),
        row!(NotDifferentiable, "linalg.qr", {
            let a = leaf(&ones(&[3, 2]));
            linalg::qr(&a, QrMode::Complete)?.q.sum()?.backward()
        }),
        row!(
            BadShape,
            "linalg.householder_product",
            linalg::householder_product(&ones(&[2]), &ones(&[1]))
        ),
        row!(
            BadShape,
            "linalg.householder_product",
            linalg::householder_product(&ones(&[2, 3]), &ones(&[2]))
        ),
        row!(
            ShapeMismatch,
            "linalg.householder_product",
            linalg::householder_product(&ones(&[3, 2]), &ones(&[3]))
        ),
        row!(
            DTypeMismatch,
            "linalg.householder_product",
            linalg::householder_product(&ones(&[3, 2]), &ones_as(&[2], DType::F32))
        ),
        row!(NoConvergence, "linalg.svd", linalg::svd(&nan_matrix(), false)),
        row!(NotDifferentiable, "linalg.svd", {
            // a loss that depends on the basis of the repeated singular value 1
            let a = leaf(&eye(2));
            linalg::svd(&a, false)?.u.mul(&weights())?.sum()?.backward()
        }),
        row!(
            NoConvergence,
            "linalg.eigh" @ "linalg/util.rs::eigen_outputs",
            linalg::eigh(&nan_matrix(), Uplo::Lower)
        ),
        row!(
            NoConvergence,
            "linalg.eig" @ "linalg/util.rs::eigen_outputs",
            linalg::eig(&nan_matrix())
        ),
        row!(NoConvergence, "linalg.eigvals", linalg::eigvals(&leaf(&nan_matrix()))),
        row!(NotDifferentiable, "linalg.eigh", {
            // a loss that depends on the basis of the repeated eigenvalue 1
            let a = leaf(&eye(2));
            linalg::eigh(&a, Uplo::Lower)?.eigenvectors.mul(&weights())?.sum()?.backward()
        }),
        row!(NotDifferentiable, "linalg.eig", {
            let a = leaf(&eye(2));
            linalg::eig(&a)?.eigenvectors.real()?.sum()?.backward()
        }),
        row!(NoConvergence, "linalg.det", {
            // a singular matrix's gradient takes the SVD, which refuses a NaN
            let a = leaf(&t(&[0.0, f64::NAN, 0.0, 0.0], (2, 2)));
            linalg::det(&a)?.backward()
        }),
        // norms
        row!(
            InvalidArgument,
            "linalg.vector_norm",
            linalg::vector_norm(&zeros(&[0]), f64::INFINITY, None, false)
        ),
        row!(
            InvalidArgument,
            "linalg.vector_norm",
            linalg::vector_norm(&ones(&[2]), NormOrd::Fro, None, false)
        ),
        row!(
            InvalidArgument,
            "linalg.matrix_norm",
            linalg::matrix_norm(&ones(&[2, 2]), NormOrd::P(3.0), [-2, -1], false)
        ),
        row!(
            InvalidArgument,
            "linalg.matrix_norm",
            linalg::matrix_norm(&zeros(&[3, 0]), NormOrd::P(-1.0), [-2, -1], false)
        ),
        row!(
            InvalidArgument,
            "linalg.matrix_norm",
            linalg::norm(&ones(&[2, 2]), Some(NormOrd::Fro), Some(&[0]), false)
        ),
        row!(
            InvalidArgument,
            "linalg.norm",
            linalg::norm(&ones(&[2, 2, 2]), None, Some(&[0, 1, 2]), false)
        ),
        row!(
            BadShape,
            "linalg.norm",
            linalg::norm(&ones(&[2, 2, 2]), Some(NormOrd::P(2.0)), None, false)
        ),
        row!(InvalidArgument, "linalg.cond", linalg::cond(&eye(2), Some(NormOrd::P(3.0)))),
    ]
}

/// The rows of autograd, forward mode, the function transforms, gradcheck, autocast and
/// the optimisers.
pub fn autograd_rows() -> Vec<Row> {
    vec![
        // reverse mode
        row!(ShapeMismatch, "autograd.grad", leaf(&ones(&[3])).exp()?.backward_with(&ones(&[2]))),
        row!(InvalidArgument, "autograd.grad", {
            let x = leaf(&ones(&[1]));
            autograd::grad(&[&x.exp()?], &[], &[&x], GradOptions::default())
        }),
        row!(
            InvalidArgument,
            "backward" @ "autograd/mod.rs::real_seed",
            Tensor::zeros((), DType::C128)?.backward()
        ),
        // a complex cotangent of a real output (a real one is cast to the output's dtype)
        row!(DTypeMismatch, "autograd.grad", {
            let a = leaf(&eye(2));
            a.matmul(&eye(2))?.backward_with(&ones_as(&[2, 2], DType::C128))
        }),
        // forward mode
        row!(
            InvalidArgument,
            "make_dual" @ "autograd/forward.rs::innermost",
            make_dual(&ones(&[2]), &ones(&[2]))
        ),
        row!(
            InvalidArgument,
            "unpack_dual" @ "autograd/forward.rs::innermost",
            unpack_dual(&ones(&[2]))
        ),
        row!(UnsupportedDType, "make_dual", {
            let _level = dual_level();
            make_dual(&ones_as(&[2], DType::I64), &ones_as(&[2], DType::I64))
        }),
        row!(ShapeMismatch, "make_dual", {
            let _level = dual_level();
            make_dual(&ones(&[2]), &ones(&[3]))
        }),
        row!(DTypeMismatch, "make_dual", {
            let _level = dual_level();
            make_dual(&ones(&[2]), &ones_as(&[2], DType::F32))
        }),
        // function transforms
        row!(
            UnsupportedDType,
            "func.grad" @ "func.rs::reverse_inputs",
            func::grad(|x| x[0].sum(), &[ones_as(&[2], DType::I64)])
        ),
        row!(
            InvalidArgument,
            "func.grad",
            func::grad(|x| Tensor::complex(&x[0], &x[0])?.sum(), &[ones(&[2])])
        ),
        row!(InvalidArgument, "func.vjp", {
            let (_, pullback) = func::vjp(|x| Ok(vec![x[0].exp()?]), &[ones(&[2])])?;
            pullback.apply(&[])
        }),
        row!(ShapeMismatch, "func.vjp", {
            let (_, pullback) = func::vjp(|x| Ok(vec![x[0].exp()?]), &[ones(&[2])])?;
            pullback.apply(&[ones(&[3])])
        }),
        row!(DTypeMismatch, "func.vjp", {
            let (_, pullback) = func::vjp(|x| Ok(vec![x[0].exp()?]), &[ones(&[2])])?;
            pullback.apply(&[ones_as(&[2], DType::F32)])
        }),
        row!(InvalidArgument, "func.jvp", func::jvp(|x| Ok(vec![x[0].exp()?]), &[ones(&[2])], &[])),
        row!(
            UnsupportedDType,
            "func.jacrev" @ "func.rs::real_only",
            func::jacrev(|x| Ok(vec![x[0].clone()]), &[ceye(2)])
        ),
        row!(
            UnsupportedDType,
            "func.jacrev",
            func::jacrev(|x| Ok(vec![x[0].gt_scalar(0.0)?]), &[ones(&[2])])
        ),
        row!(
            InvalidArgument,
            "func.jacfwd",
            func::jacfwd_with(
                |x| Ok(vec![x[0].exp()?]),
                &[ones(&[2])],
                JacOptions { chunk_size: Some(0) }
            )
        ),
        row!(
            UnsupportedDType,
            "func.jacfwd",
            func::jacfwd(|x| Ok(vec![x[0].clone()]), &[ones_as(&[2], DType::I64)])
        ),
        // gradcheck
        row!(
            UnsupportedDType,
            "gradcheck",
            gradcheck(
                |x| Ok(vec![x[0].exp()?]),
                &[leaf(&ones_as(&[2], DType::F32))],
                &GradcheckOptions::default()
            )
        ),
        row!(
            UnsupportedDType,
            "gradcheck_forward",
            gradcheck_forward(
                |x| Ok(vec![x[0].exp()?]),
                &[leaf(&ones_as(&[2], DType::F32))],
                &GradcheckOptions::default()
            )
        ),
        // autocast
        row!(InvalidArgument, "autocast", autocast(DType::F32, || Ok(()))),
        // optimisers
        row!(UnsupportedDType, "optim.Param", Param::new(&ones_as(&[2], DType::I64))),
        row!(ShapeMismatch, "optim.Param.set", param(&[2]).set(&ones(&[3]))),
        row!(DTypeMismatch, "optim.Param.set", param(&[2]).set(&ones_as(&[2], DType::F32))),
        row!(BadShape, "optim.step", Sgd::new(0.1).step(&mut [param(&[2])], |x| x[0].exp())),
        row!(
            UnsupportedDType,
            "optim.step",
            Sgd::new(0.1).step(&mut [param(&[2])], |x| x[0].sum()?.to_dtype(DType::I64))
        ),
        row!(
            InvalidArgument,
            "optim.SGD",
            Sgd::new(-1.0).update(&mut [param(&[2])], &[ones(&[2])])
        ),
        row!(
            InvalidArgument,
            "optim.SGD",
            Sgd::new(0.1).nesterov(true).update(&mut [param(&[2])], &[ones(&[2])])
        ),
        row!(
            InvalidArgument,
            "optim.Adam",
            Adam::new(0.1).betas((1.0, 0.9)).update(&mut [param(&[2])], &[ones(&[2])])
        ),
        row!(
            InvalidArgument,
            "optim.LBFGS",
            Lbfgs::default().history_size(0).step(&mut [param(&[2])], |x| x[0].sum())
        ),
        row!(
            InvalidArgument,
            "optim.SGD" @ "optim/mod.rs::check_grads",
            Sgd::new(0.1).update(&mut [param(&[2])], &[])
        ),
        row!(
            ShapeMismatch,
            "optim.Adam" @ "optim/mod.rs::check_grads",
            Adam::new(0.1).update(&mut [param(&[2])], &[ones(&[3])])
        ),
        row!(InvalidArgument, "optim.SGD" @ "optim/mod.rs::check_signature", {
            let mut sgd = Sgd::new(0.1);
            sgd.update(&mut [param(&[2])], &[ones(&[2])])?;
            sgd.update(&mut [param(&[3])], &[ones(&[3])])
        }),
        row!(InvalidArgument, "optim.LBFGS" @ "optim/mod.rs::check_signature", {
            let mut lbfgs = Lbfgs::default().max_iter(1);
            lbfgs.step(&mut [param(&[2])], |x| x[0].square()?.sum())?;
            lbfgs.step(&mut [param(&[3])], |x| x[0].square()?.sum())
        }),
    ]
}

/// The rows of the interop conversions and the file formats (their features on).
#[cfg(all(
    feature = "ndarray",
    feature = "nalgebra",
    feature = "faer",
    feature = "npy",
    feature = "safetensors"
))]
pub fn interop_rows() -> Vec<Row> {
    use cotangent::io::{npy, safetensors};
    const MISSING: &str = "/nonexistent/cotangent/x.npy";
    vec![
        row!(DTypeMismatch, "to_ndarray", ones(&[2]).to_ndarray::<i64>()),
        row!(DTypeMismatch, "as_ndarray" @ "tensor/mod.rs::host_parts", ones(&[2]).as_ndarray::<f32>()),
        row!(BadShape, "to_dmatrix" @ "interop/mod.rs::matrix_parts", ones(&[2]).to_dmatrix::<f64>()),
        row!(
            InvalidArgument,
            "as_faer",
            ones(&[3, 4]).slice(1, 0, 4, 2)?.as_faer::<f64>().map(drop)
        ),
        row!(
            InvalidArgument,
            "as_nalgebra" @ "interop/mod.rs::distinct_elements",
            ones(&[1, 3]).expand(&[2, 3])?.as_nalgebra::<f64>().map(drop)
        ),
        row!(BadFile, "npy.from_bytes" @ "io/mod.rs::bad_file", npy::from_bytes(b"not npy")),
        row!(Io, "npy.load" @ "io/mod.rs::io_error", npy::load(MISSING)),
        row!(UnsupportedDType, "npy.to_bytes" @ "io/npy.rs::put!", npy::to_bytes(&ones_as(&[2], DType::Bf16))),
        row!(
            InvalidArgument,
            "npy.savez",
            npy::savez(MISSING, [("a", &ones(&[1])), ("a", &ones(&[1]))])
        ),
        row!(
            UnsupportedDType,
            "safetensors.save" @ "io/safetensors.rs::entry",
            safetensors::save([("z", &ones_as(&[1], DType::C128))])
        ),
        row!(
            InvalidArgument,
            "safetensors.save" @ "io/safetensors.rs::serialize",
            safetensors::save([("a", &ones(&[1])), ("a", &ones(&[1]))])
        ),
    ]
}

/// A user-defined op whose backward breaks the contract in the way its name says.
struct Broken(&'static str);

impl autograd::Function for Broken {
    fn name(&self) -> &'static str {
        self.0
    }
    fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        if self.0 == "no_outputs" {
            return Ok(vec![]);
        }
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(
        &self,
        _cx: &autograd::FunctionCtx<'_>,
        g: &[Option<Tensor>],
    ) -> Result<Vec<Option<Tensor>>> {
        let g = g[0].clone().ok_or(cotangent::Error::UnusedInput { index: 0 })?;
        Ok(match self.0 {
            "two_grads" => vec![Some(g.clone()), Some(g)],
            "summed_grad" => vec![Some(g.sum()?)],
            _ => vec![Some(Tensor::complex(&g, &g)?)],
        })
    }
}

/// The gradient through [`Broken`] named `what`.
fn broken(what: &'static str) -> Result<Tensor> {
    use autograd::Function;
    let x = leaf(&ones(&[2]));
    Broken(what).apply(&[&x])?.remove(0).sum()?.grad_wrt(&x)
}

/// The rows of user-defined ops (`autograd::Function`), named by the user.
pub fn function_rows() -> Vec<Row> {
    use autograd::Function;
    vec![
        row!(InvalidArgument, "no_outputs" @ "autograd/function.rs::apply", Broken("no_outputs").apply(&[&ones(&[1])])),
        row!(InvalidArgument, "two_grads" @ "autograd/function.rs::checked", broken("two_grads")),
        row!(ShapeMismatch, "summed_grad" @ "autograd/function.rs::checked", broken("summed_grad")),
        row!(DTypeMismatch, "complex_grad" @ "autograd/function.rs::checked", broken("complex_grad")),
    ]
}

/// Every row.
pub fn rows() -> Vec<Row> {
    let mut all = tensor_rows();
    all.extend(linalg_rows());
    all.extend(autograd_rows());
    all.extend(function_rows());
    #[cfg(all(
        feature = "ndarray",
        feature = "nalgebra",
        feature = "faer",
        feature = "npy",
        feature = "safetensors"
    ))]
    all.extend(interop_rows());
    all
}
