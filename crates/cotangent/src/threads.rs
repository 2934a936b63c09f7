//! The number of threads the CPU kernels use, from code (`torch.set_num_threads`).

use crate::error::{Error, Result};

/// Sets the number of threads the CPU kernels use (`torch.set_num_threads`): the size of
/// rayon's global pool, which the kernels share with the program (the library's own
/// helpers, made at the first parallel call from outside the pool, follow it). Call it
/// before the first parallel computation: rayon's global pool is made once and keeps its
/// size, so a later call that asks for another size is an error (asking for the size it
/// has is not). `RAYON_NUM_THREADS` sets the size without code.
///
/// Errors (naming `set_num_threads`): `InvalidArgument` for 0 threads, or when the pool
/// already runs with another number of threads.
///
/// ```
/// // the pool of this doc test may already exist: ask for the size it has
/// let n = cotangent::num_threads();
/// cotangent::set_num_threads(n)?;
/// assert!(cotangent::set_num_threads(0).is_err());
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn set_num_threads(n: usize) -> Result<()> {
    const OP: &str = "set_num_threads";
    if n == 0 {
        return Err(Error::InvalidArgument { op: OP, arg: "n", reason: "must be at least 1" });
    }
    match rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
        Ok(()) => Ok(()),
        Err(_) if rayon::current_num_threads() == n => Ok(()),
        Err(_) => Err(Error::InvalidArgument {
            op: OP,
            arg: "n",
            reason: "the thread pool already runs with another size; set it before the first \
                     parallel computation",
        }),
    }
}

/// The number of threads the CPU kernels use (`torch.get_num_threads`): the size of
/// rayon's global pool (making it, with rayon's default size, if it does not exist yet).
pub fn num_threads() -> usize {
    rayon::current_num_threads()
}
