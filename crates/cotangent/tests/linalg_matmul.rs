//! `matmul` and its entry points: values against a naive triple loop, every rank
//! combination of torch.matmul, broadcasting batch dims, strided operands, and first and
//! second derivatives against finite differences.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent::autograd::{gradcheck, gradgradcheck, GradcheckOptions};
use cotangent::{DType, Error, Generator, Tensor};

fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn(shape.to_vec(), DType::F64, &mut Generator::new(seed)).unwrap()
}

/// C[b,i,j] = Σ_p A[b,i,p] B[b,p,j], computed element by element from `to_vec_f64`.
fn naive(a: &Tensor, b: &Tensor) -> Vec<f64> {
    let (av, bv) = (a.to_vec_f64(), b.to_vec_f64());
    let r = a.rank();
    let (m, k, n) = (a.dims()[r - 2], a.dims()[r - 1], b.dims()[r - 1]);
    let batch: usize = a.dims()[..r - 2].iter().product();
    let mut out = vec![0.0; batch * m * n];
    for t in 0..batch {
        for i in 0..m {
            for j in 0..n {
                out[t * m * n + i * n + j] =
                    (0..k).map(|p| av[t * m * k + i * k + p] * bv[t * k * n + p * n + j]).sum();
            }
        }
    }
    out
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn values_match_a_naive_product_small_and_large() {
    // small (direct loop), medium and large (faer) sizes, batched
    for (i, &(bt, m, k, n)) in
        [(1, 2, 2, 2), (3, 4, 5, 6), (2, 33, 17, 40), (1, 200, 190, 210)].iter().enumerate()
    {
        let a = randn(&[bt, m, k], i as u64);
        let b = randn(&[bt, k, n], 100 + i as u64);
        close(&a.matmul(&b).unwrap().to_vec_f64(), &naive(&a, &b), 1e-12);
        // transposed (column-major) and sliced operands give the same product
        let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
        close(&at.matmul(&b).unwrap().to_vec_f64(), &naive(&a, &b), 1e-12);
    }
}

/// Large products are cut into one range of output rows (or of columns, when wider than
/// tall) per thread: tall and wide shapes, a batch that deals out evenly over the
/// threads and one that does not, transposed operands (left ones long enough to be
/// copied row-major first, in each path), an expanded (stride 0) operand, and the same
/// values on 1, 2 and 3 threads.
#[test]
fn large_products_split_across_threads_match_the_naive_loop() {
    let shapes = [
        (1, 300, 200, 130),
        (1, 70, 150, 400),
        (3, 200, 200, 200),
        (4, 130, 190, 200),
        // k long enough that a column-major left operand is copied row-major first
        (1, 300, 400, 130),
        (1, 70, 400, 300),
        (2, 64, 400, 64),
    ];
    for (i, &(bt, m, k, n)) in shapes.iter().enumerate() {
        let a = randn(&[bt, m, k], 40 + i as u64);
        let b = randn(&[bt, k, n], 140 + i as u64);
        let want = naive(&a, &b);
        let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
        let bt_ = b.mT().unwrap().contiguous().unwrap().mT().unwrap();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                close(&a.matmul(&b).unwrap().to_vec_f64(), &want, 1e-12);
                close(&at.matmul(&bt_).unwrap().to_vec_f64(), &want, 1e-12);
            });
        }
        // an expanded scalar operand (the cotangent of a sum)
        let ones = Tensor::ones(vec![], DType::F64).unwrap().broadcast_to(vec![bt, m, k]).unwrap();
        let dense = Tensor::ones(vec![bt, m, k], DType::F64).unwrap();
        close(&ones.matmul(&b).unwrap().to_vec_f64(), &naive(&dense, &b), 1e-12);
    }
}

#[test]
fn batches_of_tiny_square_products_match_the_naive_loop_exactly() {
    // n <= 4 runs an unrolled kernel over the batch, n = 8 and 16 a kernel on row
    // buffers (split across threads from 2^15 multiply-adds): the same additions in the
    // same order as the naive loop, so the bits agree, for row-major, column-major,
    // sliced and broadcast (stride 0) operands, and batches that do not divide evenly
    // into tasks
    for n in [1usize, 2, 3, 4, 8, 16] {
        for bt in [1usize, 7, 1000, 2053] {
            let a = randn(&[bt, n, n], 10 + n as u64);
            let b = randn(&[bt, n, n], 20 + bt as u64);
            let want = naive(&a, &b);
            assert_eq!(a.matmul(&b).unwrap().to_vec_f64(), want, "n {n} batch {bt}");
            let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
            let bt_ = b.mT().unwrap().contiguous().unwrap().mT().unwrap();
            assert_eq!(at.matmul(&bt_).unwrap().to_vec_f64(), want, "column-major");
            // every other matrix of a twice-as-long batch, and the first column block of
            // wider matrices (row stride 2n)
            let wide = randn(&[bt, n, 2 * n], 30).narrow(-1, 0, n).unwrap();
            let wc = wide.contiguous().unwrap();
            assert_eq!(wide.matmul(&b).unwrap().to_vec_f64(), naive(&wc, &b), "sliced");
            let twice = randn(&[2 * bt, n, n], 40);
            let every_other = twice.reshape(vec![bt, 2, n, n]).unwrap().select(1, 0).unwrap();
            let eo = every_other.contiguous().unwrap();
            assert_eq!(every_other.matmul(&b).unwrap().to_vec_f64(), naive(&eo, &b), "step");
            // a broadcast operand (batch stride 0, and a stride-0 matrix)
            let one = randn(&[1, n, n], 50);
            let ex = one.expand(&[bt as isize, n as isize, n as isize]).unwrap();
            let exc = ex.contiguous().unwrap();
            assert_eq!(ex.matmul(&b).unwrap().to_vec_f64(), naive(&exc, &b), "broadcast");
            let ones = Tensor::ones(vec![1, 1, 1], DType::F64)
                .unwrap()
                .expand(&[bt as isize, n as isize, n as isize])
                .unwrap();
            let oc = ones.contiguous().unwrap();
            assert_eq!(a.matmul(&ones).unwrap().to_vec_f64(), naive(&a, &oc), "stride 0");
            assert_eq!(ones.matmul(&b).unwrap().to_vec_f64(), naive(&oc, &b), "stride 0 left");
            let at = a.mT().unwrap();
            assert_eq!(
                at.matmul(&ones).unwrap().to_vec_f64(),
                naive(&at.contiguous().unwrap(), &oc),
                "Aᵀ 1"
            );
            // f32 as well
            let (a32, b32) = (a.to_dtype(DType::F32).unwrap(), b.to_dtype(DType::F32).unwrap());
            let p32 = a32.matmul(&b32).unwrap().to_vec::<f32>().unwrap();
            let naive32: Vec<f32> = {
                let (av, bv) = (a32.to_vec::<f32>().unwrap(), b32.to_vec::<f32>().unwrap());
                let mut out = vec![0.0f32; bt * n * n];
                for t in 0..bt {
                    for i in 0..n {
                        for j in 0..n {
                            let mut acc = 0.0f32;
                            for q in 0..n {
                                acc += av[t * n * n + i * n + q] * bv[t * n * n + q * n + j];
                            }
                            out[t * n * n + i * n + j] = acc;
                        }
                    }
                }
                out
            };
            assert_eq!(p32, naive32, "f32 n {n} batch {bt}");
        }
    }
}

#[test]
fn batches_of_tiny_products_of_every_shape_match_the_naive_loop_exactly() {
    // every (m, k, n) up to 4 (some have unrolled kernels: outer products, matrix-vector),
    // batched past the parallel split, plain and with a column-major left operand
    for m in 1..=4usize {
        for k in 1..=4usize {
            for n in 1..=4usize {
                let bt = 1500;
                let a = randn(&[bt, m, k], (m * 16 + k * 4 + n) as u64);
                let b = randn(&[bt, k, n], 7 + (m * 16 + k * 4 + n) as u64);
                let want = naive(&a, &b);
                assert_eq!(a.matmul(&b).unwrap().to_vec_f64(), want, "({m}, {k}, {n})");
                let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
                assert_eq!(at.matmul(&b).unwrap().to_vec_f64(), want, "({m}, {k}, {n}) col");
                let one = a.narrow(0, 0, 1).unwrap().matmul(&b.narrow(0, 0, 1).unwrap());
                assert_eq!(one.unwrap().to_vec_f64(), want[..m * n].to_vec(), "single");
            }
        }
    }
}

#[test]
fn rank_combinations_follow_torch_matmul() {
    let v = randn(&[3], 1);
    let m = randn(&[2, 3], 2);
    let mt = randn(&[3, 4], 3);
    let b = randn(&[5, 3, 4], 4);
    // 1-d · 1-d: 0-d dot product
    let d = v.matmul(&v).unwrap();
    assert_eq!(d.dims(), &[] as &[usize]);
    let vv = v.to_vec_f64();
    close(&d.to_vec_f64(), &[vv.iter().map(|x| x * x).sum()], 1e-14);
    // 2-d · 1-d: (2,)   1-d · 2-d: (4,)   1-d · 3-d: (5, 4)   3-d · 1-d: (5, 3)
    assert_eq!(m.matmul(&v).unwrap().dims(), &[2]);
    assert_eq!(v.matmul(&mt).unwrap().dims(), &[4]);
    assert_eq!(v.matmul(&b).unwrap().dims(), &[5, 4]);
    assert_eq!(b.mT().unwrap().matmul(&v.narrow(0, 0, 3).unwrap()).unwrap().dims(), &[5, 4]);
    // broadcasting batch dims: (2,1,2,3) · (5,3,4) -> (2,5,2,4)
    let a4 = randn(&[2, 1, 2, 3], 5);
    let c = a4.matmul(&b).unwrap();
    assert_eq!(c.dims(), &[2, 5, 2, 4]);
    let want = naive(
        &a4.broadcast_to(vec![2, 5, 2, 3])
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((10, 2, 3))
            .unwrap(),
        &b.broadcast_to(vec![2, 5, 3, 4])
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((10, 3, 4))
            .unwrap(),
    );
    close(&c.to_vec_f64(), &want, 1e-12);
}

#[test]
fn errors_name_the_op() {
    let a = randn(&[2, 3], 1);
    let e = a.matmul(&randn(&[2, 3], 2)).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "matmul", .. }), "{e}");
    let e = a.matmul(&a.to_dtype(DType::F32).unwrap()).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "matmul", .. }), "{e}");
    assert!(a.mm(&randn(&[3], 1)).unwrap_err().to_string().contains("mm"));
    assert!(a.matmul(&Tensor::scalar(1.0f64)).unwrap_err().to_string().contains("matmul"));
    assert!(randn(&[2, 2, 3], 1)
        .bmm(&randn(&[3, 3, 2], 1))
        .unwrap_err()
        .to_string()
        .contains("bmm"));
}

#[test]
fn gradients_first_and_second_order() {
    let o = GradcheckOptions::default();
    let cases: Vec<(Vec<usize>, Vec<usize>)> = vec![
        (vec![3], vec![3]),
        (vec![2, 3], vec![3]),
        (vec![3], vec![3, 2]),
        (vec![2, 3], vec![3, 4]),
        (vec![2, 1, 2, 3], vec![3, 3, 2]),
        (vec![4], vec![2, 4, 3]),
    ];
    for (i, (sa, sb)) in cases.into_iter().enumerate() {
        let a = randn(&sa, 10 + i as u64).with_requires_grad(true).unwrap();
        let b = randn(&sb, 20 + i as u64).with_requires_grad(true).unwrap();
        let f = |x: &[Tensor]| Ok(vec![x[0].matmul(&x[1])?]);
        let r = gradcheck(f, &[a.clone(), b.clone()], &o).unwrap();
        assert!(r.passed, "{sa:?}x{sb:?}: {r}");
        let r = gradgradcheck(f, &[a, b], &o).unwrap();
        assert!(r.passed, "{sa:?}x{sb:?}: {r}");
    }
}

#[test]
fn bf16_is_computed_in_f32_and_differentiable() {
    let a = randn(&[3, 4], 1);
    let b = randn(&[4, 2], 2);
    let want = a.matmul(&b).unwrap().to_vec_f64();
    let ah = a.to_dtype(DType::Bf16).unwrap().with_requires_grad(true).unwrap();
    let bh = b.to_dtype(DType::Bf16).unwrap();
    let c = ah.matmul(&bh).unwrap();
    assert_eq!(c.dtype(), DType::Bf16);
    close(&c.to_vec_f64(), &want, 3e-2);
    let g = c.sum().unwrap().backward().unwrap();
    assert_eq!(g.get(&ah).unwrap().dtype(), DType::Bf16);
}
