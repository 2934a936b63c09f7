//! `set_num_threads` (alone in its test binary: it sets the process's thread pool).
#![allow(clippy::unwrap_used, missing_docs)]

use cotangent::{DType, Error, Tensor};

#[test]
fn set_num_threads_sizes_the_pool_once() {
    assert!(matches!(
        cotangent::set_num_threads(0),
        Err(Error::InvalidArgument { op: "set_num_threads", .. })
    ));
    cotangent::set_num_threads(3).unwrap();
    assert_eq!(cotangent::num_threads(), 3);
    // the kernels run on it
    let a = Tensor::ones((300, 300), DType::F64).unwrap();
    assert_eq!(a.matmul(&a).unwrap().sum().unwrap().item::<f64>().unwrap(), 300.0 * 300.0 * 300.0);
    // the same size again is fine; another is refused, naming the op
    cotangent::set_num_threads(3).unwrap();
    let e = cotangent::set_num_threads(2).unwrap_err();
    assert!(e.to_string().starts_with("set_num_threads: "), "{e}");
    assert_eq!(cotangent::num_threads(), 3);
}
