import jax.numpy as jnp
mask = jnp.array([], dtype=bool)
if mask:
    print("some")
