import jax, jax.numpy as jnp
from jax.experimental import pallas as pl

def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2

def f(x):
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(4,), in_specs=[pl.BlockSpec((8, 100), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, 100), lambda i: (i, 0)))(x)

x = jnp.ones((32, 200), jnp.float32)
print(jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text()[:200])
