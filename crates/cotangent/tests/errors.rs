//! Invalid input is an `Err` whose message names the op, never a panic: mismatched
//! shapes, bad dims, wrong dtypes, out-of-range indices, wrong element counts and shapes
//! too large to address.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent::autograd::{self, GradOptions};
use cotangent::{DType, Error, Generator, Result, Tensor};

/// Asserts that `r` is an error whose message contains `op`, and returns the error.
#[track_caller]
fn assert_err<T: std::fmt::Debug>(r: Result<T>, op: &str) -> Error {
    match r {
        Ok(v) => panic!("expected an error naming `{op}`, got {v:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(op), "{msg:?} does not name `{op}`");
            e
        }
    }
}

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape.to_vec(), DType::F64).unwrap()
}

fn index(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), v.len()).unwrap()
}

#[test]
fn mismatched_shapes() {
    // [2, 3] and [4] do not broadcast (trailing 3 vs 4)
    let e = assert_err(ones(&[2, 3]).add(&ones(&[4])), "add");
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("[2, 3]") && e.to_string().contains("[4]"), "{e}");
    assert_err(ones(&[2, 3]).mul(&ones(&[3, 2])), "mul");
    assert_err(ones(&[2, 3]).pow(&ones(&[2])), "pow");
    assert_err(ones(&[2, 3]).atan2(&ones(&[0])), "atan2");
    assert_err(ones(&[2, 3]).maximum(&ones(&[2, 2])), "maximum");
    assert_err(ones(&[3]).gt(&ones(&[2])), "compare");
    let c = Tensor::ones(2, DType::Bool).unwrap();
    assert_err(Tensor::where_cond(&c, &ones(&[3]), &ones(&[3])), "where");
    assert_err(Tensor::cat(&[&ones(&[2, 3]), &ones(&[3, 2])], 0), "cat");
    assert_err(Tensor::stack(&[&ones(&[2]), &ones(&[3])], 0), "stack");
    assert_err(ones(&[2, 3]).sum_to(&cotangent::Shape::from(4)), "sum_to");
    // a cotangent of the wrong shape
    let x = ones(&[3]).with_requires_grad(true).unwrap();
    let y = x.exp().unwrap();
    assert_err(y.backward_with(&ones(&[2])), "autograd.grad");
}

#[test]
fn bad_dims() {
    // a 2-d tensor has dims -2..=1
    let e = assert_err(ones(&[2, 3]).sum_dims(&[5], false), "sum");
    assert_eq!(e, Error::DimOutOfRange { op: "sum", dim: 5, ndim: 2 });
    assert_err(ones(&[2, 3]).sum_dims(&[-3], true), "sum");
    assert_err(ones(&[2, 3]).sum_dims(&[0, -2], true), "sum");
    assert_err(ones(&[2, 3]).amax(&[2], false), "amax");
    assert_err(ones(&[2, 3]).logsumexp(&[2], false), "logsumexp");
    assert_err(ones(&[2, 3]).std(&[2], 1.0, false), "std");
    assert_err(ones(&[2, 3]).var(&[-3], 1.0, false), "var");
    assert_err(ones(&[2, 3]).mean_dims(&[2], false), "mean");
    assert_err(ones(&[2, 3]).prod_dims(&[2], false), "prod");
    assert_err(ones(&[2, 3]).transpose(0, 2), "transpose");
    assert_err(ones(&[2, 3]).permute(&[1, 1]), "permute");
    assert_err(ones(&[2, 3]).select(2, 0), "select");
    assert_err(ones(&[2, 3]).narrow(-3, 0, 1), "narrow");
    assert_err(ones(&[2, 3]).unsqueeze(3), "unsqueeze");
    assert_err(ones(&[2, 3]).flatten(0, 2), "flatten");
    assert_err(ones(&[2, 3]).diagonal(0, 0, 0), "diagonal");
    assert_err(ones(&[2, 3]).size(2), "size");
    assert_err(ones(&[2, 3]).unbind(2), "unbind");
    assert_err(ones(&[2, 3]).split(1, 2), "split");
    assert_err(ones(&[2, 3]).chunk(2, -3), "chunk");
    assert_err(ones(&[2, 3]).flip(&[2]), "flip");
    assert_err(ones(&[2, 3]).gather(2, &index(&[0]).reshape((1, 1)).unwrap()), "gather");
    assert_err(ones(&[2, 3]).index_select(2, &index(&[0])), "index_select");
    assert_err(Tensor::cat(&[&ones(&[2, 3])], 2), "cat");
    // ops that need a number of dims
    assert_err(ones(&[3]).mT(), "mT");
    assert_err(ones(&[2, 2, 2]).t(), "t");
    assert_err(Tensor::scalar(1.0f64).select(0, 0), "select");
    assert_err(Tensor::scalar(1.0f64).unbind(0), "unbind");
}

#[test]
fn dtype_errors() {
    // indices are I64
    let e = assert_err(ones(&[2, 3]).gather(1, &ones(&[2, 1])), "gather");
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    assert_err(ones(&[2, 3]).index_select(1, &ones(&[2])), "index_select");
    assert_err(ones(&[2, 3]).scatter_add(1, &ones(&[2, 1]), &ones(&[2, 1])), "scatter_add");
    // conditions are Bool
    let e = assert_err(Tensor::where_cond(&ones(&[3]), &ones(&[3]), &ones(&[3])), "where");
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    let i = Tensor::ones(3, DType::I64).unwrap();
    assert_err(Tensor::where_cond(&i, &ones(&[3]), &ones(&[3])), "where");
    // scatter_add needs src of self's dtype
    let src = Tensor::ones((1, 1), DType::F32).unwrap();
    assert_err(
        ones(&[2, 3]).scatter_add(0, &index(&[0]).reshape((1, 1)).unwrap(), &src),
        "scatter_add",
    );
    // float-only ops on integers and bools
    assert_err(i.neg(), "neg");
    assert_err(i.relu(), "relu");
    assert_err(i.add(&i), "add");
    assert_err(i.mean(), "mean");
    assert_err(i.var(&[], 1.0, false), "var");
    assert_err(i.std(&[], 1.0, false), "std");
    assert_err(i.norm(), "norm");
    // (logsumexp computes integers in f32, as PyTorch; complex input is not taken)
    assert_err(Tensor::zeros(2, DType::C64).unwrap().logsumexp(&[0], false), "logsumexp");
    assert_err(i.clamp(Some(0.0), None), "clamp");
    let b = Tensor::ones(3, DType::Bool).unwrap();
    assert_err(b.logical_and(&i), "logical_and");
    // complex numbers have no order
    assert_err(Tensor::zeros(2, DType::C64).unwrap().amax(&[], false), "amax");
    // reading with the wrong element type
    assert_err(ones(&[2]).to_vec::<f32>(), "to_vec");
    assert_err(Tensor::scalar(1.0f64).item::<f32>(), "item");
    // gradients of integer tensors
    assert_err(i.with_requires_grad(true), "requires_grad");
    assert_err(Tensor::rand(2, DType::I64, &mut Generator::new(0)), "rand");
}

#[test]
fn out_of_range_indices() {
    // select: index 3 of a dim of size 3; -4 of 3
    let e = assert_err(ones(&[3, 2]).select(0, 3), "select");
    assert_eq!(e, Error::IndexOutOfRange { op: "select", index: 3, size: 3 });
    assert_err(ones(&[3, 2]).select(0, -4), "select");
    // index_select: index 5 of a dim of size 3 (the error is index_select's, not its
    // gather's), and negative indices
    let e = assert_err(ones(&[3, 2]).index_select(0, &index(&[0, 5])), "index_select");
    assert_eq!(e, Error::IndexOutOfRange { op: "index_select", index: 5, size: 3 });
    assert_err(ones(&[3, 2]).index_select(1, &index(&[-1])), "index_select");
    // gather: index 2 along a dim of size 2
    let ix = Tensor::from_vec(vec![0i64, 2], (1, 2)).unwrap();
    let e = assert_err(ones(&[3, 2]).gather(1, &ix), "gather");
    assert_eq!(e, Error::IndexOutOfRange { op: "gather", index: 2, size: 2 });
    let neg = Tensor::from_vec(vec![-1i64], (1, 1)).unwrap();
    assert_err(ones(&[3, 2]).gather(0, &neg), "gather");
    // scatter_add and narrow
    assert_err(ones(&[3, 2]).scatter_add(1, &ix, &ones(&[1, 2])), "scatter_add");
    assert_err(ones(&[3, 2]).narrow(0, 2, 2), "narrow");
    assert_err(ones(&[3, 2]).narrow(0, usize::MAX, usize::MAX), "narrow");
    // a failed op leaves no state behind: the same call with valid indices works
    let ok = ones(&[3, 2]).index_select(0, &index(&[2, 0])).unwrap();
    assert_eq!(ok.dims(), &[2, 2]);
}

#[test]
fn wrong_element_counts() {
    // 6 elements cannot be 5
    let e = assert_err(ones(&[2, 3]).reshape(5), "reshape");
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert_err(ones(&[2, 3]).reshape_infer(&[-1, 4]), "reshape");
    assert_err(ones(&[2, 3]).view((3, 3)), "view");
    // [2, 2] needs 4 elements, 3 are given
    let e = assert_err(Tensor::from_vec(vec![1.0f64, 2.0, 3.0], (2, 2)), "from_vec");
    assert_eq!(e, Error::DataLength { op: "from_vec", expected: 4, got: 3 });
    assert_err(Tensor::from_slice(&[1i64, 2], ()), "from_vec");
    assert_err(ones(&[2, 3]).split_with_sizes(&[1, 2], 0), "split");
    assert_err(ones(&[2, 3]).item::<f64>(), "item");
    // backward of a non-scalar without a cotangent
    let x = ones(&[2]).with_requires_grad(true).unwrap();
    assert_err(x.exp().unwrap().backward(), "backward");
    let y = x.exp().unwrap();
    let e = autograd::grad(&[&y], &[None], &[&x], GradOptions::default());
    assert_err(e, "backward");
}

#[test]
fn overflowing_shapes() {
    // usize::MAX * 2 overflows
    let e = assert_err(Tensor::zeros(vec![usize::MAX, 2], DType::F64), "zeros");
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e:?}");
    assert_err(Tensor::ones(vec![usize::MAX, 2], DType::F32), "full");
    assert_err(Tensor::full(vec![1 << 40, 1 << 40], 1.0, DType::F64), "full");
    assert_err(Tensor::from_vec(Vec::<f64>::new(), vec![usize::MAX, 2]), "from_vec");
    assert_err(Tensor::eye(usize::MAX, DType::F64), "eye");
    assert_err(Tensor::arange(0.0, 1e300, 1.0, DType::F64), "arange");
    assert_err(Tensor::linspace(0.0, 1.0, usize::MAX, DType::F64), "linspace");
    assert_err(Tensor::randn(vec![usize::MAX, 3], DType::F64, &mut Generator::new(0)), "randn");
    // ops whose result would be too large
    assert_err(
        ones(&[2]).reshape(vec![usize::MAX, 2, 0, 1]).and_then(|t| t.reshape((2, 1))),
        "reshape",
    );
    assert_err(ones(&[1]).expand(&[isize::MAX, isize::MAX]), "expand");
    assert_err(ones(&[1]).broadcast_to(vec![usize::MAX, 2]), "expand");
    assert_err(ones(&[2]).repeat(&[usize::MAX, 2]), "repeat");
    assert_err(ones(&[2]).pad(&[isize::MAX, isize::MAX]), "pad");
    assert_err(ones(&[2]).pad(&[isize::MIN, 0]), "pad");
    // an empty tensor with a huge dim is fine until a result would need its elements
    let huge = Tensor::zeros(vec![usize::MAX, 0], DType::F64).unwrap();
    assert_eq!(huge.numel(), 0);
    assert_eq!(huge.sum().unwrap().to_vec::<f64>().unwrap(), vec![0.0]);
    assert_err(huge.sum_dims(&[1], false), "sum");
    assert_err(huge.prod_dims(&[1], true), "prod");
    assert_err(huge.pad(&[1, 1]), "pad");
}

#[test]
fn composites_name_the_function_called() {
    // a failure of the op a composite is built on is reported under the composite's name
    let i = |shape: &[usize]| Tensor::ones(shape.to_vec(), DType::I64).unwrap();
    assert_err(ones(&[2, 3]).mm(&ones(&[4, 2])), "mm");
    assert_err(i(&[2, 2]).mm(&i(&[2, 2])), "mm");
    assert_err(ones(&[1, 2, 3]).bmm(&ones(&[1, 4, 2])), "bmm");
    assert_err(ones(&[2, 3]).mv(&ones(&[4])), "mv");
    assert_err(i(&[3]).dot(&i(&[3])), "dot");
    assert_err(i(&[3]).vdot(&i(&[3])), "vdot");
    assert_err(i(&[2, 3]).inner(&i(&[4, 3])), "inner");
    assert_err(ones(&[2]).addmv(&ones(&[2, 3]), &ones(&[4]), 1.0, 1.0), "addmv");
    assert_err(i(&[2, 2]).matrix_power(2), "linalg.matrix_power");
}
