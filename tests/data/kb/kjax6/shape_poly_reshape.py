import jax, jax.numpy as jnp
from jax import export

def f(x):
    return x.reshape((x.shape[0] // 3, 3, -1))

b, = export.symbolic_shape("b")
exp = export.export(jax.jit(f))(jax.ShapeDtypeStruct((b, 4), jnp.float32))
