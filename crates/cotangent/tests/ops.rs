//! The op table: one OpInfo row per core op (elementwise, reductions, shape and indexing
//! ops, views, casts), checked by the generic runners of `opinfo` (reference values,
//! gradcheck, gradgradcheck, f32 forward, layouts, errors), and hand-computed checks of
//! the cases finite differences cannot judge (ties, zeros, kinks).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod opinfo;

use cotangent::autograd::{self, GradOptions};
use cotangent::{DType, Generator, Result, Tensor};
use opinfo::core_rows::{arange, registry};
use opinfo::{
    assert_values, check_errors, check_f32, check_forward, check_gradients,
    check_gradients_noncontiguous, check_layouts, check_reference, idx, mask, run_all, t64,
};

// ---------------------------------------------------------------------------------------
// the generic runners over the table

#[test]
fn reference_values() {
    run_all(&registry(), check_reference);
}

#[test]
fn gradcheck_f64() {
    run_all(&registry(), |op| check_gradients(op, 1));
}

#[test]
fn forward_mode_f64() {
    run_all(&registry(), check_forward);
}

#[test]
fn gradgradcheck_f64() {
    run_all(&registry(), |op| check_gradients(op, 2));
}

#[test]
fn gradients_of_noncontiguous_inputs() {
    run_all(&registry(), check_gradients_noncontiguous);
}

#[test]
fn f32_forward_matches_f64() {
    run_all(&registry(), check_f32);
}

#[test]
fn noncontiguous_layouts() {
    run_all(&registry(), check_layouts);
}

#[test]
fn invalid_inputs_are_errors_naming_the_op() {
    run_all(&registry(), check_errors);
}

/// Every op the suite is meant to cover has a row, and every row has samples that reach
/// the empty and 0-d cases somewhere in the table.
#[test]
fn table_covers_the_core_ops() {
    let required = [
        "neg",
        "abs",
        "sign",
        "exp",
        "expm1",
        "log",
        "log1p",
        "sqrt",
        "rsqrt",
        "square",
        "reciprocal",
        "sin",
        "cos",
        "tan",
        "tanh",
        "sigmoid",
        "relu",
        "softplus",
        "pow_scalar",
        "add_scalar",
        "sub_scalar",
        "rsub_scalar",
        "mul_scalar",
        "div_scalar",
        "clamp",
        "add",
        "sub",
        "mul",
        "div",
        "pow",
        "maximum",
        "minimum",
        "atan2",
        "where_cond",
        "sum",
        "sum_dims",
        "mean",
        "mean_dims",
        "prod",
        "prod_dims",
        "amax",
        "amin",
        "logsumexp",
        "var",
        "std",
        "norm",
        "cat",
        "stack",
        "split",
        "chunk",
        "flip",
        "pad",
        "repeat",
        "index_select",
        "gather",
        "scatter_add",
        "unbind",
        "reshape",
        "permute",
        "transpose",
        "mT",
        "narrow",
        "slice",
        "select",
        "expand",
        "broadcast_to",
        "squeeze",
        "unsqueeze",
        "flatten",
        "diagonal",
        "contiguous",
        "to_dtype",
    ];
    let table = registry();
    let names: Vec<&str> = table.iter().map(|o| o.name).collect();
    let missing: Vec<&str> = required.iter().copied().filter(|n| !names.contains(n)).collect();
    assert!(missing.is_empty(), "ops without a row: {missing:?}");
    let mut dup = names.clone();
    dup.sort_unstable();
    dup.dedup();
    assert_eq!(dup.len(), names.len(), "duplicate rows");
    for op in &table {
        let samples = op.samples();
        assert!(!samples.is_empty(), "{}: no samples", op.name);
        assert!(
            samples.iter().all(|s| s.reference.is_some()),
            "{}: a sample without reference",
            op.name
        );
    }
}

/// Every public method of the op modules has a row (the meta-test of the design guide: a
/// new op needs a row).
#[test]
fn every_public_op_has_a_row() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = [
        "ops/unary.rs",
        "ops/binary.rs",
        "ops/reduce.rs",
        "ops/shape.rs",
        "ops/index.rs",
        "ops/cast.rs",
        "tensor/view.rs",
    ];
    let table = registry();
    let names: Vec<&str> = table.iter().map(|o| o.name).collect();
    let mut missing = Vec::new();
    for f in files {
        let src = std::fs::read_to_string(root.join(f)).unwrap();
        for line in src.lines() {
            let t = line.trim_start();
            // `pub fn name(` and the rows of the unary/binary macro tables: `name, Name, "torch",`
            let name = if let Some(rest) = t.strip_prefix("pub fn ") {
                let name = rest.split(['(', '<']).next().unwrap_or("");
                if name.starts_with('$') {
                    continue; // a macro's template: its rows are matched below
                }
                name
            } else {
                let parts: Vec<&str> = t.split(", ").collect();
                if parts.len() >= 3
                    && parts[1].starts_with(|c: char| c.is_ascii_uppercase())
                    && parts[2].starts_with('"')
                    && parts[0]
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                {
                    parts[0]
                } else {
                    continue;
                }
            };
            if !names.contains(&name) {
                missing.push(format!("{f}: {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "public ops without an OpInfo row: {missing:?}");
}

// ---------------------------------------------------------------------------------------
// hand-computed checks: ties, zeros and kinks, where finite differences are not valid

/// Gradients of `sum(w * f(x...))` with respect to each input (f64 leaves).
fn grads(inputs: &[Tensor], w: &[f64], f: impl Fn(&[Tensor]) -> Result<Tensor>) -> Vec<Tensor> {
    let xs: Vec<Tensor> = inputs.iter().map(|t| t.with_requires_grad(true).unwrap()).collect();
    let y = f(&xs).unwrap();
    let w = Tensor::from_vec(w.to_vec(), y.shape().clone()).unwrap();
    let refs: Vec<&Tensor> = xs.iter().collect();
    autograd::grad(&[&y], &[Some(&w)], &refs, GradOptions::default())
        .unwrap()
        .into_iter()
        .map(|g| g.unwrap())
        .collect()
}

fn v(x: &[f64]) -> Tensor {
    t64(x.to_vec(), &[x.len()])
}

#[test]
fn maximum_and_minimum_split_ties_evenly() {
    // max(a, b) at a = b sends half the cotangent to each (PyTorch)
    let (a, b) = (v(&[1.0, 2.0, 3.0]), v(&[1.0, 5.0, -3.0]));
    let g = grads(&[a.clone(), b.clone()], &[1.0, 1.0, 1.0], |x| x[0].maximum(&x[1]));
    assert_values(&g[0], &[3], &[0.5, 0.0, 1.0]);
    assert_values(&g[1], &[3], &[0.5, 1.0, 0.0]);
    let g = grads(&[a, b], &[2.0, 2.0, 2.0], |x| x[0].minimum(&x[1]));
    assert_values(&g[0], &[3], &[1.0, 2.0, 0.0]);
    assert_values(&g[1], &[3], &[1.0, 0.0, 2.0]);
    // broadcast tie: a 0-d 2 against [2, 1, 2]: the 0-d input collects 1/2 + 1 + 1/2
    let g = grads(&[Tensor::scalar(2.0f64), v(&[2.0, 1.0, 2.0])], &[1.0, 1.0, 1.0], |x| {
        x[0].maximum(&x[1])
    });
    assert_values(&g[0], &[], &[2.0]);
    assert_values(&g[1], &[3], &[0.5, 0.0, 0.5]);
}

#[test]
fn amax_and_amin_share_ties() {
    // amax([1, 3, 3, 2]) = 3, gradient [0, 1/2, 1/2, 0]
    let x = v(&[1.0, 3.0, 3.0, 2.0]);
    let g = grads(std::slice::from_ref(&x), &[1.0], |x| x[0].amax(&[], false));
    assert_values(&g[0], &[4], &[0.0, 0.5, 0.5, 0.0]);
    // amin over rows of [[1, 1, 1], [4, 0, 0]]: thirds in row 0, halves in row 1
    let m = t64(vec![1.0, 1.0, 1.0, 4.0, 0.0, 0.0], &[2, 3]);
    let g = grads(&[m], &[3.0, 2.0], |x| x[0].amin(&[1], false));
    assert_values(&g[0], &[2, 3], &[1.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
    // the forward of ties is the tied value
    assert_values(&x.amax(&[0], true).unwrap(), &[1], &[3.0]);
}

#[test]
fn prod_gradient_with_zeros() {
    // d/dxᵢ Π x = Π_{j≠i} xⱼ: [2, 0, 3] → [0, 6, 0]; [2, 0, 0] → [0, 0, 0]
    let g = grads(&[v(&[2.0, 0.0, 3.0])], &[1.0], |x| x[0].prod());
    assert_values(&g[0], &[3], &[0.0, 6.0, 0.0]);
    let g = grads(&[v(&[2.0, 0.0, 0.0])], &[1.0], |x| x[0].prod());
    assert_values(&g[0], &[3], &[0.0, 0.0, 0.0]);
    // per row of [[1, 0, 4], [2, 3, 5]]: [0, 4, 0] and [15, 10, 6]
    let m = t64(vec![1.0, 0.0, 4.0, 2.0, 3.0, 5.0], &[2, 3]);
    let g = grads(&[m], &[1.0, 1.0], |x| x[0].prod_dims(&[1], false));
    assert_values(&g[0], &[2, 3], &[0.0, 4.0, 0.0, 15.0, 10.0, 6.0]);
    // a single zero: d/dx x = 1; the empty product is 1 with an empty gradient
    let g = grads(&[v(&[0.0])], &[1.0], |x| x[0].prod());
    assert_values(&g[0], &[1], &[1.0]);
    assert_values(&Tensor::zeros(0, DType::F64).unwrap().prod().unwrap(), &[], &[1.0]);
    // second derivative with a zero: ∂²(x₀x₁x₂)/∂x₀∂x₁ = x₂, at [2, 0, 3]: H row 1 = [3, 0, 2]
    let x = v(&[2.0, 0.0, 3.0]).with_requires_grad(true).unwrap();
    let opts = GradOptions { create_graph: true, allow_unused: false };
    let g =
        autograd::grad(&[&x.prod().unwrap()], &[None], &[&x], opts).unwrap()[0].clone().unwrap();
    let h = autograd::grad(&[&g.select(0, 1).unwrap()], &[None], &[&x], GradOptions::default())
        .unwrap();
    assert_values(h[0].as_ref().unwrap(), &[3], &[3.0, 0.0, 2.0]);
}

#[test]
fn norm_of_zero_has_zero_gradient() {
    // ‖0‖ = 0 with the subgradient 0 (PyTorch), not NaN
    let g = grads(&[Tensor::zeros((2, 2), DType::F64).unwrap()], &[1.0], |x| x[0].norm());
    assert_values(&g[0], &[2, 2], &[0.0; 4]);
    // ‖(3, 4)‖ = 5, gradient x/‖x‖ = (0.6, 0.8)
    let x = v(&[3.0, 4.0]);
    assert_values(&x.norm().unwrap(), &[], &[5.0]);
    let g = grads(&[x], &[1.0], |x| x[0].norm());
    assert_values(&g[0], &[2], &[0.6, 0.8]);
}

#[test]
fn kinks_follow_pytorch_conventions() {
    let x = v(&[-1.0, 0.0, 2.0]);
    let ones = [1.0, 1.0, 1.0];
    // |x|' = sign(x), 0 at 0
    assert_values(
        &grads(std::slice::from_ref(&x), &ones, |x| x[0].abs())[0],
        &[3],
        &[-1.0, 0.0, 1.0],
    );
    // relu' = 1[x > 0], 0 at 0
    assert_values(
        &grads(std::slice::from_ref(&x), &ones, |x| x[0].relu())[0],
        &[3],
        &[0.0, 0.0, 1.0],
    );
    // sign' = 0
    assert_values(
        &grads(std::slice::from_ref(&x), &ones, |x| x[0].sign())[0],
        &[3],
        &[0.0, 0.0, 0.0],
    );
    // clamp(x, -1, 0) at [-1, 0, 2]: gradient 0 at both bounds and outside, 1 strictly
    // inside (PyTorch's clamp_backward with scalar bounds, as the parity fixtures record)
    assert_values(
        &grads(std::slice::from_ref(&x), &ones, |x| x[0].clamp(Some(-1.0), Some(0.0)))[0],
        &[3],
        &[0.0, 0.0, 0.0],
    );
    assert_values(
        &grads(&[v(&[-0.5])], &[1.0], |x| x[0].clamp(Some(-1.0), Some(0.0)))[0],
        &[1],
        &[1.0],
    );
    // clamp(x, 1, -1) is -1 everywhere with gradient 0 everywhere, even at x = -1
    let c = grads(std::slice::from_ref(&x), &ones, |x| x[0].clamp(Some(1.0), Some(-1.0)));
    assert_values(&c[0], &[3], &[0.0, 0.0, 0.0]);
    assert_values(&x.clamp(Some(1.0), Some(-1.0)).unwrap(), &[3], &[-1.0, -1.0, -1.0]);
    // sqrt'(0) = +inf, as PyTorch
    let g = grads(&[v(&[0.0, 4.0])], &[1.0, 1.0], |x| x[0].sqrt());
    assert_values(&g[0], &[2], &[f64::INFINITY, 0.25]);
    // x^0 has gradient 0 even at 0; x^2 at 0 has gradient 0
    assert_values(
        &grads(std::slice::from_ref(&x), &ones, |x| x[0].pow_scalar(0.0))[0],
        &[3],
        &[0.0; 3],
    );
    assert_values(
        &grads(std::slice::from_ref(&x), &ones, |x| x[0].pow_scalar(2.0))[0],
        &[3],
        &[-2.0, 0.0, 4.0],
    );
    // pow(0, b): d/db = 0 where b >= 0 (PyTorch), d/da = b 0^(b-1) = 0 for b = 2
    let g = grads(&[v(&[0.0]), v(&[2.0])], &[1.0], |x| x[0].pow(&x[1]));
    assert_values(&g[0], &[1], &[0.0]);
    assert_values(&g[1], &[1], &[0.0]);
    // softplus(β = 1, threshold 20) is x above 20 (gradient 1), sigmoid(x) below
    let g = grads(&[v(&[25.0, 0.0])], &[1.0, 1.0], |x| x[0].softplus(1.0, 20.0));
    assert_values(&g[0], &[2], &[1.0, 0.5]);
}

#[test]
fn index_select_accumulates_repeated_indices() {
    // x[[0, 2, 2, 2]]: gradient [1, 0, 3] for unit cotangents
    let g = grads(&[v(&[5.0, 6.0, 7.0])], &[1.0; 4], |x| {
        x[0].index_select(0, &idx(&[0, 2, 2, 2], &[4]))
    });
    assert_values(&g[0], &[3], &[1.0, 0.0, 3.0]);
    // scatter_add of [1, 2, 3] at [1, 1, 0] into zeros(2) = [3, 3]
    let z = Tensor::zeros(2, DType::F64).unwrap();
    let y = z.scatter_add(0, &idx(&[1, 1, 0], &[3]), &v(&[1.0, 2.0, 3.0])).unwrap();
    assert_values(&y, &[2], &[3.0, 3.0]);
}

#[test]
fn logsumexp_is_stable_and_handles_infinities() {
    // log(e^1000 + e^1000) = 1000 + ln 2
    let x = v(&[1000.0, 1000.0]);
    assert_values(&x.logsumexp(&[0], false).unwrap(), &[], &[1000.0 + std::f64::consts::LN_2]);
    // its gradient is the softmax: [1/2, 1/2]
    assert_values(&grads(&[x], &[1.0], |x| x[0].logsumexp(&[0], false))[0], &[2], &[0.5, 0.5]);
    // all -inf: -inf; one +inf: +inf
    assert_values(
        &v(&[f64::NEG_INFINITY; 2]).logsumexp(&[0], false).unwrap(),
        &[],
        &[f64::NEG_INFINITY],
    );
    assert_values(&v(&[f64::INFINITY, 1.0]).logsumexp(&[0], false).unwrap(), &[], &[f64::INFINITY]);
}

#[test]
fn to_dtype_round_trip_and_non_float_targets() {
    // f64 → f32 → f64 rounds to the nearest f32 and keeps an f64 gradient
    let x = v(&[0.1, 2.5, -1.0 / 3.0]).with_requires_grad(true).unwrap();
    let y = x.to_dtype(DType::F32).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    let back = y.to_dtype(DType::F64).unwrap();
    assert_eq!(
        back.to_vec::<f64>().unwrap(),
        vec![f64::from(0.1f32), 2.5, f64::from(-1.0f32 / 3.0)]
    );
    let g = back.sum().unwrap().backward().unwrap();
    let g = g.get(&x).unwrap();
    assert_eq!(g.dtype(), DType::F64);
    assert_values(g, &[3], &[1.0; 3]);
    // casts to integer and bool truncate / test != 0 and carry no gradient
    let i = x.to_dtype(DType::I64).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 2, 0]);
    assert!(!i.requires_grad());
    assert_eq!(x.to_dtype(DType::Bool).unwrap().to_vec::<bool>().unwrap(), vec![true, true, true]);
    // comparisons give Bool without history
    let c = x.gt_scalar(0.0).unwrap();
    assert_eq!(c.to_vec::<bool>().unwrap(), vec![true, true, false]);
    assert!(!c.requires_grad());
    let both = c.logical_and(&x.lt(&v(&[1.0, 1.0, 1.0])).unwrap()).unwrap();
    assert_eq!(both.to_vec::<bool>().unwrap(), vec![true, false, false]);
    let all: Vec<Vec<bool>> =
        [x.eq_scalar(2.5), x.ne_scalar(2.5), x.le_scalar(0.1), x.ge_scalar(2.5)]
            .into_iter()
            .map(|t| t.unwrap().to_vec::<bool>().unwrap())
            .collect();
    assert_eq!(
        all,
        vec![
            vec![false, true, false],
            vec![true, false, true],
            vec![true, false, true],
            vec![false, true, false]
        ]
    );
}

#[test]
fn views_share_storage_and_gradients_scatter_back() {
    // a strided view of a strided view: x[::2, 1] of a transposed 4x3 → elements (0,1),(2,1)
    let x = arange(&[3, 4]).with_requires_grad(true).unwrap();
    let y = x.t().unwrap().slice(0, 0, 4, 2).unwrap().select(1, 1).unwrap();
    // xᵀ[0][1] = x[1][0] = 4, xᵀ[2][1] = x[1][2] = 6
    assert_values(&y, &[2], &[4.0, 6.0]);
    let g = y.sum().unwrap().backward().unwrap();
    assert_values(g.get(&x).unwrap(), &[3, 4], &[0., 0., 0., 0., 1., 0., 1., 0., 0., 0., 0., 0.]);
    // diagonal of an expanded row: d/dx Σ diag(broadcast(x)) = ones
    let r = v(&[1.0, 2.0, 3.0]).with_requires_grad(true).unwrap();
    let d = r.broadcast_to((3, 3)).unwrap().diagonal(0, 0, 1).unwrap();
    assert_values(&d, &[3], &[1.0, 2.0, 3.0]);
    let g = d.sum().unwrap().backward().unwrap();
    assert_values(g.get(&r).unwrap(), &[3], &[1.0, 1.0, 1.0]);
}

#[test]
fn mixed_dtypes_promote_and_gradients_keep_each_input_dtype() {
    // f32 * f64 → f64 (torch.result_type); each gradient has its input's dtype:
    // d(a b)/da = b (rounded to f32), d(a b)/db = a
    let a = Tensor::from_vec(vec![1.0f32, 2.0], 2).unwrap().with_requires_grad(true).unwrap();
    let b = v(&[0.5, 0.25]).with_requires_grad(true).unwrap();
    let y = a.mul(&b).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    assert_values(&y, &[2], &[0.5, 0.5]);
    let g =
        autograd::grad(&[&y.sum().unwrap()], &[None], &[&a, &b], GradOptions::default()).unwrap();
    let (ga, gb) = (g[0].as_ref().unwrap(), g[1].as_ref().unwrap());
    assert_eq!((ga.dtype(), gb.dtype()), (DType::F32, DType::F64));
    assert_values(ga, &[2], &[0.5, 0.25]);
    assert_values(gb, &[2], &[1.0, 2.0]);
    // cat and where promote the same way: d Σ wᵢ cat(a, b)ᵢ = (w₀, w₁), (w₂, w₃)
    let c = Tensor::cat(&[&a, &b], 0).unwrap();
    assert_eq!(c.dtype(), DType::F64);
    let w = v(&[1.0, 2.0, 3.0, 4.0]);
    let g = autograd::grad(&[&c], &[Some(&w)], &[&a, &b], GradOptions::default()).unwrap();
    assert_eq!(g[0].as_ref().unwrap().dtype(), DType::F32);
    assert_values(g[0].as_ref().unwrap(), &[2], &[1.0, 2.0]);
    assert_values(g[1].as_ref().unwrap(), &[2], &[3.0, 4.0]);
    let m = mask(&[true, false], &[2]);
    let wh = Tensor::where_cond(&m, &a, &b).unwrap();
    assert_eq!(wh.dtype(), DType::F64);
    assert_values(&wh, &[2], &[1.0, 0.25]);
    // an integer operand is promoted to the float dtype
    let i = Tensor::from_vec(vec![2i64, 3], 2).unwrap();
    let s = i.add(&b).unwrap();
    assert_eq!(s.dtype(), DType::F64);
    assert_values(&s, &[2], &[2.5, 3.25]);
    // integer inputs of transcendental functions become f32 (PyTorch)
    assert_eq!(i.exp().unwrap().dtype(), DType::F32);
    assert_eq!(i.div_scalar(2.0).unwrap().dtype(), DType::F32);
}

#[test]
fn zero_dim_operands_promote_as_torch_result_type() {
    // torch.ones(2) * torch.tensor(0.5, dtype=float64) is float32 (PyTorch 2.15): a 0-d
    // tensor does not widen a dimensioned one within its category; the 0-d operand's
    // gradient keeps its dtype: d Σ a·s / ds = Σ a = 3
    let a = Tensor::from_vec(vec![1.0f32, 2.0], 2).unwrap().with_requires_grad(true).unwrap();
    let s = Tensor::scalar(0.5f64).with_requires_grad(true).unwrap();
    let y = a.mul(&s).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.5, 1.0]);
    let g =
        autograd::grad(&[&y.sum().unwrap()], &[None], &[&a, &s], GradOptions::default()).unwrap();
    let (ga, gs) = (g[0].as_ref().unwrap(), g[1].as_ref().unwrap());
    assert_eq!((ga.dtype(), gs.dtype()), (DType::F32, DType::F64));
    assert_eq!(gs.to_vec::<f64>().unwrap(), vec![3.0]);
    // the operand order does not matter; two 0-d tensors promote as usual
    assert_eq!(s.add(&a).unwrap().dtype(), DType::F32);
    assert_eq!(Tensor::scalar(1.0f32).mul(&s).unwrap().dtype(), DType::F64);
    // a higher category lifts: f32 with a 0-d c128 is c64, i64 with a 0-d f64 is f64
    let z = Tensor::scalar(num_complex::Complex64::new(0.0, 1.0));
    let yz = a.mul(&z).unwrap();
    assert_eq!(yz.dtype(), DType::C64);
    assert_eq!(yz.imag().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    let i = Tensor::from_vec(vec![1i64, 2], 2).unwrap();
    assert_eq!(i.add(&s).unwrap().dtype(), DType::F64);
    // comparisons run in the result dtype: 1 + 1e-10 rounds to 1 in f32
    let near = Tensor::scalar(1.0f64 + 1e-10);
    assert_eq!(a.eq(&near).unwrap().to_vec::<bool>().unwrap(), vec![true, false]);
    // where too
    let m = Tensor::from_vec(vec![true, false], 2).unwrap();
    let w = Tensor::where_cond(&m, &a, &s).unwrap();
    assert_eq!(w.dtype(), DType::F32);
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![1.0, 0.5]);
}

#[test]
fn promotion_of_cat_outer_kron_and_logsumexp() {
    // cat counts a skipped empty tensor's dtype (PyTorch 2.15: f64)
    let a = Tensor::from_vec(vec![1.0f32, 2.0], 2).unwrap();
    let e = Tensor::zeros(0, DType::F64).unwrap();
    let c = Tensor::cat(&[&a, &e], 0).unwrap();
    assert_eq!(c.dtype(), DType::F64);
    assert_eq!(c.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
    let e32 = Tensor::zeros(0, DType::F32).unwrap();
    assert_eq!(Tensor::cat(&[&e32, &e], 0).unwrap().dtype(), DType::F64);
    // outer and kron promote: f32 with f64 gives f64
    let b = v(&[3.0, 4.0]);
    let o = a.outer(&b).unwrap();
    assert_eq!(o.dtype(), DType::F64);
    assert_values(&o, &[2, 2], &[3.0, 4.0, 6.0, 8.0]);
    let k = a.kron(&b).unwrap();
    assert_eq!(k.dtype(), DType::F64);
    assert_values(&k, &[4], &[3.0, 4.0, 6.0, 8.0]);
    // a 0-d operand of kron widens too (PyTorch reshapes it first)
    assert_eq!(a.kron(&Tensor::scalar(2.0f64)).unwrap().dtype(), DType::F64);
    // logsumexp of integers and bools is computed in f32: log(e + e² + e³)
    let i = Tensor::from_vec(vec![1i64, 2, 3], 3).unwrap();
    let l = i.logsumexp(&[0], false).unwrap();
    assert_eq!(l.dtype(), DType::F32);
    let want = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln() as f32;
    assert!((l.item::<f32>().unwrap() - want).abs() <= 1e-6, "{l:?}");
    let bl = Tensor::from_vec(vec![true, false], 2).unwrap();
    let l = bl.logsumexp(&[0], false).unwrap().item::<f32>().unwrap();
    assert!((l - (1f32.exp() + 1.0).ln()).abs() <= 1e-6);
}

#[test]
fn integer_and_bool_reductions() {
    // Σ [1, 2, 3] = 6 and Π = 6 in i64; Σ of bools counts the trues, in i64
    let i = Tensor::from_vec(vec![1i64, 2, 3], 3).unwrap();
    assert_eq!(i.sum().unwrap().to_vec::<i64>().unwrap(), vec![6]);
    assert_eq!(i.prod().unwrap().to_vec::<i64>().unwrap(), vec![6]);
    assert_eq!(i.amax(&[], false).unwrap().to_vec::<i64>().unwrap(), vec![3]);
    assert_eq!(i.amin(&[], false).unwrap().to_vec::<i64>().unwrap(), vec![1]);
    let b = mask(&[true, false, true, true], &[2, 2]);
    let s = b.sum_dims(&[1], false).unwrap();
    assert_eq!(s.dtype(), DType::I64);
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![1, 2]);
}

#[test]
fn reductions_over_permuted_dense_blocks() {
    // a transposed (column-major) batch of matrices is reduced in memory order: the same
    // values as its contiguous copy
    let x = Tensor::randn(vec![3, 5, 7], DType::F64, &mut Generator::new(3)).unwrap();
    let t = x.mT().unwrap();
    let c = t.contiguous().unwrap();
    let close = |a: &Tensor, b: &Tensor| {
        let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
        assert_eq!(a.len(), b.len());
        for (u, v) in a.iter().zip(&b) {
            assert!((u - v).abs() <= 1e-12 * (1.0 + v.abs()), "{u} vs {v}");
        }
    };
    close(&t.sum().unwrap(), &c.sum().unwrap());
    close(&t.sum_dims(&[-2, -1], false).unwrap(), &c.sum_dims(&[-2, -1], false).unwrap());
    close(&t.amax(&[-2, -1], false).unwrap(), &c.amax(&[-2, -1], false).unwrap());
    let p = x.permute(&[2, 0, 1]).unwrap();
    close(
        &p.sum_dims(&[0, 2], false).unwrap(),
        &p.contiguous().unwrap().sum_dims(&[0, 2], false).unwrap(),
    );
}

/// `square`'s first-order backward runs as one fused pass (`g (x + x)`); its recorded
/// backward as tensor ops (`g (2 x)`): the same bits, for a broadcast cotangent (from a
/// sum), a general one, a transposed input, bf16 and f32.
#[test]
fn square_backward_fused_and_recorded_agree_bit_for_bit() {
    let mut gen = Generator::new(11);
    for dt in [DType::F64, DType::F32, DType::Bf16] {
        let base = Tensor::randn(vec![4, 6, 5], DType::F64, &mut gen).unwrap();
        let w = Tensor::randn(vec![4, 6, 5], DType::F64, &mut gen).unwrap().to_dtype(dt).unwrap();
        for x in [base.clone(), base.mT().unwrap()] {
            let x = x.to_dtype(dt).unwrap().with_requires_grad(true).unwrap();
            let w = if x.dims() == w.dims() { w.clone() } else { w.mT().unwrap() };
            for weighted in [false, true] {
                let run = |create_graph: bool| {
                    let y = x.square().unwrap();
                    let l =
                        if weighted { y.mul(&w).unwrap().sum().unwrap() } else { y.sum().unwrap() };
                    let opts = GradOptions { create_graph, allow_unused: false };
                    let g = autograd::grad(&[&l], &[None], &[&x], opts).unwrap();
                    g[0].as_ref().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
                };
                let (fused, recorded) = (run(false), run(true));
                assert_eq!(fused.len(), x.numel());
                for (a, b) in fused.iter().zip(&recorded) {
                    assert_eq!(a.to_bits(), b.to_bits(), "{dt:?} weighted {weighted}: {a} vs {b}");
                }
                // and the value: 2 x (times the weights)
                let want = x.detach().to_dtype(DType::F64).unwrap().mul_scalar(2.0).unwrap();
                let want = if weighted {
                    want.mul(&w.to_dtype(DType::F64).unwrap()).unwrap()
                } else {
                    want
                };
                let want = want.to_dtype(dt).unwrap().to_dtype(DType::F64).unwrap();
                for (a, b) in fused.iter().zip(want.to_vec::<f64>().unwrap()) {
                    assert!((a - b).abs() <= 1e-2 * b.abs().max(1e-30), "{dt:?}: {a} vs {b}");
                }
            }
        }
    }
}
