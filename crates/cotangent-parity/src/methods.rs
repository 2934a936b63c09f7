//! The library's public differentiable ops, by method name, and the runner op that
//! exercises each: the one place that says how the Rust API maps to PyTorch names.
//!
//! The crate's tests scan the library's op sources (`src/ops/*.rs`, `src/linalg/*.rs`,
//! `src/tensor/view.rs`) for public methods and fail when one is missing here, when an
//! entry here no longer exists there, when an op named here has no runner entry, or when a
//! runner op has no fixtures.

/// How a library method is covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Evaluated by the runner op of this PyTorch name.
    Op(&'static str),
    /// Not an op of its own: why (a PyTorch property or Python syntax with no function
    /// name, or a helper with no values to compare).
    NotAnOp(&'static str),
}

/// Every public method of the library's op modules, and its coverage.
pub const LIBRARY_METHODS: &[(&str, Coverage)] = &[
    // src/ops/unary.rs
    ("neg", Coverage::Op("neg")),
    ("abs", Coverage::Op("abs")),
    ("sign", Coverage::Op("sign")),
    ("exp", Coverage::Op("exp")),
    ("expm1", Coverage::Op("expm1")),
    ("log", Coverage::Op("log")),
    ("log1p", Coverage::Op("log1p")),
    ("sqrt", Coverage::Op("sqrt")),
    ("rsqrt", Coverage::Op("rsqrt")),
    ("square", Coverage::Op("square")),
    ("reciprocal", Coverage::Op("reciprocal")),
    ("sin", Coverage::Op("sin")),
    ("cos", Coverage::Op("cos")),
    ("tan", Coverage::Op("tan")),
    ("tanh", Coverage::Op("tanh")),
    ("sigmoid", Coverage::Op("sigmoid")),
    ("relu", Coverage::Op("relu")),
    ("add_scalar", Coverage::Op("add")),
    ("sub_scalar", Coverage::Op("sub")),
    ("rsub_scalar", Coverage::Op("rsub")),
    ("mul_scalar", Coverage::Op("mul")),
    ("div_scalar", Coverage::Op("div")),
    ("pow_scalar", Coverage::Op("pow")),
    ("clamp", Coverage::Op("clamp")),
    ("softplus", Coverage::Op("nn.functional.softplus")),
    ("conj_physical", Coverage::Op("conj_physical")),
    ("sgn", Coverage::Op("sgn")),
    // src/ops/complex.rs
    ("conj", Coverage::Op("conj")),
    ("real", Coverage::Op("real")),
    ("imag", Coverage::Op("imag")),
    ("angle", Coverage::Op("angle")),
    ("complex", Coverage::Op("complex")),
    ("polar", Coverage::Op("polar")),
    ("view_as_real", Coverage::Op("view_as_real")),
    ("view_as_complex", Coverage::Op("view_as_complex")),
    // src/ops/binary.rs
    ("add", Coverage::Op("add")),
    ("sub", Coverage::Op("sub")),
    ("mul", Coverage::Op("mul")),
    ("div", Coverage::Op("div")),
    ("pow", Coverage::Op("pow")),
    ("maximum", Coverage::Op("maximum")),
    ("minimum", Coverage::Op("minimum")),
    ("atan2", Coverage::Op("atan2")),
    ("where_cond", Coverage::Op("where")),
    ("logical_and", Coverage::Op("logical_and")),
    ("isclose", Coverage::Op("isclose")),
    ("allclose", Coverage::Op("allclose")),
    ("eq", Coverage::Op("eq")),
    ("eq_scalar", Coverage::Op("eq")),
    ("ne", Coverage::Op("ne")),
    ("ne_scalar", Coverage::Op("ne")),
    ("lt", Coverage::Op("lt")),
    ("lt_scalar", Coverage::Op("lt")),
    ("le", Coverage::Op("le")),
    ("le_scalar", Coverage::Op("le")),
    ("gt", Coverage::Op("gt")),
    ("gt_scalar", Coverage::Op("gt")),
    ("ge", Coverage::Op("ge")),
    ("ge_scalar", Coverage::Op("ge")),
    // src/ops/reduce.rs
    ("sum", Coverage::Op("sum")),
    ("sum_dims", Coverage::Op("sum")),
    ("mean", Coverage::Op("mean")),
    ("mean_dims", Coverage::Op("mean")),
    ("prod", Coverage::Op("prod")),
    ("prod_dims", Coverage::Op("prod")),
    ("amax", Coverage::Op("amax")),
    ("amin", Coverage::Op("amin")),
    ("logsumexp", Coverage::Op("logsumexp")),
    ("var", Coverage::Op("var")),
    ("std", Coverage::Op("std")),
    // (`Tensor::norm`, the 2-norm of all elements, and `linalg::norm` share the name:
    // torch.norm covers the first, linalg.norm the second, both with fixtures)
    ("norm", Coverage::Op("norm")),
    // src/ops/index.rs
    ("gather", Coverage::Op("gather")),
    ("scatter_add", Coverage::Op("scatter_add")),
    ("index_select", Coverage::Op("index_select")),
    // src/ops/cast.rs
    ("to_dtype", Coverage::Op("to")),
    // src/ops/shape.rs
    ("cat", Coverage::Op("cat")),
    ("stack", Coverage::Op("stack")),
    ("split", Coverage::Op("split")),
    ("split_with_sizes", Coverage::Op("split")),
    ("chunk", Coverage::Op("chunk")),
    ("flip", Coverage::Op("flip")),
    ("pad", Coverage::Op("nn.functional.pad")),
    ("repeat", Coverage::Op("repeat")),
    ("unbind", Coverage::Op("unbind")),
    // src/tensor/view.rs
    ("reshape", Coverage::Op("reshape")),
    ("reshape_infer", Coverage::Op("reshape")),
    ("view", Coverage::Op("view")),
    ("permute", Coverage::Op("permute")),
    ("transpose", Coverage::Op("transpose")),
    ("t", Coverage::Op("t")),
    ("mT", Coverage::NotAnOp("torch.Tensor.mT is a property, not a function: transpose(-2, -1)")),
    ("mH", Coverage::NotAnOp("torch.Tensor.mH is a property, not a function: mT for real dtypes")),
    ("broadcast_to", Coverage::Op("broadcast_to")),
    ("expand", Coverage::Op("expand")),
    ("narrow", Coverage::Op("narrow")),
    ("slice", Coverage::NotAnOp("Python slicing x[a:b:c] has no torch function name")),
    ("select", Coverage::Op("select")),
    ("unsqueeze", Coverage::Op("unsqueeze")),
    ("squeeze_dim", Coverage::Op("squeeze")),
    ("squeeze", Coverage::Op("squeeze")),
    ("flatten", Coverage::Op("flatten")),
    ("diagonal", Coverage::Op("diagonal")),
    ("contiguous", Coverage::NotAnOp("changes the memory layout only; the values are the input's")),
    ("sum_to", Coverage::Op("sum_to_size")),
    // src/linalg/matmul.rs
    ("matmul", Coverage::Op("matmul")),
    ("mm", Coverage::Op("mm")),
    ("bmm", Coverage::Op("bmm")),
    ("mv", Coverage::Op("mv")),
    ("dot", Coverage::Op("dot")),
    // src/linalg/products.rs
    ("vdot", Coverage::Op("vdot")),
    ("inner", Coverage::Op("inner")),
    ("outer", Coverage::Op("outer")),
    ("vecdot", Coverage::Op("linalg.vecdot")),
    ("multi_dot", Coverage::Op("linalg.multi_dot")),
    ("addmm", Coverage::Op("addmm")),
    ("addbmm", Coverage::Op("addbmm")),
    ("baddbmm", Coverage::Op("baddbmm")),
    ("addmv", Coverage::Op("addmv")),
    ("addr", Coverage::Op("addr")),
    ("linear", Coverage::Op("nn.functional.linear")),
    // src/linalg/structure.rs
    ("kron", Coverage::Op("kron")),
    ("trace", Coverage::Op("trace")),
    ("diag", Coverage::Op("diag")),
    ("diag_embed", Coverage::Op("diag_embed")),
    ("tril", Coverage::Op("tril")),
    ("triu", Coverage::Op("triu")),
    ("cross", Coverage::Op("linalg.cross")),
    ("vander", Coverage::Op("linalg.vander")),
    ("matrix_power", Coverage::Op("linalg.matrix_power")),
    // src/linalg/triangular.rs
    ("solve_triangular", Coverage::Op("linalg.solve_triangular")),
    // src/linalg/cholesky.rs
    ("cholesky", Coverage::Op("linalg.cholesky")),
    ("cholesky_ex", Coverage::Op("linalg.cholesky_ex")),
    ("cholesky_solve", Coverage::Op("cholesky_solve")),
    ("cholesky_inverse", Coverage::Op("cholesky_inverse")),
    // src/linalg/lu.rs
    ("lu_factor", Coverage::Op("linalg.lu_factor")),
    ("lu_factor_ex", Coverage::Op("linalg.lu_factor_ex")),
    ("lu", Coverage::Op("linalg.lu")),
    ("lu_unpack", Coverage::Op("lu_unpack")),
    ("lu_solve", Coverage::Op("linalg.lu_solve")),
    // src/linalg/ldl.rs
    ("ldl_factor", Coverage::Op("linalg.ldl_factor")),
    ("ldl_factor_ex", Coverage::Op("linalg.ldl_factor_ex")),
    ("ldl_solve", Coverage::Op("linalg.ldl_solve")),
    // src/linalg/solve.rs
    ("solve", Coverage::Op("linalg.solve")),
    ("solve_ex", Coverage::Op("linalg.solve_ex")),
    ("inv", Coverage::Op("linalg.inv")),
    ("inv_ex", Coverage::Op("linalg.inv_ex")),
    ("tensorinv", Coverage::Op("linalg.tensorinv")),
    ("tensorsolve", Coverage::Op("linalg.tensorsolve")),
    // src/linalg/det.rs
    ("det", Coverage::Op("linalg.det")),
    ("slogdet", Coverage::Op("linalg.slogdet")),
    ("logdet", Coverage::Op("logdet")),
    // src/linalg/qr.rs
    ("qr", Coverage::Op("linalg.qr")),
    ("householder_product", Coverage::Op("linalg.householder_product")),
    // src/linalg/svd.rs, pinv.rs, lstsq.rs
    ("svd", Coverage::Op("linalg.svd")),
    ("svdvals", Coverage::Op("linalg.svdvals")),
    // src/linalg/polar.rs: `polar` is listed once, above (the complex constructor's
    // name); the runner op `linalg.polar` has its own fixtures
    ("pinv", Coverage::Op("linalg.pinv")),
    ("matrix_rank", Coverage::Op("linalg.matrix_rank")),
    ("lstsq", Coverage::Op("linalg.lstsq")),
    // src/linalg/norms.rs (`norm`: see src/ops/reduce.rs above)
    ("vector_norm", Coverage::Op("linalg.vector_norm")),
    ("matrix_norm", Coverage::Op("linalg.matrix_norm")),
    ("cond", Coverage::Op("linalg.cond")),
    // src/linalg/eigh.rs
    ("eigh", Coverage::Op("linalg.eigh")),
    ("eigvalsh", Coverage::Op("linalg.eigvalsh")),
    // src/linalg/eig.rs
    ("eig", Coverage::Op("linalg.eig")),
    ("eigvals", Coverage::Op("linalg.eigvals")),
    // src/linalg/matrix_fn.rs
    ("matrix_exp", Coverage::Op("linalg.matrix_exp")),
    // src/linalg/matrix_sqrth.rs
    ("matrix_sqrth", Coverage::Op("linalg.matrix_sqrth")),
];
