import jax, jax.numpy as jnp
from jax import export

exp = export.export(jax.jit(lambda x: jnp.sin(x) * 2), platforms=["cuda"])(jax.ShapeDtypeStruct((4,), jnp.float32))
print(exp.call(jnp.ones((4,), jnp.float32)))
