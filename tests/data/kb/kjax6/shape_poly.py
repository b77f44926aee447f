import jax, jax.numpy as jnp
from jax import export

def f(x):
    if x.shape[0] > 3:
        return x[:3]
    return x

b, = export.symbolic_shape("b")
exp = export.export(jax.jit(f))(jax.ShapeDtypeStruct((b, 4), jnp.float32))
